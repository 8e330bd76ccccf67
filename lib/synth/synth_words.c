/* Seed generation, word phase (chameleon-weinberg-dissertation-2008.txt, sections 4.1,
 * 4.3 and 5.4.1).
 *
 * Model: every physical block keeps the tracer's tree of halves (heap order: node 1 is the
 * block, node n has halves 2n and 2n+1, leaves are words). A reference walks from the root
 * to a leaf; an unvisited node takes either half (by symmetry it does not matter). At a
 * node visited before there are three outcomes: keep the previous half, switch to a half
 * visited before, switch to a fresh half. The signature gives alpha (keeps / trials) and,
 * through the trial counts one level down, revisit = P(visited | switch) (synth.c). The
 * walk picks, of the two outcomes the node allows, the one furthest behind its target
 * count for (level, reuse bin drawn for the reference) - a deterministic error diffusion.
 * Measured on the test kernels, matching revisit as well as alpha lowers the mean L1
 * hit-rate error on the 46 hierarchies from 0.046 to 0.017 (gather 20000), 0.025 to 0.005
 * (matmul 40), 0.059 to 0.011 (linked_list 5000). Level n chooses halves of 2^n words.
 * Unique-index mode: each node counts its free leaves; a half with none cannot be taken
 * (the walk goes to the other half, so the decision of that level is not what was aimed);
 * a virtual block moves to a new physical block after every `words per block` references
 * (block virtualization).
 * Aim correction (section 5.4.1, used in both modes): the alphas and revisits achieved are
 * measured as the tracer measures them and the aims scaled by target/achieved for up to
 * spatial_iterations passes; the pass with the smallest trial-weighted error is kept.
 *
 * Width aims (a signature with the reuse CDFs of the narrower widths, `memsnap signature
 * --widths`; an extension of the dissertation's method): the alphas do not determine those
 * CDFs (how long ago a half was last visited is not in them), so the seed's surface was
 * 3-9% off the program's at widths below 512 bytes. Every level then keeps the LRU stack of
 * its halves (width_touch), and a reference takes the word whose path serves the CDFs best:
 * each half on the path has a stack class (its depth bin if referenced now), each class a
 * gain = minus the change of the squared error of that level's CDF that one more reference
 * of it makes (width_gains), and the best path is a max-sum over the block's tree
 * (width_values); ties, such as halves never visited, fall back to the alpha decision. The
 * block phase also offers several blocks of the drawn reuse bin and takes the one with the
 * best path (synth_word_model_*, plain seeds). One guided pass, then the alpha passes; the
 * pass whose narrower widths come closest to the aims is kept (some unique seeds do better
 * by alpha alone). Measured on the test kernels (docs/proxy.md): surface error 0.033-0.086
 * -> 0.0001-0.009 (CDF bound 0.005 then; 0.0001-0.006 with the bounds of synth.c, and 0.029
 * on stream_add_static, whose bursts the block phase does not reproduce).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "synth_internal.h"

#define WIDTH_CLASSES (MS_SIGNATURE_DEPTHS + 1)

typedef struct word_state {
  int levels;
  uint32_t words_per_block;
  uint64_t seed;
  size_t tree_bytes; /* visited / last-choice bits per block */
  uint8_t *visited, *last;
  uint16_t *free_leaves; /* unique mode: per block, 2 * words_per_block counters */
  uint64_t random;       /* first visits to a node: either half */
  double revisit[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS]; /* aimed P(other half visited |
                                                                 switch) */
  double switched_fresh[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  double switched_visited[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  double yes[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  double trials[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  /* Width aims (when the signature has the reuse CDFs of the narrower widths): per level,
   * the time of each half's latest reference, a bit per time marking them, the boundaries
   * of the depths (width_touch), the target share of each stack class and the counts so far. */
  const double (*width_target)[WIDTH_CLASSES];
  int guided; /* this pass chooses words by the width aims (else by alpha alone) */
  uint64_t *width_bits[MS_SIGNATURE_MAX_LEVELS];
  uint32_t width_boundary[MS_SIGNATURE_MAX_LEVELS][32]; /* 17 used, then 0 (before all) */
  uint32_t *width_last[MS_SIGNATURE_MAX_LEVELS];
  uint32_t width_marks[MS_SIGNATURE_MAX_LEVELS];
  uint32_t tree_size; /* times 1..tree_size */
  uint32_t now;
  double width_count[MS_SIGNATURE_MAX_LEVELS][WIDTH_CLASSES];
  double width_gain[MS_SIGNATURE_MAX_LEVELS][WIDTH_CLASSES];
} word_state;

/* The 2^k most recent halves of a level are those whose latest reference is at or after
 * time boundary[k] (0 while the level has at most 2^k halves: all of them). A reference
 * moves the boundaries it passes over one mark forward, as reuse_stack.c does; the next
 * mark is a bit scan, and a boundary only moves forward. */
static uint32_t next_mark(const uint64_t *bits, uint32_t after) {
  uint32_t at = after + 1;
  uint64_t word = bits[at >> 6] & (~0ull << (at & 63));
  while (!word)
    word = bits[(at = (at | 63) + 1) >> 6];
  return (at & ~63u) + (uint32_t)__builtin_ctzll(word);
}

/* Stack class of a half last referenced at time t (0: never) if referenced now: k (0..16)
 * when its stack position R is 1 (k = 0) or in (2^(k-1), 2^k], 17 when it misses every
 * depth. The boundaries after t are a prefix (they go back in time as k grows): counted by
 * halving, the padding (0) being after none. */
static inline uint32_t class_at(const uint32_t *boundary, uint32_t t) {
  uint32_t k = 0;
  k += boundary[k + 15] > t ? 16 : 0;
  k += boundary[k + 7] > t ? 8 : 0;
  k += boundary[k + 3] > t ? 4 : 0;
  k += boundary[k + 1] > t ? 2 : 0;
  k += boundary[k] > t ? 1 : 0;
  return t ? k : WIDTH_CLASSES - 1;
}

static int width_class(const word_state *s, int level, uint64_t index) {
  return (int)class_at(s->width_boundary[level], s->width_last[level][index]);
}

static void width_touch(word_state *s, int level, uint64_t index) {
  uint32_t *last = &s->width_last[level][index], t = *last;
  uint64_t *bits = s->width_bits[level];
  uint32_t *boundary = s->width_boundary[level];
  if (t)
    bits[t >> 6] &= ~(1ull << (t & 63));
  else
    s->width_marks[level]++;
  bits[s->now >> 6] |= 1ull << (s->now & 63);
  *last = s->now;
  for (int k = 0; k < WIDTH_CLASSES - 1; k++) {
    if (t && t > boundary[k]) continue; /* was among the 2^k: the set keeps its size */
    if (!t && s->width_marks[level] <= (1u << k)) continue; /* not full yet */
    if (boundary[k] == 0) boundary[k] = next_mark(bits, 0); /* the oldest mark */
    boundary[k] = next_mark(bits, boundary[k]);             /* the oldest leaves the set */
  }
}

static void reset_block_trees(word_state *s, uint64_t blocks, int unique) {
  memset(s->visited, 0, blocks * s->tree_bytes);
  memset(s->last, 0, blocks * s->tree_bytes);
  memset(s->switched_fresh, 0, sizeof s->switched_fresh);
  memset(s->switched_visited, 0, sizeof s->switched_visited);
  s->random = s->seed;
  memset(s->yes, 0, sizeof s->yes);
  memset(s->trials, 0, sizeof s->trials);
  if (!unique) return;
  for (uint64_t b = 0; b < blocks; b++) {
    uint16_t *free_leaves = s->free_leaves + b * 2 * s->words_per_block;
    for (uint32_t node = 1; node < 2 * s->words_per_block; node++) {
      int depth = 0;
      while ((2u << depth) <= node)
        depth++;
      free_leaves[node] = (uint16_t)(s->words_per_block >> depth);
    }
  }
}

static int is_visited(const uint8_t *visited, uint32_t node) {
  return (visited[node >> 3] >> (node & 7)) & 1;
}

/* At a node visited before: keep the previous half or switch, whichever outcome is most
 * behind its target count for (level, bin): keep alpha * n, switch to a visited half
 * (1 - alpha) * revisit * n, switch to a fresh half (1 - alpha) * (1 - revisit) * n. */
static uint32_t decide(const word_state *s, double alpha, int level, int bin, uint32_t previous,
                       int other_visited) {
  double n = s->trials[level][bin] + 1;
  double revisit = s->revisit[level][bin];
  double keep_deficit = alpha * n - s->yes[level][bin];
  double switch_deficit = other_visited
                              ? (1 - alpha) * revisit * n - s->switched_visited[level][bin]
                              : (1 - alpha) * (1 - revisit) * n - s->switched_fresh[level][bin];
  return switch_deficit > keep_deficit ? !previous : previous;
}

/* Bottom-up over the block's tree (heap order: node 1 the block, nodes 2^d..2^(d+1)-1 at
 * depth d, of level levels - d): value[c] = the gain of half c's class at its level plus the
 * best value of its halves (0 below the words); -INFINITY for a half with no free word
 * (unique mode). Returns the best value of the block's two halves. */
static double width_values(const word_state *s, uint32_t block, const uint16_t *free_leaves,
                           double *value) {
  for (int depth = s->levels; depth >= 1; depth--) {
    int level = s->levels - depth;
    uint32_t first = 1u << depth;
    const uint32_t *last = s->width_last[level] + (uint64_t)block * first;
    const double *gain = s->width_gain[level];
    const uint32_t *boundary = s->width_boundary[level];
    for (uint32_t i = 0; i < first; i++) {
      uint32_t c = first + i, k = class_at(boundary, last[i]);
      double below = 0;
      if (depth < s->levels) {
        double a = value[2 * c], b = value[2 * c + 1];
        below = a > b ? a : b;
      }
      value[c] = free_leaves && free_leaves[c] == 0 ? -INFINITY : gain[k] + below;
    }
  }
  return value[2] > value[3] ? value[2] : value[3];
}

/* The gains of every class at every level for the reference at time s->now (0 for a cold
 * one: the gains are relative to it). */
static void width_gains(word_state *s, int unique) {
  /* gain of class c at a level: the sum over depths j >= c of (target - achieved) hits, less
   * one half per depth: minus the change of the squared CDF error that one more reference of
   * class c makes, relative to a cold one */
  for (int level = 0; level < s->levels; level++) {
    if (unique && level == 0) { /* a unique seed never revisits a word */
      memset(s->width_gain[0], 0, sizeof s->width_gain[0]);
      continue;
    }
    double target = 0, achieved = 0, deficits[WIDTH_CLASSES];
    for (int k = 0; k < WIDTH_CLASSES - 1; k++) {
      target += s->width_target[level][k];
      achieved += s->width_count[level][k];
      deficits[k] = target * s->now - achieved;
    }
    double gain = 0;
    s->width_gain[level][WIDTH_CLASSES - 1] = 0;
    for (int k = WIDTH_CLASSES - 2; k >= 0; k--) {
      gain += deficits[k] - 0.5;
      s->width_gain[level][k] = gain;
    }
  }
}

/* `scored`: the block's width values already computed with this reference's gains (the
 * word model's best candidate), or NULL to compute them here when the pass is guided. */
static uint16_t choose_word(word_state *s, const double aim[][MS_SIGNATURE_DEPTHS], uint32_t block,
                            int bin, int unique, const double *scored) {
  uint8_t *visited = s->visited + (size_t)block * s->tree_bytes;
  uint8_t *last = s->last + (size_t)block * s->tree_bytes;
  uint16_t *free_leaves = unique ? s->free_leaves + (size_t)block * 2 * s->words_per_block : NULL;
  double computed[2 * (1u << MS_SIGNATURE_MAX_LEVELS)];
  const double *value = scored;
  if (s->guided && !scored) {
    width_gains(s, unique);
    width_values(s, block, free_leaves, computed);
    value = computed;
  }
  uint32_t node = 1;
  for (int depth = 0; depth < s->levels; depth++) {
    int level = s->levels - 1 - depth;
    size_t at = node >> 3;
    uint8_t bit = (uint8_t)(1u << (node & 7));
    int seen = (visited[at] & bit) != 0;
    uint32_t previous = (last[at] & bit) != 0;
    uint32_t half = seen ? 0 : (uint32_t)(synth_random(&s->random) >> 63);
    if (seen)
      half = decide(s, aim[level][bin], level, bin, previous,
                    is_visited(visited, 2 * node + !previous));
    uint64_t first_half = 0;
    if (s->width_target) {
      uint64_t per_block = 2ull << depth;
      first_half = (uint64_t)block * per_block + (2 * node - per_block);
      if (s->guided && value[2 * node] != value[2 * node + 1])
        half = value[2 * node + 1] > value[2 * node];
    }
    if (unique && free_leaves[2 * node + half] == 0) half = !half;
    if (seen) {
      s->trials[level][bin] += 1;
      s->yes[level][bin] += half == previous;
      if (half != previous) {
        if (is_visited(visited, 2 * node + half))
          s->switched_visited[level][bin] += 1;
        else
          s->switched_fresh[level][bin] += 1;
      }
    }
    visited[at] |= bit;
    last[at] = half ? (uint8_t)(last[at] | bit) : (uint8_t)(last[at] & ~bit);
    if (unique) free_leaves[node]--;
    if (s->width_target) {
      s->width_count[level][width_class(s, level, first_half + half)] += 1;
      width_touch(s, level, first_half + half);
    }
    node = node * 2 + half;
  }
  if (unique) free_leaves[node]--;
  visited[node >> 3] |= (uint8_t)(1u << (node & 7));
  return (uint16_t)(node - s->words_per_block);
}

static double alpha_error(const word_state *s, const double target[][MS_SIGNATURE_DEPTHS]) {
  double error = 0, trials = 0;
  for (int level = 0; level < s->levels; level++)
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
      if (s->trials[level][k] > 0) {
        error +=
            fabs(target[level][k] - s->yes[level][k] / s->trials[level][k]) * s->trials[level][k];
        trials += s->trials[level][k];
      }
  return trials > 0 ? error / trials : 0;
}

static double revisit_error(const word_state *s, const double target[][MS_SIGNATURE_DEPTHS]) {
  double error = 0, switches = 0;
  for (int level = 0; level < s->levels; level++)
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      double n = s->switched_visited[level][k] + s->switched_fresh[level][k];
      if (n <= 0) continue;
      error += fabs(target[level][k] - s->switched_visited[level][k] / n) * n;
      switches += n;
    }
  return switches > 0 ? error / switches : 0;
}

/* Mean |target - achieved| hit rate over the narrower widths' 17 depths (the seed's own
 * surface error at those widths). */
static double width_error(const word_state *s) {
  double error = 0;
  for (int level = 0; level < s->levels; level++) {
    double target = 0, achieved = 0;
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      target += s->width_target[level][k];
      achieved += s->width_count[level][k] / s->now;
      error += fabs(target - achieved);
    }
  }
  return error / (s->levels * MS_SIGNATURE_DEPTHS);
}

/* Unique mode: virtual blocks to physical blocks, a new one every words_per_block visits. */
static int virtualize(ms_seed *seed, uint32_t words_per_block, uint64_t *physical_count) {
  uint32_t *physical = malloc(MS_SYNTH_LIST_BLOCKS * sizeof *physical);
  uint32_t *visits = calloc(MS_SYNTH_LIST_BLOCKS, sizeof *visits);
  if (!physical || !visits) {
    free(physical);
    free(visits);
    return ms_error_set(MS_ERR_NOMEM, "synth: out of memory");
  }
  uint64_t next = 0;
  for (uint64_t i = 0; i < seed->length; i++) {
    uint32_t block = seed->blocks[i];
    if (visits[block]++ % words_per_block == 0) physical[block] = (uint32_t)next++;
    seed->blocks[i] = physical[block];
  }
  *physical_count = next;
  free(physical);
  free(visits);
  return MS_OK;
}

/* Non-unique mode: blocks renumbered densely in order of first use. */
static int renumber(ms_seed *seed, uint64_t *count) {
  uint32_t *number = malloc(MS_SYNTH_LIST_BLOCKS * sizeof *number);
  if (!number) return ms_error_set(MS_ERR_NOMEM, "synth: out of memory");
  memset(number, 0xff, MS_SYNTH_LIST_BLOCKS * sizeof *number);
  uint64_t next = 0;
  for (uint64_t i = 0; i < seed->length; i++) {
    uint32_t *n = &number[seed->blocks[i]];
    if (*n == UINT32_MAX) *n = (uint32_t)next++;
    seed->blocks[i] = *n;
  }
  *count = next;
  free(number);
  return MS_OK;
}

static void reset_widths(word_state *s, uint64_t blocks) {
  if (!s->width_target) return;
  for (int level = 0; level < s->levels; level++) {
    memset(s->width_bits[level], 0, ((size_t)s->tree_size / 64 + 2) * sizeof(uint64_t));
    memset(s->width_boundary[level], 0, sizeof s->width_boundary[level]);
    memset(s->width_last[level], 0, blocks * (s->words_per_block >> level) * sizeof(uint32_t));
    s->width_marks[level] = 0;
  }
  memset(s->width_count, 0, sizeof s->width_count);
}

static int alloc_widths(word_state *s, uint64_t blocks, uint64_t length) {
  if (!s->width_target) return MS_OK;
  s->tree_size = (uint32_t)length;
  for (int level = 0; level < s->levels; level++) {
    s->width_bits[level] = malloc(((size_t)length / 64 + 2) * sizeof(uint64_t));
    s->width_last[level] = malloc(blocks * (s->words_per_block >> level) * sizeof(uint32_t));
    if (!s->width_bits[level] || !s->width_last[level])
      return ms_error_set(MS_ERR_NOMEM, "synth: out of memory for the width stacks");
  }
  return MS_OK;
}

int synth_words(const double alpha[][MS_SIGNATURE_DEPTHS],
                const double revisit[][MS_SIGNATURE_DEPTHS],
                const double (*width_target)[MS_SIGNATURE_DEPTHS + 1], int levels,
                const ms_synth_config *config, const uint8_t *bins, ms_seed *seed) {
  word_state s = {.levels = levels,
                  .words_per_block = 1u << levels,
                  .seed = config->seed,
                  .width_target = width_target};
  memcpy(s.revisit, revisit, sizeof s.revisit);
  s.tree_bytes = 2 * s.words_per_block / 8 + 1; /* nodes and leaves */
  uint64_t blocks = 0;
  int rc = config->unique ? virtualize(seed, s.words_per_block, &blocks) : renumber(seed, &blocks);
  if (rc < 0) return rc;
  if (blocks == 0) /* synth.c asks for at least min_length >= 1 references */
    return ms_error_set(MS_ERR_ARG, "synth: no references to give words to");
  s.visited = malloc(blocks * s.tree_bytes);
  s.last = malloc(blocks * s.tree_bytes);
  /* calloc: reset_block_trees fills every block's counts before use (every seed block is
   * < blocks), which the analyzer cannot follow through seed->blocks */
  if (config->unique) s.free_leaves = calloc(blocks * 2 * s.words_per_block, sizeof(uint16_t));
  uint16_t *best = malloc(seed->length * sizeof *best);
  seed->words = malloc(seed->length * sizeof *seed->words);
  if (!s.visited || !s.last || (config->unique && !s.free_leaves) || !best || !seed->words) {
    rc = ms_error_set(MS_ERR_NOMEM, "synth: out of memory for %llu blocks",
                      (unsigned long long)blocks);
    goto done;
  }
  rc = alloc_widths(&s, blocks, seed->length);
  if (rc < 0) goto done;
  double aim[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  memcpy(aim, alpha, sizeof aim);
  double best_error = INFINITY;
  /* With width aims: one guided pass, then the alpha passes; the pass whose narrower
   * widths come closest to the aims is kept (unique seeds of some kernels do better by
   * alpha alone). Without: the alpha passes, the one closest to the alphas kept. */
  int guided_passes = width_target ? 1 : 0;
  int passes = guided_passes + config->spatial_iterations;
  seed->width_error = -1;
  for (int pass = 0; pass < passes; pass++) {
    s.guided = pass < guided_passes;
    reset_block_trees(&s, blocks, config->unique);
    reset_widths(&s, blocks);
    for (uint64_t i = 0; i < seed->length; i++) {
      s.now = (uint32_t)i + 1;
      seed->words[i] = choose_word(&s, (const double(*)[MS_SIGNATURE_DEPTHS])aim, seed->blocks[i],
                                   bins[i], config->unique, NULL);
    }
    double alpha_off = alpha_error(&s, alpha);
    double error = width_target ? width_error(&s) : alpha_off + revisit_error(&s, revisit);
    if (error < best_error) {
      best_error = error;
      seed->alpha_error = alpha_off;
      if (width_target) seed->width_error = error;
      memcpy(best, seed->words, seed->length * sizeof *best);
    }
    if (s.guided) continue;
    if (!width_target && error < 0.005) break;
    for (int level = 0; level < levels; level++)
      for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
        if (s.trials[level][k] <= 0) continue;
        double achieved = s.yes[level][k] / s.trials[level][k];
        double next = achieved > 0 ? aim[level][k] * alpha[level][k] / achieved
                                   : aim[level][k] + alpha[level][k];
        aim[level][k] = next > 1 ? 1 : next;
        double switches = s.switched_visited[level][k] + s.switched_fresh[level][k];
        if (switches <= 0) continue;
        achieved = s.switched_visited[level][k] / switches;
        next = achieved > 0 ? s.revisit[level][k] * revisit[level][k] / achieved
                            : s.revisit[level][k] + revisit[level][k];
        s.revisit[level][k] = next > 1 ? 1 : next;
      }
  }
  memcpy(seed->words, best, seed->length * sizeof *best);
  seed->unique_blocks = blocks;
done:
  free(best);
  free(s.visited);
  free(s.last);
  free(s.free_leaves);
  for (int level = 0; level < MS_SIGNATURE_MAX_LEVELS; level++) {
    free(s.width_bits[level]);
    free(s.width_last[level]);
  }
  return rc;
}

/* The word phase run alongside the block phase (synth_blocks.c): scores candidate blocks by
 * the best path of width gains a reference to them could take. */
struct synth_word_model {
  word_state s;
  double aim[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  uint64_t blocks;
  int unique;
  /* The width values of the best block scored for this reference (value[best]) and of the
   * last one scored otherwise: the block taken is the best one, so commit reuses them. */
  double value[2][2 * (1u << MS_SIGNATURE_MAX_LEVELS)];
  int best;
  uint32_t best_block;
  double best_score;
};

int synth_word_model_new(const double alpha[][MS_SIGNATURE_DEPTHS],
                         const double revisit[][MS_SIGNATURE_DEPTHS],
                         const double (*width_target)[MS_SIGNATURE_DEPTHS + 1], int levels,
                         uint64_t blocks, uint64_t length, uint64_t seed, int unique,
                         synth_word_model **out) {
  *out = NULL;
  synth_word_model *m = calloc(1, sizeof *m);
  if (!m) return ms_error_set(MS_ERR_NOMEM, "synth: out of memory");
  word_state *s = &m->s;
  s->levels = levels;
  s->words_per_block = 1u << levels;
  s->seed = seed;
  s->width_target = width_target;
  s->guided = 1;
  s->tree_bytes = 2 * s->words_per_block / 8 + 1;
  memcpy(s->revisit, revisit, sizeof s->revisit);
  memcpy(m->aim, alpha, sizeof m->aim);
  m->blocks = blocks;
  m->unique = unique;
  s->visited = malloc(blocks * s->tree_bytes);
  s->last = malloc(blocks * s->tree_bytes);
  if (unique) s->free_leaves = malloc(blocks * 2 * s->words_per_block * sizeof(uint16_t));
  int rc = s->visited && s->last && (!unique || s->free_leaves)
               ? alloc_widths(s, blocks, length)
               : ms_error_set(MS_ERR_NOMEM, "synth: out of memory");
  if (rc < 0) {
    synth_word_model_free(m);
    return rc;
  }
  synth_word_model_reset(m);
  *out = m;
  return MS_OK;
}

void synth_word_model_reset(synth_word_model *m) {
  reset_block_trees(&m->s, m->blocks, m->unique);
  reset_widths(&m->s, m->blocks);
  m->s.now = 0;
}

void synth_word_model_next(synth_word_model *m) {
  m->s.now++;
  width_gains(&m->s, m->unique);
  m->best_score = -INFINITY;
}

double synth_word_model_score(synth_word_model *m, uint32_t block) {
  const uint16_t *free_leaves =
      m->unique ? m->s.free_leaves + (size_t)block * 2 * m->s.words_per_block : NULL;
  double score = width_values(&m->s, block, free_leaves, m->value[!m->best]);
  if (score > m->best_score) { /* the block phase keeps the first of equal scores too */
    m->best = !m->best;
    m->best_block = block;
    m->best_score = score;
  }
  return score;
}

void synth_word_model_commit(synth_word_model *m, uint32_t block, int bin) {
  const double *scored =
      m->best_score > -INFINITY && block == m->best_block ? m->value[m->best] : NULL;
  choose_word(&m->s, (const double(*)[MS_SIGNATURE_DEPTHS])m->aim, block, bin, m->unique, scored);
}

void synth_word_model_free(synth_word_model *m) {
  if (!m) return;
  free(m->s.visited);
  free(m->s.last);
  free(m->s.free_leaves);
  for (int level = 0; level < MS_SIGNATURE_MAX_LEVELS; level++) {
    free(m->s.width_bits[level]);
    free(m->s.width_last[level]);
  }
  free(m);
}

double synth_word_model_error(const synth_word_model *m) { return width_error(&m->s); }

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
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "synth_internal.h"

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
} word_state;

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

static uint16_t choose_word(word_state *s, const double aim[][MS_SIGNATURE_DEPTHS], uint32_t block,
                            int bin, int unique) {
  uint8_t *visited = s->visited + (size_t)block * s->tree_bytes;
  uint8_t *last = s->last + (size_t)block * s->tree_bytes;
  uint16_t *free_leaves = unique ? s->free_leaves + (size_t)block * 2 * s->words_per_block : NULL;
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

int synth_words(const double alpha[][MS_SIGNATURE_DEPTHS],
                const double revisit[][MS_SIGNATURE_DEPTHS], int levels,
                const ms_synth_config *config, const uint8_t *bins, ms_seed *seed) {
  word_state s = {.levels = levels, .words_per_block = 1u << levels, .seed = config->seed};
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
  double aim[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  memcpy(aim, alpha, sizeof aim);
  double best_error = INFINITY;
  int passes = config->spatial_iterations;
  for (int pass = 0; pass < passes; pass++) {
    reset_block_trees(&s, blocks, config->unique);
    for (uint64_t i = 0; i < seed->length; i++)
      seed->words[i] = choose_word(&s, (const double(*)[MS_SIGNATURE_DEPTHS])aim, seed->blocks[i],
                                   bins[i], config->unique);
    double alpha_off = alpha_error(&s, alpha), error = alpha_off + revisit_error(&s, revisit);
    if (error < best_error) {
      best_error = error;
      seed->alpha_error = alpha_off;
      memcpy(best, seed->words, seed->length * sizeof *best);
    }
    if (error < 0.005) break;
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
  return rc;
}

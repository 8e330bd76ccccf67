/* Seed generation, word phase (chameleon-weinberg-dissertation-2008.txt, sections 4.1,
 * 4.3 and 5.4.1).
 *
 * Model: every physical block keeps the tracer's tree of halves (heap order: node 1 is the
 * block, node n has halves 2n and 2n+1, leaves are words). A reference walks from the root
 * to a leaf; at a node visited before it keeps the previous half with probability
 * aim(level, reuse bin drawn for the reference), decided by error diffusion per (level,
 * bin) so that the fraction of "keep" decisions equals the aim; an unvisited node takes
 * its lower half. Level n chooses halves of 2^n words (level 0: single words).
 * Unique-index mode: each node counts its free leaves; a half with none cannot be taken
 * (the walk goes to the other half, so the decision of that level is not what was aimed);
 * a virtual block moves to a new physical block after every `words per block` references
 * (block virtualization). The alphas achieved are measured as the tracer measures them and
 * the aim is scaled by target/achieved for up to spatial_iterations passes; the pass with
 * the smallest trial-weighted mean error is kept.
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
  double carry[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  double yes[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  double trials[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
} word_state;

static void reset_block_trees(word_state *s, uint64_t blocks, int unique) {
  memset(s->visited, 0, blocks * s->tree_bytes);
  memset(s->last, 0, blocks * s->tree_bytes);
  memset(s->carry, 0, sizeof s->carry);
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
    if (seen) {
      double *carry = &s->carry[level][bin];
      *carry += aim[level][bin];
      if (*carry >= 1.0 - 1e-12) {
        *carry -= 1.0;
        half = previous;
      } else {
        half = !previous;
      }
    }
    if (unique && free_leaves[2 * node + half] == 0) half = !half;
    if (seen) {
      s->trials[level][bin] += 1;
      s->yes[level][bin] += half == previous;
    }
    visited[at] |= bit;
    last[at] = half ? (uint8_t)(last[at] | bit) : (uint8_t)(last[at] & ~bit);
    if (unique) free_leaves[node]--;
    node = node * 2 + half;
  }
  if (unique) free_leaves[node]--;
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

int synth_words(const double alpha[][MS_SIGNATURE_DEPTHS], int levels,
                const ms_synth_config *config, const uint8_t *bins, ms_seed *seed) {
  word_state s = {.levels = levels, .words_per_block = 1u << levels, .seed = config->seed};
  s.tree_bytes = s.words_per_block / 8 + 1;
  uint64_t blocks = 0;
  int rc = config->unique ? virtualize(seed, s.words_per_block, &blocks) : renumber(seed, &blocks);
  if (rc < 0) return rc;
  s.visited = malloc(blocks * s.tree_bytes);
  s.last = malloc(blocks * s.tree_bytes);
  if (config->unique) s.free_leaves = malloc(blocks * 2 * s.words_per_block * sizeof(uint16_t));
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
  int passes = config->unique ? config->spatial_iterations : 1;
  for (int pass = 0; pass < passes; pass++) {
    reset_block_trees(&s, blocks, config->unique);
    for (uint64_t i = 0; i < seed->length; i++)
      seed->words[i] = choose_word(&s, (const double(*)[MS_SIGNATURE_DEPTHS])aim, seed->blocks[i],
                                   bins[i], config->unique);
    double error = alpha_error(&s, alpha);
    if (error < best_error) {
      best_error = error;
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
      }
  }
  memcpy(seed->words, best, seed->length * sizeof *best);
  seed->alpha_error = best_error;
  seed->unique_blocks = blocks;
done:
  free(best);
  free(s.visited);
  free(s.last);
  free(s.free_leaves);
  return rc;
}

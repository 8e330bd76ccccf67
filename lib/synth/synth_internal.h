/* Internals shared by the seed generator's phases (lib/synth). */
#ifndef MEMSNAP_SYNTH_INTERNAL_H
#define MEMSNAP_SYNTH_INTERNAL_H

#include <stdint.h>

#include "memsnap/synth.h"

/* splitmix64: a small, fast, well-mixed generator; deterministic for a seed value. */
static inline uint64_t synth_random(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline double synth_uniform(uint64_t *state) {
  return (double)(synth_random(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Block phase: fills seed->blocks (virtual blocks), the reuse bin drawn for each reference
 * (`bins`), seed->length, iterations, achieved_cdf and errors. `words_per_block` is used
 * in unique mode only (a virtual block moves to a new physical block every that many
 * references). */
typedef struct synth_word_model synth_word_model;
int synth_blocks(const double target[], const ms_synth_config *config, uint32_t words_per_block,
                 synth_word_model *words, ms_seed *seed, uint8_t **bins);

/* Word phase: maps virtual blocks to physical ones (unique mode) and chooses every word;
 * `alpha[level][bin]` is the target, `revisit[level][bin]` the fraction of switches to a
 * half visited before. Fills seed->words, unique_blocks, alpha_error. */
int synth_words(const double alpha[][MS_SIGNATURE_DEPTHS],
                const double revisit[][MS_SIGNATURE_DEPTHS],
                const double (*width_target)[MS_SIGNATURE_DEPTHS + 1], int levels,
                const ms_synth_config *config, const uint8_t *bins, ms_seed *seed);

/* The word phase alongside the block phase (plain seeds with width aims): `next` starts a
 * reference, `score` rates a candidate block (higher: its best word path brings the
 * narrower widths closer to their aims), `commit` chooses the word in the block taken. */
int synth_word_model_new(const double alpha[][MS_SIGNATURE_DEPTHS],
                         const double revisit[][MS_SIGNATURE_DEPTHS],
                         const double (*width_target)[MS_SIGNATURE_DEPTHS + 1], int levels,
                         uint64_t blocks, uint64_t length, uint64_t seed, int unique,
                         synth_word_model **out);
void synth_word_model_reset(synth_word_model *m);
void synth_word_model_next(synth_word_model *m);
double synth_word_model_score(synth_word_model *m, uint32_t block);
void synth_word_model_commit(synth_word_model *m, uint32_t block, int bin);
/* Mean |target - achieved| hit rate of the narrower widths so far. */
double synth_word_model_error(const synth_word_model *m);
void synth_word_model_free(synth_word_model *m);

#endif

/* Synthetic trace seeds from memory signatures (chameleon-weinberg-dissertation-2008.txt,
 * chapter 4 and section 5.4).
 *
 * A seed is a short trace of word addresses whose locality matches one bin of a signature:
 * - Blocks (section 4.1): reuse distances are drawn by inverse-transform sampling from the
 *   (aimed) reuse CDF over an LRU list of 2^16 + 1 blocks; the achieved CDF (first
 *   references are misses) is checked every `check_interval` references against the target
 *   (mean and max discrepancy); when the length cap is reached the aim is scaled point by
 *   point by T/R and the whole trace regenerated, up to `max_iterations`, stopping early
 *   when an iteration improves the max discrepancy by less than `min_improvement`.
 * - Words (section 4.3): each block keeps a tree of halves; a visited node keeps its previous
 *   half with probability alpha(level, reuse bin of the reference) (error diffusion).
 * - Unique-index mode (section 5.4): no word is used twice; used leaves are removed from the
 *   trees, a virtual block that fills up moves to a fresh physical block, the block phase
 *   counts those moves as misses and draws stack positions among physical blocks, the
 *   blocks left behind included (temporal correction), and the word phase re-aims alpha by
 *   target/achieved (spatial correction).
 * A seed is written as an .mtr trace whose header carries the seed metadata
 * (docs/formats.md, "Trace seeds"); expanded, it is replicated onto disjoint regions until
 * a footprint is reached and repeated until a length is (ms_seed_source_open).
 */
#ifndef MEMSNAP_SYNTH_H
#define MEMSNAP_SYNTH_H

#include <stdint.h>

#include "memsnap/api.h"
#include "memsnap/signature.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_SYNTH_LIST_BLOCKS ((1u << 16) + 1) /* LRU list length: deepest depth + 1 */

typedef struct ms_synth_config {
  uint64_t seed;           /* random seed: same seed, same trace */
  int unique;              /* unique-index mode (the benchmark's seeds) */
  uint64_t min_length;     /* references before the first check (default 200,000) */
  uint64_t max_length;     /* length cap of one iteration (default 1,000,000) */
  uint64_t check_interval; /* references between checks (default 10,000) */
  double max_mean_error;   /* accepted mean |target - achieved| over the CDF (0.001) */
  double max_max_error;    /* accepted max |target - achieved| (0.001) */
  double max_width_error;  /* with width rows: accepted mean |target - achieved| hit rate of
                              the narrower widths (0.002) */
  int max_iterations;      /* re-aimings at most (default 5) */
  double min_improvement;  /* stop when an iteration improves the max error less (0.0005) */
  int spatial_iterations;  /* unique mode: alpha re-aimings at most (default 5) */
} ms_synth_config;

typedef struct ms_seed {
  uint32_t width, word; /* block width and word size in bytes (from the signature) */
  int unique;
  uint64_t length;           /* references */
  uint32_t *blocks;          /* physical block of each reference */
  uint16_t *words;           /* word within its block */
  uint64_t unique_blocks;    /* blocks used */
  uint64_t working_set;      /* unique_blocks * width bytes */
  uint64_t min_replications; /* 2^16 / unique_blocks + 1 (section 4.1), rounded up */
  uint64_t footprint;        /* default expansion footprint in bytes (0: none) */
  int iterations;            /* block-phase iterations run */
  double target_cdf[MS_SIGNATURE_DEPTHS], achieved_cdf[MS_SIGNATURE_DEPTHS];
  double mean_error, max_error; /* achieved CDF against the target */
  double alpha_error;           /* mean |target - achieved| alpha, weighted by trials */
  double width_error;           /* signature with width rows: mean |target - achieved| hit rate over
                                   the narrower widths x 17 depths; -1 without */
  char *signature_text;         /* the target signature, .sig text */
} ms_seed;

MS_API void ms_synth_config_default(ms_synth_config *config);
/* Generates the seed of bin `bin_index` of `signature`. MS_ERR_ARG with the reason if the
 * signature cannot be matched (no references, a rate outside [0, 1], a decreasing CDF, an
 * alpha outside [0, 1], unique mode with more than 2^16 words per block). */
MS_API int ms_synth_generate(const ms_signature *signature, int bin_index,
                             const ms_synth_config *config, ms_seed **out);
MS_API void ms_seed_free(ms_seed *seed);

/* Hand-written signatures (section 6.3): "random" (every rate and alpha 0) and "stride"
 * (every rate and alpha 1), for `width` and `word`. */
MS_API int ms_synth_hand_signature(const char *pattern, uint32_t width, uint32_t word,
                                   ms_signature **out);

/* Writes the seed as an .mtr trace with its metadata, atomically. */
MS_API int ms_seed_save(const ms_seed *seed, const char *path);

/* Seed metadata read back from an .mtr header. */
typedef struct ms_seed_info {
  uint64_t length, working_set, min_replications, footprint, unique_blocks;
  uint32_t width, word;
  int unique;
} ms_seed_info;
/* 1 and fills `out` if `info` (of an opened .mtr) describes a seed, 0 if it is a plain
 * trace, MS_ERR_FORMAT naming `name` if its seed metadata is malformed. */
MS_API int ms_seed_info_parse(const ms_stream_info *info, const char *name, ms_seed_info *out);

/* Replications for a footprint (section 5.5): at least min_replications, else the smallest
 * count whose footprint reaches `footprint` bytes. */
MS_API uint64_t ms_seed_replications(const ms_seed_info *info, uint64_t footprint);

/* The expansion of a seed file: `replications` copies of the seed, copy r shifted by
 * r * working_set bytes, repeated until `length` accesses (0: one pass). Constant memory
 * (the seed is re-read, not held). */
MS_API int ms_seed_source_open(const char *path, uint64_t replications, uint64_t length,
                               ms_source **out);

#ifdef __cplusplus
}
#endif

#endif

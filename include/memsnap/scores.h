/* Spatial and temporal locality scores, for the whole run and per site.
 *
 * Definitions (compiler-guided-instrumentation-diniz-krishna-2006.txt, after Weinberg et
 * al.; docs/locality.md works examples):
 *  - Words are `word` bytes (default 8) aligned; an access references every word it spans.
 *  - Temporal score: each word reference has a reuse distance r = 1 + the number of distinct
 *    other words referenced since the previous reference to its word (the depth of the
 *    smallest fully-associative LRU cache of words that hits). With L = log2 N (N = 2^L
 *    words, default L = 16), a reference with 2^(i-1) < r <= 2^i (i = 0..L) weighs
 *    (L - i) / L; first references and r > N weigh 0. The score is the mean weight: 1 when
 *    every reference reuses the word just referenced, 0 when nothing is reused within N
 *    words.
 *  - Spatial score: for each access, its stride s is the smallest non-zero distance, in
 *    words, from its first word to the first word of any of the previous `lookback`
 *    accesses of the stream (default 32, a window of non-unique references); it weighs 1/s
 *    (0 when every access in the window touched the same word or there is none). The score
 *    is the mean weight: 1 for a unit-stride walk, near 0 for random accesses.
 *  - Per site: the same means over the site's own accesses (strides still measured against
 *    the whole stream's window). A site's contribution to the whole-run score is its share
 *    of the references (accesses for spatial) times its score; the whole-run score is the
 *    sum of the contributions.
 */
#ifndef MEMSNAP_SCORES_H
#define MEMSNAP_SCORES_H

#include <stdint.h>
#include <stdio.h>

#include "memsnap/access.h"
#include "memsnap/api.h"
#include "memsnap/sites.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_SCORES_MAX_LOOKBACK 1024

typedef struct ms_scores_config {
  uint32_t word;   /* bytes, a power of two (default 8) */
  int lookback;    /* accesses in the spatial window, 1..MS_SCORES_MAX_LOOKBACK (default 32) */
  int log2_window; /* L: temporal window N = 2^L words, 1..20 (default 16) */
} ms_scores_config;

typedef struct ms_locality_score {
  uint32_t site;         /* site id, MS_SITE_NONE for accesses without a site or the run */
  uint64_t accesses;     /* accesses (denominator of the spatial score) */
  uint64_t references;   /* word references (denominator of the temporal score) */
  double spatial_sum;    /* sum of 1/stride over the accesses */
  double temporal_sum;   /* sum of the weights over the references */
  double spatial;        /* spatial_sum / accesses */
  double temporal;       /* temporal_sum / references */
  double spatial_share;  /* contribution to the whole-run spatial score */
  double temporal_share; /* contribution to the whole-run temporal score */
} ms_locality_score;

typedef struct ms_scores {
  ms_scores_config config;
  ms_locality_score whole;
  int site_count; /* sites with accesses, sorted by contribution, largest first */
  ms_locality_score *sites;
} ms_scores;

MS_API void ms_scores_config_default(ms_scores_config *config);
MS_API int ms_scores_config_check(const ms_scores_config *config);

typedef struct ms_scores_builder ms_scores_builder;
MS_API int ms_scores_builder_new(const ms_scores_config *config, ms_scores_builder **out);
MS_API void ms_scores_builder_free(ms_scores_builder *builder);
MS_API int ms_scores_builder_add(ms_scores_builder *builder, const ms_batch *batch);
/* Scores so far; free with ms_scores_clear. */
MS_API int ms_scores_builder_result(const ms_scores_builder *builder, ms_scores *out);
MS_API void ms_scores_clear(ms_scores *scores);
MS_API int ms_scores_sink_new(ms_scores_builder *builder, ms_sink **out);

/* Reports: the whole run, then the `top` sites (all if top < 0) with their source lines,
 * sorted by contribution (spatial + temporal). `sites` may be NULL. */
MS_API int ms_scores_write_table(FILE *out, const ms_scores *scores, const ms_site_table *sites,
                                 int top);
MS_API int ms_scores_write_json(FILE *out, const ms_scores *scores, const ms_site_table *sites,
                                int top);

#ifdef __cplusplus
}
#endif

#endif

/* The 46 evaluation hierarchies of the catalog (hpcmo-01..46) taken together: the hit rates
 * a stream gets on them and how far two sets of those hit rates are apart; with the cache
 * surfaces, the comparison of two sources (what `memsnap compare` prints; `memsnap verify`
 * uses the hit rates, memsnap/verify.h).
 *
 * The hierarchies are built as `memsnap sim --hierarchy NAME` builds them (LRU,
 * write-back). Differences are absolute, of hit rates as fractions (0..1).
 */
#ifndef MEMSNAP_EVALUATION_H
#define MEMSNAP_EVALUATION_H

#include "memsnap/api.h"
#include <stdint.h>

#include "memsnap/cache.h"
#include "memsnap/stream.h"
#include "memsnap/surface.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_EVALUATION_COUNT MS_HIERARCHY_CATALOG_EVALUATION

/* The configurations of the 46, in catalog order. */
MS_API int ms_evaluation_configs(ms_hierarchy_config configs[MS_EVALUATION_COUNT]);
/* The 46 as one set (ms_hierarchy_set_get(set, h) is hpcmo-(h+1)). */
MS_API int ms_evaluation_set_new(ms_hierarchy_set **out);

/* Hit rates per hierarchy and level (0..1; levels[h] of them for hierarchy h). */
typedef struct ms_evaluation_rates {
  int levels[MS_EVALUATION_COUNT];
  double hit_rate[MS_EVALUATION_COUNT][MS_HIERARCHY_MAX_LEVELS];
} ms_evaluation_rates;
/* The total hit rate of every level of every hierarchy of an evaluation set (flushed). */
MS_API void ms_evaluation_hit_rates(const ms_hierarchy_set *set, ms_evaluation_rates *out);

/* The mean and the largest absolute difference over `count` values (hierarchies that have
 * a level, or points of two surfaces); count 0: none to compare. */
typedef struct ms_rate_difference {
  int count;
  double mean, max;
} ms_rate_difference;
/* Per level, over the hierarchies that have it (levels[l].count 0 where none has it). */
MS_API void ms_evaluation_differences(const ms_evaluation_rates *a, const ms_evaluation_rates *b,
                                      ms_rate_difference levels[MS_HIERARCHY_MAX_LEVELS]);
/* Over the points (width, depth) both surfaces have, at every width (width 0) or at one. */
MS_API ms_rate_difference ms_surface_rate_difference(const ms_surface *a, const ms_surface *b,
                                                     uint32_t width);
/* The same over the points of depth >= min_depth only (a sampled surface's error where its
 * sample is large enough). */
MS_API ms_rate_difference ms_surface_rate_difference_from(const ms_surface *a,
                                                          const ms_surface *b, uint32_t width,
                                                          uint64_t min_depth);

/* Two sources side by side: each observed in one pass on the 46 hierarchies and on a cache
 * surface, then their differences. */
typedef struct ms_comparison_side {
  uint64_t accesses;
  ms_evaluation_rates rates;
  ms_surface surface;
} ms_comparison_side;
typedef struct ms_comparison {
  ms_comparison_side sides[2];
  ms_rate_difference levels[MS_HIERARCHY_MAX_LEVELS];
  ms_rate_difference surface;     /* every width */
  ms_rate_difference surface_512; /* width 512 only (count 0 if the grid lacks it) */
} ms_comparison;
/* Runs `source` to its end into side `side` (0 or 1), with a surface of `grid`. */
MS_API int ms_comparison_observe(ms_comparison *comparison, int side, ms_source *source,
                                 const ms_surface_config *grid);
/* The differences of the two sides, once both are observed. */
MS_API void ms_comparison_finish(ms_comparison *comparison);

#ifdef __cplusplus
}
#endif

#endif

/* Cache surfaces: hit rates of fully-associative LRU caches over a grid of widths x depths.
 *
 * A point (width W bytes, depth D blocks) is the hit rate of one fully-associative LRU cache
 * of D lines of W bytes (size W*D, associativity D), cold at the start of the stream. The
 * accounting is memsnap's cache model (cache.h, MS_CACHE_MODEL_MEMSNAP): an access touches
 * every line of W bytes it spans and each line is one reference; loads, stores and modifies
 * count alike. So a point equals, exactly, the level-0 hit rate of
 * `memsnap sim --hierarchy W*D/W/D`. A reference hits at depth D iff its reuse distance (the
 * number of distinct other lines referenced since the previous reference to its line) is
 * below D; the reuse-distance histogram per width, in the bins between consecutive depths,
 * comes with the surface.
 *
 * All widths and depths are computed in one pass (lib/locality/reuse_stack.c: per width,
 * reuse distances counted over the times of the latest reference of each line). Optionally,
 * SHARDS-style spatially hashed sampling: a line is observed iff a hash of the line falls
 * below rate * 2^24; sampled reuse distances are scaled by 1/rate (lib/locality/surface.c).
 * Depths too shallow for that rate's resolution come from a nested sample at a few times
 * the rate (near_rate below), reported with the surface.
 */
#ifndef MEMSNAP_SURFACE_H
#define MEMSNAP_SURFACE_H

#include <stdint.h>
#include <stdio.h>

#include "memsnap/access.h"
#include "memsnap/api.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_SURFACE_MAX_WIDTHS 16
#define MS_SURFACE_MAX_DEPTHS 32
#define MS_SURFACE_MAX_DEPTH (1u << 24) /* deepest depth accepted, in blocks */

/* The grid and the sampling of a surface to compute. */
typedef struct ms_surface_config {
  int width_count;
  uint32_t widths[MS_SURFACE_MAX_WIDTHS]; /* bytes: powers of two, ascending, 1..2^20 */
  int depth_count;
  uint64_t depths[MS_SURFACE_MAX_DEPTHS]; /* blocks: ascending, 1..MS_SURFACE_MAX_DEPTH */
  double sample_rate;                     /* 1: exact; in (0, 1): SHARDS-style sampling */
  uint64_t seed;                          /* of the sampling hash */
  int threads; /* exact: threads sharing the widths, 0 for one per CPU (the result is the
                * same whatever the number) */
} ms_surface_config;

/* A surface: plain data, filled by a builder, by hand, or from a signature. */
typedef struct ms_surface {
  int width_count;
  uint32_t widths[MS_SURFACE_MAX_WIDTHS];
  int depth_count;
  uint64_t depths[MS_SURFACE_MAX_DEPTHS];
  double hit_rate[MS_SURFACE_MAX_WIDTHS][MS_SURFACE_MAX_DEPTHS];
  /* Line references per width and their reuse-distance histogram: bin 0 is distance <
   * depths[0], bin k in [depths[k-1], depths[k]), bin depth_count is distance >= the
   * deepest depth or first reference. With sampling, `references` counts the sampled
   * references that reached the LRU model (immediate re-references of the previous line,
   * counted exactly, excluded) and the histogram is in sampled units (x rate). */
  uint64_t references[MS_SURFACE_MAX_WIDTHS];
  uint64_t histogram[MS_SURFACE_MAX_WIDTHS][MS_SURFACE_MAX_DEPTHS + 1];
  uint64_t accesses;  /* accesses of the stream */
  double sample_rate; /* 1 when exact */
  /* With sampling, the first near_depth_count depths (those whose scaled depth D x
   * sample_rate is under a few sampled lines) are estimated from a larger, nested sample
   * at near_rate (lib/locality/surface.c); 0 and 0 when every depth is at sample_rate. */
  int near_depth_count;
  double near_rate;
} ms_surface;

/* Widths 4..512 bytes and depths 1..65536 blocks, powers of two; exact. */
MS_API void ms_surface_config_default(ms_surface_config *config);
/* Checks the grid and rate: MS_ERR_ARG naming the bad value. */
MS_API int ms_surface_config_check(const ms_surface_config *config);
/* Parses "LO:HI" (the powers of two from LO to HI) or "A,B,C" (ascending) into values;
 * MS_ERR_ARG naming `what` and the text if malformed or longer than `max`. */
MS_API int ms_surface_parse_grid(const char *text, const char *what, uint64_t *values, int max,
                                 int *count);

typedef struct ms_surface_builder ms_surface_builder;
MS_API int ms_surface_builder_new(const ms_surface_config *config, ms_surface_builder **out);
MS_API void ms_surface_builder_free(ms_surface_builder *builder);
MS_API int ms_surface_builder_add(ms_surface_builder *builder, const ms_batch *batch);
/* The surface of every access added so far. */
MS_API void ms_surface_builder_result(const ms_surface_builder *builder, ms_surface *out);
/* A sink feeding the builder (not owned by the sink). */
MS_API int ms_surface_sink_new(ms_surface_builder *builder, ms_sink **out);

/* Index of a width / depth in the surface, or -1. */
MS_API int ms_surface_width_index(const ms_surface *surface, uint64_t width);
MS_API int ms_surface_depth_index(const ms_surface *surface, uint64_t depth);

/* Similarity (dissertation Table 6.1): the mean absolute difference of the hit rates of the
 * points (width, depth) present in both surfaces. MS_ERR_ARG if they share no point. */
MS_API int ms_surface_difference(const ms_surface *a, const ms_surface *b, double *mean_abs_diff,
                                 int *points);

/* Reports: "table" (widths as rows, depths as columns, hit rates), "csv" (one row per point:
 * width,depth,size,hit_rate), "json" (grid, hit rates, histograms). */
MS_API int ms_surface_write_table(FILE *out, const ms_surface *surface);
MS_API int ms_surface_write_csv(FILE *out, const ms_surface *surface);
MS_API int ms_surface_write_json(FILE *out, const ms_surface *surface);

#ifdef __cplusplus
}
#endif

#endif

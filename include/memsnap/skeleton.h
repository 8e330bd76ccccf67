/* Memory skeletons from traces (memory-skeletons-toomula-subhlok-slides.txt): a short C
 * program whose accesses are a sample of an application's, so that it behaves like the
 * application on any cache.
 *
 * The method of the slides: slices of consecutive accesses are kept (`slices` of
 * `slice_size` accesses spread evenly over the run, or, when the run's length is not
 * known in advance, one slice in every `ratio`); their addresses become line numbers
 * (`line` bytes); each slice is cut into clusters of `cluster` accesses within which the
 * order is free (a cluster is much smaller than any cache, so reordering it keeps the
 * cache's view), and each cluster is summarised as its lines with their access counts.
 * The generated program walks each cluster's lines: sorted by kind, count and line, the
 * lines of a cluster fall into runs (a first line, a stride in lines, a length, the
 * accesses per line), one 8-byte word each, which is all the program reads of its own
 * (its bookkeeping: one load per word).
 *
 * Beyond the slides: where a cluster's accesses are streams in lockstep (a loop's b[i], c[i],
 * a[i]: up to 4 in the table form, up to 8 moving by one stride in the code form), they are
 * kept in their order and at their exact addresses, as a group: a head word (the iterations)
 * and one word per lane (first address, stride in bytes). The slides' reordering puts each
 * line's accesses back to back, which turns a program's conflict misses (lines of several
 * arrays in one set of a 2-way cache) into hits.
 *
 * Memory: each slice has its own (it begins cold, as after the application's gap); the 2 MiB
 * chunks the slices touch are laid out one after the other in one
 * reservation (MAP_NORESERVE: only the pages touched cost memory), each at its offset
 * within its chunk, so that lines keep their addresses modulo 2 MiB and every cache of
 * the catalog whose way is at most 2 MiB (all but one level) maps them to the same sets
 * as the application did, up to one rotation.
 */
/* Memory skeletons from PSnAP profiles (beyond the slides; lib/skeleton/profile_skeleton.c):
 * each exact site's stride pattern becomes an iterator (its loop counters in static storage,
 * its runs handed out one at a time, cyclically, as replay reads it), each thread's order
 * nested loops over the sites' accesses in the profile's order, threads one after the
 * other as replay runs them. The skeleton issues the profile's addresses relative to its
 * regions (the sites' ranges joined when within 1 MiB, each laid at its low address
 * modulo 2 MiB in one reservation), with each site's size and kind. Lossy sites draw their
 * addresses from their histograms and frequent strides with a xorshift generator, lossy
 * orders walk their path counts; lossless sites read a table of their addresses.
 */
#ifndef MEMSNAP_SKELETON_H
#define MEMSNAP_SKELETON_H

#include <stdint.h>
#include <stdio.h>

#include "memsnap/api.h"
#include "memsnap/expr.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_skeleton_config {
  uint64_t slices;         /* slices spread over the run (0: every ratio * slice_size accesses) */
  uint64_t slice_size;     /* accesses per slice (0: the run's length / (slices * ratio)) */
  uint64_t min_slice_size; /* slice_size 0: fewer slices rather than shorter (0: none) */
  uint64_t ratio;          /* sampling ratio: the skeleton keeps one access in `ratio` */
  uint32_t line;           /* bytes per line, a power of two from 8 to 4096 */
  uint32_t cluster;        /* accesses per cluster, 1 to 65536 */
  int form;                /* MS_SKELETON_TABLE or MS_SKELETON_CODE */
} ms_skeleton_config;

/* The forms of the generated program. A table: the runs and groups as 8-byte words that
 * one loop walks (compiles in seconds; reading the table is the skeleton's own traffic,
 * one load per word and one miss per cache line of table). Code: each run and group a
 * loop of its own with its numbers in the instructions (no data of its own; compiling
 * takes about 1 ms per record with GCC -O2). */
enum { MS_SKELETON_TABLE = 0, MS_SKELETON_CODE = 1 };

/* Slice k of S in a run of N accesses starts in the k-th of S equal parts, at an offset
 * drawn from k: k * N / S + h(k) mod (N / S - size + 1), where h(k) = splitmix(k + 1):
 * x = (k + 1) * 0x9E3779B97F4A7C15, x = (x ^ x >> 31) * 0xBF58476D1CE4E5B9, x ^ x >> 29
 * (slices at the start of each part fell on one phase of a program whose sweeps divide
 * its run; docs/skeletons.md). */

/* 10 slices (fewer rather than slices under 1 Mi accesses), ratio 10, lines of 32 bytes
 * (the smallest of the catalog), clusters of 256. */
MS_API void ms_skeleton_config_default(ms_skeleton_config *config);
/* MS_ERR_ARG naming the option that is out of range. */
MS_API int ms_skeleton_config_check(const ms_skeleton_config *config);

/* What a skeleton holds once the stream has ended. */
typedef struct ms_skeleton_summary {
  uint64_t accesses; /* of the stream */
  uint64_t kept;     /* in the slices: the skeleton's data accesses */
  uint64_t slices, slice_size;
  uint64_t clusters;
  uint64_t runs;    /* table words: the skeleton's bookkeeping loads */
  uint64_t groups;  /* lockstep groups among them (a head and its lanes) */
  uint64_t grouped; /* data accesses in those groups, in the program's order */
  uint64_t chunks;  /* 2 MiB chunks of its reservation */
} ms_skeleton_summary;

/* The sink that slices, clusters and summarises a stream. A stream whose length is not
 * known in advance (a live program) needs config->slices == 0 (periodic slices) or a
 * slice_size; MS_ERR_ARG at its first batch otherwise. */
MS_API int ms_skeleton_builder_new(const ms_skeleton_config *config, ms_sink **out);
/* After the stream ended: its summary; MS_ERR_ARG before. */
MS_API int ms_skeleton_summarize(ms_sink *builder, ms_skeleton_summary *out);
/* After the stream ended: the skeleton as one C file (C99 and POSIX, libc only), `info`
 * naming the program in its comments. MS_ERR_ARG if no access was kept. */
MS_API int ms_skeleton_write_c(ms_sink *builder, const ms_stream_info *info, FILE *out);

/* What a skeleton of a profile holds. */
typedef struct ms_skeleton_profile_summary {
  uint32_t sites, lossy_sites; /* lossy and lossless sites among them */
  uint32_t threads, lossy_threads;
  uint32_t regions;
  uint64_t reservation; /* bytes reserved for the regions */
  uint64_t accesses;    /* of the profile */
  uint64_t kept;        /* the skeleton's data accesses (scaled) */
  uint32_t iterators;   /* exact sites' iterators: one per cursor of several strides */
} ms_skeleton_profile_summary;

struct ms_psnap_profile;
/* The skeleton of a profile (not in block form: ms_psnap_profile_pick) as one C file,
 * its orders' outermost repetitions scaled by `scale` (0 < scale <= 1;
 * ms_skeleton_scale_order). MS_ERR_ARG for a profile without sites or a scale out of
 * range, MS_ERR_IO if writing failed. */
MS_API int ms_skeleton_write_profile_c(const struct ms_psnap_profile *profile, double scale,
                                       FILE *out, ms_skeleton_profile_summary *summary);
/* An order with the repeat counts of its outermost repetitions (the root's children) times
 * `scale`, rounded, at least 1; a group left with one iteration passes scale x its repeat
 * on to its children, as their scale; nodes with steps keep their repeats. `out` is initialised
 * here; the caller frees it. */
MS_API int ms_skeleton_scale_order(const ms_expr *order, double scale, ms_expr *out);

/* The table's words (docs/skeletons.md). A run, bit 63 clear: bits 0-33 the first line's
 * index in the reservation, 34-45 the stride in lines (signed), 46-53 the lines - 1,
 * 54-61 the accesses per line - 1, 62 a store. A group head, bit 63 set: bits 0-2 the
 * lanes - 1, 3-18 the iterations - 1; then per lane: bits 0-39 its first address's
 * offset in the reservation, 40-55 its stride in bytes (signed), 56 a store. */
/* Bounds of the configuration (ms_skeleton_config_check). */
#define MS_SKELETON_RATIO_MAX (1ull << 30)
#define MS_SKELETON_SLICE_MAX (1ull << 33)
#define MS_SKELETON_LINE_BITS 34
#define MS_SKELETON_STRIDE_MAX 2047
#define MS_SKELETON_RUN_MAX 256
#define MS_SKELETON_LANES_MAX 8
#define MS_SKELETON_LANES_APART 4 /* lanes of their own strides; more move by one */
#define MS_SKELETON_LANE_STRIDE 32767
#define MS_SKELETON_ITERATIONS_MAX 65536

#ifdef __cplusplus
}
#endif

#endif

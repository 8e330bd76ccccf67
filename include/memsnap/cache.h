/* Set-associative cache hierarchy simulation: hierarchies, their catalog, reports, a sink.
 *
 * A hierarchy is 1..MS_HIERARCHY_MAX_LEVELS levels, each size/line/associativity with a
 * replacement policy; level 0 is closest to the processor. Set count = floor(size / (line *
 * associativity)) need not be a power of two: the set of a line is (line number) modulo
 * (set count). A size that is not a multiple of line * associativity (hpcmo-10 and -16 as
 * the dissertation prints them) simulates its whole sets only. Line sizes are powers of two.
 *
 * Two accounting models:
 *  - MS_CACHE_MODEL_MEMSNAP (default): an access touches every line it spans and each line
 *    is one access at level 0; a miss at level i is one access at level i+1 for each of its
 *    lines. Write-back write-allocate (default): a dirty victim is written back to level
 *    i+1; a writeback is counted in `writebacks` of the level it leaves and is NOT an
 *    access at level i+1 (so accesses(i+1) = misses(i)), though it does install or touch
 *    the line there. Write-through no-allocate: every store or modify also writes to level
 *    i+1 (an access there); a store that misses does not allocate.
 *    A modify (load+store of one address by one instruction) is one access per line whose
 *    hit or miss is decided by its read and which then dirties the line.
 *  - MS_CACHE_MODEL_CACHEGRIND: Valgrind 3.19 Cachegrind's accounting, exactly: one access
 *    per reference even when it straddles two lines (a miss if either line misses); on a
 *    miss the whole reference is looked up at the next level; LRU, write-allocate, no
 *    writebacks; sizes clamped to the smallest line size; power-of-two set counts and
 *    lines of 16 bytes or more only. Cachegrind counts a modify in its Dr (read) counters:
 *    its Dr = our load + modify, its Dw = our store.
 *
 * Statistics are per level: accesses and misses split by kind and by thread, writebacks,
 * misses per site. Several hierarchies simulated together (ms_hierarchy_set) share every
 * level that is identical along the same path from level 0 (same geometry, policy, write
 * policy, model and seed), so 46 hierarchies with 13 distinct L1s simulate 13 L1s; each
 * hierarchy's statistics are identical to simulating it alone.
 */
#ifndef MEMSNAP_CACHE_H
#define MEMSNAP_CACHE_H

#include <stdint.h>
#include <stdio.h>

#include "memsnap/access.h"
#include "memsnap/api.h"
#include "memsnap/sites.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_HIERARCHY_MAX_LEVELS 8
#define MS_CACHE_MAX_ASSOCIATIVITY 1024
#define MS_CACHE_MIN_LINE_SIZE 4
/* ms_hierarchy_parse refuses smaller lines except in a level of one set (a cache-surface
 * point); the catalog's smallest line is 32 bytes. */
#define MS_CACHE_MIN_PLAUSIBLE_LINE_SIZE 16
#define MS_CACHE_NAME_MAX 64

typedef enum ms_cache_policy {
  MS_CACHE_LRU = 0,
  MS_CACHE_FIFO = 1,
  MS_CACHE_RANDOM = 2, /* xorshift64 (13, 7, 17) per level, see lib/cache/simulator.c */
  MS_CACHE_PLRU = 3,   /* tree pseudo-LRU; associativity a power of two, at most 64 */
} ms_cache_policy;

typedef enum ms_cache_write_policy {
  MS_CACHE_WRITE_BACK = 0,    /* write-back, write-allocate */
  MS_CACHE_WRITE_THROUGH = 1, /* write-through, no write-allocate */
} ms_cache_write_policy;

typedef enum ms_cache_model {
  MS_CACHE_MODEL_MEMSNAP = 0,
  MS_CACHE_MODEL_CACHEGRIND = 1,
} ms_cache_model;

typedef struct ms_cache_level_config {
  uint64_t size;          /* bytes */
  uint32_t line_size;     /* bytes, a power of two >= MS_CACHE_MIN_LINE_SIZE */
  uint32_t associativity; /* ways, 1..MS_CACHE_MAX_ASSOCIATIVITY */
  ms_cache_policy policy;
} ms_cache_level_config;

typedef struct ms_hierarchy_config {
  char name[MS_CACHE_NAME_MAX]; /* catalog name, or the spec it was parsed from */
  int level_count;
  ms_cache_level_config levels[MS_HIERARCHY_MAX_LEVELS];
  ms_cache_write_policy write_policy;
  ms_cache_model model;
  uint64_t seed; /* for MS_CACHE_RANDOM */
} ms_hierarchy_config;

/* "lru", "fifo", "random", "plru" and back (-1 if unknown); same for models. */
MS_API const char *ms_cache_policy_name(ms_cache_policy policy);
MS_API int ms_cache_policy_parse(const char *name);
MS_API const char *ms_cache_model_name(ms_cache_model model);
MS_API int ms_cache_model_parse(const char *name);

/* Fills `out` from a catalog name ("nehalem") or a spec "size/line/assoc[,size/line/assoc...]"
 * with optional k/K/Ki/KiB (1024), M/Mi/MiB (1048576) or G... size suffixes. Levels get
 * LRU, the hierarchy write-back, the memsnap model and seed 1; change them afterwards.
 * A shape no cache has is refused: a line that is not a power of two, lines under
 * MS_CACHE_MIN_PLAUSIBLE_LINE_SIZE in a level of more than one set, more ways than lines;
 * the message suggests size/ways/line swapped when that reading is a cache (Cachegrind
 * writes size,ways,line). MS_ERR_ARG with a message naming the bad value. */
MS_API int ms_hierarchy_parse(const char *text, ms_hierarchy_config *out);
/* Checks a configuration (also done by ms_hierarchy_set_new); MS_ERR_ARG naming the level. */
MS_API int ms_hierarchy_config_check(const ms_hierarchy_config *config);
/* "32768/64/8,262144/64/8" into buf; returns buf. */
MS_API const char *ms_hierarchy_config_describe(const ms_hierarchy_config *config, char *buf,
                                                size_t size);

/* The built-in catalog: data/hierarchies.tsv compiled into the library. */
typedef struct ms_hierarchy_entry {
  const char *name;
  const char *spec;   /* "size/line/assoc,..." */
  const char *source; /* where the numbers come from */
} ms_hierarchy_entry;
MS_API int ms_hierarchy_catalog_count(void);
MS_API const ms_hierarchy_entry *ms_hierarchy_catalog_get(int index); /* NULL if out of range */
MS_API const ms_hierarchy_entry *ms_hierarchy_catalog_find(const char *name);
/* The evaluation rows (hpcmo-01..46) are the first MS_HIERARCHY_CATALOG_EVALUATION entries. */
#define MS_HIERARCHY_CATALOG_EVALUATION 46

/* Statistics of one level. Counts are indexed [thread * MS_ACCESS_KIND_COUNT + kind]. */
typedef struct ms_cache_counts {
  uint64_t accesses;
  uint64_t misses;
} ms_cache_counts;

typedef struct ms_cache_stats {
  ms_cache_counts total;
  ms_cache_counts kinds[MS_ACCESS_KIND_COUNT];
  uint64_t writebacks;                 /* dirty lines written out of this level */
  uint32_t thread_count;               /* threads with a slot in `thread_kinds` */
  const ms_cache_counts *thread_kinds; /* [thread * MS_ACCESS_KIND_COUNT + kind] */
  uint32_t site_count;                 /* sites with a slot in `site_misses` */
  const uint64_t *site_misses;         /* [site]; misses of accesses without a site not included */
  uint64_t unsited_misses;             /* misses of accesses with MS_SITE_NONE */
} ms_cache_stats;

static inline double ms_cache_hit_rate(ms_cache_counts counts) {
  return counts.accesses ? 1.0 - (double)counts.misses / (double)counts.accesses : 0.0;
}

/* Hierarchies simulated together in one pass. */
typedef struct ms_hierarchy_set ms_hierarchy_set;
typedef struct ms_hierarchy ms_hierarchy;

MS_API int ms_hierarchy_set_new(const ms_hierarchy_config *configs, int count,
                                ms_hierarchy_set **out);
MS_API void ms_hierarchy_set_free(ms_hierarchy_set *set);
/* Simulates a batch on every hierarchy of the set. A set of several hierarchies may keep a
 * copy of the last batches' accesses (up to 65536) and simulate them later with the next
 * ones; ms_hierarchy_set_flush simulates them now. Reading statistics
 * (ms_hierarchy_level_stats, the reports) and the sink's end flush first, so statistics
 * always cover every access received; a failure of that flush is returned by the next
 * report. */
MS_API int ms_hierarchy_set_access_batch(ms_hierarchy_set *set, const ms_batch *batch);
MS_API int ms_hierarchy_set_flush(ms_hierarchy_set *set);
/* Threads for a set of several hierarchies: the trees under different first levels are
 * simulated in parallel, one thread per CPU by default (threads 0), capped at the number
 * of distinct first levels; the statistics are the same whatever the number. */
MS_API int ms_hierarchy_set_threads(ms_hierarchy_set *set, int threads);
MS_API int ms_hierarchy_set_count(const ms_hierarchy_set *set);
MS_API const ms_hierarchy *ms_hierarchy_set_get(const ms_hierarchy_set *set, int index);
/* Distinct simulated levels (shared levels counted once). */
MS_API int ms_hierarchy_set_level_instances(const ms_hierarchy_set *set);

/* One hierarchy alone (a set of one). */
MS_API int ms_hierarchy_new(const ms_hierarchy_config *config, ms_hierarchy **out);
MS_API void ms_hierarchy_free(ms_hierarchy *hierarchy); /* only for ms_hierarchy_new's */
MS_API int ms_hierarchy_access_batch(ms_hierarchy *hierarchy, const ms_batch *batch);

MS_API const ms_hierarchy_config *ms_hierarchy_config_of(const ms_hierarchy *hierarchy);
/* Statistics of a level (0-based); pointers inside stay valid until the next batch. */
MS_API void ms_hierarchy_level_stats(const ms_hierarchy *hierarchy, int level, ms_cache_stats *out);

/* Reports over every hierarchy of a set: per level accesses, hits, misses, hit rate, the
 * load/store/modify and per-thread splits, and the `top` sites with most misses per level
 * (sites described through `sites`, which may be NULL). */
MS_API int ms_cache_report_text(FILE *out, const ms_hierarchy_set *set, const ms_site_table *sites,
                                int top);
MS_API int ms_cache_report_json(FILE *out, const ms_hierarchy_set *set, const ms_site_table *sites,
                                int top);

/* A sink that feeds every batch to the set (not owned by the sink). */
MS_API int ms_cache_sink_new(ms_hierarchy_set *set, ms_sink **out);

#ifdef __cplusplus
}
#endif

#endif

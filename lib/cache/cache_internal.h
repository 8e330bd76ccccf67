/* Internal structures of the cache simulator, shared by simulator.c and report.c. */
#ifndef MEMSNAP_CACHE_INTERNAL_H
#define MEMSNAP_CACHE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/cache.h"

/* What a level passes to the next: a fetch, a forwarded write or a writeback of the bytes
 * [address, address + size), on behalf of an access of `kind` by `site` and `thread`. */
typedef struct cache_event {
  uint64_t address;
  uint32_t size;
  uint32_t site;
  uint16_t thread;
  uint8_t kind;
  uint8_t op;
} cache_event;

typedef struct event_list {
  cache_event *events;
  size_t count, capacity;
} event_list;

/* One simulated level: a node of the set's forest. */
typedef struct cache_level {
  ms_cache_level_config config;
  ms_cache_policy policy;
  ms_cache_write_policy write_policy;
  ms_cache_model model;
  uint64_t seed;
  uint32_t size_clamp; /* largest reference size (cachegrind model), else UINT32_MAX */
  uint32_t line_size;
  unsigned line_bits;
  uint32_t associativity;
  uint64_t set_count;
  uint64_t set_mask; /* set_count - 1 */
  int set_count_pow2;
  uint64_t *ways; /* set_count * associativity: (line << 1) | dirty, or empty */
  /* Compact tags (see cache_level_expand_ways), used instead of `ways` while non-NULL:
   * (tag << 1) | dirty with tag = line >> set_bits, or EMPTY_WAY32. */
  uint32_t *ways32;
  unsigned set_bits;      /* log2(set_count) when a power of two */
  uint64_t *policy_state; /* per set: FIFO next victim, or PLRU bits; NULL for LRU, random */
  uint64_t random_state;
  int prefetch; /* tag array of PREFETCH_MIN_BYTES or more: prefetch sets ahead */

  ms_cache_counts *counts; /* [thread * MS_ACCESS_KIND_COUNT + kind] */
  uint32_t thread_capacity;
  uint64_t *site_misses; /* [site + 1]; [0] for accesses without a site */
  uint64_t site_slots;
  uint64_t writebacks;

  struct cache_level **children;
  int child_count;
  event_list out; /* this batch's events for the children */
  int out_of_memory;
} cache_level;

struct ms_hierarchy {
  ms_hierarchy_config config;
  cache_level *levels[MS_HIERARCHY_MAX_LEVELS]; /* a path in the set's forest */
  struct ms_hierarchy_set *set;
};

/* Simulates one level over a batch: records (level 0) or its parent's events, whose
 * largest size is max_size. level_run.h, built as cache_run_level and, on x86-64, as
 * cache_run_level_avx2. */
typedef void (*cache_run_level_fn)(cache_level *level, const ms_access *records,
                                   const cache_event *events, size_t count, uint32_t max_size);
void cache_run_level(cache_level *level, const ms_access *records, const cache_event *events,
                     size_t count, uint32_t max_size);
#ifdef MEMSNAP_HAVE_LEVEL_RUN_AVX2
void cache_run_level_avx2(cache_level *level, const ms_access *records, const cache_event *events,
                          size_t count, uint32_t max_size);
#endif
/* The build the host runs: the AVX2 one if it can, unless MEMSNAP_SIMD=0. */
cache_run_level_fn cache_pick_run_level(void);

/* A way of a level that holds no line. */
#define EMPTY_WAY UINT64_MAX
#define EMPTY_WAY32 UINT32_MAX

/* Compact tags hold tag = line >> set_bits in 31 bits: a level starts compact when its
 * loop has the associativity as a constant (LRU, memsnap model, write-back, power-of-two
 * sets, 8 or 16 ways) and its tag array would be at least 64 KB, and turns to 64-bit ways
 * for good, by cache_level_expand_ways, before the first input whose tag does not fit
 * (addresses of 2^(31 + set_bits + line_bits) bytes and more: 2^49 for a 256 KB L2 of
 * 64-byte lines, above every user-space address of x86-64 Linux). Returns 0 if out of
 * memory. */
int cache_level_expand_ways(cache_level *level);
/* Whether every byte that `count` inputs (records or events, of at most max_size bytes)
 * touch has a tag that fits the compact form. */
int cache_level_inputs_fit_compact(const cache_level *level, const ms_access *records,
                                   const cache_event *events, size_t count, uint32_t max_size);

struct ms_hierarchy_set {
  cache_run_level_fn run_level;
  ms_hierarchy *hierarchies;
  int count;
  cache_level **roots; /* distinct first levels */
  int root_count;
  cache_level **levels; /* every distinct level, owned */
  int level_count;
  ms_access *pending; /* accesses received but not yet simulated (sets of several) */
  size_t pending_count;
  int flush_status;  /* the first failure of cache_set_flush_for_reading, else MS_OK */
  struct jobs *pool; /* several roots: their trees simulated on several threads */
};

/* Simulates the accesses a set still holds before its statistics are read (statistics
 * readers get a const set); returns the status of the first such flush that failed. */
int cache_set_flush_for_reading(const ms_hierarchy_set *set);

#endif

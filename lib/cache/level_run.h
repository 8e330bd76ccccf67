/* The simulation of one level over a batch (see simulator.c for the model): the lookups of
 * every replacement policy, the two accounting models, and the loops that run_level picks
 * so that policy, model, input kind and geometry are constants in them.
 *
 * This file is included by two translation units: level_run.c, compiled for the baseline
 * instruction set, and level_run_avx2.c, compiled with -mavx2 for x86-64 hosts that have
 * AVX2 (simulator.c picks one when a set is made; MEMSNAP_SIMD=0 forces the baseline).
 * The only difference is lookup_lru for 8 and 16 ways: with AVX2 the search compares 4 ways
 * per instruction and moves the ways in registers, with no branch on where the line was.
 * Both give the same statistics, events and set contents (tests/cache/test_cache_simd.c).
 * The function's name is LEVEL_RUN_FUNCTION, defined by the includer. */
#ifndef LEVEL_RUN_FUNCTION
#error "define LEVEL_RUN_FUNCTION before including level_run.h"
#endif
#include <stdlib.h>
#include <string.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "cache_internal.h"
#include "memsnap/error.h"

/* The per-access path is forced inline into run_level's loops, one per (policy, model,
 * input) so that those are constants there. GCC left memsnap_reference out of line, called
 * with 8 arguments per line access (seen in perf annotate); the gain was within the noise
 * of this shared machine, so the reason kept is the absence of per-access dispatch. */
#define HOT static inline __attribute__((always_inline))
/* Prefetching the set of the access PREFETCH_DISTANCE ahead, in levels whose tag array is
 * at least PREFETCH_MIN_BYTES (nehalem's L3: 1 MB), took the gather trace (12M accesses,
 * random reads over 24 MB) from 0.276 to 0.258 s on nehalem and the 46 evaluation
 * hierarchies in one pass from 11.9-13.4 to 7.1-7.2 s (CPU time, interleaved runs on the
 * shared 2-core EPYC VM). Distance 8 was slower (0.300 s), 32 the same as 16; prefetching
 * every level, small ones too, gained nothing more. */
#define PREFETCH_DISTANCE 16

enum { OP_READ = 1, OP_WRITE = 2, OP_READ_WRITE = 3, OP_WRITEBACK = 4 };

static const uint8_t op_of_kind[MS_ACCESS_KIND_COUNT] = {OP_READ, OP_WRITE, OP_READ_WRITE};
static inline void emit(cache_level *level, uint64_t address, uint32_t size, uint32_t site,
                        uint16_t thread, unsigned kind, unsigned op) {
  event_list *out = &level->out;
  if (out->count == out->capacity) {
    size_t capacity = out->capacity ? out->capacity * 2 : 1024;
    cache_event *events = realloc(out->events, capacity * sizeof *events);
    if (!events) {
      level->out_of_memory = 1;
      return;
    }
    out->events = events;
    out->capacity = capacity;
  }
  out->events[out->count++] = (cache_event){.address = address,
                                            .size = size,
                                            .site = site,
                                            .thread = thread,
                                            .kind = (uint8_t)kind,
                                            .op = (uint8_t)op};
}
/* ---- replacement ---- */

static inline uint64_t xorshift64(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

static inline void plru_touch(uint64_t *bits, uint32_t associativity, uint32_t way) {
  for (uint32_t node = associativity + way; node > 1; node >>= 1) {
    uint64_t parent_bit = 1ull << (node >> 1);
    if (node & 1)
      *bits &= ~parent_bit; /* we are the right child: point left */
    else
      *bits |= parent_bit;
  }
}

static inline uint32_t plru_victim(uint64_t bits, uint32_t associativity) {
  uint32_t node = 1;
  while (node < associativity)
    node = 2 * node + (uint32_t)((bits >> node) & 1);
  return node - associativity;
}

static inline uint64_t set_index(const cache_level *level, uint64_t line) {
  return level->set_count_pow2 ? line & level->set_mask : line % level->set_count;
}

static inline int same_line(uint64_t way, uint64_t key) { return (way | 1) == (key | 1); }

/* LRU: ways ordered MRU first. Returns 1 on a hit. On a miss with `allocate`, installs the
 * line at the front and stores the evicted way (EMPTY_WAY if none) in *victim.
 * The search shifts the ways it passes down by one as it goes, so a miss (every L2 and L3
 * access of an irregular trace) reads and writes the set once instead of a search then a
 * shift: gather trace on nehalem 0.32-0.47 s -> 0.26-0.35 s (best of 3, interleaved runs). */
#define DEFINE_LOOKUP_LRU_WAYS(name, way_t)                                                        \
  HOT int name(way_t *ways, uint32_t associativity, way_t key, way_t dirty, int allocate,          \
               way_t *victim) {                                                                    \
    way_t passed = ways[0];                                                                        \
    if ((passed | 1) == (key | 1)) {                                                               \
      ways[0] = passed | dirty;                                                                    \
      return 1;                                                                                    \
    }                                                                                              \
    for (uint32_t i = 1; i < associativity; i++) {                                                 \
      way_t way = ways[i];                                                                         \
      ways[i] = passed;                                                                            \
      if ((way | 1) == (key | 1)) {                                                                \
        ways[0] = way | dirty;                                                                     \
        return 1;                                                                                  \
      }                                                                                            \
      passed = way;                                                                                \
    }                                                                                              \
    if (!allocate) { /* undo the shift: a miss that does not allocate leaves the set as it was */  \
      for (uint32_t i = 0; i + 1 < associativity; i++)                                             \
        ways[i] = ways[i + 1];                                                                     \
      ways[associativity - 1] = passed;                                                            \
      return 0;                                                                                    \
    }                                                                                              \
    *victim = passed;                                                                              \
    ways[0] = key | dirty;                                                                         \
    return 0;                                                                                      \
  }
/* 64-bit ways, and compact ones (cache_internal.h) */
DEFINE_LOOKUP_LRU_WAYS(lookup_lru_ways, uint64_t)
DEFINE_LOOKUP_LRU_WAYS(lookup_lru_ways32, uint32_t)

#ifdef __AVX2__
/* The same search and move as lookup_lru_ways, `vectors` x 4 ways at a time: one compare per
 * 4 ways finds the hit (or none), then every way before it moves down one place in
 * registers and the hit line (or the new one) goes to the front. No branch depends on where
 * the line was found. */
HOT int lookup_lru_avx2(uint64_t *ways, int vectors, uint64_t key, uint64_t dirty, int allocate,
                        uint64_t *victim) {
  uint64_t first = ways[0];
  if (same_line(first, key)) { /* the MRU line: the common case of regular traces */
    ways[0] = first | dirty;
    return 1;
  }
  __m256i v[4];
  const __m256i ones = _mm256_set1_epi64x(1), wanted = _mm256_set1_epi64x((long long)(key | 1));
  unsigned mask = 0;
  for (int i = 0; i < vectors; i++) {
    v[i] = _mm256_loadu_si256((const __m256i *)(ways + 4 * i));
    __m256i equal = _mm256_cmpeq_epi64(_mm256_or_si256(v[i], ones), wanted);
    mask |= (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(equal)) << (4 * i);
  }
  int hit = mask != 0;
  if (!hit && !allocate) return 0;
  int last = 4 * vectors - 1;
  unsigned way = hit ? (unsigned)__builtin_ctz(mask) : (unsigned)last;
  uint64_t front = hit ? ways[way] | dirty : key | dirty;
  if (!hit) *victim = ways[last];
  const __m256i position = _mm256_set_epi64x(3, 2, 1, 0), at = _mm256_set1_epi64x(way);
  __m256i carry = _mm256_set1_epi64x((long long)front);
  for (int i = 0; i < vectors; i++) {
    /* shifted = [carry, v0, v1, v2]; lanes at or before `way` take it */
    __m256i shifted = _mm256_blend_epi32(_mm256_permute4x64_epi64(v[i], 0x90), carry, 0x03);
    __m256i keep = _mm256_cmpgt_epi64(_mm256_add_epi64(position, _mm256_set1_epi64x(4 * i)), at);
    carry = _mm256_permute4x64_epi64(v[i], 0xff);
    _mm256_storeu_si256((__m256i *)(ways + 4 * i), _mm256_blendv_epi8(shifted, v[i], keep));
  }
  return hit;
}
#endif

/* The usual associativities as constants, so that the compiler unrolls the search: the
 * loop control was 8% of the instructions of nehalem on the gather trace (callgrind). The
 * switch is taken the same way for every access of a level. */
#ifdef __AVX2__
#define LOOKUP_LRU_FIXED(avx2, vectors8, vectors16, scalar)                                        \
  case 8: return avx2(ways, vectors8, key, dirty, allocate, victim);                               \
  case 16:                                                                                         \
    return avx2(ways, vectors16, key, dirty, allocate, victim);
#else
#define LOOKUP_LRU_FIXED(avx2, vectors8, vectors16, scalar)                                        \
  case 8: return scalar(ways, 8, key, dirty, allocate, victim);                                    \
  case 16:                                                                                         \
    return scalar(ways, 16, key, dirty, allocate, victim);
#endif
#define DEFINE_LOOKUP_LRU(name, way_t, avx2, vectors8, vectors16, scalar)                          \
  HOT int name(way_t *ways, uint32_t associativity, way_t key, way_t dirty, int allocate,          \
               way_t *victim) {                                                                    \
    switch (associativity) {                                                                       \
      LOOKUP_LRU_FIXED(avx2, vectors8, vectors16, scalar)                                          \
    default: return scalar(ways, associativity, key, dirty, allocate, victim);                     \
    }                                                                                              \
  }
/* 64-bit ways: the AVX2 search compares 4 per instruction. */
DEFINE_LOOKUP_LRU(lookup_lru, uint64_t, lookup_lru_avx2, 2, 4, lookup_lru_ways)

/* Compact ways (cache_internal.h): a 16-way set is 64 bytes, one host cache line instead
 * of two, and the tag arrays are half as large. */

#ifdef __AVX2__
/* lookup_lru_avx2 over compact ways, `vectors` x 8 ways at a time. */
HOT int lookup_lru32_avx2(uint32_t *ways, int vectors, uint32_t key, uint32_t dirty, int allocate,
                          uint32_t *victim) {
  uint32_t first = ways[0];
  if ((first | 1) == (key | 1)) {
    ways[0] = first | dirty;
    return 1;
  }
  __m256i v[2];
  const __m256i ones = _mm256_set1_epi32(1), wanted = _mm256_set1_epi32((int)(key | 1));
  unsigned mask = 0;
  for (int i = 0; i < vectors; i++) {
    v[i] = _mm256_loadu_si256((const __m256i *)(ways + 8 * i));
    __m256i equal = _mm256_cmpeq_epi32(_mm256_or_si256(v[i], ones), wanted);
    mask |= (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(equal)) << (8 * i);
  }
  int hit = mask != 0;
  if (!hit && !allocate) return 0;
  int last = 8 * vectors - 1;
  unsigned way = hit ? (unsigned)__builtin_ctz(mask) : (unsigned)last;
  uint32_t front = hit ? ways[way] | dirty : key | dirty;
  if (!hit) *victim = ways[last];
  const __m256i down = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6), top = _mm256_set1_epi32(7);
  const __m256i position = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                at = _mm256_set1_epi32((int)way);
  __m256i carry = _mm256_set1_epi32((int)front);
  for (int i = 0; i < vectors; i++) {
    /* shifted = [carry, v0 .. v6]; lanes at or before `way` take it */
    __m256i shifted = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(v[i], down), carry, 0x01);
    __m256i keep = _mm256_cmpgt_epi32(_mm256_add_epi32(position, _mm256_set1_epi32(8 * i)), at);
    carry = _mm256_permutevar8x32_epi32(v[i], top);
    _mm256_storeu_si256((__m256i *)(ways + 8 * i), _mm256_blendv_epi8(shifted, v[i], keep));
  }
  return hit;
}
#endif

/* 32-bit ways: the AVX2 search compares 8 per instruction. */
DEFINE_LOOKUP_LRU(lookup_lru32, uint32_t, lookup_lru32_avx2, 1, 2, lookup_lru_ways32)

/* An LRU lookup of `line` in its set, over 64-bit or compact ways; the victim comes back in
 * the 64-bit form. */
HOT int lookup_lru_set(uint64_t *ways, uint32_t *ways32, int compact, uint32_t associativity,
                       uint64_t set, unsigned set_bits, uint64_t line, uint64_t dirty, int allocate,
                       uint64_t *victim) {
  if (!compact)
    return lookup_lru(ways + set * associativity, associativity, line << 1, dirty, allocate,
                      victim);
  uint32_t victim32 = EMPTY_WAY32;
  int hit = lookup_lru32(ways32 + set * associativity, associativity,
                         (uint32_t)(line >> set_bits) << 1, (uint32_t)dirty, allocate, &victim32);
  if (victim32 != EMPTY_WAY32)
    *victim = ((((uint64_t)(victim32 >> 1) << set_bits) | set) << 1) | (victim32 & 1);
  return hit;
}

/* FIFO, random, tree-PLRU: ways stay in place. */
HOT int lookup_positional(cache_level *level, uint64_t set, uint64_t key, uint64_t dirty,
                          int allocate, uint64_t *victim, ms_cache_policy policy) {
  uint32_t associativity = level->associativity;
  uint64_t *ways = level->ways + set * associativity;
  uint32_t way = 0;
  for (; way < associativity; way++) {
    if (same_line(ways[way], key)) {
      ways[way] |= dirty;
      if (policy == MS_CACHE_PLRU) plru_touch(&level->policy_state[set], associativity, way);
      return 1;
    }
    if (ways[way] == EMPTY_WAY) break; /* valid ways are a prefix: the line is absent */
  }
  if (!allocate) return 0;
  if (way == associativity) { /* full set */
    switch (policy) {
    case MS_CACHE_FIFO:
      way = (uint32_t)level->policy_state[set];
      level->policy_state[set] = way + 1 == associativity ? 0 : way + 1;
      break;
    case MS_CACHE_RANDOM: way = (uint32_t)(xorshift64(&level->random_state) % associativity); break;
    case MS_CACHE_PLRU: way = plru_victim(level->policy_state[set], associativity); break;
    case MS_CACHE_LRU: break; /* not positional */
    }
  }
  *victim = ways[way];
  ways[way] = key | dirty;
  if (policy == MS_CACHE_PLRU) plru_touch(&level->policy_state[set], associativity, way);
  return 0;
}

HOT int lookup(cache_level *level, uint64_t line, uint64_t dirty, int allocate, uint64_t *victim,
               ms_cache_policy policy) {
  uint64_t set = set_index(level, line);
  if (policy == MS_CACHE_LRU)
    return lookup_lru(level->ways + set * level->associativity, level->associativity, line << 1,
                      dirty, allocate, victim);
  return lookup_positional(level, set, line << 1, dirty, allocate, victim, policy);
}

/* ---- the two models ---- */

HOT void write_back_victim(cache_level *level, uint64_t victim, uint32_t site, uint16_t thread,
                           unsigned kind, int has_children) {
  if (victim == EMPTY_WAY || !(victim & 1)) return;
  level->writebacks++;
  if (has_children)
    emit(level, (victim >> 1) << level->line_bits, level->line_size, site, thread, kind,
         OP_WRITEBACK);
}

HOT void memsnap_line(cache_level *level, uint64_t line, uint32_t site, uint16_t thread,
                      unsigned kind, unsigned op, ms_cache_policy policy, int has_children) {
  uint64_t victim = EMPTY_WAY;
  int write_back = level->write_policy == MS_CACHE_WRITE_BACK;
  if (op == OP_WRITEBACK) { /* not an access: install or dirty the line */
    lookup(level, line, 1, 1, &victim, policy);
    write_back_victim(level, victim, site, thread, kind, has_children);
    return;
  }
  ms_cache_counts *counts = &level->counts[(size_t)thread * MS_ACCESS_KIND_COUNT + kind];
  counts->accesses++;
  uint64_t dirty = write_back && (op & OP_WRITE);
  int hit = lookup(level, line, dirty, write_back || (op & OP_READ), &victim, policy);
  if (!hit) {
    counts->misses++;
    level->site_misses[(uint32_t)(site + 1)]++;
  }
  if (write_back) {
    if (!hit && has_children)
      emit(level, line << level->line_bits, level->line_size, site, thread, kind, OP_READ);
    write_back_victim(level, victim, site, thread, kind, has_children);
  } else if (has_children && (!hit || (op & OP_WRITE))) {
    emit(level, line << level->line_bits, level->line_size, site, thread, kind,
         hit ? OP_WRITE : op);
  }
}

HOT void memsnap_reference(cache_level *level, uint64_t address, uint32_t size, uint32_t site,
                           uint16_t thread, unsigned kind, unsigned op, ms_cache_policy policy,
                           int has_children) {
  uint64_t first = address >> level->line_bits;
  uint64_t last = (address + size - 1) >> level->line_bits;
  memsnap_line(level, first, site, thread, kind, op, policy, has_children);
  for (uint64_t line = first + 1; line <= last; line++)
    memsnap_line(level, line, site, thread, kind, op, policy, has_children);
}

HOT void cachegrind_reference(cache_level *level, uint64_t address, uint32_t size, uint32_t site,
                              uint16_t thread, unsigned kind, int has_children) {
  uint64_t first = address >> level->line_bits;
  uint64_t last = (address + size - 1) >> level->line_bits;
  uint64_t victim;
  int miss = !lookup(level, first, 0, 1, &victim, MS_CACHE_LRU);
  if (last != first) miss |= !lookup(level, last, 0, 1, &victim, MS_CACHE_LRU);
  ms_cache_counts *counts = &level->counts[(size_t)thread * MS_ACCESS_KIND_COUNT + kind];
  counts->accesses++;
  if (miss) {
    counts->misses++;
    level->site_misses[(uint32_t)(site + 1)]++;
    if (has_children) emit(level, address, size, site, thread, kind, OP_READ);
  }
}

/* Starts loading, into the host's cache, the set (and its policy state) that the access at
 * `address` will look up. */
HOT void prefetch_set(const cache_level *level, uint64_t address) {
  uint64_t set = set_index(level, address >> level->line_bits); /* 64-bit ways: see consume */
  const uint64_t *ways = level->ways + set * level->associativity;
  __builtin_prefetch(ways, 1);
  __builtin_prefetch(ways + level->associativity - 1, 1);
  if (level->policy_state) __builtin_prefetch(&level->policy_state[set], 1);
}

/* One level over a whole input, records (level 0) or its parent's events. Always inlined
 * into run_level's cases so that policy, model and input kind are constants in the loop:
 * no per-access indirect call and no per-access policy dispatch. */
HOT void consume(cache_level *level, const ms_access *records, const cache_event *events,
                 size_t count, ms_cache_policy policy, ms_cache_model model) {
  int has_children = level->child_count > 0;
  int prefetch = level->prefetch;
  for (size_t i = 0; i < count; i++) {
    if (prefetch && i + PREFETCH_DISTANCE < count)
      prefetch_set(level, records ? records[i + PREFETCH_DISTANCE].address
                                  : events[i + PREFETCH_DISTANCE].address);
    uint64_t address;
    uint32_t size, site;
    uint16_t thread;
    unsigned kind, op;
    if (records) {
      address = records[i].address;
      size = records[i].size ? records[i].size : 1;
      if (size > level->size_clamp) size = level->size_clamp;
      site = records[i].site;
      thread = records[i].thread;
      kind = records[i].kind;
      op = op_of_kind[kind];
    } else {
      address = events[i].address;
      size = events[i].size;
      site = events[i].site;
      thread = events[i].thread;
      kind = events[i].kind;
      op = events[i].op;
    }
    if (model == MS_CACHE_MODEL_CACHEGRIND)
      cachegrind_reference(level, address, size, site, thread, kind, has_children);
    else
      memsnap_reference(level, address, size, site, thread, kind, op, policy, has_children);
  }
}

/* ---- memsnap model, LRU: one loop per level, records or events ----
 * The general path (consume) costs, per input, the clamp, op_of_kind, a counts pointer, a
 * per-line memsnap_line whose emit() checks capacity, and reloads of level->line_bits,
 * ways, masks after every store (a uint64_t store may alias them). Nehalem's L1 alone took
 * 0.105 s on the gather trace (12M records, ~8.7 ns each) with a 4 KB tag array.
 * consume_lru keeps the geometry in locals, counts accesses and misses per kind in locals
 * (flushed into level->counts when the thread changes and at the end), writebacks in a
 * local, and reserves the event room of RESERVE_RECORDS inputs at once so that its emits
 * store without a check; run_level makes input, set-count kind, write policy and children
 * constants (16 loops). Statistics and events are exactly those of consume (test_cache,
 * cachegrind_oracle, and an old/new diff of every statistic on random traces with straddles,
 * threads, sites, both write policies and non-power-of-two sets). CPU time, best of 8
 * alternating runs on the shared 2-core VM (load ~2): gather L1 alone (32768/64/8) 0.103
 * -> 0.081 s, gather nehalem 0.236 -> 0.216 s, matmul nehalem 0.693 -> 0.593 s (with the
 * prepare_batch change). Tried and dropped: a branch-free LRU search past way 0 (masks
 * instead of the loop exit at the hit, events stored always and kept by a flag) took
 * gather L1 from 0.100 to 0.117-0.150 s. */
#define RESERVE_RECORDS 256

/* Room for `events` more events in level->out; 0 if out of memory. */
static int reserve_events(cache_level *level, size_t events) {
  event_list *out = &level->out;
  if (out->capacity - out->count >= events) return 1;
  size_t capacity = out->capacity ? out->capacity : 1024;
  while (capacity - out->count < events)
    capacity *= 2;
  cache_event *grown = realloc(out->events, capacity * sizeof *grown);
  if (!grown) return 0;
  out->events = grown;
  out->capacity = capacity;
  return 1;
}

static inline void flush_kind_counts(ms_cache_counts *counts, uint64_t accesses[],
                                     uint64_t misses[]) {
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++) {
    counts[k].accesses += accesses[k];
    counts[k].misses += misses[k];
    accesses[k] = misses[k] = 0;
  }
}

HOT void consume_lru(cache_level *level, const ms_access *records, const cache_event *input,
                     size_t count, uint32_t max_size, int set_count_pow2, int write_back,
                     int has_children, uint32_t fixed_associativity, int compact, int prefetch) {
  const unsigned line_bits = level->line_bits;
  const uint32_t line_size = level->line_size;
  const uint32_t associativity = fixed_associativity ? fixed_associativity : level->associativity;
  const uint64_t set_mask = level->set_mask, set_count = level->set_count;
  uint64_t *const ways = level->ways;
  uint32_t *const ways32 = level->ways32;
  const unsigned set_bits = level->set_bits;
  uint64_t *const site_misses = level->site_misses;
  ms_cache_counts *const counts = level->counts;
  /* Events one record can emit: a fetch and a writeback per line, of at most 255 bytes. */
  const size_t events_per_record = 2 * ((size_t)((max_size - 1) >> line_bits) + 2);
  uint64_t accesses[MS_ACCESS_KIND_COUNT] = {0}, misses[MS_ACCESS_KIND_COUNT] = {0};
  uint64_t writebacks = 0;
  /* records or input: exactly one is non-NULL (see the loop below) */
  // cppcheck-suppress nullPointer
  uint32_t current_thread = !count ? 0 : records ? records[0].thread : input[0].thread;

  for (size_t chunk = 0; chunk < count; chunk += RESERVE_RECORDS) {
    size_t end = count - chunk < RESERVE_RECORDS ? count : chunk + RESERVE_RECORDS;
    if (has_children && !reserve_events(level, (end - chunk) * events_per_record)) {
      /* out of memory: the general path's checked emit records it */
      flush_kind_counts(&counts[(size_t)current_thread * MS_ACCESS_KIND_COUNT], accesses, misses);
      level->writebacks += writebacks;
      writebacks = 0;
      if (compact) { /* the general path knows only 64-bit ways: the rest goes there */
        if (!cache_level_expand_ways(level)) {
          level->out_of_memory = 1;
          return;
        }
        if (records)
          consume(level, records + chunk, NULL, count - chunk, MS_CACHE_LRU,
                  MS_CACHE_MODEL_MEMSNAP);
        else
          consume(level, NULL, input + chunk, count - chunk, MS_CACHE_LRU, MS_CACHE_MODEL_MEMSNAP);
        return;
      }
      if (records)
        consume(level, records + chunk, NULL, end - chunk, MS_CACHE_LRU, MS_CACHE_MODEL_MEMSNAP);
      else
        consume(level, NULL, input + chunk, end - chunk, MS_CACHE_LRU, MS_CACHE_MODEL_MEMSNAP);
      continue;
    }
    cache_event *events = level->out.events + level->out.count, *const events_begin = events;
    for (size_t i = chunk; i < end; i++) {
      if (prefetch && i + PREFETCH_DISTANCE < count) { /* prefetch_set, from the locals */
        uint64_t ahead = (records ? records[i + PREFETCH_DISTANCE].address
                                  : input[i + PREFETCH_DISTANCE].address) >>
                         line_bits;
        uint64_t set = set_count_pow2 ? ahead & set_mask : ahead % set_count;
        if (compact) {
          __builtin_prefetch(ways32 + set * associativity, 1);
        } else {
          __builtin_prefetch(ways + set * associativity, 1);
          __builtin_prefetch(ways + set * associativity + associativity - 1, 1);
        }
      }
      /* records or input: exactly one is non-NULL (every caller passes one of them and NULL);
       * cppcheck pairs the NULL input of one call with the NULL test on records of another */
      // cppcheck-suppress nullPointer
      const uint64_t address = records ? records[i].address : input[i].address;
      // cppcheck-suppress nullPointer
      const uint32_t size = records ? (records[i].size ? records[i].size : 1u) : input[i].size;
      // cppcheck-suppress nullPointer
      const uint32_t site = records ? records[i].site : input[i].site;
      // cppcheck-suppress nullPointer
      const uint16_t thread = records ? records[i].thread : input[i].thread;
      // cppcheck-suppress nullPointer
      const unsigned kind = records ? records[i].kind : input[i].kind;
      // cppcheck-suppress nullPointer
      const unsigned op = records ? op_of_kind[kind] : input[i].op;
      if (!records && op == OP_WRITEBACK) { /* not an access: install or dirty the line */
        const uint64_t first = address >> line_bits, last = (address + size - 1) >> line_bits;
        uint64_t line = first;
        do { /* as memsnap_reference */
          uint64_t set = set_count_pow2 ? line & set_mask : line % set_count, victim = EMPTY_WAY;
          lookup_lru_set(ways, ways32, compact, associativity, set, set_bits, line, 1, 1, &victim);
          if (victim != EMPTY_WAY && (victim & 1)) {
            writebacks++;
            if (has_children)
              *events++ = (cache_event){.address = (victim >> 1) << line_bits,
                                        .size = line_size,
                                        .site = site,
                                        .thread = thread,
                                        .kind = (uint8_t)kind,
                                        .op = OP_WRITEBACK};
          }
        } while (++line <= last && line > first);
        continue;
      }
      if (thread != current_thread) {
        flush_kind_counts(&counts[(size_t)current_thread * MS_ACCESS_KIND_COUNT], accesses, misses);
        current_thread = thread;
      }
      const uint64_t dirty = write_back && (op & OP_WRITE);
      const int allocate = write_back || (op & OP_READ);
      const uint64_t first = address >> line_bits, last = (address + size - 1) >> line_bits;
      uint64_t line = first;
      do { /* first, then first + 1 .. last, as memsnap_reference */
        uint64_t set = set_count_pow2 ? line & set_mask : line % set_count;
        uint64_t victim = EMPTY_WAY;
        accesses[kind]++;
        int hit = lookup_lru_set(ways, ways32, compact, associativity, set, set_bits, line, dirty,
                                 allocate, &victim);
        if (!hit) {
          misses[kind]++;
          site_misses[(uint32_t)(site + 1)]++;
        }
        if (write_back) {
          if (!hit && has_children)
            *events++ = (cache_event){.address = line << line_bits,
                                      .size = line_size,
                                      .site = site,
                                      .thread = thread,
                                      .kind = (uint8_t)kind,
                                      .op = OP_READ};
          if (victim != EMPTY_WAY && (victim & 1)) {
            writebacks++;
            if (has_children)
              *events++ = (cache_event){.address = (victim >> 1) << line_bits,
                                        .size = line_size,
                                        .site = site,
                                        .thread = thread,
                                        .kind = (uint8_t)kind,
                                        .op = OP_WRITEBACK};
          }
        } else if (has_children && (!hit || (op & OP_WRITE))) {
          *events++ = (cache_event){.address = line << line_bits,
                                    .size = line_size,
                                    .site = site,
                                    .thread = thread,
                                    .kind = (uint8_t)kind,
                                    .op = (uint8_t)(hit ? OP_WRITE : op)};
        }
      } while (++line <= last && line > first);
    }
    level->out.count += (size_t)(events - events_begin);
  }
  flush_kind_counts(&counts[(size_t)current_thread * MS_ACCESS_KIND_COUNT], accesses, misses);
  level->writebacks += writebacks;
}

#define RUN_POLICY(records, events, count, model)                                                  \
  switch (level->policy) {                                                                         \
  case MS_CACHE_LRU: consume(level, records, events, count, MS_CACHE_LRU, model); break;           \
  case MS_CACHE_FIFO: consume(level, records, events, count, MS_CACHE_FIFO, model); break;         \
  case MS_CACHE_RANDOM: consume(level, records, events, count, MS_CACHE_RANDOM, model); break;     \
  case MS_CACHE_PLRU: consume(level, records, events, count, MS_CACHE_PLRU, model); break;         \
  }

/* max_size: the largest size of the input, 255 for records, the parent's line size for
 * its events (in the memsnap model every event is one line of the level that emits it). */
void LEVEL_RUN_FUNCTION(cache_level *level, const ms_access *records, const cache_event *events,
                        size_t count, uint32_t max_size) {
  level->out.count = 0;
  if (level->model == MS_CACHE_MODEL_CACHEGRIND) {
    if (records)
      consume(level, records, NULL, count, MS_CACHE_LRU, MS_CACHE_MODEL_CACHEGRIND);
    else
      consume(level, NULL, events, count, MS_CACHE_LRU, MS_CACHE_MODEL_CACHEGRIND);
  } else if (level->policy == MS_CACHE_LRU) {
    /* input, geometry, write policy and children as constants: 16 loops */
    int pow2 = level->set_count_pow2, write_back = level->write_policy == MS_CACHE_WRITE_BACK;
    int children = level->child_count > 0;
    /* The usual geometry (power-of-two sets, write-back, 8 or 16 ways) also gets its
     * associativity as a constant: no multiply and no switch per access, and registers
     * enough that the loop's variables stay out of the stack (perf annotate of nehalem's L1
     * on the gather trace showed 7 reloads from the stack per access). */
    uint32_t ways = level->associativity;
    if (level->ways32 &&
        !cache_level_inputs_fit_compact(level, records, events, count, records ? 255 : max_size) &&
        !cache_level_expand_ways(level)) {
      level->out_of_memory = 1;
      return;
    }
    int compact = level->ways32 != NULL; /* only ever with the fixed loops below */
#define LRU_FIXED(w, c, a)                                                                         \
  if (pow2 && write_back == w && children == c && ways == a) {                                     \
    if (compact) { /* compact levels are large: they prefetch */                                   \
      if (records)                                                                                 \
        consume_lru(level, records, NULL, count, 255, 1, w, c, a, 1, 1);                           \
      else                                                                                         \
        consume_lru(level, NULL, events, count, max_size, 1, w, c, a, 1, 1);                       \
    } else if (!level->prefetch) {                                                                 \
      if (records)                                                                                 \
        consume_lru(level, records, NULL, count, 255, 1, w, c, a, 0, 0);                           \
      else                                                                                         \
        consume_lru(level, NULL, events, count, max_size, 1, w, c, a, 0, 0);                       \
    } else if (records)                                                                            \
      consume_lru(level, records, NULL, count, 255, 1, w, c, a, 0, 1);                             \
    else                                                                                           \
      consume_lru(level, NULL, events, count, max_size, 1, w, c, a, 0, 1);                         \
  } else
    LRU_FIXED(1, 1, 8)
    LRU_FIXED(1, 0, 8)
    LRU_FIXED(1, 1, 16)
    LRU_FIXED(1, 0, 16)
#undef LRU_FIXED
#define LRU_CASE(p, w, c)                                                                          \
  if (pow2 == p && write_back == w && children == c) {                                             \
    if (records)                                                                                   \
      consume_lru(level, records, NULL, count, 255, p, w, c, 0, 0, level->prefetch);               \
    else                                                                                           \
      consume_lru(level, NULL, events, count, max_size, p, w, c, 0, 0, level->prefetch);           \
  }
    LRU_CASE(1, 1, 1)
    else LRU_CASE(1, 1, 0) else LRU_CASE(1, 0, 1) else LRU_CASE(1, 0, 0) else LRU_CASE(
        0, 1, 1) else LRU_CASE(0, 1, 0) else LRU_CASE(0, 0, 1) else LRU_CASE(0, 0, 0)
#undef LRU_CASE
  } else if (records) {
    RUN_POLICY(records, NULL, count, MS_CACHE_MODEL_MEMSNAP)
  } else {
    RUN_POLICY(NULL, events, count, MS_CACHE_MODEL_MEMSNAP)
  }
}

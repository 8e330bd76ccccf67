/* Set-associative cache hierarchy simulator (see memsnap/cache.h for the contract).
 *
 * Model and assumptions:
 *  - A level is set_count x associativity ways. The set of a line (address >> line_bits) is
 *    line % set_count; set counts that are powers of two take a mask instead (same result).
 *    The tag is the whole line number, as in Cachegrind: cheaper than cutting it and exact.
 *  - A way holds (line << 1) | dirty, or EMPTY. Lines are never invalidated (no inclusion,
 *    no back-invalidation: levels are independent), so the valid ways of a set are always
 *    a prefix and an empty way, when there is one, is the first victim under every policy.
 *  - LRU keeps each set ordered most- to least-recently used and moves a hit to the front
 *    (cg_sim.c does the same): a hit on the MRU line, the common case, costs one compare.
 *    FIFO evicts ways round-robin (a per-set pointer advanced on each eviction of a full
 *    set). Random draws victim = xorshift64(13, 7, 17) % associativity from a per-level
 *    state seeded with seed + depth * 0x9E3779B97F4A7C15 (0 replaced by that constant),
 *    only when the set is full. Tree-PLRU keeps associativity-1 bits per set, heap-ordered
 *    (node 1 the root, children 2n and 2n+1, way w is leaf associativity + w); a bit 0
 *    sends the victim search left; an access flips the bits on its path to point away.
 *  - memsnap model: each line an access spans is one access. Write-back write-allocate: a
 *    miss fetches the line from the next level (one access there, counted under the kind
 *    of the instruction that missed) and the dirty victim, if any, is written back after
 *    the fetch. A writeback is not an access at the next level: it is counted in the
 *    `writebacks` of the level it leaves, and installs the line dirty (or touches and
 *    dirties it) at the next level, whose own dirty victim is written back further.
 *    Write-through no-allocate: a load or modify that misses allocates and is forwarded;
 *    a store that misses is forwarded without allocating; a store or modify that hits is
 *    forwarded as a write. Nothing is ever dirty.
 *  - cachegrind model: cg_sim.c of Valgrind 3.19. A reference is one access; if it
 *    straddles two lines both are looked up (both update LRU) and it misses if either
 *    misses; a miss looks the whole reference up at the next level. Sizes are clamped to
 *    the smallest line size of the hierarchy (cg_main.c clamps to min_line_size).
 *  - Levels run one at a time over a whole batch: level 0 over the records, each deeper
 *    level over the events its parent emitted (fetches, forwarded writes, writebacks), in
 *    order. Since no level affects the ones above it, this is the same as following each
 *    access down the hierarchy, and it lets hierarchies whose first levels are identical
 *    share them: the set is a forest of levels and a hierarchy is a path from a root.
 *    A set of several hierarchies buffers accesses into batches of SET_BUFFER_RECORDS and
 *    simulates them when the buffer is full, on ms_hierarchy_set_flush, or before its
 *    statistics are read.
 */
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"
#include "memsnap/error.h"

#define EMPTY_WAY UINT64_MAX
/* The per-access path is forced inline into run_level's loops, one per (policy, model,
 * input) so that those are constants there. GCC left memsnap_reference out of line, called
 * with 8 arguments per line access (seen in perf annotate); the gain was within the noise
 * of this shared machine, so the reason kept is the absence of per-access dispatch. */
#define HOT static inline __attribute__((always_inline))
#define RANDOM_SEED_STEP 0x9E3779B97F4A7C15ull
/* Prefetching the set of the access PREFETCH_DISTANCE ahead, in levels whose tag array is
 * at least PREFETCH_MIN_BYTES (nehalem's L3: 1 MB), took the gather trace (12M accesses,
 * random reads over 24 MB) from 0.276 to 0.258 s on nehalem and the 46 evaluation
 * hierarchies in one pass from 11.9-13.4 to 7.1-7.2 s (CPU time, interleaved runs on the
 * shared 2-core EPYC VM). Distance 8 was slower (0.300 s), 32 the same as 16; prefetching
 * every level, small ones too, gained nothing more. */
#define PREFETCH_DISTANCE 16
#define PREFETCH_MIN_BYTES (64 * 1024)
/* Accesses a set of several hierarchies buffers before simulating them, see buffer_batch. */
#define SET_BUFFER_RECORDS 65536

enum { OP_READ = 1, OP_WRITE = 2, OP_READ_WRITE = 3, OP_WRITEBACK = 4 };

static const uint8_t op_of_kind[MS_ACCESS_KIND_COUNT] = {OP_READ, OP_WRITE, OP_READ_WRITE};

/* ---- statistics storage ---- */

static int grow_counts(cache_level *level, uint32_t threads) {
  if (threads <= level->thread_capacity) return MS_OK;
  uint32_t capacity = level->thread_capacity ? level->thread_capacity : 4;
  while (capacity < threads)
    capacity *= 2;
  ms_cache_counts *counts =
      realloc(level->counts, (size_t)capacity * MS_ACCESS_KIND_COUNT * sizeof *counts);
  if (!counts) return ms_error_set(MS_ERR_NOMEM, "out of memory for per-thread cache statistics");
  memset(counts + (size_t)level->thread_capacity * MS_ACCESS_KIND_COUNT, 0,
         (size_t)(capacity - level->thread_capacity) * MS_ACCESS_KIND_COUNT * sizeof *counts);
  level->counts = counts;
  level->thread_capacity = capacity;
  return MS_OK;
}

/* site_misses[0] counts accesses without a site: the index is site + 1, which wraps
 * MS_SITE_NONE to 0 without a branch. */
static int grow_sites(cache_level *level, uint64_t slots) {
  if (slots <= level->site_slots) return MS_OK;
  uint64_t capacity = level->site_slots ? level->site_slots : 64;
  while (capacity < slots)
    capacity *= 2;
  uint64_t *misses = realloc(level->site_misses, capacity * sizeof *misses);
  if (!misses) return ms_error_set(MS_ERR_NOMEM, "out of memory for per-site cache statistics");
  memset(misses + level->site_slots, 0, (capacity - level->site_slots) * sizeof *misses);
  level->site_misses = misses;
  level->site_slots = capacity;
  return MS_OK;
}

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
HOT int lookup_lru_ways(uint64_t *ways, uint32_t associativity, uint64_t key, uint64_t dirty,
                        int allocate, uint64_t *victim) {
  uint64_t passed = ways[0];
  if (same_line(passed, key)) {
    ways[0] = passed | dirty;
    return 1;
  }
  for (uint32_t i = 1; i < associativity; i++) {
    uint64_t way = ways[i];
    ways[i] = passed;
    if (same_line(way, key)) {
      ways[0] = way | dirty;
      return 1;
    }
    passed = way;
  }
  if (!allocate) { /* undo the shift: a miss that does not allocate leaves the set as it was */
    for (uint32_t i = 0; i + 1 < associativity; i++)
      ways[i] = ways[i + 1];
    ways[associativity - 1] = passed;
    return 0;
  }
  *victim = passed;
  ways[0] = key | dirty;
  return 0;
}

/* The usual associativities as constants, so that the compiler unrolls the search: the
 * loop control was 8% of the instructions of nehalem on the gather trace (callgrind). The
 * switch is taken the same way for every access of a level. */
HOT int lookup_lru(uint64_t *ways, uint32_t associativity, uint64_t key, uint64_t dirty,
                   int allocate, uint64_t *victim) {
  switch (associativity) {
  case 8: return lookup_lru_ways(ways, 8, key, dirty, allocate, victim);
  case 16: return lookup_lru_ways(ways, 16, key, dirty, allocate, victim);
  default: return lookup_lru_ways(ways, associativity, key, dirty, allocate, victim);
  }
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
  uint64_t set = set_index(level, address >> level->line_bits);
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
                     int has_children) {
  const unsigned line_bits = level->line_bits;
  const uint32_t line_size = level->line_size;
  const uint32_t associativity = level->associativity;
  const uint64_t set_mask = level->set_mask, set_count = level->set_count;
  uint64_t *const ways = level->ways;
  uint64_t *const site_misses = level->site_misses;
  ms_cache_counts *const counts = level->counts;
  const int prefetch = level->prefetch;
  /* Events one record can emit: a fetch and a writeback per line, of at most 255 bytes. */
  const size_t events_per_record = 2 * ((size_t)((max_size - 1) >> line_bits) + 2);
  uint64_t accesses[MS_ACCESS_KIND_COUNT] = {0}, misses[MS_ACCESS_KIND_COUNT] = {0};
  uint64_t writebacks = 0;
  uint32_t current_thread = !count ? 0 : records ? records[0].thread : input[0].thread;

  for (size_t chunk = 0; chunk < count; chunk += RESERVE_RECORDS) {
    size_t end = count - chunk < RESERVE_RECORDS ? count : chunk + RESERVE_RECORDS;
    if (has_children && !reserve_events(level, (end - chunk) * events_per_record)) {
      /* out of memory: the general path's checked emit records it */
      flush_kind_counts(&counts[(size_t)current_thread * MS_ACCESS_KIND_COUNT], accesses, misses);
      level->writebacks += writebacks;
      writebacks = 0;
      if (records)
        consume(level, records + chunk, NULL, end - chunk, MS_CACHE_LRU, MS_CACHE_MODEL_MEMSNAP);
      else
        consume(level, NULL, input + chunk, end - chunk, MS_CACHE_LRU, MS_CACHE_MODEL_MEMSNAP);
      continue;
    }
    cache_event *events = level->out.events + level->out.count, *const events_begin = events;
    for (size_t i = chunk; i < end; i++) {
      if (prefetch && i + PREFETCH_DISTANCE < count)
        prefetch_set(level, records ? records[i + PREFETCH_DISTANCE].address
                                    : input[i + PREFETCH_DISTANCE].address);
      const uint64_t address = records ? records[i].address : input[i].address;
      const uint32_t size = records ? (records[i].size ? records[i].size : 1u) : input[i].size;
      const uint32_t site = records ? records[i].site : input[i].site;
      const uint16_t thread = records ? records[i].thread : input[i].thread;
      const unsigned kind = records ? records[i].kind : input[i].kind;
      const unsigned op = records ? op_of_kind[kind] : input[i].op;
      if (!records && op == OP_WRITEBACK) { /* not an access: install or dirty the line */
        const uint64_t first = address >> line_bits, last = (address + size - 1) >> line_bits;
        uint64_t line = first;
        do { /* as memsnap_reference */
          uint64_t set = set_count_pow2 ? line & set_mask : line % set_count, victim = EMPTY_WAY;
          lookup_lru(ways + set * associativity, associativity, line << 1, 1, 1, &victim);
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
        int hit = lookup_lru(ways + set * associativity, associativity, line << 1, dirty, allocate,
                             &victim);
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
static void run_level(cache_level *level, const ms_access *records, const cache_event *events,
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
#define LRU_CASE(p, w, c)                                                                          \
  if (pow2 == p && write_back == w && children == c) {                                             \
    if (records)                                                                                   \
      consume_lru(level, records, NULL, count, 255, p, w, c);                                      \
    else                                                                                           \
      consume_lru(level, NULL, events, count, max_size, p, w, c);                                  \
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

static int run_children(cache_level *level) {
  if (level->out_of_memory)
    return ms_error_set(MS_ERR_NOMEM, "out of memory for cache simulation events");
  for (int i = 0; i < level->child_count; i++) {
    cache_level *child = level->children[i];
    run_level(child, NULL, level->out.events, level->out.count, level->line_size);
    int rc = run_children(child);
    if (rc < 0) return rc;
  }
  return MS_OK;
}

/* ---- levels ---- */

static unsigned log2_of(uint64_t power_of_two) {
  unsigned bits = 0;
  while ((1ull << bits) < power_of_two)
    bits++;
  return bits;
}

static cache_level *level_new(const ms_cache_level_config *config,
                              const ms_hierarchy_config *hierarchy, int depth, uint32_t clamp) {
  cache_level *level = calloc(1, sizeof *level);
  if (!level) return NULL;
  level->config = *config;
  level->policy = hierarchy->model == MS_CACHE_MODEL_CACHEGRIND ? MS_CACHE_LRU : config->policy;
  level->write_policy = hierarchy->write_policy;
  level->model = hierarchy->model;
  level->seed = hierarchy->seed;
  level->size_clamp = clamp;
  level->line_size = config->line_size;
  level->line_bits = log2_of(config->line_size);
  level->associativity = config->associativity;
  level->set_count = config->size / ((uint64_t)config->line_size * config->associativity);
  level->set_count_pow2 = (level->set_count & (level->set_count - 1)) == 0;
  level->set_mask = level->set_count - 1;
  level->random_state = hierarchy->seed + (uint64_t)depth * RANDOM_SEED_STEP;
  if (level->random_state == 0) level->random_state = RANDOM_SEED_STEP;
  size_t ways = (size_t)level->set_count * level->associativity;
  level->ways = malloc(ways * sizeof *level->ways);
  if (level->policy != MS_CACHE_LRU && level->policy != MS_CACHE_RANDOM)
    level->policy_state = calloc((size_t)level->set_count, sizeof *level->policy_state);
  if (!level->ways ||
      (level->policy != MS_CACHE_LRU && level->policy != MS_CACHE_RANDOM && !level->policy_state)) {
    free(level->ways);
    free(level->policy_state);
    free(level);
    return NULL;
  }
  memset(level->ways, 0xff, ways * sizeof *level->ways); /* EMPTY_WAY */
  level->prefetch = ways * sizeof *level->ways >= PREFETCH_MIN_BYTES;
  return level;
}

static void level_free(cache_level *level) {
  free(level->ways);
  free(level->policy_state);
  free(level->counts);
  free(level->site_misses);
  free(level->children);
  free(level->out.events);
  free(level);
}

/* Two levels at the same place in the forest simulate the same thing iff this holds. */
static int level_matches(const cache_level *level, const ms_cache_level_config *config,
                         const ms_hierarchy_config *hierarchy, uint32_t clamp) {
  ms_cache_policy policy =
      hierarchy->model == MS_CACHE_MODEL_CACHEGRIND ? MS_CACHE_LRU : config->policy;
  return level->config.size == config->size && level->config.line_size == config->line_size &&
         level->config.associativity == config->associativity && level->policy == policy &&
         level->write_policy == hierarchy->write_policy && level->model == hierarchy->model &&
         level->size_clamp == clamp &&
         (policy != MS_CACHE_RANDOM || level->seed == hierarchy->seed);
}

static int append_level(cache_level ***array, int *count, cache_level *level) {
  cache_level **grown = realloc(*array, (size_t)(*count + 1) * sizeof *grown);
  if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for a cache hierarchy");
  grown[(*count)++] = level;
  *array = grown;
  return MS_OK;
}

static uint32_t size_clamp_of(const ms_hierarchy_config *config) {
  if (config->model != MS_CACHE_MODEL_CACHEGRIND) return UINT32_MAX;
  uint32_t smallest = UINT32_MAX;
  for (int i = 0; i < config->level_count; i++)
    if (config->levels[i].line_size < smallest) smallest = config->levels[i].line_size;
  return smallest;
}

static int place_hierarchy(ms_hierarchy_set *set, ms_hierarchy *hierarchy) {
  const ms_hierarchy_config *config = &hierarchy->config;
  uint32_t clamp = size_clamp_of(config);
  cache_level *parent = NULL;
  for (int depth = 0; depth < config->level_count; depth++) {
    cache_level ***siblings = parent ? &parent->children : &set->roots;
    int *sibling_count = parent ? &parent->child_count : &set->root_count;
    cache_level *found = NULL;
    for (int i = 0; i < *sibling_count && !found; i++)
      if (level_matches((*siblings)[i], &config->levels[depth], config, clamp))
        found = (*siblings)[i];
    if (!found) {
      found = level_new(&config->levels[depth], config, depth, clamp);
      if (!found)
        return ms_error_set(MS_ERR_NOMEM, "out of memory for cache level %d of '%s'", depth + 1,
                            config->name);
      int rc = append_level(&set->levels, &set->level_count, found);
      if (rc < 0) {
        level_free(found);
        return rc;
      }
      rc = append_level(siblings, sibling_count, found);
      if (rc < 0) return rc;
    }
    hierarchy->levels[depth] = found;
    parent = found;
  }
  return MS_OK;
}

/* ---- sets and hierarchies ---- */

int ms_hierarchy_set_new(const ms_hierarchy_config *configs, int count, ms_hierarchy_set **out) {
  *out = NULL;
  if (count < 1) return ms_error_set(MS_ERR_ARG, "no cache hierarchy to simulate");
  for (int i = 0; i < count; i++) {
    int rc = ms_hierarchy_config_check(&configs[i]);
    if (rc < 0) return rc;
  }
  ms_hierarchy_set *set = calloc(1, sizeof *set);
  if (set) set->hierarchies = calloc((size_t)count, sizeof *set->hierarchies);
  if (!set || !set->hierarchies) {
    free(set);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for cache hierarchies");
  }
  set->count = count;
  for (int i = 0; i < count; i++) {
    set->hierarchies[i].config = configs[i];
    set->hierarchies[i].set = set;
    int rc = place_hierarchy(set, &set->hierarchies[i]);
    if (rc < 0) {
      ms_hierarchy_set_free(set);
      return rc;
    }
  }
  *out = set;
  return MS_OK;
}

void ms_hierarchy_set_free(ms_hierarchy_set *set) {
  if (!set) return;
  for (int i = 0; i < set->level_count; i++)
    level_free(set->levels[i]);
  free(set->levels);
  free(set->roots);
  free(set->hierarchies);
  free(set->pending);
  free(set);
}

/* One look at the batch for all levels: the largest thread and site (so that no level
 * checks its statistics arrays per access) and the validity of the kinds. */
static int prepare_batch(ms_hierarchy_set *set, const ms_batch *batch) {
  /* Statistics arrays grow to powers of two (grow_counts, grow_sites), so the OR of the
   * threads, or of the site slots (site + 1, which wraps MS_SITE_NONE to 0 as in
   * site_misses), gives the same capacity as their maximum, in one instruction per record
   * instead of a compare and a move. Only the kind needs its maximum; a bad kind is
   * searched again only when the maximum shows one. This pass was 127 M of the 1350 M
   * instructions of nehalem on the gather trace (callgrind) as a loop of three maxima. */
  uint32_t thread_bits = 0, site_slot_bits = 0;
  unsigned max_kind = 0;
  for (size_t i = 0; i < batch->count; i++) {
    const ms_access *access = &batch->accesses[i];
    max_kind = access->kind > max_kind ? access->kind : max_kind;
    thread_bits |= access->thread;
    site_slot_bits |= access->site + 1;
  }
  if (max_kind >= MS_ACCESS_KIND_COUNT)
    for (size_t i = 0; i < batch->count; i++)
      if (batch->accesses[i].kind >= MS_ACCESS_KIND_COUNT)
        return ms_error_set(MS_ERR_FORMAT, "access %zu of a batch has an unknown kind %u", i,
                            batch->accesses[i].kind);
  for (int i = 0; i < set->level_count; i++) {
    int rc = grow_counts(set->levels[i], thread_bits + 1);
    /* max site + 2 slots, rounded up as the maximum is, if any access has a site, else 1 */
    if (rc == MS_OK) rc = grow_sites(set->levels[i], (uint64_t)site_slot_bits + 1);
    if (rc < 0) return rc;
  }
  return MS_OK;
}

static int simulate(ms_hierarchy_set *set, const ms_access *accesses, size_t count) {
  for (int i = 0; i < set->root_count; i++) {
    run_level(set->roots[i], accesses, NULL, count, 255);
    int rc = run_children(set->roots[i]);
    if (rc < 0) return rc;
  }
  return MS_OK;
}

int ms_hierarchy_set_flush(ms_hierarchy_set *set) {
  if (set->pending_count == 0) return MS_OK;
  size_t count = set->pending_count;
  set->pending_count = 0;
  return simulate(set, set->pending, count);
}

int cache_set_flush_for_reading(const ms_hierarchy_set *set) {
  ms_hierarchy_set *writable = set->hierarchies[0].set; /* the same set */
  if (writable->pending_count) {
    int rc = ms_hierarchy_set_flush(writable);
    if (rc < 0) writable->flush_status = rc;
  }
  return writable->flush_status;
}

/* A set of several hierarchies copies batches into its own buffer of SET_BUFFER_RECORDS
 * and simulates that: each level then runs over 16 times more accesses at once, so its tag
 * array, evicted from the host's caches by the other levels of the set, is reloaded 16
 * times less often. The 46 evaluation hierarchies in one pass on the gather trace: 7.1-7.2 s
 * -> 5.5-6.2 s; 16K records gave no clear gain, 256K the same as 64K with 4 times the
 * memory. A single hierarchy keeps its tag arrays warm and simulates batches directly. */
static int buffer_batch(ms_hierarchy_set *set, const ms_batch *batch) {
  if (!set->pending) {
    set->pending = malloc(SET_BUFFER_RECORDS * sizeof *set->pending);
    if (!set->pending) return ms_error_set(MS_ERR_NOMEM, "out of memory for a cache batch buffer");
  }
  for (size_t done = 0; done < batch->count;) {
    size_t room = SET_BUFFER_RECORDS - set->pending_count, left = batch->count - done;
    size_t n = left < room ? left : room;
    memcpy(set->pending + set->pending_count, batch->accesses + done, n * sizeof *set->pending);
    set->pending_count += n;
    done += n;
    if (set->pending_count == SET_BUFFER_RECORDS) {
      int rc = ms_hierarchy_set_flush(set);
      if (rc < 0) return rc;
    }
  }
  return MS_OK;
}

int ms_hierarchy_set_access_batch(ms_hierarchy_set *set, const ms_batch *batch) {
  if (batch->count == 0) return MS_OK;
  int rc = prepare_batch(set, batch);
  if (rc < 0) return rc;
  if (set->count == 1) return simulate(set, batch->accesses, batch->count);
  return buffer_batch(set, batch);
}

int ms_hierarchy_set_count(const ms_hierarchy_set *set) { return set->count; }

const ms_hierarchy *ms_hierarchy_set_get(const ms_hierarchy_set *set, int index) {
  return index >= 0 && index < set->count ? &set->hierarchies[index] : NULL;
}

int ms_hierarchy_set_level_instances(const ms_hierarchy_set *set) { return set->level_count; }

int ms_hierarchy_new(const ms_hierarchy_config *config, ms_hierarchy **out) {
  ms_hierarchy_set *set;
  int rc = ms_hierarchy_set_new(config, 1, &set);
  *out = rc < 0 ? NULL : &set->hierarchies[0];
  return rc;
}

void ms_hierarchy_free(ms_hierarchy *hierarchy) {
  if (hierarchy && hierarchy->set->count == 1) ms_hierarchy_set_free(hierarchy->set);
}

int ms_hierarchy_access_batch(ms_hierarchy *hierarchy, const ms_batch *batch) {
  if (hierarchy->set->count != 1)
    return ms_error_set(MS_ERR_ARG, "hierarchy '%s' belongs to a set: feed the set",
                        hierarchy->config.name);
  return ms_hierarchy_set_access_batch(hierarchy->set, batch);
}

const ms_hierarchy_config *ms_hierarchy_config_of(const ms_hierarchy *hierarchy) {
  return &hierarchy->config;
}

void ms_hierarchy_level_stats(const ms_hierarchy *hierarchy, int level_index, ms_cache_stats *out) {
  memset(out, 0, sizeof *out);
  if (level_index < 0 || level_index >= hierarchy->config.level_count) return;
  cache_set_flush_for_reading(hierarchy->set);
  const cache_level *level = hierarchy->levels[level_index];
  for (uint32_t t = 0; t < level->thread_capacity; t++)
    for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++) {
      const ms_cache_counts *c = &level->counts[(size_t)t * MS_ACCESS_KIND_COUNT + k];
      out->kinds[k].accesses += c->accesses;
      out->kinds[k].misses += c->misses;
      if (c->accesses) out->thread_count = t + 1;
    }
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++) {
    out->total.accesses += out->kinds[k].accesses;
    out->total.misses += out->kinds[k].misses;
  }
  out->writebacks = level->writebacks;
  out->thread_kinds = level->counts;
  out->site_count = level->site_slots > 1 ? (uint32_t)(level->site_slots - 1) : 0;
  out->site_misses = level->site_slots > 1 ? level->site_misses + 1 : NULL;
  out->unsited_misses = level->site_slots ? level->site_misses[0] : 0;
}

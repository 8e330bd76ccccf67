/* Set-associative cache hierarchy simulator (see memsnap/cache.h for the contract).
 *
 * Model and assumptions:
 *  - A level is set_count x associativity ways. The set of a line (address >> line_bits) is
 *    line % set_count; set counts that are powers of two take a mask instead (same result).
 *    The tag is the whole line number, as in Cachegrind: cheaper than cutting it and exact.
 *  - A way holds (line << 1) | dirty, or EMPTY. Large LRU levels (tag arrays of 64 KB and
 *    more, 8 or 16 ways) hold (line >> set_bits) << 1 | dirty in 32 bits while every tag
 *    fits (cache_internal.h), the same contents in half the host memory: one pass of
 *    nehalem over the gather trace (12M accesses, random reads over 24 MB) in Cachegrind
 *    with the host's L1/L2 (32 KB and 512 KB, 8-way): 2.51 -> 2.30 G instructions and 9.8
 *    -> 5.8 M L2 misses (the second host line of each 16-way L3 set is gone); CPU time,
 *    6 interleaved best-of-5 pairs on the loaded shared host: 0.195-0.306 s -> 0.188-0.244 s.
 *    Lines are never invalidated (no inclusion,
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
 *  - The trees of different roots share nothing, so a set's roots are simulated on one
 *    thread per CPU (lib/core/jobs.h; ms_hierarchy_set_threads), each thread taking the
 *    next root not yet taken; the results do not depend on the number of threads.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../core/cpu.h"
#include "../core/grow.h"
#include "../core/jobs.h"
#include "cache_internal.h"
#include "memsnap/error.h"

#define RANDOM_SEED_STEP 0x9E3779B97F4A7C15ull
/* Levels whose tag array is at least PREFETCH_MIN_BYTES (nehalem's L3: 1 MB) prefetch the
 * set of an access ahead of it (level_run.h, PREFETCH_DISTANCE). */
#define PREFETCH_MIN_BYTES ((size_t)64 * 1024)
/* Accesses a set of several hierarchies buffers before simulating them, see buffer_batch. */
#define SET_BUFFER_RECORDS 65536

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
  uint64_t *misses =
      ms_grow_zeroed(level->site_misses, &level->site_slots, sizeof *misses, slots - 1, 64);
  if (!misses) return ms_error_set(MS_ERR_NOMEM, "out of memory for per-site cache statistics");
  level->site_misses = misses;
  return MS_OK;
}
static int run_children(const ms_hierarchy_set *set, cache_level *level) {
  if (level->out_of_memory)
    return ms_error_set(MS_ERR_NOMEM, "out of memory for cache simulation events");
  for (int i = 0; i < level->child_count; i++) {
    cache_level *child = level->children[i];
    set->run_level(child, NULL, level->out.events, level->out.count, level->line_size);
    int rc = run_children(set, child);
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

/* Tag arrays of HUGE_TAG_BYTES and more start on a 2 MB boundary and are asked for as huge
 * pages: nehalem's L3 (1 MB of tags) is then one TLB entry instead of 256. */
#define HUGE_TAG_BYTES ((size_t)512 * 1024)
static uint64_t *tag_array_alloc(size_t bytes) {
  if (bytes < HUGE_TAG_BYTES) return aligned_alloc(64, bytes);
  void *p = NULL;
  size_t rounded = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  if (posix_memalign(&p, 2u << 20, rounded) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
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
  if (level->set_count == 0) { /* ms_hierarchy_config_check refused size < line x ways */
    free(level);
    return NULL;
  }
  level->set_count_pow2 = (level->set_count & (level->set_count - 1)) == 0;
  level->set_mask = level->set_count - 1;
  level->random_state = hierarchy->seed + (uint64_t)depth * RANDOM_SEED_STEP;
  if (level->random_state == 0) level->random_state = RANDOM_SEED_STEP;
  size_t ways = (size_t)level->set_count * level->associativity;
  /* Sets start on a host cache line (64 bytes): an 8-way set is then one line, a 16-way set
   * two, where malloc's 16-byte alignment made most of them straddle one line more. */
  level->set_bits = log2_of(level->set_count);
  const char *compact_env = getenv("MEMSNAP_SIM_COMPACT");
  int compact = level->policy == MS_CACHE_LRU && level->model == MS_CACHE_MODEL_MEMSNAP &&
                level->write_policy == MS_CACHE_WRITE_BACK && level->set_count_pow2 &&
                (level->associativity == 8 || level->associativity == 16) &&
                ways * sizeof *level->ways >= PREFETCH_MIN_BYTES &&
                !(compact_env && strcmp(compact_env, "0") == 0);
  if (compact) {
    size_t way_bytes = (ways * sizeof *level->ways32 + 63) & ~(size_t)63;
    level->ways32 = (uint32_t *)tag_array_alloc(way_bytes);
    if (level->ways32) memset(level->ways32, 0xff, ways * sizeof *level->ways32); /* EMPTY */
  } else {
    size_t way_bytes = (ways * sizeof *level->ways + 63) & ~(size_t)63;
    level->ways = tag_array_alloc(way_bytes);
    if (level->ways) memset(level->ways, 0xff, ways * sizeof *level->ways); /* EMPTY_WAY */
  }
  if (level->policy != MS_CACHE_LRU && level->policy != MS_CACHE_RANDOM)
    level->policy_state = calloc((size_t)level->set_count, sizeof *level->policy_state);
  if ((!level->ways && !level->ways32) ||
      (level->policy != MS_CACHE_LRU && level->policy != MS_CACHE_RANDOM && !level->policy_state)) {
    free(level->ways);
    free(level->ways32);
    free(level->policy_state);
    free(level);
    return NULL;
  }
  level->prefetch = ways * sizeof *level->ways >= PREFETCH_MIN_BYTES;
  return level;
}

int cache_level_expand_ways(cache_level *level) {
  if (!level->ways32) return 1;
  size_t ways = (size_t)level->set_count * level->associativity;
  uint64_t *wide = tag_array_alloc((ways * sizeof *wide + 63) & ~(size_t)63);
  if (!wide) return 0;
  for (size_t i = 0; i < ways; i++) {
    uint32_t way = level->ways32[i];
    uint64_t set = i / level->associativity;
    wide[i] = way == EMPTY_WAY32
                  ? EMPTY_WAY
                  : (((((uint64_t)(way >> 1)) << level->set_bits) | set) << 1) | (way & 1);
  }
  free(level->ways32);
  level->ways32 = NULL;
  level->ways = wide;
  return 1;
}

int cache_level_inputs_fit_compact(const cache_level *level, const ms_access *records,
                                   const cache_event *events, size_t count, uint32_t max_size) {
  uint64_t any = 0; /* >= every address of the input */
  if (records)
    for (size_t i = 0; i < count; i++)
      any |= records[i].address;
  else
    for (size_t i = 0; i < count; i++)
      any |= events[i].address;
  if (any >= (1ull << 62)) return 0;
  uint64_t last_tag = (any + max_size) >> (level->line_bits + level->set_bits);
  return last_tag < (EMPTY_WAY32 >> 1);
}

static void level_free(cache_level *level) {
  free(level->ways);
  free(level->ways32);
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
  cache_level **grown = realloc(*array, (size_t)(*count + 1) * sizeof(cache_level *));
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

/* The AVX2 build of the level loops where the host has AVX2 (level_run.h says what differs;
 * MEMSNAP_SIMD=0 in the environment keeps the baseline build, for comparison and tests).
 * One pass of nehalem over the gather trace (12M accesses) in Cachegrind, whole run with
 * the trace's loading: 3.60 -> 3.31 G instructions and, in its branch model, 13.9 -> 3.5 M
 * mispredicted branches. */
cache_run_level_fn cache_pick_run_level(void) {
#ifdef MEMSNAP_HAVE_LEVEL_RUN_AVX2
  const char *simd = getenv("MEMSNAP_SIMD");
  if (!(simd && strcmp(simd, "0") == 0) && (cpu_features() & CPU_AVX2)) return cache_run_level_avx2;
#endif
  return cache_run_level;
}

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
  set->run_level = cache_pick_run_level();
  for (int i = 0; i < count; i++) {
    set->hierarchies[i].config = configs[i];
    set->hierarchies[i].set = set;
    int rc = place_hierarchy(set, &set->hierarchies[i]);
    if (rc < 0) {
      ms_hierarchy_set_free(set);
      return rc;
    }
  }
  /* several hierarchies: their roots on one thread per CPU (a single one keeps its level
   * warm in one thread, batch by batch) */
  if (count > 1) set->pool = jobs_new(jobs_threads(0, set->root_count));
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
  jobs_free(set->pool);
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

typedef struct simulation_round {
  ms_hierarchy_set *set;
  const ms_access *accesses;
  size_t count;
} simulation_round;

/* The tree of root i over the round's accesses (a job: any thread). */
static int simulate_root(void *context, int i) {
  const simulation_round *round = context;
  ms_hierarchy_set *set = round->set;
  set->run_level(set->roots[i], round->accesses, NULL, round->count, 255);
  return run_children(set, set->roots[i]);
}

static int simulate(ms_hierarchy_set *set, const ms_access *accesses, size_t count) {
  simulation_round round = {set, accesses, count};
  return jobs_run(set->pool, set->root_count, simulate_root, &round);
}

int ms_hierarchy_set_threads(ms_hierarchy_set *set, int threads) {
  if (threads < 0) return ms_error_set(MS_ERR_ARG, "cache simulation: %d threads", threads);
  int rc = ms_hierarchy_set_flush(set);
  if (rc < 0) return rc;
  jobs_free(set->pool);
  set->pool = set->count > 1 ? jobs_new(jobs_threads(threads, set->root_count)) : NULL;
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

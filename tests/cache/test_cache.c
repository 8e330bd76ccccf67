/* Cache simulator: hand-worked sequences per policy, write policy and model, catalog and
 * spec parsing, an independent LRU oracle, and one-pass multi-hierarchy equivalence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/cache.h"
#include "memsnap/error.h"

#define LOAD(at)                                                                                   \
  { .address = (at), .site = 0, .thread = 0, .size = 4, .kind = MS_LOAD }
#define STORE(at)                                                                                  \
  { .address = (at), .site = 0, .thread = 0, .size = 4, .kind = MS_STORE }
#define REF(at, bytes, access_kind)                                                                \
  { .address = (at), .site = 0, .thread = 0, .size = (bytes), .kind = (access_kind) }

static ms_hierarchy *make(const char *spec, ms_cache_policy policy,
                          ms_cache_write_policy write_policy, ms_cache_model model, uint64_t seed) {
  ms_hierarchy_config config;
  assert_int_equal(ms_hierarchy_parse(spec, &config), MS_OK);
  for (int i = 0; i < config.level_count; i++)
    config.levels[i].policy = policy;
  config.write_policy = write_policy;
  config.model = model;
  config.seed = seed;
  ms_hierarchy *hierarchy;
  assert_int_equal(ms_hierarchy_new(&config, &hierarchy), MS_OK);
  return hierarchy;
}

static void run(ms_hierarchy *hierarchy, ms_access *accesses, size_t count) {
  ms_batch batch = {.accesses = accesses, .count = count, .capacity = count};
  assert_int_equal(ms_hierarchy_access_batch(hierarchy, &batch), MS_OK);
}

static ms_cache_stats stats_of(const ms_hierarchy *hierarchy, int level) {
  ms_cache_stats stats;
  ms_hierarchy_level_stats(hierarchy, level, &stats);
  return stats;
}

static void expect(const ms_hierarchy *hierarchy, int level, uint64_t accesses, uint64_t misses) {
  ms_cache_stats stats = stats_of(hierarchy, level);
  assert_int_equal(stats.total.accesses, accesses);
  assert_int_equal(stats.total.misses, misses);
}

/* 96/16/2: 3 sets (not a power of two) of 2 ways, 16-byte lines; line n goes to set n % 3.
 * Lines 0, 3, 6 share set 0; line 1 is in set 1. Sequence of lines: 0 3 0 6 0 3 1 1. */
static ms_access three_set_sequence[] = {LOAD(0 * 16), LOAD(3 * 16), LOAD(0 * 16), LOAD(6 * 16),
                                         LOAD(0 * 16), LOAD(3 * 16), LOAD(1 * 16), LOAD(1 * 16)};

static void test_lru_three_sets(void **state) {
  (void)state;
  /* set 0 MRU first: 0 miss [0]; 3 miss [3 0]; 0 hit [0 3]; 6 miss, evicts 3 [6 0];
   * 0 hit [0 6]; 3 miss, evicts 6 [3 0]. Set 1: 1 miss; 1 hit. 8 accesses, 5 misses. */
  ms_hierarchy *h = make("96/16/2", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, three_set_sequence, 8);
  expect(h, 0, 8, 5);
  ms_hierarchy_free(h);
}

static void test_fifo_three_sets(void **state) {
  (void)state;
  /* set 0 ways [w0 w1], FIFO pointer p: 0 miss -> w0; 3 miss -> w1 (empty ways first, p=0);
   * 0 hit (FIFO ignores hits); 6 miss evicts w0 = line 0 [6 3] p=1; 0 miss evicts w1 =
   * line 3 [6 0] p=0; 3 miss evicts w0 = line 6 [3 0] p=1. Set 1: 1 miss, 1 hit.
   * 8 accesses, 6 misses (LRU had 5: FIFO threw out the line just reused). */
  ms_hierarchy *h = make("96/16/2", MS_CACHE_FIFO, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, three_set_sequence, 8);
  expect(h, 0, 8, 6);
  ms_hierarchy_free(h);
}

static void test_random_seeded(void **state) {
  (void)state;
  /* One set of 2 ways (32/16/2), seed 1, level 0: the generator state starts at 1 and each
   * eviction of a full set draws x = xorshift64(x) (x ^= x << 13; x ^= x >> 7;
   * x ^= x << 17), victim way = x % 2. From 1 the draws are 1082269761,
   * 1152992998833853505, 11177516664432764457: all odd, so way 1 every time.
   * Lines 0 1 2 0 1 2 0: 0 miss w0; 1 miss w1; 2 miss evicts w1 (line 1) [0 2]; 0 hit;
   * 1 miss evicts w1 (line 2) [0 1]; 2 miss evicts w1 (line 1) [0 2]; 0 hit.
   * 7 accesses, 5 misses (LRU and FIFO miss all 7 on this cyclic pattern). */
  ms_access sequence[] = {LOAD(0), LOAD(16), LOAD(32), LOAD(0), LOAD(16), LOAD(32), LOAD(0)};
  ms_hierarchy *h =
      make("32/16/2", MS_CACHE_RANDOM, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, sequence, 7);
  expect(h, 0, 7, 5);
  ms_hierarchy_free(h);
  h = make("32/16/2", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, sequence, 7);
  expect(h, 0, 7, 7);
  ms_hierarchy_free(h);
  /* Determinism: the same seed gives the same result twice. */
  ms_hierarchy *a =
      make("32/16/2", MS_CACHE_RANDOM, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 2);
  ms_hierarchy *b =
      make("32/16/2", MS_CACHE_RANDOM, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 2);
  run(a, sequence, 7);
  run(b, sequence, 7);
  assert_int_equal(stats_of(a, 0).total.misses, stats_of(b, 0).total.misses);
  ms_hierarchy_free(a);
  ms_hierarchy_free(b);
}

static void test_plru_four_ways(void **state) {
  (void)state;
  /* One set of 4 ways (64/16/4). Tree bits b1 (root), b2 (ways 0-1), b3 (ways 2-3); 0 sends
   * the victim search left. An access flips its path to point away from it.
   * Lines 0 1 2 3 fill ways 0-3: after 3 the bits are b1=0 b2=0 b3=0.
   * 0 hit (way 0): b2=1 b1=1. 4 miss: victim b1=1 -> right, b3=0 -> way 2 (line 2), while
   * LRU would evict line 1; 4 in way 2: b3=1 b1=0. 1 hit (way 1) under PLRU.
   * PLRU: 7 accesses, 5 misses. LRU: 1 was evicted by 4, so 6 misses. */
  ms_access sequence[] = {LOAD(0), LOAD(16), LOAD(32), LOAD(48), LOAD(0), LOAD(64), LOAD(16)};
  ms_hierarchy *h = make("64/16/4", MS_CACHE_PLRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, sequence, 7);
  expect(h, 0, 7, 5);
  ms_hierarchy_free(h);
  h = make("64/16/4", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, sequence, 7);
  expect(h, 0, 7, 6);
  ms_hierarchy_free(h);
}

static void test_plru_two_ways_is_lru(void **state) {
  (void)state;
  /* With 2 ways the single PLRU bit is exact LRU: same 5 misses as test_lru_three_sets. */
  ms_hierarchy *h = make("96/16/2", MS_CACHE_PLRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, three_set_sequence, 8);
  expect(h, 0, 8, 5);
  ms_hierarchy_free(h);
}

static void test_write_back(void **state) {
  (void)state;
  /* L1 one set of 2 ways (32/16/2), L2 one set of 8 ways (128/16/8), LRU, write-back.
   * L1, MRU first, * = dirty:
   *   store 0: miss [0*]            L2 fetch 0 (miss)
   *   load 1:  miss [1 0*]          L2 fetch 1 (miss)
   *   load 2:  miss, evicts 0* [2 1]: writeback 1; L2 fetch 2 (miss), then writeback of 0
   *            (L2 holds 0: marked dirty, not an access)
   *   store 1: hit [1* 2]
   *   load 3:  miss, evicts 2 (clean) [3 1*]; L2 fetch 3 (miss)
   *   load 4:  miss, evicts 1* [4 3]: writeback 2; L2 fetch 4 (miss), writeback of 1
   *   load 0:  miss, evicts 3 [0 4]; L2 fetch 0: hit
   * L1: 7 accesses, 6 misses, 2 writebacks. L2: accesses = L1 misses = 6, 5 misses (0 hit),
   * no writebacks (8 ways hold everything). */
  ms_access sequence[] = {STORE(0), LOAD(16), LOAD(32), STORE(16), LOAD(48), LOAD(64), LOAD(0)};
  ms_hierarchy *h =
      make("32/16/2,128/16/8", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, sequence, 7);
  expect(h, 0, 7, 6);
  assert_int_equal(stats_of(h, 0).writebacks, 2);
  expect(h, 1, 6, 5);
  assert_int_equal(stats_of(h, 1).writebacks, 0);
  /* kinds: L1 stores: 2 accesses, 1 miss; the L2 access caused by the store miss is
   * counted as a store there too. */
  assert_int_equal(stats_of(h, 0).kinds[MS_STORE].accesses, 2);
  assert_int_equal(stats_of(h, 0).kinds[MS_STORE].misses, 1);
  assert_int_equal(stats_of(h, 1).kinds[MS_STORE].accesses, 1);
  ms_hierarchy_free(h);

  /* A dirty line written back into a level that no longer holds it is installed there
   * dirty and later written back further. L1 = L2 = one set of 1 way (16/16/1), plus L3.
   *   store 0: L1 miss [0*]; L2 fetch 0 miss [0]; L3 fetch 0 miss
   *   load 1:  L1 miss evicts 0* (wb 1); L2 fetch 1 miss evicts 0 (clean) [1]; L3 fetch 1;
   *            then writeback of 0 reaches L2: installs 0* evicting 1 (clean) [0*]
   *   load 2:  L1 miss evicts 1 (clean) [2]; L2 fetch 2 miss evicts 0* (wb 1) [2]; L3
   *            fetch 2; writeback 0 reaches L3 (holds 0: dirtied).
   * L1: 3/3, 1 writeback. L2: 3/3, 1 writeback. L3 (64/16/4): 3 accesses, 3 misses. */
  ms_access chain[] = {STORE(0), LOAD(16), LOAD(32)};
  h = make("16/16/1,16/16/1,64/16/4", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, chain, 3);
  expect(h, 0, 3, 3);
  expect(h, 1, 3, 3);
  expect(h, 2, 3, 3);
  assert_int_equal(stats_of(h, 0).writebacks, 1);
  assert_int_equal(stats_of(h, 1).writebacks, 1);
  assert_int_equal(stats_of(h, 2).writebacks, 0);
  ms_hierarchy_free(h);
}

static void test_write_through(void **state) {
  (void)state;
  /* Write-through no-allocate. L1 32/16/2 (1 set, 2 ways), L2 64/16/4 (1 set, 4 ways).
   *   store 0: L1 miss, not allocated; forwarded: L2 store miss, not allocated
   *   load 0:  L1 miss, allocated; L2 load miss, allocated
   *   store 0: L1 hit; written through: L2 store hit
   *   store 1: L1 miss, not allocated; L2 store miss, not allocated
   *   load 1:  L1 miss, allocated; L2 load miss, allocated
   *   modify 1: L1 hit (read), write through: L2 hit
   * L1: 6 accesses, 4 misses. L2: 6 accesses (every store/modify plus the load misses),
   * 4 misses. No writebacks anywhere. */
  ms_access sequence[] = {STORE(0), LOAD(0), STORE(0), STORE(16), LOAD(16), REF(16, 4, MS_MODIFY)};
  ms_hierarchy *h =
      make("32/16/2,64/16/4", MS_CACHE_LRU, MS_CACHE_WRITE_THROUGH, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, sequence, 6);
  expect(h, 0, 6, 4);
  expect(h, 1, 6, 4);
  assert_int_equal(stats_of(h, 0).writebacks, 0);
  assert_int_equal(stats_of(h, 0).kinds[MS_STORE].misses, 2);
  assert_int_equal(stats_of(h, 0).kinds[MS_MODIFY].accesses, 1);
  assert_int_equal(stats_of(h, 0).kinds[MS_MODIFY].misses, 0);
  assert_int_equal(stats_of(h, 1).kinds[MS_MODIFY].accesses, 1);
  ms_hierarchy_free(h);
}

static void test_straddle_memsnap(void **state) {
  (void)state;
  /* 16-byte lines, L1 64/16/4 (1 set), L2 256/16/16.
   *   load 8+16 bytes: lines 0 and 1, two L1 accesses, both miss (L2: 2 accesses, 2 misses)
   *   load 12+4: line 0, hit
   *   load 24+16: lines 1 (hit) and 2 (miss; L2 1 access, 1 miss)
   * L1: 5 accesses, 3 misses. L2: 3 accesses, 3 misses. */
  ms_access sequence[] = {REF(8, 16, MS_LOAD), REF(12, 4, MS_LOAD), REF(24, 16, MS_LOAD)};
  ms_hierarchy *h =
      make("64/16/4,256/16/16", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, sequence, 3);
  expect(h, 0, 5, 3);
  expect(h, 1, 3, 3);
  ms_hierarchy_free(h);
}

static void test_straddle_cachegrind(void **state) {
  (void)state;
  /* Same sequence, Cachegrind's accounting (cg_sim.c cachesim_ref_is_miss):
   *   load 8+16: one access; lines 0 and 1 both miss -> one miss; L2 looks up the whole
   *              reference: one access, a miss
   *   load 12+4: line 0 hit
   *   load 24+16: one access; line 1 hits, line 2 misses -> a miss; L2: the whole reference
   *              again, lines 1 (present in L2) and 2 (absent): one access, one miss
   * L1: 3 accesses, 2 misses. L2: 2 accesses, 2 misses. */
  ms_access sequence[] = {REF(8, 16, MS_LOAD), REF(12, 4, MS_LOAD), REF(24, 16, MS_LOAD)};
  ms_hierarchy *h =
      make("64/16/4,256/16/16", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_CACHEGRIND, 1);
  run(h, sequence, 3);
  expect(h, 0, 3, 2);
  expect(h, 1, 2, 2);
  ms_hierarchy_free(h);

  /* Sizes are clamped to the smallest line (16 here): a 32-byte load at 0 touches only
   * line 0, so a later load of line 1 misses. A modify is one access (Cachegrind counts it
   * in Dr); stores allocate (write-allocate) and nothing is ever written back. */
  ms_access clamped[] = {REF(0, 32, MS_LOAD),  REF(16, 4, MS_LOAD),  REF(32, 8, MS_MODIFY),
                         REF(32, 8, MS_STORE), REF(48, 4, MS_STORE), REF(48, 4, MS_LOAD)};
  h = make("64/16/4,256/16/16", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_CACHEGRIND, 1);
  run(h, clamped, 6);
  /* line 0 miss; line 1 miss; modify line 2 miss; store line 2 hit; store line 3 miss;
   * load line 3 hit: 6 accesses, 4 misses */
  expect(h, 0, 6, 4);
  ms_cache_stats l1 = stats_of(h, 0);
  assert_int_equal(l1.kinds[MS_MODIFY].accesses, 1);
  assert_int_equal(l1.kinds[MS_STORE].accesses, 2);
  assert_int_equal(l1.writebacks, 0);
  ms_hierarchy_free(h);
}

static void test_multi_level_sees_misses(void **state) {
  (void)state;
  /* In write-back mode every L(i+1) access is an L(i) miss, whatever the stream. */
  ms_access *accesses = malloc(20000 * sizeof *accesses);
  uint64_t x = 12345;
  for (int i = 0; i < 20000; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    accesses[i] = (ms_access){.address = (x >> 20) % (1 << 20),
                              .size = 8,
                              .kind = (uint8_t)((x >> 8) % 3),
                              .site = 0,
                              .thread = 0};
  }
  ms_hierarchy *h = make("nehalem", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, accesses, 20000);
  assert_int_equal(stats_of(h, 1).total.accesses, stats_of(h, 0).total.misses);
  assert_int_equal(stats_of(h, 2).total.accesses, stats_of(h, 1).total.misses);
  assert_true(stats_of(h, 1).total.misses < stats_of(h, 1).total.accesses);
  ms_hierarchy_free(h);
  free(accesses);
}

static void test_catalog(void **state) {
  (void)state;
  assert_int_equal(ms_hierarchy_catalog_count(), 53);
  for (int i = 0; i < ms_hierarchy_catalog_count(); i++) {
    const ms_hierarchy_entry *entry = ms_hierarchy_catalog_get(i);
    ms_hierarchy_config config;
    assert_int_equal(ms_hierarchy_parse(entry->name, &config), MS_OK);
    assert_int_equal(ms_hierarchy_parse(entry->spec, &config), MS_OK);
    if (i < MS_HIERARCHY_CATALOG_EVALUATION) {
      char name[24];
      snprintf(name, sizeof name, "hpcmo-%02d", i + 1);
      assert_string_equal(entry->name, name);
    }
  }
  assert_null(ms_hierarchy_catalog_get(53));
  const char *named[] = {"pentium-d820",   "core-duo-2500",  "power4-datastar",
                         "power4-option1", "power4-option2", "xeon-1700-skeleton",
                         "nehalem"};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    assert_non_null(ms_hierarchy_catalog_find(named[i]));
  ms_hierarchy_config config;
  assert_int_equal(ms_hierarchy_parse("hpcmo-13", &config), MS_OK);
  assert_int_equal(config.level_count, 2);
  assert_int_equal(config.levels[1].size, 366592);
  ms_hierarchy *h;
  assert_int_equal(ms_hierarchy_new(&config, &h), MS_OK);
  ms_hierarchy_free(h);
  assert_int_equal(ms_hierarchy_parse("nehalem", &config), MS_OK);
  assert_int_equal(config.level_count, 3);
  assert_int_equal(config.levels[2].associativity, 16);
}

static void expect_error(const char *spec, const char *message) {
  ms_hierarchy_config config;
  assert_int_equal(ms_hierarchy_parse(spec, &config), MS_ERR_ARG);
  if (!strstr(ms_error_message(), message)) fail_msg("'%s' gave '%s'", spec, ms_error_message());
}

static void test_spec_parsing(void **state) {
  (void)state;
  ms_hierarchy_config config;
  assert_int_equal(ms_hierarchy_parse("32k/64/8,1M/64/16", &config), MS_OK);
  assert_int_equal(config.levels[0].size, 32768);
  assert_int_equal(config.levels[1].size, 1048576);
  assert_int_equal(config.levels[1].associativity, 16);
  char buf[128];
  assert_string_equal(ms_hierarchy_config_describe(&config, buf, sizeof buf),
                      "32768/64/8,1048576/64/16");
  expect_error("foo", "unknown hierarchy 'foo' (memsnap hierarchies lists them)");
  expect_error("32768/48/8", "bad level '32768/48/8': line size must be a power of two");
  expect_error("32k/64", "bad level '32k/64'");
  expect_error("32k/64/8,", "bad level ''");
  expect_error("32x/64/8", "bad level '32x/64/8': size");
  expect_error("16/32/1", "bad level '16/32/1': size must be at least line size x associativity");
  /* sizes that are not a multiple of line x ways (hpcmo-10, hpcmo-16 as printed) keep
   * the whole sets: 7340032 / (128 x 12) = 4778.67 -> 4778 sets */
  assert_int_equal(ms_hierarchy_parse("100/16/2", &config), MS_OK);
  expect_error("32k/64/0", "associativity");
  expect_error("1/1/1,1/1/1,1/1/1,1/1/1,1/1/1,1/1/1,1/1/1,1/1/1,1/1/1", "more than 8 levels");
  /* model-dependent checks */
  assert_int_equal(ms_hierarchy_parse("hpcmo-13", &config), MS_OK);
  config.model = MS_CACHE_MODEL_CACHEGRIND;
  assert_int_equal(ms_hierarchy_config_check(&config), MS_ERR_ARG);
  assert_non_null(strstr(ms_error_message(), "power-of-two set count"));
  assert_int_equal(ms_hierarchy_parse("96/16/3", &config), MS_OK);
  config.levels[0].policy = MS_CACHE_PLRU;
  assert_int_equal(ms_hierarchy_config_check(&config), MS_ERR_ARG);
  assert_int_equal(ms_cache_policy_parse("plru"), MS_CACHE_PLRU);
  assert_int_equal(ms_cache_policy_parse("mru"), -1);
  assert_int_equal(ms_cache_model_parse("cachegrind"), MS_CACHE_MODEL_CACHEGRIND);
}

/* ---- the oracle: a deliberately naive LRU write-back cache ---- */

typedef struct oracle_line {
  uint64_t line;
  uint64_t last_use;
  int dirty;
} oracle_line;

typedef struct oracle {
  uint64_t sets, ways, line_size;
  oracle_line *lines; /* sets * ways; last_use 0 = empty */
  uint64_t *filled;
  uint64_t clock, accesses, misses, writebacks;
} oracle;

static void oracle_init(oracle *o, uint64_t size, uint64_t line_size, uint64_t ways) {
  o->sets = size / line_size / ways;
  o->ways = ways;
  o->line_size = line_size;
  o->lines = calloc(o->sets * ways, sizeof *o->lines);
  o->filled = calloc(o->sets, sizeof *o->filled);
  o->clock = o->accesses = o->misses = o->writebacks = 0;
}

/* Returns 1 on a miss. */
static int oracle_access(oracle *o, uint64_t line, int write) {
  oracle_line *set = o->lines + (line % o->sets) * o->ways;
  o->accesses++;
  o->clock++;
  for (uint64_t i = 0; i < o->filled[line % o->sets]; i++)
    if (set[i].line == line) {
      set[i].last_use = o->clock;
      set[i].dirty |= write;
      return 0;
    }
  o->misses++;
  uint64_t *filled = &o->filled[line % o->sets];
  uint64_t victim = 0;
  if (*filled < o->ways) {
    victim = (*filled)++;
  } else {
    for (uint64_t i = 1; i < o->ways; i++)
      if (set[i].last_use < set[victim].last_use) victim = i;
    if (set[victim].dirty) o->writebacks++;
  }
  set[victim] = (oracle_line){line, o->clock, write};
  return 1;
}

static ms_access *random_stream(size_t count, uint64_t seed) {
  ms_access *accesses = malloc(count * sizeof *accesses);
  uint64_t x = seed, stride_address = 0;
  for (size_t i = 0; i < count; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t address;
    switch ((x >> 60) % 4) {
    case 0: address = (x >> 16) % (1u << 14); break; /* a hot 16 KB */
    case 1: address = (x >> 16) % (1u << 22); break; /* a 4 MB region */
    default: address = stride_address += 72; break;  /* a strided walk */
    }
    accesses[i] = (ms_access){.address = address & ~7ull,
                              .size = 8,
                              .kind = (uint8_t)((x >> 40) % 4 == 0 ? MS_STORE : MS_LOAD),
                              .site = (uint32_t)((x >> 30) % 7),
                              .thread = 0};
  }
  return accesses;
}

static void test_lru_oracle(void **state) {
  (void)state;
  /* 1048576/64/16 and 2097152/64/8 have tag arrays of 64 KB and more: compact tags */
  const char *geometries[] = {"96/16/2",       "1280/64/4",    "448/64/1",    "1024/64/16",
                              "32768/64/8",    "366592/128/8", "243712/64/8", "32768/32/64",
                              "1048576/64/16", "2097152/64/8"};
  size_t count = 200000;
  ms_access *accesses = random_stream(count, 99);
  for (size_t g = 0; g < sizeof geometries / sizeof geometries[0]; g++) {
    ms_hierarchy *h =
        make(geometries[g], MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
    const ms_cache_level_config *level = &ms_hierarchy_config_of(h)->levels[0];
    oracle o;
    oracle_init(&o, level->size, level->line_size, level->associativity);
    for (size_t i = 0; i < count; i += 4096) {
      size_t n = count - i < 4096 ? count - i : 4096;
      run(h, accesses + i, n);
    }
    for (size_t i = 0; i < count; i++)
      oracle_access(&o, accesses[i].address / o.line_size, accesses[i].kind == MS_STORE);
    ms_cache_stats stats = stats_of(h, 0);
    assert_int_equal(stats.total.accesses, o.accesses);
    if (stats.total.misses != o.misses || stats.writebacks != o.writebacks)
      fail_msg("%s: misses %llu vs oracle %llu, writebacks %llu vs %llu", geometries[g],
               (unsigned long long)stats.total.misses, (unsigned long long)o.misses,
               (unsigned long long)stats.writebacks, (unsigned long long)o.writebacks);
    free(o.lines);
    free(o.filled);
    ms_hierarchy_free(h);
  }

  /* Two levels, loads only (no writebacks to model): L2 is the oracle fed L1's misses. */
  for (size_t i = 0; i < count; i++)
    accesses[i].kind = MS_LOAD;
  ms_hierarchy *h =
      make("1280/64/4,24576/64/6", MS_CACHE_LRU, MS_CACHE_WRITE_BACK, MS_CACHE_MODEL_MEMSNAP, 1);
  run(h, accesses, count);
  oracle l1, l2;
  oracle_init(&l1, 1280, 64, 4);
  oracle_init(&l2, 24576, 64, 6); /* 64 sets */
  for (size_t i = 0; i < count; i++)
    if (oracle_access(&l1, accesses[i].address / 64, 0))
      oracle_access(&l2, accesses[i].address / 64, 0);
  expect(h, 0, l1.accesses, l1.misses);
  expect(h, 1, l2.accesses, l2.misses);
  free(l1.lines);
  free(l1.filled);
  free(l2.lines);
  free(l2.filled);
  ms_hierarchy_free(h);
  free(accesses);
}

/* A parent whose lines are 4096 times the child's: each L1 miss is 4096 L2 accesses, more
 * than the per-chunk packed counters of lib/cache/level_run.h hold for a chunk of 256 inputs,
 * so the counts must be unpacked per input. The oracle expands each miss line by line. */
static void test_large_parent_lines(void **state) {
  (void)state;
  size_t count = 3000;
  ms_access *accesses = random_stream(count, 5);
  for (size_t i = 0; i < count; i++)
    accesses[i].kind = MS_LOAD;
  /* 4-byte lines in 65536 sets: a shape ms_hierarchy_parse refuses, configured directly */
  ms_hierarchy_config config;
  assert_int_equal(ms_hierarchy_parse("65536/16384/4,1048576/16/4", &config), MS_OK);
  config.levels[1].line_size = 4;
  ms_hierarchy *h;
  assert_int_equal(ms_hierarchy_new(&config, &h), MS_OK);
  run(h, accesses, count);
  oracle l1, l2;
  oracle_init(&l1, 65536, 16384, 4);
  oracle_init(&l2, 1048576, 4, 4);
  for (size_t i = 0; i < count; i++) {
    uint64_t line = accesses[i].address / 16384;
    if (oracle_access(&l1, line, 0))
      for (uint64_t small = line * 4096; small < (line + 1) * 4096; small++)
        oracle_access(&l2, small, 0);
  }
  assert_true(l1.misses > 300);
  expect(h, 0, l1.accesses, l1.misses);
  expect(h, 1, l2.accesses, l2.misses);
  free(l1.lines);
  free(l1.filled);
  free(l2.lines);
  free(l2.filled);
  ms_hierarchy_free(h);
  free(accesses);
}

/* ---- one pass over many hierarchies ---- */

static void assert_same_stats(const ms_hierarchy *a, const ms_hierarchy *b, int levels) {
  for (int l = 0; l < levels; l++) {
    ms_cache_stats x = stats_of(a, l), y = stats_of(b, l);
    assert_memory_equal(&x.total, &y.total, sizeof x.total);
    assert_memory_equal(x.kinds, y.kinds, sizeof x.kinds);
    assert_int_equal(x.writebacks, y.writebacks);
    assert_int_equal(x.thread_count, y.thread_count);
    assert_memory_equal(x.thread_kinds, y.thread_kinds,
                        x.thread_count * MS_ACCESS_KIND_COUNT * sizeof *x.thread_kinds);
    uint32_t sites = x.site_count < y.site_count ? x.site_count : y.site_count;
    assert_memory_equal(x.site_misses, y.site_misses, sites * sizeof *x.site_misses);
    assert_int_equal(x.unsited_misses, y.unsited_misses);
  }
}

static void check_one_pass(ms_cache_policy policy, ms_cache_write_policy write_policy,
                           int threads) {
  int count = ms_hierarchy_catalog_count();
  ms_hierarchy_config *configs = calloc((size_t)count, sizeof *configs);
  for (int i = 0; i < count; i++) {
    assert_int_equal(ms_hierarchy_parse(ms_hierarchy_catalog_get(i)->name, &configs[i]), MS_OK);
    for (int l = 0; l < configs[i].level_count; l++)
      configs[i].levels[l].policy =
          policy == MS_CACHE_PLRU &&
                  (configs[i].levels[l].associativity & (configs[i].levels[l].associativity - 1))
              ? MS_CACHE_LRU
              : policy;
    configs[i].write_policy = write_policy;
  }
  size_t total = 60000;
  ms_access *accesses = random_stream(total, 7);
  for (size_t i = 0; i < total; i++) {
    accesses[i].thread = (uint16_t)(i % 3);
    if (i % 11 == 0) accesses[i].kind = MS_MODIFY;
    if (i % 13 == 0) accesses[i].site = MS_SITE_NONE;
    if (i % 17 == 0) accesses[i].size = 100; /* straddles lines */
  }
  ms_hierarchy_set *set;
  assert_int_equal(ms_hierarchy_set_new(configs, count, &set), MS_OK);
  assert_int_equal(ms_hierarchy_set_threads(set, threads), MS_OK);
  int levels = 0;
  for (int i = 0; i < count; i++)
    levels += configs[i].level_count;
  assert_true(ms_hierarchy_set_level_instances(set) < levels);
  for (size_t i = 0; i < total; i += 4096) {
    ms_batch batch = {.accesses = accesses + i, .count = total - i < 4096 ? total - i : 4096};
    assert_int_equal(ms_hierarchy_set_access_batch(set, &batch), MS_OK);
  }
  for (int i = 0; i < count; i++) {
    ms_hierarchy *alone;
    assert_int_equal(ms_hierarchy_new(&configs[i], &alone), MS_OK);
    for (size_t j = 0; j < total; j += 4096)
      run(alone, accesses + j, total - j < 4096 ? total - j : 4096);
    assert_same_stats(ms_hierarchy_set_get(set, i), alone, configs[i].level_count);
    ms_hierarchy_free(alone);
  }
  ms_hierarchy_set_free(set);
  free(accesses);
  free(configs);
}

/* The baseline and the AVX2 builds of the level loops (lib/cache/level_run.h) give the same
 * statistics on every catalog hierarchy, under both write policies and both models. On a
 * host without AVX2 both sets run the baseline and the test only checks determinism. */
static ms_hierarchy_set *set_with_simd(const ms_hierarchy_config *configs, int count, int simd) {
  ms_hierarchy_set *set;
  if (simd)
    unsetenv("MEMSNAP_SIMD");
  else
    setenv("MEMSNAP_SIMD", "0", 1);
  assert_int_equal(ms_hierarchy_set_new(configs, count, &set), MS_OK);
  unsetenv("MEMSNAP_SIMD");
  return set;
}

static void test_simd_equals_baseline(void **state) {
  (void)state;
  int count = ms_hierarchy_catalog_count();
  ms_hierarchy_config *configs = calloc((size_t)count, sizeof *configs);
  size_t total = 80000;
  ms_access *accesses = random_stream(total, 3);
  for (size_t i = 0; i < total; i++) {
    accesses[i].thread = (uint16_t)(i % 2);
    if (i % 7 == 0) accesses[i].kind = MS_MODIFY;
    if (i % 19 == 0) accesses[i].size = 120; /* straddles lines */
  }
  for (int variant = 0; variant < 3; variant++) {
    int used = 0; /* the cachegrind model takes only power-of-two set counts */
    for (int i = 0; i < count; i++) {
      ms_hierarchy_config *config = &configs[used];
      assert_int_equal(ms_hierarchy_parse(ms_hierarchy_catalog_get(i)->name, config), MS_OK);
      config->write_policy = variant == 1 ? MS_CACHE_WRITE_THROUGH : MS_CACHE_WRITE_BACK;
      config->model = variant == 2 ? MS_CACHE_MODEL_CACHEGRIND : MS_CACHE_MODEL_MEMSNAP;
      used += ms_hierarchy_config_check(config) == MS_OK;
    }
    assert_true(used >= 5);
    ms_hierarchy_set *baseline = set_with_simd(configs, used, 0);
    ms_hierarchy_set *simd = set_with_simd(configs, used, 1);
    for (size_t i = 0; i < total; i += 4096) {
      ms_batch batch = {.accesses = accesses + i, .count = total - i < 4096 ? total - i : 4096};
      assert_int_equal(ms_hierarchy_set_access_batch(baseline, &batch), MS_OK);
      assert_int_equal(ms_hierarchy_set_access_batch(simd, &batch), MS_OK);
    }
    for (int i = 0; i < used; i++)
      assert_same_stats(ms_hierarchy_set_get(baseline, i), ms_hierarchy_set_get(simd, i),
                        configs[i].level_count);
    ms_hierarchy_set_free(baseline);
    ms_hierarchy_set_free(simd);
  }
  free(accesses);
  free(configs);
}

/* Large levels keep compact 32-bit tags until an input's tag does not fit, then turn to
 * 64-bit ways (cache_internal.h). Both forms give the same statistics as 64-bit ways from
 * the start (MEMSNAP_SIM_COMPACT=0), in both builds of the level loops. The second half of
 * the stream repeats the first at + 2^60: 32-bit tags that kept going would take those
 * lines for the first half's (a hit where 64-bit ways miss). */
static void test_compact_tags_equal_wide(void **state) {
  (void)state;
  const char *names[] = {"nehalem", "32768/64/8,1048576/64/16,8388608/64/16",
                         "32768/64/8,2097152/64/8"};
  enum { COUNT = 3 };
  ms_hierarchy_config configs[COUNT];
  for (int i = 0; i < COUNT; i++)
    assert_int_equal(ms_hierarchy_parse(names[i], &configs[i]), MS_OK);
  size_t half = 60000, total = 2 * half;
  ms_access *accesses = random_stream(total, 5);
  for (size_t i = 0; i < half; i++) {
    if (i % 11 == 0) accesses[i].size = 120; /* straddles lines */
    accesses[half + i] = accesses[i];
    accesses[half + i].address += 1ull << 60;
  }
  for (int simd = 0; simd < 2; simd++) {
    ms_hierarchy_set *compact = set_with_simd(configs, COUNT, simd);
    setenv("MEMSNAP_SIM_COMPACT", "0", 1);
    ms_hierarchy_set *wide = set_with_simd(configs, COUNT, simd);
    unsetenv("MEMSNAP_SIM_COMPACT");
    for (size_t i = 0; i < total; i += 4096) {
      ms_batch batch = {.accesses = accesses + i, .count = total - i < 4096 ? total - i : 4096};
      assert_int_equal(ms_hierarchy_set_access_batch(compact, &batch), MS_OK);
      assert_int_equal(ms_hierarchy_set_access_batch(wide, &batch), MS_OK);
      if (i + 4096 == 12288) /* some way into the low half */
        for (int h = 0; h < COUNT; h++)
          assert_same_stats(ms_hierarchy_set_get(compact, h), ms_hierarchy_set_get(wide, h),
                            configs[h].level_count);
    }
    for (int h = 0; h < COUNT; h++)
      assert_same_stats(ms_hierarchy_set_get(compact, h), ms_hierarchy_set_get(wide, h),
                        configs[h].level_count);
    ms_hierarchy_set_free(compact);
    ms_hierarchy_set_free(wide);
  }
  free(accesses);
}

static void test_one_pass_equals_separate(void **state) {
  (void)state;
  /* the set's first levels on one thread per CPU, on one, and on more than CPUs */
  check_one_pass(MS_CACHE_LRU, MS_CACHE_WRITE_BACK, 0);
  check_one_pass(MS_CACHE_RANDOM, MS_CACHE_WRITE_BACK, 1);
  check_one_pass(MS_CACHE_PLRU, MS_CACHE_WRITE_THROUGH, 5);
}

static void test_reports(void **state) {
  (void)state;
  ms_hierarchy_config configs[2];
  assert_int_equal(ms_hierarchy_parse("nehalem", &configs[0]), MS_OK);
  assert_int_equal(ms_hierarchy_parse("hpcmo-13", &configs[1]), MS_OK);
  ms_hierarchy_set *set;
  assert_int_equal(ms_hierarchy_set_new(configs, 2, &set), MS_OK);
  ms_access *accesses = random_stream(4096, 3);
  ms_batch batch = {.accesses = accesses, .count = 4096, .capacity = 4096};
  ms_sink *sink;
  assert_int_equal(ms_cache_sink_new(set, &sink), MS_OK);
  assert_int_equal(sink->ops->consume(sink, NULL, &batch), MS_OK);
  ms_sink_destroy(sink);
  ms_site_table *sites = ms_site_table_new();
  for (int i = 0; i < 7; i++)
    ms_site_table_add(sites, 0x401000 + 4 * (uint64_t)i, NULL, "kernel", "k.c", 10 + (uint32_t)i);
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  assert_int_equal(ms_cache_report_text(out, set, sites, 3), MS_OK);
  fclose(out);
  assert_non_null(strstr(text, "nehalem: 32768/64/8,262144/64/8,8388608/64/16"));
  assert_non_null(strstr(text, "kernel (k.c:"));
  free(text);
  out = open_memstream(&text, &size);
  assert_int_equal(ms_cache_report_json(out, set, sites, 3), MS_OK);
  fclose(out);
  json_object *root = json_tokener_parse(text);
  assert_non_null(root);
  json_object *hierarchies, *levels, *top;
  assert_true(json_object_object_get_ex(root, "hierarchies", &hierarchies));
  assert_int_equal(json_object_array_length(hierarchies), 2);
  assert_true(
      json_object_object_get_ex(json_object_array_get_idx(hierarchies, 0), "levels", &levels));
  assert_int_equal(json_object_array_length(levels), 3);
  assert_true(json_object_object_get_ex(json_object_array_get_idx(levels, 0), "top_sites", &top));
  assert_int_equal(json_object_array_length(top), 3);
  json_object_put(root);
  free(text);
  ms_site_table_free(sites);
  ms_hierarchy_set_free(set);
  free(accesses);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lru_three_sets),
      cmocka_unit_test(test_fifo_three_sets),
      cmocka_unit_test(test_random_seeded),
      cmocka_unit_test(test_plru_four_ways),
      cmocka_unit_test(test_plru_two_ways_is_lru),
      cmocka_unit_test(test_write_back),
      cmocka_unit_test(test_write_through),
      cmocka_unit_test(test_straddle_memsnap),
      cmocka_unit_test(test_straddle_cachegrind),
      cmocka_unit_test(test_multi_level_sees_misses),
      cmocka_unit_test(test_catalog),
      cmocka_unit_test(test_spec_parsing),
      cmocka_unit_test(test_lru_oracle),
      cmocka_unit_test(test_large_parent_lines),
      cmocka_unit_test(test_one_pass_equals_separate),
      cmocka_unit_test(test_simd_equals_baseline),
      cmocka_unit_test(test_compact_tags_equal_wide),
      cmocka_unit_test(test_reports),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

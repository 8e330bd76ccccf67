/* Cache surface oracles:
 *  - a brute-force LRU stack (move-to-front list, position = reuse distance) on synthetic
 *    streams, for grids with odd depths, accesses spanning lines, footprints larger than the
 *    deepest depth (blocks dropped) and streams long enough to renumber the time window;
 *  - `memsnap sim` with one fully-associative LRU level SIZE/WIDTH/DEPTH: the same hits and
 *    accesses, exactly, on kernels of tests/kernels;
 *  - Cachegrind with a fully-associative D1: `memsnap sim --model cachegrind` within 0.5% of
 *    its misses, and the surface (memsnap accounting, every line a reference) within 0.01 of
 *    its hit rate, the difference being references that straddle two lines;
 *  - SHARDS sampling error bounded against the exact surface;
 *  - option and input errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>

#include "memsnap/error.h"
#include "memsnap/surface.h"
#include "testutil.h"
#include "../../lib/locality/surface_internal.h"

/* ---- brute force ---- */

typedef struct brute_lru {
  uint64_t *blocks; /* most recent first */
  size_t count;
} brute_lru;

/* Stack position of block (its reuse distance), or SIZE_MAX if never seen; moves it first. */
static size_t brute_reference(brute_lru *lru, uint64_t block) {
  size_t p = 0;
  while (p < lru->count && lru->blocks[p] != block)
    p++;
  size_t distance = p < lru->count ? p : SIZE_MAX;
  if (p == lru->count) lru->count++;
  memmove(lru->blocks + 1, lru->blocks, p * sizeof *lru->blocks);
  lru->blocks[0] = block;
  return distance;
}

static uint64_t next_random(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* A stream mixing a hot set, a strided walk and random far accesses of sizes 1..16; the walk
 * and the far accesses from far_base on. */
static void make_stream(ms_access *accesses, size_t count, uint64_t footprint_bytes,
                        uint64_t far_base) {
  uint64_t x = 0x9E3779B97F4A7C15ull, walk = 0;
  for (size_t i = 0; i < count; i++) {
    uint64_t r = next_random(&x);
    uint64_t address;
    switch (r % 4) {
    case 0: address = 0x10000 + (r >> 8) % 256; break;                  /* hot */
    case 1: address = far_base + (walk += 24) % footprint_bytes; break; /* strided */
    default: address = far_base + (r >> 16) % footprint_bytes; break;   /* far */
    }
    accesses[i] = (ms_access){.address = address,
                              .site = 0,
                              .thread = 0,
                              .size = (uint8_t)(1u << ((r >> 40) % 5)),
                              .kind = MS_LOAD};
  }
}

static void check_against_brute_force_at(const ms_surface_config *config, size_t count,
                                         uint64_t footprint, uint64_t far_base) {
  ms_access *accesses = malloc(count * sizeof *accesses);
  assert_non_null(accesses);
  make_stream(accesses, count, footprint, far_base);
  ms_surface_builder *builder;
  assert_int_equal(ms_surface_builder_new(config, &builder), MS_OK);
  for (size_t start = 0; start < count; start += 1000) {
    ms_batch batch = {accesses + start, count - start < 1000 ? count - start : 1000, 1000};
    assert_int_equal(ms_surface_builder_add(builder, &batch), MS_OK);
  }
  static ms_surface surface;
  ms_surface_builder_result(builder, &surface);
  ms_surface_builder_free(builder);
  for (int w = 0; w < config->width_count; w++) {
    brute_lru lru = {calloc(footprint + 4096, sizeof(uint64_t)), 0};
    assert_non_null(lru.blocks);
    uint64_t hits[MS_SURFACE_MAX_DEPTHS] = {0}, references = 0;
    for (size_t i = 0; i < count; i++) {
      uint64_t first = accesses[i].address / config->widths[w];
      uint64_t last = (accesses[i].address + accesses[i].size - 1) / config->widths[w];
      for (uint64_t line = first; line <= last; line++) {
        size_t distance = brute_reference(&lru, line);
        references++;
        for (int k = 0; k < config->depth_count; k++)
          if (distance != SIZE_MAX && distance < config->depths[k]) hits[k]++;
      }
    }
    assert_int_equal(surface.references[w], references);
    uint64_t histogram_total = 0;
    for (int k = 0; k < config->depth_count; k++) {
      double expected = (double)hits[k] / (double)references;
      if (fabs(surface.hit_rate[w][k] - expected) > 1e-12)
        fail_msg("width %u depth %llu: surface %.9f, brute force %.9f", config->widths[w],
                 (unsigned long long)config->depths[k], surface.hit_rate[w][k], expected);
      histogram_total += surface.histogram[w][k];
      assert_int_equal(histogram_total, hits[k]); /* bins are the differences of hits */
    }
    assert_int_equal(histogram_total + surface.histogram[w][config->depth_count], references);
    free(lru.blocks);
  }
  free(accesses);
}

static void check_against_brute_force(const ms_surface_config *config, size_t count,
                                      uint64_t footprint) {
  check_against_brute_force_at(config, count, footprint, 0x40000);
}

static void test_brute_force_default_like(void **state) {
  (void)state;
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.width_count = 4;
  config.widths[0] = 4, config.widths[1] = 8, config.widths[2] = 64, config.widths[3] = 512;
  config.depth_count = 12; /* 1..2048: a footprint of 16 KB drops lines at width 4 */
  check_against_brute_force(&config, 30000, 16000);
}

/* The widths shared out among threads (more threads than CPUs here, and than some batches'
 * widths left) give the brute force's surface, as one thread does. */
static void test_brute_force_threads(void **state) {
  (void)state;
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.depth_count = 12;
  int threads[] = {1, 3, 8};
  for (int t = 0; t < 3; t++) {
    config.threads = threads[t];
    check_against_brute_force(&config, 20000, 16000);
  }
}

static void test_brute_force_odd_depths(void **state) {
  (void)state;
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.width_count = 2;
  config.widths[0] = 1, config.widths[1] = 16;
  uint64_t depths[] = {3, 5, 6, 100, 101, 700};
  config.depth_count = 6;
  memcpy(config.depths, depths, sizeof depths);
  check_against_brute_force(&config, 30000, 6000);
}

static void test_brute_force_single_depth(void **state) {
  (void)state;
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.width_count = 1;
  config.widths[0] = 32;
  config.depth_count = 1;
  config.depths[0] = 1; /* one line: hit iff the same line as the previous reference */
  check_against_brute_force(&config, 20000, 4096);
}

/* Tiny grids: a deepest depth of 2, of 5 (odd thresholds), and of 1 (every reference is a
 * repeat or a miss), with lines dropped all the time. */
static void test_brute_force_tiny_depths(void **state) {
  (void)state;
  const uint64_t grids[3][3] = {{2, 0, 0}, {2, 4, 5}, {1, 0, 0}};
  const int counts[3] = {1, 3, 1};
  for (int g = 0; g < 3; g++) {
    ms_surface_config config;
    ms_surface_config_default(&config);
    config.width_count = 2;
    config.widths[0] = 4, config.widths[1] = 64;
    config.depth_count = counts[g];
    memcpy(config.depths, grids[g], (size_t)counts[g] * sizeof grids[g][0]);
    check_against_brute_force(&config, 20000, 4096);
  }
}

/* Lines too large for the tag of an 8-byte slot (reuse_stack.h): the walk and the far
 * accesses near the top of the address space share one tag and are told apart through the
 * time ring, among the hot set's exact tags, while the table grows, drops lines and
 * renumbers its times. */
static void test_brute_force_high_addresses(void **state) {
  (void)state;
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.width_count = 3;
  config.widths[0] = 1, config.widths[1] = 4, config.widths[2] = 64;
  config.depth_count = 12;
  check_against_brute_force_at(&config, 30000, 16000, 0xFFFFFFF000000000ull);
  const uint64_t depths[] = {2, 4, 5};
  config.depth_count = 3;
  memcpy(config.depths, depths, sizeof depths);
  check_against_brute_force_at(&config, 20000, 4096, 0xFFFFFFF000000000ull);
}

/* ---- memsnap sim ---- */

static json_object *json_get(json_object *object, const char *key) {
  json_object *value = NULL;
  if (!json_object_object_get_ex(object, key, &value)) fail_msg("no '%s' in JSON", key);
  return value;
}

static char *record_kernel(const char *name, const char *args) {
  char kernel[1024];
  test_kernel(name, kernel, sizeof kernel);
  char *dir = test_tempdir();
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o k.mtr -- %s %s", kernel, args), 0);
  return dir;
}

static void check_kernel_against_sim(const char *name, const char *args) {
  char *dir = record_kernel(name, args);
  assert_int_equal(test_memsnap_in(dir, "surface --json -o surface.json k.mtr"), 0);
  static const uint32_t widths[] = {4, 16, 64, 512};
  static const size_t rows[] = {0, 2, 4, 7};                 /* their rows in the default grid */
  static const uint64_t depths[] = {1, 2, 8, 64, 256, 1024}; /* sim: at most 1024 ways */
  char args_sim[4096] = "sim --json";
  for (size_t w = 0; w < 4; w++)
    for (size_t d = 0; d < 6; d++) {
      size_t n = strlen(args_sim);
      snprintf(args_sim + n, sizeof args_sim - n, " -H %llu/%u/%llu",
               (unsigned long long)(widths[w] * depths[d]), widths[w],
               (unsigned long long)depths[d]);
    }
  strcat(args_sim, " k.mtr");
  assert_int_equal(test_memsnap_in(dir, "%s", args_sim), 0);
  char path[1024];
  snprintf(path, sizeof path, "%s/out", dir);
  json_object *sim = json_object_from_file(path);
  snprintf(path, sizeof path, "%s/surface.json", dir);
  json_object *surface = json_object_from_file(path);
  assert_non_null(sim);
  assert_non_null(surface);
  json_object *hierarchies = json_get(sim, "hierarchies");
  json_object *surface_widths = json_get(surface, "widths");
  json_object *surface_depths = json_get(surface, "depths");
  assert_int_equal(json_object_array_length(surface_widths), 8);
  assert_int_equal(json_object_array_length(surface_depths), 17);
  int checked = 0;
  for (size_t w = 0; w < 4; w++)
    for (size_t d = 0; d < 6; d++) {
      json_object *level = json_object_array_get_idx(
          json_get(json_object_array_get_idx(hierarchies, w * 6 + d), "levels"), 0);
      uint64_t accesses = (uint64_t)json_object_get_uint64(json_get(level, "accesses"));
      uint64_t hits = (uint64_t)json_object_get_uint64(json_get(level, "hits"));
      json_object *row = json_object_array_get_idx(surface_widths, rows[w]);
      assert_int_equal(json_object_get_uint64(json_get(row, "width")), widths[w]);
      uint64_t references = json_object_get_uint64(json_get(row, "references"));
      int k = 0;
      while ((uint64_t)json_object_get_uint64(json_object_array_get_idx(surface_depths, k)) !=
             depths[d])
        k++;
      double rate =
          json_object_get_double(json_object_array_get_idx(json_get(row, "hit_rates"), k));
      assert_int_equal(references, accesses);
      uint64_t surface_hits = (uint64_t)llround(rate * (double)references);
      if (surface_hits != hits)
        fail_msg("%s: width %u depth %llu: surface %llu hits, sim %llu", name, widths[w],
                 (unsigned long long)depths[d], (unsigned long long)surface_hits,
                 (unsigned long long)hits);
      assert_true(fabs(rate - (double)hits / (double)accesses) < 1e-12);
      checked++;
    }
  printf("%s %s: %d surface points equal memsnap sim\n", name, args, checked);
  json_object_put(sim);
  json_object_put(surface);
  test_rmdir(dir);
}

static void test_sim_stream_add(void **state) {
  (void)state;
  check_kernel_against_sim("stream_add", "20000");
}
static void test_sim_matmul(void **state) {
  (void)state;
  check_kernel_against_sim("matmul", "40");
}
static void test_sim_gather(void **state) {
  (void)state;
  check_kernel_against_sim("gather", "20000");
}
static void test_sim_linked_list(void **state) {
  (void)state;
  check_kernel_against_sim("linked_list", "10000");
}

/* ---- Cachegrind ---- */

static uint64_t cachegrind_event(const char *text, const char *event) {
  const char *events = strstr(text, "\nevents:");
  const char *summary = strstr(text, "\nsummary:");
  assert_non_null(events);
  assert_non_null(summary);
  const char *p = events + 8;
  const char *q = summary + 9;
  for (;;) {
    while (*p == ' ')
      p++;
    if (*p == '\n' || !*p) fail_msg("no event %s", event);
    size_t n = strcspn(p, " \n");
    uint64_t value = strtoull(q, (char **)&q, 10);
    if (n == strlen(event) && !strncmp(p, event, n)) return value;
    p += n;
  }
}

static void check_kernel_against_cachegrind(const char *name, const char *args) {
  char *dir = record_kernel(name, args);
  char kernel[1024];
  test_kernel(name, kernel, sizeof kernel);
  /* 256 lines of 64 bytes, one set: fully associative */
  assert_int_equal(test_run("cd '%s' && valgrind -q --tool=cachegrind --cache-sim=yes "
                            "--D1=16384,256,64 --LL=8388608,16,64 --cachegrind-out-file=cg.out "
                            "%s %s > /dev/null",
                            dir, kernel, args),
                   0);
  char *text = test_read_in(dir, "cg.out");
  assert_non_null(text);
  uint64_t cg_refs = cachegrind_event(text, "Dr") + cachegrind_event(text, "Dw");
  uint64_t cg_misses = cachegrind_event(text, "D1mr") + cachegrind_event(text, "D1mw");
  free(text);
  assert_int_equal(test_memsnap_in(dir, "sim --json --model cachegrind -H 16384/64/256 k.mtr"), 0);
  char path[1024];
  snprintf(path, sizeof path, "%s/out", dir);
  json_object *sim = json_object_from_file(path);
  assert_non_null(sim);
  json_object *level = json_object_array_get_idx(
      json_get(json_object_array_get_idx(json_get(sim, "hierarchies"), 0), "levels"), 0);
  uint64_t model_misses = json_object_get_uint64(json_get(level, "misses"));
  json_object_put(sim);
  assert_int_equal(test_memsnap_in(dir, "surface -w 64 -d 256 --format csv k.mtr"), 0);
  text = test_read_in(dir, "out");
  assert_non_null(text);
  double surface_rate;
  unsigned long long references;
  assert_int_equal(
      sscanf(strchr(text, '\n') + 1, "64,256,16384,%lf,%llu", &surface_rate, &references), 2);
  free(text);
  double cg_rate = 1.0 - (double)cg_misses / (double)cg_refs;
  double model_error = fabs((double)model_misses - (double)cg_misses) / (double)cg_misses;
  printf("%s %s: cachegrind D1 16384,256,64: %llu refs, %llu misses (hit rate %.5f); sim "
         "--model cachegrind %llu misses (%.3f%%); surface (64, 256) %llu line references, hit "
         "rate %.5f (difference %.5f: references straddling two lines)\n",
         name, args, (unsigned long long)cg_refs, (unsigned long long)cg_misses, cg_rate,
         (unsigned long long)model_misses, 100 * model_error, references, surface_rate,
         surface_rate - cg_rate);
  assert_true(cg_misses > 500);
  assert_true(model_error <= 0.005);
  assert_true(fabs(surface_rate - cg_rate) <= 0.01);
  test_rmdir(dir);
}

static void test_cachegrind_stream_add(void **state) {
  (void)state;
  check_kernel_against_cachegrind("stream_add", "30000");
}
static void test_cachegrind_matmul(void **state) {
  (void)state;
  check_kernel_against_cachegrind("matmul", "48");
}

/* ---- sampling ---- */

static void test_shards_error(void **state) {
  (void)state;
  size_t count = 600000;
  ms_access *accesses = malloc(count * sizeof *accesses);
  assert_non_null(accesses);
  make_stream(accesses, count, 6u << 20, 0x40000);
  ms_surface_config config;
  ms_surface_config_default(&config);
  static ms_surface exact, sampled;
  for (int pass = 0; pass < 2; pass++) {
    config.sample_rate = pass ? 0.1 : 1.0;
    ms_surface_builder *builder;
    assert_int_equal(ms_surface_builder_new(&config, &builder), MS_OK);
    ms_batch batch = {accesses, count, count};
    assert_int_equal(ms_surface_builder_add(builder, &batch), MS_OK);
    ms_surface_builder_result(builder, pass ? &sampled : &exact);
    ms_surface_builder_free(builder);
  }
  double deep = 0.0;
  int n = 0;
  for (int w = 0; w < exact.width_count; w++) {
    assert_true(sampled.references[w] < exact.references[w] / 5); /* it really sampled */
    assert_true(sampled.references[w] > exact.references[w] / 20);
    for (int k = 0; k < exact.depth_count; k++)
      if (exact.depths[k] >= 256) {
        deep += fabs(exact.hit_rate[w][k] - sampled.hit_rate[w][k]);
        n++;
      }
  }
  printf("SHARDS rate 0.1: mean absolute error %.4f over %d points of depth >= 256\n", deep / n, n);
  assert_true(deep / n <= 0.01);
  free(accesses);
}

/* The accesses of tests/kernels/matmul.c (naive ijk over n x n doubles: a[i][k] and
 * b[k][j] loaded for every k, c[i][j] stored) for the rows i < rows, the layout of three
 * separate arrays. */
static size_t make_matmul(ms_access *accesses, int n, int rows) {
  const uint64_t a = 0x4a0000010ull, b = 0x4b0000010ull, c = 0x4c0000010ull;
  size_t m = 0;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < n; j++) {
      for (int k = 0; k < n; k++) {
        accesses[m++] = (ms_access){.address = a + 8ull * (uint64_t)(i * n + k), .size = 8};
        accesses[m++] = (ms_access){.address = b + 8ull * (uint64_t)(k * n + j), .size = 8};
      }
      accesses[m++] =
          (ms_access){.address = c + 8ull * (uint64_t)(i * n + j), .size = 8, .kind = MS_STORE};
    }
  return m;
}

/* SHARDS at rate 0.01 on matmul 150 (the bench's kernel): its hit rates jump by about
 * 0.49 at reuse distances of 170 to 600 lines (a row of a and a column of b), 2 to 6
 * sampled lines at rate 0.01, where the sampled distances are too coarse to place the jump.
 * The first 20 rows of c (903000 accesses, the same reuse pattern; 7 s under ASan where
 * all 150 took 52 s). Against the exact surface (checked above against brute force and
 * `memsnap sim`): mean absolute error at most 0.01 over the points of depth >= 256 (0.0125
 * before the near sample, 0.0069 with it; all 150 rows: 0.0126 and 0.0070), the depths
 * 1..512 reported at the near sample's rate 0.02, and the hit rates never falling with
 * depth. */
static void test_shards_matmul_error(void **state) {
  (void)state;
  const int n = 150, rows = 20;
  size_t capacity = (size_t)rows * n * (2 * n + 1);
  ms_access *accesses = calloc(capacity, sizeof *accesses);
  assert_non_null(accesses);
  size_t count = make_matmul(accesses, n, rows);
  assert_int_equal(count, capacity);
  static ms_surface exact, sampled;
  for (int pass = 0; pass < 2; pass++) {
    ms_surface_config config;
    ms_surface_config_default(&config);
    config.sample_rate = pass ? 0.01 : 1.0;
    ms_surface_builder *builder;
    assert_int_equal(ms_surface_builder_new(&config, &builder), MS_OK);
    for (size_t start = 0; start < count; start += MS_BATCH_CAPACITY) {
      size_t part = count - start < MS_BATCH_CAPACITY ? count - start : MS_BATCH_CAPACITY;
      ms_batch batch = {accesses + start, part, part};
      assert_int_equal(ms_surface_builder_add(builder, &batch), MS_OK);
    }
    ms_surface_builder_result(builder, pass ? &sampled : &exact);
    ms_surface_builder_free(builder);
  }
  assert_int_equal(exact.near_depth_count, 0);
  assert_int_equal(sampled.near_depth_count, 10); /* 1..512: D x 0.01 < 8 sampled lines */
  assert_true(sampled.near_rate == 0.02);
  double deep = 0.0;
  int points = 0;
  for (int w = 0; w < exact.width_count; w++) {
    assert_true(sampled.references[w] < exact.references[w] / 50); /* it really sampled */
    for (int k = 0; k < exact.depth_count; k++) {
      if (k > 0) assert_true(sampled.hit_rate[w][k] >= sampled.hit_rate[w][k - 1]);
      if (exact.depths[k] >= 256) {
        deep += fabs(exact.hit_rate[w][k] - sampled.hit_rate[w][k]);
        points++;
      }
    }
  }
  printf("SHARDS rate 0.01 on matmul %d (%d rows): mean absolute error %.4f over %d points of "
         "depth >= 256\n",
         n, rows, deep / points, points);
  assert_true(deep / points <= 0.01);
  free(accesses);
}

/* The sampled pass has AVX-512 and AVX2 versions for up to 8 widths and a scalar one (any
 * CPU, and more widths); widths 4..512 are the same streams with the same salts in a 9-width
 * grid (4..1024, scalar pass) as in the default 8-width grid, run here with each pass this
 * CPU has, so their results must be identical. Sizes up to 16 bytes also make accesses that
 * span more than two 4-byte lines (the vector passes hand those to the scalar code); the
 * last run's batches of 10000 accesses span several of the AVX-512 pass's chunks. */
static void test_shards_passes_agree(void **state) {
  (void)state;
  size_t count = 200000;
  ms_access *accesses = malloc(count * sizeof *accesses);
  assert_non_null(accesses);
  make_stream(accesses, count, 1u << 20, 0x40000);
  enum { RUNS = 5 };
  static ms_surface surfaces[RUNS];
  const surface_pass passes[RUNS] = {SURFACE_PASS_SCALAR, SURFACE_PASS_SCALAR, SURFACE_PASS_AVX2,
                                     SURFACE_PASS_AVX512, SURFACE_PASS_AVX512};
  const size_t batch_sizes[RUNS] = {1000, 1000, 1000, 1000, 10000};
  for (int run = 0; run < RUNS; run++) {
    ms_surface_config config;
    ms_surface_config_default(&config);
    config.sample_rate = 0.05;
    if (run == 0) config.widths[config.width_count++] = 1024;
    ms_surface_builder *builder;
    assert_int_equal(ms_surface_builder_new(&config, &builder), MS_OK);
    if (surface_builder_set_pass(builder, passes[run]) < 0) {
      printf("sampled pass %d: not on this CPU\n", (int)passes[run]);
      ms_surface_builder_free(builder);
      surfaces[run] = surfaces[0];
      continue;
    }
    for (size_t start = 0; start < count; start += batch_sizes[run]) {
      ms_batch batch = {accesses + start, batch_sizes[run], batch_sizes[run]};
      assert_int_equal(ms_surface_builder_add(builder, &batch), MS_OK);
    }
    ms_surface_builder_result(builder, &surfaces[run]);
    ms_surface_builder_free(builder);
  }
  for (int run = 1; run < RUNS; run++)
    for (int w = 0; w < 8; w++) {
      assert_int_equal(surfaces[0].references[w], surfaces[run].references[w]);
      assert_true(surfaces[0].references[w] > 0);
      for (int k = 0; k <= surfaces[0].depth_count; k++)
        assert_int_equal(surfaces[0].histogram[w][k], surfaces[run].histogram[w][k]);
      for (int k = 0; k < surfaces[0].depth_count; k++)
        assert_true(surfaces[0].hit_rate[w][k] == surfaces[run].hit_rate[w][k]);
    }
  free(accesses);
}

/* ---- options and inputs ---- */

static void test_parse_grid(void **state) {
  (void)state;
  uint64_t values[32];
  int count;
  assert_int_equal(ms_surface_parse_grid("4:512", "--widths", values, 16, &count), MS_OK);
  assert_int_equal(count, 8);
  assert_int_equal(values[7], 512);
  assert_int_equal(ms_surface_parse_grid("3,5,100", "--depths", values, 32, &count), MS_OK);
  assert_int_equal(count, 3);
  assert_int_equal(values[2], 100);
  assert_int_equal(ms_surface_parse_grid("4:6", "--widths", values, 16, &count), MS_ERR_ARG);
  assert_int_equal(ms_surface_parse_grid("8,4", "--widths", values, 16, &count), MS_ERR_ARG);
  assert_int_equal(ms_surface_parse_grid("1:1048576", "--depths", values, 16, &count), MS_ERR_ARG);
  assert_non_null(strstr(ms_error_message(), "--depths"));
  assert_int_equal(ms_surface_parse_grid("", "--depths", values, 16, &count), MS_ERR_ARG);
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.widths[0] = 3;
  assert_int_equal(ms_surface_config_check(&config), MS_ERR_ARG);
}

static void test_cli_errors(void **state) {
  (void)state;
  char *dir = test_tempdir();
  assert_int_equal(test_memsnap_in(dir, "surface --widths 4:6 x.mtr"), 2);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "--widths"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "surface --shards 2 x.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "surface --threads 0 x.mtr"), 2);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "--threads '0'"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "surface --format xml x.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "surface --shards-check x.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "surface"), 2);
  assert_int_equal(test_memsnap_in(dir, "surface --bogus x.mtr"), 2);
  assert_int_equal(test_run("cd '%s' && printf 'not a trace' > bad.mtr", dir), 0);
  assert_int_not_equal(test_memsnap_in(dir, "surface -o result.csv bad.mtr"), 0);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "bad.mtr"));
  free(err);
  char *partial = test_read_in(dir, "result.csv");
  assert_null(partial); /* no output file after a failure */
  test_rmdir(dir);
}

/* ---- pictures ---- */

/* A PNG of the expected size whose pixels are not all alike (zlib data well above what a
 * blank canvas compresses to). */
static void check_png(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char header[24];
  assert_int_equal(fread(header, 1, 24, f), 24);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  assert_memory_equal(header, "\x89PNG\r\n\x1a\n", 8);
  assert_memory_equal(header + 12, "IHDR", 4);
  unsigned width = (unsigned)header[16] << 24 | header[17] << 16 | header[18] << 8 | header[19];
  unsigned height = (unsigned)header[20] << 24 | header[21] << 16 | header[22] << 8 | header[23];
  assert_int_equal(width, 1100);
  assert_int_equal(height, 750);
  assert_true(size > 20000);
}

static void test_plots(void **state) {
  (void)state;
  char *dir = record_kernel("matmul", "40");
  assert_int_equal(test_memsnap_in(dir, "plot surface k.mtr -o surface.png"), 0);
  check_png(dir, "surface.png");
  assert_int_equal(test_memsnap_in(dir, "plot surface --3d k.mtr -o surface3d.png"), 0);
  check_png(dir, "surface3d.png");
  assert_int_equal(test_memsnap_in(dir, "plot reuse k.mtr -o reuse.png"), 0);
  check_png(dir, "reuse.png");
  assert_int_equal(test_memsnap_in(dir, "plot surface --title 'matmul 40' k.mtr -o surface.svg"),
                   0);
  char *svg = test_read_in(dir, "surface.svg");
  assert_non_null(svg);
  assert_non_null(strstr(svg, "<svg"));
  assert_non_null(strstr(svg, "matmul 40: cache surface"));
  assert_non_null(strstr(svg, "hit rate"));
  assert_non_null(strstr(svg, "</svg>"));
  free(svg);
  /* errors: no picture name, a bad extension, a bad input, no gnuplot */
  assert_int_equal(test_memsnap_in(dir, "plot surface k.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "plot surface k.mtr -o x.jpg"), 2);
  assert_int_equal(test_memsnap_in(dir, "plot volume k.mtr -o x.png"), 2);
  assert_int_not_equal(test_memsnap_in(dir, "plot surface missing.mtr -o x.png"), 0);
  assert_null(test_read_in(dir, "x.png"));
  assert_int_not_equal(test_run("cd '%s' && MEMSNAP_GNUPLOT=/nonexistent/gnuplot '%s' plot "
                                "surface k.mtr -o z.png > out 2> err",
                                dir, test_env("MEMSNAP")),
                       0);
  assert_null(test_read_in(dir, "z.png"));
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "gnuplot-nox"));
  free(err);
  test_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_brute_force_default_like),
      cmocka_unit_test(test_brute_force_threads),
      cmocka_unit_test(test_brute_force_odd_depths),
      cmocka_unit_test(test_brute_force_single_depth),
      cmocka_unit_test(test_brute_force_tiny_depths),
      cmocka_unit_test(test_brute_force_high_addresses),
      cmocka_unit_test(test_sim_stream_add),
      cmocka_unit_test(test_sim_matmul),
      cmocka_unit_test(test_sim_gather),
      cmocka_unit_test(test_sim_linked_list),
      cmocka_unit_test(test_cachegrind_stream_add),
      cmocka_unit_test(test_cachegrind_matmul),
      cmocka_unit_test(test_shards_error),
      cmocka_unit_test(test_shards_matmul_error),
      cmocka_unit_test(test_shards_passes_agree),
      cmocka_unit_test(test_parse_grid),
      cmocka_unit_test(test_cli_errors),
      cmocka_unit_test(test_plots),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* memsnap synth / sim expansion / bench end to end: seeds of recorded kernels against the
 * kernels' own surfaces and hierarchy hit rates (`memsnap surface`, `memsnap sim`) and
 * signatures (`memsnap signature` of the seed), the
 * unique-index property read back with `memsnap dump`, expansion through `memsnap sim
 * --footprint --length`, hand signatures on real hierarchies, and the error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>

#include "memsnap/error.h"
#include "memsnap/signature.h"
#include "testutil.h"

static json_object *read_json(const char *dir, const char *name) {
  char *text = test_read_in(dir, name);
  assert_non_null(text);
  json_object *object = json_tokener_parse(text);
  free(text);
  assert_non_null(object);
  return object;
}

static json_object *get(json_object *object, const char *key) {
  json_object *value;
  assert_true(json_object_object_get_ex(object, key, &value));
  return value;
}

/* hit_rates[w][d] of `memsnap surface --format json` */
static int surface_of(const char *dir, const char *input, double rates[8][17]) {
  assert_int_equal(test_memsnap_in(dir, "surface --format json %s", input), 0);
  json_object *surface = read_json(dir, "out");
  json_object *widths = get(surface, "widths");
  int count = (int)json_object_array_length(widths);
  assert_int_equal(count, 8);
  for (int w = 0; w < count; w++) {
    json_object *row = get(json_object_array_get_idx(widths, (size_t)w), "hit_rates");
    assert_int_equal(json_object_array_length(row), 17);
    for (int d = 0; d < 17; d++)
      rates[w][d] = json_object_get_double(json_object_array_get_idx(row, (size_t)d));
  }
  json_object_put(surface);
  return count;
}

/* L1 and L2 hit rates of the 46 evaluation hierarchies (`memsnap sim --all-catalog`). */
static void hierarchy_rates(const char *dir, const char *input, double rates[46][2]) {
  assert_int_equal(test_memsnap_in(dir, "sim --all-catalog --json --top 0 %s", input), 0);
  json_object *report = read_json(dir, "out");
  json_object *hierarchies = get(report, "hierarchies");
  assert_true(json_object_array_length(hierarchies) >= 46);
  for (int h = 0; h < 46; h++) {
    json_object *levels = get(json_object_array_get_idx(hierarchies, (size_t)h), "levels");
    for (int l = 0; l < 2; l++)
      rates[h][l] =
          json_object_get_double(get(json_object_array_get_idx(levels, (size_t)l), "hit_rate"));
  }
  json_object_put(report);
}

/* A kernel recorded, its signature, a seed: the maximal width matches within 0.005 (the
 * generator's bound); the other figures are printed (docs/proxy.md lists them). */
static void check_kernel(const char *dir, const char *kernel, const char *args) {
  char path[1024];
  test_kernel(kernel, path, sizeof path);
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o %s.mtr -- %s %s", kernel, path, args),
                   0);
  assert_int_equal(test_memsnap_in(dir, "signature %s.mtr -o %s.sig", kernel, kernel), 0);
  assert_int_equal(test_memsnap_in(dir, "synth %s.sig -o %s.seed", kernel, kernel), 0);
  static double program[8][17], seed[8][17];
  char name[256];
  snprintf(name, sizeof name, "%s.mtr", kernel);
  surface_of(dir, name, program);
  snprintf(name, sizeof name, "%s.seed", kernel);
  surface_of(dir, name, seed);
  double total = 0, widest = 0;
  for (int w = 0; w < 8; w++)
    for (int d = 0; d < 17; d++) {
      double diff = fabs(program[w][d] - seed[w][d]);
      total += diff;
      if (w == 7 && diff > widest) widest = diff;
    }
  static double program_h[46][2], seed_h[46][2];
  snprintf(name, sizeof name, "%s.mtr", kernel);
  hierarchy_rates(dir, name, program_h);
  snprintf(name, sizeof name, "%s.seed", kernel);
  hierarchy_rates(dir, name, seed_h);
  double l1 = 0, l2 = 0;
  for (int h = 0; h < 46; h++) {
    l1 += fabs(program_h[h][0] - seed_h[h][0]) / 46;
    l2 += fabs(program_h[h][1] - seed_h[h][1]) / 46;
  }
  printf("%s %s: surface mean abs error %.4f, 512-byte width max %.4f, 46 hierarchies L1 %.4f "
         "L2 %.4f\n",
         kernel, args, total / (8 * 17), widest, l1, l2);
  assert_true(widest <= 0.005 + 1e-9);

  /* The seed has the program's signature: alpha at every level within 0.03 (measured by
   * memsnap signature on the seed, as on the program). */
  assert_int_equal(test_memsnap_in(dir, "signature %s.seed -o %s.seed.sig", kernel, kernel), 0);
  ms_signature *target, *achieved;
  char path_target[1024], path_achieved[1024];
  snprintf(path_target, sizeof path_target, "%s/%s.sig", dir, kernel);
  snprintf(path_achieved, sizeof path_achieved, "%s/%s.seed.sig", dir, kernel);
  assert_int_equal(ms_signature_load(path_target, &target), MS_OK);
  assert_int_equal(ms_signature_load(path_achieved, &achieved), MS_OK);
  for (int level = 0; level < target->levels; level++) {
    double want = ms_signature_alpha(&target->bins[0], level, -1);
    double got = ms_signature_alpha(&achieved->bins[0], level, -1);
    if (fabs(want - got) > 0.03)
      printf("%s level %d: alpha %.4f, seed %.4f\n", kernel, level, want, got);
    assert_true(fabs(want - got) <= 0.03);
  }
  ms_signature_free(target);
  ms_signature_free(achieved);
}

static void test_kernel_seeds(void **state) {
  (void)state;
  char *dir = test_tempdir();
  check_kernel(dir, "gather", "20000");
  check_kernel(dir, "matmul", "40");
  check_kernel(dir, "stencil2d", "60");
  test_rmdir(dir);
}

/* Unique-index seed of a kernel: no address twice (read back with memsnap dump). */
static void test_unique_seed(void **state) {
  (void)state;
  char *dir = test_tempdir(), path[1024];
  test_kernel("gather", path, sizeof path);
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o g.mtr -- %s 5000", path), 0);
  assert_int_equal(test_memsnap_in(dir, "signature g.mtr -o g.sig"), 0);
  assert_int_equal(test_memsnap_in(dir, "synth g.sig --unique --max-length 300000 -o g.useed"), 0);
  assert_int_equal(test_run("cd '%s' && '%s' dump g.useed | awk '{print $4}' | sort | uniq -d "
                            "| wc -l > dups && '%s' dump g.useed | wc -l > lines",
                            dir, test_env("MEMSNAP"), test_env("MEMSNAP")),
                   0);
  char *dups = test_read_in(dir, "dups"), *lines = test_read_in(dir, "lines");
  assert_int_equal(atoi(dups), 0);
  assert_true(atoi(lines) >= 200000);
  free(dups);
  free(lines);
  /* info names the program of the embedded signature instead of printing its text */
  assert_int_equal(test_memsnap_in(dir, "info g.useed"), 0);
  char *out = test_read_in(dir, "out");
  assert_non_null(out);
  assert_non_null(strstr(out, "signature:     of "));
  assert_non_null(strstr(out, "gather, embedded ("));
  assert_null(strstr(out, "HitRate("));
  free(out);
  assert_int_equal(test_memsnap_in(dir, "info --json g.useed"), 0);
  out = test_read_in(dir, "out");
  assert_non_null(strstr(out, "HitRate("));
  free(out);
  test_rmdir(dir);
}

/* Hand signatures through expansion on real caches: random hits nothing on a cache much
 * smaller than the footprint; stride hits 15/16 on 64-byte lines, 31/32 on 128. */
static void test_hand_on_hierarchies(void **state) {
  (void)state;
  char *dir = test_tempdir();
  assert_int_equal(test_memsnap_in(dir, "synth --hand random --unique --footprint 64Mi -o r.useed"),
                   0);
  assert_int_equal(test_memsnap_in(dir, "synth --hand stride --unique -o s.useed"), 0);
  assert_int_equal(
      test_memsnap_in(dir, "sim --json --top 0 -H 32k/64/8,1M/128/8 --length 3M r.useed"), 0);
  json_object *report = read_json(dir, "out");
  json_object *levels = get(json_object_array_get_idx(get(report, "hierarchies"), 0), "levels");
  json_object *l1 = json_object_array_get_idx(levels, 0),
              *l2 = json_object_array_get_idx(levels, 1);
  assert_int_equal(json_object_get_int64(get(l1, "accesses")), 3000000);
  assert_true(json_object_get_double(get(l1, "hit_rate")) < 0.01);
  assert_true(json_object_get_double(get(l2, "hit_rate")) < 0.01);
  json_object_put(report);
  assert_int_equal(
      test_memsnap_in(dir, "sim --json --top 0 -H 32k/64/8,1M/128/8 --footprint 64Mi s.useed"), 0);
  report = read_json(dir, "out");
  levels = get(json_object_array_get_idx(get(report, "hierarchies"), 0), "levels");
  l1 = json_object_array_get_idx(levels, 0), l2 = json_object_array_get_idx(levels, 1);
  assert_true(fabs(json_object_get_double(get(l1, "hit_rate")) - 15.0 / 16) < 1e-3);
  /* L2 sees the L1 misses: one per 64-byte line, every other one in a 128-byte line seen */
  assert_true(fabs(json_object_get_double(get(l2, "hit_rate")) - 0.5) < 1e-3);
  json_object_put(report);
  test_rmdir(dir);
}

static void expect_error(const char *dir, int status, const char *message, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
static void expect_error(const char *dir, int status, const char *message, const char *format,
                         ...) {
  char args[2048];
  va_list list;
  va_start(list, format);
  vsnprintf(args, sizeof args, format, list);
  va_end(list);
  assert_int_equal(test_memsnap_in(dir, "%s", args), status);
  char *err = test_read_in(dir, "err");
  if (!strstr(err, message)) fprintf(stderr, "stderr of '%s': %s", args, err);
  assert_non_null(strstr(err, message));
  free(err);
}

static void test_errors_and_bench(void **state) {
  (void)state;
  char *dir = test_tempdir();
  assert_int_equal(test_memsnap_in(dir, "synth --hand random --max-length 20000 --min-length "
                                        "20000 -o r.seed"),
                   0);
  assert_int_equal(test_memsnap_in(dir, "synth --hand random --unique --max-length 20000 "
                                        "--min-length 20000 -o r.useed"),
                   0);
  expect_error(dir, 2, "unknown hand signature", "synth --hand zigzag -o x.seed");
  expect_error(dir, 2, "no output", "synth --hand random");
  expect_error(dir, 2, "bad --max-width-error '1.5'",
               "synth --hand random --max-width-error 1.5 -o x.seed");
  expect_error(dir, 2, "not a unique-index seed", "bench r.seed --ops 1000");
  expect_error(dir, 2, "--ilp 21 out of range", "bench r.useed --ilp 21");
  assert_int_equal(test_memsnap_in(dir, "dump r.seed --limit 10 --format din"), 0);
  assert_int_equal(test_run("cd '%s' && mv out plain.din", dir), 0);
  assert_int_equal(test_memsnap_in(dir, "convert plain.din plain.mtr"), 0);
  expect_error(dir, 1, "expand trace seeds only", "sim -H 32k/64/8 --length 10 plain.mtr");
  /* the benchmark runs and reports; counters either count or say why not */
  assert_int_equal(test_memsnap_in(dir, "bench r.useed --ops 2M --ilp 4 --counters --json"), 0);
  json_object *report = read_json(dir, "out");
  assert_int_equal(json_object_get_int64(get(report, "operations")), 2000000);
  assert_true(json_object_get_double(get(report, "memops_per_second")) > 0);
  json_object *counters = get(report, "counters");
  if (!counters) {
    const char *why = json_object_get_string(get(report, "counters_unavailable"));
    assert_non_null(strstr(why, "counters unavailable: "));
  } else {
    assert_true(json_object_get_int64(get(counters, "cycles")) > 0);
  }
  json_object_put(report);
  test_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel_seeds),
      cmocka_unit_test(test_unique_seed),
      cmocka_unit_test(test_hand_on_hierarchies),
      cmocka_unit_test(test_errors_and_bench),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

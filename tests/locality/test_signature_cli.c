/* memsnap signature / memsnap show end to end, on kernels of tests/kernels recorded once.
 *
 * Oracles:
 * - The 512-byte CDF equals `memsnap sim` with one fully-associative LRU level of 512-byte
 *   lines (size 512*D, associativity D) at depths 1..1024, on matmul 150 and matmul 40:
 *   the same counts, since both count one reference per line an access spans.
 * - --per-site without a cap: the whole-program bin equals the plain signature count for
 *   count (the model's state is shared; only the results are binned).
 * - .sig -> show --json equals signature --json byte for byte (the text keeps every count).
 * - 10% interval sampling (10k/90k and 11k/99k) against the full signature: CDF points
 *   within 0.01 and alpha averages within 0.02 on matmul 150, stencil2d 400 and stream_add
 *   1500000 (section 3.3.1 reports 1.2%). stream_add's alphas depend on tree history a
 *   whole pass old (initialisation to addition), which only the tracked gaps keep: with
 *   --sample-cold its level-2 alpha shifts by more than 0.05, checked too.
 * - Errors: a malformed .sig is refused with its name and line; bad options exit 2.
 * - --widths: `memsnap surface` of the signature equals `memsnap surface` of the trace
 *   byte for byte (csv: every width's hit rates and references; the narrower widths from
 *   the signature's rows, the maximal one from its CDF) on matmul 40 and stencil2d 400;
 *   --widths-shards gives a signature that reads back; rates outside (0, 1) exit 2 naming
 *   the option.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>

#include "testutil.h"

static char *dir;

static int setup(void **state) {
  (void)state;
  dir = test_tempdir();
  char kernel[1024];
  static const char *runs[][2] = {
      {"matmul", "150"}, {"stencil2d", "400"}, {"stream_add", "1500000"}};
  test_kernel("matmul", kernel, sizeof kernel);
  if (test_memsnap_in(dir, "record -o small.mtr -- %s 40", kernel) != 0) return -1;
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    test_kernel(runs[i][0], kernel, sizeof kernel);
    if (test_memsnap_in(dir, "record -o %s.mtr -- %s %s", runs[i][0], kernel, runs[i][1]) != 0)
      return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_rmdir(dir);
  return 0;
}

static json_object *json_in(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  json_object *root = json_object_from_file(path);
  assert_non_null(root);
  return root;
}

static json_object *get(json_object *object, const char *key) {
  json_object *value;
  assert_true(json_object_object_get_ex(object, key, &value));
  return value;
}

static double number(json_object *object, const char *key) {
  return json_object_get_double(get(object, key));
}

static json_object *first_bin(json_object *root) {
  return json_object_array_get_idx(get(root, "bins"), 0);
}

static void check_against_sim(const char *kernel) {
  assert_int_equal(test_memsnap_in(dir, "signature --json -o %s.json %s.mtr", kernel, kernel), 0);
  char name[256];
  snprintf(name, sizeof name, "%s.json", kernel);
  json_object *signature = json_in(name);
  json_object *bin = first_bin(signature), *cdf = get(bin, "reuse_cdf");
  static const int depth_log2[] = {0, 1, 3, 6, 10};
  for (size_t i = 0; i < sizeof depth_log2 / sizeof depth_log2[0]; i++) {
    int k = depth_log2[i];
    unsigned depth = 1u << k;
    assert_int_equal(
        test_memsnap_in(dir, "sim --hierarchy %u/512/%u --json %s.mtr", 512 * depth, depth, kernel),
        0);
    json_object *sim = json_in("out");
    json_object *level = json_object_array_get_idx(
        get(json_object_array_get_idx(get(sim, "hierarchies"), 0), "levels"), 0);
    double accesses = number(level, "accesses"), misses = number(level, "misses");
    json_object *point = json_object_array_get_idx(cdf, (size_t)k);
    assert_true(number(point, "depth") == depth);
    assert_true(number(bin, "references") == accesses);
    assert_true(number(point, "hits") == accesses - misses);
    json_object_put(sim);
  }
  json_object_put(signature);
}

static void test_cdf_equals_sim(void **state) {
  (void)state;
  check_against_sim("matmul");
  check_against_sim("small");
}

static void test_per_site_whole_equals_plain(void **state) {
  (void)state;
  assert_int_equal(test_memsnap_in(dir, "signature --json -o plain.json small.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "signature --per-site --json -o sites.json small.mtr"), 0);
  json_object *plain = json_in("plain.json"), *sites = json_in("sites.json");
  json_object *a = first_bin(plain), *b = first_bin(sites);
  assert_true(json_object_array_length(get(sites, "bins")) > 10);
  assert_true(number(a, "references") == number(b, "references"));
  for (int k = 0; k < 17; k++)
    assert_true(number(json_object_array_get_idx(get(a, "reuse_cdf"), (size_t)k), "hits") ==
                number(json_object_array_get_idx(get(b, "reuse_cdf"), (size_t)k), "hits"));
  for (int level = 0; level < 7; level++) {
    json_object *x = get(json_object_array_get_idx(get(a, "alpha"), (size_t)level), "by_reuse");
    json_object *y = get(json_object_array_get_idx(get(b, "alpha"), (size_t)level), "by_reuse");
    for (int k = 0; k < 17; k++) {
      assert_true(number(json_object_array_get_idx(x, (size_t)k), "yes") ==
                  number(json_object_array_get_idx(y, (size_t)k), "yes"));
      assert_true(number(json_object_array_get_idx(x, (size_t)k), "trials") ==
                  number(json_object_array_get_idx(y, (size_t)k), "trials"));
    }
  }
  /* A cap: each site modeled at most 1000 times, the whole program weighted back. */
  assert_int_equal(
      test_memsnap_in(dir, "signature --per-site --site-cap 1000 --json -o capped.json small.mtr"),
      0);
  json_object *capped = json_in("capped.json");
  json_object *bins = get(capped, "bins");
  for (size_t i = 1; i < json_object_array_length(bins); i++)
    assert_true(number(json_object_array_get_idx(bins, i), "modeled") <= 1000);
  assert_true(number(capped, "accesses_simulated") < number(plain, "accesses_simulated"));
  assert_true(number(capped, "accesses_seen") == number(plain, "accesses_seen"));
  json_object_put(capped);
  json_object_put(plain);
  json_object_put(sites);
}

static void test_show_round_trip(void **state) {
  (void)state;
  assert_int_equal(test_memsnap_in(dir, "signature -o m.sig --per-site small.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "signature --per-site --json -o direct.json small.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "show m.sig --json"), 0);
  char *shown = test_read_in(dir, "out"), *direct = test_read_in(dir, "direct.json");
  assert_non_null(shown);
  assert_non_null(direct);
  assert_string_equal(shown, direct);
  free(shown);
  free(direct);
  assert_int_equal(test_memsnap_in(dir, "show m.sig"), 0);
  char *text = test_read_in(dir, "out");
  assert_non_null(strstr(text, "alpha(256,512)"));
  assert_non_null(strstr(text, "depth  65536"));
  assert_non_null(strstr(text, "matmul (matmul.c:"));
  free(text);
}

/* Largest difference of CDF points and of alpha averages between two signatures. */
static void compare(const char *full_name, const char *sampled_name, const char *sample,
                    double *cdf_diff, double *alpha_diff) {
  json_object *full = json_in(full_name), *sampled = json_in(sampled_name);
  json_object *a = first_bin(full), *b = first_bin(sampled);
  *cdf_diff = *alpha_diff = 0;
  for (int k = 0; k < 17; k++) {
    double d = fabs(number(json_object_array_get_idx(get(a, "reuse_cdf"), (size_t)k), "hit_rate") -
                    number(json_object_array_get_idx(get(b, "reuse_cdf"), (size_t)k), "hit_rate"));
    if (d > *cdf_diff) *cdf_diff = d;
  }
  for (int level = 0; level < 7; level++) {
    json_object *x = get(json_object_array_get_idx(get(a, "alpha"), (size_t)level), "avg");
    json_object *y = get(json_object_array_get_idx(get(b, "alpha"), (size_t)level), "avg");
    double d = fabs(number(x, "alpha") - number(y, "alpha"));
    if (d > *alpha_diff) *alpha_diff = d;
  }
  unsigned long on, off;
  assert_int_equal(sscanf(sample, "%luk/%luk", &on, &off), 2);
  assert_true(number(sampled, "sample_on") == on * 1000 &&
              number(sampled, "sample_off") == off * 1000);
  json_object_put(full);
  json_object_put(sampled);
}

static void test_interval_sampling_accuracy(void **state) {
  (void)state;
  static const char *kernels[] = {"matmul", "stencil2d", "stream_add"};
  static const char *samples[] = {"10k/90k", "11k/99k"};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    const char *k = kernels[i];
    assert_int_equal(test_memsnap_in(dir, "signature --json -o full.json %s.mtr", k), 0);
    for (size_t j = 0; j < sizeof samples / sizeof samples[0]; j++) {
      assert_int_equal(test_memsnap_in(dir, "signature --sample %s --json -o sampled.json %s.mtr",
                                       samples[j], k),
                       0);
      double cdf, alpha;
      compare("full.json", "sampled.json", samples[j], &cdf, &alpha);
      fprintf(stderr, "%s: %s sampling: CDF max shift %.4f, alpha max shift %.4f\n", k, samples[j],
              cdf, alpha);
      assert_true(cdf <= 0.01);
      assert_true(alpha <= 0.02);
    }
  }
  /* Without the tracked gaps (every interval cold) stream_add's alphas move. */
  assert_int_equal(test_memsnap_in(dir,
                                   "signature --sample 10k/90k --sample-cold --json -o cold.json "
                                   "stream_add.mtr"),
                   0);
  double cdf, alpha;
  compare("full.json", "cold.json", "10k/90k", &cdf, &alpha);
  assert_true(alpha > 0.05);
}

static void test_errors(void **state) {
  (void)state;
  assert_int_equal(test_memsnap_in(dir, "signature -o ok.sig matmul.mtr"), 0);
  char *text = test_read_in(dir, "ok.sig");
  char *at = strstr(text, "HitRate(2^5) = ");
  assert_non_null(at);
  at[15] = 'z';
  char path[1024];
  snprintf(path, sizeof path, "%s/bad.sig", dir);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  free(text);
  assert_int_equal(test_memsnap_in(dir, "show bad.sig"), 1);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "bad.sig:23: bad number"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "show matmul.mtr"), 1);
  assert_int_equal(test_memsnap_in(dir, "signature --site-cap 5 matmul.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "signature --sample 0/9 matmul.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "signature --width 100 matmul.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "signature --word 512 matmul.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "signature --warmup 10 matmul.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "signature -o never.sig missing.mtr"), 1);
  snprintf(path, sizeof path, "%s/never.sig", dir);
  assert_int_equal(access(path, F_OK), -1);
}

/* Live through Valgrind: a signature of a small run, with the program's exit status. */
static void test_live(void **state) {
  (void)state;
  char kernel[1024];
  assert_int_equal(test_memsnap_in(dir, "signature -o live.sig -- %s 20000",
                                   test_kernel("stream_add", kernel, sizeof kernel)),
                   0);
  assert_int_equal(test_memsnap_in(dir, "show live.sig"), 0);
  char *text = test_read_in(dir, "out");
  assert_non_null(strstr(text, "stream_add"));
  free(text);
  assert_int_equal(test_memsnap_in(dir, "signature -o exit.sig -- %s",
                                   test_kernel("exit3", kernel, sizeof kernel)),
                   3);
}

static void surface_of_signature_equals_trace(const char *trace) {
  assert_int_equal(test_memsnap_in(dir, "signature --widths -o widths.sig %s", trace), 0);
  char *text = test_read_in(dir, "widths.sig");
  assert_non_null(text);
  assert_memory_equal(text, "memsnap signature 2\n", 20);
  assert_non_null(strstr(text, "\nWidths : exact\n"));
  assert_non_null(strstr(text, "\nWidth 256 : References "));
  free(text);
  assert_int_equal(test_memsnap_in(dir, "surface --format csv -o from_trace.csv %s", trace), 0);
  assert_int_equal(test_memsnap_in(dir, "surface --format csv -o from_sig.csv widths.sig"), 0);
  char *from_trace = test_read_in(dir, "from_trace.csv"),
       *from_sig = test_read_in(dir, "from_sig.csv");
  assert_non_null(from_trace);
  assert_non_null(from_sig);
  assert_non_null(strstr(from_trace, "\n4,1,4,"));
  assert_string_equal(from_sig, from_trace);
  free(from_trace);
  free(from_sig);
}

static void test_widths(void **state) {
  (void)state;
  surface_of_signature_equals_trace("small.mtr");
  surface_of_signature_equals_trace("stencil2d.mtr");
  assert_int_equal(test_memsnap_in(dir, "show widths.sig"), 0);
  char *out = test_read_in(dir, "out");
  assert_non_null(strstr(out, "hit rates by width (exact)"));
  free(out);
  assert_int_equal(test_memsnap_in(dir, "signature --widths-shards 0.1 -o shards.sig small.mtr"),
                   0);
  assert_int_equal(test_memsnap_in(dir, "show shards.sig"), 0);
  out = test_read_in(dir, "out");
  assert_non_null(strstr(out, "SHARDS at rate 0.1"));
  free(out);
  char *sig = test_read_in(dir, "shards.sig");
  assert_non_null(strstr(sig, "\nWidths : shards 0.1\n")); /* not 0.10000000000000001 */
  free(sig);
  for (int order = 0; order < 2; order++) {
    assert_int_equal(
        test_memsnap_in(dir, "signature %s small.mtr",
                        order ? "--widths-shards 0.1 --widths" : "--widths --widths-shards 0.1"),
        2);
    char *err = test_read_in(dir, "err");
    assert_non_null(strstr(err, "give --widths or --widths-shards, not both"));
    free(err);
  }
  static const char *bad[] = {"0", "2", "1", "0.5x", "-0.1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(test_memsnap_in(dir, "signature --widths-shards %s small.mtr", bad[i]), 2);
    char *err = test_read_in(dir, "err");
    assert_non_null(strstr(err, "--widths-shards"));
    free(err);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cdf_equals_sim),  cmocka_unit_test(test_per_site_whole_equals_plain),
      cmocka_unit_test(test_show_round_trip), cmocka_unit_test(test_interval_sampling_accuracy),
      cmocka_unit_test(test_errors),          cmocka_unit_test(test_live),
      cmocka_unit_test(test_widths),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

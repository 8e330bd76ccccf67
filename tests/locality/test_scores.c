/* Locality scores: hand-worked streams (definitions of scores.h), and the kernels of the
 * issue: unit-stride streaming scores spatial ~1 and temporal ~0, a random gather over a
 * large table ~0 on both, a blocked matrix multiply high on both (and above the naive one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>

#include "memsnap/error.h"
#include "memsnap/scores.h"
#include "testutil.h"

static ms_scores scores_of(const ms_access *accesses, size_t count, int lookback) {
  ms_scores_config config;
  ms_scores_config_default(&config);
  config.lookback = lookback;
  ms_scores_builder *builder;
  assert_int_equal(ms_scores_builder_new(&config, &builder), MS_OK);
  ms_batch batch = {(ms_access *)accesses, count, count};
  assert_int_equal(ms_scores_builder_add(builder, &batch), MS_OK);
  ms_scores scores;
  assert_int_equal(ms_scores_builder_result(builder, &scores), MS_OK);
  ms_scores_builder_free(builder);
  return scores;
}

static ms_access load(uint64_t address, uint8_t size, uint32_t site) {
  return (ms_access){.address = address, .site = site, .thread = 0, .size = size, .kind = MS_LOAD};
}

/* Words A B A (8-byte words 0x1000, 0x1008): temporal weights 0, 0 (first references) and
 * r = 2 (one other word between): bin i = 1, weight (16 - 1) / 16. Strides: none for the
 * first access, 1 word for B, 1 word for A: spatial (0 + 1 + 1) / 3. */
static void test_hand_worked(void **state) {
  (void)state;
  ms_access a[] = {load(0x1000, 8, 0), load(0x1008, 8, 1), load(0x1000, 8, 0)};
  ms_scores s = scores_of(a, 3, 32);
  assert_true(fabs(s.whole.temporal - (15.0 / 16.0) / 3.0) < 1e-12);
  assert_true(fabs(s.whole.spatial - 2.0 / 3.0) < 1e-12);
  assert_int_equal(s.site_count, 2);
  /* site 0: two accesses, spatial (0 + 1) / 2, temporal (0 + 15/16) / 2 */
  const ms_locality_score *site0 = s.sites[0].site == 0 ? &s.sites[0] : &s.sites[1];
  assert_int_equal(site0->accesses, 2);
  assert_true(fabs(site0->spatial - 0.5) < 1e-12);
  assert_true(fabs(site0->temporal - 15.0 / 32.0) < 1e-12);
  /* contributions add up to the whole-run scores */
  assert_true(fabs(s.sites[0].spatial_share + s.sites[1].spatial_share - s.whole.spatial) < 1e-12);
  assert_true(fabs(s.sites[0].temporal_share + s.sites[1].temporal_share - s.whole.temporal) <
              1e-12);
  ms_scores_clear(&s);
}

/* The same word again and again: r = 1 (bin 0, weight 1) after the first; no non-zero
 * stride. A 16-byte access spans two words: two references. Strides of 3 words: 1/3. */
static void test_reuse_and_strides(void **state) {
  (void)state;
  ms_access a[100];
  for (int i = 0; i < 100; i++)
    a[i] = load(0x2000, 8, 0);
  ms_scores s = scores_of(a, 100, 32);
  assert_true(fabs(s.whole.temporal - 99.0 / 100.0) < 1e-12);
  assert_true(s.whole.spatial == 0.0);
  ms_scores_clear(&s);
  for (int i = 0; i < 100; i++)
    a[i] = load(0x2000 + 24u * (unsigned)i, 16, 0);
  s = scores_of(a, 100, 32);
  assert_int_equal(s.whole.references, 200);
  assert_true(fabs(s.whole.spatial - (99.0 / 3.0) / 100.0) < 1e-12);
  ms_scores_clear(&s);
  /* lookback 1 against 2: a walk interleaving two far streams finds stride 1 only within a
   * window of 2 accesses */
  for (int i = 0; i < 100; i++)
    a[i] = load((i % 2 ? 0x100000u : 0x2000u) + 8u * (unsigned)(i / 2), 8, 0);
  s = scores_of(a, 100, 1);
  assert_true(s.whole.spatial < 0.01);
  ms_scores_clear(&s);
  s = scores_of(a, 100, 2);
  /* access 0: no window; access 1: the other stream only, (0x100000 - 0x2000) / 8 words away */
  assert_true(fabs(s.whole.spatial - (98.0 + 8.0 / (0x100000 - 0x2000)) / 100.0) < 1e-12);
  ms_scores_clear(&s);
}

static void test_config_errors(void **state) {
  (void)state;
  ms_scores_config config;
  ms_scores_config_default(&config);
  config.word = 12;
  assert_int_equal(ms_scores_config_check(&config), MS_ERR_ARG);
  ms_scores_config_default(&config);
  config.lookback = 0;
  assert_int_equal(ms_scores_config_check(&config), MS_ERR_ARG);
  char *dir = test_tempdir();
  assert_int_equal(test_memsnap_in(dir, "scores --lookback 0 x.mtr"), 2);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "lookback"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "scores"), 2);
  assert_int_not_equal(test_memsnap_in(dir, "scores missing.mtr"), 0);
  test_rmdir(dir);
}

/* ---- kernels ---- */

typedef struct kernel_scores {
  double spatial, temporal;               /* whole run */
  double kernel_spatial, kernel_temporal; /* the sites of function `function`, weighted */
} kernel_scores;

static kernel_scores run_kernel(const char *name, const char *args, const char *function) {
  char kernel[1024];
  test_kernel(name, kernel, sizeof kernel);
  char *dir = test_tempdir();
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o k.mtr -- %s %s", kernel, args), 0);
  assert_int_equal(test_memsnap_in(dir, "scores --json --top all -o scores.json k.mtr"), 0);
  char path[1024];
  snprintf(path, sizeof path, "%s/scores.json", dir);
  json_object *root = json_object_from_file(path), *whole, *sites, *value;
  assert_non_null(root);
  assert_true(json_object_object_get_ex(root, "whole", &whole));
  assert_true(json_object_object_get_ex(root, "sites", &sites));
  kernel_scores k = {0};
  assert_true(json_object_object_get_ex(whole, "spatial", &value));
  k.spatial = json_object_get_double(value);
  assert_true(json_object_object_get_ex(whole, "temporal", &value));
  k.temporal = json_object_get_double(value);
  double accesses = 0, references = 0;
  for (size_t i = 0; i < json_object_array_length(sites); i++) {
    json_object *site = json_object_array_get_idx(sites, i), *fn;
    if (!json_object_object_get_ex(site, "function", &fn) ||
        strcmp(json_object_get_string(fn), function))
      continue;
    json_object_object_get_ex(site, "accesses", &value);
    double n = (double)json_object_get_uint64(value);
    json_object_object_get_ex(site, "references", &value);
    double r = (double)json_object_get_uint64(value);
    json_object_object_get_ex(site, "spatial", &value);
    k.kernel_spatial += n * json_object_get_double(value);
    json_object_object_get_ex(site, "temporal", &value);
    k.kernel_temporal += r * json_object_get_double(value);
    accesses += n;
    references += r;
  }
  assert_true(accesses > 0); /* the kernel's sites carry their function name */
  k.kernel_spatial /= accesses;
  k.kernel_temporal /= references;
  printf("%-15s whole run: spatial %.4f temporal %.4f | %s(): spatial %.4f temporal %.4f\n", name,
         k.spatial, k.temporal, function, k.kernel_spatial, k.kernel_temporal);
  json_object_put(root);
  test_rmdir(dir);
  return k;
}

static void test_streaming(void **state) {
  (void)state;
  kernel_scores k = run_kernel("stream_add", "200000", "stream_add");
  assert_true(k.kernel_spatial > 0.95);
  assert_true(k.kernel_temporal < 0.05);
  assert_true(k.spatial > 0.9); /* the run is mostly the kernel and its initialization */
  assert_true(k.temporal < 0.1);
}

static void test_random_gather(void **state) {
  (void)state;
  kernel_scores k = run_kernel("random_gather", "1048576 200000", "random_gather");
  assert_true(k.kernel_spatial < 0.05);
  assert_true(k.kernel_temporal < 0.05);
}

static void test_blocked_matmul(void **state) {
  (void)state;
  kernel_scores blocked = run_kernel("matmul_blocked", "96", "matmul_blocked");
  assert_true(blocked.kernel_spatial > 0.8);
  assert_true(blocked.kernel_temporal > 0.5);
  assert_true(blocked.spatial > 0.8);
  assert_true(blocked.temporal > 0.5);
  kernel_scores naive = run_kernel("matmul", "96", "matmul");
  assert_true(blocked.kernel_temporal > naive.kernel_temporal);
  assert_true(blocked.kernel_spatial > naive.kernel_spatial);
}

/* The locality chart: one labelled point per input. */
static void test_plot_scores(void **state) {
  (void)state;
  char stream[1024], blocked[1024];
  test_kernel("stream_add", stream, sizeof stream);
  test_kernel("matmul_blocked", blocked, sizeof blocked);
  char *dir = test_tempdir();
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o stream.mtr -- %s 20000", stream), 0);
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o tiled.mtr -- %s 48", blocked), 0);
  assert_int_equal(test_memsnap_in(dir, "plot scores stream.mtr tiled.mtr -o chart.svg"), 0);
  char *svg = test_read_in(dir, "chart.svg");
  assert_non_null(svg);
  assert_non_null(strstr(svg, "spatial score"));
  assert_non_null(strstr(svg, "temporal score"));
  assert_non_null(strstr(svg, ">stream<"));
  assert_non_null(strstr(svg, ">tiled<"));
  free(svg);
  assert_int_equal(test_memsnap_in(dir, "plot scores stream.mtr tiled.mtr -o chart.png"), 0);
  char *png = test_read_in(dir, "chart.png");
  assert_non_null(png);
  assert_memory_equal(png, "\x89PNG", 4);
  free(png);
  assert_int_equal(test_memsnap_in(dir, "signature -o s.sig stream.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "plot scores s.sig -o c2.png"), 2);
  assert_null(test_read_in(dir, "c2.png"));
  test_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_worked),   cmocka_unit_test(test_reuse_and_strides),
      cmocka_unit_test(test_config_errors), cmocka_unit_test(test_streaming),
      cmocka_unit_test(test_random_gather), cmocka_unit_test(test_blocked_matmul),
      cmocka_unit_test(test_plot_scores),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

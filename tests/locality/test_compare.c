/* Surface similarity (dissertation Table 6.1: mean absolute difference over the common
 * grid): hand-built surfaces with hand-computed differences, identical inputs give 0, and
 * the `memsnap compare` matrix on traces and a signature. `memsnap compare SOURCE SOURCE`:
 * a trace against itself gives exactly 0 everywhere; two kernels' hit rates equal those
 * `memsnap sim --hierarchy NAME` prints for each trace alone, and the surface differences
 * those of the CSV surfaces of `memsnap surface`. */
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

static void set_grid(ms_surface *s, const uint32_t *widths, int wn, const uint64_t *depths,
                     int dn) {
  memset(s, 0, sizeof *s);
  s->width_count = wn;
  s->depth_count = dn;
  memcpy(s->widths, widths, (size_t)wn * sizeof *widths);
  memcpy(s->depths, depths, (size_t)dn * sizeof *depths);
  s->sample_rate = 1.0;
}

static void test_hand_built(void **state) {
  (void)state;
  static ms_surface a, b;
  const uint32_t wa[] = {4, 8};
  const uint64_t da[] = {1, 2};
  set_grid(&a, wa, 2, da, 2);
  a.hit_rate[0][0] = 0.10, a.hit_rate[0][1] = 0.20;
  a.hit_rate[1][0] = 0.50, a.hit_rate[1][1] = 0.90;
  set_grid(&b, wa, 2, da, 2);
  b.hit_rate[0][0] = 0.30, b.hit_rate[0][1] = 0.20;
  b.hit_rate[1][0] = 0.40, b.hit_rate[1][1] = 0.50;
  /* |0.1-0.3| + |0.2-0.2| + |0.5-0.4| + |0.9-0.5| = 0.2 + 0 + 0.1 + 0.4 = 0.7, over 4 */
  double d;
  int points;
  assert_int_equal(ms_surface_difference(&a, &b, &d, &points), MS_OK);
  assert_int_equal(points, 4);
  assert_true(fabs(d - 0.175) < 1e-12);
  assert_int_equal(ms_surface_difference(&b, &a, &d, &points), MS_OK);
  assert_true(fabs(d - 0.175) < 1e-12);
  assert_int_equal(ms_surface_difference(&a, &a, &d, &points), MS_OK);
  assert_true(d == 0.0);

  /* b on widths {8, 16} x depths {2, 4}: the common grid is the one point (8, 2) */
  const uint32_t wb[] = {8, 16};
  const uint64_t db[] = {2, 4};
  set_grid(&b, wb, 2, db, 2);
  b.hit_rate[0][0] = 0.65; /* (8, 2) against a's 0.90 */
  b.hit_rate[0][1] = 0.0, b.hit_rate[1][0] = 1.0, b.hit_rate[1][1] = 1.0;
  assert_int_equal(ms_surface_difference(&a, &b, &d, &points), MS_OK);
  assert_int_equal(points, 1);
  assert_true(fabs(d - 0.25) < 1e-12);

  /* no common point */
  const uint32_t wc[] = {64};
  set_grid(&b, wc, 1, db, 2);
  assert_int_equal(ms_surface_difference(&a, &b, &d, &points), MS_ERR_ARG);
  assert_int_equal(points, 0);
}

static double matrix_cell(json_object *root, int i, int j) {
  json_object *matrix;
  assert_true(json_object_object_get_ex(root, "mean_absolute_difference", &matrix));
  return json_object_get_double(
      json_object_array_get_idx(json_object_array_get_idx(matrix, (size_t)i), (size_t)j));
}

static void test_cli_matrix(void **state) {
  (void)state;
  char stream[1024], matmul[1024];
  test_kernel("stream_add", stream, sizeof stream);
  test_kernel("matmul", matmul, sizeof matmul);
  char *dir = test_tempdir();
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o s.mtr -- %s 20000", stream), 0);
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o m.mtr -- %s 40", matmul), 0);
  assert_int_equal(test_run("cp '%s/s.mtr' '%s/s2.mtr'", dir, dir), 0);
  assert_int_equal(test_memsnap_in(dir, "compare --format json -o matrix.json s.mtr s2.mtr m.mtr"),
                   0);
  char path[1024];
  snprintf(path, sizeof path, "%s/matrix.json", dir);
  json_object *root = json_object_from_file(path);
  assert_non_null(root);
  assert_true(matrix_cell(root, 0, 1) == 0.0); /* identical inputs */
  assert_true(matrix_cell(root, 0, 0) == 0.0);
  double sm = matrix_cell(root, 0, 2);
  assert_true(sm > 0.01); /* streaming and matmul differ */
  assert_true(matrix_cell(root, 2, 0) == sm);
  json_object_put(root);

  /* the matrix cell equals the difference of the two surfaces computed separately */
  assert_int_equal(test_memsnap_in(dir, "surface --format csv -o s.csv s.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "surface --format csv -o m.csv m.mtr"), 0);
  char *s_csv = test_read_in(dir, "s.csv"), *m_csv = test_read_in(dir, "m.csv");
  assert_non_null(s_csv);
  assert_non_null(m_csv);
  char *p = strchr(s_csv, '\n') + 1, *q = strchr(m_csv, '\n') + 1;
  double sum = 0;
  int n = 0;
  unsigned w1, w2;
  unsigned long long d1, d2, z1, z2, r1, r2;
  double h1, h2;
  while (sscanf(p, "%u,%llu,%llu,%lf,%llu", &w1, &d1, &z1, &h1, &r1) == 5 &&
         sscanf(q, "%u,%llu,%llu,%lf,%llu", &w2, &d2, &z2, &h2, &r2) == 5) {
    assert_int_equal(w1, w2);
    assert_int_equal(d1, d2);
    sum += fabs(h1 - h2);
    n++;
    p = strchr(p, '\n') + 1;
    q = strchr(q, '\n') + 1;
  }
  assert_int_equal(n, 8 * 17);
  assert_true(fabs(sum / n - sm) < 1e-6); /* the CSV rounds to 9 decimals */
  free(s_csv);
  free(m_csv);

  /* a signature is an input too */
  assert_int_equal(test_memsnap_in(dir, "signature -o s.sig s.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "compare --format csv s.sig s.sig m.mtr"), 0);
  char *out = test_read_in(dir, "out");
  assert_non_null(strstr(out, "s.sig,0.000000,0.000000,"));
  free(out);

  /* errors */
  assert_int_equal(test_memsnap_in(dir, "compare s.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "compare --format xml s.mtr m.mtr"), 2);
  assert_int_not_equal(test_memsnap_in(dir, "compare -o bad.txt s.mtr missing.mtr"), 0);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "missing.mtr"));
  free(err);
  assert_null(test_read_in(dir, "bad.txt"));
  test_rmdir(dir);
}

/* --- memsnap compare SOURCE SOURCE (two sources on the 46 hierarchies and the surface) --- */

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  assert_true(json_object_object_get_ex(o, key, &v));
  return v;
}

static double get_double(json_object *o, const char *key) {
  return json_object_get_double(get(o, key));
}

static json_object *load_json(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  json_object *root = json_object_from_file(path);
  assert_non_null(root);
  return root;
}

/* Mean and max |a - b| of the CSV surfaces of `memsnap surface` (rows width,depth,size,hit
 * rate,...), at every width (width 0) or one. */
static void csv_difference(const char *a, const char *b, unsigned width, double *mean, double *max,
                           int *points) {
  const char *p = strchr(a, '\n') + 1, *q = strchr(b, '\n') + 1;
  unsigned w1, w2;
  unsigned long long d1, d2, z1, z2, r1, r2;
  double h1, h2, sum = 0;
  *max = 0;
  *points = 0;
  while (sscanf(p, "%u,%llu,%llu,%lf,%llu", &w1, &d1, &z1, &h1, &r1) == 5 &&
         sscanf(q, "%u,%llu,%llu,%lf,%llu", &w2, &d2, &z2, &h2, &r2) == 5) {
    assert_int_equal(w1, w2);
    assert_int_equal(d1, d2);
    if (!width || w1 == width) {
      sum += fabs(h1 - h2);
      *max = fmax(*max, fabs(h1 - h2));
      (*points)++;
    }
    p = strchr(p, '\n') + 1;
    q = strchr(q, '\n') + 1;
  }
  *mean = *points ? sum / *points : 0;
}

static void test_cli_two_sources(void **state) {
  (void)state;
  char stream[1024], matmul[1024];
  test_kernel("stream_add", stream, sizeof stream);
  test_kernel("matmul", matmul, sizeof matmul);
  char *dir = test_tempdir();
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o s.mtr -- %s 5000", stream), 0);
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o m.mtr -- %s 24", matmul), 0);

  /* a trace against itself: every difference is exactly 0 */
  assert_int_equal(test_memsnap_in(dir, "compare --json -o self.json s.mtr s.mtr"), 0);
  json_object *root = load_json(dir, "self.json");
  json_object *hierarchies = get(root, "hierarchies");
  assert_int_equal(json_object_array_length(hierarchies), 46);
  for (size_t h = 0; h < 46; h++) {
    json_object *levels = get(json_object_array_get_idx(hierarchies, h), "levels");
    assert_true(json_object_array_length(levels) >= 1);
    for (size_t l = 0; l < json_object_array_length(levels); l++) {
      json_object *level = json_object_array_get_idx(levels, l);
      json_object *rates = get(level, "hit_rates");
      assert_true(json_object_get_double(json_object_array_get_idx(rates, 0)) ==
                  json_object_get_double(json_object_array_get_idx(rates, 1)));
      assert_true(get_double(level, "difference") == 0.0);
    }
  }
  json_object *levels = get(root, "levels");
  assert_true(json_object_array_length(levels) >= 2);
  for (size_t l = 0; l < json_object_array_length(levels); l++) {
    assert_true(get_double(json_object_array_get_idx(levels, l), "mean") == 0.0);
    assert_true(get_double(json_object_array_get_idx(levels, l), "max") == 0.0);
  }
  json_object *surface = get(root, "surface");
  assert_int_equal(json_object_get_int(get(surface, "points")), 8 * 17);
  assert_true(get_double(surface, "mean") == 0.0 && get_double(surface, "max") == 0.0);
  assert_int_equal(json_object_get_int(get(get(surface, "width_512"), "points")), 17);
  json_object_put(root);

  /* two kernels: each hit rate is what `memsnap sim --hierarchy NAME` prints for that
   * trace alone; per level, mean and max of the differences over the hierarchies */
  assert_int_equal(test_memsnap_in(dir, "compare --json -o two.json s.mtr m.mtr"), 0);
  root = load_json(dir, "two.json");
  hierarchies = get(root, "hierarchies");
  assert_int_equal(json_object_array_length(hierarchies), 46);
  double sum[8] = {0}, max[8] = {0};
  int with[8] = {0};
  const char *traces[2] = {"s.mtr", "m.mtr"};
  for (size_t h = 0; h < 46; h++) {
    json_object *entry = json_object_array_get_idx(hierarchies, h);
    const char *name = json_object_get_string(get(entry, "name"));
    char expected_name[16];
    snprintf(expected_name, sizeof expected_name, "hpcmo-%02zu", h + 1);
    assert_string_equal(name, expected_name);
    json_object *mine = get(entry, "levels");
    double rate[2][8];
    for (int t = 0; t < 2; t++) {
      assert_int_equal(
          test_memsnap_in(dir, "sim --hierarchy %s --json --top 0 %s", name, traces[t]), 0);
      json_object *sim = load_json(dir, "out");
      json_object *sim_levels =
          get(json_object_array_get_idx(get(sim, "hierarchies"), 0), "levels");
      assert_int_equal(json_object_array_length(sim_levels), json_object_array_length(mine));
      for (size_t l = 0; l < json_object_array_length(sim_levels); l++)
        rate[t][l] = get_double(json_object_array_get_idx(sim_levels, l), "hit_rate");
      json_object_put(sim);
    }
    for (size_t l = 0; l < json_object_array_length(mine); l++) {
      json_object *level = json_object_array_get_idx(mine, l);
      json_object *rates = get(level, "hit_rates");
      assert_int_equal(json_object_get_int(get(level, "level")), (int)l + 1);
      assert_true(fabs(json_object_get_double(json_object_array_get_idx(rates, 0)) - rate[0][l]) <
                  1e-12);
      assert_true(fabs(json_object_get_double(json_object_array_get_idx(rates, 1)) - rate[1][l]) <
                  1e-12);
      double d = fabs(rate[0][l] - rate[1][l]);
      assert_true(fabs(get_double(level, "difference") - d) < 1e-12);
      sum[l] += d;
      max[l] = fmax(max[l], d);
      with[l]++;
    }
  }
  levels = get(root, "levels");
  double l1_max = 0;
  for (size_t i = 0; i < json_object_array_length(levels); i++) {
    json_object *level = json_object_array_get_idx(levels, i);
    int l = json_object_get_int(get(level, "level")) - 1;
    assert_int_equal(json_object_get_int(get(level, "hierarchies")), with[l]);
    assert_true(fabs(get_double(level, "mean") - sum[l] / with[l]) < 1e-12);
    assert_true(fabs(get_double(level, "max") - max[l]) < 1e-12);
    if (l == 0) l1_max = max[l];
  }
  assert_true(l1_max > 0.01); /* streaming and matmul differ */

  /* the surfaces: against the CSV surfaces of `memsnap surface` (9 decimals) */
  assert_int_equal(test_memsnap_in(dir, "surface --format csv -o s.csv s.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "surface --format csv -o m.csv m.mtr"), 0);
  char *s_csv = test_read_in(dir, "s.csv"), *m_csv = test_read_in(dir, "m.csv");
  assert_non_null(s_csv);
  assert_non_null(m_csv);
  double mean, maximum;
  int points;
  surface = get(root, "surface");
  csv_difference(s_csv, m_csv, 0, &mean, &maximum, &points);
  assert_int_equal(json_object_get_int(get(surface, "points")), points);
  assert_true(fabs(get_double(surface, "mean") - mean) < 1e-6);
  assert_true(fabs(get_double(surface, "max") - maximum) < 1e-6);
  assert_true(maximum > 0.01);
  csv_difference(s_csv, m_csv, 512, &mean, &maximum, &points);
  assert_int_equal(points, 17);
  json_object *w512 = get(surface, "width_512");
  assert_int_equal(json_object_get_int(get(w512, "points")), points);
  assert_true(fabs(get_double(w512, "mean") - mean) < 1e-6);
  assert_true(fabs(get_double(w512, "max") - maximum) < 1e-6);
  free(s_csv);
  free(m_csv);
  json_object_put(root);

  /* the table says the same */
  assert_int_equal(test_memsnap_in(dir, "compare s.mtr m.mtr"), 0);
  char *out = test_read_in(dir, "out");
  assert_non_null(strstr(out, "A: s.mtr ("));
  assert_non_null(strstr(out, "hpcmo-46"));
  assert_non_null(strstr(out, "  L1 mean "));
  free(out);

  /* --matrix keeps the similarity matrix for two inputs */
  assert_int_equal(test_memsnap_in(dir, "compare --matrix --format csv s.mtr m.mtr"), 0);
  out = test_read_in(dir, "out");
  assert_non_null(strstr(out, "input,s.mtr,m.mtr\n"));
  free(out);

  /* errors: message naming the culprit, non-zero exit, no output file */
  assert_int_equal(test_memsnap_in(dir, "compare -o bad.json --json s.mtr missing.mtr"), 1);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "missing.mtr"));
  free(err);
  assert_null(test_read_in(dir, "bad.json"));
  assert_int_equal(test_run("printf 'MTR garbage' > '%s/junk.mtr'", dir), 0);
  assert_int_equal(test_memsnap_in(dir, "compare -o bad.json s.mtr junk.mtr"), 1);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "junk.mtr"));
  free(err);
  assert_null(test_read_in(dir, "bad.json"));
  assert_int_equal(test_memsnap_in(dir, "signature -o s.sig s.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "compare s.sig m.mtr"), 2);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "s.sig"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "compare --format csv s.mtr m.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "compare --footprint 1x s.mtr m.mtr"), 2);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "--footprint"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "compare --length 10 s.mtr s.mtr m.mtr"), 2);
  /* --footprint on a plain trace when the other is not a seed: plain traces are not
   * expanded, so only seeds take it */
  assert_int_equal(test_memsnap_in(dir, "compare --json --length 100 s.mtr s.mtr"), 0);
  test_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_built),
      cmocka_unit_test(test_cli_matrix),
      cmocka_unit_test(test_cli_two_sources),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

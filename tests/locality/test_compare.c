/* Surface similarity (dissertation Table 6.1: mean absolute difference over the common
 * grid): hand-built surfaces with hand-computed differences, identical inputs give 0, and
 * the `memsnap compare` matrix on traces and a signature. */
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_built),
      cmocka_unit_test(test_cli_matrix),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Smoke checks on the application-shaped kernels of tests/kernels (the workload set of
 * bench/workloads.sh), at sizes far below their defaults so that all of them together take
 * seconds: each runs correctly under capture (its own check passes: exit status 0), and
 * record, profile and verify succeed on it; the profile covers every access of the
 * executable that the trace holds, and every site's own accesses match (the sites are
 * exact at these sizes, order aside). At these sizes the dense codes (ADI, SSOR, FFT,
 * multigrid, the triangular nests) also replay exactly in order. How far the replay is
 * from the trace at realistic sizes is measured by bench/run-apps.sh (docs/accuracy.md,
 * "Real applications"), not asserted here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

static char *dir;

TEST_SCRATCH_GROUP(dir)

typedef struct app {
  const char *name, *args;
  int exact_in_order; /* the replay equals the trace in program order */
} app;

static const app apps[] = {
    {"adi", "10 1", 1},   {"ssor", "10 1", 1},         {"fft3d", "8 1", 1},
    {"mg", "3 1", 1},     {"triangular", "all 16", 1}, {"cg", "100 3", 0},
    {"isort", "15 1", 0}, {"hashtab", "2000 1", 0},    {"bintree", "2000 1", 0},
};

static void assert_out_contains(const char *name, const char *text) {
  char *out = test_read_in(dir, "out");
  assert_non_null(out);
  if (!strstr(out, text)) fail_msg("%s: '%s' not in:\n%s", name, text, out);
  free(out);
}

static void apps_record_profile_and_verify(void **state) {
  (void)state;
  for (size_t a = 0; a < sizeof apps / sizeof *apps; a++) {
    const app *A = &apps[a];
    char kernel_path[1024];
    test_kernel(A->name, kernel_path, sizeof kernel_path);
    if (test_memsnap_in(dir, "record -q -o app.mtr -- %s %s", kernel_path, A->args) != 0)
      fail_msg("%s %s: record (or the program's own check) failed", A->name, A->args);
    assert_int_equal(test_memsnap_in(dir, "profile -q -o app.psnap app.mtr"), 0);
    assert_int_equal(test_memsnap_in(dir, "verify --no-cache app.psnap app.mtr"), 0);
    assert_out_contains(A->name, "exact match per site (each site's own accesses, order aside): "
                                 "100.0000%");
    if (A->exact_in_order) {
      assert_out_contains(A->name, "exact match: 100.0000%");
      assert_out_contains(A->name, "first divergence: none");
    }
  }
}

static void assert_file_contains(const char *file, const char *name, const char *text) {
  char *out = test_read_in(dir, file);
  assert_non_null(out);
  if (!strstr(out, text)) fail_msg("%s: '%s' not in:\n%s", name, text, out);
  free(out);
}

/* Whole-application orders at the workload set's small sizes: bodies of 50-150 sites
 * whose loops repeat thousands of times fold in the default order window (1024) and cap,
 * so SSOR's and the FFT's replays are exact in program order; with the old defaults
 * (window 64, cap 8192) they were not, and the summary says so and names the cap. */
static void application_orders_are_exact(void **state) {
  (void)state;
  const char *runs[][2] = {{"ssor", "22 3"}, {"fft3d", "16 2"}};
  for (int r = 0; r < 2; r++) {
    char kernel_path[1024];
    test_kernel(runs[r][0], kernel_path, sizeof kernel_path);
    assert_int_equal(test_memsnap_in(dir, "record -q -o app.mtr -- %s %s", kernel_path, runs[r][1]),
                     0);
    assert_int_equal(test_memsnap_in(dir, "profile -o app.psnap app.mtr"), 0);
    assert_file_contains("err", runs[r][0], "every site exact, order exact; selection executable");
    assert_file_contains("err", runs[r][0], "% of the stream)");
    assert_int_equal(test_memsnap_in(dir, "verify --no-cache app.psnap app.mtr"), 0);
    assert_out_contains(runs[r][0], "exact match: 100.0000%");
    assert_int_equal(
        test_memsnap_in(dir, "profile --order-window 64 --order-cap 8192 -o app.psnap app.mtr"), 0);
    assert_file_contains("err", runs[r][0],
                         "order lossy in 1 of 1 threads (over --order-cap 8192: path counts)");
    /* --lossless keeps the paths in periods (512 at most) by default; show says so */
    assert_int_equal(test_memsnap_in(dir, "profile --lossless --order-window 64 --order-cap 8192 "
                                          "-o app.psnap app.mtr"),
                     0);
    assert_int_equal(test_memsnap_in(dir, "show app.psnap"), 0);
    assert_out_contains(runs[r][0], "order lossy (");
    assert_out_contains(runs[r][0], " path counts in periods of ");
  }
}

/* --fidelity: mg's interpolation loads (inner loops of 1 or 2 trips by parity, grids of
 * every level) go over the low site cap, and the summary names it; at normal (2048 terms a
 * site) and high fidelity they stay exact and the whole run replays exactly. */
static void fidelity_levels(void **state) {
  (void)state;
  char kernel_path[1024];
  test_kernel("mg", kernel_path, sizeof kernel_path);
  assert_int_equal(test_memsnap_in(dir, "record -q -o app.mtr -- %s 5 1", kernel_path), 0);
  assert_int_equal(test_memsnap_in(dir, "profile -o app.psnap app.mtr"), 0);
  assert_file_contains("err", "mg normal", "every site exact, order exact");
  assert_int_equal(test_memsnap_in(dir, "verify --no-cache app.psnap app.mtr"), 0);
  assert_out_contains("mg normal", "exact match: 100.0000%");
  assert_int_equal(test_memsnap_in(dir, "profile --fidelity high -o app.psnap app.mtr"), 0);
  assert_file_contains("err", "mg high", "every site exact, order exact");
  assert_int_equal(test_memsnap_in(dir, "verify --no-cache app.psnap app.mtr"), 0);
  assert_out_contains("mg high", "exact match: 100.0000%");
  assert_int_equal(test_memsnap_in(dir, "profile --fidelity low -o app.psnap app.mtr"), 0);
  assert_file_contains("err", "mg low", "(over --site-cap 128: ");
  assert_int_equal(test_memsnap_in(dir, "profile --fidelity highest -o app.psnap app.mtr"), 2);
  assert_file_contains("err", "mg", "--fidelity: expected low, normal or high, got 'highest'");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(apps_record_profile_and_verify),
      cmocka_unit_test(application_orders_are_exact),
      cmocka_unit_test(fidelity_levels),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

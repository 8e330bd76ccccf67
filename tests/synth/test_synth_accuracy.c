/* How closely seeds imitate the programs they were made from (issue 6): every test kernel
 * is recorded, its signature taken and a seed generated (`memsnap record`, `signature`,
 * `synth`); the seed's cache surface and hierarchy hit rates are measured against the
 * program's own trace with `memsnap surface` (fully-associative LRU, 8 widths x 17
 * depths) and `memsnap sim --all-catalog` (the 46 hierarchies of Table 4.2 of
 * chameleon-weinberg-dissertation-2008.txt): the oracle is the program itself.
 *
 * Asserted, per kernel (signatures with the width rows, `signature --widths`): issue 6's
 * 1% bar on the surface (met by every kernel but stream_add_static), the 512-byte width
 * within 0.002 for plain seeds, and mean absolute errors at most the figures measured when the bounds were set
 * (docs/proxy.md, "How close a seed comes") plus a margin for the run-to-run variation of
 * the recorded trace (Valgrind under another directory and environment: surface 0.001,
 * L1 0.002, L2 0.025 measured). The other bars (1% L1 and L2, 2% for unique-index seeds)
 * are printed next to the figures; docs/proxy.md says why some kernels miss them. The
 * dissertation's signature without width rows is checked on one kernel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>

#include "memsnap_kernels.h"
#include "testutil.h"

#define WIDTHS 8
#define DEPTHS 17
#define HIERARCHIES 46

static json_object *read_json(const char *dir, const char *name) {
  char *text = test_read_in(dir, name);
  assert_non_null(text);
  json_object *object = json_tokener_parse(text);
  free(text);
  assert_non_null(object);
  return object;
}

static json_object *get(json_object *object, const char *key) {
  json_object *value = NULL;
  assert_true(json_object_object_get_ex(object, key, &value));
  return value;
}

/* hit_rates[w][d] of `memsnap surface --format json` (widths 4..512). */
static void surface_of(const char *dir, const char *input, double rates[WIDTHS][DEPTHS]) {
  assert_int_equal(test_memsnap_in(dir, "surface --format json %s", input), 0);
  json_object *surface = read_json(dir, "out");
  json_object *widths = get(surface, "widths");
  assert_int_equal(json_object_array_length(widths), WIDTHS);
  for (int w = 0; w < WIDTHS; w++) {
    json_object *row = get(json_object_array_get_idx(widths, (size_t)w), "hit_rates");
    assert_int_equal(json_object_array_length(row), DEPTHS);
    for (int d = 0; d < DEPTHS; d++)
      rates[w][d] = json_object_get_double(json_object_array_get_idx(row, (size_t)d));
  }
  json_object_put(surface);
}

/* L1 and L2 hit rates of the 46 evaluation hierarchies. */
static void hierarchy_rates(const char *dir, const char *input, double rates[HIERARCHIES][2]) {
  assert_int_equal(test_memsnap_in(dir, "sim --all-catalog --json --top 0 %s", input), 0);
  json_object *report = read_json(dir, "out");
  json_object *hierarchies = get(report, "hierarchies");
  assert_true(json_object_array_length(hierarchies) >= HIERARCHIES);
  for (int h = 0; h < HIERARCHIES; h++) {
    json_object *levels = get(json_object_array_get_idx(hierarchies, (size_t)h), "levels");
    for (int l = 0; l < 2; l++)
      rates[h][l] =
          json_object_get_double(get(json_object_array_get_idx(levels, (size_t)l), "hit_rate"));
  }
  json_object_put(report);
}

typedef struct errors {
  double surface; /* mean |program - seed| over the 8 x 17 grid */
  double wide;    /* the same over widths 64..512 (the dissertation's 68 caches) */
  double w512;    /* max over the 512-byte width */
  double l1, l2;  /* mean |program - seed| hit rate over the 46 hierarchies */
} errors;

static errors measure(const char *dir, const char *program, const char *seed) {
  static double p[WIDTHS][DEPTHS], s[WIDTHS][DEPTHS], ph[HIERARCHIES][2], sh[HIERARCHIES][2];
  surface_of(dir, program, p);
  surface_of(dir, seed, s);
  hierarchy_rates(dir, program, ph);
  hierarchy_rates(dir, seed, sh);
  errors e = {0};
  for (int w = 0; w < WIDTHS; w++)
    for (int d = 0; d < DEPTHS; d++) {
      double diff = fabs(p[w][d] - s[w][d]);
      e.surface += diff / (WIDTHS * DEPTHS);
      if (w >= 4) e.wide += diff / (4 * DEPTHS);
      if (w == WIDTHS - 1 && diff > e.w512) e.w512 = diff;
    }
  for (int h = 0; h < HIERARCHIES; h++) {
    e.l1 += fabs(ph[h][0] - sh[h][0]) / HIERARCHIES;
    e.l2 += fabs(ph[h][1] - sh[h][1]) / HIERARCHIES;
  }
  return e;
}

/* Bounds: the figures measured when they were set (docs/proxy.md) plus the margins.
 * Sizes keep every trace under 10^6 accesses (the C++ runtime alone makes 0.6 M).
 * Unique-index seeds (10^6 references each) for the gather and sparse matrix-vector
 * kernels only, which issue 6 names: the test takes 5 minutes under ASan with all four. */
typedef struct kernel_case {
  const char *kernel, *args;
  double surface, wide, l1, l2; /* plain seed, measured */
  int unique;                   /* also a unique-index seed */
  double u_surface, u_wide, u_w512;
} kernel_case;

static const kernel_case cases[] = {
    {"gather", "20000", .0002, .0003, .0018, .041, 1, .048, .011, .005},
    {"matmul", "40", .0027, .0013, .0041, .108, 0, 0, 0, 0},
    {"stencil2d", "60", .0028, .0006, .0042, .092, 0, 0, 0, 0},
    {"stream_add", "20000", .0023, .0009, .1208, .183, 0, 0, 0, 0},
    {"linked_list", "5000", .0008, .0002, .0064, .025, 0, 0, 0, 0},
    {"random_gather", "65536 50000", .0005, .0005, .0028, .0096, 0, 0, 0, 0},
    {"spmv", "6000", .0034, .0017, .0073, .065, 1, .025, .0083, .006},
    {"transpose", "150", .0040, .0016, .0161, .055, 0, 0, 0, 0},
    {"stencil3d", "24", .0036, .0017, .0016, .045, 0, 0, 0, 0},
    {"matmul_blocked", "48", .0060, .0012, .0009, .070, 0, 0, 0, 0},
    {"threads4", "", .0001, .0001, .0005, .0071, 0, 0, 0, 0},
#ifdef MEMSNAP_KERNEL_CXX
    {"vector_sort", "2000", .0001, .0001, .0004, .013, 0, 0, 0, 0},
#endif
#ifdef MEMSNAP_KERNEL_FORTRAN
    {"saxpy_fortran", "", .0033, .0010, .0005, .045, 0, 0, 0, 0},
#endif
    /* stream_add at its default size, linked statically: the one kernel over the 1% bar */
    {"stream_add_static", "", .0286, .0058, .0769, .146, 0, 0, 0, 0},
};

#define SURFACE_MARGIN 0.002
#define L1_MARGIN 0.005
/* The L2 error moves with where the program's stack lies, hence with the size of its
 * environment: matmul 40 gave 0.075-0.113 for environments padded by 0-4000 bytes, and
 * 0.138 under ctest in the ASan build (tests' working directories and sanitizer
 * variables), against the bound 0.108 + 0.03 that held before; stencil2d moved by 0.013,
 * gather and transpose by under 0.003. */
#define L2_MARGIN 0.05

static const char *bar(double value, double limit) { return value <= limit ? "met" : "not met"; }

static void check_case(const char *dir, const kernel_case *c) {
  char path[1024];
  test_kernel(c->kernel, path, sizeof path);
  assert_int_equal(
      test_memsnap_in(dir, "record --quiet -o %s.mtr -- %s %s", c->kernel, path, c->args), 0);
  assert_int_equal(
      test_memsnap_in(dir, "signature --widths %s.mtr -o %s.sig", c->kernel, c->kernel), 0);
  assert_int_equal(test_memsnap_in(dir, "synth %s.sig -o %s.seed", c->kernel, c->kernel), 0);
  char program[300], seed[300];
  snprintf(program, sizeof program, "%s.mtr", c->kernel);
  snprintf(seed, sizeof seed, "%s.seed", c->kernel);
  errors e = measure(dir, program, seed);
  printf("%-15s plain : surface %.4f (widths 64-512 %.4f), 512 max %.4f, L1 %.4f, L2 %.4f; "
         "issue 6 bars: surface %s, L1 %s, L2 %s\n",
         c->kernel, e.surface, e.wide, e.w512, e.l1, e.l2, bar(e.surface, 0.01), bar(e.l1, 0.01),
         bar(e.l2, 0.01));
  assert_true(e.w512 <= 0.002 + 1e-9);
  /* issue 6's bar, met by every kernel but stream_add_static (docs/proxy.md says why) */
  if (strcmp(c->kernel, "stream_add_static")) assert_true(e.surface <= 0.01);
  assert_true(e.surface <= c->surface + SURFACE_MARGIN);
  assert_true(e.wide <= c->wide + SURFACE_MARGIN);
  assert_true(e.l1 <= c->l1 + L1_MARGIN);
  assert_true(e.l2 <= c->l2 + L2_MARGIN);
  if (!c->unique) return;
  assert_int_equal(test_memsnap_in(dir, "synth %s.sig --unique -o %s.useed", c->kernel, c->kernel),
                   0);
  snprintf(seed, sizeof seed, "%s.useed", c->kernel);
  e = measure(dir, program, seed);
  printf("%-15s unique: surface %.4f (widths 64-512 %.4f), 512 max %.4f, L1 %.4f, L2 %.4f; "
         "issue 6 bar: surface %s\n",
         c->kernel, e.surface, e.wide, e.w512, e.l1, e.l2, bar(e.surface, 0.02));
  /* the 512-byte width: within the bound where a unique pattern can reach the target
   * (at most 127/128 hits on 512-byte lines of 4-byte words) */
  assert_true(e.w512 <= c->u_w512 + 0.002);
  assert_true(e.surface <= c->u_surface + SURFACE_MARGIN);
  assert_true(e.wide <= c->u_wide + SURFACE_MARGIN);
}

/* The dissertation's signature alone (no width rows): the seed follows the alphas at the
 * narrower widths; bounds as measured (docs/proxy.md), plus the margins. */
static void test_seed_without_width_rows(void **state) {
  (void)state;
  char *dir = test_tempdir();
  char path[1024];
  test_kernel("gather", path, sizeof path);
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o g.mtr -- %s 20000", path), 0);
  assert_int_equal(test_memsnap_in(dir, "signature g.mtr -o g.sig"), 0);
  assert_int_equal(test_memsnap_in(dir, "synth g.sig -o g.seed"), 0);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "no width rows (memsnap signature --widths)"));
  free(err);
  errors e = measure(dir, "g.mtr", "g.seed");
  printf("gather          alphas: surface %.4f (widths 64-512 %.4f), 512 max %.4f, L1 %.4f, L2 "
         "%.4f\n",
         e.surface, e.wide, e.w512, e.l1, e.l2);
  assert_true(e.w512 <= 0.002 + 1e-9);
  assert_true(e.surface <= 0.034 + SURFACE_MARGIN);
  assert_true(e.wide <= 0.015 + SURFACE_MARGIN);
  assert_true(e.l1 <= 0.029 + L1_MARGIN);
  test_rmdir(dir);
}

/* Why the L1 and L2 bars cannot be met from a signature: the same kernel with its arrays
 * placed elsewhere (on the heap instead of in separate mappings) has the same surface, so
 * the same signature and the same seed, but other set-associative hit rates. */
static void test_placement_not_in_signature(void **state) {
  (void)state;
  char *dir = test_tempdir();
  char path[1024];
  test_kernel("stream_add", path, sizeof path);
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o mapped.mtr -- %s 20000", path), 0);
  assert_int_equal(test_run("cd '%s' && GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4000000 '%s' "
                            "record --quiet -o heap.mtr -- %s 20000 > out 2> err",
                            dir, test_env("MEMSNAP"), path),
                   0);
  errors e = measure(dir, "mapped.mtr", "heap.mtr");
  printf("stream_add placed two ways: surface %.4f, L1 %.4f, L2 %.4f\n", e.surface, e.l1, e.l2);
  assert_true(e.surface <= 0.005); /* 0.0018 measured */
  assert_true(e.l1 >= 0.05);       /* 0.121 measured */
  test_rmdir(dir);
}

static void test_kernel_seed_accuracy(void **state) {
  (void)state;
  char *dir = test_tempdir();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
#if MEMSNAP_SANITIZED
    /* under the sanitizers (3-4x slower) four kernels: the figures are the release run's
     * to check, the sanitizers look at the code paths, which these cover (plain and
     * unique seeds, regular and irregular kernels) */
    if (strcmp(cases[i].kernel, "gather") && strcmp(cases[i].kernel, "matmul") &&
        strcmp(cases[i].kernel, "stencil2d") && strcmp(cases[i].kernel, "linked_list"))
      continue;
#endif
    check_case(dir, &cases[i]);
  }
  test_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seed_without_width_rows),
      cmocka_unit_test(test_placement_not_in_signature),
      cmocka_unit_test(test_kernel_seed_accuracy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

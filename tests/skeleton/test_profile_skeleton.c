/* Memory skeletons from PSnAP profiles (ms_skeleton_write_profile_c).
 *
 * Oracle: the profile of a regular kernel's function, replayed by memsnap, and the
 * skeleton of that profile, compiled with -O2 and recorded with memsnap, issue the same
 * accesses in the same order: each access's region (numbered by first touch; regions are
 * the touched addresses cut where two in address order lie more than 1 MiB apart), its
 * offset from the region's lowest touched address, its size and its kind. At --scale 0.1
 * the skeleton issues the replay of the profile whose orders ms_skeleton_scale_order cut:
 * about a tenth of the accesses, every site on its own pattern. The skeleton's data are
 * the accesses inside the reservation it prints; its own are counted apart. Sites in
 * lockstep share an iterator (fewer `_next` definitions than sites), with the same
 * accesses; sites with equal patterns out of lockstep keep their own.
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "memsnap/error.h"
#include "memsnap/open.h"
#include "memsnap/psnap.h"
#include "memsnap/sites.h"
#include "memsnap/skeleton.h"
#include "testutil.h"

static char *dir;
TEST_SCRATCH_GROUP(dir)

#define REGION_GAP ((uint64_t)1 << 20)

/* An access as the oracle compares it. */
typedef struct relative {
  uint32_t region;
  uint64_t offset;
  uint8_t size, kind;
} relative;

typedef struct stream {
  ms_access *accesses;
  size_t count, capacity;
} stream;

static void stream_add(stream *s, const ms_access *a) {
  if (s->count == s->capacity) {
    s->capacity = s->capacity ? 2 * s->capacity : 1 << 16;
    s->accesses = realloc(s->accesses, s->capacity * sizeof *s->accesses);
    assert_non_null(s->accesses);
  }
  s->accesses[s->count++] = *a;
}

static void read_source(ms_source *source, stream *out) {
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  int rc;
  while ((rc = ms_source_next(source, &batch)) > 0)
    for (size_t i = 0; i < batch.count; i++)
      stream_add(out, &batch.accesses[i]);
  assert_true(rc >= 0);
  ms_batch_free(&batch);
}

static int by_address(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The accesses relative to their regions. */
static relative *relative_stream(const stream *s) {
  size_t n = s->count;
  uint64_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
  for (size_t i = 0; i < n; i++)
    sorted[i] = s->accesses[i].address;
  qsort(sorted, n, sizeof *sorted, by_address);
  /* region starts: the lowest address, and each address more than REGION_GAP above the
   * one before */
  size_t starts = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || sorted[i] - sorted[i - 1] > REGION_GAP) sorted[starts++] = sorted[i];
  uint32_t *number = malloc((starts ? starts : 1) * sizeof *number);
  for (size_t r = 0; r < starts; r++)
    number[r] = UINT32_MAX;
  uint32_t next = 0;
  relative *out = malloc((n ? n : 1) * sizeof *out);
  for (size_t i = 0; i < n; i++) {
    uint64_t address = s->accesses[i].address;
    size_t low = 0, high = starts; /* the last start <= address */
    while (high - low > 1) {
      size_t mid = (low + high) / 2;
      if (sorted[mid] <= address)
        low = mid;
      else
        high = mid;
    }
    if (number[low] == UINT32_MAX) number[low] = next++;
    out[i] =
        (relative){number[low], address - sorted[low], s->accesses[i].size, s->accesses[i].kind};
  }
  free(sorted);
  free(number);
  return out;
}

static void assert_same_accesses(const stream *expected, const stream *got, const char *what) {
  if (expected->count != got->count)
    fail_msg("%s: %zu accesses expected, the skeleton issued %zu", what, expected->count,
             got->count);
  relative *x = relative_stream(expected), *y = relative_stream(got);
  for (size_t i = 0; i < expected->count; i++)
    if (x[i].region != y[i].region || x[i].offset != y[i].offset || x[i].size != y[i].size ||
        x[i].kind != y[i].kind)
      fail_msg("%s: access %zu: expected region %u +0x%" PRIx64 " %u bytes kind %u, got region %u "
               "+0x%" PRIx64 " %u bytes kind %u",
               what, i, x[i].region, x[i].offset, x[i].size, x[i].kind, y[i].region, y[i].offset,
               y[i].size, y[i].kind);
  free(x), free(y);
}

/* The profile's replay, its orders scaled. */
static void replay_scaled(const char *path, double scale, stream *out) {
  ms_psnap_profile profile;
  assert_int_equal(ms_psnap_profile_load(path, &profile), 0);
  assert_int_equal(ms_psnap_profile_pick(&profile, -1, -1), 0);
  for (uint32_t t = 0; t < profile.thread_count; t++) {
    assert_false(profile.threads[t].lossy);
    ms_expr scaled;
    assert_int_equal(ms_skeleton_scale_order(&profile.threads[t].order, scale, &scaled), 0);
    ms_expr_free(&profile.threads[t].order);
    profile.threads[t].order = scaled;
  }
  ms_source *source;
  assert_int_equal(ms_psnap_replay_open(&profile, NULL, &source), 0);
  read_source(source, out);
  ms_source_destroy(source);
}

/* The skeleton's accesses inside the reservation it printed; the others (its iterators'
 * state, register spills) counted in *own. */
static void skeleton_accesses(const char *name, stream *out, uint64_t *own) {
  assert_int_equal(test_memsnap_in(dir, "record -q -o %s.skel.mtr -- ./%s.skel", name, name), 0);
  char *err = test_read_in(dir, "err");
  const char *range = err ? strstr(err, "data 0x") : NULL;
  if (!range) fail_msg("no data range printed by the skeleton:\n%s", err ? err : "");
  unsigned long long low, high;
  assert_int_equal(sscanf(range, "data %llx-%llx", &low, &high), 2);
  free(err);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.skel.mtr", dir, name);
  ms_source *source;
  if (ms_open(path, 0, NULL, NULL, &source) < 0) fail_msg("%s: %s", path, ms_error_message());
  stream all = {0};
  read_source(source, &all);
  *own = 0;
  for (size_t i = 0; i < all.count; i++) {
    if (all.accesses[i].address >= low && all.accesses[i].address < high) {
      stream_add(out, &all.accesses[i]);
      continue;
    }
    const ms_site *site = ms_site_table_get(ms_source_info(source)->sites, all.accesses[i].site);
    *own += site && site->function &&
            (!strncmp(site->function, "skeleton_", 9) || !strncmp(site->function, "site", 4));
  }
  free(all.accesses);
  ms_source_destroy(source);
}

/* The skeleton of profile NAME.psnap in the scratch directory at `scale`, compiled with
 * -Werror, against the profile's replay; its data accesses, counted. */
static size_t skeleton_oracle(const char *name, double scale) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.psnap", dir, name);
  assert_int_equal(
      test_memsnap_in(dir, "skeleton --scale %g -o %s_skel.c %s.psnap", scale, name, name), 0);
  assert_int_equal(test_run("cd '%s' && cc -O2 -Wall -Wextra -Werror -o %s.skel %s_skel.c "
                            "2> cc.err",
                            dir, name, name),
                   0);
  stream expected = {0}, got = {0};
  replay_scaled(path, scale, &expected);
  uint64_t own;
  skeleton_accesses(name, &got, &own);
  char what[64];
  snprintf(what, sizeof what, "%s at scale %g", name, scale);
  assert_same_accesses(&expected, &got, what);
  print_message("%s: %zu data accesses, %" PRIu64 " of the skeleton's own\n", what, got.count, own);
  size_t count = got.count;
  free(expected.accesses), free(got.accesses);
  return count;
}

/* How often `needle` occurs in the skeleton NAME_skel.c. */
static size_t count_in_skeleton(const char *name, const char *needle) {
  char file[256];
  snprintf(file, sizeof file, "%s_skel.c", name);
  char *text = test_read_in(dir, file);
  assert_non_null(text);
  size_t count = 0;
  for (const char *at = text; (at = strstr(at, needle)); at += strlen(needle))
    count++;
  free(text);
  return count;
}

/* A kernel's function profiled; its skeletons at scale 1 and 0.1 against the replays. */
static void kernel_oracle(const char *kernel, const char *size, const char *function) {
  char path[1024];
  assert_int_equal(test_memsnap_in(dir, "record -q -o %s.mtr -- %s %s", kernel,
                                   test_kernel(kernel, path, sizeof path), size),
                   0);
  assert_int_equal(
      test_memsnap_in(dir, "profile -q -f %s -o %s.psnap %s.mtr", function, kernel, kernel), 0);
  size_t full = skeleton_oracle(kernel, 1);
  size_t tenth = skeleton_oracle(kernel, 0.1);
  assert_true(tenth >= full / 20 && tenth <= full / 5); /* about a tenth */
}

static void stream_add_skeleton_issues_the_profile(void **state) {
  (void)state;
  kernel_oracle("stream_add", "20000", "stream_add");
}

static void matmul_skeleton_issues_the_profile(void **state) {
  (void)state;
  kernel_oracle("matmul", "40", "matmul");
}

/* jacobi's five reads of `a` (equal patterns, once each per point) share one iterator,
 * its write has its own, its twelve sites of one stride none: 2 iterators for 18 sites. */
static void stencil2d_skeleton_issues_the_profile(void **state) {
  (void)state;
  kernel_oracle("stencil2d", "60", "jacobi");
  size_t iterators = count_in_skeleton("stencil2d", "_next(void) {");
  print_message("stencil2d: %zu iterators\n", iterators);
  assert_true(iterators >= 1 && iterators <= 2);
  assert_true(count_in_skeleton("stencil2d", "SKELETON_LOAD_AT(") >= 5);
}

/* s0 and s1 (equal patterns) are written in two loops, once each and s0 first in both:
 * they share s0's cursor, which s1 steps. s2 has another count; s3 and s4 (equal patterns,
 * one for one) come in either order: each keeps its own. The skeleton issues the replay. */
static void lockstep_sites_share_an_iterator(void **state) {
  (void)state;
  assert_int_equal(test_run("cd '%s' && printf 'psnap 2\\naccesses 28\\nsites 5\\nthreads 1\\n"
                            "s0 load 8 x6 @0x1000 (+8 +16)^2 +8\\n"
                            "s1 store 8 x6 @0x2040 (+8 +16)^2 +8\\n"
                            "s2 load 8 x4 @0x3000 +8 +16 +8\\n"
                            "s3 load 8 x6 @0x4000 (+8 +16)^2 +8\\n"
                            "s4 store 8 x6 @0x5000 (+8 +16)^2 +8\\n"
                            "thread 0 accesses 28 order (s0 s2 s1)^4 (s0 s1)^2 s3 s4 (s4 s3)^5\\n' "
                            "> lockstep.psnap",
                            dir),
                   0);
  assert_int_equal(skeleton_oracle("lockstep", 1), 28);
  assert_int_equal(count_in_skeleton("lockstep", "_next(void) {"), 4);
  assert_int_equal(
      count_in_skeleton("lockstep", "SKELETON_STORE_AT(0, 4160, 8); SKELETON_STEP(0);"), 2);
  assert_int_equal(count_in_skeleton("lockstep", "SKELETON_LOAD(3, 8);"), 2);
}

static void transpose_skeleton_issues_the_profile(void **state) {
  (void)state;
  kernel_oracle("transpose", "60", "transpose");
}

/* Scaling: the outermost repeats times the scale, at least 1; a group cut to one iteration
 * passes the rest on to its children. */
static void orders_scale_outermost(void **state) {
  (void)state;
  static const struct {
    const char *order, *scaled;
    double scale;
  } cases[] = {
      {"(s0 s1 s2)^2000 s3", "(s0..s2)^200 s3", 0.1},
      {"s0 s1 ((s2 s3)^40 s4)^1600 s5", "s0 s1 ((s2 s3)^40 s4)^16 s5", 0.01},
      {"(s0 (s1 s2)^3364 s3)^8", "(s0 (s1 s2)^269 s3)", 0.01},
      {"(s0 s1^{9,-1})^9", "(s0 s1^{9,-1})^5", 0.5},
      {"s0^3", "s0", 0.001},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ms_expr order, scaled;
    ms_expr_init(&order);
    assert_int_equal(
        ms_expr_parse(&order, cases[i].order, strlen(cases[i].order), MS_EXPR_SITES, "test", 1, 1),
        0);
    assert_int_equal(ms_skeleton_scale_order(&order, cases[i].scale, &scaled), 0);
    char *text = ms_expr_string(&scaled, MS_EXPR_SITES);
    if (strcmp(text, cases[i].scaled))
      fail_msg("%s at %g: %s, expected %s", cases[i].order, cases[i].scale, text, cases[i].scaled);
    free(text);
    ms_expr_free(&order), ms_expr_free(&scaled);
  }
  ms_expr order, scaled;
  ms_expr_init(&order);
  assert_int_equal(ms_expr_parse(&order, "s0", 2, MS_EXPR_SITES, "test", 1, 1), 0);
  assert_int_equal(ms_skeleton_scale_order(&order, 0, &scaled), MS_ERR_ARG);
  assert_int_equal(ms_skeleton_scale_order(&order, 1.5, &scaled), MS_ERR_ARG);
  ms_expr_free(&order);
}

/* A profile with no sites, an output that cannot be written, a scale out of range: a
 * message, a failing status, no C file. */
static void bad_profiles_write_no_skeleton(void **state) {
  (void)state;
  struct stat st;
  char path[1024];
  assert_int_equal(test_run("cd '%s' && printf 'psnap 2\\naccesses 0\\nsites 0\\nthreads 0\\n' > "
                            "empty.psnap",
                            dir),
                   0);
  int rc = test_memsnap_in(dir, "skeleton -o empty.c empty.psnap");
  char *err = test_read_in(dir, "err");
  if (rc == 0) fail_msg("a profile without sites made a skeleton:\n%s", err ? err : "");
  assert_non_null(strstr(err, "no sites"));
  free(err);
  snprintf(path, sizeof path, "%s/empty.c", dir);
  assert_int_not_equal(stat(path, &st), 0);

  assert_int_equal(test_run("cd '%s' && printf 'psnap 2\\naccesses 3\\nsites 1\\nthreads 1\\n"
                            "s0 load 8 x3 @0x1000 +8^2\\nthread 0 accesses 3 order s0^3\\n' > "
                            "one.psnap",
                            dir),
                   0);
  assert_int_not_equal(test_memsnap_in(dir, "skeleton -o no/such/dir/skel.c one.psnap"), 0);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "no/such/dir/skel.c"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "skeleton --scale 0 -o zero.c one.psnap"), 2);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "--scale"));
  free(err);
  snprintf(path, sizeof path, "%s/zero.c", dir);
  assert_int_not_equal(stat(path, &st), 0);
  assert_int_equal(test_memsnap_in(dir, "skeleton --scale 0.5 -o one.c one.psnap"), 0);
  assert_int_equal(test_run("cd '%s' && cc -O2 -Wall -Wextra -Werror -o one one.c && ./one "
                            "2> one.err",
                            dir),
                   0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(orders_scale_outermost),
      cmocka_unit_test(stream_add_skeleton_issues_the_profile),
      cmocka_unit_test(matmul_skeleton_issues_the_profile),
      cmocka_unit_test(stencil2d_skeleton_issues_the_profile),
      cmocka_unit_test(transpose_skeleton_issues_the_profile),
      cmocka_unit_test(lockstep_sites_share_an_iterator),
      cmocka_unit_test(bad_profiles_write_no_skeleton),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

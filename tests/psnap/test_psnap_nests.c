/* End to end on non-rectangular loop nests (tests/kernels/trinest.c), recorded through
 * Valgrind at sizes n, 4n, 16n:
 * - triangular (covariance), trapezoidal and wavefront nests, and the doubly triangular
 *   ones of LU (whose k loop's count steps with i, two loops up: `^{159,-1@2}`) and
 *   Cholesky (a loop with steps inside a loop with steps): `memsnap verify` finds the
 *   replay identical to the trace, address for address and in order; the profile has the
 *   same lines at every size and only its numbers change (trip counts
 *   written with steps, `^{159,-1}`, not one term per outer iteration): at most 96 bytes
 *   more at 16n;
 * - the profiles round trip (text -> load -> write gives the same text), and a replay from
 *   the middle (--from I --count N) equals that part of the whole replay, also of LU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "memsnap/psnap.h"
#include "testutil.h"

static char *dir;

TEST_SCRATCH_GROUP(dir)

static long file_size(const char *name) {
  char path[1024];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(stat(path, &st), 0);
  return (long)st.st_size;
}

static int line_count(const char *name) {
  char *text = test_read_in(dir, name);
  assert_non_null(text);
  int lines = 0;
  for (const char *p = text; *p; p++)
    lines += *p == '\n';
  free(text);
  return lines;
}

static void assert_out_contains(const char *what, const char *text) {
  char *out = test_read_in(dir, "out");
  assert_non_null(out);
  if (!strstr(out, text)) fail_msg("%s: '%s' not in:\n%s", what, text, out);
  free(out);
}

static void assert_round_trip(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *text = test_read_file(path);
  ms_psnap_profile profile;
  assert_int_equal(ms_psnap_profile_load(path, &profile), 0);
  test_memstream m;
  assert_int_equal(ms_psnap_profile_write(&profile, test_memstream_open(&m)), 0);
  char *again = test_memstream_text(&m);
  assert_string_equal(text, again);
  ms_psnap_profile_free(&profile);
  free(text);
  free(again);
}

/* Records `trinest MODE N` and profiles its nest; the trace is t.mtr. */
static void record_and_profile(const char *mode, int n, const char *profile) {
  char kernel[1024];
  test_kernel("trinest", kernel, sizeof kernel);
  assert_int_equal(test_memsnap_in(dir, "record -q -o t.mtr -- %s %s %d", kernel, mode, n), 0);
  assert_int_equal(test_memsnap_in(dir, "profile -q -f %s -o %s t.mtr", mode, profile), 0);
}

static void assert_exact(const char *what, const char *profile) {
  assert_int_equal(test_memsnap_in(dir, "verify --no-cache %s t.mtr", profile), 0);
  assert_out_contains(what, "exact match: 100.0000%");
  assert_out_contains(what, "first divergence: none");
}

static void nests_replay_exactly_in_constant_size(void **state) {
  (void)state;
  /* the doubly triangular nests need four rows of four inner runs before their steps show:
   * from n = 20 (32 M accesses for LU at 16n) */
  const struct {
    const char *mode;
    int n;
  } nests[] = {{"covariance", 10}, {"trapezoid", 10}, {"wavefront", 10}, {"lu", 20}, {"cholesky", 20}};
  for (size_t m = 0; m < sizeof nests / sizeof *nests; m++) {
    long bytes[3];
    int lines[3];
    for (int s = 0; s < 3; s++) {
      char profile[64];
      snprintf(profile, sizeof profile, "%s-%d.psnap", nests[m].mode, s);
      record_and_profile(nests[m].mode, nests[m].n << (2 * s), profile);
      assert_exact(nests[m].mode, profile);
      assert_round_trip(profile);
      bytes[s] = file_size(profile);
      lines[s] = line_count(profile);
    }
    print_message("%-10s profile %ld, %ld, %ld bytes at n, 4n, 16n\n", nests[m].mode, bytes[0],
                  bytes[1], bytes[2]);
    assert_int_equal(lines[1], lines[0]);
    assert_int_equal(lines[2], lines[0]);
    /* 16x the size adds a digit or two to the numbers that grow (counts, addresses) */
    if (bytes[1] < bytes[0] || bytes[2] < bytes[1] || bytes[2] > bytes[0] + 96)
      fail_msg("%s: %ld, %ld, %ld bytes at n, 4n, 16n", nests[m].mode, bytes[0], bytes[1],
               bytes[2]);
  }
}

/* `replay --from FROM --count COUNT PROFILE` (one line per access, "INDEX THREAD KIND
 * ADDRESS SIZE SITE") is exactly those lines of the whole replay. */
static void assert_partial_replay(const char *profile, long from, long count) {
  assert_int_equal(test_memsnap_in(dir, "replay %s", profile), 0);
  char *whole = test_read_in(dir, "out");
  assert_int_equal(test_memsnap_in(dir, "replay --from %ld --count %ld %s", from, count, profile),
                   0);
  char *part = test_read_in(dir, "out");
  assert_non_null(whole);
  assert_non_null(part);
  char first[32], last[32];
  snprintf(first, sizeof first, "\n%ld ", from);
  snprintf(last, sizeof last, "\n%ld ", from + count - 1);
  const char *w = strstr(whole, first);
  assert_non_null(w);
  w++;
  assert_int_equal(strncmp(part, first + 1, strlen(first + 1)), 0);
  size_t length = strlen(part);
  const char *end = strstr(part, last);
  assert_non_null(end);
  assert_int_equal(strchr(end + 1, '\n') - part + 1, (long)length);
  assert_memory_equal(part, w, length);
  free(whole);
  free(part);
}

/* The steps are in the profile, and a partial replay from the middle of the triangle
 * equals the same part of the whole replay. */
static void partial_replay_of_a_triangle(void **state) {
  (void)state;
  record_and_profile("covariance", 40, "c.psnap");
  char *text = test_read_in(dir, "c.psnap");
  assert_non_null(strstr(text, "^{39,-1}"));
  assert_non_null(strstr(text, ",+8}"));
  free(text);
  assert_partial_replay("c.psnap", 31337, 20000);
}

/* LU's profile says how its k loop steps with i (`@2`), and a replay from the middle equals
 * that part of the whole replay. */
static void partial_replay_of_lu(void **state) {
  (void)state;
  record_and_profile("lu", 40, "l.psnap");
  char *text = test_read_in(dir, "l.psnap");
  assert_non_null(strstr(text, "@2}"));
  free(text);
  assert_partial_replay("l.psnap", 23456, 5000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nests_replay_exactly_in_constant_size),
      cmocka_unit_test(partial_replay_of_a_triangle),
      cmocka_unit_test(partial_replay_of_lu),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* memsnap-cc --memsnap-report=FILE: memsnap's LLVM pass plugin classifies the loads and
 * stores of report_loops.c's hand-written loops, each line of which carries a marker
 * (SWEEP, TRIANGLE, GATHER, CALL, EARLY): the report must give each reference on it the
 * expected level, loops covered and reason. Also: the option reaches neither clang nor the
 * program (which builds, runs and records as without it), reports of several translation
 * units append, and an empty file name is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

static char *dir;
TEST_SCRATCH_GROUP(dir)

#define LOOPS MEMSNAP_RT_SOURCE "/report_loops.c"

/* The line of report_loops.c that holds `marker` (in a comment). */
static int marker_line(const char *marker) {
  char *text = test_read_file(LOOPS);
  assert_non_null(text);
  char comment[64];
  snprintf(comment, sizeof comment, "/* %s */", marker);
  char *at = strstr(text, comment);
  assert_non_null(at);
  int line = 1;
  for (const char *p = text; p < at; p++)
    line += *p == '\n';
  free(text);
  return line;
}

/* Checks every report line about `marker`'s source line: `count` of them, each with
 * `level` and `loops` and a reason containing `reason`; `access`, if given, picks only
 * the references whose access column contains it. */
static void expect(const char *report, const char *marker, const char *access, int count,
                   const char *level, const char *loops, const char *reason) {
  char location[64];
  snprintf(location, sizeof location, "report_loops.c:%d:", marker_line(marker));
  int found = 0;
  for (const char *line = report; *line;) {
    const char *end = strchr(line, '\n');
    assert_non_null(end);
    char row[1024];
    snprintf(row, sizeof row, "%.*s", (int)(end - line), line);
    line = end + 1;
    char *field[6] = {row};
    for (int i = 1; i < 6 && field[i - 1]; i++) {
      field[i] = strchr(field[i - 1], '\t');
      if (field[i]) *field[i]++ = '\0';
    }
    if (row[0] == '#' || !field[5] || !strstr(field[1], location)) continue;
    if (access && !strstr(field[2], access)) continue;
    found++;
    if (strcmp(field[3], level) != 0 || strcmp(field[4], loops) != 0 || !strstr(field[5], reason))
      fail_msg("%s: %s %s %s %s, expected %s %s ...%s...", marker, field[2], field[3], field[4],
               field[5], level, loops, reason);
  }
  assert_int_equal(found, count);
}

static void test_levels_of_known_loops(void **state) {
  (void)state;
  /* -fno-vectorize -fno-unroll-loops: one loop per loop as written (a vectorized loop
   * comes with a remainder loop and run-time checks, each classified on its own) */
  assert_int_equal(test_run("cd '%s' && rm -f loops.remarks && '%s' --memsnap-report=loops.remarks "
                            "-O2 -g -fno-vectorize -fno-unroll-loops -o loops '%s' 2> build.err "
                            "&& MEMSNAP_OUT=loops.mtr ./loops 50 > out && test -s loops.mtr",
                            dir, MEMSNAP_CC, LOOPS),
                   0);
  char *report = test_read_in(dir, "loops.remarks");
  assert_non_null(report);
  assert_non_null(strstr(report, "# memsnap-cc report: "));
  expect(report, "SWEEP", NULL, 2, "hoisted", "2/2", "affine, trip counts known at entry");
  expect(report, "TRIANGLE", NULL, 2, "hoisted", "1/2", "(triangular)");
  expect(report, "GATHER", " index[]", 1, "hoisted", "1/1", "affine");
  expect(report, "GATHER", " x[]", 1, "per-access", "0/1", "indirect address");
  expect(report, "CALL", NULL, 2, "per-access", "0/1", "loop with a call to scale");
  expect(report, "EARLY", NULL, 1, "per-access", "0/1", "early exit");
  assert_non_null(strstr(report, "# references in loops: 9 (hoisted out of every loop 3, "
                                 "out of some 2, per-access 4)"));
  free(report);
}

/* Two translation units, one command: two sections; the option never reaches clang. */
static void test_units_append(void **state) {
  (void)state;
  assert_int_equal(test_run("cd '%s' && rm -f two.remarks && '%s' --memsnap-report=two.remarks -O2 "
                            "-c '%s/main.c' '%s/histogram.c' -I'%s' 2> build.err",
                            dir, MEMSNAP_CC, MEMSNAP_RT_PROJECT, MEMSNAP_RT_PROJECT,
                            MEMSNAP_RT_PROJECT),
                   0);
  char *report = test_read_in(dir, "two.remarks");
  assert_non_null(report);
  char *first = strstr(report, "# memsnap-cc report: ");
  assert_non_null(first);
  assert_non_null(strstr(first + 1, "# memsnap-cc report: "));
  assert_non_null(strstr(report, "histogram\t"));
  free(report);
  char *err = test_read_in(dir, "build.err");
  assert_string_equal(err, "");
  free(err);
  assert_int_equal(test_run("cd '%s' && '%s' --memsnap-report= -c '%s/main.c' -I'%s' 2> err", dir,
                            MEMSNAP_CC, MEMSNAP_RT_PROJECT, MEMSNAP_RT_PROJECT),
                   1);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "--memsnap-report needs a file name"));
  free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_levels_of_known_loops),
                                     cmocka_unit_test(test_units_append)};
  return cmocka_run_group_tests(tests, setup, teardown);
}

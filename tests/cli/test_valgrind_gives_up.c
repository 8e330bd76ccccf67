/* Valgrind's own failures are told as what they are.
 *
 * Valgrind 3.19 gives up on the DWARF 5 debug information of a clang-built program
 * ("unhandled dwarf2 abbrev form code 0x25 ... Giving up") before the program runs, and
 * exits with status 1. memsnap passes Valgrind's words on to standard error, fails with a
 * message that says Valgrind gave up and how to avoid it, and writes no report (before:
 * an all-zero report, and a note blaming the program for closing descriptors). The same
 * program built with -gdwarf-4 is observed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

static char *dir;
TEST_SCRATCH_GROUP(dir)

static char *read_in(const char *name) {
  char *text = test_read_in(dir, name);
  assert_non_null(text);
  return text;
}

static void test_gives_up_before_the_program_runs(void **state) {
  (void)state;
  const char *program = MEMSNAP_DWARF_DIR "/sum_dwarf5";
  /* what Valgrind itself does with it */
  int valgrind = test_run("'%s' -q --tool=none '%s' > '%s/valgrind.out' 2> '%s/valgrind.err'",
                          MEMSNAP_VALGRIND, program, dir, dir);
  if (valgrind == 0) { /* a Valgrind that reads DWARF 5: the program is observed */
    assert_int_equal(test_memsnap_in(dir, "sim -H nehalem -- '%s'", program), 0);
    return;
  }
  char *valgrind_err = read_in("valgrind.err");
  assert_non_null(strstr(valgrind_err, "Giving up"));
  free(valgrind_err);

  assert_int_equal(test_memsnap_in(dir, "sim -H nehalem -- '%s'", program), 1);
  char *out = read_in("out"), *err = read_in("err");
  assert_string_equal(out, ""); /* no report of nothing */
  /* Valgrind's words, unchanged, then memsnap's one line */
  assert_non_null(strstr(err, "unhandled dwarf2 abbrev form code"));
  assert_non_null(strstr(err, "Giving up"));
  assert_non_null(strstr(err, "memsnap sim: Valgrind gave up before it ran "));
  assert_non_null(strstr(err, "-gdwarf-4"));
  assert_non_null(strstr(err, "memsnap-cc"));
  assert_null(strstr(err, "closed file descriptors"));
  free(out);
  free(err);

  /* record leaves no trace of nothing */
  assert_int_equal(test_memsnap_in(dir, "record -o five.mtr -- '%s'", program), 1);
  assert_int_equal(test_run("test -e '%s/five.mtr'", dir), 1);
  err = read_in("err");
  assert_non_null(strstr(err, "Valgrind gave up before it ran"));
  free(err);
}

/* env runs under Valgrind, then execs the program, on which Valgrind gives up: the report
 * of what ran says truncated, and a note says why. */
static void test_gives_up_after_an_exec(void **state) {
  (void)state;
  const char *program = MEMSNAP_DWARF_DIR "/sum_dwarf5";
  if (test_run("'%s' -q --tool=none '%s' > /dev/null 2>&1", MEMSNAP_VALGRIND, program) == 0)
    return; /* a Valgrind that reads DWARF 5: nothing gives up (the test above observes it) */
  assert_int_equal(test_memsnap_in(dir, "sim -H nehalem -- env '%s'", program), 1);
  char *err = read_in("err");
  assert_non_null(strstr(err, "memsnap: note: Valgrind gave up while it ran"));
  assert_non_null(strstr(err, "-gdwarf-4"));
  assert_non_null(strstr(err, "observed: "));
  assert_non_null(strstr(err, "truncated"));
  assert_null(strstr(err, "closed file descriptors"));
  free(err);
}

static void test_dwarf4_is_observed(void **state) {
  (void)state;
  assert_int_equal(test_memsnap_in(dir, "sim -H nehalem -- '%s'", MEMSNAP_DWARF_DIR "/sum_dwarf4"),
                   0);
  char *out = read_in("out"), *err = read_in("err");
  assert_string_equal(out, "499500\n"); /* the program's output alone */
  assert_non_null(strstr(err, "exit status 0; complete"));
  free(out);
  free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gives_up_before_the_program_runs),
      cmocka_unit_test(test_gives_up_after_an_exec),
      cmocka_unit_test(test_dwarf4_is_observed),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

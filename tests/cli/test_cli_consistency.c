/* One spelling works everywhere: --limit and --count in dump and replay, size suffixes in
 * --hierarchy as in --footprint; a bad --hierarchy is a usage error (2) with the reading
 * that was probably meant; `--hierarchy evaluation` names the 46; convert never replaces
 * its input; info --check says what it checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

static char *dir;

#define memsnap(...) test_memsnap_in(dir, __VA_ARGS__)

static int setup(void **state) {
  (void)state;
  dir = test_tempdir();
  int rc = test_run("cd '%s' && printf '0 1000 8\\n1 1008 8\\n0 2000 4\\n2 1000 8\\n0 3000 8\\n'"
                    " > t.din",
                    dir);
  if (rc == 0) rc = memsnap("convert t.din t.mtr");
  if (rc == 0) rc = memsnap("profile -q -o p.psnap t.din");
  return rc == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  test_rmdir(dir);
  return 0;
}

static char *read_in(const char *name) {
  char *text = test_read_in(dir, name);
  assert_non_null(text);
  return text;
}

/* `memsnap ARGS` exits `status` with exactly one line on stderr containing `fragment`. */
static void expect_one_line(int status, const char *fragment, const char *args) {
  int rc = memsnap("%s", args);
  char *err = read_in("err");
  if (rc != status || !strstr(err, fragment) || strchr(err, '\n') != err + strlen(err) - 1)
    fail_msg("memsnap %s: exit %d (expected %d), stderr: %s", args, rc, status, err);
  free(err);
}

static void expect_same_output(const char *args_a, const char *args_b) {
  assert_int_equal(memsnap("%s", args_a), 0);
  char *a = read_in("out");
  assert_int_equal(memsnap("%s", args_b), 0);
  char *b = read_in("out");
  if (strcmp(a, b) != 0)
    fail_msg("memsnap %s and memsnap %s differ:\n%s---\n%s", args_a, args_b, a, b);
  assert_true(strlen(a) > 0);
  free(a);
  free(b);
}

/* The reports of two hierarchies given in other words: the same from the resolved spec on. */
static void expect_same_hierarchy(const char *given_a, const char *given_b, const char *spec) {
  assert_int_equal(memsnap("sim -H %s t.mtr", given_a), 0);
  char *a = read_in("out");
  assert_int_equal(memsnap("sim -H %s t.mtr", given_b), 0);
  char *b = read_in("out");
  char *from_a = strstr(a, spec), *from_b = strstr(b, spec);
  if (!from_a || !from_b || strcmp(from_a, from_b) != 0)
    fail_msg("-H %s and -H %s: not both %s:\n%s---\n%s", given_a, given_b, spec, a, b);
  free(a);
  free(b);
}

static void test_limit_and_count(void **state) {
  (void)state;
  expect_same_output("dump --limit 2 t.mtr", "dump --count 2 t.mtr");
  expect_same_output("dump --limit 2 t.mtr", "dump -n 2 t.mtr");
  expect_same_output("replay --count 2 p.psnap", "replay --limit 2 p.psnap");
  expect_same_output("replay --count 2 p.psnap", "replay -n 2 p.psnap");
  assert_int_equal(memsnap("replay --limit 2 p.psnap"), 0);
  char *two = read_in("out");
  assert_int_equal(strchr(strchr(two, '\n') + 1, '\n'), two + strlen(two) - 1);
  free(two);
  expect_one_line(2, "--limit", "replay --limit many p.psnap");
}

static void test_hierarchy_sizes_and_shapes(void **state) {
  (void)state;
  expect_same_hierarchy("32768/64/8,262144/64/8", "32KiB/64/8,256Ki/64/8",
                        ": 32768/64/8,262144/64/8 (write-back");
  expect_same_hierarchy("32768/64/8", "32KB/64/8", ": 32768/64/8 (write-back");
  expect_same_hierarchy("1048576/64/16", "1MiB/64/16", ": 1048576/64/16 (write-back");
  expect_one_line(2, "did you mean 32768/64/8?", "sim -H 32768/8/64 t.mtr");
  expect_one_line(2, "size/line/ways", "sim -H 32768/8/64 t.mtr");
  expect_one_line(2, "unknown hierarchy 'foo'", "sim -H foo t.mtr");
  expect_one_line(2, "32768/48/8", "sim -H 32768/48/8 t.mtr");
  expect_one_line(2, "power-of-two set count", "sim --model cachegrind -H hpcmo-14 t.mtr");
  /* a cache-surface point: 4-byte lines, one set */
  assert_int_equal(memsnap("sim -H 256/4/64 t.mtr"), 0);
}

static void test_evaluation_set(void **state) {
  (void)state;
  assert_int_equal(memsnap("sim --json -H evaluation t.mtr"), 0);
  char *evaluation = read_in("out");
  char expected[4096] = "sim --json";
  for (int i = 1; i <= 46; i++) {
    size_t n = strlen(expected);
    snprintf(expected + n, sizeof expected - n, " -H hpcmo-%02d", i);
  }
  strcat(expected, " t.mtr");
  assert_int_equal(memsnap("%s", expected), 0);
  char *named = read_in("out");
  assert_string_equal(evaluation, named);
  assert_non_null(strstr(evaluation, "\"hpcmo-46\""));
  assert_null(strstr(evaluation, "\"nehalem\""));
  free(evaluation);
  free(named);
  /* with another hierarchy, in the order given */
  assert_int_equal(memsnap("sim -H nehalem -H evaluation t.mtr"), 0);
  char *text = read_in("out");
  char *nehalem = strstr(text, "nehalem"), *first = strstr(text, "hpcmo-01");
  assert_non_null(nehalem);
  assert_non_null(first);
  assert_true(nehalem < first);
  free(text);
  assert_int_equal(memsnap("hierarchies"), 0);
  char *list = read_in("out");
  assert_non_null(strstr(list, "evaluation = hpcmo-01..hpcmo-46"));
  free(list);
}

static void test_convert_refuses_its_input(void **state) {
  (void)state;
  assert_int_equal(test_run("cd '%s' && cp t.mtr before.mtr && ln -f t.mtr link.mtr", dir), 0);
  expect_one_line(2, "the output is the input", "convert --to din t.mtr link.mtr");
  expect_one_line(2, "the output is the input", "convert --to din t.mtr ./t.mtr");
  expect_one_line(2, "the output is the input", "convert --to mtr t.mtr t.mtr");
  assert_int_equal(test_run("cmp -s '%s/t.mtr' '%s/before.mtr'", dir, dir), 0);
  /* a new name is fine */
  assert_int_equal(memsnap("convert --to din t.mtr copy.din"), 0);
  expect_same_output("dump t.mtr", "dump copy.din");
}

static void test_info_check_says_so(void **state) {
  (void)state;
  assert_int_equal(memsnap("info --check t.mtr"), 0);
  char *text = read_in("out");
  assert_non_null(strstr(text, "check: 1 chunk, 4 accesses decoded, all checksums good\n"));
  free(text);
  assert_int_equal(memsnap("info t.mtr"), 0);
  text = read_in("out");
  assert_null(strstr(text, "check:"));
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_limit_and_count),    cmocka_unit_test(test_hierarchy_sizes_and_shapes),
      cmocka_unit_test(test_evaluation_set),     cmocka_unit_test(test_convert_refuses_its_input),
      cmocka_unit_test(test_info_check_says_so),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

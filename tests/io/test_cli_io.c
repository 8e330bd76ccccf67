/* End-to-end: memsnap info, dump and convert on the checked-in Lackey sample (produced by
 * valgrind --tool=lackey --trace-mem=yes 3.19); the oracle is the sample's own L/S/M lines.
 * Also the messages and exit statuses for bad options and bad files, and no half-written
 * output after a failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <regex.h>

#include "testutil.h"

static char *dir;
static char sample[1024];

#define memsnap(...) test_memsnap_in(dir, __VA_ARGS__)

static char *read_in_dir(const char *name) {
  char *text = test_read_in(dir, name);
  assert_non_null(text);
  return text;
}

static void assert_output_contains(const char *name, const char *fragment) {
  char *text = read_in_dir(name);
  if (!strstr(text, fragment)) fail_msg("%s lacks '%s': %s", name, fragment, text);
  free(text);
}

static int count_lines(const char *text, const char *prefix) {
  int count = 0;
  size_t length = strlen(prefix);
  for (const char *line = text; line && *line;
       line = strchr(line, '\n'), line = line ? line + 1 : NULL)
    count += strncmp(line, prefix, length) == 0;
  return count;
}

static void test_info_counts_match_the_sample(void **state) {
  (void)state;
  char *lackey = test_read_file(sample);
  assert_non_null(lackey);
  int loads = count_lines(lackey, " L"), stores = count_lines(lackey, " S"),
      modifies = count_lines(lackey, " M");
  free(lackey);
  assert_true(loads > 0 && stores > 0 && modifies > 0);
  assert_int_equal(memsnap("convert %s a.mtr", sample), 0);
  assert_int_equal(memsnap("info a.mtr"), 0);
  char expected[256];
  snprintf(expected, sizeof expected, "accesses:      %d (load %d, store %d, modify %d)",
           loads + stores + modifies, loads, stores, modifies);
  assert_output_contains("out", expected);
  assert_output_contains("out", "format:        mtr (version 1)");
  assert_output_contains("out", "program:       ./k x");
  assert_int_equal(memsnap("info --json a.mtr"), 0);
  snprintf(expected, sizeof expected, "\"accesses\":%d", loads + stores + modifies);
  assert_output_contains("out", expected);
  assert_int_equal(memsnap("info %s", sample), 0); /* the Lackey text itself, counted */
  snprintf(expected, sizeof expected, "accesses:      %d", loads + stores + modifies);
  assert_output_contains("out", expected);
}

static void test_dump_from_mtr_and_lackey_agree(void **state) {
  (void)state;
  assert_int_equal(memsnap("convert %s a.mtr", sample), 0);
  assert_int_equal(memsnap("dump --from 100 --limit 5 a.mtr"), 0);
  char *from_mtr = read_in_dir("out");
  assert_int_equal(memsnap("dump %s --from 100 --limit 5", sample), 0);
  char *from_lackey = read_in_dir("out");
  assert_string_equal(from_mtr, from_lackey);
  assert_int_equal(count_lines(from_mtr, ""), 5);
  regex_t line;
  assert_int_equal(
      regcomp(&line, "^100 0 (load|store|modify) 0x[0-9a-f]+ [0-9]+ 0x[0-9a-f]+\n", REG_EXTENDED),
      0);
  assert_int_equal(regexec(&line, from_mtr, 0, NULL, 0), 0);
  regfree(&line);
  free(from_mtr);
  free(from_lackey);
}

static void test_mtr_din_mtr_keeps_every_access(void **state) {
  (void)state;
  assert_int_equal(memsnap("convert %s a.mtr", sample), 0);
  assert_int_equal(memsnap("convert a.mtr a.din"), 0);
  assert_int_equal(memsnap("convert --to mtr a.din b.trace"), 0);
  assert_int_equal(memsnap("dump --format din b.trace"), 0);
  char *first = read_in_dir("a.din"), *second = read_in_dir("out");
  assert_string_equal(first, second);
  char *lackey = test_read_file(sample);
  /* a modify is written as a read and a write */
  int expected =
      count_lines(lackey, " L") + count_lines(lackey, " S") + 2 * count_lines(lackey, " M");
  assert_int_equal(count_lines(first, ""), expected);
  free(lackey);
  free(first);
  free(second);
}

static void test_errors_name_the_option_or_file(void **state) {
  (void)state;
  assert_int_equal(memsnap("convert %s a.mtr", sample), 0);
  assert_int_equal(memsnap("dump --bogus a.mtr"), 2);
  assert_output_contains("err", "--bogus");
  assert_int_equal(memsnap("dump --limit x a.mtr"), 2);
  assert_output_contains("err", "--limit");
  assert_int_equal(test_run("cd %s && head -c 1000 a.mtr > cut.mtr", dir), 0);
  assert_int_equal(memsnap("info cut.mtr"), 1);
  assert_output_contains("err", "cut.mtr: truncated at offset 1000");
  assert_int_equal(test_run("cd %s && printf 'I  0400,3\\n L 1ff,8\\n Q 1,1\\n' > bad.lackey", dir),
                   0);
  assert_int_equal(memsnap("convert bad.lackey bad.mtr"), 1);
  assert_output_contains("err", "bad.lackey:3: malformed lackey line: ' Q 1,1'");
  assert_int_equal(test_run("cd %s && ls | grep -q '^bad\\.mtr'", dir), 1); /* no file left */
}

static int setup(void **state) {
  (void)state;
  dir = test_tempdir();
  snprintf(sample, sizeof sample, "%s/tests/io/data/small.lackey", test_env("MEMSNAP_SOURCE_DIR"));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_rmdir(dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_info_counts_match_the_sample),
      cmocka_unit_test(test_dump_from_mtr_and_lackey_agree),
      cmocka_unit_test(test_mtr_din_mtr_keeps_every_access),
      cmocka_unit_test(test_errors_name_the_option_or_file),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* End-to-end behaviour of the CLI on bad input and on programs that fail: a one-line
 * message naming the file and offset (or the option), a non-zero exit, no crash, and no
 * half-written output file. Also: exit status pass-through and truncated traces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

static char *dir;

#define memsnap(...) test_memsnap_in(dir, __VA_ARGS__)

/* Asserts that stderr holds exactly one line containing every given fragment. */
static void assert_one_line_error(const char *fragment1, const char *fragment2) {
  char *err = test_read_in(dir, "err");
  assert_non_null(err);
  size_t length = strlen(err);
  int lines = 0;
  for (size_t i = 0; i < length; i++)
    lines += err[i] == '\n';
  if (lines != 1 || !strstr(err, fragment1) || (fragment2 && !strstr(err, fragment2)))
    fail_msg("expected one line with '%s' and '%s', got: %s", fragment1, fragment2 ? fragment2 : "",
             err);
  free(err);
}

static int file_exists(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return access(path, F_OK) == 0;
}

static void write_file(const char *name, const char *text, size_t size) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, size, f), size);
  fclose(f);
}

static void test_usage_errors(void **state) {
  (void)state;
  assert_int_equal(memsnap("frobnicate"), 2);
  assert_one_line_error("frobnicate", NULL);
  assert_int_equal(memsnap("sim --bogus x.mtr"), 2);
  assert_one_line_error("bogus", NULL);
  assert_int_equal(memsnap("dump --limit banana x.mtr"), 2);
  assert_one_line_error("banana", NULL);
}

static void test_hierarchy_errors(void **state) {
  (void)state;
  write_file("tiny.din", "0 1000 8\n1 1008 8\n", 18);
  assert_true(memsnap("sim --hierarchy nosuch tiny.din") != 0);
  assert_one_line_error("nosuch", NULL);
  assert_true(memsnap("sim --hierarchy 32768/48/8 tiny.din") != 0);
  assert_one_line_error("32768/48/8", NULL);
  assert_true(memsnap("sim --hierarchy 32768/64 tiny.din") != 0);
  assert_one_line_error("32768/64", NULL);
  assert_int_equal(memsnap("sim --hierarchy 32768/64/8 tiny.din"), 0);
  /* options after the input, and --top 0 (once read before its array) */
  assert_int_equal(memsnap("sim tiny.din --hierarchy 32768/64/8 --top 0"), 0);
  assert_int_equal(memsnap("dump tiny.din --limit 1"), 0);
  char *text = test_read_in(dir, "out");
  assert_non_null(text);
  assert_string_equal(text, "0 0 load 0x1000 8 -\n");
  free(text);
}

static void test_bad_files(void **state) {
  (void)state;
  assert_true(memsnap("info missing.mtr") != 0);
  assert_one_line_error("missing.mtr", NULL);
  write_file("junk.mtr", "this is not a trace at all\n\x01\x02", 29);
  assert_true(memsnap("info junk.mtr") != 0);
  assert_one_line_error("junk.mtr", NULL);
  write_file("bad.lackey", "I  04001d90,3\n L 1ffefffd38,8\n S zz,8\n", 38);
  assert_true(memsnap("convert bad.lackey out.mtr") != 0);
  assert_one_line_error("bad.lackey:3", NULL);
  assert_false(file_exists("out.mtr"));
  write_file("bad.din", "0 1000 8\n7 1008\n", 16);
  assert_true(memsnap("dump bad.din") != 0);
  assert_one_line_error("bad.din:2", NULL);
  /* --rank and --thread pick in a profile: refused for a trace and for a live program, not
   * ignored */
  write_file("good.din", "0 1000 8\n1 1008\n", 16);
  assert_int_equal(memsnap("convert good.din good.mtr"), 0);
  assert_int_equal(memsnap("info --rank 1 good.mtr"), 2);
  assert_one_line_error("good.mtr: --rank and --thread pick in a profile", NULL);
  assert_true(memsnap("sim -H nehalem --thread 1 good.mtr") != 0);
  assert_one_line_error("good.mtr: --rank and --thread pick in a profile", NULL);
  assert_true(memsnap("sim -H nehalem --rank 1 -- /bin/true") != 0);
  assert_one_line_error("a live program is observed whole", NULL);
}

static void test_truncated_mtr(void **state) {
  (void)state;
  char kernel[1024];
  test_kernel("stream_add", kernel, sizeof kernel);
  char command[2048];
  snprintf(command, sizeof command, "record --quiet -o whole.mtr -- %s", kernel);
  assert_int_equal(memsnap("%s", command), 0);
  assert_int_equal(
      test_run("cd %s && head -c $(( $(stat -c %%s whole.mtr) / 2 )) whole.mtr > cut.mtr", dir), 0);
  assert_true(memsnap("info cut.mtr") != 0);
  assert_one_line_error("cut.mtr", "offset");
  assert_true(memsnap("dump cut.mtr") != 0);
  assert_one_line_error("cut.mtr", "offset");
  assert_true(memsnap("convert cut.mtr cut.din") != 0);
  assert_false(file_exists("cut.din"));
  /* one byte changed a quarter into the file, among the chunks: info reads only the header
   * and trailer and still describes the trace; --check decodes the chunks and fails */
  assert_int_equal(memsnap("info --check whole.mtr"), 0);
  assert_int_equal(test_run("cd %s && cp whole.mtr flipped.mtr && "
                            "printf '\\377' | dd of=flipped.mtr bs=1 conv=notrunc status=none "
                            "seek=$(( $(stat -c %%s whole.mtr) / 4 ))",
                            dir),
                   0);
  assert_int_equal(memsnap("info flipped.mtr"), 0);
  assert_true(memsnap("info --check flipped.mtr") != 0);
  assert_one_line_error("flipped.mtr", "offset");
}

static void test_program_failures(void **state) {
  (void)state;
  char kernel[1024], command[2048];
  assert_true(memsnap("record -o none.mtr -- /nonexistent/program") != 0);
  assert_one_line_error("/nonexistent/program", NULL);
  assert_false(file_exists("none.mtr"));

  snprintf(command, sizeof command, "record --quiet -o exit3.mtr -- %s",
           test_kernel("exit3", kernel, sizeof kernel));
  assert_int_equal(memsnap("%s", command), 3);
  assert_int_equal(memsnap("info exit3.mtr"), 0);

  snprintf(command, sizeof command, "record --quiet -o segv.mtr -- %s",
           test_kernel("segv", kernel, sizeof kernel));
  assert_int_equal(memsnap("%s", command), 128 + 11);
  assert_int_equal(memsnap("info segv.mtr"), 0);
  char *info = test_read_in(dir, "out");
  assert_non_null(info);
  assert_non_null(strstr(info, "truncated"));
  assert_non_null(strstr(info, "yes"));
  free(info);
  assert_int_equal(memsnap("sim --hierarchy nehalem segv.mtr"), 0);

  /* SIGTERM to memsnap alone (`timeout`, a batch system's time limit) goes on to the
   * program: what it did until then is written, truncated, with no temporary file left,
   * and memsnap exits with the program's status */
  char spin[1024];
  test_kernel("spin", spin, sizeof spin);
  assert_int_equal(test_run("cd '%s' && timeout --preserve-status -s TERM 2 '%s' record -o "
                            "term.mtr -- '%s' 60 > out 2> err",
                            dir, test_env("MEMSNAP"), spin),
                   128 + 15);
  assert_int_equal(memsnap("info term.mtr"), 0);
  info = test_read_in(dir, "out");
  assert_non_null(strstr(info, "truncated:     yes (exit status 143)"));
  free(info);
  assert_int_equal(test_run("cd '%s' && timeout --preserve-status -s TERM 2 '%s' profile -o "
                            "term.psnap -- '%s' 60 > out 2> err",
                            dir, test_env("MEMSNAP"), spin),
                   128 + 15);
  assert_int_equal(memsnap("show term.psnap"), 0);
  assert_int_equal(test_run("ls '%s' | grep -q tmp", dir), 1); /* no temporary file left */

  /* an AVX-512 instruction, which Valgrind cannot run: SIGILL, the trace of what came
   * before, and memsnap says why and what to do (even with --quiet) */
  snprintf(command, sizeof command, "record --quiet -o ill.mtr -- %s 10000 avx512",
           test_kernel("segv", kernel, sizeof kernel));
  assert_int_equal(memsnap("%s", command), 128 + 4);
  char *ill = test_read_in(dir, "err");
  assert_non_null(strstr(ill, "segv was killed by SIGILL under Valgrind"));
  assert_non_null(strstr(ill, "memsnap-cc"));
  if (__builtin_cpu_supports("avx512f")) assert_non_null(strstr(ill, "-march=x86-64-v3"));
  free(ill);
  assert_int_equal(memsnap("info ill.mtr"), 0);
  info = test_read_in(dir, "out");
  assert_non_null(strstr(info, "truncated:     yes"));
  free(info);
  assert_int_equal(memsnap("dump ill.mtr"), 0);
  info = test_read_in(dir, "out");
  assert_non_null(strstr(info, "store")); /* the stores made before it */
  free(info);

  /* a wrapper that execs the program is followed into it, and the trace says so (info);
   * with --no-follow-exec the trace stops there, and memsnap says so (even with --quiet),
   * in the trace too */
  snprintf(command, sizeof command, "record --quiet -o env.mtr -- /usr/bin/env X=1 %s",
           test_kernel("exit3", kernel, sizeof kernel));
  assert_int_equal(memsnap("%s", command), 3);
  char *err = test_read_in(dir, "err");
  assert_null(strstr(err, "replaced itself"));
  free(err);
  assert_int_equal(memsnap("info env.mtr"), 0);
  info = test_read_in(dir, "out");
  assert_non_null(strstr(info, "truncated:     no"));
  assert_non_null(strstr(info, "the trace follows the new program"));
  free(info);
  snprintf(command, sizeof command,
           "record --quiet --no-follow-exec -o env.mtr -- /usr/bin/env X=1 %s",
           test_kernel("exit3", kernel, sizeof kernel));
  assert_int_equal(memsnap("%s", command), 3);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "/usr/bin/env replaced itself with another program (execve)"));
  assert_non_null(strstr(err, "--no-follow-exec"));
  free(err);
  assert_int_equal(memsnap("info env.mtr"), 0);
  info = test_read_in(dir, "out");
  assert_non_null(strstr(info, "the program replaced itself (execve) and what ran after"));
  free(info);
  /* processes it starts are named as not observed */
  snprintf(command, sizeof command, "record --quiet -o sh.mtr -- /bin/sh -c '%s; true'",
           test_kernel("exit3", kernel, sizeof kernel));
  assert_int_equal(memsnap("%s", command), 0);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "/bin/sh started 1 other process (fork"));
  free(err);
}

TEST_SCRATCH_GROUP(dir)

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_usage_errors),     cmocka_unit_test(test_hierarchy_errors),
      cmocka_unit_test(test_bad_files),        cmocka_unit_test(test_truncated_mtr),
      cmocka_unit_test(test_program_failures),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* What live commands write, and how their reports say what they observed.
 *
 * A report never goes into the observed program's standard output: without -o it goes to
 * standard error, and the program's output is byte for byte what it is without memsnap.
 * Every report (text and JSON) starts by saying what was observed: the program, its exit
 * status or signal, and whether the stream is truncated (a killed program, a trace of a
 * crashed one). */
#include <json-c/json.h>
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

/* 1 if files a and b of the scratch folder have the same bytes. */
static int same_bytes(const char *a, const char *b) {
  return test_run("cmp -s '%s/%s' '%s/%s'", dir, a, dir, b) == 0;
}

/* The JSON object in file `name`, with the fields of what was observed checked. */
static void assert_observed_json(const char *name, const char *program, int exit_status,
                                 const char *signal, int truncated) {
  char *text = read_in(name);
  json_object *root = json_tokener_parse(text);
  if (!root) fprintf(stderr, "not JSON: %s\n", text);
  assert_non_null(root);
  json_object *field;
  assert_true(json_object_object_get_ex(root, "program", &field));
  assert_non_null(strstr(json_object_get_string(field), program));
  assert_true(json_object_object_get_ex(root, "exit_status", &field));
  assert_int_equal(json_object_get_int(field), exit_status);
  assert_true(json_object_object_get_ex(root, "signal", &field));
  if (signal)
    assert_string_equal(json_object_get_string(field), signal);
  else
    assert_null(field);
  assert_true(json_object_object_get_ex(root, "truncated", &field));
  assert_int_equal(json_object_get_boolean(field), truncated);
  json_object_put(root);
  free(text);
}

/* The first line of file `name` says what was observed. */
static void assert_observed_line(const char *name, const char *fragment1, const char *fragment2) {
  char *text = read_in(name);
  char *line = strstr(text, "observed: ");
  assert_non_null(line);
  char *end = strchr(line, '\n');
  assert_non_null(end);
  *end = '\0';
  if (!strstr(line, fragment1) || !strstr(line, fragment2))
    fprintf(stderr, "line: %s\nexpected: %s, %s\n", line, fragment1, fragment2);
  assert_non_null(strstr(line, fragment1));
  assert_non_null(strstr(line, fragment2));
  free(text);
}

/* `memsnap ARGS -- stream_add 2000`: its standard output is the program's alone, the
 * report is on standard error; with `variants`, also: with -o FILE the report is in FILE,
 * with -o - it follows the program's output on standard output. */
static void check_live_command(const char *args, const char *marker, int variants) {
  char kernel[1024];
  test_kernel("stream_add", kernel, sizeof kernel);
  assert_int_equal(test_memsnap_in(dir, "%s -- '%s' 2000", args, kernel), 0);
  if (!same_bytes("out", "reference")) fprintf(stderr, "memsnap %s: output changed\n", args);
  assert_true(same_bytes("out", "reference"));
  char *err = read_in("err");
  if (!strstr(err, marker)) fprintf(stderr, "memsnap %s: no '%s' in:\n%s\n", args, marker, err);
  assert_non_null(strstr(err, marker));
  free(err);
  if (!variants) return;
  assert_int_equal(test_memsnap_in(dir, "%s -o report -- '%s' 2000", args, kernel), 0);
  assert_true(same_bytes("out", "reference"));
  char *report = read_in("report");
  assert_non_null(strstr(report, marker));
  free(report);
  err = read_in("err");
  assert_null(strstr(err, marker));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "%s -o - -- '%s' 2000", args, kernel), 0);
  char *out = read_in("out"), *reference = read_in("reference");
  assert_true(strncmp(out, reference, strlen(reference)) == 0 || strstr(out, reference));
  assert_non_null(strstr(out, marker));
  free(out);
  free(reference);
}

static void test_program_output_untouched(void **state) {
  (void)state;
  char kernel[1024];
  test_kernel("stream_add", kernel, sizeof kernel);
  assert_int_equal(test_run("cd '%s' && '%s' 2000 > reference", dir, kernel), 0);
  char *reference = read_in("reference");
  assert_true(strlen(reference) > 0);
  free(reference);
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o trace.mtr -- '%s' 2000", kernel), 0);
  assert_int_equal(test_memsnap_in(dir, "profile -q -o trace.psnap trace.mtr"), 0);
  check_live_command("sim -H nehalem", "observed: ", 1);
  check_live_command("sim -H nehalem --json", "\"truncated\":false", 0);
  check_live_command("surface -w 64 -d 1:16", "observed: ", 1);
  check_live_command("scores --top 2", "observed: ", 0);
  check_live_command("verify --no-cache trace.psnap", "exact match: 100.0000%", 1);
  check_live_command("compare -w 64 -d 1:16 trace.mtr", "observed: ", 0);
  check_live_command("compare --matrix -w 64 -d 1:16 trace.mtr", "observed: ", 0);
  check_live_command("signature", "Program", 0);
  check_live_command("profile -q", "stride", 0);
  /* the case of the report: gzip's compressed output stays what gzip writes */
  if (test_run("command -v gzip > /dev/null") == 0) {
    assert_int_equal(test_run("cd '%s' && echo 'known bytes' > plain && gzip -c plain > "
                              "reference.gz",
                              dir),
                     0);
    assert_int_equal(test_run("cd '%s' && '%s' sim -H nehalem -- gzip -c plain > out.gz 2> err",
                              dir, test_env("MEMSNAP")),
                     0);
    assert_true(same_bytes("out.gz", "reference.gz"));
  }
}

/* A program killed by SIGTERM through memsnap (as `timeout` does): the reports say so. */
static void test_killed_program(void **state) {
  (void)state;
  char spin[1024];
  test_kernel("spin", spin, sizeof spin);
  const char *commands[] = {"sim -H nehalem", "surface -w 64 -d 1:16"};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(test_run("cd '%s' && timeout --preserve-status -s TERM 2 '%s' %s -- '%s' 60 "
                              "> out 2> err",
                              dir, test_env("MEMSNAP"), commands[i], spin),
                     128 + 15);
    assert_observed_line("err", "spin 60: killed by SIGTERM", "truncated");
    assert_int_equal(test_run("cd '%s' && timeout --preserve-status -s TERM 2 '%s' %s --json -o "
                              "killed.json -- '%s' 60 > out 2> err",
                              dir, test_env("MEMSNAP"), commands[i], spin),
                     128 + 15);
    assert_observed_json("killed.json", "spin", 143, "SIGTERM", 1);
  }
}

/* The trace of a crashed program is marked truncated: every report of it says so; the
 * trace of a complete run says it is complete. */
static void test_truncated_trace(void **state) {
  (void)state;
  char kernel[1024];
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o segv.mtr -- '%s'",
                                   test_kernel("segv", kernel, sizeof kernel)),
                   128 + 11);
  assert_int_equal(test_memsnap_in(dir, "record --quiet -o whole.mtr -- '%s' 1000",
                                   test_kernel("stream_add", kernel, sizeof kernel)),
                   0);
  const char *commands[] = {"sim -H nehalem", "surface -w 64 -d 1:16", "scores --top 2"};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(test_memsnap_in(dir, "%s segv.mtr", commands[i]), 0);
    assert_observed_line("out", "segv (from segv.mtr): killed by SIGSEGV", "truncated");
    assert_int_equal(test_memsnap_in(dir, "%s --json segv.mtr", commands[i]), 0);
    assert_observed_json("out", "segv", 139, "SIGSEGV", 1);
    assert_int_equal(test_memsnap_in(dir, "%s whole.mtr", commands[i]), 0);
    assert_observed_line("out", "stream_add 1000 (from whole.mtr): exit status 0", "complete");
    assert_int_equal(test_memsnap_in(dir, "%s --json whole.mtr", commands[i]), 0);
    assert_observed_json("out", "stream_add", 0, NULL, 0);
  }
  assert_int_equal(test_memsnap_in(dir, "compare -w 64 -d 1:16 segv.mtr whole.mtr"), 0);
  assert_observed_line("out", "killed by SIGSEGV", "truncated");
  assert_int_equal(test_memsnap_in(dir, "profile -q -o segv.psnap segv.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "verify --no-cache segv.psnap segv.mtr"), 0);
  assert_observed_line("out", "killed by SIGSEGV", "truncated");
}

/* record --analysis runs analyses in the recording's pass: their reports are those of the
 * commands of the same name on the trace written (but for the file named in the observed
 * line), the program's output stays its own, and a bad analysis starts nothing. */
static void test_record_runs_analyses(void **state) {
  (void)state;
  char kernel[1024];
  test_kernel("stream_add", kernel, sizeof kernel);
  assert_int_equal(test_run("cd '%s' && '%s' 3000 > reference", dir, kernel), 0);
  assert_int_equal(test_memsnap_in(dir,
                                   "record -q -o live.mtr -a 'sim hierarchy=nehalem top=3' "
                                   "--analysis 'scores top=2' --report live.txt -- '%s' 3000",
                                   kernel),
                   0);
  assert_true(same_bytes("out", "reference"));
  assert_int_equal(test_memsnap_in(dir, "sim -H nehalem --top 3 live.mtr"), 0);
  assert_int_equal(test_run("cd '%s' && sed 's/ (from live.mtr)//' out > expected", dir), 0);
  assert_int_equal(test_memsnap_in(dir, "scores --top 2 live.mtr"), 0);
  assert_int_equal(
      test_run("cd '%s' && echo >> expected && sed 's/ (from live.mtr)//' out >> expected", dir),
      0);
  if (!same_bytes("live.txt", "expected"))
    assert_int_equal(test_run("cd '%s' && diff expected live.txt >&2", dir), 0);
  /* a bad analysis: a usage error, and no program run, no trace */
  assert_int_equal(test_memsnap_in(dir, "record -o never.mtr -a 'sim top=3' -- '%s' 10", kernel),
                   2);
  char *err = read_in("err");
  assert_non_null(strstr(err, "memsnap record: --analysis: sim: no hierarchy"));
  free(err);
  assert_int_equal(test_run("test -e '%s/never.mtr'", dir), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_program_output_untouched),
      cmocka_unit_test(test_record_runs_analyses),
      cmocka_unit_test(test_killed_program),
      cmocka_unit_test(test_truncated_trace),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

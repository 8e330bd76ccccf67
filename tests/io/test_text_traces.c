/* Lackey and din: a real Lackey trace (tests/io/data/small.lackey, from
 * `valgrind --tool=lackey --trace-mem=yes`), lackey -> mtr -> din -> mtr keeping every
 * address, malformed lines, detection. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h> /* after the headers it needs */

#include "memsnap/memsnap.h"
#include "memsnap/trace.h"

static char temp_dir[] = "/tmp/memsnap-test-text-XXXXXX";
static char sample[1024];

static void temp_path(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s/%s", temp_dir, name);
}

static void put_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* Reads a whole trace into memory. */
static ms_access *read_all(const char *path, size_t *count, int *status) {
  ms_source *source;
  *status = ms_trace_open(path, &source);
  *count = 0;
  if (*status < 0) return NULL;
  ms_batch batch;
  ms_batch_init(&batch, 1000);
  ms_access *all = NULL;
  int n;
  while ((n = ms_source_next(source, &batch)) > 0) {
    all = realloc(all, (*count + batch.count) * sizeof *all);
    memcpy(all + *count, batch.accesses, batch.count * sizeof *all);
    *count += batch.count;
  }
  *status = n;
  ms_batch_free(&batch);
  ms_source_destroy(source);
  return all;
}

static int convert(const char *in, const char *out, ms_trace_format format) {
  ms_source *source;
  int rc = ms_trace_open(in, &source);
  if (rc < 0) return rc;
  ms_sink *sink;
  rc = ms_trace_sink_new(out, format, &sink);
  if (rc == 0) {
    rc = ms_pipeline_run(source, &sink, 1, 0);
    ms_sink_destroy(sink);
  }
  ms_source_destroy(source);
  return rc;
}

static void test_lackey_sample(void **state) {
  (void)state;
  assert_int_equal(ms_trace_detect(sample), MS_FORMAT_LACKEY);
  /* oracle: the file's own lines, parsed with sscanf */
  FILE *f = fopen(sample, "r");
  assert_non_null(f);
  char line[256];
  uint64_t expected_address[4096], pc = 0, expected_pc[4096];
  char expected_kind[4096];
  size_t expected = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long address;
    unsigned size;
    if (sscanf(line, "I  %llx,%u", &address, &size) == 2)
      pc = address;
    else if (line[0] == ' ' && sscanf(line + 3, "%llx,%u", &address, &size) == 2) {
      expected_kind[expected] = line[1];
      expected_pc[expected] = pc;
      expected_address[expected++] = address;
    }
  }
  fclose(f);
  assert_true(expected > 300);

  ms_source *source;
  assert_int_equal(ms_trace_open(sample, &source), 0);
  assert_string_equal(source->info.program, "./k");
  assert_string_equal(source->info.capture, "lackey");
  ms_batch batch;
  ms_batch_init(&batch, 100);
  size_t seen = 0;
  int n;
  while ((n = ms_source_next(source, &batch)) > 0)
    for (size_t i = 0; i < batch.count; i++, seen++) {
      const ms_access *a = &batch.accesses[i];
      assert_int_equal(a->address, expected_address[seen]);
      assert_int_equal("LSM"[a->kind], expected_kind[seen]);
      assert_int_equal(ms_site_table_get(source->info.sites, a->site)->pc, expected_pc[seen]);
    }
  assert_int_equal(n, 0);
  assert_int_equal(seen, expected);
  ms_batch_free(&batch);
  ms_source_destroy(source);
}

static void test_lackey_mtr_din_mtr_keeps_addresses(void **state) {
  (void)state;
  char mtr[256], din[256], mtr2[256];
  temp_path(mtr, sizeof mtr, "a.mtr");
  temp_path(din, sizeof din, "a.din");
  temp_path(mtr2, sizeof mtr2, "b.mtr");
  assert_int_equal(convert(sample, mtr, MS_FORMAT_MTR), 0);
  assert_int_equal(convert(mtr, din, MS_FORMAT_DIN), 0);
  assert_int_equal(convert(din, mtr2, MS_FORMAT_MTR), 0);
  size_t lackey_count, mtr_count, final_count;
  int rc;
  ms_access *lackey = read_all(sample, &lackey_count, &rc);
  assert_int_equal(rc, 0);
  ms_access *first = read_all(mtr, &mtr_count, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(mtr_count, lackey_count);
  assert_memory_equal(lackey, first, lackey_count * sizeof *lackey); /* bit-exact, sites too */
  ms_access *final = read_all(mtr2, &final_count, &rc);
  assert_int_equal(rc, 0);
  /* din writes a modify as a read then a write */
  size_t k = 0;
  for (size_t i = 0; i < lackey_count; i++) {
    int copies = lackey[i].kind == MS_MODIFY ? 2 : 1;
    for (int c = 0; c < copies; c++, k++) {
      assert_true(k < final_count);
      assert_int_equal(final[k].address, lackey[i].address);
      assert_int_equal(final[k].size, lackey[i].size);
      assert_int_equal(final[k].site, MS_SITE_NONE);
      if (lackey[i].kind != MS_MODIFY)
        assert_int_equal(final[k].kind, lackey[i].kind);
      else
        assert_int_equal(final[k].kind, c ? MS_STORE : MS_LOAD);
    }
  }
  assert_int_equal(k, final_count);
  free(lackey);
  free(first);
  free(final);
}

static void expect_error(const char *name, const char *text, int status, const char *message) {
  char path[256], expected[512];
  temp_path(path, sizeof path, name);
  put_text(path, text);
  size_t count;
  int rc;
  free(read_all(path, &count, &rc));
  assert_int_equal(rc, status);
  snprintf(expected, sizeof expected, message, path);
  assert_string_equal(ms_error_message(), expected);
}

static void test_malformed_lines(void **state) {
  (void)state;
  expect_error("bad1.lackey", "==1== hi\nI  0400,3\n L 1ff,8\n X 12,4\n", MS_ERR_FORMAT,
               "%s:4: malformed lackey line: ' X 12,4'");
  expect_error("bad2.lackey", "I  0400,3\n L 1ff8\n", MS_ERR_FORMAT,
               "%s:2: malformed lackey line: ' L 1ff8'");
  expect_error("bad3.lackey", "I  0400,3\n S 1ff,8 junk\n", MS_ERR_FORMAT,
               "%s:2: malformed lackey line: ' S 1ff,8 junk'");
  expect_error("bad4.lackey", " L 12345678901234567,8\n", MS_ERR_FORMAT,
               "%s:1: malformed lackey line: ' L 12345678901234567,8'");
  expect_error("bad1.din", "0 1000 8\n1 2000\n7 3000\n", MS_ERR_FORMAT,
               "%s:3: malformed din line: '7 3000'");
  expect_error("bad2.din", "0 1000 8\n1 zz\n", MS_ERR_FORMAT, "%s:2: malformed din line: '1 zz'");
  expect_error("bad3.din", "0 1000 8\n1 10 4 4\n", MS_ERR_FORMAT,
               "%s:2: malformed din line: '1 10 4 4'");
}

static void test_din_reader(void **state) {
  (void)state;
  char path[256];
  temp_path(path, sizeof path, "ok.din");
  put_text(
      path,
      "# comment\n0 1000 8\n\n1 0x2000\n2 400000 4\n3 0\n4 0\n0 ffffffffffffffff 255\r\n1 0 1");
  assert_int_equal(ms_trace_detect(path), MS_FORMAT_DIN);
  size_t count;
  int rc;
  ms_access *a = read_all(path, &count, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(count, 4);
  assert_int_equal(a[0].address, 0x1000);
  assert_int_equal(a[0].size, 8);
  assert_int_equal(a[1].address, 0x2000);
  assert_int_equal(a[1].size, 4); /* no size: 4 */
  assert_int_equal(a[1].kind, MS_STORE);
  assert_int_equal(a[2].address, UINT64_MAX);
  assert_int_equal(a[2].size, 255);
  assert_int_equal(a[3].address, 0);
  free(a);
}

static void test_detection(void **state) {
  (void)state;
  char path[256];
  temp_path(path, sizeof path, "noext");
  put_text(path, "==5== Lackey\nI  04001d90,3\n");
  assert_int_equal(ms_trace_detect(path), MS_FORMAT_LACKEY);
  put_text(path, "hello\n");
  assert_int_equal(ms_trace_detect(path), MS_FORMAT_UNKNOWN);
  size_t count;
  int rc;
  free(read_all(path, &count, &rc));
  assert_int_equal(rc, MS_ERR_FORMAT);
  assert_non_null(strstr(ms_error_message(), path));
  temp_path(path, sizeof path, "empty.din");
  put_text(path, "");
  assert_int_equal(ms_trace_detect(path), MS_FORMAT_DIN);
  assert_int_equal(ms_trace_format_from_extension("x/y.MTR"), MS_FORMAT_MTR);
  assert_int_equal(ms_trace_format_from_extension("x.d/y"), MS_FORMAT_UNKNOWN);
  assert_string_equal(ms_trace_format_name(MS_FORMAT_LACKEY), "lackey");
  ms_sink *sink;
  assert_int_equal(ms_trace_sink_new("x.lackey", MS_FORMAT_LACKEY, &sink), MS_ERR_UNSUPPORTED);
}

int main(void) {
  const char *source_dir = getenv("MEMSNAP_SOURCE_DIR");
  snprintf(sample, sizeof sample, "%s/tests/io/data/small.lackey",
           source_dir ? source_dir : MEMSNAP_DEFAULT_SOURCE_DIR);
  if (!mkdtemp(temp_dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lackey_sample),
      cmocka_unit_test(test_lackey_mtr_din_mtr_keeps_addresses),
      cmocka_unit_test(test_malformed_lines),
      cmocka_unit_test(test_din_reader),
      cmocka_unit_test(test_detection),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  char command[300];
  snprintf(command, sizeof command, "rm -rf %s", temp_dir);
  if (system(command) != 0) return 1;
  return failed;
}

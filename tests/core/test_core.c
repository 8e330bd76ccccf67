/* Core: batches, access kinds, site table, pipeline fan-out, atomic output, errors, version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memsnap/memsnap.h"
#include "memsnap/output.h"

static void test_access_kinds(void **state) {
  (void)state;
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++)
    assert_int_equal(ms_access_kind_parse(ms_access_kind_name((ms_access_kind)k)), k);
  assert_int_equal(ms_access_kind_parse("fetch"), -1);
  assert_string_equal(ms_access_kind_name(MS_MODIFY), "modify");
}

static void test_site_table_add_find(void **state) {
  (void)state;
  ms_site_table *table = ms_site_table_new();
  /* enough sites to force several rehashes */
  for (uint64_t i = 0; i < 5000; i++)
    assert_int_equal(ms_site_table_add(table, 0x400000 + 4 * i, "/bin/x", NULL, NULL, 0),
                     (int64_t)i);
  /* a duplicate pc gets a new id, but find keeps answering the first */
  assert_int_equal(ms_site_table_add(table, 0x400000, "/bin/x", "f", "f.c", 3), 5000);
  assert_int_equal(ms_site_table_count(table), 5001);
  for (uint64_t i = 0; i < 5000; i++)
    assert_int_equal(ms_site_table_find(table, 0x400000 + 4 * i), (int64_t)i);
  assert_int_equal(ms_site_table_find(table, 0x3fffff), -1);
  const ms_site *a = ms_site_table_get(table, 0), *b = ms_site_table_get(table, 4999);
  assert_ptr_equal(a->object, b->object); /* object paths are interned */
  assert_null(ms_site_table_get(table, 5001));
  assert_int_equal(ms_site_table_set_location(table, 7, "kernel", "k.c", 42), 0);
  char buf[128];
  assert_string_equal(ms_site_describe(ms_site_table_get(table, 7), buf, sizeof buf),
                      "kernel (k.c:42)");
  assert_string_equal(ms_site_describe(ms_site_table_get(table, 8), buf, sizeof buf), "0x400020");
  ms_site_table_free(table);
}

/* Oracle: this very test binary, built with -g. The pc of a function resolves to its name
 * and to this file. The load bias is the distance between the run-time and the link-time
 * address, read from libdw's view of the same function through /proc/self/exe. */
static int marker_function(int x) { return x * 3 + 1; }

static void test_site_table_resolve_self(void **state) {
  (void)state;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  /* find the load bias from /proc/self/maps: the first mapping of the executable */
  FILE *maps = fopen("/proc/self/maps", "r");
  assert_non_null(maps);
  char line[4096];
  unsigned long long bias = 0;
  int found = 0;
  while (fgets(line, sizeof line, maps)) {
    unsigned long long start, offset;
    char path[4096] = "";
    if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %4095s", &start, &offset, path) == 3 &&
        strcmp(path, exe) == 0 && offset == 0) {
      bias = start;
      found = 1;
      break;
    }
  }
  fclose(maps);
  assert_true(found);
  ms_site_table *table = ms_site_table_new();
  uint64_t pc = (uint64_t)(uintptr_t)&marker_function;
  /* non-PIE executables map at their link address: bias 0 */
  if (pc < bias) bias = 0;
  int64_t id = ms_site_table_add(table, pc, exe, NULL, NULL, 0);
  ms_site_table_add(table, pc, "/some/other/object", NULL, NULL, 0);
  int resolved =
      ms_site_table_resolve(table, exe, strstr(exe, "asan") || pc > 0x1000000 ? bias : 0);
  assert_int_equal(resolved, 1);
  const ms_site *site = ms_site_table_get(table, (uint32_t)id);
  assert_string_equal(site->function, "marker_function");
  assert_non_null(site->file);
  assert_non_null(strstr(site->file, "test_core.c"));
  assert_true(site->line > 0);
  assert_null(ms_site_table_get(table, 1)->function); /* other objects untouched */
  assert_int_equal(marker_function(1), 4);
  assert_true(ms_site_table_resolve(table, "/nonexistent/object", 0) < 0);
  ms_site_table_free(table);
}

/* A source of n accesses with address = index, in batches of whatever capacity it gets. */
typedef struct counting_source {
  ms_source base;
  uint64_t next_index, total;
} counting_source;

static int counting_next(ms_source *source, ms_batch *batch) {
  counting_source *self = (counting_source *)source;
  batch->count = 0;
  while (batch->count < batch->capacity && self->next_index < self->total) {
    ms_access *a = &batch->accesses[batch->count++];
    a->address = self->next_index++;
    a->size = 8;
    a->kind = MS_LOAD;
    a->site = 0;
    a->thread = 0;
  }
  return (int)batch->count;
}
static void counting_destroy(ms_source *source) { ms_stream_info_clear(&source->info); }
static const ms_source_ops counting_ops = {counting_next, NULL, counting_destroy};

typedef struct summing_sink {
  ms_sink base;
  int began, ended;
  uint64_t count, sum;
} summing_sink;

static int summing_begin(ms_sink *sink, const ms_stream_info *info) {
  (void)info;
  ((summing_sink *)sink)->began++;
  return 0;
}
static int summing_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  (void)info;
  summing_sink *self = (summing_sink *)sink;
  for (size_t i = 0; i < batch->count; i++)
    self->sum += batch->accesses[i].address;
  self->count += batch->count;
  return 0;
}
static int summing_end(ms_sink *sink, const ms_stream_info *info) {
  (void)info;
  ((summing_sink *)sink)->ended++;
  return 0;
}
static void summing_destroy(ms_sink *sink) { (void)sink; }
static const ms_sink_ops summing_ops = {summing_begin, summing_consume, summing_end,
                                        summing_destroy};

static void test_pipeline_fan_out(void **state) {
  (void)state;
  counting_source source = {.base = {.ops = &counting_ops}, .total = 10000};
  source.base.info.sites = ms_site_table_new();
  summing_sink a = {.base = {.ops = &summing_ops}}, b = a;
  ms_sink *sinks[] = {&a.base, &b.base};
  assert_int_equal(ms_pipeline_run(&source.base, sinks, 2, 0), 0);
  uint64_t expected = 10000ull * 9999 / 2;
  assert_int_equal(a.count, 10000);
  assert_int_equal(b.count, 10000);
  assert_int_equal(a.sum, expected);
  assert_int_equal(b.sum, expected);
  assert_int_equal(a.began + a.ended + b.began + b.ended, 4);
  assert_int_equal(ms_source_seek(&source.base, 0), MS_ERR_UNSUPPORTED);
  ms_source_destroy(&source.base);

  counting_source limited = {.base = {.ops = &counting_ops}, .total = 10000};
  limited.base.info.sites = ms_site_table_new();
  summing_sink c = {.base = {.ops = &summing_ops}};
  ms_sink *one[] = {&c.base};
  assert_int_equal(ms_pipeline_run(&limited.base, one, 1, 4100), 0);
  assert_int_equal(c.count, 4100);
  assert_int_equal(c.sum, 4100ull * 4099 / 2);
  ms_source_destroy(&limited.base);
}

static void test_output_atomic(void **state) {
  (void)state;
  char dir[] = "/tmp/memsnap-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/out.txt", dir);
  ms_output out;
  assert_int_equal(ms_output_open(&out, path), 0);
  fputs("partial", out.file);
  assert_int_equal(access(path, F_OK), -1); /* nothing at the target before commit */
  ms_output_abort(&out);
  assert_int_equal(access(path, F_OK), -1); /* and nothing after an abort */
  assert_int_equal(ms_output_open(&out, path), 0);
  fputs("whole", out.file);
  assert_int_equal(ms_output_commit(&out), 0);
  FILE *f = fopen(path, "r");
  char text[16] = "";
  assert_non_null(fgets(text, sizeof text, f));
  fclose(f);
  assert_string_equal(text, "whole");
  unlink(path);
  rmdir(dir);
  assert_true(ms_output_open(&out, "/nonexistent-dir/x") < 0);
  assert_non_null(strstr(ms_error_message(), "/nonexistent-dir/x"));
}

static void test_errors(void **state) {
  (void)state;
  assert_int_equal(ms_error_set(MS_ERR_FORMAT, "%s: offset %d: bad magic", "t.mtr", 0),
                   MS_ERR_FORMAT);
  assert_string_equal(ms_error_message(), "t.mtr: offset 0: bad magic");
  assert_string_equal(ms_status_name(MS_ERR_TRUNCATED), "truncated input");
}

/* The library reports the version of the header it was built with, and the header's
 * string and number both come from MS_VERSION_MAJOR/_MINOR/_PATCH. */
static void test_version(void **state) {
  (void)state;
  assert_int_equal(ms_version_number(), MS_VERSION_NUMBER);
  assert_string_equal(ms_version_string(), MS_VERSION_STRING);
  char parts[32];
  snprintf(parts, sizeof parts, "%d.%d.%d", MS_VERSION_MAJOR, MS_VERSION_MINOR, MS_VERSION_PATCH);
  assert_string_equal(MS_VERSION_STRING, parts);
  assert_int_equal(MS_VERSION_NUMBER,
                   MS_VERSION_MAJOR * 10000 + MS_VERSION_MINOR * 100 + MS_VERSION_PATCH);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_access_kinds),
      cmocka_unit_test(test_site_table_add_find),
      cmocka_unit_test(test_site_table_resolve_self),
      cmocka_unit_test(test_pipeline_fan_out),
      cmocka_unit_test(test_output_atomic),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_version),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

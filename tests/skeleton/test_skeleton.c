/* Memory skeletons from traces (memsnap/skeleton.h).
 *
 * Oracles: the slices taken by the documented rule from the stream itself (slice k of S
 * starts at k * N / S and holds N / (S * R) accesses), cut into clusters, as multisets of
 * (line within its 2 MiB chunk, load or store); the skeleton's table read back and, for a
 * kernel, the skeleton compiled, recorded with memsnap and its data accesses compared
 * with the kernel's slices cluster by cluster. Its bookkeeping is the table loads, one
 * per run.
 */
#include <inttypes.h>
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
#include "memsnap/sites.h"
#include "memsnap/skeleton.h"
#include "testutil.h"

static char *dir;
TEST_SCRATCH_GROUP(dir)

#define CHUNK_BITS 21

/* One access of a cluster: its line's place within its 2 MiB chunk, and a store or not. */
typedef struct cell {
  uint64_t line_in_chunk;
  int store;
} cell;

static int compare_cells(const void *a, const void *b) {
  const cell *x = a, *y = b;
  if (x->line_in_chunk != y->line_in_chunk) return x->line_in_chunk < y->line_in_chunk ? -1 : 1;
  return x->store - y->store;
}

/* The skeleton's table words, read back from its C text. */
static uint64_t *table_words(const char *text, size_t *count) {
  size_t n = 0, capacity = 1024;
  uint64_t *words = malloc(capacity * sizeof *words);
  const char *table = strstr(text, "skeleton_runs[] = {");
  assert_non_null(table);
  for (const char *p = table; (p = strstr(p, "UINT64_C(0x")) != NULL; p += 11) {
    if (n == capacity) words = realloc(words, (capacity *= 2) * sizeof *words);
    words[n++] = strtoull(p + 11, NULL, 16);
  }
  *count = n;
  return words;
}

/* The accesses of the table's words, in order, as cells (line index within its chunk):
 * runs of lines, and groups of lanes walked in lockstep. */
static cell *table_cells(const uint64_t *words, size_t count, uint32_t line, size_t *cells,
                         size_t *groups) {
  uint32_t chunk = 1u << CHUNK_BITS, chunk_lines = chunk / line;
  size_t n = 0, capacity = 1024;
  cell *out = malloc(capacity * sizeof *out);
  *groups = 0;
  for (size_t r = 0; r < count; r++) {
    uint64_t w = words[r];
    if (w >> 63) {
      unsigned lanes = (unsigned)(w & 7) + 1, iterations = (unsigned)(w >> 3 & 0xFFFF) + 1;
      assert_true(r + lanes < count);
      for (unsigned i = 0; i < iterations; i++)
        for (unsigned k = 0; k < lanes; k++) {
          uint64_t lane = words[r + 1 + k];
          uint64_t at = (lane & ((UINT64_C(1) << 40) - 1)) +
                        (uint64_t)i * (uint64_t)((int64_t)(lane << 8) >> 48);
          if (n == capacity) out = realloc(out, (capacity *= 2) * sizeof *out);
          out[n++] = (cell){at % chunk / line, (int)(lane >> 56 & 1)};
        }
      r += lanes;
      ++*groups;
      continue;
    }
    uint64_t index = w & ((UINT64_C(1) << 34) - 1);
    int64_t stride = (int64_t)(w << 18) >> 52;
    unsigned lines = (unsigned)(w >> 46 & 255) + 1, per_line = (unsigned)(w >> 54 & 255) + 1;
    for (unsigned l = 0; l < lines; l++, index += (uint64_t)stride)
      for (unsigned a = 0; a < per_line; a++) {
        if (n == capacity) out = realloc(out, (capacity *= 2) * sizeof *out);
        out[n++] = (cell){index % chunk_lines, (int)(w >> 62 & 1)};
      }
  }
  *cells = n;
  return out;
}

/* The first access of slice k of `slices` of `size` in a run of n, by the documented rule
 * (memsnap/skeleton.h): in the k-th part, at an offset drawn from k. */
static uint64_t slice_first(uint64_t k, uint64_t n, uint64_t slices, uint64_t size) {
  uint64_t room = n / slices - size, h = (k + 1) * 0x9E3779B97F4A7C15ull;
  h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
  return k * n / slices + (room ? (h ^ (h >> 29)) % (room + 1) : 0);
}

/* The slices of `stream` (n accesses) by the documented rule, as cells. */
static cell *slice_cells(const ms_access *stream, uint64_t n, uint64_t slices, uint64_t ratio,
                         uint32_t line, size_t *cells) {
  uint64_t size = n / (slices * ratio);
  cell *out = malloc(slices * size * sizeof *out);
  size_t k = 0;
  for (uint64_t s = 0; s < slices; s++)
    for (uint64_t i = slice_first(s, n, slices, size); i < slice_first(s, n, slices, size) + size;
         i++)
      out[k++] = (cell){(stream[i].address % (1u << CHUNK_BITS)) / line, stream[i].kind != MS_LOAD};
  *cells = k;
  return out;
}

/* Cluster by cluster (the last of a slice may be short: `bounds` are the slices' ends),
 * the same multisets. */
static void assert_same_clusters(cell *expected, cell *got, size_t n, uint32_t cluster,
                                 const size_t *slice_ends, size_t slices) {
  size_t from = 0;
  for (size_t s = 0; s < slices; s++)
    while (from < slice_ends[s]) {
      size_t to = from + cluster < slice_ends[s] ? from + cluster : slice_ends[s];
      qsort(expected + from, to - from, sizeof *expected, compare_cells);
      qsort(got + from, to - from, sizeof *got, compare_cells);
      for (size_t i = from; i < to; i++)
        if (compare_cells(&expected[i], &got[i]))
          fail_msg("cluster at access %zu of the slices differs at %zu: line %" PRIu64
                   " %s expected, line %" PRIu64 " %s in the skeleton",
                   from, i, expected[i].line_in_chunk, expected[i].store ? "store" : "load",
                   got[i].line_in_chunk, got[i].store ? "store" : "load");
      from = to;
    }
  assert_int_equal(from, n);
}

static void feed(ms_sink *sink, ms_stream_info *info, ms_access *stream, size_t n) {
  ms_batch batch = {stream, n, n};
  if (sink->ops->begin) assert_int_equal(sink->ops->begin(sink, info), 0);
  assert_int_equal(sink->ops->consume(sink, info, &batch), 0);
  assert_int_equal(sink->ops->end(sink, info), 0);
}

/* A made stream over three chunks: a stream of loads, scattered stores and a second
 * array; two slices of 100 in 1000 (ratio 5), clusters of 8. */
static void clusters_hold_the_slices_lines(void **state) {
  (void)state;
  enum { N = 1000 };
  ms_access stream[N];
  for (size_t i = 0; i < N; i++) {
    uint64_t address = i % 3 == 0   ? 0x10000000 + 8 * i
                       : i % 3 == 1 ? 0x7ff000001000 + ((i * 37) % 211) * 24
                                    : 0x10200000 - 64 + 16 * (i % 50);
    stream[i] = (ms_access){address, 0, 0, 8, i % 3 == 1 ? MS_STORE : MS_LOAD};
  }
  ms_skeleton_config config;
  ms_skeleton_config_default(&config);
  config.slices = 2, config.ratio = 5, config.cluster = 8, config.min_slice_size = 0;
  ms_sink *sink;
  assert_int_equal(ms_skeleton_builder_new(&config, &sink), 0);
  ms_stream_info info = {.access_count = N};
  feed(sink, &info, stream, N);
  ms_skeleton_summary summary;
  assert_int_equal(ms_skeleton_summarize(sink, &summary), 0);
  assert_int_equal(summary.slices, 2);
  assert_int_equal(summary.slice_size, 100);
  assert_int_equal(summary.kept, 200);
  assert_int_equal(summary.clusters, 2 * 13); /* 12 of 8 and one of 4 per slice */
  assert_int_equal(summary.chunks, 6);        /* three per slice: each slice has its own */
  char *text = NULL;
  size_t length = 0;
  FILE *out = open_memstream(&text, &length);
  assert_int_equal(ms_skeleton_write_c(sink, &info, out), 0);
  fclose(out);
  size_t words_count, got_count, expected_count;
  uint64_t *words = table_words(text, &words_count);
  assert_int_equal(words_count, summary.runs);
  size_t groups;
  cell *got = table_cells(words, words_count, config.line, &got_count, &groups);
  assert_int_equal(groups, summary.groups);
  cell *expected = slice_cells(stream, N, 2, 5, config.line, &expected_count);
  assert_int_equal(got_count, 200);
  assert_int_equal(expected_count, 200);
  size_t ends[2] = {100, 200};
  assert_same_clusters(expected, got, 200, 8, ends, 2);
  /* groups and runs of lines take fewer words than the clusters' distinct lines */
  size_t distinct = 0;
  for (size_t i = 0; i < 200; i++)
    distinct += i % 100 % 8 == 0 || compare_cells(&expected[i - 1], &expected[i]) != 0;
  print_message("%" PRIu64 " words (%" PRIu64 " groups) for %zu distinct lines of the clusters\n",
                summary.runs, summary.groups, distinct);
  assert_true(summary.runs < distinct);
  free(words), free(got), free(expected), free(text);
  ms_sink_destroy(sink);
}

/* Slices shorter than min_slice_size (1 Mi accesses by default) are not taken: fewer
 * slices are. 5 M accesses at ratio 2 keep 2.5 M: two slices of 1.25 M, not ten of 250 k. */
static void short_slices_become_fewer(void **state) {
  (void)state;
  enum { BATCH = 65536, N = 5000000 };
  ms_access *accesses = malloc(BATCH * sizeof *accesses);
  assert_non_null(accesses);
  ms_skeleton_config config;
  ms_skeleton_config_default(&config);
  config.ratio = 2;
  ms_sink *sink;
  assert_int_equal(ms_skeleton_builder_new(&config, &sink), 0);
  ms_stream_info info = {.access_count = N};
  for (uint64_t done = 0; done < N;) {
    size_t n = N - done < BATCH ? (size_t)(N - done) : BATCH;
    for (size_t i = 0; i < n; i++)
      accesses[i] = (ms_access){0x10000000 + 8 * ((done + i) % 100000), 0, 0, 8, MS_LOAD};
    ms_batch batch = {accesses, n, n};
    assert_int_equal(sink->ops->consume(sink, &info, &batch), 0);
    done += n;
  }
  assert_int_equal(sink->ops->end(sink, &info), 0);
  ms_skeleton_summary summary;
  assert_int_equal(ms_skeleton_summarize(sink, &summary), 0);
  assert_int_equal(summary.slices, 2);
  assert_int_equal(summary.slice_size, 1250000);
  assert_int_equal(summary.kept, 2500000);
  ms_sink_destroy(sink);
  free(accesses);
}

/* The accesses of a trace or of a program's recording, all of them. */
static ms_access *read_all(const char *path, uint64_t *n, ms_stream_info **info_out,
                           ms_source **source_out) {
  ms_source *source;
  if (ms_open(path, 0, NULL, NULL, &source) < 0) fail_msg("%s: %s", path, ms_error_message());
  size_t capacity = 1 << 16, count = 0;
  ms_access *all = malloc(capacity * sizeof *all);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  int rc;
  while ((rc = ms_source_next(source, &batch)) > 0) {
    if (count + batch.count > capacity) {
      while (count + batch.count > capacity)
        capacity *= 2;
      all = realloc(all, capacity * sizeof *all);
    }
    memcpy(all + count, batch.accesses, batch.count * sizeof *all);
    count += batch.count;
  }
  assert_true(rc >= 0);
  ms_batch_free(&batch);
  *n = count;
  *info_out = (ms_stream_info *)ms_source_info(source);
  *source_out = source;
  return all;
}

/* stream_add's skeleton (3 slices, ratio 4, clusters of 64), compiled with warnings as
 * errors and recorded: its accesses inside the data range it prints are the slices'
 * clusters, and its other accesses in skeleton_walk are its table loads, one per run.
 * Loads whose value went unused were invisible to the recording (Valgrind's translation
 * drops them): the skeleton sums what it loads. */
static void kernel_skeleton(const char *form) {
  char kernel[1024];
  if (test_run("test -f '%s/app.mtr'", dir) != 0)
    assert_int_equal(test_memsnap_in(dir, "record -q -o app.mtr -- %s 20000",
                                     test_kernel("stream_add", kernel, sizeof kernel)),
                     0);
  assert_int_equal(
      test_memsnap_in(dir,
                      "skeleton --form %s --slices 3 --min-slice-size 0 --ratio 4 --cluster 64 "
                      "-o skel.c app.mtr",
                      form),
      0);
  assert_int_equal(
      test_run("cd '%s' && cc -O2 -Wall -Wextra -Werror -o skel skel.c 2> cc.err", dir), 0);
  assert_int_equal(test_memsnap_in(dir, "record -q -o skel.mtr -- ./skel"), 0);
  char *err = test_read_in(dir, "err");
  const char *range = err ? strstr(err, "data 0x") : NULL;
  if (!range) fail_msg("no data range printed by the skeleton:\n%s", err ? err : "");
  unsigned long long low, high;
  assert_int_equal(sscanf(range, "data %llx-%llx", &low, &high), 2);
  free(err);

  uint64_t n_app, n_skel;
  ms_stream_info *app_info, *skel_info;
  ms_source *app_source, *skel_source;
  char path[1024];
  snprintf(path, sizeof path, "%s/app.mtr", dir);
  ms_access *app = read_all(path, &n_app, &app_info, &app_source);
  snprintf(path, sizeof path, "%s/skel.mtr", dir);
  ms_access *skel = read_all(path, &n_skel, &skel_info, &skel_source);
  size_t expected_count;
  cell *expected = slice_cells(app, n_app, 3, 4, 32, &expected_count);
  cell *got = malloc(n_skel * sizeof *got);
  size_t got_count = 0;
  uint64_t bookkeeping = 0;
  for (uint64_t i = 0; i < n_skel; i++) {
    if (skel[i].address >= low && skel[i].address < high) {
      got[got_count++] =
          (cell){((skel[i].address - low) % (1u << CHUNK_BITS)) / 32, skel[i].kind != MS_LOAD};
      continue;
    }
    const ms_site *site = ms_site_table_get(skel_info->sites, skel[i].site);
    /* skeleton_walk, or a copy GCC specialised (skeleton_walk.constprop.0) */
    bookkeeping +=
        site && site->function &&
        (!strncmp(site->function, "skeleton_walk", 13) || !strncmp(site->function, "part", 4));
  }
  assert_int_equal(got_count, expected_count);
  size_t ends[3], size = n_app / 12;
  for (int s = 0; s < 3; s++)
    ends[s] = (size_t)(s + 1) * size;
  assert_same_clusters(expected, got, got_count, 64, ends, 3);
  char *text = test_read_in(dir, "skel.c");
  size_t words = 0, groups = 0, cells;
  if (!strcmp(form, "table")) {
    uint64_t *table = table_words(text, &words);
    free(table_cells(table, words, 32, &cells, &groups));
    free(table);
  } else
    for (const char *p = text; (p = strstr(p, "\n  G")) != NULL; p++)
      groups++;
  size_t parts = 0;
  for (const char *p = text; (p = strstr(p, "static unsigned part")) != NULL; p++)
    parts++;
  free(text);
  print_message("stream_add, %s form: %zu data accesses in the skeleton, %" PRIu64
                " accesses of its own in its walk, %zu table words, %zu groups, %zu parts\n",
                form, got_count, bookkeeping, words, groups, parts);
  /* stream_add's b[i], c[i], a[i]: groups of three lanes in lockstep */
  assert_true(groups > 0);
  /* the table: a load per word, the walk's register saves and restores, and (clang) at
   * most one reload per group; the code: register saves and restores alone, a few per part
   * function (66 in 8 parts once the slices fell elsewhere: the trace's length moves with
   * the length of the build's path) */
  if (!strcmp(form, "table"))
    assert_true(bookkeeping >= words && bookkeeping <= words + groups + 16);
  else
    assert_true(parts > 0 && bookkeeping <= 12 * parts + 16);
  free(expected), free(got), free(app), free(skel);
  ms_source_destroy(app_source);
  ms_source_destroy(skel_source);
}

static void table_skeleton_of_a_kernel_issues_its_clusters(void **state) {
  (void)state;
  kernel_skeleton("table");
}

/* The same in the code form: a loop per run or group, no data of its own. */
static void code_skeleton_of_a_kernel_issues_its_clusters(void **state) {
  (void)state;
  kernel_skeleton("code");
}

/* An input without accesses, an output that cannot be written, an option out of range:
 * a message, a failing status, no C file. */
static void bad_input_writes_no_skeleton(void **state) {
  (void)state;
  assert_int_equal(test_run("cd '%s' && : > empty.din", dir), 0);
  assert_int_not_equal(test_memsnap_in(dir, "skeleton -o empty.c empty.din"), 0);
  char *err = test_read_in(dir, "err");
  assert_non_null(err);
  assert_non_null(strstr(err, "empty.c"));
  free(err);
  struct stat st;
  char path[1024];
  snprintf(path, sizeof path, "%s/empty.c", dir);
  assert_int_not_equal(stat(path, &st), 0);

  assert_int_equal(test_run("cd '%s' && printf '0 10000000\\n1 10000040\\n' > two.din", dir), 0);
  assert_int_not_equal(test_memsnap_in(dir, "skeleton -o no/such/dir/skel.c two.din"), 0);
  assert_int_equal(test_memsnap_in(dir, "skeleton --line 48 -o skel48.c two.din"), 2);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "--line"));
  free(err);
  snprintf(path, sizeof path, "%s/skel48.c", dir);
  assert_int_not_equal(stat(path, &st), 0);
  /* a ratio whose product with the slices wrapped to 0 divided by it */
  assert_int_equal(
      test_memsnap_in(dir, "skeleton --min-slice-size 0 --slices 2 --ratio 9223372036854775808 "
                           "-o huge.c two.din"),
      2);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "--ratio"));
  free(err);
  snprintf(path, sizeof path, "%s/huge.c", dir);
  assert_int_not_equal(stat(path, &st), 0);
  assert_int_equal(test_memsnap_in(dir, "skeleton --slices 1 --ratio 1 -o two.c two.din"), 0);
}

/* --check: both programs run natively, their exit status and CPU time in the table (spin
 * busies the CPU for more than a second), and the cache miss ratios where the machine has
 * counters, else a message that says so and a failing status; a program that cannot be
 * started, and --check without a program, are errors. */
static void check_runs_both_under_counters(void **state) {
  (void)state;
  char spin[1024], exit3[1024];
  test_kernel("spin", spin, sizeof spin);
  test_kernel("exit3", exit3, sizeof exit3);
  int status = test_memsnap_in(dir, "skeleton --check %s -- %s 1", exit3, spin);
  char *out = test_read_in(dir, "out"), *err = test_read_in(dir, "err");
  assert_non_null(out);
  assert_non_null(err);
  print_message("%s%s", out, err);
  int app_exit = -1, skel_exit = -1;
  double app_cpu = 0, skel_cpu = 0;
  const char *line = strstr(out, "exit status");
  assert_non_null(line);
  assert_int_equal(sscanf(line, "exit status %d %d", &app_exit, &skel_exit), 2);
  assert_int_equal(app_exit, 0);
  assert_int_equal(skel_exit, 3);
  line = strstr(out, "CPU time (s)");
  assert_non_null(line);
  assert_int_equal(sscanf(line, "CPU time (s) %lf %lf", &app_cpu, &skel_cpu), 2);
  assert_true(app_cpu > 0.3 && app_cpu < 30);
  assert_true(skel_cpu < app_cpu);
  if (status == 0) { /* a machine with counters: ratios of reads that happened */
    double a, s;
    line = strstr(out, "L1D read miss ratio");
    assert_non_null(line);
    assert_int_equal(sscanf(line, "L1D read miss ratio %lf%% %lf%%", &a, &s), 2);
    assert_true(a >= 0 && a <= 100 && s >= 0 && s <= 100);
    assert_non_null(strstr(out, "last-level read miss ratio"));
  } else {
    assert_int_equal(status, 1);
    assert_non_null(strstr(out, "not measured"));
    assert_non_null(strstr(err, "no hardware cache counters here: perf_event_open("));
    assert_non_null(strstr(err, "memsnap compare"));
  }
  free(out), free(err);
  assert_int_equal(test_memsnap_in(dir, "skeleton --check ./no-such-skeleton -- %s", exit3), 1);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "no-such-skeleton: cannot run it: No such file or directory"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "skeleton --check %s", exit3), 2);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "-- PROGRAM ARGS"));
  free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(check_runs_both_under_counters),
      cmocka_unit_test(clusters_hold_the_slices_lines),
      cmocka_unit_test(short_slices_become_fewer),
      cmocka_unit_test(table_skeleton_of_a_kernel_issues_its_clusters),
      cmocka_unit_test(code_skeleton_of_a_kernel_issues_its_clusters),
      cmocka_unit_test(bad_input_writes_no_skeleton),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

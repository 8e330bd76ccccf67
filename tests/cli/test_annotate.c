/* memsnap annotate: misses per function and source line.
 *
 * Oracles: the rows add up to `memsnap sim`'s totals on the same trace and hierarchy (per
 * level, functions and lines alike); tests/kernels/two_arrays.c sweeps one array and
 * gathers from another on lines of their own, so their misses are known by construction
 * (one per 64-byte line of the swept array; nearly one per access of the gathered one,
 * 512 KiB against a 32 KiB cache). By data object: the same sums over objects; the misses
 * go to the allocation of the array that makes them; tests/kernels/reuse_block.c's two
 * blocks at one address are two objects, each with its own lines' accesses. */
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

static char *dir;
TEST_SCRATCH_GROUP(dir)

#define ELEMENTS 65536

/* The kernel's trace, recorded once (t.mtr in the scratch folder). */
static void record_once(void) {
  static int recorded;
  if (recorded) return;
  char kernel[4096];
  test_kernel("two_arrays", kernel, sizeof kernel);
  assert_int_equal(
      test_memsnap_in(dir, "record -q --objects -o t.mtr -- '%s' %d", kernel, ELEMENTS), 0);
  recorded = 1;
}

static json_object *read_json(const char *name) {
  char *text = test_read_in(dir, name);
  assert_non_null(text);
  json_object *root = json_tokener_parse(text);
  if (!root) fprintf(stderr, "not JSON: %.200s\n", text);
  assert_non_null(root);
  free(text);
  return root;
}

static json_object *field(json_object *object, const char *key) {
  json_object *value = NULL;
  if (!json_object_object_get_ex(object, key, &value)) fprintf(stderr, "no field %s\n", key);
  assert_non_null(value);
  return value;
}

static uint64_t misses_at(json_object *row, int level) {
  return (uint64_t)json_object_get_int64(json_object_array_get_idx(field(row, "misses"), level));
}

/* Sum of the rows of `key` plus the unattributed row equals the simulator's accesses at
 * level 1 and misses at every level. */
static void assert_rows_add_up(json_object *annotation, const char *key, json_object *levels) {
  json_object *rows = field(annotation, key), *unattributed = field(annotation, "unattributed");
  size_t n = json_object_array_length(rows), level_count = json_object_array_length(levels);
  assert_int_equal(
      n, json_object_get_int64(field(annotation, key[0] == 'f' ? "function_count" : "line_count")));
  uint64_t accesses = (uint64_t)json_object_get_int64(field(unattributed, "accesses"));
  for (size_t i = 0; i < n; i++)
    accesses +=
        (uint64_t)json_object_get_int64(field(json_object_array_get_idx(rows, i), "accesses"));
  json_object *first = json_object_array_get_idx(levels, 0);
  assert_int_equal(accesses, json_object_get_int64(field(first, "accesses")));
  for (size_t l = 0; l < level_count; l++) {
    uint64_t misses = misses_at(unattributed, (int)l);
    for (size_t i = 0; i < n; i++)
      misses += misses_at(json_object_array_get_idx(rows, i), (int)l);
    assert_int_equal(misses,
                     json_object_get_int64(field(json_object_array_get_idx(levels, l), "misses")));
  }
}

static void rows_add_up_to_the_simulation(void **state) {
  (void)state;
  record_once();
  const char *hierarchies[] = {"nehalem", "32k/64/8,256k/64/8", "16k/32/4"};
  for (size_t h = 0; h < sizeof hierarchies / sizeof *hierarchies; h++)
    for (int model = 0; model < 2; model++) {
      const char *m = model ? "cachegrind" : "memsnap";
      assert_int_equal(test_memsnap_in(dir,
                                       "annotate -H %s --model %s --all --json -o a.json t.mtr",
                                       hierarchies[h], m),
                       0);
      assert_int_equal(
          test_memsnap_in(dir, "sim -H %s --model %s --json -o s.json t.mtr", hierarchies[h], m),
          0);
      json_object *annotation = read_json("a.json"), *sim = read_json("s.json");
      json_object *levels =
          field(json_object_array_get_idx(field(sim, "hierarchies"), 0), "levels");
      assert_rows_add_up(annotation, "functions", levels);
      assert_rows_add_up(annotation, "lines", levels);
      json_object_put(annotation);
      json_object_put(sim);
    }
}

/* The line row of two_arrays.c whose source holds `marker`. */
static json_object *line_row(json_object *annotation, const char *marker, size_t *rank) {
  int line = test_program_line("two_arrays.c", marker);
  assert_true(line > 0);
  json_object *rows = field(annotation, "lines");
  for (size_t i = 0; i < json_object_array_length(rows); i++) {
    json_object *row = json_object_array_get_idx(rows, i), *file = NULL;
    json_object_object_get_ex(row, "file", &file);
    if (file && strstr(json_object_get_string(file), "two_arrays.c") &&
        json_object_get_int(field(row, "line")) == line) {
      *rank = i;
      return row;
    }
  }
  fail_msg("no row for the line of %s (%d)", marker, line);
  return NULL;
}

static void misses_belong_to_the_array_that_makes_them(void **state) {
  (void)state;
  record_once();
  assert_int_equal(
      test_memsnap_in(dir, "annotate -H 32k/64/8 --level 1 --all --json -o a.json t.mtr"), 0);
  json_object *annotation = read_json("a.json");
  size_t sweep_rank, gather_rank;
  json_object *sweep = line_row(annotation, "/* the sweep */", &sweep_rank);
  json_object *gather = line_row(annotation, "/* the gather */", &gather_rank);
  /* a[] is 8192 lines of 64 bytes (8193 if malloc did not align it to 64) */
  uint64_t sweep_misses = misses_at(sweep, 0), gather_misses = misses_at(gather, 0);
  assert_in_range(sweep_misses, ELEMENTS / 8, ELEMENTS / 8 + 1);
  /* b[] is 16 times the cache: 15/16 of the gathers miss, and idx[] adds ELEMENTS / 8 */
  assert_in_range(gather_misses, ELEMENTS * 85 / 100, ELEMENTS * 110 / 100);
  assert_int_equal(gather_rank, 0);
  json_object *functions = field(annotation, "functions");
  assert_string_equal(
      json_object_get_string(field(json_object_array_get_idx(functions, 0), "function")), "gather");
  /* the function's misses: its line's and a few of its own (the stack, the loop's setup) */
  assert_in_range(misses_at(json_object_array_get_idx(functions, 0), 0), gather_misses,
                  gather_misses + 8);
  json_object_put(annotation);
}

static void text_shows_the_hot_source_lines(void **state) {
  (void)state;
  record_once();
  assert_int_equal(test_memsnap_in(dir, "annotate -H 32k/64/8 --lines 3 t.mtr"), 0);
  char *out = test_read_in(dir, "out");
  assert_non_null(out);
  assert_non_null(strstr(out, "observed: "));
  assert_non_null(strstr(out, "-- source "));
  assert_non_null(strstr(out, "sum += b[idx[i]]; /* the gather */"));
  assert_non_null(strstr(out, "sum += a[i]; /* the sweep */"));
  /* the gather's row comes first among the lines */
  char *lines = strstr(out, "\nlines (3 of ");
  assert_non_null(lines);
  char *first = strstr(lines, "two_arrays.c:");
  assert_non_null(first);
  char expected[64];
  snprintf(expected, sizeof expected, "two_arrays.c:%d  gather",
           test_program_line("two_arrays.c", "/* the gather */"));
  assert_memory_equal(first, expected, strlen(expected));
  free(out);
  /* without source text */
  assert_int_equal(test_memsnap_in(dir, "annotate -H 32k/64/8 --no-source t.mtr"), 0);
  out = test_read_in(dir, "out");
  assert_null(strstr(out, "-- source "));
  free(out);
}

/* The row of `rows` (objects) allocated at the line of `source` holding `marker`. */
static json_object *allocated_at(json_object *rows, const char *source, const char *marker) {
  int line = test_program_line(source, marker);
  assert_true(line > 0);
  for (size_t i = 0; i < json_object_array_length(rows); i++) {
    json_object *row = json_object_array_get_idx(rows, i), *at, *file;
    if (json_object_object_get_ex(row, "allocated_at", &at) &&
        json_object_object_get_ex(at, "file", &file) && file &&
        strstr(json_object_get_string(file), source) &&
        json_object_get_int(field(at, "line")) == line)
      return row;
  }
  fail_msg("no object allocated at %s:%d", source, line);
  return NULL;
}

static void objects_add_up_and_hold_their_misses(void **state) {
  (void)state;
  record_once();
  const char *modes[] = {"object", "allocation"};
  for (int m = 0; m < 2; m++) {
    assert_int_equal(
        test_memsnap_in(dir, "annotate -H nehalem --by %s --all --json -o a.json t.mtr", modes[m]),
        0);
    assert_int_equal(test_memsnap_in(dir, "sim -H nehalem --json -o s.json t.mtr"), 0);
    json_object *annotation = read_json("a.json"), *sim = read_json("s.json");
    assert_true(json_object_get_boolean(field(annotation, "has_objects")));
    json_object *levels = field(json_object_array_get_idx(field(sim, "hierarchies"), 0), "levels");
    /* objects and what lies outside them add up to the simulation */
    json_object *rows = field(annotation, "objects"), *outside = field(annotation, "unattributed");
    for (size_t l = 0; l < json_object_array_length(levels); l++) {
      uint64_t misses = misses_at(outside, (int)l);
      for (size_t i = 0; i < json_object_array_length(rows); i++)
        misses += misses_at(json_object_array_get_idx(rows, i), (int)l);
      assert_int_equal(
          misses, json_object_get_int64(field(json_object_array_get_idx(levels, l), "misses")));
    }
    json_object_put(annotation);
    json_object_put(sim);
  }
  /* b's allocation holds the gather's misses and its initialization's (one per line); a's
   * its initialization's and the sweep's, one per line each */
  assert_int_equal(
      test_memsnap_in(dir, "annotate -H 32k/64/8 --by allocation --all --json -o a.json t.mtr"), 0);
  json_object *annotation = read_json("a.json"), *rows = field(annotation, "objects");
  json_object *a = allocated_at(rows, "two_arrays.c", "a's allocation");
  json_object *b = allocated_at(rows, "two_arrays.c", "b's allocation");
  assert_in_range(misses_at(a, 0), ELEMENTS / 4, ELEMENTS / 4 + 2);
  assert_in_range(misses_at(b, 0), ELEMENTS * 85 / 100 + ELEMENTS / 8,
                  ELEMENTS * 110 / 100 + ELEMENTS / 8);
  assert_int_equal(json_object_get_int64(field(a, "bytes")), ELEMENTS * 8);
  assert_ptr_equal(json_object_array_get_idx(rows, 0), b);
  json_object_put(annotation);
  /* memsnap report lists them too, the same rows as annotate --by allocation */
  assert_int_equal(test_memsnap_in(dir, "report -H 32k/64/8 --json -o r.json t.mtr"), 0);
  json_object *report = read_json("r.json");
  json_object *input = json_object_array_get_idx(field(report, "inputs"), 0);
  json_object *objects = field(field(input, "objects"), "objects");
  assert_int_equal(test_memsnap_in(dir, "annotate -H 32k/64/8 --by allocation --lines 10 --json "
                                        "-o a.json t.mtr"),
                   0);
  annotation = read_json("a.json");
  assert_string_equal(json_object_to_json_string(objects),
                      json_object_to_json_string(field(annotation, "objects")));
  json_object_put(annotation);
  json_object_put(report);
}

static void freed_and_reallocated_objects_are_told_apart(void **state) {
  (void)state;
  char kernel[4096];
  test_kernel("reuse_block", kernel, sizeof kernel);
  assert_int_equal(test_memsnap_in(dir, "record -q --objects -o r.mtr -- '%s'", kernel), 0);
  char *out = test_read_in(dir, "out");
  assert_non_null(
      strstr(out, " 1\n")); /* the program saw the second block at the first's address */
  free(out);
  assert_int_equal(
      test_memsnap_in(dir, "annotate -H nehalem --by object --all --json -o o.json r.mtr"), 0);
  assert_int_equal(test_memsnap_in(dir, "annotate -H nehalem --all --json -o c.json r.mtr"), 0);
  json_object *objects = read_json("o.json"), *code = read_json("c.json");
  json_object *rows = field(objects, "objects");
  json_object *first = allocated_at(rows, "reuse_block.c", "the first block */");
  json_object *second = allocated_at(rows, "reuse_block.c", "the second block */");
  assert_string_equal(json_object_get_string(field(first, "address")),
                      json_object_get_string(field(second, "address")));
  /* each block's accesses are its lines' (the second's and a few of free's own writes) */
  json_object *lines = field(code, "lines");
  int writes = test_program_line("reuse_block.c", "the first block's writes");
  int reads = test_program_line("reuse_block.c", "the second block's reads");
  int64_t write_accesses = -1, read_accesses = -1;
  for (size_t i = 0; i < json_object_array_length(lines); i++) {
    json_object *row = json_object_array_get_idx(lines, i), *file = NULL;
    json_object_object_get_ex(row, "file", &file);
    if (!file || !strstr(json_object_get_string(file), "reuse_block.c")) continue;
    int line = json_object_get_int(field(row, "line"));
    if (line == writes) write_accesses = json_object_get_int64(field(row, "accesses"));
    if (line == reads) read_accesses = json_object_get_int64(field(row, "accesses"));
  }
  assert_true(write_accesses > 0 && read_accesses > 0);
  assert_int_equal(json_object_get_int64(field(first, "accesses")), write_accesses);
  assert_in_range(json_object_get_int64(field(second, "accesses")), read_accesses,
                  read_accesses + 8);
  json_object_put(objects);
  json_object_put(code);
  /* the objects survive a copy of the trace; a din trace has none, and says so */
  assert_int_equal(test_memsnap_in(dir, "convert r.mtr r2.mtr"), 0);
  assert_int_equal(
      test_run(
          "cd '%s' && '%s' info --json r.mtr | grep -A4 '\"objects\"' > i1 && "
          "'%s' info --json r2.mtr | grep -A4 '\"objects\"' > i2 && test -s i1 && cmp -s i1 i2",
          dir, test_env("MEMSNAP"), test_env("MEMSNAP")),
      0);
  /* a trace recorded without --objects has none either, and the same accesses as
   * Cachegrind counts (the allocation wrappers' library costs the loader some) */
  assert_int_equal(test_memsnap_in(dir, "record -q -o plain.mtr -- '%s'", kernel), 0);
  assert_int_equal(test_memsnap_in(dir, "info --json plain.mtr"), 0);
  out = test_read_in(dir, "out");
  assert_null(strstr(out, "\"objects\""));
  free(out);
  assert_int_equal(test_memsnap_in(dir, "annotate -H nehalem --by object plain.mtr"), 0);
  out = test_read_in(dir, "out");
  assert_non_null(strstr(out, "--objects"));
  free(out);
  assert_int_equal(test_memsnap_in(dir, "convert r.mtr r.din"), 0);
  assert_int_equal(test_memsnap_in(dir, "annotate -H nehalem --by object r.din"), 0);
  out = test_read_in(dir, "out");
  assert_non_null(strstr(out, "no data objects"));
  free(out);
}

static void bad_input_writes_no_report(void **state) {
  (void)state;
  record_once();
  assert_int_equal(test_run("cd '%s' && head -c 300 t.mtr > cut.mtr", dir), 0);
  assert_int_not_equal(test_memsnap_in(dir, "annotate -H nehalem -o r.txt cut.mtr"), 0);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "cut.mtr"));
  free(err);
  assert_int_not_equal(test_run("test -e '%s/r.txt'", dir), 0);
  assert_int_equal(test_memsnap_in(dir, "annotate -H nehalem --level 4 t.mtr"), 2);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "--level 4"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "annotate -H nehalem -H nehalem t.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "annotate -H nehalem --by colour t.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "annotate t.mtr"), 2);
  assert_int_equal(test_memsnap_in(dir, "annotate -H nehalem missing.mtr"), 1);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "missing.mtr"));
  free(err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rows_add_up_to_the_simulation),
      cmocka_unit_test(misses_belong_to_the_array_that_makes_them),
      cmocka_unit_test(text_shows_the_hot_source_lines),
      cmocka_unit_test(objects_add_up_and_hold_their_misses),
      cmocka_unit_test(freed_and_reallocated_objects_are_told_apart),
      cmocka_unit_test(bad_input_writes_no_report),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* memsnap report: the numbers of the page's tables are those of `report --json` and, for
 * the hierarchy table, those of `memsnap sim -H evaluation --json` (the cells of the HTML
 * tables parsed here); strings from the input are escaped; several inputs give one section
 * each; bad input gives one clear line, a non-zero exit and no output file; a live program's
 * exit status is passed through and shown. The page in a
 * browser: test_report_browser.sh. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "testutil.h"

static char *dir;

#define memsnap(...) test_memsnap_in(dir, __VA_ARGS__)

static int setup(void **state) {
  (void)state;
  dir = test_tempdir();
  int rc = test_run("cd '%s' && awk -f '%s/tests/cli/outputs/workload.awk' > w.lackey", dir,
                    test_env("MEMSNAP_SOURCE_DIR"));
  if (rc == 0) rc = memsnap("convert w.lackey w.mtr");
  if (rc == 0) rc = memsnap("profile -q -o w.psnap w.mtr");
  if (rc == 0) rc = memsnap("signature --widths -o w.sig w.mtr");
  return rc == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  test_rmdir(dir);
  return 0;
}

static char *read_in(const char *name) {
  char *text = test_read_in(dir, name);
  if (!text) fail_msg("cannot read %s/%s", dir, name);
  return text;
}

static json_object *json_in(const char *name) {
  char *text = read_in(name);
  json_object *object = json_tokener_parse(text);
  free(text);
  assert_non_null(object);
  return object;
}

/* ---- the cells of an HTML table ---- */

#define MAX_ROWS 256
#define MAX_CELLS 16

typedef struct table {
  int rows;
  int cells[MAX_ROWS];
  char *text[MAX_ROWS][MAX_CELLS]; /* a cell's text, tags left out */
} table;

/* The text of the cell that starts at `p` (after its opening tag) up to `end`, without tags. */
static char *cell_text(const char *p, const char *end) {
  char *text = calloc((size_t)(end - p) + 1, 1);
  size_t n = 0;
  int in_tag = 0;
  for (; p < end; p++) {
    if (*p == '<')
      in_tag = 1;
    else if (*p == '>')
      in_tag = 0;
    else if (!in_tag)
      text[n++] = *p;
  }
  return text;
}

/* The body rows of the table whose id is `id` in `html` (the header row left out). */
static void parse_table(const char *html, const char *id, table *t) {
  char needle[128];
  snprintf(needle, sizeof needle, "id=\"%s\"", id);
  const char *p = strstr(html, needle);
  if (!p) fail_msg("no table %s in the page", id);
  const char *end = strstr(p, "</table>");
  p = strstr(p, "<tbody>");
  assert_non_null(end);
  assert_non_null(p);
  memset(t, 0, sizeof *t);
  while ((p = strstr(p, "<tr>")) && p < end && t->rows < MAX_ROWS) {
    const char *row_end = strstr(p, "</tr>");
    int *cells = &t->cells[t->rows];
    while ((p = strstr(p, "<td")) && p < row_end && *cells < MAX_CELLS) {
      p = strchr(p, '>') + 1;
      const char *close = strstr(p, "</td>");
      t->text[t->rows][(*cells)++] = cell_text(p, close);
      p = close;
    }
    p = row_end;
    t->rows++;
  }
}

static void free_table(table *t) {
  for (int r = 0; r < t->rows; r++)
    for (int c = 0; c < t->cells[r]; c++)
      free(t->text[r][c]);
}

static json_object *at(json_object *object, const char *key) {
  json_object *value = NULL;
  if (!json_object_object_get_ex(object, key, &value)) fail_msg("no \"%s\" in the JSON", key);
  return value;
}

static json_object *nth(json_object *array, size_t index) {
  assert_true(index < json_object_array_length(array));
  return json_object_array_get_idx(array, index);
}

static void expect_cell(const table *t, int row, int cell, const char *format, double value) {
  char expected[64];
  snprintf(expected, sizeof expected, format, value);
  if (strcmp(t->text[row][cell], expected) != 0)
    fail_msg("row %d cell %d: the page says '%s', the JSON %s", row, cell, t->text[row][cell],
             expected);
}

static void expect_count(const table *t, int row, int cell, json_object *count) {
  char expected[32];
  snprintf(expected, sizeof expected, "%" PRIu64, json_object_get_uint64(count));
  if (strcmp(t->text[row][cell], expected) != 0)
    fail_msg("row %d cell %d: the page says '%s', the JSON %s", row, cell, t->text[row][cell],
             expected);
}

/* The hierarchy table against a sim report's "hierarchies": name, L1 accesses, per level
 * the hit rate in percent with 3 decimals. */
static void expect_hierarchies(const table *t, json_object *hierarchies) {
  assert_int_equal(t->rows, 46);
  assert_int_equal(json_object_array_length(hierarchies), 46);
  for (int r = 0; r < t->rows; r++) {
    json_object *hierarchy = nth(hierarchies, (size_t)r), *levels = at(hierarchy, "levels");
    assert_string_equal(t->text[r][0], json_object_get_string(at(hierarchy, "name")));
    expect_count(t, r, 1, at(nth(levels, 0), "accesses"));
    for (size_t l = 0; l < json_object_array_length(levels); l++)
      expect_cell(t, r, 3 + 2 * (int)l, "%.3f",
                  100 * json_object_get_double(at(nth(levels, l), "hit_rate")));
  }
}

static void test_tables_equal_json(void **state) {
  (void)state;
  assert_int_equal(memsnap("report w.mtr -o w.html"), 0);
  assert_int_equal(memsnap("report w.mtr --json -o w.json"), 0);
  assert_int_equal(memsnap("sim -H evaluation --json -o sim.json w.mtr"), 0);
  char *html = read_in("w.html");
  json_object *report = json_in("w.json"), *sim = json_in("sim.json");
  json_object *input = nth(at(report, "inputs"), 0);
  table t;

  parse_table(html, "hierarchies-1", &t);
  expect_hierarchies(&t, at(input, "hierarchies"));
  expect_hierarchies(&t, at(sim, "hierarchies"));
  free_table(&t);

  parse_table(html, "sites-1", &t); /* level, misses, % of level, pc, function, file:line */
  json_object *levels = at(at(input, "sites"), "levels");
  int row = 0;
  for (size_t l = 0; l < json_object_array_length(levels); l++) {
    json_object *top = at(nth(levels, l), "top_sites");
    double level_misses = json_object_get_double(at(nth(levels, l), "misses"));
    assert_true(json_object_array_length(top) > 0);
    for (size_t i = 0; i < json_object_array_length(top); i++, row++) {
      json_object *site = nth(top, i);
      expect_count(&t, row, 1, at(site, "misses"));
      expect_cell(&t, row, 2, "%.2f",
                  100 * json_object_get_double(at(site, "misses")) / level_misses);
      assert_string_equal(t.text[row][3], json_object_get_string(at(site, "pc")));
    }
  }
  assert_int_equal(t.rows, row);
  free_table(&t);

  /* the heat map: its cells' titles, widest width first, against the JSON's surface, which
   * is memsnap surface's exactly */
  assert_int_equal(memsnap("surface --json -o surface.json w.mtr"), 0);
  json_object *surface = json_in("surface.json");
  json_object *widths = at(at(input, "surface"), "widths"), *exact = at(surface, "widths");
  size_t width_count = json_object_array_length(widths);
  assert_int_equal(width_count, json_object_array_length(exact));
  const char *cell = strstr(html, "<svg class=\"surface\"");
  assert_non_null(cell);
  for (size_t i = width_count; i-- > 0;) {
    json_object *rates = at(nth(widths, i), "hit_rates"),
                *exact_rates = at(nth(exact, i), "hit_rates");
    assert_int_equal(json_object_get_int(at(nth(widths, i), "width")),
                     json_object_get_int(at(nth(exact, i), "width")));
    for (size_t k = 0; k < json_object_array_length(rates); k++) {
      double rate = json_object_get_double(nth(rates, k));
      if (rate != json_object_get_double(nth(exact_rates, k)))
        fail_msg("surface width %zu depth %zu: %.17g, memsnap surface %.17g", i, k, rate,
                 json_object_get_double(nth(exact_rates, k)));
      char title[96];
      snprintf(title, sizeof title, "<title>width %d B, depth %d: %.4f</title>",
               json_object_get_int(at(nth(widths, i), "width")), 1 << k, rate);
      const char *found = strstr(cell, title);
      if (!found) fail_msg("no heat map cell %s after the previous one", title);
      cell = found;
    }
  }
  json_object_put(surface);

  /* the source lines with most misses: accesses and misses per level, as the JSON, which
   * is memsnap annotate's */
  parse_table(html, "lines-1", &t);
  json_object *lines = at(at(input, "lines"), "lines");
  assert_int_equal(t.rows, (int)json_object_array_length(lines));
  assert_true(t.rows > 0);
  for (int r = 0; r < t.rows; r++) {
    json_object *line = nth(lines, (size_t)r), *misses = at(line, "misses");
    expect_count(&t, r, 0, at(line, "accesses"));
    for (size_t l = 0; l < json_object_array_length(misses); l++)
      expect_count(&t, r, 1 + (int)l, nth(misses, l));
  }
  free_table(&t);
  assert_null(strstr(html, "id=\"objects-1\"")); /* recorded without --objects */

  parse_table(html, "cdf-1", &t); /* depth, cache size, hit rate */
  json_object *cdf = at(nth(at(at(input, "signature"), "bins"), 0), "reuse_cdf");
  assert_int_equal(t.rows, 17);
  for (int k = 0; k < t.rows; k++) {
    expect_count(&t, k, 0, at(nth(cdf, (size_t)k), "depth"));
    expect_cell(&t, k, 2, "%.4f", json_object_get_double(at(nth(cdf, (size_t)k), "hit_rate")));
  }
  free_table(&t);

  parse_table(html, "alpha-1", &t); /* widest first */
  json_object *alpha = at(nth(at(at(input, "signature"), "bins"), 0), "alpha");
  int levels_count = (int)json_object_array_length(alpha);
  assert_int_equal(t.rows, levels_count);
  for (int r = 0; r < t.rows; r++) {
    json_object *avg = at(nth(alpha, (size_t)(levels_count - 1 - r)), "avg");
    expect_cell(&t, r, 1, "%.4f", json_object_get_double(at(avg, "alpha")));
    expect_cell(&t, r, 2, "%.17g", json_object_get_double(at(avg, "trials")));
  }
  free_table(&t);
  json_object_put(report);
  json_object_put(sim);
  free(html);
}

static void test_several_inputs(void **state) {
  (void)state;
  assert_int_equal(memsnap("report w.mtr w.psnap w.sig -o all.html"), 0);
  assert_int_equal(memsnap("report w.mtr w.psnap w.sig --json -o all.json"), 0);
  char *html = read_in("all.html");
  json_object *report = json_in("all.json"), *inputs = at(report, "inputs");
  assert_int_equal(json_object_array_length(inputs), 3);
  int sections = 0;
  for (const char *p = html; (p = strstr(p, "<section class=\"input\"")); p++)
    sections++;
  assert_int_equal(sections, 3);
  assert_non_null(strstr(html, "id=\"input-2\""));
  /* the profile's sites, heaviest first, as memsnap show lists them */
  table t;
  parse_table(html, "profile-2", &t);
  json_object *sites = at(at(nth(inputs, 1), "profile"), "sites");
  assert_int_equal(t.rows, (int)json_object_array_length(sites));
  assert_true(t.rows > 0);
  for (int r = 0; r < t.rows; r++) {
    json_object *site = nth(sites, (size_t)r);
    char name[32];
    snprintf(name, sizeof name, "s%" PRIu64, json_object_get_uint64(at(site, "site")));
    assert_string_equal(t.text[r][0], name);
    expect_cell(&t, r, 1, "%.2f", 100 * json_object_get_double(at(site, "share")));
    expect_count(&t, r, 2, at(site, "count"));
  }
  free_table(&t);
  /* the hierarchy table of the profile's replay equals sim of the profile */
  assert_int_equal(memsnap("sim -H evaluation --json -o psim.json w.psnap"), 0);
  json_object *sim = json_in("psim.json");
  parse_table(html, "hierarchies-2", &t);
  expect_hierarchies(&t, at(sim, "hierarchies"));
  free_table(&t);
  /* the signature: its CDF and alpha values, no simulation */
  assert_null(strstr(html, "id=\"hierarchies-3\""));
  parse_table(html, "cdf-3", &t);
  assert_int_equal(t.rows, 17);
  free_table(&t);
  json_object *signature = nth(inputs, 2);
  assert_string_equal(json_object_get_string(at(signature, "kind")), "memory signature");
  assert_string_equal(json_object_get_string(at(at(signature, "surface"), "from_signature")),
                      "measured");
  json_object_put(sim);
  json_object_put(report);
  free(html);
}

static void test_escaping(void **state) {
  (void)state;
  assert_int_equal(test_run("cd '%s' && cp w.mtr 'a<b>&\"c.mtr'", dir), 0);
  assert_int_equal(memsnap("report 'a<b>&\"c.mtr' -o e.html"), 0);
  char *html = read_in("e.html");
  assert_null(strstr(html, "a<b>"));
  assert_non_null(strstr(html, "a&lt;b&gt;&amp;&quot;c.mtr"));
  free(html);
}

static int file_exists(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return access(path, F_OK) == 0;
}

/* `memsnap ARGS` fails with one line on stderr containing `fragment`, and leaves neither
 * bad.html nor a temporary beside it. */
static void expect_failure(const char *fragment, const char *args) {
  int rc = memsnap("%s", args);
  char *err = read_in("err");
  if (rc == 0 || !strstr(err, fragment) || strchr(err, '\n') != err + strlen(err) - 1)
    fail_msg("memsnap %s: exit %d, stderr: %s", args, rc, err);
  free(err);
  assert_false(file_exists("bad.html"));
  assert_int_equal(test_run("cd '%s' && ! ls -a | grep -q bad.html", dir), 0);
}

static void test_bad_input(void **state) {
  (void)state;
  assert_int_equal(test_run("cd '%s' && head -c $(( $(stat -c %%s w.mtr) / 2 )) w.mtr > cut.mtr"
                            " && printf 'MTR but not a trace' > junk.mtr",
                            dir),
                   0);
  expect_failure("missing.mtr", "report missing.mtr -o bad.html");
  expect_failure("cut.mtr", "report cut.mtr -o bad.html");
  expect_failure("junk.mtr", "report w.mtr junk.mtr -o bad.html");
  expect_failure("--bogus", "report --bogus w.mtr -o bad.html");
  expect_failure("nosuch", "report -H nosuch w.mtr -o bad.html");
  expect_failure("--top", "report --top lots w.mtr -o bad.html");
  expect_failure("input", "report -o bad.html");
  /* a failed run leaves an existing report as it was */
  assert_int_equal(memsnap("report w.mtr -o kept.html"), 0);
  char *before = read_in("kept.html");
  assert_true(memsnap("report cut.mtr -o kept.html") != 0);
  char *after = read_in("kept.html");
  assert_string_equal(before, after);
  free(before);
  free(after);
}

/* Live, like every command: the program's standard output stays its own, its exit status
 * is passed through and the page says it. */
static void test_live(void **state) {
  (void)state;
  char kernel[1024];
  test_kernel("exit3", kernel, sizeof kernel);
  assert_int_equal(memsnap("report -o live.html -- %s", kernel), 3);
  char *html = read_in("live.html");
  assert_non_null(strstr(html, "exit status 3"));
  assert_non_null(strstr(html, "id=\"hierarchies-1\""));
  free(html);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables_equal_json),
      cmocka_unit_test(test_several_inputs),
      cmocka_unit_test(test_escaping),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_live),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

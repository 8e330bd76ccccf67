/* Analyses behind one interface (memsnap/analysis.h), on streams whose results are worked
 * out by hand: a cyclic walk over L lines hits an LRU cache of at least L lines on every
 * pass but the first and misses on every access of one with fewer; created by name and by
 * their typed constructors; several in one pass; reports with what was observed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memsnap/memsnap.h"
#include "testutil.h"

static char *dir;
static char trace[512];

enum { LINES = 8, PASSES = 10 };

/* LINES 64-byte lines read in a cycle, PASSES times, by one instruction; then one store. */
static int setup(void **state) {
  (void)state;
  dir = test_tempdir();
  snprintf(trace, sizeof trace, "%s/cycle.lackey", dir);
  FILE *f = fopen(trace, "w");
  assert_non_null(f);
  for (int pass = 0; pass < PASSES; pass++)
    for (int line = 0; line < LINES; line++)
      fprintf(f, "I  00401000,4\n L %08x,8\n", 0x10000000 + 64 * line);
  fprintf(f, "I  00401010,4\n S 20000000,4\n");
  assert_int_equal(fclose(f), 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_rmdir(dir);
  return 0;
}

static ms_analysis *by_name(const char *spec) {
  ms_analysis *analysis = NULL;
  if (ms_analysis_new(spec, &analysis) < 0) fail_msg("'%s': %s", spec, ms_error_message());
  return analysis;
}

/* Runs the trace through the analyses in one pass; the source stays open for reports. */
static ms_source *run(ms_analysis **analyses, int count) {
  ms_source *source;
  assert_int_equal(ms_open(trace, 0, NULL, NULL, &source), 0);
  ms_sink *sinks[8];
  for (int i = 0; i < count; i++)
    sinks[i] = ms_analysis_sink(analyses[i]);
  assert_int_equal(ms_pipeline_run(source, sinks, count, 0), 0);
  return source;
}

static void level_counts(const ms_hierarchy_set *set, int hierarchy, int level,
                         ms_cache_stats *stats) {
  ms_hierarchy_level_stats(ms_hierarchy_set_get(set, hierarchy), level, stats);
}

static void analyses_in_one_pass_match_hand_counts(void **state) {
  (void)state;
  /* 8 lines fit an 8-line fully-associative cache (512/64/8) and not a 4-line one */
  ms_analysis *analyses[4] = {
      by_name("sim hierarchy=512/64/8 hierarchy=256/64/4 top=3"),
      by_name("surface widths=64 depths=1:16"),
      by_name("scores word=8 top=2"),
      by_name("profile fidelity=high"),
  };
  for (int i = 0; i < 4; i++)
    assert_null(ms_analysis_result(analyses[i])); /* nothing before the stream ends */
  ms_source *source = run(analyses, 4);
  uint64_t loads = LINES * PASSES, total = loads + 1;

  const ms_hierarchy_set *set = ms_analysis_result(analyses[0]);
  assert_non_null(set);
  assert_int_equal(ms_hierarchy_set_count(set), 2);
  ms_cache_stats stats;
  level_counts(set, 0, 0, &stats);
  assert_int_equal(stats.total.accesses, total);
  assert_int_equal(stats.total.misses, LINES + 1); /* the first pass and the store */
  level_counts(set, 1, 0, &stats);
  assert_int_equal(stats.total.misses, total); /* LRU over a longer cycle: every access */

  const ms_surface *surface = ms_analysis_result(analyses[1]);
  assert_non_null(surface);
  assert_int_equal(surface->width_count, 1);
  assert_int_equal(surface->depth_count, 5);
  for (int d = 0; d < surface->depth_count; d++) {
    double expected = surface->depths[d] >= LINES ? (double)(loads - LINES) / (double)total : 0.0;
    if (surface->hit_rate[0][d] < expected - 1e-12 || surface->hit_rate[0][d] > expected + 1e-12)
      fail_msg("depth %llu: hit rate %.6f, expected %.6f", (unsigned long long)surface->depths[d],
               surface->hit_rate[0][d], expected);
  }

  const ms_scores *scores = ms_analysis_result(analyses[2]);
  assert_non_null(scores);
  assert_int_equal(scores->whole.accesses, total);

  const ms_psnap_profile *profile = ms_analysis_result(analyses[3]);
  assert_non_null(profile);
  assert_int_equal(profile->access_count, total);
  assert_int_equal(profile->site_count, 2);

  /* the profile's report is its text, which parses back to the same profile */
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  assert_int_equal(ms_analysis_write(analyses[3], ms_source_info(source), out, MS_REPORT_TEXT), 0);
  assert_int_equal(fclose(out), 0);
  ms_psnap_profile parsed;
  assert_int_equal(ms_psnap_profile_parse(text, size, "report", &parsed), 0);
  assert_int_equal(parsed.access_count, total);
  ms_psnap_profile_free(&parsed);
  free(text);
  /* a profile has no JSON report, a simulation no CSV */
  out = open_memstream(&text, &size);
  assert_true(ms_analysis_write(analyses[3], ms_source_info(source), out, MS_REPORT_JSON) < 0);
  assert_true(ms_analysis_write(analyses[0], ms_source_info(source), out, MS_REPORT_CSV) < 0);
  fclose(out);
  free(text);

  ms_source_destroy(source);
  for (int i = 0; i < 4; i++)
    ms_analysis_free(analyses[i]);
}

static void reports_say_what_was_observed(void **state) {
  (void)state;
  ms_analysis *sim = by_name("  sim   hierarchy=512/64/8  ");
  assert_string_equal(ms_analysis_name(sim), "sim");
  ms_source *source = run(&sim, 1);
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  assert_int_equal(ms_analysis_report(sim, ms_source_info(source), trace, out, MS_REPORT_TEXT), 0);
  assert_int_equal(fclose(out), 0);
  assert_true(strncmp(text, "observed: (program unknown) (from ", 34) == 0);
  assert_non_null(strstr(text, "cycle.lackey): exit status unknown; complete\n"));
  free(text);
  out = open_memstream(&text, &size);
  assert_int_equal(ms_analysis_report(sim, ms_source_info(source), NULL, out, MS_REPORT_JSON), 0);
  assert_int_equal(fclose(out), 0);
  /* one object: the observed fields first, then the simulation's */
  assert_true(strncmp(text, "{\n  \"program\":null,\n  \"exit_status\":null,", 41) == 0);
  assert_non_null(strstr(text, "\"truncated\":false"));
  assert_non_null(strstr(text, "\"hierarchies\""));
  free(text);
  ms_source_destroy(source);
  ms_analysis_free(sim);
}

static void bad_specs_name_what_is_wrong(void **state) {
  (void)state;
  static const struct {
    const char *spec, *message;
  } cases[] = {
      {"", "unknown analysis '' (sim, annotate, surface, scores, signature, profile)"},
      {"simulate hierarchy=nehalem", "unknown analysis 'simulate'"},
      {"sim", "sim: no hierarchy"},
      {"sim hierarchy=32k/48/8",
       "sim: bad hierarchy '32k/48/8' (bad level '32768/48/8': line size"},
      {"sim hierarchy=nehalem colour=red", "sim: bad colour 'red'"},
      {"sim hierarchy=nehalem top=many", "sim: bad top 'many' (a count of sites)"},
      {"annotate", "annotate: no hierarchy"},
      {"annotate hierarchy=nehalem level=0", "annotate: bad level '0' (a level, 1 first)"},
      {"annotate hierarchy=nehalem level=4", "annotate: level 4 of a hierarchy of 3 levels"},
      {"surface widths=3:9", "bad surface widths '3:9'"},
      {"surface shards=2", "surface: bad shards '2'"},
      {"scores window-log2=40", "scores: bad window-log2 '40' (1..20)"},
      {"signature word=512", "signature: word 512 must be smaller than width 512"},
      {"signature sample=1k", "signature: bad sample '1k'"},
      {"profile fidelity=perfect", "profile: bad fidelity 'perfect' (low, normal or high)"},
      {"profile lossy", "profile: option 'lossy' is not one of"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ms_analysis *analysis = (ms_analysis *)1;
    if (ms_analysis_new(cases[i].spec, &analysis) >= 0) fail_msg("'%s' accepted", cases[i].spec);
    assert_null(analysis);
    if (!strstr(ms_error_message(), cases[i].message))
      fail_msg("'%s': '%s', expected '%s'", cases[i].spec, ms_error_message(), cases[i].message);
  }
  /* the catalog lists every name ms_analysis_new takes */
  assert_int_equal(ms_analysis_catalog_count(), 6);
  for (int i = 0; i < ms_analysis_catalog_count(); i++) {
    const ms_analysis_entry *entry = ms_analysis_catalog_get(i);
    assert_non_null(entry->summary);
    assert_non_null(entry->options);
  }
  assert_null(ms_analysis_catalog_get(6));
}

/* The cycle's load (8 lines, 10 passes) and its store, annotated: in 8 ways of one set the
 * load misses on the first pass only (8 of 80), in 7 ways on every access (a cycle longer
 * than LRU's reach); the store misses once. The sites of a Lackey trace have no symbols:
 * one function "???", a line row per instruction. */
static void annotation_by_hand(void **state) {
  (void)state;
  const struct {
    const char *spec;
    uint64_t load_misses;
  } cases[] = {{"annotate hierarchy=512/64/8", 8}, {"annotate hierarchy=448/64/7 lines=1", 80}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    ms_analysis *a = by_name(cases[c].spec);
    ms_source *source = run(&a, 1);
    const ms_annotation *n = ms_analysis_result(a);
    assert_non_null(n);
    assert_int_equal(n->level_count, 1);
    assert_int_equal(n->total.accesses, LINES * PASSES + 1);
    assert_int_equal(n->total.misses[0], cases[c].load_misses + 1);
    assert_int_equal(n->unattributed.accesses, 0);
    assert_int_equal(n->function_count, 1);
    assert_null(n->functions[0].function);
    assert_int_equal(n->functions[0].accesses, LINES * PASSES + 1);
    assert_int_equal(n->functions[0].misses[0], cases[c].load_misses + 1);
    assert_int_equal(n->line_count, 2);
    assert_int_equal(n->lines[0].pc, 0x401000);
    assert_int_equal(n->lines[0].accesses, LINES * PASSES);
    assert_int_equal(n->lines[0].misses[0], cases[c].load_misses);
    assert_int_equal(n->lines[1].pc, 0x401010);
    assert_int_equal(n->lines[1].misses[0], 1);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_int_equal(ms_analysis_write(a, ms_source_info(source), out, MS_REPORT_TEXT), 0);
    fclose(out);
    assert_non_null(strstr(text, "pc 0x401000, no line"));
    /* lines=1 lists one line row */
    assert_true((strstr(text, "pc 0x401010") != NULL) == (c == 0));
    free(text);
    ms_source_destroy(source);
    ms_analysis_free(a);
  }
}

static void typed_constructors_and_sampling(void **state) {
  (void)state;
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.width_count = 1;
  config.widths[0] = 64;
  ms_analysis *analyses[2];
  /* every other pass kept (8 on, 8 off), and the store, the first of the eleventh period */
  assert_int_equal(
      ms_surface_analysis_new(&config, (ms_analysis_sampling){LINES, LINES}, &analyses[0]), 0);
  ms_signature_config signature_config;
  ms_signature_config_default(&signature_config);
  assert_int_equal(ms_signature_analysis_new(&signature_config, NULL, &analyses[1]), 0);
  ms_source *source = run(analyses, 2);
  const ms_surface *surface = ms_analysis_result(analyses[0]);
  assert_int_equal(surface->accesses, (PASSES / 2) * LINES + 1);
  const ms_signature *signature = ms_analysis_result(analyses[1]);
  assert_int_equal(signature->accesses_seen, LINES * PASSES + 1);
  ms_source_destroy(source);
  ms_analysis_free(analyses[0]);
  ms_analysis_free(analyses[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(analyses_in_one_pass_match_hand_counts),
      cmocka_unit_test(reports_say_what_was_observed),
      cmocka_unit_test(bad_specs_name_what_is_wrong),
      cmocka_unit_test(typed_constructors_and_sampling),
      cmocka_unit_test(annotation_by_hand),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

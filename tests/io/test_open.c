/* One way in (memsnap/open.h): the kind of every input memsnap reads, told from its
 * contents, and ms_open of each against the reader of its own kind. Oracles: the files are
 * written by the library's own writers (Lackey text by hand), so each kind is known; the
 * accesses ms_open gives are counted against the format's own reader. */
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
static char paths[16][512];
enum { LACKEY, DIN, MTR, PSNAP, PSNAP_ZST, SIG, SEED, EMPTY_MTR, EMPTY_BIN, TEXT, ZSTD, MISSING };

static const char *path_of(int which) { return paths[which]; }

static void write_text(const char *path, const char *text, size_t size) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, size, f), size);
  assert_int_equal(fclose(f), 0);
}

/* Every access of a source; -1 if it fails. */
static int64_t count_accesses(ms_source *source) {
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  int64_t total = 0;
  int n;
  while ((n = ms_source_next(source, &batch)) > 0)
    total += (int64_t)batch.count;
  ms_batch_free(&batch);
  ms_source_destroy(source);
  return n < 0 ? -1 : total;
}

static int setup(void **state) {
  (void)state;
  dir = test_tempdir();
  static const char *const names[] = {"t.lackey",    "t.din",     "t.mtr",    "p.psnap",
                                      "p.psnap.zst", "s.sig",     "seed.mtr", "empty.mtr",
                                      "empty.bin",   "notes.txt", "data.zst", "missing.mtr"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    snprintf(paths[i], sizeof paths[i], "%s/%s", dir, names[i]);
  /* a Lackey trace of 300 accesses from two instructions; its din and .mtr copies */
  FILE *f = fopen(path_of(LACKEY), "w");
  assert_non_null(f);
  for (int i = 0; i < 150; i++)
    fprintf(f, "I  00401000,4\n L %08x,8\nI  00401004,4\n S %08x,4\n", 0x1000000 + 8 * i,
            0x2000000 + 64 * (i % 10));
  assert_int_equal(fclose(f), 0);
  ms_source *source;
  ms_sink *sink;
  assert_int_equal(ms_trace_open(path_of(LACKEY), &source), 0);
  assert_int_equal(ms_mtr_sink_new(path_of(MTR), &sink), 0);
  assert_int_equal(ms_pipeline_run(source, &sink, 1, 0), 0);
  ms_sink_destroy(sink);
  ms_source_destroy(source);
  assert_int_equal(ms_trace_open(path_of(LACKEY), &source), 0);
  assert_int_equal(ms_din_sink_new(path_of(DIN), &sink), 0);
  assert_int_equal(ms_pipeline_run(source, &sink, 1, 0), 0);
  ms_sink_destroy(sink);
  ms_source_destroy(source);
  /* its profile, plain and compressed */
  ms_psnap_options options;
  ms_psnap_options_default(&options);
  ms_psnap_profile profile;
  assert_int_equal(ms_trace_open(path_of(MTR), &source), 0);
  assert_int_equal(ms_psnap_builder_new(&options, &sink), 0);
  assert_int_equal(ms_pipeline_run(source, &sink, 1, 0), 0);
  assert_int_equal(ms_psnap_builder_take(sink, &profile), 0);
  ms_sink_destroy(sink);
  ms_source_destroy(source);
  assert_int_equal(ms_psnap_profile_save_as(&profile, path_of(PSNAP), 0), 0);
  assert_int_equal(ms_psnap_profile_save_as(&profile, path_of(PSNAP_ZST), 1), 0);
  ms_psnap_profile_free(&profile);
  /* a signature and a seed of it */
  ms_signature *signature;
  ms_seed *seed;
  ms_synth_config config;
  ms_synth_config_default(&config);
  assert_int_equal(ms_synth_hand_signature("stride", 64, 8, &signature), 0);
  assert_int_equal(ms_signature_save(signature, path_of(SIG)), 0);
  assert_int_equal(ms_synth_generate(signature, 0, &config, &seed), 0);
  assert_int_equal(ms_seed_save(seed, path_of(SEED)), 0);
  ms_seed_free(seed);
  ms_signature_free(signature);
  /* files that hold no accesses */
  write_text(path_of(EMPTY_MTR), "", 0);
  write_text(path_of(EMPTY_BIN), "", 0);
  write_text(path_of(TEXT), "hello\n", 6);
  write_text(path_of(ZSTD),
             "\x28\xb5\x2f\xfd"
             "0123456789",
             14);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_rmdir(dir);
  return 0;
}

static void kinds_come_from_the_contents(void **state) {
  (void)state;
  static const struct {
    int which;
    ms_input_kind kind;
    int has_accesses;
  } expected[] = {
      {LACKEY, MS_INPUT_LACKEY, 1},   {DIN, MS_INPUT_DIN, 1},         {MTR, MS_INPUT_MTR, 1},
      {PSNAP, MS_INPUT_PSNAP, 1},     {PSNAP_ZST, MS_INPUT_PSNAP, 1}, {SIG, MS_INPUT_SIGNATURE, 0},
      {SEED, MS_INPUT_SEED, 1},       {EMPTY_MTR, MS_INPUT_MTR, 1}, /* the extension decides */
      {EMPTY_BIN, MS_INPUT_EMPTY, 0}, {TEXT, MS_INPUT_UNKNOWN, 0},    {ZSTD, MS_INPUT_ZSTD, 0},
  };
  for (size_t i = 0; i < sizeof expected / sizeof *expected; i++) {
    ms_input_kind kind;
    assert_int_equal(ms_input_kind_of(path_of(expected[i].which), &kind), 0);
    if (kind != expected[i].kind)
      fail_msg("%s: %s, expected %s", path_of(expected[i].which), ms_input_kind_name(kind),
               ms_input_kind_name(expected[i].kind));
    assert_int_equal(ms_input_kind_has_accesses(kind), expected[i].has_accesses);
  }
  /* a name says nothing against the contents: a Lackey trace called .mtr is Lackey */
  char renamed[600];
  snprintf(renamed, sizeof renamed, "%s/lackey-named.mtr", dir);
  assert_int_equal(test_run("cp '%s' '%s'", path_of(LACKEY), renamed), 0);
  ms_input_kind kind;
  assert_int_equal(ms_input_kind_of(renamed, &kind), 0);
  assert_int_equal(kind, MS_INPUT_LACKEY);
  /* a file that is not there is an error naming it */
  assert_true(ms_input_kind_of(path_of(MISSING), &kind) < 0);
  assert_non_null(strstr(ms_error_message(), "missing.mtr"));
}

static void every_kind_with_accesses_opens(void **state) {
  (void)state;
  ms_source *source;
  /* every trace format and the profile give the same 300 accesses */
  int formats[] = {LACKEY, DIN, MTR, PSNAP, PSNAP_ZST};
  for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
    assert_int_equal(ms_open(path_of(formats[i]), 0, NULL, NULL, &source), 0);
    assert_int_equal(count_accesses(source), 300);
  }
  /* a seed as it is, and expanded to a length */
  ms_source *reader;
  assert_int_equal(ms_trace_open(path_of(SEED), &reader), 0);
  int64_t seed_length = count_accesses(reader);
  assert_true(seed_length > 0);
  assert_int_equal(ms_open(path_of(SEED), 0, NULL, NULL, &source), 0);
  assert_int_equal(count_accesses(source), seed_length);
  ms_open_options options = {.expand_seeds = 1, .seed_length = 3 * (uint64_t)seed_length + 5};
  assert_int_equal(ms_open(path_of(SEED), 0, NULL, &options, &source), 0);
  assert_int_equal(count_accesses(source), 3 * seed_length + 5);
}

/* Reading through counts what the Lackey text holds: 150 loads and 150 stores, one
 * thread; the .mtr copy and the profile count the same. */
static void counts_by_reading_through(void **state) {
  (void)state;
  int inputs[] = {LACKEY, MTR, PSNAP_ZST};
  for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
    ms_input_counts counts;
    ms_stream_info info = {0};
    assert_int_equal(ms_input_count(path_of(inputs[i]), &counts, &info), 0);
    assert_int_equal(counts.accesses, 300);
    assert_int_equal(counts.by_kind[MS_LOAD], 150);
    assert_int_equal(counts.by_kind[MS_STORE], 150);
    assert_int_equal(info.thread_count, 1);
    ms_stream_info_clear(&info);
  }
  ms_input_counts counts;
  ms_stream_info info = {0};
  assert_true(ms_input_count(path_of(SIG), &counts, &info) < 0);
}

static void inputs_without_accesses_are_refused(void **state) {
  (void)state;
  ms_source *source = (ms_source *)1;
  assert_true(ms_open(path_of(SIG), 0, NULL, NULL, &source) < 0);
  assert_null(source);
  assert_non_null(strstr(ms_error_message(), "a memory signature holds no accesses"));
  assert_true(ms_open(path_of(ZSTD), 0, NULL, NULL, &source) < 0);
  assert_non_null(strstr(ms_error_message(), "zstd-compressed data"));
  assert_true(ms_open(path_of(TEXT), 0, NULL, NULL, &source) < 0);
  assert_non_null(strstr(ms_error_message(), "offset 0: not a trace"));
  assert_true(ms_open(path_of(MISSING), 0, NULL, NULL, &source) < 0);
  assert_non_null(strstr(ms_error_message(), "missing.mtr"));
  assert_true(ms_open(NULL, 0, NULL, NULL, &source) < 0);
  assert_non_null(strstr(ms_error_message(), "no input"));
  /* expansion is for seeds only */
  ms_open_options options = {.expand_seeds = 1, .seed_length = 10};
  assert_true(ms_open(path_of(MTR), 0, NULL, &options, &source) < 0);
  assert_non_null(strstr(ms_error_message(), "expand trace seeds only"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(kinds_come_from_the_contents),
      cmocka_unit_test(every_kind_with_accesses_opens),
      cmocka_unit_test(counts_by_reading_through),
      cmocka_unit_test(inputs_without_accesses_are_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* The narrower widths' reuse CDFs of a signature (ms_signature.widths, .sig format 2).
 *
 * - Hand-worked: four 8-byte accesses with word 4 and width 16 (widths 4 and 8 below the
 *   maximal 16), every hit count worked out in the comment of test_hand_worked.
 * - Oracle: on a mixed synthetic trace (streams, a column walk, random lines, accesses
 *   spanning lines, size 0) fed in uneven batches, the exact width rows equal, count for
 *   count, an exact ms_surface_builder's on the same accesses (its histogram summed), whole
 *   program and per site; the maximal width's CDF is the one without widths.
 * - Warm-up accesses are not counted and a forget starts a new builder whose counts add to
 *   the old one's; SHARDS rows stay within 0.05 of the exact ones on the mixed trace.
 * - Text: v2 -> parse -> v2 byte-identical (exact, SHARDS); a v1 text parses and is written
 *   as v2 with "Widths : no" and the same numbers; every rejection of the new section names
 *   the input and the line; JSON carries the rows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/signature.h"
#include "memsnap/surface.h"
#include "testutil.h"

static ms_access access_at(uint64_t address, uint8_t size, uint32_t site) {
  ms_access access = {0};
  access.address = address;
  access.size = size;
  access.site = site;
  return access;
}

/* Feeds `count` accesses in uneven batches (the model sees batch boundaries anywhere). */
static ms_signature *signature_of(const ms_access *accesses, size_t count, uint32_t width,
                                  uint32_t word, double widths, int per_site) {
  ms_signature_config config;
  ms_signature_config_default(&config);
  config.width = width;
  config.word = word;
  config.widths = widths;
  config.per_site = per_site;
  ms_signature_model *model;
  assert_int_equal(ms_signature_model_new(&config, &model), MS_OK);
  for (size_t done = 0, step = 1; done < count; step = step * 3 % 1000 + 1) {
    size_t take = count - done < step ? count - done : step;
    assert_int_equal(ms_signature_model_add(model, accesses + done, take), MS_OK);
    done += take;
  }
  ms_signature *signature;
  assert_int_equal(ms_signature_model_result(model, NULL, 0, &signature), MS_OK);
  ms_signature_model_free(model);
  return signature;
}

/* The exact surface of the accesses at widths word..width/2, depths 2^0..2^16. */
static void exact_surface(const ms_access *accesses, size_t count, uint32_t width, uint32_t word,
                          ms_surface *out) {
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.width_count = 0;
  for (uint32_t w = word; w < width; w *= 2)
    config.widths[config.width_count++] = w;
  ms_surface_builder *builder;
  assert_int_equal(ms_surface_builder_new(&config, &builder), MS_OK);
  ms_batch batch = {(ms_access *)accesses, count, count};
  assert_int_equal(ms_surface_builder_add(builder, &batch), MS_OK);
  ms_surface_builder_result(builder, out);
  ms_surface_builder_free(builder);
}

/* The signature's rows equal the surface's counts exactly. */
static void assert_rows_equal(const ms_signature *signature, const ms_surface *surface) {
  assert_int_equal(surface->width_count, signature->levels);
  for (int n = 0; n < signature->levels; n++) {
    uint64_t below = 0;
    assert_true(signature->width_references[n] == (double)surface->references[n]);
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      below += surface->histogram[n][k];
      assert_true(signature->width_hits[n][k] == (double)below);
      assert_true(signature->width_hits[n][k] / signature->width_references[n] ==
                  surface->hit_rate[n][k]);
    }
  }
}

/* Word 4, width 16: the rows are widths 4 and 8, the CDF width 16. Accesses of 8 bytes:
 *   a0 @0, a1 @16, a2 @0, a3 @4.
 * Width 4 (lines = address / 4): a0 -> 0, 1 (first); a1 -> 4, 5 (first); a2 -> 0 (since
 *   its last use: 1, 4, 5: position 4), 1 (4, 5, 0: position 4); a3 -> 1 (the line just
 *   referenced: position 1), 2 (first). 8 references; hits at depth 1: 1, 2: 1, >= 4: 3.
 * Width 8: a0 -> 0; a1 -> 2; a2 -> 0 (2 between: position 2); a3 -> 0 (position 1),
 *   1 (first). 5 references; hits at depth 1: 1, >= 2: 2.
 * Width 16 (the CDF): a0 -> 0; a1 -> 1; a2 -> 0 (position 2); a3 -> 0 (position 1).
 *   4 references; hits at depth 1: 1, >= 2: 2. */
static void test_hand_worked(void **state) {
  (void)state;
  const ms_access trace[] = {access_at(0, 8, 0), access_at(16, 8, 0), access_at(0, 8, 0),
                             access_at(4, 8, 0)};
  ms_signature *signature = signature_of(trace, 4, 16, 4, 1, 0);
  assert_int_equal(signature->levels, 2);
  assert_true(signature->widths == 1);
  static const double hits4[] = {1, 1, 3}, hits8[] = {1, 2, 2}, hits16[] = {1, 2, 2};
  assert_true(signature->width_references[0] == 8);
  assert_true(signature->width_references[1] == 5);
  assert_true(signature->bins[0].references == 4);
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    assert_true(signature->width_hits[0][k] == hits4[k < 2 ? k : 2]);
    assert_true(signature->width_hits[1][k] == hits8[k < 2 ? k : 2]);
    assert_true(signature->bins[0].hits[k] == hits16[k < 2 ? k : 2]);
  }
  ms_signature_free(signature);
}

/* Streams, a column walk over 300 lines of 512 bytes, random lines, repeats of one word,
 * accesses spanning lines of every width, size 0; sites 0..2 and none. */
static ms_access *mixed_trace(size_t count) {
  ms_access *trace = malloc(count * sizeof *trace);
  assert_non_null(trace);
  uint64_t x = 7;
  for (size_t i = 0; i < count; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t address;
    uint8_t size = 4;
    switch (i / 1000 % 5) {
    case 0: address = 0x100000 + i * 8; break;                                /* stream */
    case 1: address = 0x800000 + (i % 300) * 512 + (i / 300 % 16) * 4; break; /* column */
    case 2: address = 0x2000000 + (x >> 40) % (1u << 20); break;              /* random */
    case 3: address = 0x900000 + (i % 7) * 4; break;                          /* repeats */
    default:
      address = 0x400000 + (x >> 33) % 4096 * 6 + 1; /* spanning */
      size = (uint8_t)((x >> 20) % 17);              /* 0..16, size 0 included */
    }
    trace[i] = access_at(address, size, i % 7 == 0 ? MS_SITE_NONE : (uint32_t)(i % 3));
  }
  return trace;
}

static void test_oracle_exact_surface(void **state) {
  (void)state;
  enum { COUNT = 30000 };
  ms_access *trace = mixed_trace(COUNT);
  static const uint32_t shapes[][2] = {{512, 4}, {256, 8}, {64, 4}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    uint32_t width = shapes[s][0], word = shapes[s][1];
    ms_surface surface;
    exact_surface(trace, COUNT, width, word, &surface);
    ms_signature *plain = signature_of(trace, COUNT, width, word, 0, 0);
    assert_true(plain->widths == 0);
    for (int per_site = 0; per_site < 2; per_site++) {
      ms_signature *signature = signature_of(trace, COUNT, width, word, 1, per_site);
      assert_rows_equal(signature, &surface);
      if (!per_site) /* the maximal width: the CDF as without widths */
        assert_memory_equal(&signature->bins[0], &plain->bins[0], sizeof plain->bins[0]);
      ms_signature_free(signature);
    }
    ms_signature_free(plain);
  }
  free(trace);
}

/* Warm-up and tracked accesses are not counted; forget keeps the counts, starts cold. */
static void test_warm_track_forget(void **state) {
  (void)state;
  enum { COUNT = 12000 };
  ms_access *trace = mixed_trace(COUNT);
  ms_signature_config config;
  ms_signature_config_default(&config);
  config.widths = 1;
  ms_signature_model *model;
  assert_int_equal(ms_signature_model_new(&config, &model), MS_OK);
  assert_int_equal(ms_signature_model_warm(model, trace, 3000), MS_OK);
  assert_int_equal(ms_signature_model_track(model, trace + 3000, 1000), MS_OK);
  assert_int_equal(ms_signature_model_add(model, trace + 4000, 4000), MS_OK);
  ms_signature_model_forget(model);
  assert_int_equal(ms_signature_model_add(model, trace + 8000, 4000), MS_OK);
  ms_signature *signature;
  assert_int_equal(ms_signature_model_result(model, NULL, 0, &signature), MS_OK);
  ms_surface first, second;
  exact_surface(trace + 4000, 4000, 512, 4, &first);
  exact_surface(trace + 8000, 4000, 512, 4, &second);
  for (int n = 0; n < signature->levels; n++) {
    uint64_t below = 0;
    assert_true(signature->width_references[n] ==
                (double)(first.references[n] + second.references[n]));
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      below += first.histogram[n][k] + second.histogram[n][k];
      assert_true(signature->width_hits[n][k] == (double)below);
    }
  }
  ms_signature_free(signature);
  ms_signature_model_free(model);
  free(trace);
}

static void test_shards_close(void **state) {
  (void)state;
  enum { COUNT = 30000 };
  ms_access *trace = mixed_trace(COUNT);
  ms_signature *exact = signature_of(trace, COUNT, 512, 4, 1, 0);
  ms_signature *sampled = signature_of(trace, COUNT, 512, 4, 0.25, 0);
  assert_true(sampled->widths == 0.25);
  for (int n = 0; n < exact->levels; n++) {
    /* every line reference is counted even when sampling */
    assert_true(sampled->width_references[n] == exact->width_references[n]);
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      double a = exact->width_hits[n][k] / exact->width_references[n];
      double b = sampled->width_hits[n][k] / sampled->width_references[n];
      if (fabs(a - b) >= 0.05) fprintf(stderr, "width %d depth 2^%d: %g vs %g\n", 4 << n, k, a, b);
      assert_true(fabs(a - b) < 0.05);
    }
  }
  ms_signature_free(exact);
  ms_signature_free(sampled);
  free(trace);
}

static void test_bad_config(void **state) {
  (void)state;
  static const double bad[] = {-0.5, 1.5, 2, NAN};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ms_signature_config config;
    ms_signature_config_default(&config);
    config.widths = bad[i];
    ms_signature_model *model = (ms_signature_model *)1;
    assert_int_equal(ms_signature_model_new(&config, &model), MS_ERR_ARG);
    assert_null(model);
  }
}

/* ---- format ---- */

static char *to_text(const ms_signature *signature) {
  test_memstream m;
  assert_int_equal(ms_signature_write_text(test_memstream_open(&m), signature), MS_OK);
  return test_memstream_text(&m);
}

static ms_signature *parsed(const char *text) {
  ms_signature *signature;
  int rc = ms_signature_parse(text, strlen(text), "good.sig", &signature);
  if (rc < 0) fprintf(stderr, "%s\n", ms_error_message());
  assert_int_equal(rc, MS_OK);
  return signature;
}

static void test_round_trip(void **state) {
  (void)state;
  enum { COUNT = 6000 };
  ms_access *trace = mixed_trace(COUNT);
  static const double methods[] = {1, 0.25};
  for (size_t m = 0; m < 2; m++)
    for (int per_site = 0; per_site < 2; per_site++) {
      ms_signature *signature = signature_of(trace, COUNT, 512, 4, methods[m], per_site);
      char *text = to_text(signature);
      assert_memory_equal(text, "memsnap signature 2\n", 20);
      assert_non_null(strstr(text, m == 0 ? "\nWidths : exact\n" : "\nWidths : shards 0.25\n"));
      assert_non_null(strstr(text, "\nWidth 256 : References "));
      ms_signature *again = parsed(text);
      char *again_text = to_text(again);
      assert_string_equal(text, again_text);
      assert_true(again->widths == signature->widths);
      assert_memory_equal(again->width_hits, signature->width_hits, sizeof again->width_hits);
      assert_memory_equal(again->width_references, signature->width_references,
                          sizeof again->width_references);
      free(again_text);
      ms_signature_free(again);
      free(text);
      ms_signature_free(signature);
    }
  free(trace);
}

/* 1-based line of the first `needle` after `after` (NULL: the start). */
static int line_of(const char *text, const char *after, const char *needle) {
  const char *start = after ? strstr(text, after) : text;
  assert_non_null(start);
  const char *at = strstr(start, needle);
  assert_non_null(at);
  int line = 1;
  for (const char *p = text; p < at; p++)
    line += *p == '\n';
  return line;
}

static void expect_rejected(const char *text, int line, const char *message_part) {
  ms_signature *signature = (ms_signature *)1;
  assert_int_equal(ms_signature_parse(text, strlen(text), "bad.sig", &signature), MS_ERR_FORMAT);
  assert_null(signature);
  char expected[64];
  snprintf(expected, sizeof expected, "bad.sig:%d: ", line);
  const char *message = ms_error_message();
  if (strncmp(message, expected, strlen(expected)) != 0 || !strstr(message, message_part))
    fprintf(stderr, "message: %s (expected %s...%s)\n", message, expected, message_part);
  assert_memory_equal(message, expected, strlen(expected));
  assert_non_null(strstr(message, message_part));
}

static void test_v1_still_read(void **state) {
  (void)state;
  enum { COUNT = 6000 };
  ms_access *trace = mixed_trace(COUNT);
  ms_signature *signature = signature_of(trace, COUNT, 512, 4, 0, 1);
  char *v2 = to_text(signature);
  assert_non_null(strstr(v2, "\nBins : 5\nWidths : no\n\nBin: all\n"));
  /* version 1: the magic, and no Widths line */
  char *v1_magic = test_edited(v2, NULL, "memsnap signature 2\n", "memsnap signature 1\n");
  char *v1 = test_edited(v1_magic, NULL, "Widths : no\n", "");
  ms_signature *old = parsed(v1);
  char *written = to_text(old);
  assert_string_equal(written, v2);
  assert_true(old->widths == 0);
  assert_int_equal(old->bin_count, signature->bin_count);
  for (int i = 0; i < old->bin_count; i++) {
    assert_true(old->bins[i].references == signature->bins[i].references);
    assert_memory_equal(old->bins[i].hits, signature->bins[i].hits, sizeof old->bins[i].hits);
    assert_memory_equal(old->bins[i].yes, signature->bins[i].yes, sizeof old->bins[i].yes);
  }
  /* a version 2 text needs its Widths line; a version 1 text has none */
  char *no_widths = test_edited(v2, NULL, "Widths : no\n", "");
  expect_rejected(no_widths, line_of(no_widths, NULL, "Bin: all"), "expected 'Widths : '");
  free(no_widths);
  free(written);
  ms_signature_free(old);
  free(v1);
  free(v1_magic);
  free(v2);
  ms_signature_free(signature);
  free(trace);
}

static void test_rejections(void **state) {
  (void)state;
  enum { COUNT = 6000 };
  ms_access *trace = mixed_trace(COUNT);
  ms_signature *signature = signature_of(trace, COUNT, 64, 4, 1, 0);
  assert_int_equal(signature->levels, 4); /* widths 4, 8, 16, 32 */
  char *text = to_text(signature), *bad, line[160];
  const char *block8 = "Width 8 : References ";
  /* a wrong width, a width out of order, a missing width line */
  bad = test_edited(text, NULL, block8, "Width 12 : References ");
  expect_rejected(bad, line_of(text, NULL, block8), "width 12 out of order: expected Width 8");
  free(bad);
  bad = test_edited(text, NULL, block8, "Width 16 : References ");
  expect_rejected(bad, line_of(text, NULL, block8), "width 16 out of order");
  free(bad);
  snprintf(line, sizeof line, "%s%.17g\n", block8, signature->width_references[1]);
  bad = test_edited(text, NULL, line, "");
  expect_rejected(bad, line_of(text, NULL, block8), "expected 'Width '");
  free(bad);
  bad = test_edited(text, NULL, block8, "Width 8 : Refs ");
  expect_rejected(bad, line_of(text, NULL, block8), "expected 'Width 8 : References N'");
  free(bad);
  /* a count above its total, a rate disagreeing with its counts, decreasing hits */
  double references = signature->width_references[1], *hits = signature->width_hits[1];
  assert_true(hits[2] > 0 && hits[3] < references);
  int line3 = line_of(text, block8, "  HitRate(2^3) = ");
  char old_line[160];
  snprintf(old_line, sizeof old_line, "  HitRate(2^3) = %.6g (%.17g/%.17g)\n", hits[3] / references,
           hits[3], references);
  snprintf(line, sizeof line, "  HitRate(2^3) = 1 (%.17g/%.17g)\n", references + 1, references);
  bad = test_edited(text, block8, old_line, line);
  expect_rejected(bad, line3, "exceeds its total");
  free(bad);
  snprintf(line, sizeof line, "  HitRate(2^3) = %.6g (%.17g/%.17g)\n", hits[3] / references + 0.01,
           hits[3], references);
  bad = test_edited(text, block8, old_line, line);
  expect_rejected(bad, line3, "rate disagrees with its counts");
  free(bad);
  snprintf(line, sizeof line, "  HitRate(2^3) = 0 (0/%.17g)\n", references);
  bad = test_edited(text, block8, old_line, line);
  expect_rejected(bad, line3, "must not decrease");
  free(bad);
  snprintf(line, sizeof line, "  HitRate(2^3) = %.6g (%.17g/%.17g)\n", hits[3] / (references + 1),
           hits[3], references + 1);
  bad = test_edited(text, block8, old_line, line);
  expect_rejected(bad, line3, "differs from References");
  free(bad);
  /* a missing block: the last one (width 32) cut off, the input ends */
  const char *block32 = strstr(text, "Width 32 : References ");
  assert_non_null(block32);
  bad = strndup(text, (size_t)(block32 - text));
  expect_rejected(bad, line_of(text, NULL, "Width 32 : References "), "missing 'Width '");
  free(bad);
  /* the section when Widths is no; no section when Widths is exact */
  bad = test_edited(text, NULL, "Widths : exact\n", "Widths : no\n");
  expect_rejected(bad, line_of(text, NULL, "TEMPORAL LOCALITY BY WIDTH"),
                  "the header says 'Widths : no'");
  free(bad);
  const char *section = strstr(text, "TEMPORAL LOCALITY BY WIDTH");
  char *plain = strndup(text, (size_t)(section - text));
  bad = test_edited(plain, NULL, "Widths : exact\n", "Widths : shards 0.5\n");
  expect_rejected(bad, line_of(text, NULL, "TEMPORAL LOCALITY BY WIDTH"),
                  "missing 'TEMPORAL LOCALITY BY WIDTH");
  free(bad);
  /* a version 1 text with the section */
  char *v1 =
      test_edited(text, NULL, "memsnap signature 2\nProgram", "memsnap signature 1\nProgram");
  bad = test_edited(v1, NULL, "Widths : exact\n", "");
  expect_rejected(bad, line_of(text, NULL, "TEMPORAL LOCALITY BY WIDTH") - 1, "version 1");
  free(bad);
  free(v1);
  /* bad Widths values */
  static const char *values[] = {"shards 0", "shards 1", "shards 0.5x", "shards -1", "yes", ""};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    snprintf(line, sizeof line, "Widths : %s\n", values[i]);
    bad = test_edited(text, NULL, "Widths : exact\n", line);
    expect_rejected(bad, line_of(text, NULL, "Widths : exact"), "Widths");
    free(bad);
  }
  free(plain);
  free(text);
  ms_signature_free(signature);
  /* the section in a site bin: per-site text with the section copied after the last bin */
  signature = signature_of(trace, COUNT, 64, 4, 1, 1);
  text = to_text(signature);
  section = strstr(text, "TEMPORAL LOCALITY BY WIDTH");
  const char *next_bin = strstr(section, "\nBin: ");
  assert_non_null(next_bin);
  size_t head = strlen(text), length = (size_t)(next_bin + 1 - section);
  bad = malloc(head + length + 1);
  memcpy(bad, text, head);
  memcpy(bad + head, section, length);
  bad[head + length] = '\0';
  int lines = 1;
  for (const char *p = text; *p; p++)
    lines += *p == '\n';
  expect_rejected(bad, lines, "only the whole-program bin");
  free(bad);
  /* and one missing from the whole-program bin of a per-site text */
  plain = strndup(text, (size_t)(section - text));
  bad = malloc(strlen(plain) + strlen(next_bin) + 1);
  strcpy(bad, plain);
  strcat(bad, next_bin + 1);
  expect_rejected(bad, line_of(text, NULL, "TEMPORAL LOCALITY BY WIDTH"),
                  "expected 'TEMPORAL LOCALITY BY WIDTH");
  free(bad);
  free(plain);
  free(text);
  ms_signature_free(signature);
  free(trace);
}

static json_object *get(json_object *object, const char *key) {
  json_object *value;
  assert_true(json_object_object_get_ex(object, key, &value));
  return value;
}

static void test_json_rows(void **state) {
  (void)state;
  enum { COUNT = 6000 };
  ms_access *trace = mixed_trace(COUNT);
  for (int with = 0; with < 2; with++) {
    ms_signature *signature = signature_of(trace, COUNT, 512, 4, with ? 1 : 0, 0);
    test_memstream m;
    assert_int_equal(ms_signature_write_json(test_memstream_open(&m), signature), MS_OK);
    char *text = test_memstream_text(&m);
    json_object *root = json_tokener_parse(text);
    assert_non_null(root);
    assert_int_equal(json_object_get_int(get(root, "version")), 2);
    json_object *widths = get(root, "widths");
    if (!with) {
      assert_null(widths);
    } else {
      assert_string_equal(json_object_get_string(get(widths, "method")), "exact");
      assert_true(json_object_get_double(get(widths, "rate")) == 1);
      json_object *rows = get(widths, "rows");
      assert_int_equal(json_object_array_length(rows), signature->levels);
      for (int n = 0; n < signature->levels; n++) {
        json_object *row = json_object_array_get_idx(rows, (size_t)n);
        assert_int_equal(json_object_get_int(get(row, "width")), 4 << n);
        assert_true(json_object_get_double(get(row, "references")) ==
                    signature->width_references[n]);
        json_object *hits = get(row, "hits"), *rates = get(row, "hit_rates");
        assert_int_equal(json_object_array_length(hits), MS_SIGNATURE_DEPTHS);
        for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
          double count = signature->width_hits[n][k];
          assert_true(json_object_get_double(json_object_array_get_idx(hits, (size_t)k)) == count);
          assert_true(json_object_get_double(json_object_array_get_idx(rates, (size_t)k)) ==
                      count / signature->width_references[n]);
        }
      }
    }
    json_object_put(root);
    free(text);
    ms_signature_free(signature);
  }
  free(trace);
}

/* The derived surface of a signature with widths is its rows, without generating. */
static void test_derived_surface_reads_rows(void **state) {
  (void)state;
  enum { COUNT = 6000 };
  ms_access *trace = mixed_trace(COUNT);
  ms_signature *signature = signature_of(trace, COUNT, 512, 4, 1, 0);
  ms_surface surface;
  exact_surface(trace, COUNT, 512, 4, &surface);
  ms_signature_surface derived;
  assert_int_equal(ms_signature_derive_surface(signature, 0, &derived), MS_OK);
  assert_int_equal(derived.width_count, 8);
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    for (int n = 0; n < 7; n++)
      assert_true(derived.hit_rate[n][k] == surface.hit_rate[n][k]);
    assert_true(derived.hit_rate[7][k] == ms_signature_hit_rate(&signature->bins[0], k));
  }
  ms_signature_free(signature);
  free(trace);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_worked),       cmocka_unit_test(test_oracle_exact_surface),
      cmocka_unit_test(test_warm_track_forget), cmocka_unit_test(test_shards_close),
      cmocka_unit_test(test_bad_config),        cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_v1_still_read),     cmocka_unit_test(test_rejections),
      cmocka_unit_test(test_json_rows),         cmocka_unit_test(test_derived_surface_reads_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

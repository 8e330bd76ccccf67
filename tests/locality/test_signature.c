/* The signature model and format against hand-worked examples and round trips.
 *
 * - The dissertation's example A0,B0,C0,B1,C6,A3 (chameleon-weinberg-dissertation-2008.txt,
 *   section 2.2.3; lines of 8 words), worked by hand from sections 2.2.3 and 3.2: every
 *   alpha yes/trial count per level and reuse bin, and the CDF; halving the line makes C6
 *   a new line D2 and pushes A3 one stack position deeper, as the text says.
 * - Smaller hand-worked sequences: repeats of one word, the other half, accesses that span
 *   two lines, cycles of 2^16 and 2^16 + 5 lines run long enough to rebuild the model's
 *   time tree (positions exactly 2^16: hits at depth 2^16; beyond: misses everywhere).
 * - Interval sampling: the wrapper keeps exactly the on-runs and announces each interval;
 *   tracked gaps update the trees only (hand-worked), and the gap sink behind the wrapper
 *   equals the same add/track/warm calls made by hand.
 * - Text -> parse -> text is byte-identical; the JSON carries the same numbers; malformed
 *   inputs are rejected with the name and the line.
 * - The derived surface reproduces the CDF at the maximal width and, for a stream whose
 *   spatial behaviour the alphas pin down (one word per line), every smaller width.
 * - The model's three loops agree exactly on a mixed trace (streams, a column walk reusing
 *   ~300 lines back, random lines that grow the table and exhaust the times, repeats of one
 *   word, accesses spanning lines, size 0): the whole-program loop with PEXT (where the CPU
 *   has it), without, and the general loop of per-site binning (whose whole-program bin
 *   sums the sites' integer counts with weight 1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>

#include "memsnap/error.h"
#include "memsnap/sample.h"
#include "memsnap/signature.h"
#include "testutil.h"

#include "../../lib/locality/signature_internal.h"

/* Line `line` (of `width` bytes), word `word` (4 bytes). */
static ms_access word_access(uint64_t line, uint32_t word, uint32_t width) {
  ms_access access = {0};
  access.address = 0x10000 + line * width + word * 4u;
  access.size = 4;
  access.site = 0;
  return access;
}

static ms_signature *run_model(const ms_access *accesses, size_t count, uint32_t width) {
  ms_signature_config config;
  ms_signature_config_default(&config);
  config.width = width;
  ms_signature_model *model;
  assert_int_equal(ms_signature_model_new(&config, &model), MS_OK);
  assert_int_equal(ms_signature_model_add(model, accesses, count), MS_OK);
  ms_signature *signature;
  assert_int_equal(ms_signature_model_result(model, NULL, 0, &signature), MS_OK);
  ms_signature_model_free(model);
  return signature;
}

static void assert_alpha(const ms_signature_bin *bin, int level, int reuse, double yes,
                         double trials) {
  assert_true(bin->yes[level][reuse] == yes);
  assert_true(bin->trials[level][reuse] == trials);
}

static double total_trials(const ms_signature_bin *bin, int levels) {
  double sum = 0;
  for (int level = 0; level < levels; level++)
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
      sum += bin->trials[level][k];
  return sum;
}

/* Section 2.2.3 with 8-word lines (32 bytes, 4-byte words: levels 0..2 are alpha(4,8),
 * alpha(8,16), alpha(16,32)).
 * A0, B0, C0: first visits, nothing counted, trees marked along word 0 (halves 0,0,0).
 * B1: stack position 2 (C in between), reuse bin 1. Root: word 1 is in half 0 as before:
 *     yes at level 2. Node of words 0-3: half 0 again: yes at level 1. Node of words 0-1:
 *     word 1 is half 1, before 0: no at level 0.
 * C6: position 2 (B), bin 1. Root: word 6 in half 1, before 0: no at level 2; the nodes
 *     below (words 4-7, 6-7) were never visited: nothing.
 * A3: position 3 (B, C: reuse distance 2), bin 2. Root: half 0 again: yes at level 2.
 *     Words 0-3: word 3 is in half 1 (words 2-3), before 0: no at level 1. Words 2-3:
 *     never visited.
 * Totals: level 2: bin 1 1/2, bin 2 1/1; level 1: bin 1 1/1, bin 2 0/1; level 0: bin 1
 * 0/1. CDF over 6 references: 3 first references, positions 2, 2, 3. */
static void test_dissertation_example(void **state) {
  (void)state;
  const uint32_t width = 32;
  ms_access trace[] = {word_access(0, 0, width), word_access(1, 0, width),
                       word_access(2, 0, width), word_access(1, 1, width),
                       word_access(2, 6, width), word_access(0, 3, width)};
  ms_signature *signature = run_model(trace, 6, width);
  assert_int_equal(signature->levels, 3);
  assert_int_equal(signature->bin_count, 1);
  const ms_signature_bin *bin = &signature->bins[0];
  assert_true(bin->references == 6);
  assert_alpha(bin, 2, 1, 1, 2);
  assert_alpha(bin, 2, 2, 1, 1);
  assert_alpha(bin, 1, 1, 1, 1);
  assert_alpha(bin, 1, 2, 0, 1);
  assert_alpha(bin, 0, 1, 0, 1);
  assert_true(total_trials(bin, 3) == 6);
  double hits[MS_SIGNATURE_DEPTHS] = {0, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
    assert_true(bin->hits[k] == hits[k]);
  assert_true(fabs(ms_signature_alpha(bin, 2, -1) - 2.0 / 3.0) < 1e-15);
  assert_true(ms_signature_alpha(bin, 0, 2) == -1);
  ms_signature_free(signature);

  /* Halved lines (16 bytes): C6 becomes D2, a first reference, and A3 has position 4. */
  ms_access halved[6];
  for (int i = 0; i < 6; i++) {
    halved[i] = trace[i];
    halved[i].address = trace[i].address; /* same addresses, 16-byte lines */
  }
  signature = run_model(halved, 6, 16);
  bin = &signature->bins[0];
  double halved_hits[MS_SIGNATURE_DEPTHS] = {0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
    assert_true(bin->hits[k] == halved_hits[k]);
  /* B1: bin 1 (position 2): root of 16 bytes: half 0 again (yes, level 1); words 0-1: no. */
  assert_alpha(bin, 1, 1, 1, 1);
  assert_alpha(bin, 0, 1, 0, 1);
  /* A3: bin 2 (position 4): root: half 1 (words 2-3) after 0: no at level 1. */
  assert_alpha(bin, 1, 2, 0, 1);
  assert_true(total_trials(bin, 2) == 3);
  ms_signature_free(signature);
}

/* A0 A0 A0: two trials at each of 7 levels, all yes, bin 0. Then A127: root no, the rest
 * of its path unvisited. Then A0: bin 0, root no (after 1), words 0-255... yes below. */
static void test_repeats_and_halves(void **state) {
  (void)state;
  ms_access trace[] = {word_access(0, 0, 512), word_access(0, 0, 512), word_access(0, 0, 512),
                       word_access(0, 127, 512), word_access(0, 0, 512)};
  ms_signature *signature = run_model(trace, 5, 512);
  const ms_signature_bin *bin = &signature->bins[0];
  assert_int_equal(signature->levels, 7);
  for (int level = 0; level < 6; level++)
    assert_alpha(bin, level, 0, 3, 3);
  assert_alpha(bin, 6, 0, 2, 4);
  assert_true(bin->hits[0] == 4 && bin->references == 5);
  ms_signature_free(signature);
}

/* An 8-byte access at offset 508 spans two 512-byte lines: two references, as memsnap sim
 * counts it; the second stands for word 0 of the next line. */
static void test_spanning_access(void **state) {
  (void)state;
  ms_access trace[3] = {0};
  trace[0].address = 0x10000 + 508;
  trace[0].size = 8;
  trace[1].address = 0x10000 + 512;
  trace[1].size = 4;
  trace[2].address = 0x10000 + 0;
  trace[2].size = 4;
  ms_signature *signature = run_model(trace, 3, 512);
  const ms_signature_bin *bin = &signature->bins[0];
  assert_true(bin->references == 4);
  /* At the top of the address space an access does not wrap around to line 0. */
  ms_access top = {.address = UINT64_MAX - 3, .size = 8};
  ms_signature *edge = run_model(&top, 1, 512);
  assert_true(edge->bins[0].references == 1);
  ms_signature_free(edge);
  /* refs: L0 (first), L1 w0 (first), L1 w0 (position 1), L0 w0 (position 2). */
  assert_true(bin->hits[0] == 1 && bin->hits[1] == 2);
  for (int level = 0; level < 7; level++) {
    assert_alpha(bin, level, 0, 1, 1); /* L1 word 0 twice */
    /* L0: word 127 then word 0: root no, nothing below visited. */
    assert_true(bin->trials[level][1] == (level == 6 ? 1 : 0));
  }
  assert_true(bin->yes[6][1] == 0);
  ms_signature_free(signature);
}

/* Cycles over n lines, at least 5 times and past 2^18 references (the model's time tree
 * is rebuilt then): after the first cycle every reference has position n. */
static void check_cycle(uint32_t lines) {
  size_t cycles = ((size_t)1 << 18) / lines + 2;
  if (cycles < 5) cycles = 5;
  size_t count = (size_t)lines * cycles;
  ms_access *trace = malloc(count * sizeof *trace);
  assert_non_null(trace);
  for (size_t i = 0; i < count; i++)
    trace[i] = word_access(i % lines, (uint32_t)(i / lines % 5), 512);
  ms_signature *signature = run_model(trace, count, 512);
  const ms_signature_bin *bin = &signature->bins[0];
  assert_true(bin->references == (double)count);
  double reused = (double)(count - lines);
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
    assert_true(bin->hits[k] == ((1u << k) >= lines ? reused : 0));
  /* Word i/lines: the root keeps half 0 (words 0..4): yes in the lines' bin every time. */
  int reuse = 0;
  while (reuse < 16 && (1u << reuse) < lines)
    reuse++;
  assert_alpha(bin, 6, reuse, reused, reused);
  ms_signature_free(signature);
  free(trace);
}

static void test_cycles_beyond_the_time_tree(void **state) {
  (void)state;
  check_cycle(1u << 16);
  check_cycle((1u << 16) + 5);
  check_cycle(300);
}

/* ---- interval sampling ---- */

typedef struct collect_sink {
  ms_sink base;
  uint64_t sum, count, intervals_seen;
  uint32_t flags;
} collect_sink;

static int collect_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  collect_sink *c = (collect_sink *)sink;
  c->flags = info->flags;
  for (size_t i = 0; i < batch->count; i++) {
    c->sum += batch->accesses[i].address;
    c->count++;
  }
  return MS_OK;
}
static void collect_destroy(ms_sink *sink) { (void)sink; }
static const ms_sink_ops collect_ops = {NULL, collect_consume, NULL, collect_destroy};

static int count_interval(void *context, uint64_t interval) {
  collect_sink *c = context;
  assert_int_equal(interval, c->intervals_seen);
  c->intervals_seen++;
  return MS_OK;
}

static void test_interval_sampling(void **state) {
  (void)state;
  collect_sink inner = {{&collect_ops}, 0, 0, 0, 0};
  ms_sink *sample;
  assert_int_equal(ms_sample_sink_new(&inner.base, 3, 7, count_interval, &inner, &sample), MS_OK);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 16), MS_OK);
  ms_stream_info info = {0};
  uint64_t next = 0, expected_sum = 0, expected_count = 0;
  for (int round = 0; round < 9; round++) { /* batches of 1..16 accesses, 9 of them */
    batch.count = (size_t)(round * 5 % 16) + 1;
    for (size_t i = 0; i < batch.count; i++, next++) {
      batch.accesses[i] = (ms_access){.address = next, .size = 1};
      if (next % 10 < 3) {
        expected_sum += next;
        expected_count++;
      }
    }
    assert_int_equal(sample->ops->consume(sample, &info, &batch), MS_OK);
  }
  assert_int_equal(inner.count, expected_count);
  assert_int_equal(inner.sum, expected_sum);
  assert_int_equal(inner.intervals_seen, (next + 9) / 10);
  assert_true(inner.flags & MS_STREAM_SAMPLED);
  uint64_t seen, kept;
  ms_sample_sink_counts(sample, &seen, &kept);
  assert_int_equal(seen, next);
  assert_int_equal(kept, expected_count);
  ms_sink_destroy(sample);
  ms_batch_free(&batch);
  assert_int_equal(ms_sample_sink_new(&inner.base, 0, 7, NULL, NULL, &sample), MS_ERR_ARG);
}

/* Warm-up: the last 2 of every 7 skipped accesses go to the warm sink, and the interval
 * they lead into is announced before them. */
static void test_interval_warmup(void **state) {
  (void)state;
  collect_sink inner = {{&collect_ops}, 0, 0, 0, 0}, warm = {{&collect_ops}, 0, 0, 0, 0};
  ms_sink *sample;
  assert_int_equal(ms_sample_sink_new(&inner.base, 3, 7, count_interval, &inner, &sample), MS_OK);
  assert_int_equal(ms_sample_sink_set_warmup(sample, &warm.base, 8), MS_ERR_ARG);
  assert_int_equal(ms_sample_sink_set_warmup(sample, &warm.base, 2), MS_OK);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 64), MS_OK);
  ms_stream_info info = {0};
  batch.count = 45; /* 4 periods and a half */
  uint64_t warm_sum = 0, warm_count = 0;
  for (size_t i = 0; i < batch.count; i++) {
    batch.accesses[i] = (ms_access){.address = i, .size = 1};
    if (i % 10 >= 8) {
      warm_sum += i;
      warm_count++;
    }
  }
  assert_int_equal(sample->ops->consume(sample, &info, &batch), MS_OK);
  assert_int_equal(warm.count, warm_count);
  assert_int_equal(warm.sum, warm_sum);
  assert_int_equal(inner.count, 15);
  assert_int_equal(inner.intervals_seen, 5); /* 0 at access 0, 1..4 at accesses 8, 18, ... */
  ms_sink_destroy(sample);
  ms_batch_free(&batch);
}

/* Tracking (the skipped accesses of sampling), 8-word lines as in section 2.2.3: A0 added,
 * A7 and B0 tracked, then A6, B1 and A6 added.
 * A6: A is still the most recent line of the LRU order (tracking does not touch it): bin 0.
 *     Root: half 1 as A7 went: yes at level 2. Words 4-7 (visited by A7): half 1 again:
 *     yes at level 1. Words 6-7: word 6 is half 0, A7 went 1: no at level 0.
 * B1: B was first seen in a gap: no stack position (R > 2^16, bin 16), but its tree holds
 *     B0: root yes, words 0-3 yes, words 0-1 no (1 against 0).
 * A6 again: position 2 (B), bin 1; the same word as A's last reference: three yeses.
 * Without the tracking, A6 would see the root last go to half 0 (A0) and nothing below. */
static void test_track_gap(void **state) {
  (void)state;
  const uint32_t width = 32;
  ms_signature_config config;
  ms_signature_config_default(&config);
  config.width = width;
  ms_signature_model *model;
  assert_int_equal(ms_signature_model_new(&config, &model), MS_OK);
  ms_access first = word_access(0, 0, width);
  ms_access gap[] = {word_access(0, 7, width), word_access(1, 0, width)};
  ms_access after[] = {word_access(0, 6, width), word_access(1, 1, width),
                       word_access(0, 6, width)};
  assert_int_equal(ms_signature_model_add(model, &first, 1), MS_OK);
  assert_int_equal(ms_signature_model_track(model, gap, 2), MS_OK);
  assert_int_equal(ms_signature_model_add(model, after, 3), MS_OK);
  ms_signature *signature;
  assert_int_equal(ms_signature_model_result(model, NULL, 0, &signature), MS_OK);
  const ms_signature_bin *bin = &signature->bins[0];
  assert_true(bin->references == 4);
  assert_alpha(bin, 2, 0, 1, 1);
  assert_alpha(bin, 1, 0, 1, 1);
  assert_alpha(bin, 0, 0, 0, 1);
  assert_alpha(bin, 2, 16, 1, 1);
  assert_alpha(bin, 1, 16, 1, 1);
  assert_alpha(bin, 0, 16, 0, 1);
  assert_alpha(bin, 2, 1, 1, 1);
  assert_alpha(bin, 1, 1, 1, 1);
  assert_alpha(bin, 0, 1, 1, 1);
  assert_true(total_trials(bin, 3) == 9);
  double hits[MS_SIGNATURE_DEPTHS] = {1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
    assert_true(bin->hits[k] == hits[k]);
  ms_signature_free(signature);
  ms_signature_model_free(model);
}

/* The gap sink behind a sampling sink (3 of every 10 added, then 5 tracked, 2 warmed)
 * gives the same counts as those calls made by hand, and not those of dropping the gaps. */
static void test_gap_sink(void **state) {
  (void)state;
  enum { N = 95 };
  ms_access trace[N];
  for (int i = 0; i < N; i++)
    trace[i] = word_access((uint64_t)(i * 7 % 5), (uint32_t)(i * 13 % 128), 512);
  ms_signature_config config;
  ms_signature_config_default(&config);
  ms_signature_model *piped, *by_hand, *dropped;
  assert_int_equal(ms_signature_model_new(&config, &piped), MS_OK);
  assert_int_equal(ms_signature_model_new(&config, &by_hand), MS_OK);
  assert_int_equal(ms_signature_model_new(&config, &dropped), MS_OK);
  ms_sink *inner, *gap, *sample;
  assert_int_equal(ms_signature_sink_new(piped, &inner), MS_OK);
  assert_int_equal(ms_signature_gap_sink_new(piped, 7, 2, &gap), MS_OK);
  assert_int_equal(ms_sample_sink_new(inner, 3, 7, NULL, NULL, &sample), MS_OK);
  assert_int_equal(ms_sample_sink_set_warmup(sample, gap, 7), MS_OK);
  ms_stream_info info = {0};
  for (int start = 0; start < N; start += 19) { /* batches across the periods */
    ms_batch batch = {trace + start, (size_t)(N - start < 19 ? N - start : 19), 19};
    assert_int_equal(sample->ops->consume(sample, &info, &batch), MS_OK);
  }
  for (int start = 0; start < N; start += 10) {
    int left = N - start;
    assert_int_equal(ms_signature_model_add(by_hand, trace + start, left < 3 ? (size_t)left : 3),
                     MS_OK);
    assert_int_equal(ms_signature_model_add(dropped, trace + start, left < 3 ? (size_t)left : 3),
                     MS_OK);
    if (left > 3)
      assert_int_equal(
          ms_signature_model_track(by_hand, trace + start + 3, left < 8 ? (size_t)left - 3 : 5),
          MS_OK);
    if (left > 8)
      assert_int_equal(
          ms_signature_model_warm(by_hand, trace + start + 8, left < 10 ? (size_t)left - 8 : 2),
          MS_OK);
  }
  ms_signature *a, *b, *c;
  assert_int_equal(ms_signature_model_result(piped, NULL, 0, &a), MS_OK);
  assert_int_equal(ms_signature_model_result(by_hand, NULL, 0, &b), MS_OK);
  assert_int_equal(ms_signature_model_result(dropped, NULL, 0, &c), MS_OK);
  assert_true(a->bins[0].references == 30 && b->bins[0].references == 30);
  assert_memory_equal(a->bins[0].yes, b->bins[0].yes, sizeof a->bins[0].yes);
  assert_memory_equal(a->bins[0].trials, b->bins[0].trials, sizeof a->bins[0].trials);
  assert_memory_equal(a->bins[0].hits, b->bins[0].hits, sizeof a->bins[0].hits);
  assert_true(memcmp(a->bins[0].trials, c->bins[0].trials, sizeof a->bins[0].trials) != 0);
  ms_sink *bad;
  assert_int_equal(ms_signature_gap_sink_new(piped, 7, 8, &bad), MS_ERR_ARG);
  assert_null(bad);
  ms_signature_free(a);
  ms_signature_free(b);
  ms_signature_free(c);
  ms_sink_destroy(sample);
  ms_sink_destroy(gap);
  ms_sink_destroy(inner);
  ms_signature_model_free(piped);
  ms_signature_model_free(by_hand);
  ms_signature_model_free(dropped);
}

/* ---- format ---- */

static ms_signature *example_signature(int per_site) {
  ms_signature_config config;
  ms_signature_config_default(&config);
  config.per_site = per_site;
  config.site_cap = per_site ? 50 : 0;
  ms_signature_model *model;
  assert_int_equal(ms_signature_model_new(&config, &model), MS_OK);
  ms_access trace[400];
  for (int i = 0; i < 400; i++) {
    trace[i] = word_access((uint64_t)(i * 7 % 23), (uint32_t)(i * 13 % 128), 512);
    trace[i].site = (uint32_t)(i % 3);
    if (i % 5 == 0) trace[i].site = MS_SITE_NONE;
  }
  assert_int_equal(ms_signature_model_add(model, trace, 400), MS_OK);
  ms_stream_info info = {0};
  info.program = "/bin/example";
  info.sites = ms_site_table_new();
  assert_true(ms_site_table_add(info.sites, 0x401000, "/bin/example", "main", "a.c", 12) == 0);
  assert_true(ms_site_table_add(info.sites, 0x401010, "/bin/example", NULL, NULL, 0) == 1);
  assert_true(ms_site_table_add(info.sites, 0x401020, "/bin/example", "f", NULL, 0) == 2);
  ms_signature *signature;
  assert_int_equal(ms_signature_model_result(model, &info, 400, &signature), MS_OK);
  ms_site_table_free(info.sites);
  ms_signature_model_free(model);
  return signature;
}

static char *to_text(const ms_signature *signature, size_t *length) {
  test_memstream m;
  assert_int_equal(ms_signature_write_text(test_memstream_open(&m), signature), MS_OK);
  char *text = test_memstream_text(&m);
  *length = m.length;
  return text;
}

static void test_text_round_trip(void **state) {
  (void)state;
  for (int per_site = 0; per_site < 2; per_site++) {
    ms_signature *signature = example_signature(per_site);
    size_t length;
    char *text = to_text(signature, &length);
    ms_signature *parsed;
    int rc = ms_signature_parse(text, length, "example.sig", &parsed);
    if (rc < 0) fprintf(stderr, "%s\n", ms_error_message());
    assert_int_equal(rc, MS_OK);
    size_t again_length;
    char *again = to_text(parsed, &again_length);
    assert_int_equal(length, again_length);
    assert_memory_equal(text, again, length);
    assert_int_equal(parsed->bin_count, signature->bin_count);
    assert_memory_equal(parsed->bins[0].hits, signature->bins[0].hits,
                        sizeof signature->bins[0].hits);
    free(again);
    free(text);
    ms_signature_free(parsed);
    ms_signature_free(signature);
  }
}

/* Per-site binning: the state is shared, the counts are split; without a cap reached the
 * whole-program bin is the sum of the sites. With cap 50, sites 0..2 and "none" each
 * modeled at most 50 accesses, and the whole program weights each by executions/modeled. */
static void test_per_site_bins(void **state) {
  (void)state;
  ms_signature *signature = example_signature(1);
  assert_int_equal(signature->bin_count, 5);
  assert_int_equal(signature->bins[1].site, 0);
  assert_int_equal(signature->bins[4].site, MS_SITE_NONE);
  assert_string_equal(signature->bins[1].location, "main (a.c:12)");
  double executions = 0, weighted_references = 0;
  for (int i = 1; i < signature->bin_count; i++) {
    const ms_signature_bin *bin = &signature->bins[i];
    assert_true(bin->modeled == 50);
    executions += bin->executions;
    weighted_references += bin->references * bin->executions / bin->modeled;
  }
  assert_true(executions == 400);
  assert_true(fabs(signature->bins[0].references - weighted_references) < 1e-9);
  assert_int_equal(signature->accesses_modeled, 200);
  ms_signature_free(signature);
}

static double json_number(json_object *object, const char *key) {
  json_object *value;
  assert_true(json_object_object_get_ex(object, key, &value));
  return json_object_get_double(value);
}

static void test_json_same_numbers(void **state) {
  (void)state;
  ms_signature *signature = example_signature(1);
  char *text = NULL;
  size_t length;
  FILE *out = open_memstream(&text, &length);
  assert_int_equal(ms_signature_write_json(out, signature), MS_OK);
  fclose(out);
  json_object *root = json_tokener_parse(text);
  assert_non_null(root);
  json_object *bins;
  assert_true(json_object_object_get_ex(root, "bins", &bins));
  assert_int_equal(json_object_array_length(bins), signature->bin_count);
  for (int i = 0; i < signature->bin_count; i++) {
    const ms_signature_bin *bin = &signature->bins[i];
    json_object *jbin = json_object_array_get_idx(bins, (size_t)i), *cdf, *alpha;
    assert_true(json_number(jbin, "references") == bin->references);
    assert_true(json_object_object_get_ex(jbin, "reuse_cdf", &cdf));
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      json_object *point = json_object_array_get_idx(cdf, (size_t)k);
      assert_true(json_number(point, "depth") == (double)(1u << k));
      assert_true(json_number(point, "hits") == bin->hits[k]);
      assert_true(fabs(json_number(point, "hit_rate") - ms_signature_hit_rate(bin, k)) < 1e-12);
    }
    assert_true(json_object_object_get_ex(jbin, "alpha", &alpha));
    assert_int_equal(json_object_array_length(alpha), signature->levels);
    for (int level = 0; level < signature->levels; level++) {
      json_object *entry = json_object_array_get_idx(alpha, (size_t)level), *by_reuse;
      assert_true(json_number(entry, "subset") == 4 << level);
      assert_true(json_object_object_get_ex(entry, "by_reuse", &by_reuse));
      for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
        json_object *reuse = json_object_array_get_idx(by_reuse, (size_t)k);
        assert_true(json_number(reuse, "yes") == bin->yes[level][k]);
        assert_true(json_number(reuse, "trials") == bin->trials[level][k]);
      }
    }
  }
  json_object_put(root);
  free(text);
  ms_signature_free(signature);
}

static void expect_rejected(const char *text, const char *line_message) {
  ms_signature *parsed = (ms_signature *)1;
  assert_int_equal(ms_signature_parse(text, strlen(text), "bad.sig", &parsed), MS_ERR_FORMAT);
  assert_null(parsed);
  const char *message = ms_error_message();
  if (!strstr(message, line_message)) fprintf(stderr, "message: %s\n", message);
  assert_non_null(strstr(message, line_message));
}

static void test_malformed_rejected(void **state) {
  (void)state;
  ms_signature *signature = example_signature(0);
  size_t length;
  char *text = to_text(signature, &length);
  char *bad;
  /* a bad number in a count (line 18: HitRate(2^0)) */
  bad = test_edited(text, "HitRate(2^0) = ", "(", "(x");
  expect_rejected(bad, "bad.sig:18: bad number");
  free(bad);
  /* a rate that disagrees with its counts */
  bad = test_edited(text, "HitRate(2^16) = ", "0.", "0.1");
  expect_rejected(bad, "bad.sig:34: rate disagrees");
  free(bad);
  /* a missing section */
  bad = test_edited(text, NULL, "SPATIAL LOCALITY (Probability of Set Reuse):\n", "");
  expect_rejected(bad, "bad.sig:35: expected 'SPATIAL LOCALITY");
  free(bad);
  /* a wrong bin count: one reuse bin missing in P(2^2) */
  bad = test_edited(text, "P(2^2):", "  Reuse(2^16)", "  Avg-gone");
  expect_rejected(bad, "bad.sig:53: expected 'Reuse(2^16) = '");
  free(bad);
  /* Avg not the sum of its bins */
  bad = test_edited(text, "P(2^4):", "  Avg = ", "  Avg = 0.5 (1/2) ");
  expect_rejected(bad, "bad.sig:");
  free(bad);
  /* truncated */
  text[length / 2] = '\0';
  expect_rejected(text, "bad.sig:");
  expect_rejected("not a signature\n", "bad.sig:1: not a memsnap signature");
  free(text);
  ms_signature_free(signature);
  /* a bin count the input cannot hold is refused before any allocation */
  signature = example_signature(1);
  text = to_text(signature, &length);
  bad = test_edited(text, NULL, "Bins : 5", "Bins : 99999999");
  expect_rejected(bad, "bad.sig:10: 99999999 bins announced");
  free(bad);
  bad = test_edited(text, NULL, "Bins : 5", "Bins : 6");
  expect_rejected(bad, "'Bin: none' must be the last bin");
  free(bad);
  free(text);
  ms_signature_free(signature);
}

/* ---- derived surface ---- */

/* Every reference is word 0 of its line: all alphas are 1 and every width has the same
 * hit rates as the maximal one; the derivation must give exactly that. */
/* A mixed trace of `count` accesses (see the opening comment), deterministic. */
static ms_access *mixed_trace(size_t count) {
  ms_access *accesses = calloc(count, sizeof *accesses);
  assert_non_null(accesses);
  uint64_t rng = 0x9e3779b97f4a7c15ull, column = 0, row = 0, stream = 0;
  for (size_t i = 0; i < count; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = rng >> 33;
    ms_access *a = &accesses[i];
    a->size = 8;
    a->site = (uint32_t)(r % 5);
    switch ((i / 4096) % 4) {
    case 0: /* three streams of doubles */
      a->address = 0x1000000 + (i % 3) * 0x4000000 + (stream++ / 3) * 8;
      break;
    case 1: /* a column walk of 300 rows of 2400 bytes, and a row */
      if (i & 1) {
        a->address = 0x40000000 + (row++ % 300) * 2400 + (column / 300 % 300) * 8;
        column++;
      } else {
        a->address = 0x50000000 + (i / 2 % 300) * 8;
      }
      break;
    case 2: /* random lines among 2^17, some spanning, some of size 0 */
      a->address = 0x60000000 + (r % (1u << 17)) * 512 + (r >> 17) % 512;
      a->size = (uint8_t)((r >> 26) % 17);
      break;
    default: /* repeats of a few words of a few lines */
      a->address = 0x70000000 + (r % 12) * 512 + (r >> 8) % 3 * 4;
      a->size = 4;
      break;
    }
  }
  return accesses;
}

static ms_signature *model_in_batches(const ms_access *accesses, size_t count, uint32_t width,
                                      int per_site, int portable) {
  ms_signature_config config;
  ms_signature_config_default(&config);
  config.width = width;
  config.per_site = per_site;
  ms_signature_model *model;
  assert_int_equal(ms_signature_model_new(&config, &model), MS_OK);
  sig_model_set_portable(model, portable);
  size_t batch = 1;
  for (size_t done = 0; done < count; done += batch, batch = batch * 3 % 5000 + 1)
    assert_int_equal(
        ms_signature_model_add(model, accesses + done, count - done < batch ? count - done : batch),
        MS_OK);
  ms_signature *signature;
  assert_int_equal(ms_signature_model_result(model, NULL, 0, &signature), MS_OK);
  ms_signature_model_free(model);
  return signature;
}

static void assert_same_whole_program(const ms_signature *a, const ms_signature *b) {
  const ms_signature_bin *x = &a->bins[0], *y = &b->bins[0];
  assert_int_equal(a->levels, b->levels);
  assert_true(x->references == y->references);
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    assert_true(x->hits[k] == y->hits[k]);
    for (int level = 0; level < a->levels; level++) {
      assert_true(x->yes[level][k] == y->yes[level][k]);
      assert_true(x->trials[level][k] == y->trials[level][k]);
    }
  }
}

static void test_loops_agree(void **state) {
  (void)state;
  size_t count = 1000000; /* > 2^18 lines leave the window: the times are renumbered */
  ms_access *accesses = mixed_trace(count);
  for (uint32_t width = 256; width <= 512; width *= 2) { /* 6 and 7 levels */
    ms_signature *fast = model_in_batches(accesses, count, width, 0, 0);
    ms_signature *portable = model_in_batches(accesses, count, width, 0, 1);
    ms_signature *general = model_in_batches(accesses, count, width, 1, 0);
    assert_true(fast->bins[0].references > (double)count); /* some accesses span lines */
    assert_true(fast->bins[0].hits[MS_SIGNATURE_DEPTHS - 1] < fast->bins[0].references);
    assert_true(fast->bins[0].trials[0][9] > 0); /* the column walk: bin 9 (257..512) */
    assert_true(fast->bins[0].hits[3] < fast->bins[0].hits[12]); /* beyond the window */
    assert_same_whole_program(fast, portable);
    assert_same_whole_program(fast, general);
    ms_signature_free(fast);
    ms_signature_free(portable);
    ms_signature_free(general);
  }
  free(accesses);
  print_message("loops compared: PEXT variant %s\n", sig_model_fast_cpu() ? "used" : "unavailable");
}

static void test_derived_surface_one_word_per_line(void **state) {
  (void)state;
  enum { COUNT = 20000 };
  ms_access *trace = malloc(COUNT * sizeof *trace);
  uint64_t x = 1;
  for (int i = 0; i < COUNT; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    trace[i] = word_access((x >> 33) % (1 + (uint64_t)i % 3000), 0, 512);
  }
  ms_signature *signature = run_model(trace, COUNT, 512);
  ms_signature_surface surface;
  assert_int_equal(ms_signature_derive_surface(signature, 0, &surface), MS_OK);
  assert_int_equal(surface.width_count, 8);
  assert_int_equal(surface.widths[0], 4);
  assert_int_equal(surface.widths[7], 512);
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    double cdf = ms_signature_hit_rate(&signature->bins[0], k);
    assert_true(surface.hit_rate[7][k] == cdf);
    for (int w = 0; w < 7; w++)
      assert_true(fabs(surface.hit_rate[w][k] - cdf) < 2e-3);
  }
  ms_signature_surface again;
  assert_int_equal(ms_signature_derive_surface(signature, 0, &again), MS_OK);
  assert_memory_equal(&surface, &again, sizeof surface);
  ms_signature_free(signature);
  free(trace);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dissertation_example),
      cmocka_unit_test(test_repeats_and_halves),
      cmocka_unit_test(test_spanning_access),
      cmocka_unit_test(test_cycles_beyond_the_time_tree),
      cmocka_unit_test(test_interval_sampling),
      cmocka_unit_test(test_track_gap),
      cmocka_unit_test(test_gap_sink),
      cmocka_unit_test(test_interval_warmup),
      cmocka_unit_test(test_text_round_trip),
      cmocka_unit_test(test_per_site_bins),
      cmocka_unit_test(test_json_same_numbers),
      cmocka_unit_test(test_malformed_rejected),
      cmocka_unit_test(test_derived_surface_one_word_per_line),
      cmocka_unit_test(test_loops_agree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Profiles built from a synthetic stream (two threads, a loop nest, a site issuing two
 * sizes, a random site): replay gives back each thread's accesses exactly where the
 * stream is regular; text -> parse -> text is identical; seeking gives the same accesses
 * as replaying from the start; an edited count or stride changes the replay; malformed
 * profiles are rejected with file, line and column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"

#define MAX_ACCESSES 200000

typedef struct stream {
  ms_access *accesses;
  size_t count;
} stream;

static void emit(stream *s, uint32_t site, uint16_t thread, uint64_t address, uint8_t size,
                 uint8_t kind) {
  s->accesses[s->count++] =
      (ms_access){.address = address, .site = site, .thread = thread, .size = size, .kind = kind};
}

/* Thread 0: for i < 40, j < 25: A[i][j] load 8, B[j][i] store 4, random R load 8 every
 * j, site 3 as load 4 and load 8 alternately; thread 1: a stream of 2000 loads,
 * interleaved with thread 0 in chunks of 100. */
static stream make_stream(void) {
  stream s = {calloc(MAX_ACCESSES, sizeof(ms_access)), 0};
  stream t0 = {calloc(MAX_ACCESSES, sizeof(ms_access)), 0};
  unsigned x = 7;
  for (int i = 0; i < 40; i++)
    for (int j = 0; j < 25; j++) {
      emit(&t0, 0, 0, 0x10000 + (uint64_t)(i * 64 + j) * 8, 8, MS_LOAD);
      emit(&t0, 1, 0, 0x80000 + (uint64_t)(j * 100 + i) * 4, 4, MS_STORE);
      x = x * 1103515245u + 12345u;
      emit(&t0, 2, 0, 0x200000 + (uint64_t)((x >> 8) % 5000) * 8, 8, MS_LOAD);
      emit(&t0, 3, 0, 0x300000 + (uint64_t)j * 16, (j & 1) ? 8 : 4, MS_LOAD);
    }
  size_t k0 = 0, k1 = 0;
  while (k0 < t0.count || k1 < 2000) {
    for (int n = 0; n < 100 && k0 < t0.count; n++)
      s.accesses[s.count++] = t0.accesses[k0++];
    for (int n = 0; n < 100 && k1 < 2000; n++, k1++)
      emit(&s, 4, 1, 0x900000 + k1 * 24, 8, MS_MODIFY);
  }
  free(t0.accesses);
  return s;
}

static ms_site_table *make_sites(void) {
  ms_site_table *t = ms_site_table_new();
  const char *functions[] = {"kernel", "kernel", "gather", "mixed", "worker"};
  for (int i = 0; i < 5; i++)
    assert_true(ms_site_table_add(t, 0x400000 + (uint64_t)i * 4, "/bin/app", functions[i], "app.c",
                                  (uint32_t)(10 + i)) >= 0);
  return t;
}

static uint32_t order_cap = 8192;

static ms_psnap_profile build(const stream *s, int lossless) {
  ms_psnap_options options;
  ms_psnap_options_default(&options);
  options.lossless = lossless;
  options.order_cap = order_cap;
  ms_sink *sink;
  assert_int_equal(ms_psnap_builder_new(&options, &sink), 0);
  ms_stream_info info = {
      .program = "app", .argc = 0, .capture = "test", .sites = make_sites(), .exit_status = 0};
  ms_batch batch = {.accesses = s->accesses, .count = s->count, .capacity = s->count};
  assert_int_equal(sink->ops->consume(sink, &info, &batch), 0);
  assert_int_equal(sink->ops->end(sink, &info), 0);
  ms_psnap_profile p;
  assert_int_equal(ms_psnap_builder_take(sink, &p), 0);
  ms_sink_destroy(sink);
  ms_site_table_free(info.sites);
  return p;
}

static char *to_text(const ms_psnap_profile *p) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  assert_int_equal(ms_psnap_profile_write(p, f), 0);
  fclose(f);
  return text;
}

static ms_psnap_profile parse(const char *text) {
  ms_psnap_profile p;
  int rc = ms_psnap_profile_parse(text, strlen(text), "t.psnap", &p);
  if (rc != 0) fail_msg("%s", ms_error_message());
  return p;
}

/* All accesses of a replay of `text` with options. */
static stream replay(const char *text, const ms_psnap_replay_options *options) {
  ms_psnap_profile p = parse(text);
  ms_source *source;
  assert_int_equal(ms_psnap_replay_open(&p, options, &source), 0);
  stream out = {calloc(MAX_ACCESSES, sizeof(ms_access)), 0};
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 333), 0);
  int n;
  while ((n = ms_source_next(source, &batch)) > 0) {
    assert_true(out.count + (size_t)n <= MAX_ACCESSES);
    memcpy(out.accesses + out.count, batch.accesses, (size_t)n * sizeof(ms_access));
    out.count += (size_t)n;
  }
  assert_int_equal(n, 0);
  ms_batch_free(&batch);
  ms_source_destroy(source);
  return out;
}

/* The accesses of one thread of s, in order. */
static stream thread_of(const stream *s, uint16_t thread) {
  stream out = {calloc(MAX_ACCESSES, sizeof(ms_access)), 0};
  for (size_t i = 0; i < s->count; i++)
    if (s->accesses[i].thread == thread) out.accesses[out.count++] = s->accesses[i];
  return out;
}

static void round_trip_and_exact_replay(void **state) {
  (void)state;
  stream s = make_stream();
  for (int lossless = 0; lossless < 2; lossless++) {
    ms_psnap_profile built = build(&s, lossless);
    /* sites: 0, 1, 2 (lossy unless lossless), 3 as two sites (sizes 4 and 8), 4 */
    assert_int_equal(built.site_count, 6);
    assert_int_equal(built.thread_count, 2);
    int lossy = 0;
    for (uint32_t i = 0; i < built.site_count; i++)
      lossy += built.sites[i].lossy;
    assert_int_equal(lossy, 1);
    char *text = to_text(&built);
    ms_psnap_profile parsed = parse(text);
    char *again = to_text(&parsed);
    assert_string_equal(text, again);
    stream r = replay(text, NULL);
    assert_int_equal(r.count, s.count);
    /* threads one after the other, each in its own order */
    stream t0 = thread_of(&s, 0), t1 = thread_of(&s, 1);
    for (size_t i = 0; i < r.count; i++) {
      const ms_access *want = i < t0.count ? &t0.accesses[i] : &t1.accesses[i - t0.count];
      const ms_access *got = &r.accesses[i];
      assert_int_equal(got->thread, want->thread);
      assert_int_equal(got->size, want->size);
      assert_int_equal(got->kind, want->kind);
      const ms_site *site = ms_site_table_get(parsed.info.sites, got->site);
      assert_non_null(site);
      if (strcmp(site->function, "gather") || lossless)
        assert_int_equal(got->address, want->address);
      else
        assert_true(got->address >= 0x200000 && got->address < 0x200000 + 5000 * 8);
    }
    free(t0.accesses), free(t1.accesses), free(r.accesses);
    free(text), free(again);
    ms_psnap_profile_free(&built);
    ms_psnap_profile_free(&parsed);
  }
  free(s.accesses);
}

/* Past the order cap, the order is kept as path counts: the replay has every site's
 * accesses, each site's own addresses exact, and the text round trip holds. */
static void lossy_order_keeps_counts(void **state) {
  (void)state;
  stream s = make_stream();
  order_cap = 4;
  ms_psnap_profile built = build(&s, 0);
  order_cap = 8192;
  assert_int_equal(built.threads[0].lossy, 1);
  char *text = to_text(&built);
  assert_non_null(strstr(text, "  order lossy\n  start s0\n  path s"));
  ms_psnap_profile parsed = parse(text);
  char *again = to_text(&parsed);
  assert_string_equal(text, again);
  stream r = replay(text, NULL);
  assert_int_equal(r.count, s.count);
  uint64_t counts[6] = {0};
  uint64_t next[6] = {0}; /* per site, the expected next address for the exact sites */
  for (uint32_t i = 0; i < parsed.site_count; i++)
    next[i] = parsed.sites[i].first_address;
  for (size_t i = 0; i < r.count; i++) {
    uint32_t site = r.accesses[i].site;
    assert_true(site < 6);
    counts[site]++;
    if (site == 0) { /* A[i][j]: rows of 25 doubles, 64 apart */
      assert_int_equal(r.accesses[i].address, next[0]);
      next[0] += counts[0] % 25 ? 8 : 8 * (64 - 24);
    }
  }
  for (uint32_t i = 0; i < parsed.site_count; i++)
    assert_int_equal(counts[i], parsed.sites[i].count);
  free(r.accesses), free(text), free(again), free(s.accesses);
  ms_psnap_profile_free(&built);
  ms_psnap_profile_free(&parsed);
}

static void seeking_matches_replay_from_start(void **state) {
  (void)state;
  stream s = make_stream();
  ms_psnap_profile built = build(&s, 0);
  char *text = to_text(&built);
  ms_psnap_profile_free(&built);
  ms_psnap_profile parsed = parse(text);
  uint8_t mask[6] = {0};
  assert_int_equal(ms_psnap_select(&parsed, "kernel", NULL, mask), 2);
  assert_int_equal(ms_psnap_select(&parsed, NULL, "app.c:14", mask), 1); /* worker */
  ms_psnap_profile_free(&parsed);
  for (int masked = 0; masked < 2; masked++) {
    ms_psnap_replay_options all = {.site_mask = masked ? mask : NULL};
    stream whole = replay(text, &all);
    if (masked) assert_int_equal(whole.count, 1000 + 1000 + 2000);
    const uint64_t starts[] = {0, 1, 99, 1000, 1999, 2500, 3001, 4000, 5999, 6000, 7999};
    for (size_t k = 0; k < sizeof starts / sizeof *starts; k++) {
      ms_psnap_replay_options o = {.site_mask = all.site_mask, .from = starts[k], .count = 777};
      stream part = replay(text, &o);
      size_t expected = starts[k] >= whole.count ? 0 : whole.count - starts[k];
      if (expected > 777) expected = 777;
      assert_int_equal(part.count, expected);
      for (size_t i = 0; i < part.count; i++) {
        assert_int_equal(part.accesses[i].address, whole.accesses[starts[k] + i].address);
        assert_int_equal(part.accesses[i].site, whole.accesses[starts[k] + i].site);
      }
      free(part.accesses);
    }
    free(whole.accesses);
  }
  free(text);
  free(s.accesses);
}

static char *replace(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (!at) fail_msg("'%s' not in the profile", from);
  char *out = malloc(strlen(text) + strlen(to) + 1);
  sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  return out;
}

/* A one-thread stream: 3 sites, (s0 s1 s2)^1000 with strides +8, +8, +16. */
static char *small_profile(void) {
  stream s = {calloc(3000, sizeof(ms_access)), 0};
  for (int i = 0; i < 1000; i++) {
    emit(&s, 0, 0, 0x1000 + (uint64_t)i * 8, 8, MS_LOAD);
    emit(&s, 1, 0, 0x9000 + (uint64_t)i * 8, 8, MS_LOAD);
    emit(&s, 2, 0, 0x20000 + (uint64_t)i * 16, 8, MS_STORE);
  }
  ms_psnap_profile p = build(&s, 0);
  char *text = to_text(&p);
  ms_psnap_profile_free(&p);
  free(s.accesses);
  return text;
}

static void edited_profiles_replay_the_edit(void **state) {
  (void)state;
  char *text = small_profile();
  assert_non_null(strstr(text, "  order (s0 s1 s2)^1000\n"));
  assert_non_null(strstr(text, "  pattern +16^999\n"));
  /* a stride: the store now walks backwards by 32 */
  char *edited = replace(text, "  pattern +16^999\n", "  pattern -32^999\n");
  stream r = replay(edited, NULL);
  assert_int_equal(r.count, 3000);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(r.accesses[3 * i + 2].address, 0x20000 - (uint64_t)i * 32);
  free(r.accesses), free(edited);
  /* a repeat count: 400 iterations instead of 1000 (counts edited to match) */
  char *a = replace(text, "  order (s0 s1 s2)^1000\n", "  order (s0 s1 s2)^400\n");
  char *b = replace(a, "accesses 3000\n", "accesses 1200\n");
  char *c = replace(b, "accesses 3000\n", "accesses 1200\n");
  char *d = replace(c, "count 1000\n", "count 400\n");
  char *e = replace(d, "count 1000\n", "count 400\n");
  char *f = replace(e, "count 1000\n", "count 400\n");
  r = replay(f, NULL);
  assert_int_equal(r.count, 1200);
  for (int i = 0; i < 400; i++)
    assert_int_equal(r.accesses[3 * i + 1].address, 0x9000 + (uint64_t)i * 8);
  free(r.accesses);
  /* more iterations than recorded: patterns are read cyclically */
  char *g = replace(text, "(s0 s1 s2)^1000\n", "(s0 s1 s2)^1000 s0^5\n");
  char *h = replace(g, "accesses 3000\n", "accesses 3005\n");
  char *i2 = replace(h, "accesses 3000\n", "accesses 3005\n");
  char *j = replace(i2, "count 1000\n", "count 1005\n");
  r = replay(j, NULL);
  assert_int_equal(r.count, 3005);
  assert_int_equal(r.accesses[3004].address, 0x1000 + 1004 * 8);
  free(r.accesses);
  free(a), free(b), free(c), free(d), free(e), free(f), free(g), free(h), free(i2), free(j);
  free(text);
}

static void expect_rejected(const char *text, const char *where) {
  ms_psnap_profile p;
  assert_int_equal(ms_psnap_profile_parse(text, strlen(text), "t.psnap", &p), MS_ERR_FORMAT);
  if (!strstr(ms_error_message(), where)) fail_msg("'%s' lacks '%s'", ms_error_message(), where);
}

static void malformed_profiles_are_rejected(void **state) {
  (void)state;
  char *text = small_profile();
  /* find the line of the order to predict the line numbers */
  int order_line = 1;
  for (const char *p = text; p < strstr(text, "  order "); p++)
    order_line += *p == '\n';
  char where[64];
  char *bad = replace(text, "  order (s0 s1 s2)^1000\n", "  order (s0 s1 s2^1000\n");
  snprintf(where, sizeof where, "t.psnap:%d:9: unbalanced '('", order_line);
  expect_rejected(bad, where);
  free(bad);
  bad = replace(text, "  order (s0 s1 s2)^1000\n", "  order (s0 s1 s9)^1000\n");
  snprintf(where, sizeof where, "t.psnap:%d: site s9 is not in the profile", order_line);
  expect_rejected(bad, where);
  free(bad);
  bad = replace(text, "  order (s0 s1 s2)^1000\n", "  order (s0 s1 s2)^100000000000000000000\n");
  snprintf(where, sizeof where, "t.psnap:%d:20: number overflows", order_line);
  expect_rejected(bad, where);
  free(bad);
  bad = replace(text, "  order (s0 s1 s2)^1000\n", "  order ((s0 s1 s2)^4294967296)^4294967296\n");
  expect_rejected(bad, "2^64");
  free(bad);
  bad = replace(text, "  order (s0 s1 s2)^1000\n", "  order (s0 s1 s2)^999\n");
  expect_rejected(bad, "uses site s0 999 times, its count is 1000");
  free(bad);
  bad = replace(text, "  pattern +16^999\n", "  pattern +16^999)\n");
  expect_rejected(bad, "unbalanced ')'");
  free(bad);
  bad = replace(text, "selection executable app\n", "selection everything\n");
  expect_rejected(bad, "selection is all, executable PATH, or function F / line FILE:LINE");
  free(bad);
  bad = replace(text, "selection executable app\n", "selection function f bogus x\n");
  expect_rejected(bad, "selection is all, executable PATH");
  free(bad);
  bad = replace(text, "excluded 0\n", "excluded many\n");
  expect_rejected(bad, "t.psnap:");
  free(bad);
  bad = replace(text, "  kind store\n", "  kind jump\n");
  expect_rejected(bad, "kind is load, store or modify");
  free(bad);
  bad = replace(text, "psnap 1\n", "psnap 2\n");
  expect_rejected(bad, "t.psnap:1:1: not a memsnap profile");
  free(bad);
  bad = replace(text, "sites 3\n", "sites 4\n");
  expect_rejected(bad, "expected 'site 3'");
  free(bad);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip_and_exact_replay),
      cmocka_unit_test(lossy_order_keeps_counts),
      cmocka_unit_test(seeking_matches_replay_from_start),
      cmocka_unit_test(edited_profiles_replay_the_edit),
      cmocka_unit_test(malformed_profiles_are_rejected),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

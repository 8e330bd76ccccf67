/* Expressions: text round trip, errors with their column, and cursors that seek
 * arithmetically, checked against a plain expansion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memsnap/error.h"
#include "memsnap/expr.h"
#include "expand_steps.h"
#include "memsnap/psnap.h"

static void round_trip(const char *text, ms_expr_kind kind) {
  ms_expr e;
  assert_int_equal(ms_expr_parse(&e, text, strlen(text), kind, "t", 1, 1), 0);
  char *back = ms_expr_string(&e, kind);
  assert_string_equal(back, text);
  free(back);
  ms_expr_free(&e);
}

static void text_round_trip(void **state) {
  (void)state;
  round_trip("((+16^15 +48)^127 +16^15 -36816)^16384 (+16^15 +48)^127 +16^15 -18384",
             MS_EXPR_STRIDES);
  round_trip("", MS_EXPR_STRIDES);
  round_trip("+0", MS_EXPR_STRIDES);
  round_trip("-9223372036854775808 +9223372036854775807", MS_EXPR_STRIDES);
  round_trip("s0 (s1 s2^3 (s4 s5)^2)^100000 s6", MS_EXPR_SITES);
  round_trip("(s1)", MS_EXPR_SITES);
  /* ranges of sites: three or more consecutive sites once each */
  round_trip("s0..s22 (s23 s24)^1000 s25..s27 s22 s28 s29", MS_EXPR_SITES);
  round_trip("s3 s4 (s5..s9 s9..s11)^2 s10^2 s11 s12", MS_EXPR_SITES);
}

/* A range is its sites one by one: the same expansion, printed back as a range. */
static void ranges_expand(void **state) {
  (void)state;
  ms_expr a, b;
  const char *range = "s4 (s0..s3)^2 s5..s6";
  const char *plain = "s4 (s0 s1 s2 s3)^2 s5 s6";
  assert_int_equal(ms_expr_parse(&a, range, strlen(range), MS_EXPR_SITES, "t", 1, 1), 0);
  assert_int_equal(ms_expr_parse(&b, plain, strlen(plain), MS_EXPR_SITES, "t", 1, 1), 0);
  assert_int_equal(a.total, 11);
  ms_expr_cursor ca, cb;
  assert_int_equal(ms_expr_cursor_init(&ca, &a, 0), 0);
  assert_int_equal(ms_expr_cursor_init(&cb, &b, 0), 0);
  const int64_t want[] = {4, 0, 1, 2, 3, 0, 1, 2, 3, 5, 6};
  for (int i = 0; i < 11; i++) {
    int64_t x, y;
    assert_int_equal(ms_expr_cursor_run(&ca, 1, &x), 1);
    assert_int_equal(ms_expr_cursor_run(&cb, 1, &y), 1);
    assert_int_equal(x, want[i]);
    assert_int_equal(y, want[i]);
  }
  int64_t x;
  assert_int_equal(ms_expr_cursor_run(&ca, 1, &x), 0);
  char *back = ms_expr_string(&b, MS_EXPR_SITES);
  assert_string_equal(back, "s4 (s0..s3)^2 s5 s6");
  free(back);
  ms_expr_cursor_free(&ca), ms_expr_cursor_free(&cb);
  ms_expr_free(&a), ms_expr_free(&b);
}

static void expect_error(const char *text, ms_expr_kind kind, const char *where) {
  ms_expr e;
  assert_int_equal(ms_expr_parse(&e, text, strlen(text), kind, "p.psnap", 7, 10), MS_ERR_FORMAT);
  if (!strstr(ms_error_message(), where)) fail_msg("'%s' lacks '%s'", ms_error_message(), where);
}

static void malformed(void **state) {
  (void)state;
  expect_error("(+8 +16", MS_EXPR_STRIDES, "p.psnap:7:10: unbalanced '('");
  expect_error("+8 +16)", MS_EXPR_STRIDES, "p.psnap:7:16: unbalanced ')'");
  expect_error("+8^0", MS_EXPR_STRIDES, "p.psnap:7:14");
  expect_error("+8^99999999999999999999", MS_EXPR_STRIDES, "overflows");
  expect_error("(+8^4294967296)^4294967296", MS_EXPR_STRIDES, "2^64");
  expect_error("s1 x2", MS_EXPR_SITES, "p.psnap:7:13");
  expect_error("()", MS_EXPR_SITES, "empty group");
  expect_error("+8(+4)", MS_EXPR_STRIDES, "blank");
  expect_error("s0 s5..s2", MS_EXPR_SITES, "p.psnap:7:17: a range sV..sW has V < W");
  expect_error("s0..s3^2", MS_EXPR_SITES, "p.psnap:7:16: a range takes no repeat");
  expect_error("s0..", MS_EXPR_SITES, "p.psnap:7:14: expected the last site");
  expect_error("s0..s99999999", MS_EXPR_SITES, "at most 2^24 apart");
  expect_error("+8..+16", MS_EXPR_STRIDES, "p.psnap:7:12");
}

static int64_t *expand(const ms_expr *e, uint32_t node, int64_t *out) {
  const ms_expr_node *n = &e->nodes[node];
  for (uint64_t r = 0; r < n->repeat; r++) {
    if (n->count == 0) {
      *out++ = n->value;
      continue;
    }
    for (uint32_t c = 0; c < n->count; c++)
      out = expand(e, e->children[n->first + c], out);
  }
  return out;
}

static void cursor_seeks(void **state) {
  (void)state;
  const char *text = "s0 ((s1 s2^3)^4 s3 (s0^2 s2)^3)^5 s1^2";
  ms_expr e;
  assert_int_equal(ms_expr_parse(&e, text, strlen(text), MS_EXPR_SITES, "t", 1, 1), 0);
  assert_int_equal(ms_expr_index_values(&e, 4), 0);
  int64_t all[1000];
  size_t n = (size_t)(expand(&e, e.root, all) - all);
  assert_int_equal(n, e.total);
  ms_expr_cursor c;
  assert_int_equal(ms_expr_cursor_init(&c, &e, 0), 0);
  for (size_t start = 0; start <= n; start++) {
    uint64_t counts[4] = {0}, expected_counts[4] = {0};
    int64_t sum = ms_expr_cursor_seek(&c, start, counts), expected_sum = 0;
    for (size_t i = 0; i < start; i++)
      expected_sum += all[i], expected_counts[all[i]]++;
    assert_int_equal(sum, expected_sum);
    assert_memory_equal(counts, expected_counts, sizeof counts);
    for (size_t i = start; i < n;) {
      int64_t v;
      uint64_t run = ms_expr_cursor_run(&c, 2, &v);
      assert_true(run >= 1);
      for (uint64_t k = 0; k < run; k++)
        assert_int_equal(v, all[i++]);
    }
    int64_t v;
    assert_int_equal(ms_expr_cursor_run(&c, 1, &v), 0);
  }
  ms_expr_cursor_free(&c);
  /* cyclic: seeking past the end wraps */
  assert_int_equal(ms_expr_cursor_init(&c, &e, 1), 0);
  uint64_t counts[4] = {0};
  int64_t sum = ms_expr_cursor_seek(&c, 3 * n + 7, counts), expected = 0;
  for (size_t i = 0; i < 7; i++)
    expected += all[i];
  int64_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += all[i];
  assert_int_equal(sum, 3 * total + expected);
  int64_t v;
  assert_int_equal(ms_expr_cursor_run(&c, 1, &v), 1);
  assert_int_equal(v, all[7]);
  ms_expr_cursor_free(&c);
  ms_expr_free(&e);
}

/* Steps: the text round trips, and the expansion (read through a seeking cursor from
 * many starts, and by the bulk read) equals an independent expansion of the text. */
static void steps_expand_as_written(void **state) {
  (void)state;
  const char *texts[] = {
      "((+48^4 -192)^{5,-1} +48^4 -184)^5 +48^4",
      "((+48^4 -184)^{5,-1} +48^4 {-224,+8})^5 +48^4",
      "({+8,-40} +40^{1,+1})^5 ({-152,+40} +40^{4,-1})^4 +8",
      "+3 (+1^{2,+3} (+5 -7)^{4,-1} {-9223372036854775808,-1})^4 -2",
      /* steps inside a group inside a group: iteration r of the group that holds them */
      "((+8^{2,-1})^2)^3",
      "+160 ({+136,-8} ({+0,-8} +8^{1,+1})^{4,+1})^14 +7",
      "(({+1,+1} (+2^{1,+1} {-3,-1})^{2,+1})^{5,-1} +5 (+6 (+7^{2,-1})^2)^{2,+1})^4",
      /* steps with a group further up: LU's a[i][k] for i, j >= i, k < i (n = 24) */
      "+0^22 ({+192,-8} (+8^{1,+1@2} {-8,-8@2})^{21,-1} +8^{1,+1})^20 +32 +8^21",
      "((({+1,+2@3} +3^{3,-1@2})^{2,+1} +4)^3 -5)^2",
      "(+1 (({-2,+5@2}^{2,+1@2} +7)^{3,-1} (+9^{2,+3@2})^2)^3)^3",
  };
  for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
    round_trip(texts[t], MS_EXPR_STRIDES);
    ms_expr e;
    assert_int_equal(ms_expr_parse(&e, texts[t], strlen(texts[t]), MS_EXPR_STRIDES, "t", 1, 1), 0);
    int64_t *expected = NULL;
    size_t n = 0, capacity = 0;
    expand_steps(texts[t], &expected, &n, &capacity, 0); /* expand_steps.h */
    assert_int_equal(e.total, n);
    ms_expr_cursor c;
    assert_int_equal(ms_expr_cursor_init(&c, &e, 0), 0);
    int64_t *bulk = malloc((n + 1) * sizeof *bulk);
    assert_int_equal(ms_expr_cursor_read(&c, bulk, n + 1), n);
    assert_memory_equal(bulk, expected, n * sizeof *bulk);
    free(bulk);
    for (uint64_t start = 0; start < n; start += 1 + start / 3) {
      /* The sum wraps (mod 2^64): the texts hold strides near INT64_MIN. */
      uint64_t sum = (uint64_t)ms_expr_cursor_seek(&c, start, NULL), expected_sum = 0;
      for (uint64_t i = 0; i < start; i++)
        expected_sum += (uint64_t)expected[i];
      assert_int_equal(sum, expected_sum);
      for (uint64_t i = start; i < n; i++) {
        int64_t v;
        assert_int_equal(ms_expr_cursor_run(&c, 1, &v), 1);
        assert_int_equal(v, expected[i]);
      }
      int64_t v;
      assert_int_equal(ms_expr_cursor_run(&c, 1, &v), 0);
    }
    ms_expr_cursor_free(&c);
    ms_expr copy;
    assert_int_equal(ms_expr_copy(&copy, &e), 0);
    char *a = ms_expr_string(&e, MS_EXPR_STRIDES), *b = ms_expr_string(&copy, MS_EXPR_STRIDES);
    assert_string_equal(a, b);
    free(a), free(b);
    ms_expr_free(&copy);
    free(expected);
    ms_expr_free(&e);
  }
  round_trip("(s0 (s1 s2)^{9,-1} s3)^5 s0", MS_EXPR_SITES);
  expect_error("+8^{2,-1}", MS_EXPR_STRIDES, "p.psnap:7:10: a step belongs");
  expect_error("(+1 (+8^{3,-1})^4)^2", MS_EXPR_STRIDES, "a step takes a repeat count below 1");
  expect_error("(+8^{2,-1@2})^3", MS_EXPR_STRIDES, "p.psnap:7:11: a step's level is beyond");
  expect_error("((+8 +1)^{2,-1@2})^3", MS_EXPR_STRIDES, "p.psnap:7:18: a step's level is beyond");
  expect_error("((+8^{2,-1@64})^2)^3", MS_EXPR_STRIDES, "a step's level is 2 to 63");
  expect_error("((+8^{2,-1@1})^2)^3", MS_EXPR_STRIDES, "a step's level is 2 to 63");
  expect_error("(({+8,+1@2}^{2,-1})^2)^3", MS_EXPR_STRIDES, "one group");
  expect_error("(({+8,+1}^{2,-1@2})^2)^3", MS_EXPR_STRIDES, "one group");
  expect_error("((+8^{2,-1@})^2)^3", MS_EXPR_STRIDES, "expected a level");
  expect_error("((+1 +8^{1,-1@2})^2)^3", MS_EXPR_STRIDES, "a step takes a repeat count below 1");
  expect_error("(+8 (+4)^{2,-1})^3 ", MS_EXPR_STRIDES, "a step takes a repeat count below 1");
  expect_error("(+8^{2,+0})^3", MS_EXPR_STRIDES, "a step is not 0");
  expect_error("({+8,2})^3", MS_EXPR_STRIDES, "expected a signed step");
  expect_error("({+8,+2)^3", MS_EXPR_STRIDES, "expected '}'");
  expect_error("(+8^{2})^3", MS_EXPR_STRIDES, "expected ','");
  expect_error("(+8^{1,+1})^4194305", MS_EXPR_STRIDES, "unroll to more than");
}

/* A doubly triangular nest of 4000 outer iterations: unrolled, its inner group is held
 * once for its largest count (linear memory); a quadratic unrolling (8 M terms) would be
 * refused beyond MS_EXPR_UNROLL_MAX. In iteration r the outer body is {+8,-8} (8 - 8r) and
 * r + 1 inner iterations q of {+0,-8} +8^{1,+1} (-8q, then q + 1 copies of +8). */
static void doubly_triangular_stays_linear(void **state) {
  (void)state;
  const char *text = "({+8,-8} ({+0,-8} +8^{1,+1})^{1,+1})^4000";
  ms_expr e;
  assert_int_equal(ms_expr_parse(&e, text, strlen(text), MS_EXPR_STRIDES, "t", 1, 1), 0);
  uint64_t total = 0;
  for (uint64_t r = 0; r < 4000; r++)
    total += 1 + 2 * (r + 1) + r * (r + 1) / 2;
  assert_int_equal(e.total, total);
  assert_true(e.node_count < 40000);
  ms_expr_cursor c;
  assert_int_equal(ms_expr_cursor_init(&c, &e, 0), 0);
  /* each outer iteration sums to 16; the last inner iteration ends with 4000 copies of +8 */
  assert_int_equal(ms_expr_cursor_seek(&c, total, NULL), 16 * 4000);
  assert_int_equal(ms_expr_cursor_seek(&c, total - 4001, NULL), 16 * 4000 - 8 * 4000 + 8 * 3999);
  int64_t v;
  assert_int_equal(ms_expr_cursor_run(&c, 1, &v), 1);
  assert_int_equal(v, -8 * 3999);
  assert_int_equal(ms_expr_cursor_run(&c, 5000, &v), 4000);
  assert_int_equal(v, 8);
  ms_expr_cursor_free(&c);
  ms_expr_free(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(text_round_trip),         cmocka_unit_test(malformed),
      cmocka_unit_test(ranges_expand),           cmocka_unit_test(cursor_seeks),
      cmocka_unit_test(steps_expand_as_written), cmocka_unit_test(doubly_triangular_stays_linear),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

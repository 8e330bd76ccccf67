/* Stride-history decoding against the worked examples of
 * psnap-mills-snavely-carrington.txt (Tables I-III, expressions (1), (4), (8)) and
 * against histories recorded from generated loop nests whose strides are known. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memsnap/psnap.h"

static void decode(const int64_t *strides, const uint64_t *counts, uint32_t unique,
                   const uint64_t *rows, uint32_t row_count, ms_stride_decoding *out) {
  assert_int_equal(
      ms_stride_history_decode_rows(strides, counts, unique, rows, row_count, unique, out), 0);
}

static void assert_pattern(const ms_stride_decoding *decoding, const char *expected) {
  char *text = ms_expr_string(&decoding->pattern, MS_EXPR_STRIDES);
  assert_non_null(text);
  assert_string_equal(text, expected);
  free(text);
}

/* Table I: the first instruction of FT's dominant block; its snapshots give expression
 * (1) along the diagonal: ((A^15 B)^127 A^15 C)^16384 (A^15 B)^127 A^15 D. */
static void table_1_gives_expression_1(void **state) {
  (void)state;
  const int64_t strides[] = {16, 48, -36816, -18384};
  const uint64_t counts[] = {377487360, 24903680, 131071, 131072};
  const uint64_t rows[] = {15, 1, 0, 0, 1920, 127, 1, 0, 31458240, 2080831, 16384, 1};
  ms_stride_decoding d;
  decode(strides, counts, 4, rows, 3, &d);
  assert_int_equal(d.cls, MS_STRIDE_SIMPLE_ALTERNATING);
  assert_pattern(&d, "((+16^15 +48)^127 +16^15 -36816)^16384 (+16^15 +48)^127 +16^15 -18384");
  ms_stride_decoding_free(&d);
}

/* Table II: a simple repeat; the replay pattern row is (15, 255, 2047, 1), repeated 7
 * times: expression (4). */
static void table_2_gives_expression_4(void **state) {
  (void)state;
  const int64_t strides[] = {4096, -61424, 16, -134217712};
  const uint64_t counts[] = {62914560, 4177920, 16376, 7};
  const uint64_t rows[] = {15, 1, 0, 0, 3840, 255, 1, 0, 7864320, 522240, 2047, 1};
  ms_stride_decoding d;
  decode(strides, counts, 4, rows, 3, &d);
  assert_int_equal(d.cls, MS_STRIDE_SIMPLE_REPEAT);
  const uint64_t replay[] = {15, 255, 2047, 1};
  for (int j = 0; j < 4; j++)
    assert_int_equal(d.reduced[0][j], replay[j]);
  assert_int_equal(d.repeat, 7);
  assert_pattern(&d, "(((+4096^15 -61424)^255 +4096^15 +16)^2047 (+4096^15 -61424)^255 +4096^15 "
                     "-134217712)^7");
  ms_stride_decoding_free(&d);
}

/* Table III: a complex repeat of five dominant lines and a master line (the 11th stride,
 * the start of the second phase the paper left out, is given the value 1). */
static void table_3_gives_replay_rows_and_expression_8(void **state) {
  (void)state;
  const int64_t strides[] = {16, 336, -73392, 48, 1200, -72528, 4656, -69072, 18480, -55248, 1};
  const uint64_t counts[] = {377487360, 6225920, 32768, 16809984, 1507328, 32768,
                             327680,    32768,   32775, 32760,    1};
  const uint64_t rows[] = {
      15,       1,      0,    0,       0,      0,    0,     0,    0,    0,    0, /* 1 */
      1920,     127,    1,    0,       0,      0,    0,     0,    0,    0,    0, /* 2 */
      1935,     127,    1,    1,       0,      0,    0,     0,    0,    0,    0, /* 3 */
      1980,     127,    1,    3,       1,      0,    0,     0,    0,    0,    0, /* 4 */
      3840,     127,    1,    96,      31,     1,    0,     0,    0,    0,    0, /* 5 */
      4080,     127,    1,    111,     31,     1,    1,     0,    0,    0,    0, /* 6 */
      5760,     127,    1,    216,     31,     1,    7,     1,    0,    0,    0, /* 7 */
      6720,     127,    1,    279,     31,     1,    7,     1,    1,    0,    0, /* 8 */
      7680,     127,    1,    342,     31,     1,    7,     1,    1,    1,    0, /* 9 */
      31457280, 520192, 4096, 1400832, 126976, 4096, 28672, 4096, 4096, 4095, 1, /* 10 */
  };
  ms_stride_decoding d;
  decode(strides, counts, 11, rows, 10, &d);
  assert_int_equal(d.cls, MS_STRIDE_COMPLEX_REPEAT);
  assert_int_equal(d.pattern_count, 5);
  const uint64_t replay[6][11] = {
      {15, 127, 1, 0, 0, 0, 0, 0, 0, 0, 0}, {15, 0, 0, 3, 31, 1, 0, 0, 0, 0, 0},
      {15, 0, 0, 15, 0, 0, 7, 1, 0, 0, 0},  {15, 0, 0, 63, 0, 0, 0, 0, 1, 0, 0},
      {15, 0, 0, 63, 0, 0, 0, 0, 0, 1, 0},  {0, 0, 4095, 0, 0, 4095, 0, 4095, 4095, 4095, 1},
  };
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 11; j++)
      assert_int_equal(d.reduced[i][j], replay[i][j]);
  assert_int_equal(d.repeat, 4095);
  assert_pattern(&d, "((+16^15 +336)^127 +16^15 -73392 "
                     "((+16^15 +48)^3 +16^15 +1200)^31 (+16^15 +48)^3 +16^15 -72528 "
                     "((+16^15 +48)^15 +16^15 +4656)^7 (+16^15 +48)^15 +16^15 -69072 "
                     "(+16^15 +48)^63 +16^15 +18480 "
                     "(+16^15 +48)^63 +16^15 -55248)^4095");
  ms_stride_decoding_free(&d);
}

/* Simple alternating, hand-built: the last row fails equation 2 (37 % 12 != 0), the
 * diagonal (3, 4, 2) gives the first phase ((A^3 B)^4 A^3 C)^2 (A^3 B)^4 A^3 D. */
static void hand_built_simple_alternating(void **state) {
  (void)state;
  const int64_t strides[] = {8, 64, -1000, 4000};
  const uint64_t counts[] = {80, 20, 5, 3};
  const uint64_t rows[] = {3, 1, 0, 0, 15, 4, 1, 0, 37, 9, 2, 1};
  ms_stride_decoding d;
  decode(strides, counts, 4, rows, 3, &d);
  assert_int_equal(d.cls, MS_STRIDE_SIMPLE_ALTERNATING);
  assert_pattern(&d, "((+8^3 +64)^4 +8^3 -1000)^2 (+8^3 +64)^4 +8^3 +4000");
  ms_stride_decoding_free(&d);
}

/* Records a stride sequence, decodes it, and checks the class and that the pattern read
 * cyclically gives back every stride. */
static void check_sequence(const int64_t *sequence, size_t n, ms_stride_class expected) {
  ms_stride_history h;
  assert_int_equal(ms_stride_history_init(&h, 16), 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(ms_stride_history_add(&h, sequence[i]), 0);
  ms_stride_decoding d;
  assert_int_equal(ms_stride_history_decode(&h, &d), 0);
  char *text = ms_expr_string(&d.pattern, MS_EXPR_STRIDES);
  print_message("%s: %s\n", ms_stride_class_name(d.cls), text);
  free(text);
  assert_int_equal(d.cls, expected);
  if (expected != MS_STRIDE_UNDESIGNATED) {
    ms_expr_cursor c;
    assert_int_equal(ms_expr_cursor_init(&c, &d.pattern, 1), 0);
    for (size_t i = 0; i < n; i++) {
      int64_t v;
      assert_int_equal(ms_expr_cursor_run(&c, 1, &v), 1);
      assert_int_equal(v, sequence[i]);
    }
    ms_expr_cursor_free(&c);
  }
  ms_stride_decoding_free(&d);
  ms_stride_history_free(&h);
}

static void hand_built_histories(void **state) {
  (void)state;
  int64_t *s = malloc(200000 * sizeof *s);
  size_t n = 0;
  /* constant: a streaming walk */
  for (n = 0; n < 999; n++)
    s[n] = 8;
  check_sequence(s, n, MS_STRIDE_CONSTANT);
  /* simple repeat: B[k][j] of a 30x30 matrix multiply, k inner, j middle, i outer */
  n = 0;
  int64_t address = 0, previous = 0;
  for (int i = 0; i < 30; i++)
    for (int j = 0; j < 30; j++)
      for (int k = 0; k < 30; k++) {
        address = (k * 30 + j) * 8;
        if (i || j || k) s[n++] = address - previous;
        previous = address;
      }
  check_sequence(s, n, MS_STRIDE_SIMPLE_REPEAT);
  /* simple repeat, three levels: a 3-D sweep of 6x5x4 doubles, 3 times */
  n = 0;
  previous = 0;
  for (int t = 0; t < 3; t++)
    for (int z = 0; z < 6; z++)
      for (int y = 0; y < 5; y++)
        for (int x = 0; x < 4; x++) {
          address = ((z * 7 + y) * 9 + x) * 8;
          if (t || z || y || x) s[n++] = address - previous;
          previous = address;
        }
  check_sequence(s, n, MS_STRIDE_SIMPLE_REPEAT);
  /* complex repeat: two different sweeps alternating (a row pass then a column pass) */
  n = 0;
  previous = 0;
  int first = 1;
  for (int t = 0; t < 20; t++) {
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 8; j++) {
        address = (i * 10 + j) * 16;
        if (!first) s[n++] = address - previous;
        first = 0;
        previous = address;
      }
    for (int j = 0; j < 3; j++)
      for (int i = 0; i < 5; i++) {
        address = 100000 + (i * 64 + j) * 16;
        s[n++] = address - previous;
        previous = address;
      }
  }
  check_sequence(s, n, MS_STRIDE_COMPLEX_REPEAT);
  /* undesignated: pseudo-random strides overflow the history */
  unsigned x = 1;
  for (n = 0; n < 1000; n++) {
    x = x * 1103515245u + 12345u;
    s[n] = (int64_t)(x >> 16) * 8;
  }
  check_sequence(s, n, MS_STRIDE_UNDESIGNATED);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(table_1_gives_expression_1),
      cmocka_unit_test(table_2_gives_expression_4),
      cmocka_unit_test(table_3_gives_replay_rows_and_expression_8),
      cmocka_unit_test(hand_built_histories),
      cmocka_unit_test(hand_built_simple_alternating),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

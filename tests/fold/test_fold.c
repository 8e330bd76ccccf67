/* Fold: nested-repetition compression of integer sequences (lib/fold).
 *
 * Oracles: hand-worked expressions (the classic loop shapes, the examples of
 * scalamemtrace-budanur-mueller-gamblin-2010.txt section 2.1 and of
 * psnap-mills-snavely-carrington.txt), the input itself (the expansion read back through
 * the fold's expression (memsnap/expr.h) must equal what was pushed), generators whose loop
 * structure is known, and text round trips through the expression's parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/expr.h"
#include "memsnap/fold.h"

#include "expand_steps.h"

#include "../../lib/fold/fold_internal.h" /* the window index against the plain search */

/* ---- Helpers --------------------------------------------------------------------------- */

/* How a test writes values: letters for small ones (a = 0 ... z = 25, "v<n>" for others),
 * signed ("+16", "-8", "+0": the expression's own form) or plain decimal. */
typedef int (*value_formatter)(char *buffer, size_t size, int64_t value);

static int format_letter(char *buffer, size_t size, int64_t value) {
  if (value >= 0 && value < 26) return snprintf(buffer, size, "%c", (char)('a' + value));
  return snprintf(buffer, size, "v%lld", (long long)value);
}

static int format_signed(char *buffer, size_t size, int64_t value) {
  return snprintf(buffer, size, "%+lld", (long long)value);
}

static int format_decimal(char *buffer, size_t size, int64_t value) {
  return snprintf(buffer, size, "%lld", (long long)value);
}

static int parse_letter(const char *token, size_t length, int64_t *value, void *context) {
  (void)context;
  if (length == 1 && token[0] >= 'a' && token[0] <= 'z') {
    *value = token[0] - 'a';
    return 0;
  }
  if (length > 1 && token[0] == 'v') {
    char buffer[32], *end;
    if (length - 1 >= sizeof buffer) return 1;
    memcpy(buffer, token + 1, length - 1);
    buffer[length - 1] = '\0';
    *value = strtoll(buffer, &end, 10);
    return *end != '\0';
  }
  return 1;
}

static uint64_t rng_state = 0x243f6a8885a308d3ULL;
static uint64_t rng_next(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static unsigned rng_below(unsigned n) { return (unsigned)(rng_next() % n); }

/* A growable int64 array: the reference sequence. */
typedef struct seq {
  int64_t *v;
  size_t n, cap;
} seq;

static void seq_add(seq *s, int64_t value) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 256;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    assert_non_null(s->v);
  }
  s->v[s->n++] = value;
}

static ms_fold *fold_values(const int64_t *values, size_t n, uint32_t window, uint64_t max_nodes) {
  ms_fold_options options = {window, max_nodes};
  ms_fold *fold;
  assert_int_equal(ms_fold_new(&options, &fold), MS_OK);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(ms_fold_push(fold, values[i]), MS_OK);
  assert_int_equal(ms_fold_finish(fold), MS_OK);
  return fold;
}

/* The expression's text (its signed values) with every value rewritten by `formatter`; a
 * step after a comma (`{+0,+1}`, `^{1,+1}`) stays signed. */
static char *expr_text(const ms_expr *expr, value_formatter formatter) {
  char *text = ms_expr_string(expr, MS_EXPR_STRIDES);
  assert_non_null(text);
  size_t size = 4 * strlen(text) + 64, at = 0;
  char *out = malloc(size);
  assert_non_null(out);
  for (const char *p = text; *p;) {
    if ((*p == '+' || *p == '-') && !(at > 0 && out[at - 1] == ',')) {
      char *end;
      long long value = strtoll(p, &end, 10);
      at += (size_t)formatter(out + at, size - at, value);
      p = end;
    } else {
      out[at++] = *p++;
    }
  }
  out[at] = '\0';
  free(text);
  return out;
}

static char *text_of(ms_fold *fold, value_formatter formatter) {
  ms_expr expr;
  assert_int_equal(ms_fold_expr(fold, &expr), MS_OK);
  char *text = expr_text(&expr, formatter);
  ms_expr_free(&expr);
  return text;
}

/* An expression read through a cursor, as every reader of a fold reads it. */
typedef struct reader {
  ms_expr expr;
  ms_expr_cursor cursor;
  uint64_t position;
  int64_t value;
  uint64_t left; /* copies of value not yet read */
} reader;

static void reader_start(reader *r) {
  assert_int_equal(ms_expr_cursor_init(&r->cursor, &r->expr, 0), 0);
  r->position = 0;
  r->left = 0;
}

static void reader_of_fold(reader *r, ms_fold *fold) {
  assert_int_equal(ms_fold_expr(fold, &r->expr), MS_OK);
  reader_start(r);
}

/* A signed-value text parsed by the expression's parser. */
static void reader_of_text(reader *r, const char *text) {
  ms_expr_init(&r->expr);
  if (ms_expr_parse(&r->expr, text, strlen(text), MS_EXPR_STRIDES, "test", 1, 1) != 0)
    fail_msg("parsing '%s': %s", text, ms_error_message());
  reader_start(r);
}

static void reader_close(reader *r) {
  ms_expr_cursor_free(&r->cursor);
  ms_expr_free(&r->expr);
}

/* Moves before element `index` (<= the length); returns the wrapping sum of the elements
 * before it. */
static uint64_t reader_seek(reader *r, uint64_t index) {
  assert_true(index <= r->expr.total);
  uint64_t sum = (uint64_t)ms_expr_cursor_seek(&r->cursor, index, NULL);
  r->position = index;
  r->left = 0;
  return sum;
}

/* Alternately the bulk read and the run by run read, so that both are checked. */
static size_t reader_read(reader *r, int64_t *values, size_t capacity) {
  size_t got = 0;
  if (r->position % 2 == 0 && r->left == 0) {
    got = ms_expr_cursor_read(&r->cursor, values, capacity);
  } else {
    while (got < capacity) {
      if (r->left == 0 && (r->left = ms_expr_cursor_run(&r->cursor, UINT64_MAX, &r->value)) == 0)
        break;
      values[got++] = r->value;
      r->left--;
    }
  }
  r->position += got;
  return got;
}

static bool reader_next(reader *r, int64_t *value) { return reader_read(r, value, 1) == 1; }

/* Reads the whole expansion (in chunks of varying size) and compares it with `values`;
 * also the sums before elements, by seeking. */
static void assert_reader_expands_to(reader *r, const int64_t *values, size_t n) {
  assert_int_equal(r->expr.total, n);
  int64_t *out = malloc((n + 1) * sizeof *out);
  size_t done = 0, chunk = 1;
  while (done < n) {
    size_t want = chunk < n - done + 1 ? chunk : n - done + 1;
    size_t got = reader_read(r, out + done, want);
    assert_true(got > 0);
    done += got;
    assert_int_equal(r->position, done);
    chunk = chunk * 3 % 1000 + 1;
  }
  assert_int_equal(done, n);
  int64_t extra;
  assert_false(reader_next(r, &extra));
  for (size_t i = 0; i < n; i++)
    if (out[i] != values[i])
      fail_msg("element %zu: %lld, expected %lld", i, (long long)out[i], (long long)values[i]);
  uint64_t sum = 0;
  size_t step = 1 + n / 97;
  for (size_t j = 0; j < n; j++) {
    if (j % step == 0) assert_int_equal(reader_seek(r, j), sum);
    sum += (uint64_t)values[j];
  }
  assert_int_equal(reader_seek(r, n), sum);
  free(out);
}

/* The fold's expression expands to the values pushed. */
static void assert_expands_to(ms_fold *fold, const int64_t *values, size_t n) {
  assert_int_equal(ms_fold_length(fold), n);
  reader r;
  reader_of_fold(&r, fold);
  assert_reader_expands_to(&r, values, n);
  reader_close(&r);
}

/* A signed-value text, parsed, expands to `values` and prints back to itself. */
static void assert_text_expands_to(const char *text, const int64_t *values, size_t n) {
  reader r;
  reader_of_text(&r, text);
  assert_reader_expands_to(&r, values, n);
  char *again = expr_text(&r.expr, format_signed);
  assert_string_equal(again, text);
  free(again);
  reader_close(&r);
}

/* Text -> element sequence, by an independent recursive expansion of the grammar. */
static const char *expand_text(const char *p, seq *out) {
  while (*p) {
    while (*p == ' ')
      p++;
    if (!*p || *p == ')') return p;
    if (*p == '(') {
      seq body = {0};
      p = expand_text(p + 1, &body);
      assert_true(*p == ')' && p[1] == '^');
      char *end;
      unsigned long long count = strtoull(p + 2, &end, 10);
      p = end;
      for (unsigned long long r = 0; r < count; r++)
        for (size_t i = 0; i < body.n; i++)
          seq_add(out, body.v[i]);
      free(body.v);
      continue;
    }
    const char *start = p;
    while (*p && *p != ' ' && *p != '^' && *p != ')')
      p++;
    int64_t value = 0;
    assert_int_equal(parse_letter(start, (size_t)(p - start), &value, NULL), 0);
    unsigned long long count = 1;
    if (*p == '^') {
      char *end;
      count = strtoull(p + 1, &end, 10);
      p = end;
    }
    for (unsigned long long r = 0; r < count; r++)
      seq_add(out, value);
  }
  return p;
}

/* Folds the expansion of `text` (letters) and checks the folded text and expansion. */
static void assert_folds_to(const char *input, const char *expected, uint32_t window) {
  seq values = {0};
  expand_text(input, &values);
  ms_fold *fold = fold_values(values.v, values.n, window, 0);
  char *text = text_of(fold, format_letter);
  if (strcmp(text, expected) != 0)
    fail_msg("folding %s: got '%s', expected '%s'", input, text, expected);
  assert_expands_to(fold, values.v, values.n);
  free(text);
  ms_fold_free(fold);
  free(values.v);
}

/* ---- Hand-worked cases ------------------------------------------------------------------ */

static void test_classic_shapes(void **state) {
  (void)state;
  assert_folds_to("", "", 0);
  assert_folds_to("a", "a", 0);
  assert_folds_to("a b", "a b", 0);
  assert_folds_to("a^7", "a^7", 0);
  assert_folds_to("(a b)^9", "(a b)^9", 0);
  assert_folds_to("(a^3 b)^4", "(a^3 b)^4", 0);
  assert_folds_to("((a^3 b)^4 c)^5", "((a^3 b)^4 c)^5", 0);
  assert_folds_to("(((a^3 b)^4 c)^5 d^2)^3", "(((a^3 b)^4 c)^5 d^2)^3", 0);
  assert_folds_to("(a b c d e)^6 f", "(a b c d e)^6 f", 0);
  assert_folds_to("x (a b)^3 y (a b)^4", "x (a b)^3 y (a b)^4", 0);
  /* a run is merged with its final count: not (x a^3)^2 a */
  assert_folds_to("x a^3 x a^4", "x a^3 x a^4", 0);
  /* inside an open group the prediction follows the body: the fourth iteration is
   * complete when its a^3 is, and the extra a starts a new term */
  assert_folds_to("(x a^3)^2 x a^4", "(x a^3)^3 a", 0);
  /* a loop that exits in the middle of its body: the seen part stays structured */
  assert_folds_to("((a^3 b)^4 c)^5 (a^3 b)^2 a^2 d", "((a^3 b)^4 c)^5 (a^3 b)^2 a^2 d", 0);
  assert_folds_to("((a b)^3 c)^4 (a b)^3 d", "((a b)^3 c)^4 (a b)^3 d", 0);
}

/* Figure 4 and the text of section 2.1 of scalamemtrace-budanur-mueller-gamblin-2010.txt:
 *   for (i = 0; i < 100; i++) { for (j = 0; j < 1000; j++) b = a; d = c; }
 * RSD1 = <1000, ST_B, LD_A> (loads of a, stores of b), PRSD1 = <100, RSD1, ST_D, LD_C>.
 * With a = LD_A, b = ST_B, c = LD_C, d = ST_D: ((a b)^1000 c d)^100.
 * Figure 3: op1 op2 op3 repeating merge into one RSD whose count grows. */
static void test_paper_scalamemtrace(void **state) {
  (void)state;
  seq s = {0};
  for (int i = 0; i < 100; i++) {
    for (int j = 0; j < 1000; j++) {
      seq_add(&s, 0);
      seq_add(&s, 1);
    }
    seq_add(&s, 2);
    seq_add(&s, 3);
  }
  ms_fold *fold = fold_values(s.v, s.n, 0, 0);
  char *text = text_of(fold, format_letter);
  assert_string_equal(text, "((a b)^1000 c d)^100");
  assert_int_equal(ms_fold_node_count(fold), 6);
  assert_int_equal(ms_fold_depth(fold), 2);
  assert_expands_to(fold, s.v, s.n);
  free(text);
  ms_fold_free(fold);
  assert_folds_to("(a b c)^7", "(a b c)^7", 0);
  free(s.v);
}

/* Figure 3 of the same paper, step by step: op1 op2 op3 are appended as they come; when
 * the second op1 op2 op3 is complete and the next reference does not continue it (here:
 * the next op1, which starts the third iteration), the right copy is merged into the left
 * one as an RSD of count 2; further iterations only increment the count. Terms after each
 * push (the iteration in progress is not counted until it breaks): */
static void test_paper_figure3_steps(void **state) {
  (void)state;
  int64_t ops[] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 4};
  uint64_t terms[] = {1, 2, 3, 4, 5, 6, 4, 4, 4, 4, 4, 4, 5};
  ms_fold *fold;
  assert_int_equal(ms_fold_new(NULL, &fold), MS_OK);
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    assert_int_equal(ms_fold_push(fold, ops[i]), MS_OK);
    if (ms_fold_node_count(fold) != terms[i])
      fail_msg("after push %zu: %llu terms, expected %llu", i + 1,
               (unsigned long long)ms_fold_node_count(fold), (unsigned long long)terms[i]);
  }
  assert_int_equal(ms_fold_finish(fold), MS_OK);
  char *text = text_of(fold, format_letter);
  assert_string_equal(text, "(b c d)^4 e");
  free(text);
  ms_fold_free(fold);
}

/* psnap-mills-snavely-carrington.txt: a stride pattern of a 2-D traversal (16-byte steps,
 * a 48-byte row gap, a -36816 plane step) and expression (1) of the paper over symbolic
 * strides A, B, C, D. */
/* Stride number i of the pattern ((+16^15 +48)^127 +16^15 -36816)^n. */
static int64_t psnap_stride(uint64_t i) {
  uint64_t inner = i % 2048;
  if (inner == 2047) return -36816;
  return inner % 16 == 15 ? 48 : 16;
}

static void test_paper_psnap(void **state) {
  (void)state;
  /* the paper's count, pushed without keeping the input: text, length, spot checks */
  ms_fold *fold;
  assert_int_equal(ms_fold_new(NULL, &fold), MS_OK);
  uint64_t n = 16384ULL * 2048;
  for (uint64_t i = 0; i < n; i++)
    assert_int_equal(ms_fold_push(fold, psnap_stride(i)), MS_OK);
  assert_int_equal(ms_fold_finish(fold), MS_OK);
  char *text = text_of(fold, format_signed);
  assert_string_equal(text, "((+16^15 +48)^127 +16^15 -36816)^16384");
  assert_int_equal(ms_fold_length(fold), n);
  reader r;
  reader_of_fold(&r, fold);
  for (int probe = 0; probe < 2000; probe++) {
    uint64_t index = rng_next() % n;
    int64_t value[2];
    reader_seek(&r, index);
    assert_int_equal(reader_read(&r, value, 2), index + 1 < n ? 2 : 1);
    assert_int_equal(value[0], psnap_stride(index));
    if (index + 1 < n) assert_int_equal(value[1], psnap_stride(index + 1));
  }
  reader_close(&r);
  free(text);
  ms_fold_free(fold);
  /* element by element, with fewer outer iterations */
  seq s = {0};
  for (uint64_t i = 0; i < 40 * 2048; i++)
    seq_add(&s, psnap_stride(i));
  fold = fold_values(s.v, s.n, 0, 0);
  text = text_of(fold, format_signed);
  assert_string_equal(text, "((+16^15 +48)^127 +16^15 -36816)^40");
  assert_expands_to(fold, s.v, s.n);
  free(text);
  ms_fold_free(fold);
  free(s.v);
  /* expression (1) of the paper, with 40 outer iterations instead of 16384 */
  assert_folds_to("((a^15 b)^127 a^15 c)^40 (a^15 b)^127 a^15 d",
                  "((a^15 b)^127 a^15 c)^40 (a^15 b)^127 a^15 d", 0);
}

static void test_extreme_values(void **state) {
  (void)state;
  int64_t values[] = {INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX, 0,
                      INT64_MIN, INT64_MIN, INT64_MIN, -1,        -1,        INT64_MAX};
  size_t n = sizeof values / sizeof *values;
  ms_fold *fold = fold_values(values, n, 0, 0);
  char *text = text_of(fold, format_signed);
  assert_string_equal(text, "(-9223372036854775808 +9223372036854775807)^3 +0 "
                            "-9223372036854775808^3 -1^2 +9223372036854775807");
  assert_expands_to(fold, values, n);
  assert_text_expands_to(text, values, n);
  free(text);
  ms_fold_free(fold);
}

/* for (i = 1; i <= 6; i++) { for (j = 0; j < i; j++) a; b; }: the inner count differs in
 * every outer iteration, so no group can hold two outer iterations. The fold stays exact
 * and keeps each inner run as one term: b a b a^2 b ... (one term per run). */
static void test_triangular_loop(void **state) {
  (void)state;
  /* a count that grows by one per outer iteration: a body with a count step */
  assert_folds_to("a b a^2 b a^3 b a^4 b a^5 b a^6 b", "(a^{1,+1} b)^6", 0);
  /* three iterations are not enough evidence */
  assert_folds_to("a b a^2 b a^3 b", "a b a^2 b a^3 b", 0);
  /* the same triangle repeated: the triangle itself becomes the repeated body */
  assert_folds_to("(a b a^2 b a^3 b)^5", "(a b a^2 b a^3 b)^5", 0);
}

/* Strides (bytes) of the two loads of a covariance-like nest on data[n][m] of doubles:
 * for j1 < m, for j2 in j1..m-1, for i < n: data[i][j1] (which = 0), data[i][j2] (1). */
static void covariance_strides(seq *out, int64_t m, int64_t n, int which) {
  int64_t previous = 0;
  bool first = true;
  for (int64_t j1 = 0; j1 < m; j1++)
    for (int64_t j2 = j1; j2 < m; j2++)
      for (int64_t i = 0; i < n; i++) {
        int64_t address = 8 * (i * m + (which ? j2 : j1));
        if (!first) seq_add(out, address - previous);
        first = false;
        previous = address;
      }
}

/* Strides of the store of a wavefront sweep over a[n][n]: diagonals d = i + j. */
static void wavefront_strides(seq *out, int64_t n) {
  int64_t previous = 0;
  bool first = true;
  for (int64_t d = 0; d < 2 * n - 1; d++)
    for (int64_t i = d < n ? 0 : d - n + 1; i <= (d < n ? d : n - 1); i++) {
      int64_t address = 8 * (i * n + d - i);
      if (!first) seq_add(out, address - previous);
      first = false;
      previous = address;
    }
}

/* Strides of a trapezoid: for i < n, for j in i..min(i + w, n - 1): a[i][j]. */
static void trapezoid_strides(seq *out, int64_t n, int64_t w) {
  int64_t previous = 0;
  bool first = true;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i; j <= i + w && j < n; j++) {
      int64_t address = 8 * (i * n + j);
      if (!first) seq_add(out, address - previous);
      first = false;
      previous = address;
    }
}

/* Strides of a doubly triangular nest (Cholesky's update): for i < n, for j < i, for
 * k < j: a[i][k] (which = 0) or a[j][k] (1): the inner count steps with the middle loop,
 * whose count steps with the outer one. */
static void doubly_triangular_strides(seq *out, int64_t n, int which) {
  int64_t previous = 0;
  bool first = true;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < i; j++)
      for (int64_t k = 0; k < j; k++) {
        int64_t address = 8 * ((which ? j : i) * n + k);
        if (!first) seq_add(out, address - previous);
        first = false;
        previous = address;
      }
}

/* Strides of LU's trailing update (for i < n, for j in i..n-1, for k < i): a[i][k]
 * (which = 0), a[k][j] (1), a[i][j] (2): the k loop's count steps with i, two loops up. */
static void lu_update_strides(seq *out, int64_t n, int which) {
  int64_t previous = 0;
  bool first = true;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i; j < n; j++)
      for (int64_t k = 0; k < i; k++) {
        int64_t address = 8 * (which == 0 ? i * n + k : which == 1 ? k * n + j : i * n + j);
        if (!first) seq_add(out, address - previous);
        first = false;
        previous = address;
      }
}

/* Folds `values`, checks the expansion, and returns the term count. */
static uint64_t fold_exact_nodes(const seq *values, char **text) {
  ms_fold *fold = fold_values(values->v, values->n, 0, 0);
  assert_expands_to(fold, values->v, values->n);
  uint64_t nodes = ms_fold_node_count(fold);
  *text = text_of(fold, format_signed);
  assert_text_expands_to(*text, values->v, values->n);
  ms_fold_free(fold);
  return nodes;
}

/* Non-rectangular nests fold exactly, to a number of terms that does not depend on their
 * size (n, 4n, 16n: only the numbers in the text change). */
static void test_non_rectangular_nests(void **state) {
  (void)state;
  for (int kind = 0; kind < 9; kind++) {
    uint64_t nodes[3];
    for (int scale = 0; scale < 3; scale++) {
      int64_t n = (kind < 4 ? 6 : 12) << (2 * scale);
      seq values = {0};
      if (kind < 2) covariance_strides(&values, n, 5, kind);
      if (kind == 2) wavefront_strides(&values, n);
      if (kind == 3) trapezoid_strides(&values, n, 4);
      if (kind == 4 || kind == 5) doubly_triangular_strides(&values, n, kind - 4);
      if (kind >= 6) lu_update_strides(&values, n, kind - 6);
      char *text;
      nodes[scale] = fold_exact_nodes(&values, &text);
      if (scale == 0 || nodes[scale] != nodes[0])
        print_message("kind %d, n %lld: %llu terms: %s\n", kind, (long long)n,
                      (unsigned long long)nodes[scale], text);
      free(text);
      free(values.v);
    }
    assert_int_equal(nodes[1], nodes[0]);
    assert_int_equal(nodes[2], nodes[0]);
    assert_true(nodes[0] < 40);
  }
  /* covariance, second load: the reset stride between outer iterations changes by +8 */
  seq values = {0};
  covariance_strides(&values, 40, 3, 1);
  char *text;
  fold_exact_nodes(&values, &text);
  assert_non_null(strstr(text, "^{39,-1}"));
  assert_non_null(strstr(text, ",+8}"));
  free(text);
  free(values.v);
  /* Cholesky's a[i][k]: the row's inner loop, a body with steps, inside the outer one */
  values = (seq){0};
  doubly_triangular_strides(&values, 40, 0);
  fold_exact_nodes(&values, &text);
  assert_non_null(strstr(text, "({+0,-8} +8^{1,+1})^{"));
  free(text);
  free(values.v);
  /* LU's a[i][k]: within row i, j runs i..n-1 over the same k loop of i accesses */
  values = (seq){0};
  lu_update_strides(&values, 24, 0);
  fold_exact_nodes(&values, &text);
  assert_non_null(strstr(text, "(+8^{1,+1@2} {-8,-8@2})^{21,-1}"));
  free(text);
  free(values.v);
}

/* Expands signed-value text with steps, independently of the library (expand_steps.h). */
static void expand_affine(const char *text, seq *out, int64_t r) {
  expand_steps(text, &out->v, &out->n, &out->cap, r);
}

/* A random top-level sequence with groups whose bodies have steps, counts kept >= 1. */
static void gen_affine(char *out, size_t size) {
  int items = 1 + (int)rng_below(4);
  for (int t = 0; t < items; t++) {
    size_t at = strlen(out);
    if (rng_below(3) == 0) {
      snprintf(out + at, size - at, "%s%+d", t ? " " : "", (int)rng_below(9) - 4);
      continue;
    }
    int iterations = 1 + (int)rng_below(9);
    at += (size_t)snprintf(out + at, size - at, "%s(", t ? " " : "");
    int terms = 1 + (int)rng_below(3);
    for (int j = 0; j < terms; j++) {
      int count_step = (int)rng_below(5) - 2;
      int count = 1 + (int)rng_below(4) + (count_step < 0 ? -count_step * (iterations - 1) : 0);
      int value_step = rng_below(2) ? (int)rng_below(7) - 3 : 0;
      const char *space = j ? " " : "";
      if (rng_below(4) == 0)
        at += (size_t)snprintf(out + at, size - at, "%s(+1 -%u)", space, rng_below(3));
      else if (value_step)
        at += (size_t)snprintf(out + at, size - at, "%s{%+d,%+d}", space, (int)rng_below(9) - 4,
                               value_step);
      else
        at += (size_t)snprintf(out + at, size - at, "%s%+d", space, (int)rng_below(9) - 4);
      if (count_step)
        at += (size_t)snprintf(out + at, size - at, "^{%d,%+d}", count, count_step);
      else
        at += (size_t)snprintf(out + at, size - at, "^%d", count);
    }
    snprintf(out + at, size - at, ")^%d", iterations);
  }
}

/* A count C and step S (S may be 0) that stay >= 1 over `iterations`, printed `^{C,S}`
 * (with `at`, e.g. "@2", after the step). */
static int gen_count(char *out, size_t size, int iterations, const char *at) {
  int step = (int)rng_below(5) - 2;
  int count = 1 + (int)rng_below(3) + (step < 0 ? -step * (iterations - 1) : 0);
  if (step) return snprintf(out, size, "^{%d,%+d%s}", count, step, at);
  return snprintf(out, size, "^%d", count);
}

/* A group with steps inside a group with steps (a doubly triangular nest), between
 * plain values: `+a ({v,s} ({w,t}^C +u^C)^{C,S} +x^C)^N +b`; counts stay >= 1. In one
 * case out of two the inner items step with the outer group instead (`@2`: LU's trailing
 * update). */
static void gen_nested_affine(char *out, size_t size) {
  int outer = 1 + (int)rng_below(9), at = 0;
  char inner_count[64];
  gen_count(inner_count, sizeof inner_count, outer, "");
  int inner_step = 0, inner_first = 0;
  if (strchr(inner_count, '{')) sscanf(inner_count, "^{%d,%d}", &inner_first, &inner_step);
  else sscanf(inner_count, "^%d", &inner_first);
  int inner_most = inner_first + (inner_step > 0 ? inner_step * (outer - 1) : 0);
  int up = rng_below(2) == 0;
  const char *level = up ? "@2" : "";
  int span = up ? outer : inner_most;
  at += snprintf(out + at, size - at, "%+d ({%+d,%+d} ({%+d,%+d%s}", (int)rng_below(9) - 4,
                 (int)rng_below(9) - 4, (rng_below(2) ? 1 : -1) * (1 + (int)rng_below(3)),
                 (int)rng_below(9) - 4, 1 + (int)rng_below(3), level);
  if (up) { /* a value and its count step with one group */
    int step = (int)rng_below(3) - 1;
    if (step) at += snprintf(out + at, size - at, "^{%d,%+d@2}", 1 + (int)rng_below(3) +
                             (step < 0 ? outer - 1 : 0), step);
  } else
    at += gen_count(out + at, size - at, span, level);
  at += snprintf(out + at, size - at, " %+d", (int)rng_below(9) - 4);
  at += gen_count(out + at, size - at, span, level);
  at += snprintf(out + at, size - at, ")%s %+d", inner_count, (int)rng_below(9) - 4);
  at += gen_count(out + at, size - at, outer, "");
  snprintf(out + at, size - at, ")^%d %+d", outer, (int)rng_below(9) - 4);
}

/* Expressions with steps: parse, expansion against the independent one, round trip, and
 * the online fold of that expansion (exact, seekable). */
static void test_affine_expressions(void **state) {
  (void)state;
  char text[4096];
  uint64_t saved = 0;
  for (int trial = 0; trial < 600; trial++) {
    text[0] = '\0';
    if (trial == 300) { /* the later tests keep the random stream they were written with */
      saved = rng_state;
      rng_state = 0x9e3779b97f4a7c15ULL;
    }
    if (trial >= 300)
      gen_nested_affine(text, sizeof text);
    else
      gen_affine(text, sizeof text);
    seq values = {0};
    expand_affine(text, &values, 0);
    reader parsed;
    reader_of_text(&parsed, text);
    assert_reader_expands_to(&parsed, values.v, values.n);
    char *first = expr_text(&parsed.expr, format_signed);
    reader_close(&parsed);
    assert_text_expands_to(first, values.v, values.n);
    ms_fold *online = fold_values(values.v, values.n, trial % 3 ? 64 : 8, 0);
    assert_expands_to(online, values.v, values.n);
    reader r;
    reader_of_fold(&r, online);
    for (int probe = 0; probe < 20 && values.n; probe++) {
      uint64_t index = rng_next() % values.n;
      int64_t got[16];
      reader_seek(&r, index);
      size_t n = reader_read(&r, got, 16);
      for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], values.v[index + i]);
    }
    reader_close(&r);
    free(first);
    ms_fold_free(online);
    free(values.v);
  }
  rng_state = saved;
}

/* ---- Generated loop nests ------------------------------------------------------------- */

/* A random loop nest written as an expression: bodies of 2..4 terms, each a value (fresh
 * when `fresh`, else from a 3-letter alphabet) with count 1..4, or a loop with count
 * 2..`max_count` + `extra` around a nested body. The same seed with a different `extra`
 * gives the same structure with other loop counts. */
static void gen_body(char *out, size_t size, int depth, bool fresh, int *next_value,
                     unsigned max_count, unsigned extra, int top) {
  int terms = top ? 1 + (int)rng_below(4) : 2 + (int)rng_below(3);
  for (int t = 0; t < terms; t++) {
    if (t > 0) strncat(out, " ", size - strlen(out) - 1);
    char piece[64];
    if (depth > 0 && rng_below(2)) {
      unsigned count = 2 + rng_below(max_count - 1);
      strncat(out, "(", size - strlen(out) - 1);
      gen_body(out, size, depth - 1, fresh, next_value, max_count, extra, 0);
      snprintf(piece, sizeof piece, ")^%u", count + extra);
    } else {
      int value = fresh ? (*next_value)++ : (int)rng_below(3);
      unsigned count = 1 + rng_below(4);
      if (value < 26)
        snprintf(piece, sizeof piece, "%c", 'a' + value);
      else
        snprintf(piece, sizeof piece, "v%d", value);
      if (count > 1) snprintf(piece + strlen(piece), sizeof piece - strlen(piece), "^%u", count);
    }
    strncat(out, piece, size - strlen(out) - 1);
  }
}

/* With every value distinct, a loop nest folds back to exactly its own expression, and so
 * its size does not depend on its loop counts. */
static void test_generated_nests_fold_to_their_structure(void **state) {
  (void)state;
  static char text[1 << 16];
  for (int trial = 0; trial < 300; trial++) {
    uint64_t seed = rng_next();
    uint64_t sizes[2];
    for (int variant = 0; variant < 2; variant++) {
      rng_state = seed;
      int next_value = 0;
      text[0] = '\0';
      gen_body(text, sizeof text, 3, true, &next_value, 4, variant ? 9 : 0, 1);
      assert_folds_to(text, text, 0);
      seq values = {0};
      expand_text(text, &values);
      ms_fold *fold = fold_values(values.v, values.n, 0, 0);
      sizes[variant] = ms_fold_node_count(fold);
      ms_fold_free(fold);
      free(values.v);
    }
    assert_int_equal(sizes[0], sizes[1]);
    rng_state = seed + 1;
  }
}

/* With values from a 3-letter alphabet a nest may fold into another equivalent shape; it
 * must stay exact, and small whatever the loop counts. */
static void test_generated_nests_small_alphabet(void **state) {
  (void)state;
  static char text[1 << 16];
  for (int trial = 0; trial < 120; trial++) {
    uint64_t seed = rng_next();
    uint64_t nodes[2];
    for (int variant = 0; variant < 2; variant++) {
      rng_state = seed;
      int unused = 0;
      text[0] = '\0';
      gen_body(text, sizeof text, 3, false, &unused, 4, variant ? 18 : 6, 1);
      seq values = {0};
      expand_text(text, &values);
      ms_fold *fold = fold_values(values.v, values.n, 0, 0);
      assert_expands_to(fold, values.v, values.n);
      nodes[variant] = ms_fold_node_count(fold);
      ms_fold_free(fold);
      free(values.v);
    }
    /* 3x larger loop counts (beyond the first few) must not make the fold grow */
    if (nodes[1] > nodes[0]) {
      seq values = {0};
      expand_text(text, &values);
      ms_fold *fold = fold_values(values.v, values.n, 0, 0);
      char *folded = text_of(fold, format_letter);
      print_message("%s\n -> %s\n", text, folded);
      fail_msg("trial %d: %llu nodes with small counts, %llu with large", trial,
               (unsigned long long)nodes[0], (unsigned long long)nodes[1]);
    }
    rng_state = seed + 1;
  }
}

/* Irregular input of every kind, with tiny and normal windows: always exact. */
static void test_random_sequences_exact(void **state) {
  (void)state;
  uint32_t windows[] = {2, 3, 4, 5, 8, 64};
  for (int trial = 0; trial < 400; trial++) {
    size_t n = rng_below(600);
    unsigned alphabet = 1 + rng_below(5);
    int64_t *values = malloc((n + 1) * sizeof *values);
    for (size_t i = 0; i < n; i++) {
      /* runs and repeated chunks, to exercise merges that later break */
      if (i > 8 && rng_below(3) == 0) {
        size_t back = 1 + rng_below(8);
        values[i] = values[i - back];
      } else {
        values[i] = (int64_t)rng_below(alphabet) - 1;
      }
    }
    ms_fold *fold = fold_values(values, n, windows[trial % 6], 0);
    assert_expands_to(fold, values, n);
    ms_fold_free(fold);
    free(values);
  }
}

/* A window wider than the default is searched through an index of candidates (fold.c,
 * "Window index"): the same folds as trying every body length, on random input and on
 * loop nests of distinct values (where no value steps, which the index leaves out, can
 * arise), and always exact. */
static void test_indexed_window_is_the_plain_search(void **state) {
  (void)state;
  static char text[1 << 16];
  const uint32_t windows[] = {128, 1024};
  for (int trial = 0; trial < 300; trial++) {
    seq values = {0};
    if (trial % 2) {
      int next_value = 0;
      text[0] = '\0';
      gen_body(text, sizeof text, 3, true, &next_value, 6, trial % 4 == 1 ? 9 : 0, 1);
      expand_text(text, &values);
    } else {
      size_t n = rng_below(3000);
      unsigned alphabet = 1 + rng_below(40);
      for (size_t i = 0; i < n; i++)
        seq_add(&values, i > 8 && rng_below(3) == 0 ? values.v[i - 1 - rng_below(100) % i]
                                                    : (int64_t)rng_below(alphabet));
    }
    uint32_t window = windows[trial % 2];
    ms_fold *indexed = fold_values(values.v, values.n, window, 0);
    assert_true(indexed->indexed_search);
    assert_expands_to(indexed, values.v, values.n);
    ms_fold_options options = {window, 0};
    ms_fold *plain;
    assert_int_equal(ms_fold_new(&options, &plain), MS_OK);
    plain->indexed_search = false;
    for (size_t i = 0; i < values.n; i++)
      assert_int_equal(ms_fold_push(plain, values.v[i]), MS_OK);
    assert_int_equal(ms_fold_finish(plain), MS_OK);
    char *a = text_of(indexed, format_signed), *b = text_of(plain, format_signed);
    if (strcmp(a, b))
      fail_msg("trial %d, window %u:\n indexed %s\n plain   %s", trial, window, a, b);
    free(a), free(b);
    ms_fold_free(indexed), ms_fold_free(plain);
    free(values.v);
  }
}

/* Loop bodies of 50 to 500 terms (whole functions' sites in the order of a real code)
 * around a triangular inner loop fold to their loop structure in a window of 2048 (a body
 * with steps needs four iterations in the window), whatever the trip counts. */
static void test_wide_bodies_fold(void **state) {
  (void)state;
  const uint32_t lengths[] = {50, 90, 300, 500};
  for (int i = 0; i < 4; i++) {
    uint64_t nodes[2];
    for (int size = 0; size < 2; size++) {
      seq values = {0};
      for (int outer = 0; outer < (size ? 40 : 10); outer++) {
        for (uint32_t t = 0; t < lengths[i]; t++)
          seq_add(&values, 1000 + t);
        for (int inner = 0; inner < 5 + outer; inner++)
          seq_add(&values, 7), seq_add(&values, 8);
      }
      ms_fold *fold = fold_values(values.v, values.n, 2048, 0);
      assert_expands_to(fold, values.v, values.n);
      nodes[size] = ms_fold_node_count(fold);
      ms_fold_free(fold);
      free(values.v);
    }
    /* the body, its inner loop of two and the group: no growth with 4x the iterations */
    assert_int_equal(nodes[0], nodes[1]);
    assert_true(nodes[1] < lengths[i] + 10);
  }
}

/* Seeking lands on the same element as reading from the start, in O(depth) arithmetic;
 * includes many small bodies. */
static void test_seek(void **state) {
  (void)state;
  static char text[1 << 16];
  for (int trial = 0; trial < 60; trial++) {
    int next_value = 0;
    text[0] = '\0';
    gen_body(text, sizeof text, 3, trial % 2 == 0, &next_value, 12, 0, 1);
    seq values = {0};
    expand_text(text, &values);
    ms_fold *fold = fold_values(values.v, values.n, 0, 0);
    reader r;
    reader_of_fold(&r, fold);
    for (int probe = 0; probe < 200; probe++) {
      uint64_t index = values.n ? rng_next() % values.n : 0;
      reader_seek(&r, index);
      int64_t got[40];
      size_t n = reader_read(&r, got, 40);
      size_t expected = values.n - index < 40 ? values.n - index : 40;
      assert_int_equal(n, expected);
      for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], values.v[index + i]);
    }
    reader_seek(&r, values.n);
    int64_t last;
    assert_false(reader_next(&r, &last));
    reader_close(&r);
    ms_fold_free(fold);
    free(values.v);
  }
  /* 3000 distinct little loops (x y)^2 */
  seq s = {0};
  for (int i = 0; i < 3000; i++)
    for (int r = 0; r < 2; r++) {
      seq_add(&s, 1000 + 2 * i);
      seq_add(&s, 1001 + 2 * i);
    }
  ms_fold *fold = fold_values(s.v, s.n, 0, 0);
  assert_int_equal(ms_fold_node_count(fold), 3 * 3000);
  assert_expands_to(fold, s.v, s.n);
  reader r;
  reader_of_fold(&r, fold);
  for (int probe = 0; probe < 1000; probe++) {
    uint64_t index = rng_next() % s.n;
    int64_t value;
    reader_seek(&r, index);
    assert_true(reader_next(&r, &value));
    assert_int_equal(value, s.v[index]);
  }
  reader_close(&r);
  ms_fold_free(fold);
  free(s.v);
}

/* Seeking into a huge expression never expands it: 2^62 elements. */
static void test_seek_huge(void **state) {
  (void)state;
  const char *text = "((+1^1024 -1)^1048576 +2^4095 +7)^1023 +5^3";
  reader r;
  reader_of_text(&r, text);
  uint64_t inner = 1024 + 1;
  uint64_t outer = inner * 1048576 + 4095 + 1;
  assert_int_equal(r.expr.total, outer * 1023 + 3);
  int64_t v[3];
  reader_seek(&r, outer * 1022 + inner * 1048576 + 4094);
  assert_int_equal(reader_read(&r, v, 3), 3);
  assert_int_equal(v[0], 2);
  assert_int_equal(v[1], 7);
  assert_int_equal(v[2], 5);
  reader_seek(&r, outer * 500 + inner * 77 + 1024);
  assert_true(reader_next(&r, v));
  assert_int_equal(v[0], -1);
  /* one outer iteration sums to 1024*1048576 - 1048576 + 2*4095 + 7 */
  uint64_t per_outer = 1023ULL * 1048576 + 2 * 4095 + 7;
  assert_int_equal(reader_seek(&r, outer * 3 + 10), per_outer * 3 + 10);
  assert_int_equal(reader_seek(&r, r.expr.total), per_outer * 1023 + 15);
  reader_close(&r);
}

/* ---- Text -------------------------------------------------------------------------------- */

/* The fold's text, parsed by the expression's parser, prints back to itself and expands to
 * the values folded. */
static void test_round_trip(void **state) {
  (void)state;
  static char text[1 << 16];
  for (int trial = 0; trial < 200; trial++) {
    int next_value = 0;
    text[0] = '\0';
    gen_body(text, sizeof text, 4, trial % 3 != 0, &next_value, 5, 0, 1);
    seq values = {0};
    expand_text(text, &values);
    ms_fold *fold = fold_values(values.v, values.n, trial % 2 ? 6 : 0, 0);
    char *first = text_of(fold, format_signed);
    assert_text_expands_to(first, values.v, values.n);
    free(first);
    ms_fold_free(fold);
    free(values.v);
  }
}

/* ---- Options, cap, lifecycle --------------------------------------------------------------- */

static void test_window(void **state) {
  (void)state;
  /* window 8: bodies of up to 4 terms fold, 5 do not (but stay exact) */
  assert_folds_to("(a b c d)^5", "(a b c d)^5", 8);
  assert_folds_to("(a b c d e)^3", "a b c d e a b c d e a b c d e", 8);
  assert_folds_to("(a b c d e)^3", "(a b c d e)^3", 10);
  ms_fold_options options = {1, 0};
  ms_fold *fold = (ms_fold *)1;
  assert_int_equal(ms_fold_new(&options, &fold), MS_ERR_ARG);
  assert_null(fold);
  assert_non_null(strstr(ms_error_message(), "window"));
  options.window = MS_FOLD_MAX_WINDOW + 1;
  assert_int_equal(ms_fold_new(&options, &fold), MS_ERR_ARG);
  assert_int_equal(ms_fold_new(NULL, &fold), MS_OK);
  int64_t many[] = {7, 7, 7, 9, 7, 7, 7, 9};
  assert_int_equal(ms_fold_push_many(fold, many, 8), MS_OK);
  assert_int_equal(ms_fold_length(fold), 8);
  assert_int_equal(ms_fold_finish(fold), MS_OK);
  char *many_text = text_of(fold, format_decimal);
  assert_string_equal(many_text, "(7^3 9)^2");
  free(many_text);
  reader empty_read;
  reader_of_fold(&empty_read, fold);
  assert_int_equal(reader_read(&empty_read, many, 0), 0);
  assert_int_equal(empty_read.position, 0);
  reader_close(&empty_read);
  assert_int_equal(ms_fold_push_many(fold, many, 2), MS_ERR_ARG);
  ms_fold_free(fold);
  assert_int_equal(ms_fold_new(NULL, &fold), MS_OK);
  assert_int_equal(ms_fold_push(fold, 4), MS_OK);
  size_t length;
  assert_null(ms_fold_sequence(fold, 0, &length)); /* not finished yet */
  assert_int_equal(ms_fold_finish(fold), MS_OK);
  assert_int_equal(ms_fold_finish(fold), MS_OK);
  assert_int_equal(ms_fold_push(fold, 4), MS_ERR_ARG);
  assert_int_equal(ms_fold_length(fold), 1);
  ms_fold_free(fold);
}

/* The structure accessors describe the tree of the text (folded from its expansion). */
static void test_structure(void **state) {
  (void)state;
  const char *text = "((+16^15 +48)^127 +16^15 -36816)^16384 +8";
  seq values = {0};
  expand_affine(text, &values, 0);
  ms_fold *fold = fold_values(values.v, values.n, 0, 0);
  free(values.v);
  size_t n;
  const ms_fold_term *top = ms_fold_sequence(fold, 0, &n);
  assert_int_equal(n, 2);
  assert_int_equal(top[0].count, 16384);
  assert_int_not_equal(top[0].group, 0);
  assert_int_equal(top[1].group, 0);
  assert_int_equal(top[1].value, 8);
  const ms_fold_term *outer = ms_fold_sequence(fold, top[0].group, &n);
  assert_int_equal(n, 3);
  assert_int_equal(outer[0].count, 127);
  assert_int_equal(outer[1].value, 16);
  assert_int_equal(outer[1].count, 15);
  assert_int_equal(outer[2].value, -36816);
  assert_int_equal(ms_fold_sequence_length(fold, top[0].group), 127 * 16 + 16);
  assert_int_equal(ms_fold_sequence_length(fold, 0), (127 * 16 + 16) * 16384 + 1);
  assert_int_equal(ms_fold_node_count(fold), 7);
  assert_int_equal(ms_fold_depth(fold), 2);
  assert_null(ms_fold_sequence(fold, 99, &n));
  assert_int_equal(n, 0);
  ms_fold_free(fold);
}

static void test_cap(void **state) {
  (void)state;
  ms_fold_options options = {0, 100};
  ms_fold *fold;
  assert_int_equal(ms_fold_new(&options, &fold), MS_OK);
  seq stored = {0};
  int status = MS_OK;
  uint64_t value = 1;
  for (int i = 0; i < 1000 && status == MS_OK; i++) {
    value = value * 6364136223846793005ULL + 1442695040888963407ULL; /* never repeats here */
    status = ms_fold_push(fold, (int64_t)value);
    if (status == MS_OK) seq_add(&stored, (int64_t)value);
  }
  assert_int_equal(status, MS_FOLD_OVER_CAP);
  assert_true(ms_fold_over_cap(fold));
  assert_int_equal(stored.n, 101); /* the push that crossed the cap is kept */
  assert_int_equal(ms_fold_push(fold, 1), MS_FOLD_OVER_CAP);
  assert_int_equal(ms_fold_finish(fold), MS_OK);
  assert_int_equal(ms_fold_node_count(fold), 101);
  assert_expands_to(fold, stored.v, stored.n);
  ms_fold_free(fold);
  /* a regular sequence never reaches the cap, however long */
  assert_int_equal(ms_fold_new(&options, &fold), MS_OK);
  for (int k = 0; k < 2000; k++)
    for (int j = 0; j < 50; j++) {
      for (int i = 0; i < 7; i++)
        assert_int_equal(ms_fold_push(fold, 8), MS_OK);
      assert_int_equal(ms_fold_push(fold, 64), MS_OK);
    }
  assert_false(ms_fold_over_cap(fold));
  assert_int_equal(ms_fold_finish(fold), MS_OK);
  assert_int_equal(ms_fold_node_count(fold), 3);
  assert_int_equal(ms_fold_length(fold), 2000 * 50 * 8);
  ms_fold_free(fold);
  /* the cap crossed while a group is open: the partial iteration is kept exactly */
  options.max_nodes = 4;
  assert_int_equal(ms_fold_new(&options, &fold), MS_OK);
  int64_t pattern[] = {1, 2, 3, 1, 2, 3, 1, 2, 9, 10, 11, 12, 13};
  size_t kept = 0;
  for (size_t i = 0; i < sizeof pattern / sizeof *pattern; i++)
    if (ms_fold_push(fold, pattern[i]) == MS_OK) kept++;
  assert_true(ms_fold_over_cap(fold));
  assert_int_equal(ms_fold_finish(fold), MS_OK);
  assert_expands_to(fold, pattern, kept);
  free(stored.v);
  ms_fold_free(fold);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_classic_shapes),
      cmocka_unit_test(test_paper_scalamemtrace),
      cmocka_unit_test(test_paper_figure3_steps),
      cmocka_unit_test(test_paper_psnap),
      cmocka_unit_test(test_extreme_values),
      cmocka_unit_test(test_triangular_loop),
      cmocka_unit_test(test_non_rectangular_nests),
      cmocka_unit_test(test_affine_expressions),
      cmocka_unit_test(test_generated_nests_fold_to_their_structure),
      cmocka_unit_test(test_generated_nests_small_alphabet),
      cmocka_unit_test(test_random_sequences_exact),
      cmocka_unit_test(test_seek),
      cmocka_unit_test(test_seek_huge),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_window),
      cmocka_unit_test(test_indexed_window_is_the_plain_search),
      cmocka_unit_test(test_wide_bodies_fold),
      cmocka_unit_test(test_structure),
      cmocka_unit_test(test_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

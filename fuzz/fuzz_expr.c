/* libFuzzer target: nested-repetition expressions (memsnap/expr.h), their one syntax, parser,
 * printer and seeking cursor, and the fold that produces them (memsnap/fold.h).
 *
 * Input starting with '!': the rest are values to fold (one byte each, mapped to a small
 * alphabet so that repetitions are frequent; the second byte picks the window); the fold's
 * expression must expand to the input and round trip through its text. Any other input is
 * an expression's text, parsed as strides and as an order of sites: parse errors are fine,
 * but an accepted expression must print, parse back to the same text, and its cursor must
 * agree with seeks (positions and sums) on a bounded prefix. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/expr.h"
#include "memsnap/fold.h"

static void check_round_trip(const ms_expr *expr, ms_expr_kind kind) {
  char *text = ms_expr_string(expr, kind);
  if (!text) abort();
  ms_expr parsed;
  ms_expr_init(&parsed);
  if (ms_expr_parse(&parsed, text, strlen(text), kind, "fuzz", 1, 1) != 0) abort();
  char *again = ms_expr_string(&parsed, kind);
  if (!again || strcmp(text, again) != 0) abort();
  if (parsed.total != expr->total) abort();
  free(text);
  free(again);
  ms_expr_free(&parsed);
}

/* Reads up to `limit` elements, then checks seeks (the element there and the sum before it)
 * against them. Returns the elements (malloc'ed, *count of them). */
static int64_t *check_cursor(const ms_expr *expr, uint64_t limit, uint64_t *count) {
  uint64_t n = expr->total < limit ? expr->total : limit;
  int64_t *values = malloc((n + 1) * sizeof *values);
  ms_expr_cursor cursor;
  if (!values || ms_expr_cursor_init(&cursor, expr, 0) != 0) abort();
  uint64_t got = 0, run;
  int64_t value;
  while (got < n && (run = ms_expr_cursor_run(&cursor, n - got, &value)) > 0)
    for (; run > 0; run--)
      values[got++] = value;
  if (got != n) abort();
  /* the bulk read, in chunks of varying size, gives the same elements */
  ms_expr_cursor_rewind(&cursor);
  int64_t *bulk = malloc((n + 1) * sizeof *bulk);
  if (!bulk) abort();
  for (uint64_t at = 0, chunk = 1; at < n; chunk = chunk * 7 % 97 + 1) {
    size_t want = chunk < n - at ? (size_t)chunk : (size_t)(n - at);
    if (ms_expr_cursor_read(&cursor, bulk + at, want) != want) abort();
    at += want;
  }
  if (n && memcmp(bulk, values, n * sizeof *bulk) != 0) abort();
  free(bulk);
  for (uint64_t i = 0; i < n; i += 1 + n / 64) {
    uint64_t expected = 0;
    for (uint64_t j = 0; j < i; j++)
      expected += (uint64_t)values[j];
    if ((uint64_t)ms_expr_cursor_seek(&cursor, i, NULL) != expected) abort();
    if (ms_expr_cursor_run(&cursor, 1, &value) != 1 || value != values[i]) abort();
  }
  ms_expr_cursor_seek(&cursor, expr->total, NULL);
  if (ms_expr_cursor_run(&cursor, 1, &value) != 0) abort();
  ms_expr_cursor_free(&cursor);
  *count = n;
  return values;
}

static void fuzz_fold(const uint8_t *data, size_t size) {
  if (size < 2) return;
  ms_fold_options options = {2 + data[1] % 40, 0};
  ms_fold *fold;
  if (ms_fold_new(&options, &fold) != MS_OK) abort();
  size_t n = size - 2;
  int64_t *values = malloc((n + 1) * sizeof *values);
  if (!values) abort();
  for (size_t i = 0; i < n; i++) {
    uint8_t byte = data[2 + i];
    values[i] = byte < 250 ? (int64_t)(byte % 5) - 2 : (byte & 1 ? INT64_MIN : INT64_MAX);
    if (ms_fold_push(fold, values[i]) != MS_OK) abort();
  }
  ms_expr expr;
  if (ms_fold_expr(fold, &expr) != MS_OK || expr.total != n) abort();
  uint64_t count;
  int64_t *out = check_cursor(&expr, n, &count);
  if (count != n || (n && memcmp(out, values, n * sizeof *out) != 0)) abort();
  check_round_trip(&expr, MS_EXPR_STRIDES);
  free(out);
  free(values);
  ms_expr_free(&expr);
  ms_fold_free(fold);
}

static void fuzz_text(const uint8_t *data, size_t size, ms_expr_kind kind) {
  ms_expr expr;
  ms_expr_init(&expr);
  if (ms_expr_parse(&expr, (const char *)data, size, kind, "fuzz", 1, 1) == 0) {
    check_round_trip(&expr, kind);
    uint64_t count;
    free(check_cursor(&expr, 4096, &count));
  }
  ms_expr_free(&expr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 0 && data[0] == '!') {
    fuzz_fold(data, size);
    return 0;
  }
  fuzz_text(data, size, MS_EXPR_STRIDES);
  fuzz_text(data, size, MS_EXPR_SITES);
  return 0;
}

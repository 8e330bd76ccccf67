/* libFuzzer target: nested-repetition expressions (lib/fold).
 *
 * Input starting with '!': the rest are values to push (one byte each, mapped to a small
 * alphabet so that repetitions are frequent; the second byte picks the window); the
 * expansion read back with the cursor must equal the input, and the text must round trip.
 * Any other input is an expression parsed with the signed-value syntax: parse errors are
 * fine, but an accepted expression must format, parse back to the same text, and its
 * cursor must agree with seek and prefix sums on a bounded prefix. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/fold.h"

static void check_round_trip(const ms_fold *fold) {
  char *text;
  size_t length;
  if (ms_fold_format(fold, ms_fold_format_signed, NULL, &text, &length) != MS_OK) abort();
  ms_fold *parsed;
  if (ms_fold_parse(text, length, ms_fold_parse_signed, NULL, &parsed, NULL) != MS_OK) abort();
  char *again;
  if (ms_fold_format(parsed, ms_fold_format_signed, NULL, &again, NULL) != MS_OK) abort();
  if (strcmp(text, again) != 0) abort();
  if (ms_fold_length(parsed) != ms_fold_length(fold)) abort();
  if (ms_fold_node_count(parsed) != ms_fold_node_count(fold)) abort();
  free(text);
  free(again);
  ms_fold_free(parsed);
}

/* Reads up to `limit` elements, checking seek, next and prefix sums against them. */
static void check_cursor(const ms_fold *fold, uint64_t limit) {
  uint64_t length = ms_fold_length(fold);
  uint64_t n = length < limit ? length : limit;
  int64_t *values = malloc((n + 1) * sizeof *values);
  ms_fold_cursor *cursor;
  if (!values || ms_fold_cursor_new(fold, &cursor) != MS_OK) abort();
  if (ms_fold_cursor_read(cursor, values, (size_t)n) != n) abort();
  for (uint64_t i = 0; i < n; i += 1 + n / 64) {
    int64_t value;
    uint64_t prefix, expected = 0;
    for (uint64_t j = 0; j < i; j++)
      expected += (uint64_t)values[j];
    if (ms_fold_cursor_seek(cursor, i) != MS_OK || !ms_fold_cursor_next(cursor, &value) ||
        value != values[i])
      abort();
    if (ms_fold_prefix_sum(fold, i, &prefix) != MS_OK || prefix != expected) abort();
  }
  if (ms_fold_cursor_seek(cursor, length) != MS_OK) abort();
  int64_t past;
  if (ms_fold_cursor_next(cursor, &past)) abort();
  ms_fold_cursor_free(cursor);
  free(values);
}

static void fuzz_push(const uint8_t *data, size_t size) {
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
  if (ms_fold_finish(fold) != MS_OK || ms_fold_length(fold) != n) abort();
  ms_fold_cursor *cursor;
  int64_t *out = malloc((n + 1) * sizeof *out);
  if (!out || ms_fold_cursor_new(fold, &cursor) != MS_OK) abort();
  if (ms_fold_cursor_read(cursor, out, n + 1) != n) abort();
  if (n && memcmp(out, values, n * sizeof *out) != 0) abort();
  ms_fold_cursor_free(cursor);
  check_round_trip(fold);
  check_cursor(fold, 4096);
  free(out);
  free(values);
  ms_fold_free(fold);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 0 && data[0] == '!') {
    fuzz_push(data, size);
    return 0;
  }
  ms_fold *fold;
  size_t column;
  if (ms_fold_parse((const char *)data, size, ms_fold_parse_signed, NULL, &fold, &column) !=
      MS_OK) {
    if (column < 1 || column > size + 1) abort();
    return 0;
  }
  check_round_trip(fold);
  check_cursor(fold, 4096);
  ms_fold_free(fold);
  return 0;
}

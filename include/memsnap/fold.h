/* Nested-repetition (RSD/PRSD) compression of integer sequences.
 *
 * A fold compresses a sequence of int64 values ONLINE and EXACTLY into nested repetitions,
 * following Algorithm 1 of scalamemtrace-budanur-mueller-gamblin-2010.txt (section 2.1):
 * a bounded window of the last W top-level terms is searched for a tail that repeats; a
 * repeated tail becomes a group `( ... )^n`, and a value repeated becomes `x^n`; groups of
 * groups give the nested loops, e.g. `((+16^15 +48)^127 +16^15 -36816)^16384`.
 * It is used for the strides of one instruction site and for the order of sites in a thread.
 *
 * Guarantees (see docs/formats.md, "Nested-repetition expressions"):
 * - exact: the expansion of the expression always equals the pushed sequence;
 * - a loop nest whose every body spans at most W/2 terms folds to the nested expression
 *   with its loop counts, whatever the counts (size independent of the counts);
 * - terms older than the window are final: irregular input grows the expression linearly,
 *   and a cap on the number of terms lets the caller detect that and stop feeding.
 *
 * Representation (read-only access below): a *sequence* is an array of terms; sequence 0
 * is the top level; a term is either a value repeated `count` times (group == 0) or a
 * group: the sequence numbered `group` repeated `count` times. Counts are >= 1.
 *
 * Thread safety: a fold is single-writer. After ms_fold_finish (or ms_fold_parse) it is
 * immutable, and any number of threads may read it and run their own cursors on it.
 */
#ifndef MEMSNAP_FOLD_H
#define MEMSNAP_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memsnap/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_fold ms_fold;
typedef struct ms_fold_cursor ms_fold_cursor;

/* ---- Building ---------------------------------------------------------------------- */

#define MS_FOLD_DEFAULT_WINDOW 64
#define MS_FOLD_MAX_WINDOW 4096
#define MS_FOLD_DEFAULT_MAX_NODES ((uint64_t)1 << 20)

typedef struct ms_fold_options {
  /* Number of top-level terms kept for matching (>= 2, <= MS_FOLD_MAX_WINDOW; 0 means
   * MS_FOLD_DEFAULT_WINDOW). A loop body of up to window/2 terms is recognised. */
  uint32_t window;
  /* Cap on ms_fold_node_count (0 = no cap). Once the fold holds more terms than this it
   * is "over the cap": it keeps exactly the values pushed so far and refuses new ones. */
  uint64_t max_nodes;
} ms_fold_options;

/* window = MS_FOLD_DEFAULT_WINDOW, max_nodes = MS_FOLD_DEFAULT_MAX_NODES. */
MS_API ms_fold_options ms_fold_options_default(void);

/* Creates an empty fold (options may be NULL for the defaults). Returns MS_OK, MS_ERR_ARG
 * (bad window; message names it) or MS_ERR_NOMEM. */
MS_API int ms_fold_new(const ms_fold_options *options, ms_fold **out);
MS_API void ms_fold_free(ms_fold *fold);

/* Status returned by ms_fold_push when the fold is over its cap: the value is NOT stored.
 * (Positive, so `if (status < 0)` still catches only real errors.) */
#define MS_FOLD_OVER_CAP 1

/* Appends one value. Returns MS_OK (stored), MS_FOLD_OVER_CAP (not stored: the fold went
 * over its cap on an earlier push and now ignores values), MS_ERR_ARG (already finished)
 * or MS_ERR_NOMEM (the fold may then only be freed).
 * Cost: O(1) when the value is the one the current repetition predicts (the common case,
 * a couple of compares); otherwise amortized O(window). */
MS_API int ms_fold_push(ms_fold *fold, int64_t value);

/* Appends `count` values (same semantics as pushing them one by one; stops at the first
 * status other than MS_OK and returns it). */
MS_API int ms_fold_push_many(ms_fold *fold, const int64_t *values, size_t count);

/* Ends the input: the fold becomes immutable and readable (format, cursors, terms).
 * Idempotent. Returns MS_OK or MS_ERR_NOMEM. */
MS_API int ms_fold_finish(ms_fold *fold);

/* True once the fold holds more than options.max_nodes terms (see ms_fold_push). */
MS_API bool ms_fold_over_cap(const ms_fold *fold);

/* ---- Size and structure (valid at any time; the structure after finish) ------------ */

/* Number of elements the expression expands to (= values stored). Fits uint64 always
 * (ms_fold_parse rejects longer expressions). */
MS_API uint64_t ms_fold_length(const ms_fold *fold);

/* Number of terms in the written expression: each value term (`x` or `x^n`) counts 1 and
 * each group counts 1 plus the terms of its body, counted every time it is written.
 * Before ms_fold_finish it leaves out the partial iteration of a repetition in progress
 * (at most the size of that repetition's body). */
MS_API uint64_t ms_fold_node_count(const ms_fold *fold);

/* Depth of group nesting (0 for a sequence of value terms only). */
MS_API uint32_t ms_fold_depth(const ms_fold *fold);

/* Affine terms (non-rectangular loops): inside the body of a top-level group, a term may
 * change from one iteration of that group to the next by constant steps; in iteration r
 * (0-based) its value is value + r * value_step (wrapping) and its count
 * count + r * count_step (>= 1 in every iteration). Written `{-64,+8}` and `^{9,-1}`.
 * Terms elsewhere (top level, nested bodies) have no steps. The steps live apart
 * (ms_fold_term_steps) so that a term stays 24 bytes: replay of irregular folds reads one
 * term per element (bench_fold irregular: 240 M elements/s at 24 bytes, 170 M at 40). */
typedef struct ms_fold_term {
  int64_t value;  /* the value, when group == 0 */
  uint64_t count; /* repetitions (in the first iteration of the enclosing group), >= 1 */
  uint32_t group; /* 0 for a value term, else the sequence repeated */
  uint32_t steps; /* 0 (no steps), or where the term's steps are kept */
} ms_fold_term;

typedef struct ms_fold_steps {
  int64_t value_step; /* value terms only */
  int64_t count_step;
} ms_fold_steps;

/* The steps of a term of a finished fold (zeros for a term without steps). */
MS_API ms_fold_steps ms_fold_term_steps(const ms_fold *fold, const ms_fold_term *term);

/* The terms of sequence `sequence` (0 = top level) of a finished fold; *length receives
 * their number. Returns NULL (and *length = 0) for an unknown sequence or an unfinished
 * fold. The array lives as long as the fold. */
MS_API const ms_fold_term *ms_fold_sequence(const ms_fold *fold, uint32_t sequence, size_t *length);

/* Expanded length of one iteration of sequence `sequence` (0 = whole top level); for a
 * body with steps, of its first iteration. */
MS_API uint64_t ms_fold_sequence_length(const ms_fold *fold, uint32_t sequence);

/* Wrapping (mod 2^64) sum of the first `end` elements, computed in O(depth log window)
 * without expansion, e.g. the address reached after `end` strides. `end` <= length.
 * Returns MS_OK, or MS_ERR_ARG (end > length, or the fold is not finished). */
MS_API int ms_fold_prefix_sum(const ms_fold *fold, uint64_t end, uint64_t *sum);

/* ---- Text ---------------------------------------------------------------------------- */

#define MS_FOLD_VALUE_TEXT_MAX 64

/* Writes the text of one value into `buffer` (MS_FOLD_VALUE_TEXT_MAX bytes), NUL-terminated,
 * and returns its length (> 0), or a negative number to fail. The text must not contain
 * white space, '(', ')' or '^', and must not be empty. */
typedef int (*ms_fold_value_formatter)(char *buffer, int64_t value, void *context);

/* Reads the value of one token (`length` bytes, not NUL-terminated; it contains no white
 * space, '(', ')' or '^'). Returns 0, or non-zero if the token is not a valid value. */
typedef int (*ms_fold_value_parser)(const char *token, size_t length, int64_t *value,
                                    void *context);

/* Built-in value syntaxes. Signed: "+16", "-36816", "+0" (parse also accepts no sign).
 * Decimal: "16", "-36816". Both reject values outside int64. */
MS_API int ms_fold_format_signed(char *buffer, int64_t value, void *context);
MS_API int ms_fold_parse_signed(const char *token, size_t length, int64_t *value, void *context);
MS_API int ms_fold_format_decimal(char *buffer, int64_t value, void *context);
MS_API int ms_fold_parse_decimal(const char *token, size_t length, int64_t *value, void *context);

/* Writes the expression of a finished fold as a NUL-terminated string in *text (free()
 * it); *text_length (may be NULL) receives its length. Syntax: terms separated by one
 * space; a value term is VALUE or VALUE^COUNT (COUNT > 1); a group is ( TERMS )^COUNT.
 * A value with a step is {VALUE,STEP} and a count with a step ^{COUNT,STEP} (STEP signed
 * decimal, "+8", "-1"), e.g. `((+8^9 -72)^{9,-1} +8^9 {-64,+8})^8`.
 * The empty sequence is the empty string.
 * Returns MS_OK, MS_ERR_ARG (unfinished fold, or the formatter failed) or MS_ERR_NOMEM. */
MS_API int ms_fold_format(const ms_fold *fold, ms_fold_value_formatter formatter, void *context,
                          char **text, size_t *text_length);

/* Parses an expression (`length` bytes; white space, including newlines, separates
 * tokens freely; `x^1` and `( ... )^1` are accepted and kept as written) into a new,
 * finished fold. Returns MS_OK, MS_ERR_NOMEM, or MS_ERR_FORMAT with a message naming the
 * column and *error_column (may be NULL) set to the 1-based byte column of the offending
 * token: unbalanced parentheses, empty group, missing or zero count, count or total length
 * beyond uint64, bad value token, nesting deeper than MS_FOLD_MAX_DEPTH, a step outside the
 * body of a top-level group, a count that a step takes below 1 or beyond uint64.
 * For every finished fold F: parse(format(F)) formats to the same text. */
#define MS_FOLD_MAX_DEPTH 1000
MS_API int ms_fold_parse(const char *text, size_t length, ms_fold_value_parser parser,
                         void *context, ms_fold **out, size_t *error_column);

/* ---- Replay -------------------------------------------------------------------------- */

/* A cursor over the expansion of a finished fold, starting at index 0. It must not outlive
 * the fold. Returns MS_OK, MS_ERR_ARG (unfinished fold) or MS_ERR_NOMEM. */
MS_API int ms_fold_cursor_new(const ms_fold *fold, ms_fold_cursor **out);
MS_API void ms_fold_cursor_free(ms_fold_cursor *cursor);

/* Moves to element `index` (0 <= index <= length; length means the end) in O(depth log
 * window) arithmetic, without generating the skipped elements. Returns MS_OK or MS_ERR_ARG. */
MS_API int ms_fold_cursor_seek(ms_fold_cursor *cursor, uint64_t index);

/* Index of the next element to be read. */
MS_API uint64_t ms_fold_cursor_position(const ms_fold_cursor *cursor);

/* Reads the next element into *value; false at the end. */
MS_API bool ms_fold_cursor_next(ms_fold_cursor *cursor, int64_t *value);

/* Reads up to `capacity` next elements into `values`; returns how many (less than
 * `capacity` only at the end).
 * This is the fast path: runs of a value and small repeated bodies are copied in bulk. */
MS_API size_t ms_fold_cursor_read(ms_fold_cursor *cursor, int64_t *values, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif

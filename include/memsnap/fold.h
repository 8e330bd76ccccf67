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
 * Its result is an expression (memsnap/expr.h, ms_fold_expr), the one representation of
 * repetitions in memsnap: written, parsed and replayed by cursors there.
 *
 * Thread safety: a fold is single-writer. After ms_fold_finish it is immutable, and any
 * number of threads may read it.
 */
#ifndef MEMSNAP_FOLD_H
#define MEMSNAP_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memsnap/api.h"
#include "memsnap/expr.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_fold ms_fold;

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

/* Ends the input: the fold becomes immutable and readable (its terms, its expression).
 * Idempotent. Returns MS_OK or MS_ERR_NOMEM. */
MS_API int ms_fold_finish(ms_fold *fold);

/* True once the fold holds more than options.max_nodes terms (see ms_fold_push). */
MS_API bool ms_fold_over_cap(const ms_fold *fold);

/* ---- Size and structure (valid at any time; the structure after finish) ------------ */

/* Number of elements the expression expands to (= values stored). Fits uint64 always
 * (a push that would exceed it fails). */
MS_API uint64_t ms_fold_length(const ms_fold *fold);

/* Number of terms in the written expression: each value term (`x` or `x^n`) counts 1 and
 * each group counts 1 plus the terms of its body, counted every time it is written.
 * Before ms_fold_finish it leaves out the partial iteration of a repetition in progress
 * (at most the size of that repetition's body). */
MS_API uint64_t ms_fold_node_count(const ms_fold *fold);

/* Depth of group nesting (0 for a sequence of value terms only). */
MS_API uint32_t ms_fold_depth(const ms_fold *fold);

/* Affine terms (non-rectangular loops): inside the body of a group, a term may change from
 * one iteration of that group to the next by constant steps; in iteration r (0-based, from
 * each entry to the group) its value is value + r * value_step (wrapping) and its count
 * count + r * count_step (>= 1 in every iteration). Written `{-64,+8}` and `^{9,-1}`. A
 * body with steps may itself be a term with steps of an enclosing body (a doubly
 * triangular nest: `({+72,-8} ({+0,-8} +8^{1,+1})^{4,+1})^6`). Top-level terms have none. The steps live apart
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
  /* A group term whose body changes with the enclosing group (LU's trailing update: for
   * i, for j >= i, for k < i, the k loop's count steps with i, two levels up): the number
   * of steps of the body's terms (its length), 0 for none; ms_fold_body_steps reads them.
   * In iteration r of the enclosing group, body term j has value + r * value_step and
   * count + r * count_step of entry j. Written with `@2` (docs/formats.md). */
  uint32_t body_steps;
  uint32_t body_first; /* internal: where they are kept */
} ms_fold_steps;

/* The steps of a term of a finished fold (zeros for a term without steps). */
MS_API ms_fold_steps ms_fold_term_steps(const ms_fold *fold, const ms_fold_term *term);
/* Entry j < steps->body_steps of a term's body steps (its body_steps are 0). */
MS_API ms_fold_steps ms_fold_body_steps(const ms_fold *fold, const ms_fold_steps *steps, uint32_t j);

/* The terms of sequence `sequence` (0 = top level) of a finished fold; *length receives
 * their number. Returns NULL (and *length = 0) for an unknown sequence or an unfinished
 * fold. The array lives as long as the fold. */
MS_API const ms_fold_term *ms_fold_sequence(const ms_fold *fold, uint32_t sequence, size_t *length);

/* Expanded length of one iteration of sequence `sequence` (0 = whole top level); for a
 * body with steps, of its first iteration. */
MS_API uint64_t ms_fold_sequence_length(const ms_fold *fold, uint32_t sequence);

/* The expression of a finished fold (memsnap/expr.h): its terms as nodes, its groups as
 * groups, steps kept; finishes the fold first. The expression has the fold's length and
 * expands to the values pushed. *out is initialised here; free it with ms_expr_free (also
 * after a failure). Returns MS_OK, MS_ERR_NOMEM, or MS_ERR_FORMAT (a length beyond 2^64). */
MS_API int ms_fold_expr(ms_fold *fold, ms_expr *out);

#ifdef __cplusplus
}
#endif

#endif

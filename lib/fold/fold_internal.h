/* Internal representation of a fold, shared by the builder (fold.c) and the finished
 * fold's readers (fold_finish.c: totals, terms, the expression).
 *
 * Sequences (loop bodies) are immutable once created: their terms live in one pool, each
 * with the number and the wrapping sum of the elements before it in its sequence (the
 * prediction of the next value seeks with them). Sequence 0 is the top level,
 * whose terms live in their own array (`top`), filled when the fold is finished.
 * While building, bodies are interned (two equal bodies get one id), so that two terms are
 * equal exactly when their value, count and group are equal: comparing window terms is O(1).
 */
#ifndef MEMSNAP_FOLD_INTERNAL_H
#define MEMSNAP_FOLD_INTERNAL_H

#include "memsnap/fold.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fold_sequence {
  uint64_t expanded;    /* elements in one iteration */
  uint64_t sum;         /* wrapping sum of one iteration */
  uint64_t nodes;       /* terms written for one iteration (saturating) */
  uint64_t hash;        /* polynomial hash of the terms (interning, window matching) */
  uint32_t first;       /* first term in the pool (unused for sequence 0) */
  uint32_t length;      /* number of terms */
  uint32_t depth;       /* 1 + the depth of the deepest group inside */
  bool affine;          /* some term has a step: iterations differ (expanded, sum: the first) */
  bool nested;          /* some term's body is affine (a doubly triangular nest): such a group
                           extends by reduction, without a prediction (fold.c) */
} fold_sequence;

/* One level of the walk that predicts the next element inside the tail group's body. */
typedef struct fold_predict_frame {
  uint32_t sequence;
  uint32_t index;
  uint64_t rep; /* value term: elements consumed; group term: iterations completed */
} fold_predict_frame;

/* How the newest term predicts: not at all, a value run, a walk of a group's body, or the
 * expanded copy of a small group body (FOLD_PREDICT_FLAT_MAX elements at most). */
enum { FOLD_PREDICT_NONE, FOLD_PREDICT_VALUE, FOLD_PREDICT_GROUP, FOLD_PREDICT_FLAT };
#define FOLD_PREDICT_FLAT_MAX 256

struct ms_fold {
  /* Hot fields first: the fast path of ms_fold_push reads these three only. */
  int64_t expect;       /* the value the current repetition predicts */
  uint64_t expect_left; /* how many more times it may follow (0 = take the slow path) */
  int mode;             /* FOLD_PREDICT_* */
  /* Values stored. Not next to expect_left: GCC merged the two updates of the fast path
   * into one 16-byte vector store that the next push's loads waited on (3.9 -> 2.6 ns). */
  uint64_t length;

  bool finished;
  bool over_cap;
  uint32_t window;
  uint64_t max_nodes;
  uint64_t nodes; /* written terms: top + window (+ nothing for the partial tail) */

  fold_sequence *seqs;
  uint32_t seq_count, seq_capacity;

  ms_fold_term *pool;
  uint64_t *pool_before_length; /* elements before each term in its sequence */
  uint64_t *pool_before_sum;    /* wrapping sum of the elements before it */
  uint32_t pool_count, pool_capacity;

  ms_fold_term *top;
  size_t top_count, top_capacity;

  uint32_t *intern; /* open addressing table of sequence ids (0 = empty slot) */
  uint32_t intern_capacity, intern_count;

  ms_fold_term *win;  /* the last top-level terms; the newest at win[win_count - 1] */
  uint64_t *win_hash; /* win_hash[i] = polynomial hash of win[0..i) */
  uint32_t win_count, win_capacity;
  uint32_t plain_run; /* the newest plain_run window terms (at most) are count-1 values */

  /* Candidate index of a window wider than MS_FOLD_DEFAULT_WINDOW (fold.c, "Window
   * index"): positions [0, indexed) are chained by shape (value and group) and, for groups,
   * by where their body would end (position + body length); heads hold position + 1. */
  bool indexed_search;
  uint64_t *powers; /* FOLD_HASH_BASE^k, k <= window: wide windows only (else NULL) */
  uint32_t indexed;
  uint32_t index_mask; /* shape buckets - 1 */
  uint32_t *shape_head, *shape_next, *shape_of;
  uint32_t *end_head, *end_next, *end_of; /* end_of: UINT32_MAX for a value term */

  fold_predict_frame *predict;
  uint32_t predict_depth, predict_capacity;
  uint64_t pending_iterations; /* body iterations completed, not yet in the tail's count */

  int64_t *predict_flat;        /* expansion of one iteration of predict_flat_body */
  uint32_t predict_flat_body;   /* 0 = none */
  uint32_t predict_flat_length; /* its elements */
  uint32_t run_start;           /* position in it of the run being predicted */
  uint32_t run_length;          /* elements of that run (equal values) */

  /* An affine group predicts through an instance: a sequence (not interned, its pool
   * room reserved once) rewritten with the terms of the next iteration. */
  uint32_t instance;
  uint32_t instance_room;
  ms_fold_steps *steps; /* steps[i] for terms with steps == i (entry 0 unused) */
  uint32_t step_count, step_capacity;
  /* Open addressing table of step indexes (0 = empty): equal steps get one index, so that
   * the bodies of two iterations of a doubly triangular nest are one sequence. */
  uint32_t *step_table;
  uint32_t step_table_capacity;
  ms_fold_steps *body_steps; /* the steps of bodies that change with an outer loop */
  uint32_t body_step_count, body_step_capacity;
  bool predict_affine; /* the prediction runs on the instance */

  uint32_t depth; /* nesting depth of the whole expression (after finish) */
};

/* Creates a sequence from `count` terms (copied), computing its length, sum, node count,
 * depth and the per-term prefixes. Returns its id (> 0), or 0 with the error set
 * (MS_ERR_NOMEM, or MS_ERR_FORMAT when the expanded length exceeds uint64). */
uint32_t fold_sequence_create(ms_fold *fold, const ms_fold_term *terms, uint32_t count,
                              uint64_t hash, int *status);

/* Expanded length of a term, or false on overflow (or a count that a step takes out of
 * range). */
bool fold_term_length(const ms_fold *fold, const ms_fold_term *term, uint64_t *length);

/* Wrapping sum of the expansion of a term. */
uint64_t fold_term_sum(const ms_fold *fold, const ms_fold_term *term);

/* Elements and wrapping sum of the first `r` iterations of body `sequence` (affine or not);
 * false when a count leaves [1, 2^64-1] or the length overflows. */
bool fold_iterations_length(const ms_fold *fold, uint32_t sequence, uint64_t r, uint64_t *length);
uint64_t fold_iterations_sum(const ms_fold *fold, uint32_t sequence, uint64_t r);

/* Elements and wrapping sum of one iteration of body `sequence` with its body steps
 * `steps` applied for iteration r of the group around it. */
bool fold_body_length_at(const ms_fold *fold, uint32_t sequence, const ms_fold_steps *steps,
                         uint64_t r, uint64_t *length);
uint64_t fold_body_sum_at(const ms_fold *fold, uint32_t sequence, const ms_fold_steps *steps,
                          uint64_t r);

/* Keeps a pair of steps (one index per distinct pair); returns its index (> 0), or 0 when out
 * of memory (error set). */
uint32_t fold_steps_add(ms_fold *fold, int64_t value_step, int64_t count_step);
/* The same for a group term whose body's `length` terms step by `body` (copied). */
uint32_t fold_steps_add_body(ms_fold *fold, int64_t count_step, const ms_fold_steps *body,
                             uint32_t length);

/* Term j of body `sequence` in iteration r of the group around the term whose steps are
 * `steps` (body steps applied); *valid false when its count leaves [1, 2^64-1]. */
static inline ms_fold_term fold_body_term_at(const ms_fold *fold, uint32_t sequence,
                                             const ms_fold_steps *steps, uint32_t j, uint64_t r,
                                             bool *valid);

static inline ms_fold_steps fold_steps_of(const ms_fold *fold, const ms_fold_term *term) {
  ms_fold_steps none = {0, 0, 0, 0};
  return term->steps ? fold->steps[term->steps] : none;
}

/* A term in iteration r of its enclosing group: its steps applied (and cleared). */
static inline ms_fold_term fold_term_at(const ms_fold *fold, const ms_fold_term *term, uint64_t r) {
  ms_fold_term at = *term;
  if (!term->steps) return at;
  ms_fold_steps steps = fold->steps[term->steps];
  at.value = (int64_t)((uint64_t)term->value + (uint64_t)steps.value_step * r);
  at.count = term->count + (uint64_t)steps.count_step * r;
  at.steps = 0;
  return at;
}

/* The count of a term in iteration r, exactly (may leave [1, 2^64-1]). */
static inline __int128 fold_count_at(const ms_fold *fold, const ms_fold_term *term, uint64_t r) {
  return (__int128)term->count + (__int128)fold_steps_of(fold, term).count_step * r;
}

static inline bool fold_term_has_step(const ms_fold_term *term) { return term->steps != 0; }

static inline ms_fold_term fold_body_term_at(const ms_fold *fold, uint32_t sequence,
                                             const ms_fold_steps *steps, uint32_t j, uint64_t r,
                                             bool *valid) {
  ms_fold_term at = fold->pool[fold->seqs[sequence].first + j];
  *valid = true;
  if (!steps->body_steps) return at;
  ms_fold_steps step = fold->body_steps[steps->body_first + j];
  __int128 count = (__int128)at.count + (__int128)step.count_step * r;
  if (count < 1 || count > (__int128)UINT64_MAX) *valid = false;
  at.value = (int64_t)((uint64_t)at.value + (uint64_t)step.value_step * r);
  at.count = (uint64_t)count;
  return at;
}

/* Allocates an empty fold (window/options checked by the caller). */
ms_fold *fold_alloc(uint32_t window, uint64_t max_nodes);

/* Appends a term to the top-level array. */
int fold_top_append(ms_fold *fold, const ms_fold_term *term);

/* Computes sequence 0's totals and the depth, and marks the fold finished. */
int fold_seal(ms_fold *fold);

static inline bool fold_add_overflows(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_add_overflow(a, b, out);
}
static inline bool fold_mul_overflows(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}
static inline uint64_t fold_saturating_add(uint64_t a, uint64_t b) {
  uint64_t out;
  return __builtin_add_overflow(a, b, &out) ? UINT64_MAX : out;
}

#endif

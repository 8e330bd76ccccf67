/* Expressions of nested repetitions: the one representation of repeated sequences in
 * memsnap, written in one syntax (docs/formats.md, "Nested-repetition expressions").
 *
 * `((+16^15 +48)^127 +16^15 -36816)^16384` is the stride pattern of a loop nest; `(s0 s1
 * s2)^100000` the order of three sites. A leaf is a value repeated (`+8^9`), a group a
 * sequence of nodes repeated (`( ... )^n`); children of a group may change by constant
 * steps from one of its iterations to the next (`{-64,+8}`, `^{9,-1}`: the non-rectangular
 * loops of triangular and trapezoidal nests, at any depth for doubly triangular ones), or
 * with a group further up (`^{9,-1@2}`: LU). Expressions are built bottom
 * up (by hand, or by a fold from a sequence: memsnap/fold.h, ms_fold_expr), parsed from
 * and printed to text, and read by cursors that seek to any element without expanding the
 * elements before it, returning their sum (an address reached) and, for an order, how
 * often each value occurs before it.
 */
#ifndef MEMSNAP_EXPR_H
#define MEMSNAP_EXPR_H

#include <stdint.h>
#include <stdio.h>

#include "memsnap/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 24 bytes: reading an irregular expression reads one node per element (a node of 40
 * bytes, with its steps inside, expanded 120 M elements/s in bench_fold where 24 bytes
 * give 200 M), so the steps live apart (ms_expr_node_steps). */
typedef struct ms_expr_node {
  int64_t value;   /* a leaf's value: a stride, or a site number in an order */
  uint64_t repeat; /* >= 1 */
  uint32_t first;  /* a group's first child in expr->children */
  uint32_t count;  /* a group's number of children; 0 for a leaf */
} ms_expr_node;

/* Steps (non-rectangular loops; children of a group, not of the root): in iteration r of
 * that group (counted from 0 at each entry to it) the value is value + r * value_step and the repeat repeat + r * repeat_step.
 * Written `{-64,+8}`, `^{9,-1}` (docs/formats.md). */
typedef struct ms_expr_steps {
  int64_t value_step;
  int64_t repeat_step;
  /* Whose iterations r counts: 1 (or 0) the group that holds the node, 2 the group around
   * that one (LU's trailing update: the k loop's count steps with i, two loops up), ...
   * Written `{-64,+8@2}`, `^{9,-1@2}`; at most the number of groups around the node. */
  uint32_t level;
} ms_expr_steps;

typedef struct ms_expr {
  ms_expr_node *nodes;
  uint32_t node_count, node_capacity;
  ms_expr_steps *steps; /* per node id below step_count, NULL while no node has steps */
  uint32_t step_count;
  uint32_t *children;
  uint32_t child_count, child_capacity;
  uint32_t root; /* a group of repeat 1: the whole sequence (may be empty) */
  /* The root as written (text, copies). With steps, `root` is another group: the groups
   * with steps unrolled, one run of children per iteration, that cursors walk. */
  uint32_t text_root;
  uint32_t written_nodes; /* nodes [0, written_nodes) are the written expression */
  int finished;           /* ms_expr_finish succeeded */
  uint64_t *length;       /* per node: elements in one iteration */
  int64_t *sum;           /* per node: sum of the values of one iteration (wrapping) */
  uint32_t depth;         /* deepest nesting of groups, root included */
  uint64_t total;         /* elements of the whole expression */
  /* Per-value counts per node (ms_expr_index_values), for seeking in an order. */
  uint32_t *count_start; /* node -> first entry in count_value/count_times; node_count+1 */
  uint32_t *count_value;
  uint64_t *count_times;
} ms_expr;

/* The steps of node `id` (zeros for a node without). */
static inline ms_expr_steps ms_expr_node_steps(const ms_expr *expr, uint32_t id) {
  ms_expr_steps none = {0, 0, 0};
  return id < expr->step_count ? expr->steps[id] : none;
}

typedef enum ms_expr_kind {
  MS_EXPR_STRIDES = 0, /* leaves print as +16, -36816 */
  MS_EXPR_SITES = 1,   /* leaves print as s12 */
} ms_expr_kind;

MS_API void ms_expr_init(ms_expr *expr);
MS_API void ms_expr_free(ms_expr *expr);
/* Building bottom-up: leaves and groups return a node id (>= 0) or a negative status. */
MS_API int64_t ms_expr_leaf(ms_expr *expr, int64_t value, uint64_t repeat);
MS_API int64_t ms_expr_group(ms_expr *expr, const uint32_t *nodes, uint32_t count, uint64_t repeat);
/* Sets the top-level sequence and computes lengths and sums; MS_ERR_FORMAT if the
 * number of elements overflows 64 bits. */
MS_API int ms_expr_finish(ms_expr *expr, const uint32_t *nodes, uint32_t count);
/* Gives node `id` (a child of a group, not of the root) steps; checked by ms_expr_finish. */
MS_API int ms_expr_set_steps(ms_expr *expr, uint32_t id, int64_t value_step, int64_t repeat_step);
/* The same, counting the iterations of the group `level` groups up (1: the holding one;
 * at most 63). */
MS_API int ms_expr_set_steps_level(ms_expr *expr, uint32_t id, int64_t value_step,
                                   int64_t repeat_step, uint32_t level);
/* Most children the groups with steps may unroll to (MS_ERR_FORMAT beyond). */
#define MS_EXPR_UNROLL_MAX (1u << 22)
/* Parses text (no newline) written by ms_expr_print. Errors name file:line:column,
 * columns counted from `column` for the first character of text. */
MS_API int ms_expr_parse(ms_expr *expr, const char *text, size_t size, ms_expr_kind kind,
                         const char *file, unsigned line, unsigned column);
MS_API int ms_expr_print(const ms_expr *expr, ms_expr_kind kind, FILE *out);
/* The same into a malloc'ed string (NULL if out of memory). */
MS_API char *ms_expr_string(const ms_expr *expr, ms_expr_kind kind);
MS_API int ms_expr_copy(ms_expr *to, const ms_expr *from);
/* A copy whose leaf values v (each below `values`) become map[v] (site numbers renumbered);
 * MS_ERR_ARG for a value without a mapping (UINT32_MAX). */
MS_API int ms_expr_copy_mapped(ms_expr *to, const ms_expr *from, const uint32_t *map,
                               uint32_t values);
/* Prepares ms_expr_cursor_seek_counts: per node, how many times each value < values
 * occurs in one iteration. MS_ERR_FORMAT if a leaf is negative or >= values. */
MS_API int ms_expr_index_values(ms_expr *expr, uint32_t values);

/* A position in the expanded sequence of an expression; cyclic cursors start over at
 * the end (an empty expression then yields zeros). */
typedef struct ms_expr_frame {
  uint32_t node, child;
  uint64_t iteration;
} ms_expr_frame;

typedef struct ms_expr_cursor {
  const ms_expr *expr;
  ms_expr_frame *stack;
  uint32_t depth;
  int cyclic;
  int64_t value;      /* current leaf value */
  uint64_t leaf_left; /* copies of `value` left before the next leaf */
  /* ms_expr_cursor_read's expanded copy of a small group's iterations */
  int64_t *flat;
  uint32_t flat_node, flat_iterations; /* the group (0: none yet), iterations held */
} ms_expr_cursor;

MS_API int ms_expr_cursor_init(ms_expr_cursor *cursor, const ms_expr *expr, int cyclic);
MS_API void ms_expr_cursor_free(ms_expr_cursor *cursor);
/* Up to `max` copies of the next value: returns how many (0 at the end of a non-cyclic
 * expression) and the value in *value. */
static inline uint64_t ms_expr_cursor_run(ms_expr_cursor *cursor, uint64_t max, int64_t *value);
/* Positions the cursor before element `index` and returns the sum of the elements before
 * it (wrapping). If value_counts is not NULL, adds to value_counts[v] the number of
 * occurrences of v before `index` (needs ms_expr_index_values). */
MS_API int64_t ms_expr_cursor_seek(ms_expr_cursor *cursor, uint64_t index, uint64_t *value_counts);
/* The same, counting element i as weight[leaf] elements (0 or 1) and a group as
 * weight[group] per iteration (ms_expr_weights): the index counts only the
 * elements of weight 1, and the cursor stops before the index-th of them. */
MS_API int64_t ms_expr_cursor_seek_weighted(ms_expr_cursor *cursor, uint64_t index,
                                            const uint64_t *weight, uint64_t *value_counts);
/* Per node, the elements of one iteration whose value v has mask[v] set (an order's
 * selected sites); malloc'ed array of node_count entries, NULL if out of memory. */
MS_API uint64_t *ms_expr_weights(const ms_expr *expr, const uint8_t *mask);
MS_API void ms_expr_cursor_rewind(ms_expr_cursor *cursor);
/* Slow path of ms_expr_cursor_run: moves to the next leaf; 0 at the end. */
MS_API int ms_expr_cursor_advance(ms_expr_cursor *cursor);
/* Up to `capacity` next elements into `values`; returns how many (less only at the end of a
 * non-cyclic expression). The fast path for expanding: runs of a value are filled, and the
 * iterations of a group of at most 32 elements copied from an expansion of it. */
MS_API size_t ms_expr_cursor_read(ms_expr_cursor *cursor, int64_t *values, size_t capacity);

static inline uint64_t ms_expr_cursor_run(ms_expr_cursor *cursor, uint64_t max, int64_t *value) {
  if (cursor->leaf_left == 0 && !ms_expr_cursor_advance(cursor)) return 0;
  uint64_t n = cursor->leaf_left < max ? cursor->leaf_left : max;
  cursor->leaf_left -= n;
  *value = cursor->value;
  return n;
}

#ifdef __cplusplus
}
#endif

#endif

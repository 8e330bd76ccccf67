/* A finished fold: its totals and depth (fold_seal), its terms, and its expression
 * (memsnap/expr.h), the form every reader of a fold uses (text, cursors, seeking). */
#include <stdlib.h>

#include "fold_internal.h"
#include "memsnap/error.h"

int fold_seal(ms_fold *fold) {
  fold_sequence top = {0};
  top.length = (uint32_t)fold->top_count; /* < 2^32: fold_top_append */
  uint32_t deepest = 0;
  for (size_t i = 0; i < fold->top_count; i++) {
    const ms_fold_term *term = &fold->top[i];
    uint64_t length;
    if (!fold_term_length(fold, term, &length) || fold_add_overflows(top.expanded, length, &length))
      return ms_error_set(MS_ERR_FORMAT, "expanded length exceeds 2^64-1");
    top.expanded = length;
    top.sum += fold_term_sum(fold, term);
    top.nodes = fold_saturating_add(
        top.nodes, term->group ? fold_saturating_add(fold->seqs[term->group].nodes, 1) : 1);
    if (term->group && fold->seqs[term->group].depth > deepest)
      deepest = fold->seqs[term->group].depth;
  }
  top.depth = deepest;
  fold->seqs[0] = top;
  fold->depth = deepest;
  fold->length = top.expanded;
  fold->nodes = top.nodes;
  fold->finished = true;
  fold->mode = FOLD_PREDICT_NONE;
  fold->expect_left = 0;
  return MS_OK;
}

/* ---- Structure ----------------------------------------------------------------------- */

uint32_t ms_fold_depth(const ms_fold *fold) {
  if (fold->finished) return fold->depth;
  uint32_t deepest = 0;
  for (size_t i = 0; i < fold->top_count; i++)
    if (fold->top[i].group && fold->seqs[fold->top[i].group].depth > deepest)
      deepest = fold->seqs[fold->top[i].group].depth;
  for (uint32_t i = 0; i < fold->win_count; i++)
    if (fold->win[i].group && fold->seqs[fold->win[i].group].depth > deepest)
      deepest = fold->seqs[fold->win[i].group].depth;
  return deepest;
}

const ms_fold_term *ms_fold_sequence(const ms_fold *fold, uint32_t sequence, size_t *length) {
  *length = 0;
  if (!fold->finished || sequence >= fold->seq_count) return NULL;
  if (sequence == 0) {
    *length = fold->top_count;
    return fold->top;
  }
  *length = fold->seqs[sequence].length;
  return &fold->pool[fold->seqs[sequence].first];
}

uint64_t ms_fold_sequence_length(const ms_fold *fold, uint32_t sequence) {
  if (sequence == 0) return fold->length;
  return sequence < fold->seq_count ? fold->seqs[sequence].expanded : 0;
}

/* ---- The expression ------------------------------------------------------------------ */

/* The nodes of sequence `sequence`, children before parents, into *nodes (malloc'ed). */
static int sequence_nodes(const ms_fold *fold, uint32_t sequence, ms_expr *expr, uint32_t **nodes,
                          uint32_t *count) {
  size_t length;
  const ms_fold_term *terms = ms_fold_sequence(fold, sequence, &length);
  uint32_t *ids = malloc((length ? length : 1) * sizeof *ids);
  if (!ids) return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
  for (size_t i = 0; i < length; i++) {
    int64_t id;
    ms_fold_steps steps = ms_fold_term_steps(fold, &terms[i]);
    if (terms[i].group == 0) {
      id = ms_expr_leaf(expr, terms[i].value, terms[i].count);
    } else {
      uint32_t *children, child_count;
      int rc = sequence_nodes(fold, terms[i].group, expr, &children, &child_count);
      if (rc < 0) {
        free(ids);
        return rc;
      }
      /* a body that changes with the group around this term: its items step at level 2 */
      for (uint32_t j = 0; j < steps.body_steps && j < child_count && rc == 0; j++) {
        ms_fold_steps body = ms_fold_body_steps(fold, &steps, j);
        rc = ms_expr_set_steps_level(expr, children[j], body.value_step, body.count_step, 2);
      }
      if (rc < 0) {
        free(children);
        free(ids);
        return rc;
      }
      id = ms_expr_group(expr, children, child_count, terms[i].count);
      free(children);
    }
    if (id < 0) {
      free(ids);
      return (int)id;
    }
    int rc = ms_expr_set_steps(expr, (uint32_t)id, steps.value_step, steps.count_step);
    if (rc < 0) {
      free(ids);
      return rc;
    }
    ids[i] = (uint32_t)id;
  }
  *nodes = ids;
  *count = (uint32_t)length;
  return 0;
}

int ms_fold_expr(ms_fold *fold, ms_expr *out) {
  ms_expr_init(out);
  int rc = ms_fold_finish(fold);
  uint32_t *nodes = NULL, count = 0;
  if (rc == 0) rc = sequence_nodes(fold, 0, out, &nodes, &count);
  if (rc == 0) rc = ms_expr_finish(out, nodes, count);
  free(nodes);
  return rc;
}

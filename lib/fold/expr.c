/* Expressions of nested repetitions: building, text form, and a cursor that seeks.
 *
 * Model: a node is a leaf (a value repeated `repeat` times) or a group (a sequence of
 * nodes repeated `repeat` times); the root is a group of repeat 1. For every node the
 * number of elements and the sum of the values of one iteration are kept, so that a
 * cursor reaches element i by skipping whole iterations arithmetically: a seek costs
 * O(depth x children per group), whatever the length. Sums wrap modulo 2^64 like
 * addresses do. Text form: leaves `+16`, `-8`, `s3`, exponents `^N` (N >= 2), groups
 * `( ... )` with an optional exponent, items separated by one blank. In orders, a run
 * of three or more consecutive sites once each is written as a range `s0..s22` (sites
 * are numbered in order of first appearance, so every order starts with one); the
 * parser expands a range into its leaves, so the model does not know ranges.
 *
 * Steps (non-rectangular loops, docs/formats.md): a child of a group may change from one
 * iteration of that group to the next, `{-64,+8}` (value) and `^{9,-1}` (repeat), at any
 * depth, or with a group further up (`^{9,-1@2}`). finish keeps the written tree for the text and
 * builds, for the cursors, a root where each group whose children have steps is unrolled into the
 * children of each of its iterations (new nodes only for the children with steps: the other ids are
 * shared), so that every reader of `root` sees a plain expression. That costs memory per iteration
 * of such a group (the text stays one term per child), bounded by MS_EXPR_UNROLL_MAX
 * ("Unrolling" below).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/expr.h"

void ms_expr_init(ms_expr *expr) { memset(expr, 0, sizeof *expr); }

void ms_expr_free(ms_expr *expr) {
  free(expr->nodes);
  free(expr->steps);
  free(expr->children);
  free(expr->length);
  free(expr->sum);
  free(expr->count_start);
  free(expr->count_value);
  free(expr->count_times);
  memset(expr, 0, sizeof *expr);
}

static int grow(void **array, uint32_t *capacity, uint32_t need, size_t item) {
  if (need <= *capacity) return 0;
  uint32_t next = *capacity ? *capacity : 16;
  while (next < need) {
    if (next > UINT32_MAX / 2) return ms_error_set(MS_ERR_NOMEM, "expression too large");
    next *= 2;
  }
  void *bigger = realloc(*array, (size_t)next * item);
  if (!bigger) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  *array = bigger;
  *capacity = next;
  return 0;
}

static int64_t add_node(ms_expr *expr, ms_expr_node node) {
  int rc =
      grow((void **)&expr->nodes, &expr->node_capacity, expr->node_count + 1, sizeof *expr->nodes);
  if (rc < 0) return rc;
  expr->nodes[expr->node_count] = node;
  expr->finished = 0;
  return expr->node_count++;
}

int64_t ms_expr_leaf(ms_expr *expr, int64_t value, uint64_t repeat) {
  if (repeat == 0) return ms_error_set(MS_ERR_ARG, "a repeat count is at least 1");
  return add_node(expr, (ms_expr_node){.value = value, .repeat = repeat});
}

int64_t ms_expr_group(ms_expr *expr, const uint32_t *nodes, uint32_t count, uint64_t repeat) {
  if (repeat == 0) return ms_error_set(MS_ERR_ARG, "a repeat count is at least 1");
  int rc = grow((void **)&expr->children, &expr->child_capacity, expr->child_count + count,
                sizeof *expr->children);
  if (rc < 0) return rc;
  uint32_t first = expr->child_count;
  if (count) memcpy(expr->children + first, nodes, (size_t)count * sizeof *nodes);
  expr->child_count += count;
  return add_node(expr, (ms_expr_node){.repeat = repeat, .first = first, .count = count});
}

int ms_expr_set_steps(ms_expr *expr, uint32_t id, int64_t value_step, int64_t repeat_step) {
  return ms_expr_set_steps_level(expr, id, value_step, repeat_step, 1);
}

int ms_expr_set_steps_level(ms_expr *expr, uint32_t id, int64_t value_step, int64_t repeat_step,
                            uint32_t level) {
  if (level > 63) return ms_error_set(MS_ERR_ARG, "a step's level is at most 63");
  if (value_step == 0 && repeat_step == 0)
    level = 0;
  else if (level == 0)
    level = 1;
  if (value_step == 0 && repeat_step == 0 && id >= expr->step_count) return 0;
  if (id >= expr->step_count) {
    uint32_t count = id + 1 > expr->node_capacity ? id + 1 : expr->node_capacity;
    ms_expr_steps *bigger = realloc(expr->steps, (size_t)count * sizeof *bigger);
    if (!bigger) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    memset(bigger + expr->step_count, 0, (size_t)(count - expr->step_count) * sizeof *bigger);
    expr->steps = bigger;
    expr->step_count = count;
  }
  expr->steps[id] = (ms_expr_steps){value_step, repeat_step, level};
  return 0;
}

static int has_steps(const ms_expr *expr, uint32_t id) {
  ms_expr_steps steps = ms_expr_node_steps(expr, id);
  return steps.value_step != 0 || steps.repeat_step != 0;
}

/* Unrolling (ms_expr_finish): the written tree -> a plain tree for the cursors. A step of
 * level L counts the iterations of the L-th group around its node (`u->stack`, innermost
 * last, holds the iteration of each group being unrolled). A group whose iterations some
 * node below it counts is unrolled into one run of children per iteration; when nothing
 * below it counts a group further up, it is unrolled once, for the most iterations any of
 * its occurrences runs, and an occurrence of C iterations is a node over the first C runs
 * (iterations do not depend on how many follow): a doubly triangular nest costs memory
 * linear in its outer count, not quadratic. Otherwise (LU's k loop, whose count steps with
 * i two groups up) each occurrence is made apart. */
typedef struct unroller {
  uint64_t *iterations; /* per written node: most iterations it runs anywhere */
  uint32_t *runs;       /* per written group: first child of its cached runs + 1 (0: none) */
  uint32_t *plain;      /* per written node: its cached plain node + 1 (0: none) */
  uint64_t *below;      /* per written node: bit k set when a node d levels below it steps
                           with the group d + k levels up (k = 0: this node's iterations) */
  uint8_t *varies;      /* per written node: some node below it has steps */
  uint64_t used;        /* children made by unrolling */
  uint64_t stack[64];   /* iterations of the groups around the node being made */
  uint32_t top;
} unroller;

static int unroll_room(unroller *u, uint64_t more) {
  u->used += more;
  if (u->used > MS_EXPR_UNROLL_MAX)
    return ms_error_set(MS_ERR_FORMAT, "groups with steps unroll to more than %u terms",
                        MS_EXPR_UNROLL_MAX);
  return 0;
}

static int64_t plain_node(ms_expr *expr, unroller *u, uint32_t id);

/* Group `id`'s children in iterations q < iterations, plain, into ids (malloc'ed). */
static int unroll_children(ms_expr *expr, unroller *u, uint32_t id, uint64_t iterations,
                           uint32_t **out, uint32_t *total) {
  ms_expr_node g = expr->nodes[id];
  *out = NULL;
  if (g.count && iterations > MS_EXPR_UNROLL_MAX / g.count)
    return ms_error_set(MS_ERR_FORMAT, "groups with steps unroll to more than %u terms",
                        MS_EXPR_UNROLL_MAX);
  int rc = unroll_room(u, iterations * g.count);
  if (rc < 0) return rc;
  *total = (uint32_t)(iterations * g.count);
  uint32_t *ids = malloc((*total ? *total : 1) * sizeof *ids);
  if (!ids) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  u->top++;
  for (uint64_t q = 0; q < iterations && rc == 0; q++) {
    u->stack[u->top - 1] = q;
    for (uint32_t j = 0; j < g.count && rc == 0; j++) {
      int64_t made = plain_node(expr, u, expr->children[g.first + j]);
      if (made < 0)
        rc = (int)made;
      else
        ids[q * g.count + j] = (uint32_t)made;
    }
  }
  u->top--;
  if (rc < 0) {
    free(ids);
    return rc;
  }
  *out = ids;
  return 0;
}

/* Appends ids to expr->children; returns where they start. */
static int64_t append_children(ms_expr *expr, const uint32_t *ids, uint32_t count) {
  int rc = grow((void **)&expr->children, &expr->child_capacity, expr->child_count + count,
                sizeof *expr->children);
  if (rc < 0) return rc;
  if (count) memcpy(expr->children + expr->child_count, ids, (size_t)count * sizeof *ids);
  expr->child_count += count;
  return expr->child_count - count;
}

/* Written node `id` where the groups around it are in the iterations on u->stack, as a
 * node without steps anywhere in it. */
static int64_t plain_node(ms_expr *expr, unroller *u, uint32_t id) {
  ms_expr_node node = expr->nodes[id];
  ms_expr_steps steps = ms_expr_node_steps(expr, id);
  int stepped = steps.value_step != 0 || steps.repeat_step != 0;
  int free_of_context = (u->below[id] >> 1) == 0;
  if (!stepped && free_of_context && u->plain[id]) return u->plain[id] - 1;
  /* levels and the range of every repeat were checked by unroll */
  uint64_t r = stepped ? u->stack[u->top - (steps.level ? steps.level : 1)] : 0;
  uint64_t repeat = node.repeat + (uint64_t)steps.repeat_step * r;
  int64_t made;
  if (!u->varies[id]) {
    if (!stepped) return id;
    made = add_node(expr, (ms_expr_node){.value = (int64_t)((uint64_t)node.value +
                                                            (uint64_t)steps.value_step * r),
                                         .repeat = repeat,
                                         .first = node.first,
                                         .count = node.count});
  } else if (u->below[id] & 1) { /* its iterations differ: one run of children each */
    if (free_of_context) {       /* the runs of its largest count, made once */
      if (!u->runs[id]) {
        uint32_t *ids, total;
        int rc = unroll_children(expr, u, id, u->iterations[id], &ids, &total);
        if (rc < 0) return rc;
        int64_t first = append_children(expr, ids, total);
        free(ids);
        if (first < 0) return first;
        u->runs[id] = (uint32_t)first + 1;
      }
      made = add_node(expr, (ms_expr_node){.repeat = 1,
                                           .first = u->runs[id] - 1,
                                           .count = (uint32_t)(repeat * node.count)});
    } else {
      uint32_t *ids, total;
      int rc = unroll_children(expr, u, id, repeat, &ids, &total);
      if (rc < 0) return rc;
      made = ms_expr_group(expr, ids, total, 1);
      free(ids);
    }
  } else { /* the same children in every iteration, made plain */
    uint32_t *ids, total;
    int rc = unroll_children(expr, u, id, 1, &ids, &total);
    if (rc < 0) return rc;
    made = ms_expr_group(expr, ids, total, repeat);
    free(ids);
  }
  if (made >= 0 && !stepped && free_of_context) u->plain[id] = (uint32_t)made + 1;
  return made;
}

/* Checks every step below group `id` (its level against the groups around, every repeat
 * it reaches in 1 .. 2^64-1) and records each node's most iterations; u->stack holds the
 * most iterations of the groups around `id`'s children (none for the root's). */
static int unroll_check(ms_expr *expr, unroller *u, uint32_t id) {
  const ms_expr_node *g = &expr->nodes[id];
  for (uint32_t j = 0; j < g->count; j++) {
    uint32_t child = expr->children[g->first + j];
    ms_expr_steps steps = ms_expr_node_steps(expr, child);
    uint64_t repeat = expr->nodes[child].repeat, high = repeat;
    if (steps.value_step || steps.repeat_step) {
      uint32_t level = steps.level ? steps.level : 1;
      if (level > u->top)
        return ms_error_set(MS_ERR_FORMAT, u->top ? "a step's level is beyond the groups around it"
                                                  : "a step belongs to an item of a group");
      __int128 last =
          (__int128)repeat + (__int128)steps.repeat_step * (__int128)(u->stack[u->top - level] - 1);
      __int128 low = steps.repeat_step < 0 ? last : (__int128)repeat;
      __int128 most = steps.repeat_step < 0 ? (__int128)repeat : last;
      if (low < 1 || most > (__int128)UINT64_MAX)
        return ms_error_set(MS_ERR_FORMAT, "a step takes a repeat count below 1 or beyond 2^64-1");
      high = (uint64_t)most;
    }
    if (high > u->iterations[child]) u->iterations[child] = high;
    if (expr->nodes[child].count && u->varies[child]) {
      if (u->top == 64)
        return ms_error_set(MS_ERR_FORMAT, "groups with steps nested more than 64 deep");
      u->stack[u->top++] = high;
      int rc = unroll_check(expr, u, child);
      u->top--;
      if (rc < 0) return rc;
    }
  }
  return 0;
}

/* The root that cursors walk: `text_root` when nothing has steps, else the plain tree. */
static int unroll(ms_expr *expr) {
  uint32_t count = expr->written_nodes, top = expr->text_root;
  int any = 0;
  for (uint32_t i = 0; i < count && !any; i++)
    any = has_steps(expr, i);
  if (!any) return 0;
  unroller u = {0};
  u.iterations = calloc(count, sizeof *u.iterations);
  u.runs = calloc(count, sizeof *u.runs);
  u.plain = calloc(count, sizeof *u.plain);
  u.below = calloc(count, sizeof *u.below);
  u.varies = calloc(count, sizeof *u.varies);
  int rc = 0;
  if (!u.iterations || !u.runs || !u.plain || !u.below || !u.varies)
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  /* children have smaller ids than their groups: one pass upwards */
  for (uint32_t i = 0; rc == 0 && i < count; i++) {
    const ms_expr_node *node = &expr->nodes[i];
    for (uint32_t j = 0; j < node->count; j++) {
      uint32_t child = expr->children[node->first + j];
      if (child >= count) continue;
      ms_expr_steps steps = ms_expr_node_steps(expr, child);
      uint64_t own = 0;
      if (steps.value_step || steps.repeat_step) own = 1ULL << (steps.level ? steps.level : 1);
      u.below[i] |= (own | u.below[child]) >> 1;
      if (own || u.varies[child]) u.varies[i] = 1;
    }
  }
  if (rc == 0 && u.varies[top]) rc = unroll_check(expr, &u, top);
  int64_t made = rc;
  if (rc == 0 && u.varies[top]) { /* the root: its children, no iteration of its own */
    const ms_expr_node root = expr->nodes[top];
    uint32_t *ids = malloc((root.count ? root.count : 1) * sizeof *ids);
    if (!ids) made = ms_error_set(MS_ERR_NOMEM, "out of memory");
    for (uint32_t j = 0; made >= 0 && j < root.count; j++) {
      int64_t child = plain_node(expr, &u, expr->children[root.first + j]);
      if (child < 0)
        made = child;
      else
        ids[j] = (uint32_t)child;
    }
    if (made >= 0) made = ms_expr_group(expr, ids, root.count, 1);
    free(ids);
  } else if (rc == 0)
    made = top;
  free(u.iterations);
  free(u.runs);
  free(u.plain);
  free(u.below);
  free(u.varies);
  if (made < 0) return (int)made;
  expr->root = (uint32_t)made;
  return 0;
}

/* Children always have smaller ids than their group, so one pass in id order works. */
int ms_expr_finish(ms_expr *expr, const uint32_t *nodes, uint32_t count) {
  int64_t root = ms_expr_group(expr, nodes, count, 1);
  if (root < 0) return (int)root;
  expr->root = expr->text_root = (uint32_t)root;
  expr->written_nodes = expr->node_count;
  int unrolled = unroll(expr);
  if (unrolled < 0) return unrolled;
  free(expr->length);
  free(expr->sum);
  uint32_t *depth = calloc(expr->node_count, sizeof *depth);
  expr->length = malloc(expr->node_count * sizeof *expr->length);
  expr->sum = malloc(expr->node_count * sizeof *expr->sum);
  if (!depth || !expr->length || !expr->sum) {
    free(depth);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  for (uint32_t i = 0; i < expr->node_count; i++) {
    const ms_expr_node *node = &expr->nodes[i];
    if (node->count == 0 && i != expr->root) {
      expr->length[i] = 1;
      expr->sum[i] = node->value;
      continue;
    }
    uint64_t length = 0, sum = 0;
    uint32_t deepest = 0;
    for (uint32_t c = 0; c < node->count; c++) {
      uint32_t child = expr->children[node->first + c];
      uint64_t child_total;
      if (__builtin_mul_overflow(expr->length[child], expr->nodes[child].repeat, &child_total) ||
          __builtin_add_overflow(length, child_total, &length)) {
        free(depth);
        return ms_error_set(MS_ERR_FORMAT, "the expression has more than 2^64 elements");
      }
      sum += (uint64_t)expr->sum[child] * expr->nodes[child].repeat;
      if (depth[child] > deepest) deepest = depth[child];
    }
    expr->length[i] = length;
    expr->sum[i] = (int64_t)sum;
    depth[i] = deepest + 1;
  }
  expr->depth = depth[expr->root];
  uint64_t total;
  if (__builtin_mul_overflow(expr->length[expr->root], expr->nodes[expr->root].repeat, &total)) {
    free(depth);
    return ms_error_set(MS_ERR_FORMAT, "the expression has more than 2^64 elements");
  }
  expr->total = total;
  free(depth);
  expr->finished = 1;
  return 0;
}

int ms_expr_copy(ms_expr *to, const ms_expr *from) {
  ms_expr_init(to);
  for (uint32_t i = 0; i < from->written_nodes; i++) {
    if (i == from->text_root) continue;
    const ms_expr_node *n = &from->nodes[i];
    int64_t rc = n->count ? ms_expr_group(to, from->children + n->first, n->count, n->repeat)
                          : ms_expr_leaf(to, n->value, n->repeat);
    if (rc < 0) return (int)rc;
    ms_expr_steps steps = ms_expr_node_steps(from, i);
    if ((rc = ms_expr_set_steps_level(to, (uint32_t)rc, steps.value_step, steps.repeat_step,
                                      steps.level)) < 0)
      return (int)rc;
  }
  const ms_expr_node *root = &from->nodes[from->text_root];
  /* The root is always the last node (finish adds it), so ids are unchanged. */
  return ms_expr_finish(to, from->children + root->first, root->count);
}

int ms_expr_copy_mapped(ms_expr *to, const ms_expr *from, const uint32_t *map, uint32_t values) {
  ms_expr_init(to);
  for (uint32_t i = 0; i < from->written_nodes; i++) {
    if (i == from->text_root) continue;
    const ms_expr_node *n = &from->nodes[i];
    if (!n->count && (n->value < 0 || (uint64_t)n->value >= values || map[n->value] == UINT32_MAX))
      return ms_error_set(MS_ERR_ARG, "value %" PRId64 " has no mapping", n->value);
    int64_t rc = n->count ? ms_expr_group(to, from->children + n->first, n->count, n->repeat)
                          : ms_expr_leaf(to, map[n->value], n->repeat);
    if (rc < 0) return (int)rc;
    ms_expr_steps steps = ms_expr_node_steps(from, i);
    if ((rc = ms_expr_set_steps_level(to, (uint32_t)rc, steps.value_step, steps.repeat_step,
                                      steps.level)) < 0)
      return (int)rc;
  }
  if (from->written_nodes == 0) return ms_expr_finish(to, NULL, 0);
  const ms_expr_node *root = &from->nodes[from->text_root];
  return ms_expr_finish(to, from->children + root->first, root->count);
}

/* ---- text ---- */

typedef struct text_buffer {
  char *data;
  size_t size, capacity;
  int failed;
} text_buffer;

static void text_append(text_buffer *buffer, const char *text, size_t size) {
  if (buffer->failed) return;
  if (buffer->size + size + 1 > buffer->capacity) {
    size_t next = buffer->capacity ? buffer->capacity * 2 : 256;
    while (next < buffer->size + size + 1)
      next *= 2;
    char *bigger = realloc(buffer->data, next);
    if (!bigger) {
      buffer->failed = 1;
      return;
    }
    buffer->data = bigger;
    buffer->capacity = next;
  }
  memcpy(buffer->data + buffer->size, text, size);
  buffer->size += size;
  buffer->data[buffer->size] = 0;
}

/* 1 if node id is a leaf of repeat 1 (and of value `value`, unless value is 0). */
static int is_site_once(const ms_expr *expr, uint32_t id, int64_t value) {
  const ms_expr_node *node = &expr->nodes[id];
  return node->count == 0 && node->repeat == 1 && !has_steps(expr, id) &&
         (value == 0 || node->value == value);
}

static void print_node(const ms_expr *expr, uint32_t id, ms_expr_kind kind, text_buffer *out) {
  const ms_expr_node *node = &expr->nodes[id];
  ms_expr_steps steps = ms_expr_node_steps(expr, id);
  char item[64], level[16] = "";
  int n;
  if (steps.level > 1) snprintf(level, sizeof level, "@%u", (unsigned)steps.level);
  if (node->count == 0 && id != expr->text_root) {
    if (steps.value_step) text_append(out, "{", 1);
    n = kind == MS_EXPR_SITES ? snprintf(item, sizeof item, "s%" PRId64, node->value)
                              : snprintf(item, sizeof item, "%+" PRId64, node->value);
    text_append(out, item, (size_t)n);
    if (steps.value_step) {
      n = snprintf(item, sizeof item, ",%+" PRId64 "%s}", steps.value_step, level);
      text_append(out, item, (size_t)n);
    }
  } else {
    if (id != expr->text_root) text_append(out, "(", 1);
    for (uint32_t c = 0; c < node->count; c++) {
      if (c) text_append(out, " ", 1);
      uint32_t last = c;
      while (kind == MS_EXPR_SITES && last + 1 < node->count &&
             is_site_once(expr, expr->children[node->first + last], 0) &&
             is_site_once(expr, expr->children[node->first + last + 1],
                          expr->nodes[expr->children[node->first + last]].value + 1))
        last++;
      if (last >= c + 2) { /* a range sV..sW */
        n = snprintf(item, sizeof item, "s%" PRId64 "..s%" PRId64,
                     expr->nodes[expr->children[node->first + c]].value,
                     expr->nodes[expr->children[node->first + last]].value);
        text_append(out, item, (size_t)n);
        c = last;
        continue;
      }
      print_node(expr, expr->children[node->first + c], kind, out);
    }
    if (id != expr->text_root) text_append(out, ")", 1);
  }
  if (steps.repeat_step) {
    n = snprintf(item, sizeof item, "^{%" PRIu64 ",%+" PRId64 "%s}", node->repeat,
                 steps.repeat_step, level);
    text_append(out, item, (size_t)n);
  } else if (node->repeat > 1) {
    n = snprintf(item, sizeof item, "^%" PRIu64, node->repeat);
    text_append(out, item, (size_t)n);
  }
}

char *ms_expr_string(const ms_expr *expr, ms_expr_kind kind) {
  text_buffer buffer = {0};
  text_append(&buffer, "", 0);
  if (expr->finished) print_node(expr, expr->text_root, kind, &buffer);
  if (buffer.failed) {
    free(buffer.data);
    return NULL;
  }
  return buffer.data;
}

int ms_expr_print(const ms_expr *expr, ms_expr_kind kind, FILE *out) {
  char *text = ms_expr_string(expr, kind);
  if (!text) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  int rc = fputs(text, out) < 0 ? ms_error_set(MS_ERR_IO, "write failed: %m") : 0;
  free(text);
  return rc;
}

/* ---- parsing ---- */

typedef struct parser {
  const char *text, *end, *p;
  ms_expr_kind kind;
  const char *file;
  unsigned line, column;
  uint32_t *stack; /* node ids of the open sequences, one after the other */
  uint32_t stack_size, stack_capacity;
} parser;

static int parse_error(const parser *ps, const char *what) {
  return ms_error_set(MS_ERR_FORMAT, "%s:%u:%u: %s", ps->file, ps->line,
                      ps->column + (unsigned)(ps->p - ps->text), what);
}

static int parse_unsigned(parser *ps, uint64_t *value) {
  if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return parse_error(ps, "expected a number");
  uint64_t v = 0;
  const char *start = ps->p;
  while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
    if (__builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, (uint64_t)(*ps->p - '0'), &v)) {
      ps->p = start;
      return parse_error(ps, "number overflows 64 bits");
    }
    ps->p++;
  }
  *value = v;
  return 0;
}

/* Reads `,STEP}`: a signed 64-bit step other than 0. */
static int parse_step(parser *ps, int64_t *step, uint32_t *level) {
  if (ps->p >= ps->end || *ps->p != ',') return parse_error(ps, "expected ',' and a step");
  ps->p++;
  if (ps->p >= ps->end || (*ps->p != '+' && *ps->p != '-'))
    return parse_error(ps, "expected a signed step such as +8 or -1");
  int negative = *ps->p == '-';
  const char *at = ps->p++;
  uint64_t v = 0;
  int rc = parse_unsigned(ps, &v);
  if (rc < 0) return rc;
  if (v > (uint64_t)INT64_MAX + (negative ? 1u : 0u) || v == 0) {
    ps->p = at;
    return parse_error(ps, v ? "step overflows 64 bits" : "a step is not 0");
  }
  *step = negative ? (int64_t)(0 - v) : (int64_t)v;
  if (ps->p < ps->end && *ps->p == '@') { /* the iterations of a group further up */
    ps->p++;
    at = ps->p;
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
      return parse_error(ps, "expected a level such as 2 after '@'");
    if ((rc = parse_unsigned(ps, &v)) < 0) return rc;
    if (v < 2 || v > 63 || (*level && *level != v)) {
      ps->p = at;
      return parse_error(ps, v < 2 || v > 63 ? "a step's level is 2 to 63 (1 is written without @)"
                                             : "a value and its count step with one group");
    }
    *level = (uint32_t)v;
  } else if (*level > 1) {
    return parse_error(ps, "a value and its count step with one group");
  } else
    *level = 1;
  if (ps->p >= ps->end || *ps->p != '}') return parse_error(ps, "expected '}' after a step");
  ps->p++;
  return 0;
}

/* `^N` or `^{N,STEP}` (step 0 when absent). */
static int parse_exponent(parser *ps, uint64_t *repeat, int64_t *step, uint32_t *level) {
  *repeat = 1;
  *step = 0;
  if (ps->p < ps->end && *ps->p == '^') {
    ps->p++;
    int braced = ps->p < ps->end && *ps->p == '{';
    ps->p += braced;
    int rc = parse_unsigned(ps, repeat);
    if (rc < 0) return rc;
    if (*repeat == 0) return parse_error(ps, "a repeat count is at least 1");
    if (braced && (rc = parse_step(ps, step, level)) < 0) return rc;
  }
  return 0;
}

static int push(parser *ps, uint32_t id) {
  int rc = grow((void **)&ps->stack, &ps->stack_capacity, ps->stack_size + 1, sizeof *ps->stack);
  if (rc < 0) return rc;
  ps->stack[ps->stack_size++] = id;
  return 0;
}

static int parse_leaf(parser *ps, int64_t *value) {
  if (ps->kind == MS_EXPR_SITES) {
    if (*ps->p != 's') return parse_error(ps, "expected a site such as s3, '(' or ')'");
    ps->p++;
    uint64_t v = 0;
    int rc = parse_unsigned(ps, &v);
    if (rc < 0) return rc;
    if (v > UINT32_MAX) return parse_error(ps, "site number too large");
    *value = (int64_t)v;
    return 0;
  }
  if (*ps->p != '+' && *ps->p != '-')
    return parse_error(ps, "expected a stride such as +16, '(' or ')'");
  int negative = *ps->p == '-';
  ps->p++;
  uint64_t v = 0;
  int rc = parse_unsigned(ps, &v);
  if (rc < 0) return rc;
  if (v > (uint64_t)INT64_MAX + (negative ? 1u : 0u))
    return parse_error(ps, "stride overflows 64 bits");
  *value = negative ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

int ms_expr_parse(ms_expr *expr, const char *text, size_t size, ms_expr_kind kind, const char *file,
                  unsigned line, unsigned column) {
  ms_expr_init(expr);
  parser ps = {.text = text,
               .end = text + size,
               .p = text,
               .kind = kind,
               .file = file,
               .line = line,
               .column = column};
  /* opens[k]: stack size when the k-th open group started, and its column */
  uint32_t opens[64];
  const char *open_at[64];
  uint32_t open_count = 0;
  int rc = 0;
  while (rc == 0) {
    while (ps.p < ps.end && (*ps.p == ' ' || *ps.p == '\t'))
      ps.p++;
    if (ps.p >= ps.end) break;
    if (*ps.p == '(') {
      if (open_count == 64) {
        rc = parse_error(&ps, "groups nested more than 64 deep");
        break;
      }
      open_at[open_count] = ps.p;
      opens[open_count++] = ps.stack_size;
      ps.p++;
      continue;
    }
    if (*ps.p == ')') {
      if (open_count == 0) {
        rc = parse_error(&ps, "unbalanced ')'");
        break;
      }
      uint32_t start = opens[--open_count];
      if (start == ps.stack_size) {
        rc = parse_error(&ps, "empty group '()'");
        break;
      }
      ps.p++;
      uint64_t repeat = 1;
      int64_t repeat_step;
      uint32_t level = 0;
      const char *exponent = ps.p;
      if ((rc = parse_exponent(&ps, &repeat, &repeat_step, &level)) < 0) break;
      if (repeat_step && level > open_count) {
        ps.p = exponent;
        rc = parse_error(&ps, open_count ? "a step's level is beyond the groups around it"
                                         : "a step belongs to an item of a group");
        break;
      }
      int64_t id = ms_expr_group(expr, ps.stack + start, ps.stack_size - start, repeat);
      if (id < 0) {
        rc = (int)id;
        break;
      }
      if ((rc = ms_expr_set_steps_level(expr, (uint32_t)id, 0, repeat_step, level)) < 0) break;
      ps.stack_size = start;
      rc = push(&ps, (uint32_t)id);
    } else {
      int64_t value = 0, value_step = 0, repeat_step = 0;
      uint32_t level = 0;
      uint64_t repeat = 1;
      const char *item = ps.p;
      int braced = *ps.p == '{';
      ps.p += braced;
      if (braced && ps.p >= ps.end) {
        rc = parse_error(&ps, "expected a value after '{'");
        break;
      }
      if ((rc = parse_leaf(&ps, &value)) < 0) break;
      if (braced && (rc = parse_step(&ps, &value_step, &level)) < 0) break;
      if (braced) {
        if ((rc = parse_exponent(&ps, &repeat, &repeat_step, &level)) < 0) break;
      } else if (ps.kind == MS_EXPR_SITES && ps.end - ps.p >= 2 && ps.p[0] == '.' &&
                 ps.p[1] == '.') {
        /* a range sV..sW: the leaves sV, sV+1, ..., sW */
        int64_t last;
        ps.p += 2;
        if (ps.p >= ps.end) {
          rc = parse_error(&ps, "expected the last site of the range");
          break;
        }
        const char *at = ps.p;
        if ((rc = parse_leaf(&ps, &last)) < 0) break;
        if (last <= value || last - value > (1 << 24)) {
          ps.p = at;
          rc = parse_error(&ps, "a range sV..sW has V < W, at most 2^24 apart");
          break;
        }
        if (ps.p < ps.end && *ps.p == '^') {
          rc = parse_error(&ps, "a range takes no repeat: group it, (s0..s3)^2");
          break;
        }
        for (int64_t v = value; rc == 0 && v < last; v++) {
          int64_t id = ms_expr_leaf(expr, v, 1);
          rc = id < 0 ? (int)id : push(&ps, (uint32_t)id);
        }
        if (rc < 0) break;
        value = last;
      } else if ((rc = parse_exponent(&ps, &repeat, &repeat_step, &level)) < 0)
        break;
      if ((value_step || repeat_step) && level > open_count) {
        ps.p = item;
        rc = parse_error(&ps, open_count ? "a step's level is beyond the groups around it"
                                         : "a step belongs to an item of a group");
        break;
      }
      int64_t id = ms_expr_leaf(expr, value, repeat);
      if (id < 0) {
        rc = (int)id;
        break;
      }
      if ((rc = ms_expr_set_steps_level(expr, (uint32_t)id, value_step, repeat_step, level)) < 0)
        break;
      rc = push(&ps, (uint32_t)id);
    }
    if (rc == 0 && ps.p < ps.end && *ps.p != ' ' && *ps.p != '\t' && *ps.p != ')')
      rc = parse_error(&ps, "expected a blank between items");
  }
  if (rc == 0 && open_count > 0) {
    ps.p = open_at[open_count - 1];
    rc = parse_error(&ps, "unbalanced '(' (never closed)");
  }
  if (rc == 0) {
    rc = ms_expr_finish(expr, ps.stack, ps.stack_size);
    if (rc < 0) { /* the message is copied: it is formatted into the same buffer */
      char what[256];
      snprintf(what, sizeof what, "%s", ms_error_message());
      ps.p = ps.text;
      rc = parse_error(&ps, what);
    }
  }
  free(ps.stack);
  if (rc < 0) ms_expr_free(expr);
  return rc;
}

/* Per node: how often each value occurs in one iteration, as a sorted sparse list. */
int ms_expr_index_values(ms_expr *expr, uint32_t values) {
  uint64_t *dense = calloc(values ? values : 1, sizeof *dense);
  uint32_t *touched = malloc((values ? values : 1) * sizeof *touched);
  expr->count_start = calloc(expr->node_count + 1, sizeof *expr->count_start);
  uint32_t capacity = 0, times_capacity = 0, used = 0;
  int rc = 0;
  if (!dense || !touched || !expr->count_start) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  for (uint32_t i = 0; rc == 0 && i < expr->node_count; i++) {
    const ms_expr_node *node = &expr->nodes[i];
    uint32_t touched_count = 0;
    if (node->count == 0 && i != expr->root) {
      if (node->value < 0 || node->value >= (int64_t)values) {
        rc = ms_error_set(MS_ERR_FORMAT, "site s%" PRId64 " is not in the profile", node->value);
        break;
      }
      touched[touched_count++] = (uint32_t)node->value;
      dense[node->value] = 1;
    } else {
      for (uint32_t c = 0; c < node->count; c++) {
        uint32_t child = expr->children[node->first + c];
        for (uint32_t k = expr->count_start[child]; k < expr->count_start[child + 1]; k++) {
          uint32_t v = expr->count_value[k];
          if (dense[v] == 0) touched[touched_count++] = v;
          dense[v] += expr->count_times[k] * expr->nodes[child].repeat;
        }
      }
    }
    if ((rc = grow((void **)&expr->count_value, &capacity, used + touched_count,
                   sizeof *expr->count_value)) < 0)
      break;
    /* never realloc to 0 bytes (an empty root before any value): that may free and
     * return NULL, read here as out of memory; and only when the capacity grew (under
     * ASan every realloc copies: verify of cg 100 3 took 93 s in it, 0.08 s without) */
    uint32_t capacity2 = capacity ? capacity : 1;
    if (capacity2 != times_capacity) {
      uint64_t *times = realloc(expr->count_times, (size_t)capacity2 * sizeof *times);
      if (!times) {
        rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
        break;
      }
      expr->count_times = times;
      times_capacity = capacity2;
    }
    for (uint32_t k = 0; k < touched_count; k++) {
      expr->count_value[used] = touched[k];
      expr->count_times[used++] = dense[touched[k]];
      dense[touched[k]] = 0;
    }
    expr->count_start[i + 1] = used;
  }
  free(dense);
  free(touched);
  return rc;
}

/* ---- cursor ---- */

int ms_expr_cursor_init(ms_expr_cursor *cursor, const ms_expr *expr, int cyclic) {
  memset(cursor, 0, sizeof *cursor);
  cursor->expr = expr;
  cursor->cyclic = cyclic;
  cursor->stack = malloc((expr->depth + 1) * sizeof *cursor->stack);
  if (!cursor->stack) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  ms_expr_cursor_rewind(cursor);
  return 0;
}

void ms_expr_cursor_free(ms_expr_cursor *cursor) {
  free(cursor->stack);
  free(cursor->flat);
  cursor->stack = NULL;
  cursor->flat = NULL;
}

void ms_expr_cursor_rewind(ms_expr_cursor *cursor) {
  cursor->stack[0] = (ms_expr_frame){.node = cursor->expr->root};
  cursor->depth = 1;
  cursor->leaf_left = 0;
}

/* One move of the walk at the top frame: into its next child (a leaf: returns 1 with its
 * value and repeat as the run; a group: entered), to its next iteration, or out of it. */
static inline int walk_step(ms_expr_cursor *cursor) {
  const ms_expr *expr = cursor->expr;
  ms_expr_frame *top = &cursor->stack[cursor->depth - 1];
  const ms_expr_node *group = &expr->nodes[top->node];
  if (top->child < group->count) {
    uint32_t id = expr->children[group->first + top->child++];
    const ms_expr_node *node = &expr->nodes[id];
    if (node->count == 0) {
      cursor->value = node->value;
      cursor->leaf_left = node->repeat;
      return 1;
    }
    cursor->stack[cursor->depth++] = (ms_expr_frame){.node = id};
  } else if (++top->iteration < group->repeat) {
    top->child = 0;
  } else {
    cursor->depth--;
  }
  return 0;
}

int ms_expr_cursor_advance(ms_expr_cursor *cursor) {
  if (cursor->expr->total == 0) {
    if (!cursor->cyclic) return 0;
    cursor->value = 0;
    cursor->leaf_left = UINT64_MAX;
    return 1;
  }
  for (;;) {
    if (cursor->depth == 0) {
      if (!cursor->cyclic) return 0;
      ms_expr_cursor_rewind(cursor);
    }
    if (walk_step(cursor)) return 1;
  }
}

/* Bulk reading. A group whose iteration expands to at most FLAT_BODY elements is copied
 * from an expansion of FLAT_MIN elements or more (whole iterations), so that each copy
 * moves at least 32 elements. Measured with bench_fold (8 M elements): walking such bodies
 * run by run replays (s0 s1 s2 s3 s4)^n at about 240 M elements/s; with the copies at about
 * 1.9 G/s, copying the expanded array's speed. */
#define FLAT_BODY 32
#define FLAT_MIN 64

/* Writes one iteration of group `node` (at most FLAT_BODY elements) into out. */
static size_t expand_iteration(const ms_expr *expr, uint32_t node, int64_t *out) {
  const ms_expr_node *group = &expr->nodes[node];
  size_t at = 0;
  for (uint32_t c = 0; c < group->count; c++) {
    uint32_t id = expr->children[group->first + c];
    const ms_expr_node *child = &expr->nodes[id];
    for (uint64_t r = 0; r < child->repeat; r++) {
      if (child->count == 0)
        out[at++] = child->value;
      else
        at += expand_iteration(expr, id, out + at);
    }
  }
  return at;
}

/* The expansion of group `node`'s iterations in cursor->flat; 0 if out of memory. */
static int prepare_flat(ms_expr_cursor *cursor, uint32_t node) {
  if (cursor->flat_node == node + 1) return 1;
  const ms_expr *expr = cursor->expr;
  uint64_t length = expr->length[node];
  uint32_t iterations = (uint32_t)((FLAT_MIN + length - 1) / length);
  if (!cursor->flat && !(cursor->flat = malloc((FLAT_MIN + FLAT_BODY) * sizeof *cursor->flat)))
    return 0;
  expand_iteration(expr, node, cursor->flat);
  for (uint32_t i = 1; i < iterations; i++)
    memcpy(cursor->flat + i * length, cursor->flat, length * sizeof *cursor->flat);
  cursor->flat_node = node + 1;
  cursor->flat_iterations = iterations;
  return 1;
}

/* n copies of value (four stores per step: GCC 12 at -O2 leaves the plain loop scalar, 2x
 * slower on a constant run in bench_fold). */
static inline void fill(int64_t *out, size_t n, int64_t value) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    out[i] = value;
    out[i + 1] = value;
    out[i + 2] = value;
    out[i + 3] = value;
  }
  for (; i < n; i++)
    out[i] = value;
}

size_t ms_expr_cursor_read(ms_expr_cursor *cursor, int64_t *values, size_t capacity) {
  const ms_expr *expr = cursor->expr;
  size_t got = 0;
  if (expr->total == 0) {
    if (!cursor->cyclic) return 0;
    memset(values, 0, capacity * sizeof *values);
    return capacity;
  }
  for (;;) {
    if (cursor->leaf_left) {
      size_t n = cursor->leaf_left < capacity - got ? (size_t)cursor->leaf_left : capacity - got;
      fill(values + got, n, cursor->value);
      got += n;
      cursor->leaf_left -= n;
    }
    if (got == capacity) return got;
    if (cursor->depth == 0) {
      if (!cursor->cyclic) return got;
      ms_expr_cursor_rewind(cursor);
    }
    ms_expr_frame *top = &cursor->stack[cursor->depth - 1];
    const ms_expr_node *group = &expr->nodes[top->node];
    uint64_t length = expr->length[top->node];
    if (top->child == 0 && length <= FLAT_BODY && capacity - got >= length &&
        prepare_flat(cursor, top->node)) {
      /* whole iterations, copied in runs of the expansion */
      uint64_t left = group->repeat - top->iteration;
      uint64_t fit = (capacity - got) / length, k = left < fit ? left : fit;
      for (uint64_t done = 0; done < k;) {
        uint64_t step = k - done < cursor->flat_iterations ? k - done : cursor->flat_iterations;
        memcpy(values + got, cursor->flat, step * length * sizeof *values);
        got += step * length;
        done += step;
      }
      top->iteration += k;
      if (top->iteration == group->repeat) cursor->depth--;
      continue;
    }
    /* the group's next children: leaves of one element are copied here, one by one (an
     * irregular expression is all such leaves) */
    const uint32_t *children = expr->children + group->first;
    while (top->child < group->count && got < capacity) {
      const ms_expr_node *node = &expr->nodes[children[top->child]];
      if (node->count != 0 || node->repeat != 1) break;
      values[got++] = node->value;
      top->child++;
    }
    if (got == capacity) return got;
    walk_step(cursor);
  }
}

static void add_counts(const ms_expr *expr, uint32_t node, uint64_t times, uint64_t *value_counts) {
  if (!value_counts || times == 0) return;
  for (uint32_t k = expr->count_start[node]; k < expr->count_start[node + 1]; k++)
    value_counts[expr->count_value[k]] += expr->count_times[k] * times;
}

int64_t ms_expr_cursor_seek(ms_expr_cursor *cursor, uint64_t index, uint64_t *value_counts) {
  return ms_expr_cursor_seek_weighted(cursor, index, NULL, value_counts);
}

int64_t ms_expr_cursor_seek_weighted(ms_expr_cursor *cursor, uint64_t index, const uint64_t *weight,
                                     uint64_t *value_counts) {
  const ms_expr *expr = cursor->expr;
  const uint64_t *length = weight ? weight : expr->length;
  uint64_t total = weight ? weight[expr->root] : expr->total;
  ms_expr_cursor_rewind(cursor);
  uint64_t sum = 0;
  if (total == 0) {
    if (!cursor->cyclic) cursor->depth = 0;
    return 0;
  }
  if (index >= total) {
    uint64_t cycles = index / total;
    if (!cursor->cyclic) {
      cursor->depth = 0;
      add_counts(expr, expr->root, 1, value_counts);
      return (int64_t)expr->sum[expr->root];
    }
    sum += cycles * (uint64_t)expr->sum[expr->root];
    add_counts(expr, expr->root, cycles, value_counts);
    index -= cycles * total;
  }
  /* Invariant: the top frame's group is entered, `index` elements remain to skip in it. */
  for (;;) {
    ms_expr_frame *top = &cursor->stack[cursor->depth - 1];
    const ms_expr_node *group = &expr->nodes[top->node];
    uint64_t skip = index / length[top->node];
    top->iteration = skip;
    sum += skip * (uint64_t)expr->sum[top->node];
    add_counts(expr, top->node, skip, value_counts);
    index -= skip * length[top->node];
    if (index == 0) return (int64_t)sum; /* at the start of an iteration: child 0 */
    for (top->child = 0;; top->child++) {
      uint32_t id = expr->children[group->first + top->child];
      const ms_expr_node *node = &expr->nodes[id];
      uint64_t child_total = length[id] * node->repeat;
      if (index >= child_total) {
        index -= child_total;
        sum += node->repeat * (uint64_t)expr->sum[id];
        add_counts(expr, id, node->repeat, value_counts);
        continue;
      }
      top->child++;
      if (node->count == 0) {
        cursor->value = node->value;
        cursor->leaf_left = node->repeat - index;
        sum += index * (uint64_t)node->value;
        add_counts(expr, id, index, value_counts);
        return (int64_t)sum;
      }
      cursor->stack[cursor->depth++] = (ms_expr_frame){.node = id};
      break;
    }
  }
}

uint64_t *ms_expr_weights(const ms_expr *expr, const uint8_t *mask) {
  uint64_t *weight = malloc((expr->node_count ? expr->node_count : 1) * sizeof *weight);
  if (!weight) return NULL;
  for (uint32_t i = 0; i < expr->node_count; i++) {
    const ms_expr_node *node = &expr->nodes[i];
    if (node->count == 0 && i != expr->root) {
      weight[i] = mask[node->value] ? 1 : 0;
      continue;
    }
    weight[i] = 0;
    for (uint32_t c = 0; c < node->count; c++) {
      uint32_t child = expr->children[node->first + c];
      weight[i] += weight[child] * expr->nodes[child].repeat;
    }
  }
  return weight;
}

/* Stride histories and their decoding (psnap-mills-snavely-carrington.txt, section II-B).
 *
 * Recording: per site, the unique strides in order of first appearance, their counts,
 * and a snapshot of the counts each time a new stride appears (row i is taken when
 * stride i+1 first appears, after counting it, so h(i, i+1) = 1 and the diagonal h(i, i)
 * is how often stride i ran before the next one appeared). Cost per access: a scan of the
 * unique strides, which stops at the first one most of the time.
 *
 * Decoding, with S1..Sn the strides and a chain d1..dk of repeat values, the nested
 * simple-repeat pattern is E = Q(k) S(k+1) with Q(1) = S1^d1 and
 * Q(j) = (Q(j-1) Sj)^dj Q(j-1): Table II's (15, 255, 2047, 1) gives expression (4).
 * - constant: one stride.
 * - simple repeat: the last row passes equation 2 (each value divisible by the sum of
 *   those after it); equation 3 gives the chain; the repeat value is the final count of
 *   the last stride: E^count.
 * - simple alternating: the last row fails equation 2 but the diagonal gives a chain
 *   (every h(i, i) >= 1): E of the diagonal is the first phase (Table I: expression (1)).
 * - complex repeat: some row i before the last has h(i+1, i+1) = 1 (definition 1); those
 *   rows and the last are the dominant lines and the final counts the master line; or,
 *   failing that, the row before the last closes the last pattern and the last row is
 *   the master line (a new phase began there: Table III). Each dominant line is reduced by the one
 * above (equation 5; equation 6's decrement of the previous final only where it is still positive,
 * which keeps Table III's reduced lines), then by equation 3; the master line keeps the values at
 *   the finals of the lines above (equation 7, minus one for those that completed) and
 *   its diagonal is the repeat: (E1 E2 ... Ek)^repeat (Table III: expression (8)).
 * - undesignated: anything else, or more unique strides than the history holds.
 * Patterns are read cyclically up to the site's count; the profile builder keeps a
 * decoded pattern only when it reproduces the exact strides (see builder.c).
 */
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"

static const char *const class_names[] = {"constant", "simple-repeat", "simple-alternating",
                                          "complex-repeat", "undesignated"};

const char *ms_stride_class_name(ms_stride_class cls) {
  return (unsigned)cls < 5 ? class_names[cls] : "undesignated";
}

int ms_stride_class_parse(const char *name) {
  for (int i = 0; i < 5; i++)
    if (!strcmp(name, class_names[i])) return i;
  return -1;
}

int ms_stride_history_init(ms_stride_history *history, uint32_t capacity) {
  memset(history, 0, sizeof *history);
  history->capacity = capacity ? capacity : 32;
  history->width = history->capacity < 4 ? history->capacity : 4;
  history->strides = malloc(history->width * sizeof *history->strides);
  history->counts = calloc(history->width, sizeof *history->counts);
  if (!history->strides || !history->counts) {
    ms_stride_history_free(history);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  return 0;
}

void ms_stride_history_free(ms_stride_history *history) {
  free(history->strides);
  free(history->counts);
  free(history->rows);
  memset(history, 0, sizeof *history);
}

int ms_stride_history_add_new(ms_stride_history *history, int64_t stride) {
  if (history->unique == history->capacity) {
    history->overflowed = 1;
    return 0;
  }
  if (history->unique == history->width) { /* room for twice as many, rows laid out again */
    uint32_t old = history->width,
             width = 2 * old < history->capacity ? 2 * old : history->capacity;
    int64_t *strides = realloc(history->strides, width * sizeof *strides);
    if (strides) history->strides = strides;
    uint64_t *counts = realloc(history->counts, width * sizeof *counts);
    if (counts) history->counts = counts;
    uint32_t row_count = history->unique ? history->unique - 1 : 0;
    uint64_t *rows = calloc((size_t)(row_count + 1) * width, sizeof *rows);
    if (!strides || !counts || !rows) {
      free(rows);
      return ms_error_set(MS_ERR_NOMEM, "out of memory");
    }
    memset(counts + old, 0, (width - old) * sizeof *counts);
    for (uint32_t r = 0; r < row_count; r++)
      memcpy(rows + (size_t)r * width, history->rows + (size_t)r * old, old * sizeof *rows);
    free(history->rows);
    history->rows = rows;
    history->width = width;
  }
  uint32_t i = history->unique++;
  history->strides[i] = stride;
  history->counts[i] = 1;
  if (i == 0) return 0;
  /* Row i - 1 is added now, not all capacity rows at once: with 32 strides those were 8 KiB
   * per site, 180 MB of sqlite3's profile (28000 sites, most of them with few strides);
   * rows as wide as the strides kept so far, not 32: 37 -> 7 MB of sqlite3's. */
  uint64_t *rows = realloc(history->rows, (size_t)i * history->width * sizeof *rows);
  if (!rows) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  history->rows = rows;
  memset(rows + (size_t)(i - 1) * history->width, 0, history->width * sizeof *rows);
  memcpy(rows + (size_t)(i - 1) * history->width, history->counts,
         history->unique * sizeof *history->counts);
  return 0;
}

/* ---- decoding ---- */

typedef struct chain_builder {
  ms_expr *expr;
  uint32_t items[256]; /* the current Q(j) as a sequence of node ids */
  uint32_t item_count;
} chain_builder;

/* Appends E = Q(k) S(k+1) for columns[0..k] with repeats d[0..k-1] to out[]. */
static int build_chain(ms_expr *expr, const int64_t *strides, const uint32_t *columns,
                       const uint64_t *d, uint32_t k, uint32_t *out, uint32_t *out_count) {
  uint32_t q[256], q_count = 0, scratch[256];
  int64_t id = ms_expr_leaf(expr, strides[columns[0]], d[0]);
  if (id < 0) return (int)id;
  q[q_count++] = (uint32_t)id;
  for (uint32_t j = 1; j < k; j++) {
    if (2 * q_count + 2 > 256) return ms_error_set(MS_ERR_ARG, "pattern too deep");
    memcpy(scratch, q, q_count * sizeof *q);
    int64_t stride = ms_expr_leaf(expr, strides[columns[j]], 1);
    if (stride < 0) return (int)stride;
    scratch[q_count] = (uint32_t)stride;
    int64_t group = ms_expr_group(expr, scratch, q_count + 1, d[j]);
    if (group < 0) return (int)group;
    memmove(q + 1, q, q_count * sizeof *q);
    q[0] = (uint32_t)group;
    q_count++;
  }
  int64_t last = ms_expr_leaf(expr, strides[columns[k]], 1);
  if (last < 0) return (int)last;
  if (*out_count + q_count + 1 > 256) return ms_error_set(MS_ERR_ARG, "pattern too long");
  memcpy(out + *out_count, q, q_count * sizeof *q);
  *out_count += q_count;
  out[(*out_count)++] = (uint32_t)last;
  return 0;
}

/* Equations 2 and 3 on a line: the nonzero columns, each value divisible by the sum of
 * those after it; the last must be 1. Fills columns and reduced values (last = 1). */
static int reduce_simple(const uint64_t *line, uint32_t width, uint32_t *columns, uint64_t *reduced,
                         uint32_t *count) {
  uint32_t k = 0;
  for (uint32_t j = 0; j < width; j++)
    if (line[j]) columns[k++] = j;
  if (k < 2 || line[columns[k - 1]] != 1) return 0;
  for (uint32_t i = 0; i < k; i++) {
    uint64_t after = 0;
    for (uint32_t j = i + 1; j < k; j++)
      after += line[columns[j]];
    if (i == k - 1) {
      reduced[i] = 1;
      break;
    }
    if (line[columns[i]] % after) return 0;
    reduced[i] = line[columns[i]] / after;
  }
  *count = k;
  return 1;
}

static int finish_pattern(ms_stride_decoding *out, uint32_t *items, uint32_t item_count,
                          uint64_t repeat) {
  if (repeat > 1) {
    int64_t group = ms_expr_group(&out->pattern, items, item_count, repeat);
    if (group < 0) return (int)group;
    items[0] = (uint32_t)group;
    item_count = 1;
  }
  out->repeat = repeat;
  return ms_expr_finish(&out->pattern, items, item_count);
}

static void set_row(ms_stride_decoding *out, uint32_t row, const uint32_t *columns,
                    const uint64_t *values, uint32_t count) {
  if (row >= 16) return;
  for (uint32_t i = 0; i < count; i++)
    if (columns[i] < 32) out->reduced[row][columns[i]] = values[i];
}

/* master: the master line (a row, or the final counts); repeat: its repeat value, or 0
 * for the count of the last line's final stride; new_column: the master's new stride. */
static int decode_complex(const int64_t *strides, const uint64_t *rows, uint32_t width,
                          const uint32_t *dominant, uint32_t dominant_count, const uint64_t *master,
                          uint64_t repeat, uint32_t new_column, ms_stride_decoding *out) {
  uint64_t line[64], previous[64] = {0};
  uint32_t columns[64], items[256], item_count = 0, finals[64];
  uint64_t reduced[64];
  for (uint32_t k = 0; k < dominant_count; k++) {
    const uint64_t *row = rows + (size_t)dominant[k] * width;
    for (uint32_t j = 0; j < width; j++)
      line[j] = row[j] - (row[j] >= previous[j] ? previous[j] : row[j]); /* equation 5 */
    if (k > 0 && line[finals[k - 1]] > 0) line[finals[k - 1]]--;         /* equation 6 */
    uint32_t count;
    if (!reduce_simple(line, width, columns, reduced, &count)) return 0;
    finals[k] = columns[count - 1];
    set_row(out, k, columns, reduced, count);
    int rc = build_chain(&out->pattern, strides, columns, reduced, count - 1, items, &item_count);
    if (rc < 0) return rc;
    memcpy(previous, row, width * sizeof *row);
  }
  /* The master line (equation 7): the finals of the lines above; its diagonal repeats. */
  uint64_t master_line[64] = {0};
  for (uint32_t k = 0; k < dominant_count; k++)
    master_line[finals[k]] = master[finals[k]] - (k + 1 < dominant_count && master[finals[k]]);
  if (new_column < width) master_line[new_column] = 1;
  if (dominant_count < 16)
    for (uint32_t j = 0; j < width && j < 32; j++)
      out->reduced[dominant_count][j] = master_line[j];
  if (repeat == 0) repeat = master[finals[dominant_count - 1]];
  if (repeat == 0) return 0;
  out->cls = MS_STRIDE_COMPLEX_REPEAT;
  out->pattern_count = dominant_count;
  int rc = finish_pattern(out, items, item_count, repeat);
  return rc < 0 ? rc : 1;
}

static int decode_rows(const int64_t *strides, const uint64_t *counts, uint32_t unique,
                       const uint64_t *rows, uint32_t row_count, uint32_t width,
                       ms_stride_decoding *out) {
  memset(out, 0, sizeof *out);
  ms_expr_init(&out->pattern);
  out->cls = MS_STRIDE_UNDESIGNATED;
  if (unique > 64 || width > 64 || (unique > 0 && row_count + 1 > unique))
    return ms_expr_finish(&out->pattern, NULL, 0);
  uint32_t items[256], item_count = 0, columns[64];
  uint64_t reduced[64];
  if (unique <= 1) {
    out->cls = MS_STRIDE_CONSTANT;
    out->pattern_count = unique;
    if (unique == 0) return ms_expr_finish(&out->pattern, NULL, 0);
    int64_t id = ms_expr_leaf(&out->pattern, strides[0], counts[0]);
    if (id < 0) return (int)id;
    items[0] = (uint32_t)id;
    out->reduced[0][0] = counts[0];
    out->repeat = 1;
    return ms_expr_finish(&out->pattern, items, 1);
  }
  /* Dominant lines (definition 1) before the last row. */
  uint32_t dominant[64], dominant_count = 0;
  for (uint32_t i = 0; i + 2 < row_count; i++)
    if (rows[(size_t)(i + 1) * width + i + 1] == 1) dominant[dominant_count++] = i;
  if (dominant_count > 0) {
    /* Either the last row closes the last pattern and the final counts are the master
     * line, or (Table III) the last row is the master line, taken when a new phase began. */
    dominant[dominant_count] = row_count - 1;
    int rc =
        decode_complex(strides, rows, width, dominant, dominant_count + 1, counts, 0, width, out);
    if (rc == 0) {
      ms_expr_free(&out->pattern);
      memset(out->reduced, 0, sizeof out->reduced);
      dominant[dominant_count] = row_count - 2;
      const uint64_t *master = rows + (size_t)(row_count - 1) * width;
      rc = decode_complex(strides, rows, width, dominant, dominant_count + 1, master,
                          master[row_count - 1], row_count, out);
    }
    if (rc != 0) return rc < 0 ? rc : 0;
    ms_expr_free(&out->pattern);
    memset(out->reduced, 0, sizeof out->reduced);
    out->cls = MS_STRIDE_UNDESIGNATED;
    return ms_expr_finish(&out->pattern, NULL, 0);
  }
  const uint64_t *last = rows + (size_t)(row_count - 1) * width;
  uint32_t count;
  if (reduce_simple(last, width, columns, reduced, &count) && count == row_count + 1) {
    out->cls = MS_STRIDE_SIMPLE_REPEAT;
    out->pattern_count = 1;
    set_row(out, 0, columns, reduced, count);
    int rc = build_chain(&out->pattern, strides, columns, reduced, count - 1, items, &item_count);
    if (rc < 0) return rc;
    return finish_pattern(out, items, item_count, counts[columns[count - 1]]);
  }
  /* The diagonal chain: the first phase. */
  for (uint32_t i = 0; i < row_count; i++) {
    columns[i] = i;
    reduced[i] = rows[(size_t)i * width + i];
    if (reduced[i] == 0) return ms_expr_finish(&out->pattern, NULL, 0);
  }
  columns[row_count] = row_count;
  reduced[row_count] = 1;
  out->cls = MS_STRIDE_SIMPLE_ALTERNATING;
  out->pattern_count = 1;
  set_row(out, 0, columns, reduced, row_count + 1);
  int rc = build_chain(&out->pattern, strides, columns, reduced, row_count, items, &item_count);
  if (rc < 0) return rc;
  return finish_pattern(out, items, item_count, 1);
}

/* A pattern too long to build (MS_ERR_ARG from build_chain) is no pattern: undesignated. */
int ms_stride_history_decode_rows(const int64_t *strides, const uint64_t *counts, uint32_t unique,
                                  const uint64_t *rows, uint32_t row_count, uint32_t width,
                                  ms_stride_decoding *out) {
  int rc = decode_rows(strides, counts, unique, rows, row_count, width, out);
  if (rc != MS_ERR_ARG) return rc;
  ms_expr_free(&out->pattern);
  memset(out, 0, sizeof *out);
  out->cls = MS_STRIDE_UNDESIGNATED;
  return ms_expr_finish(&out->pattern, NULL, 0);
}

int ms_stride_history_decode(const ms_stride_history *history, ms_stride_decoding *out) {
  if (history->overflowed) {
    memset(out, 0, sizeof *out);
    out->cls = MS_STRIDE_UNDESIGNATED;
    return ms_expr_finish(&out->pattern, NULL, 0);
  }
  return ms_stride_history_decode_rows(history->strides, history->counts, history->unique,
                                       history->rows, history->unique ? history->unique - 1 : 0,
                                       history->width, out);
}

void ms_stride_decoding_free(ms_stride_decoding *decoding) { ms_expr_free(&decoding->pattern); }

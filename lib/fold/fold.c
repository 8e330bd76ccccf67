/* Online, exact compression of an integer sequence into nested repetitions (RSD/PRSD).
 *
 * Model: Algorithm 1 of scalamemtrace-budanur-mueller-gamblin-2010.txt (section 2.1). The
 * fold keeps the last W top-level terms (the window); a term is a value repeated `count`
 * times or a group (an immutable body of terms) repeated `count` times. When the newest
 * terms repeat the k terms before them (k <= W/2) the two copies merge into (body)^2; when
 * they equal the body of the group just before them, that group's count grows. Groups of
 * groups are the nested loops. Terms pushed out of the window are final.
 *
 * Two refinements keep it fast and make it fold loop nests into their loop structure:
 * - Prediction. The newest term is "open": while the input repeats it, nothing is built.
 *   A value term x^n predicts x; a group predicts the elements of its body, read from an
 *   expanded copy when the body has at most FOLD_PREDICT_FLAT_MAX elements, else walked by
 *   a small stack (fold_predict_frame). A value equal to the prediction costs two compares
 *   (ms_fold_push); a completed body iteration increments the group's count.
 * - Lazy closing. The window is searched only when the newest term is closed, i.e. when a
 *   value breaks its prediction; a run is thus merged with its final count: `x a^3 x a^4`
 *   stays so, rather than becoming `(x a^3)^2 a`. When a prediction breaks in the middle of
 *   a body iteration, the part already seen is appended as terms (the prefix of the body's
 *   structure: whole terms, then `inner^r`, then the partial inner iteration).
 *
 * Exactness: every operation rewrites terms into terms with the same expansion (merges
 * compare whole terms; interning makes term equality a compare of value, count and body
 * id), so the expansion always equals the input. The window search filters candidate
 * lengths on the newest term, rejects them with a polynomial hash of the window (win_hash)
 * and verifies survivors term by term: a push that is not predicted costs O(W).
 */
#include "fold_internal.h"

#include "memsnap/error.h"

#include <stdlib.h>
#include <string.h>

#define FOLD_HASH_BASE 0xff51afd7ed558ccdULL

static uint64_t fold_term_hash(const ms_fold_term *term) {
  uint64_t h = (uint64_t)term->value * 0x9e3779b97f4a7c15ULL;
  h ^= term->count * 0xc2b2ae3d27d4eb4fULL;
  h ^= ((uint64_t)term->group + 1) * 0x165667b19e3779f9ULL;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 32;
  return h;
}

static bool terms_equal(const ms_fold_term *a, const ms_fold_term *b, uint32_t count) {
  for (uint32_t i = 0; i < count; i++)
    if (a[i].value != b[i].value || a[i].count != b[i].count || a[i].group != b[i].group)
      return false;
  return true;
}

static uint64_t term_nodes(const ms_fold *fold, const ms_fold_term *term) {
  return term->group ? fold_saturating_add(fold->seqs[term->group].nodes, 1) : 1;
}

/* ---- Allocation ---------------------------------------------------------------------- */

ms_fold_options ms_fold_options_default(void) {
  ms_fold_options options = {MS_FOLD_DEFAULT_WINDOW, MS_FOLD_DEFAULT_MAX_NODES};
  return options;
}

ms_fold *fold_alloc(uint32_t window, uint64_t max_nodes) {
  ms_fold *fold = calloc(1, sizeof *fold);
  if (!fold) return NULL;
  fold->window = window;
  fold->max_nodes = max_nodes;
  fold->seq_capacity = 4;
  fold->seqs = calloc(fold->seq_capacity, sizeof *fold->seqs);
  fold->seq_count = 1; /* sequence 0: the top level */
  if (!fold->seqs) {
    free(fold);
    return NULL;
  }
  return fold;
}

int ms_fold_new(const ms_fold_options *options, ms_fold **out) {
  *out = NULL;
  ms_fold_options chosen = options ? *options : ms_fold_options_default();
  if (chosen.window == 0) chosen.window = MS_FOLD_DEFAULT_WINDOW;
  if (chosen.window < 2 || chosen.window > MS_FOLD_MAX_WINDOW)
    return ms_error_set(MS_ERR_ARG, "fold window %u: must be between 2 and %u",
                        (unsigned)chosen.window, (unsigned)MS_FOLD_MAX_WINDOW);
  ms_fold *fold = fold_alloc(chosen.window, chosen.max_nodes);
  if (!fold) return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
  *out = fold;
  return MS_OK;
}

void ms_fold_free(ms_fold *fold) {
  if (!fold) return;
  free(fold->seqs);
  free(fold->pool);
  free(fold->pool_before_length);
  free(fold->pool_before_sum);
  free(fold->top);
  free(fold->top_before_length);
  free(fold->top_before_sum);
  free(fold->intern);
  free(fold->win);
  free(fold->win_hash);
  free(fold->predict);
  free(fold->predict_flat);
  free(fold->flat);
  free(fold);
}

static bool grow(void **array, size_t element, size_t *capacity, size_t needed) {
  if (needed <= *capacity) return true;
  size_t next = *capacity ? *capacity : 16;
  while (next < needed)
    next *= 2;
  void *grown = realloc(*array, next * element);
  if (!grown) return false;
  *array = grown;
  *capacity = next;
  return true;
}

static bool grow_pool(ms_fold *fold, size_t needed) {
  if (needed > UINT32_MAX) return false;
  if (needed <= fold->pool_capacity) return true;
  size_t next = fold->pool_capacity ? fold->pool_capacity : 64;
  while (next < needed)
    next *= 2;
  if (next > UINT32_MAX) next = UINT32_MAX;
  size_t capacity = fold->pool_capacity;
  if (!grow((void **)&fold->pool, sizeof *fold->pool, &capacity, next)) return false;
  capacity = fold->pool_capacity;
  if (!grow((void **)&fold->pool_before_length, sizeof(uint64_t), &capacity, next)) return false;
  capacity = fold->pool_capacity;
  if (!grow((void **)&fold->pool_before_sum, sizeof(uint64_t), &capacity, next)) return false;
  fold->pool_capacity = (uint32_t)capacity;
  return true;
}

int fold_top_append(ms_fold *fold, const ms_fold_term *term) {
  if (fold->top_count == UINT32_MAX) /* cursors index terms with 32 bits */
    return ms_error_set(MS_ERR_NOMEM, "fold: more than 2^32-1 top-level terms");
  if (fold->top_count == fold->top_capacity) {
    size_t capacity = fold->top_capacity;
    if (!grow((void **)&fold->top, sizeof *fold->top, &capacity, fold->top_count + 1))
      return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    fold->top_capacity = capacity;
  }
  fold->top[fold->top_count++] = *term;
  return MS_OK;
}

/* ---- Sequences (bodies) -------------------------------------------------------------- */

bool fold_term_length(const ms_fold *fold, const ms_fold_term *term, uint64_t *length) {
  uint64_t each = term->group ? fold->seqs[term->group].expanded : 1;
  return !fold_mul_overflows(each, term->count, length);
}

uint32_t fold_sequence_create(ms_fold *fold, const ms_fold_term *terms, uint32_t count,
                              uint64_t hash, int *status) {
  if (fold->seq_count == UINT32_MAX || !grow_pool(fold, (size_t)fold->pool_count + count)) {
    *status = ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    return 0;
  }
  if (fold->seq_count == fold->seq_capacity) {
    size_t capacity = fold->seq_capacity;
    if (!grow((void **)&fold->seqs, sizeof *fold->seqs, &capacity, fold->seq_count + 1ULL) ||
        capacity > UINT32_MAX) {
      *status = ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
      return 0;
    }
    fold->seq_capacity = (uint32_t)capacity;
  }
  fold_sequence seq = {0};
  seq.first = fold->pool_count;
  seq.length = count;
  seq.hash = hash;
  seq.flat = FOLD_NO_FLAT;
  uint32_t deepest = 0;
  for (uint32_t i = 0; i < count; i++) {
    const ms_fold_term *term = &terms[i];
    uint64_t length;
    if (!fold_term_length(fold, term, &length) ||
        fold_add_overflows(seq.expanded, length, &length)) {
      *status = ms_error_set(MS_ERR_FORMAT, "expanded length exceeds 2^64-1");
      return 0;
    }
    fold->pool[seq.first + i] = *term;
    fold->pool_before_length[seq.first + i] = seq.expanded;
    fold->pool_before_sum[seq.first + i] = seq.sum;
    seq.expanded = length;
    uint64_t each = term->group ? fold->seqs[term->group].sum : (uint64_t)term->value;
    seq.sum += each * term->count;
    seq.nodes = fold_saturating_add(seq.nodes, term_nodes(fold, term));
    if (term->group && fold->seqs[term->group].depth > deepest)
      deepest = fold->seqs[term->group].depth;
  }
  seq.depth = deepest + 1;
  fold->pool_count += count;
  fold->seqs[fold->seq_count] = seq;
  *status = MS_OK;
  return fold->seq_count++;
}

static uint32_t intern_find(const ms_fold *fold, const ms_fold_term *terms, uint32_t count,
                            uint64_t hash) {
  if (!fold->intern_capacity) return 0;
  uint32_t mask = fold->intern_capacity - 1;
  for (uint32_t slot = (uint32_t)hash & mask; fold->intern[slot]; slot = (slot + 1) & mask) {
    const fold_sequence *seq = &fold->seqs[fold->intern[slot]];
    if (seq->hash == hash && seq->length == count &&
        terms_equal(&fold->pool[seq->first], terms, count))
      return fold->intern[slot];
  }
  return 0;
}

static void intern_place(uint32_t *table, uint32_t capacity, uint64_t hash, uint32_t id) {
  uint32_t mask = capacity - 1;
  uint32_t slot = (uint32_t)hash & mask;
  while (table[slot])
    slot = (slot + 1) & mask;
  table[slot] = id;
}

static int intern_insert(ms_fold *fold, uint32_t id) {
  if ((fold->intern_count + 1ULL) * 2 > fold->intern_capacity) {
    if (fold->intern_capacity > UINT32_MAX / 2)
      return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    uint32_t capacity = fold->intern_capacity ? fold->intern_capacity * 2 : 64;
    uint32_t *table = calloc(capacity, sizeof *table);
    if (!table) return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    for (uint32_t i = 0; i < fold->intern_capacity; i++)
      if (fold->intern[i])
        intern_place(table, capacity, fold->seqs[fold->intern[i]].hash, fold->intern[i]);
    free(fold->intern);
    fold->intern = table;
    fold->intern_capacity = capacity;
  }
  intern_place(fold->intern, fold->intern_capacity, fold->seqs[id].hash, id);
  fold->intern_count++;
  return MS_OK;
}

/* ---- Window -------------------------------------------------------------------------- */

static uint64_t hash_power(uint32_t k) {
  uint64_t result = 1, base = FOLD_HASH_BASE;
  for (; k; k >>= 1, base *= base)
    if (k & 1) result *= base;
  return result;
}

/* Hash of win[begin .. begin + k), given power = FOLD_HASH_BASE^k. */
static inline uint64_t range_hash(const ms_fold *fold, uint32_t begin, uint32_t k, uint64_t power) {
  return fold->win_hash[begin + k] - fold->win_hash[begin] * power;
}

static void window_rehash(ms_fold *fold, uint32_t from) {
  for (uint32_t i = from; i < fold->win_count; i++)
    fold->win_hash[i + 1] = fold->win_hash[i] * FOLD_HASH_BASE + fold_term_hash(&fold->win[i]);
}

static void window_tail_changed(ms_fold *fold) { window_rehash(fold, fold->win_count - 1); }

/* Makes room by finalizing the terms older than the window (amortized O(1) per term). */
static int window_flush(ms_fold *fold, uint32_t keep) {
  if (fold->win_count <= keep) return MS_OK;
  uint32_t moved = fold->win_count - keep;
  for (uint32_t i = 0; i < moved; i++) {
    int status = fold_top_append(fold, &fold->win[i]);
    if (status != MS_OK) return status;
  }
  memmove(fold->win, fold->win + moved, keep * sizeof *fold->win);
  fold->win_count = keep;
  window_rehash(fold, 0);
  return MS_OK;
}

static int window_append(ms_fold *fold, const ms_fold_term *term) {
  if (fold->win_count == fold->win_capacity) {
    if (fold->win_capacity < 2 * fold->window) {
      /* grown on demand: most folds of a profile hold a few terms */
      uint32_t capacity = fold->win_capacity ? 2 * fold->win_capacity : 8;
      if (capacity > 2 * fold->window) capacity = 2 * fold->window;
      ms_fold_term *terms = realloc(fold->win, capacity * sizeof *terms);
      if (terms) fold->win = terms;
      uint64_t *hashes = realloc(fold->win_hash, (capacity + 1) * sizeof *hashes);
      if (hashes) fold->win_hash = hashes;
      if (!terms || !hashes) return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
      if (fold->win_capacity == 0) fold->win_hash[0] = 0;
      fold->win_capacity = capacity;
    } else {
      int status = window_flush(fold, fold->window);
      if (status != MS_OK) return status;
    }
  }
  fold->win[fold->win_count++] = *term;
  window_tail_changed(fold);
  fold->nodes = fold_saturating_add(fold->nodes, term_nodes(fold, term));
  return MS_OK;
}

static void nodes_remove(ms_fold *fold, uint64_t removed) {
  if (fold->nodes != UINT64_MAX) fold->nodes -= removed;
}

/* One step of Algorithm 1 on the closed window: the smallest k (<= W/2) for which the
 * newest k terms equal the body of the group just before them (that group's count grows),
 * or equal the k terms before them (the two copies become (body)^2). */
static int reduce_once(ms_fold *fold, bool *changed) {
  *changed = false;
  uint32_t n = fold->win_count;
  uint32_t span = n < fold->window ? n : fold->window;
  const ms_fold_term *newest = &fold->win[n - 1];
  for (uint32_t k = 1; k <= span / 2; k++) {
    /* Candidates are filtered on the newest term alone (a load and a compare per k) before
     * the range hashes are computed: 4x fewer instructions per push on irregular input. */
    ms_fold_term *before = &fold->win[n - 1 - k];
    bool extend = before->group && fold->seqs[before->group].length == k &&
                  terms_equal(&fold->pool[fold->seqs[before->group].first + k - 1], newest, 1);
    bool repeat = 2 * k <= span && terms_equal(&fold->win[n - 1 - k], newest, 1);
    if (!extend && !repeat) continue;
    uint64_t power = hash_power(k);
    uint64_t tail = range_hash(fold, n - k, k, power);
    if (extend) {
      const fold_sequence *body = &fold->seqs[before->group];
      if (body->hash == tail && terms_equal(&fold->pool[body->first], &fold->win[n - k], k)) {
        before->count++;
        nodes_remove(fold, body->nodes);
        fold->win_count -= k;
        window_tail_changed(fold);
        *changed = true;
        return MS_OK;
      }
    }
    if (repeat && tail == range_hash(fold, n - 2 * k, k, power) &&
        terms_equal(&fold->win[n - 2 * k], &fold->win[n - k], k)) {
      const ms_fold_term *copy = &fold->win[n - k];
      uint32_t id = intern_find(fold, copy, k, tail);
      if (!id) {
        int status;
        id = fold_sequence_create(fold, copy, k, tail, &status);
        if (!id) return status;
        status = intern_insert(fold, id);
        if (status != MS_OK) return status;
      }
      uint64_t body_nodes = fold->seqs[id].nodes;
      nodes_remove(fold, body_nodes);
      nodes_remove(fold, body_nodes);
      fold->win_count -= 2 * k;
      ms_fold_term group = {0, 2, id};
      int status = window_append(fold, &group);
      if (status != MS_OK) return status;
      *changed = true;
      return MS_OK;
    }
  }
  return MS_OK;
}

static int reduce_all(ms_fold *fold) {
  bool changed = true;
  while (changed) {
    int status = reduce_once(fold, &changed);
    if (status != MS_OK) return status;
  }
  return MS_OK;
}

/* Appends a closed term (a piece of a broken prediction): the previous newest term is
 * closed by it, so the window is reduced first; equal value runs join. */
static int append_term(ms_fold *fold, const ms_fold_term *term) {
  if (fold->win_count) {
    ms_fold_term *tail = &fold->win[fold->win_count - 1];
    if (!tail->group && !term->group && tail->value == term->value) {
      tail->count += term->count;
      window_tail_changed(fold);
      return MS_OK;
    }
  }
  int status = reduce_all(fold);
  if (status != MS_OK) return status;
  return window_append(fold, term);
}

/* ---- Prediction inside the newest group ---------------------------------------------- */

static const ms_fold_term *predict_term(const ms_fold *fold, const fold_predict_frame *frame) {
  return &fold->pool[fold->seqs[frame->sequence].first + frame->index];
}

static int predict_push(ms_fold *fold, uint32_t sequence) {
  if (fold->predict_depth == fold->predict_capacity) {
    size_t capacity = fold->predict_capacity;
    if (!grow((void **)&fold->predict, sizeof *fold->predict, &capacity,
              fold->predict_depth + 1ULL))
      return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    fold->predict_capacity = (uint32_t)capacity;
  }
  fold->predict[fold->predict_depth++] = (fold_predict_frame){sequence, 0, 0};
  return MS_OK;
}

/* Descends from the current term to the first value of it; that value is the prediction. */
static int predict_descend(ms_fold *fold) {
  for (;;) {
    fold_predict_frame *frame = &fold->predict[fold->predict_depth - 1];
    const ms_fold_term *term = predict_term(fold, frame);
    if (!term->group) {
      fold->expect = term->value;
      fold->expect_left = term->count - frame->rep;
      return MS_OK;
    }
    int status = predict_push(fold, term->group);
    if (status != MS_OK) return status;
  }
}

static int predict_start(ms_fold *fold, uint32_t body) {
  fold->predict_depth = 0;
  int status = predict_push(fold, body);
  if (status != MS_OK) return status;
  return predict_descend(fold);
}

/* Records in the walk how much of the current value term the fast path consumed. */
static void predict_sync(ms_fold *fold) {
  fold_predict_frame *frame = &fold->predict[fold->predict_depth - 1];
  frame->rep = predict_term(fold, frame)->count - fold->expect_left;
}

/* Moves past an exhausted value term; *wrapped tells that a body iteration completed
 * (the walk then restarts at the beginning of the body). */
static int predict_advance(ms_fold *fold, bool *wrapped) {
  *wrapped = false;
  fold_predict_frame *frame = &fold->predict[fold->predict_depth - 1];
  frame->index++;
  frame->rep = 0;
  for (;;) {
    if (frame->index < fold->seqs[frame->sequence].length) return predict_descend(fold);
    uint32_t finished = frame->sequence;
    if (--fold->predict_depth == 0) {
      *wrapped = true;
      return predict_start(fold, finished);
    }
    frame = &fold->predict[fold->predict_depth - 1];
    const ms_fold_term *term = predict_term(fold, frame);
    if (++frame->rep < term->count) {
      int status = predict_push(fold, term->group);
      if (status != MS_OK) return status;
      return predict_descend(fold);
    }
    frame->index++;
    frame->rep = 0;
  }
}

/* Places the walk at element `index` of one iteration of `body` (binary search per level). */
static int predict_seek(ms_fold *fold, uint32_t body, uint64_t index) {
  fold->predict_depth = 0;
  uint32_t sequence = body;
  for (;;) {
    int status = predict_push(fold, sequence);
    if (status != MS_OK) return status;
    fold_predict_frame *frame = &fold->predict[fold->predict_depth - 1];
    const fold_sequence *seq = &fold->seqs[sequence];
    const uint64_t *before = &fold->pool_before_length[seq->first];
    uint32_t low = 0, high = seq->length;
    while (high - low > 1) {
      uint32_t middle = low + (high - low) / 2;
      if (before[middle] <= index)
        low = middle;
      else
        high = middle;
    }
    const ms_fold_term *term = &fold->pool[seq->first + low];
    uint64_t inside = index - before[low];
    frame->index = low;
    if (!term->group) {
      frame->rep = inside;
      return MS_OK;
    }
    uint64_t body_length = fold->seqs[term->group].expanded;
    frame->rep = inside / body_length;
    index = inside % body_length;
    sequence = term->group;
  }
}

static void flat_fill(const ms_fold *fold, uint32_t sequence, int64_t *out, uint32_t *at) {
  const fold_sequence *seq = &fold->seqs[sequence];
  for (uint32_t i = 0; i < seq->length; i++) {
    const ms_fold_term *term = &fold->pool[seq->first + i];
    for (uint64_t r = 0; r < term->count; r++) {
      if (term->group)
        flat_fill(fold, term->group, out, at);
      else
        out[(*at)++] = term->value;
    }
  }
}

/* Expands a small body (<= FOLD_PREDICT_FLAT_MAX elements) for the flat prediction. */
static int flat_prepare(ms_fold *fold, uint32_t body) {
  if (fold->predict_flat_body == body) return MS_OK;
  if (!fold->predict_flat) {
    fold->predict_flat = malloc(FOLD_PREDICT_FLAT_MAX * sizeof *fold->predict_flat);
    if (!fold->predict_flat) return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
  }
  uint32_t length = 0;
  flat_fill(fold, body, fold->predict_flat, &length);
  fold->predict_flat_body = body;
  fold->predict_flat_length = length;
  return MS_OK;
}

/* Predicts the run of equal values that starts at `start` in the flat body. */
static void flat_run(ms_fold *fold, uint32_t start) {
  const int64_t *flat = fold->predict_flat;
  uint32_t end = start + 1;
  while (end < fold->predict_flat_length && flat[end] == flat[start])
    end++;
  fold->run_start = start;
  fold->run_length = end - start;
  fold->expect = flat[start];
  fold->expect_left = end - start;
}

static bool predict_at_start(const ms_fold *fold) {
  for (uint32_t d = 0; d < fold->predict_depth; d++)
    if (fold->predict[d].index != 0 || fold->predict[d].rep != 0) return false;
  return true;
}

/* Appends the part of the body iteration seen so far as terms, outermost level first. */
static int predict_materialize(ms_fold *fold) {
  for (uint32_t d = 0; d < fold->predict_depth; d++) {
    fold_predict_frame frame = fold->predict[d];
    int status;
    for (uint32_t j = 0; j < frame.index; j++) {
      ms_fold_term whole = fold->pool[fold->seqs[frame.sequence].first + j];
      if ((status = append_term(fold, &whole)) != MS_OK) return status;
    }
    ms_fold_term current = *predict_term(fold, &frame);
    if (frame.rep == 0) continue;
    if (!current.group || frame.rep >= 2) { /* x^rep, or (body)^rep */
      ms_fold_term part = {current.value, frame.rep, current.group};
      if ((status = append_term(fold, &part)) != MS_OK) return status;
    } else { /* one whole iteration: the body's terms themselves */
      for (uint32_t j = 0; j < fold->seqs[current.group].length; j++) {
        ms_fold_term whole = fold->pool[fold->seqs[current.group].first + j];
        if ((status = append_term(fold, &whole)) != MS_OK) return status;
      }
    }
  }
  return MS_OK;
}

/* Closes the newest term: writes back what the fast path counted and, for a group whose
 * current iteration is partial, appends that partial iteration as terms. */
static int close_prediction(ms_fold *fold) {
  int status = MS_OK;
  if (fold->mode == FOLD_PREDICT_VALUE) {
    if (fold->expect_left != UINT64_MAX) {
      fold->win[fold->win_count - 1].count += UINT64_MAX - fold->expect_left;
      window_tail_changed(fold);
    }
  } else if (fold->mode == FOLD_PREDICT_FLAT) {
    uint64_t consumed = fold->run_start + fold->run_length - fold->expect_left;
    if (consumed == fold->predict_flat_length) {
      fold->pending_iterations++;
      consumed = 0;
    }
    fold->win[fold->win_count - 1].count += fold->pending_iterations;
    fold->pending_iterations = 0;
    window_tail_changed(fold);
    fold->mode = FOLD_PREDICT_NONE;
    if (consumed) {
      status = predict_seek(fold, fold->predict_flat_body, consumed);
      if (status == MS_OK) status = predict_materialize(fold);
    }
  } else if (fold->mode == FOLD_PREDICT_GROUP) {
    if (fold->expect_left == 0) {
      bool wrapped;
      predict_sync(fold);
      if ((status = predict_advance(fold, &wrapped)) != MS_OK) return status;
      fold->pending_iterations += wrapped;
    }
    fold->win[fold->win_count - 1].count += fold->pending_iterations;
    fold->pending_iterations = 0;
    window_tail_changed(fold);
    predict_sync(fold);
    fold->mode = FOLD_PREDICT_NONE;
    if (!predict_at_start(fold)) status = predict_materialize(fold);
  }
  fold->mode = FOLD_PREDICT_NONE;
  fold->expect_left = 0;
  fold->predict_depth = 0;
  return status;
}

static int64_t first_element(const ms_fold *fold, uint32_t sequence) {
  for (;;) {
    const ms_fold_term *term = &fold->pool[fold->seqs[sequence].first];
    if (!term->group) return term->value;
    sequence = term->group;
  }
}

/* Appends a value after the newest term was closed: it joins an equal value run, opens a
 * new iteration of the newest group if it starts its body, or else starts a new term once
 * the window is reduced (each reduction may leave a new group that it starts). */
static int append_value(ms_fold *fold, int64_t value) {
  for (;;) {
    if (fold->win_count) {
      ms_fold_term *tail = &fold->win[fold->win_count - 1];
      if (!tail->group && tail->value == value) {
        tail->count++;
        window_tail_changed(fold);
        fold->mode = FOLD_PREDICT_VALUE;
        fold->expect = value;
        fold->expect_left = UINT64_MAX;
        return MS_OK;
      }
      if (tail->group && first_element(fold, tail->group) == value) {
        int status;
        if (fold->seqs[tail->group].expanded <= FOLD_PREDICT_FLAT_MAX) {
          if ((status = flat_prepare(fold, tail->group)) != MS_OK) return status;
          flat_run(fold, 0);
          fold->mode = FOLD_PREDICT_FLAT;
        } else {
          if ((status = predict_start(fold, tail->group)) != MS_OK) return status;
          fold->mode = FOLD_PREDICT_GROUP;
        }
        fold->expect_left--;
        return MS_OK;
      }
    }
    bool changed;
    int status = reduce_once(fold, &changed);
    if (status != MS_OK) return status;
    if (!changed) break;
  }
  ms_fold_term term = {value, 1, 0};
  int status = window_append(fold, &term);
  if (status != MS_OK) return status;
  fold->mode = FOLD_PREDICT_VALUE;
  fold->expect = value;
  fold->expect_left = UINT64_MAX;
  return MS_OK;
}

/* Kept out of line: inlined into ms_fold_push, its register saves ran before the fast
 * path's compare (predicted push 4.5 ns of CPU time, constant stride, 50 M pushes; 2.6 ns
 * out of line, with fold->length apart from fold->expect_left - see fold_internal.h). */
__attribute__((noinline)) static int push_slow(ms_fold *fold, int64_t value) {
  if (fold->finished) return ms_error_set(MS_ERR_ARG, "fold: push after finish");
  if (fold->over_cap) return MS_FOLD_OVER_CAP;
  int status;
  if ((status = close_prediction(fold)) != MS_OK) return status;
  if ((status = append_value(fold, value)) != MS_OK) return status;
  fold->length++;
  if (fold->max_nodes && fold->nodes > fold->max_nodes) {
    if ((status = close_prediction(fold)) != MS_OK) return status;
    fold->over_cap = true;
  }
  return MS_OK;
}

/* The next run of a small body predicted from its expanded copy. Separate from push_slow
 * and without its register saves: 8.5 -> 5.3-6.7 ns per push of (s0 s1 s2 s3 s4)^n
 * (pushbench, CPU time; the walk of the body instead of the copy cost 17-21 ns). */
__attribute__((noinline)) static int push_flat(ms_fold *fold, int64_t value) {
  if (fold->expect_left == 0) {
    uint32_t next = fold->run_start + fold->run_length;
    if (next == fold->predict_flat_length) { /* an iteration of the body completed */
      fold->pending_iterations++;
      next = 0;
    }
    flat_run(fold, next);
    if (value == fold->expect) {
      fold->expect_left--;
      fold->length++;
      return MS_OK;
    }
  }
  return push_slow(fold, value);
}

/* The next value term of a larger body, found by the walk (amortized O(1)); separate from
 * push_slow for the same reason as push_flat (bench_fold psnap-2d, CPU time on the shared
 * 2-core machine: 5.3 ns per push before, 3.1-4.1 ns after). */
__attribute__((noinline)) static int push_walk(ms_fold *fold, int64_t value) {
  if (fold->expect_left == 0) {
    bool wrapped;
    predict_sync(fold);
    int status = predict_advance(fold, &wrapped);
    if (status != MS_OK) return status;
    fold->pending_iterations += wrapped;
    if (value == fold->expect) {
      fold->expect_left--;
      fold->length++;
      return MS_OK;
    }
  }
  return push_slow(fold, value);
}

int ms_fold_push(ms_fold *fold, int64_t value) {
  if (value == fold->expect && fold->expect_left != 0) {
    fold->expect_left--;
    fold->length++;
    return MS_OK;
  }
  if (fold->mode == FOLD_PREDICT_FLAT) return push_flat(fold, value);
  if (fold->mode == FOLD_PREDICT_GROUP) return push_walk(fold, value);
  return push_slow(fold, value);
}

int ms_fold_push_many(ms_fold *fold, const int64_t *values, size_t count) {
  for (size_t i = 0; i < count; i++) {
    int status = ms_fold_push(fold, values[i]);
    if (status != MS_OK) return status;
  }
  return MS_OK;
}

int ms_fold_finish(ms_fold *fold) {
  if (fold->finished) return MS_OK;
  int status = close_prediction(fold);
  if (status == MS_OK) status = reduce_all(fold);
  if (status == MS_OK) status = window_flush(fold, 0);
  if (status == MS_OK) status = fold_seal(fold);
  return status;
}

bool ms_fold_over_cap(const ms_fold *fold) { return fold->over_cap; }
uint64_t ms_fold_length(const ms_fold *fold) { return fold->length; }
uint64_t ms_fold_node_count(const ms_fold *fold) { return fold->nodes; }

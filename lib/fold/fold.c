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
  h ^= (uint64_t)term->steps * 0x94d049bb133111ebULL;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 32;
  return h;
}

/* A term is three 8-byte words (no padding: group and steps share the last), compared as
 * such: field by field, the window search of irregular input cost 30% more per push. */
_Static_assert(sizeof(ms_fold_term) == 24, "a term is three 8-byte words");

static inline uint64_t term_word(const ms_fold_term *term) {
  uint64_t word;
  memcpy(&word, &term->group, sizeof word);
  return word;
}

static bool terms_equal(const ms_fold_term *a, const ms_fold_term *b, uint32_t count) {
  for (uint32_t i = 0; i < count; i++)
    if (a[i].value != b[i].value || a[i].count != b[i].count ||
        term_word(&a[i]) != term_word(&b[i]))
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
  if (window > MS_FOLD_DEFAULT_WINDOW) {
    /* positions < 2W; ends < 2W + W/2 (a body has at most W/2 terms) */
    uint32_t buckets = 4 * window;
    fold->indexed_search = true;
    fold->index_mask = buckets - 1; /* window is a power of two (ms_fold_new) */
    fold->shape_head = calloc(buckets, sizeof *fold->shape_head);
    fold->end_head = calloc(buckets, sizeof *fold->end_head);
    fold->shape_next = malloc(2 * window * sizeof *fold->shape_next);
    fold->shape_of = malloc(2 * window * sizeof *fold->shape_of);
    fold->end_next = malloc(2 * window * sizeof *fold->end_next);
    fold->end_of = malloc(2 * window * sizeof *fold->end_of);
    /* FOLD_HASH_BASE^k for k <= W: a wide window's candidates are many (an order of sites
     * meets each site dozens of times in 1024 terms), and exponentiating per candidate
     * took 11% of profiling cg's trace */
    fold->powers = malloc((window + 1) * sizeof *fold->powers);
    if (fold->powers) {
      fold->powers[0] = 1;
      for (uint32_t k = 1; k <= window; k++)
        fold->powers[k] = fold->powers[k - 1] * FOLD_HASH_BASE;
    }
    if (!fold->shape_head || !fold->end_head || !fold->shape_next || !fold->shape_of ||
        !fold->end_next || !fold->end_of || !fold->powers) {
      ms_fold_free(fold);
      return NULL;
    }
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
  if (chosen.window > MS_FOLD_DEFAULT_WINDOW && (chosen.window & (chosen.window - 1)))
    return ms_error_set(MS_ERR_ARG, "fold window %u: over %u it must be a power of two",
                        (unsigned)chosen.window, (unsigned)MS_FOLD_DEFAULT_WINDOW);
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
  free(fold->intern);
  free(fold->win);
  free(fold->win_hash);
  free(fold->predict);
  free(fold->predict_flat);
  free(fold->steps);
  free(fold->step_table);
  free(fold->powers);
  free(fold->body_steps);
  free(fold->shape_head);
  free(fold->shape_next);
  free(fold->shape_of);
  free(fold->end_head);
  free(fold->end_next);
  free(fold->end_of);
  free(fold);
}

ms_fold_steps ms_fold_term_steps(const ms_fold *fold, const ms_fold_term *term) {
  return fold_steps_of(fold, term);
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

static bool steps_equal(const ms_fold *fold, const ms_fold_steps *a, const ms_fold_steps *b) {
  if (a->value_step != b->value_step || a->count_step != b->count_step ||
      a->body_steps != b->body_steps)
    return false;
  for (uint32_t j = 0; j < a->body_steps; j++) {
    const ms_fold_steps *x = &fold->body_steps[a->body_first + j];
    const ms_fold_steps *y = &fold->body_steps[b->body_first + j];
    if (x->value_step != y->value_step || x->count_step != y->count_step) return false;
  }
  return true;
}

static uint32_t steps_slot(const ms_fold *fold, const ms_fold_steps *steps) {
  uint64_t h = (uint64_t)steps->value_step * 0x9e3779b97f4a7c15ULL ^
               (uint64_t)steps->count_step * 0xc2b2ae3d27d4eb4fULL ^ steps->body_steps;
  for (uint32_t j = 0; j < steps->body_steps; j++) {
    const ms_fold_steps *body = &fold->body_steps[steps->body_first + j];
    h = h * 0x100000001b3ULL + (uint64_t)body->value_step * 0x9e3779b97f4a7c15ULL +
        (uint64_t)body->count_step;
  }
  h ^= h >> 31;
  uint32_t mask = fold->step_table_capacity - 1, slot = (uint32_t)h & mask;
  for (;;) {
    uint32_t at = fold->step_table[slot];
    if (!at || steps_equal(fold, &fold->steps[at], steps)) return slot;
    slot = (slot + 1) & mask;
  }
}

/* Equal steps get one index (so that the bodies of successive rows of a doubly triangular
 * nest are one interned sequence); `steps` may name body steps at the end of the pool,
 * which are dropped again when the same steps were kept before. */
static uint32_t steps_intern(ms_fold *fold, ms_fold_steps steps) {
  if (fold->step_count == 0) fold->step_count = 1; /* entry 0: no steps */
  if (fold->step_table_capacity) {
    uint32_t at = fold->step_table[steps_slot(fold, &steps)];
    if (at) {
      fold->body_step_count -= steps.body_steps;
      return at;
    }
  }
  if (fold->step_count >= fold->step_capacity) {
    size_t capacity = fold->step_capacity;
    if (fold->step_count == UINT32_MAX ||
        !grow((void **)&fold->steps, sizeof *fold->steps, &capacity, fold->step_count + 1ULL)) {
      ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
      return 0;
    }
    fold->step_capacity = (uint32_t)capacity;
  }
  if (2 * (uint64_t)fold->step_count >= fold->step_table_capacity) { /* rehash, half full */
    uint64_t capacity = fold->step_table_capacity ? 2 * (uint64_t)fold->step_table_capacity : 64;
    uint32_t *table = capacity > UINT32_MAX ? NULL : calloc(capacity, sizeof *table);
    if (!table) {
      ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
      return 0;
    }
    free(fold->step_table);
    fold->step_table = table;
    fold->step_table_capacity = (uint32_t)capacity;
    for (uint32_t i = 1; i < fold->step_count; i++)
      table[steps_slot(fold, &fold->steps[i])] = i;
  }
  fold->steps[fold->step_count] = steps;
  fold->step_table[steps_slot(fold, &steps)] = fold->step_count;
  return fold->step_count++;
}

uint32_t fold_steps_add(ms_fold *fold, int64_t value_step, int64_t count_step) {
  return steps_intern(fold, (ms_fold_steps){value_step, count_step, 0, 0});
}

uint32_t fold_steps_add_body(ms_fold *fold, int64_t count_step, const ms_fold_steps *body,
                             uint32_t length) {
  size_t capacity = fold->body_step_capacity;
  if ((uint64_t)fold->body_step_count + length > UINT32_MAX ||
      !grow((void **)&fold->body_steps, sizeof *fold->body_steps, &capacity,
            (size_t)fold->body_step_count + length)) {
    ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    return 0;
  }
  fold->body_step_capacity = (uint32_t)capacity;
  memcpy(fold->body_steps + fold->body_step_count, body, length * sizeof *body);
  ms_fold_steps steps = {0, count_step, length, fold->body_step_count};
  fold->body_step_count += length;
  return steps_intern(fold, steps);
}

ms_fold_steps ms_fold_body_steps(const ms_fold *fold, const ms_fold_steps *steps, uint32_t j) {
  ms_fold_steps none = {0, 0, 0, 0};
  if (j >= steps->body_steps) return none;
  return fold->body_steps[steps->body_first + j];
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
  if (term->group && fold->seqs[term->group].affine)
    return fold_iterations_length(fold, term->group, term->count, length);
  uint64_t each = term->group ? fold->seqs[term->group].expanded : 1;
  return !fold_mul_overflows(each, term->count, length);
}

/* Sum over q < r of (count + q * step), exactly; false when a count leaves [1, 2^64-1] or
 * the sum overflows. The counts are affine, so the sum is r * (first + last) / 2. */
static bool counts_total(uint64_t count, int64_t step, uint64_t r, uint64_t *total) {
  *total = 0;
  if (r == 0) return true;
  __int128 last = (__int128)count + (__int128)step * (__int128)(r - 1);
  if (last < 1 || last > (__int128)UINT64_MAX) return false;
  unsigned __int128 ends = (unsigned __int128)count + (unsigned __int128)last;
  unsigned __int128 sum = r % 2 == 0 ? (unsigned __int128)(r / 2) * ends
                                     : (unsigned __int128)r * (ends / 2); /* r odd: ends even */
  if (sum > UINT64_MAX) return false;
  *total = (uint64_t)sum;
  return true;
}

/* Elements of a term over iterations q < r of its enclosing body. A term whose own body
 * has steps (a doubly triangular nest) and whose count steps is summed iteration by
 * iteration: O(r), computed when such a body is made and when the fold finishes. */
static bool term_iterations_length(const ms_fold *fold, const ms_fold_term *term, uint64_t r,
                                   uint64_t *elements) {
  ms_fold_steps steps = fold_steps_of(fold, term);
  int64_t count_step = steps.count_step;
  if (steps.body_steps) { /* a body that changes with the enclosing group, O(r) */
    *elements = 0;
    for (uint64_t q = 0; q < r; q++) {
      __int128 count = fold_count_at(fold, term, q);
      uint64_t one, each;
      if (count < 1 || count > (__int128)UINT64_MAX ||
          !fold_body_length_at(fold, term->group, &steps, q, &one) ||
          fold_mul_overflows(one, (uint64_t)count, &each) ||
          fold_add_overflows(*elements, each, elements))
        return false;
    }
    return true;
  }
  if (!term->group || !fold->seqs[term->group].affine) {
    uint64_t counts, each = term->group ? fold->seqs[term->group].expanded : 1;
    return counts_total(term->count, count_step, r, &counts) &&
           !fold_mul_overflows(counts, each, elements);
  }
  uint64_t one;
  if (count_step == 0)
    return fold_iterations_length(fold, term->group, term->count, &one) &&
           !fold_mul_overflows(one, r, elements);
  *elements = 0;
  for (uint64_t q = 0; q < r; q++) {
    __int128 count = fold_count_at(fold, term, q);
    if (count < 1 || count > (__int128)UINT64_MAX ||
        !fold_iterations_length(fold, term->group, (uint64_t)count, &one) ||
        fold_add_overflows(*elements, one, elements))
      return false;
  }
  return true;
}

bool fold_body_length_at(const ms_fold *fold, uint32_t sequence, const ms_fold_steps *steps,
                         uint64_t r, uint64_t *length) {
  const fold_sequence *seq = &fold->seqs[sequence];
  *length = 0;
  for (uint32_t j = 0; j < seq->length; j++) {
    bool valid;
    ms_fold_term at = fold_body_term_at(fold, sequence, steps, j, r, &valid);
    uint64_t elements;
    if (!valid || !fold_term_length(fold, &at, &elements) ||
        fold_add_overflows(*length, elements, length))
      return false;
  }
  return true;
}

uint64_t fold_body_sum_at(const ms_fold *fold, uint32_t sequence, const ms_fold_steps *steps,
                          uint64_t r) {
  uint64_t sum = 0;
  for (uint32_t j = 0; j < fold->seqs[sequence].length; j++) {
    bool valid;
    ms_fold_term at = fold_body_term_at(fold, sequence, steps, j, r, &valid);
    sum += fold_term_sum(fold, &at);
  }
  return sum;
}

bool fold_iterations_length(const ms_fold *fold, uint32_t sequence, uint64_t r, uint64_t *length) {
  const fold_sequence *seq = &fold->seqs[sequence];
  if (!seq->affine) return !fold_mul_overflows(seq->expanded, r, length);
  uint64_t total = 0;
  for (uint32_t i = 0; i < seq->length; i++) {
    uint64_t elements;
    if (!term_iterations_length(fold, &fold->pool[seq->first + i], r, &elements) ||
        fold_add_overflows(total, elements, &total))
      return false;
  }
  *length = total;
  return true;
}

/* r(r-1)/2 and (r-1)r(2r-1)/6 (sums of q and q^2 over q < r), modulo 2^64: the divisions
 * are exact on the factors before the wrapping products. */
static uint64_t sum_of_indices(uint64_t r) {
  return r % 2 == 0 ? (r / 2) * (r - 1) : r * ((r - 1) / 2);
}
static uint64_t sum_of_squares(uint64_t r) {
  if (r == 0) return 0;
  unsigned __int128 factors[3] = {r - 1, r, 2 * (unsigned __int128)r - 1};
  for (int i = 0; i < 2; i++)
    if (factors[i] % 2 == 0) {
      factors[i] /= 2;
      break;
    }
  for (int i = 0; i < 3; i++)
    if (factors[i] % 3 == 0) {
      factors[i] /= 3;
      break;
    }
  return (uint64_t)factors[0] * (uint64_t)factors[1] * (uint64_t)factors[2];
}

uint64_t fold_iterations_sum(const ms_fold *fold, uint32_t sequence, uint64_t r) {
  const fold_sequence *seq = &fold->seqs[sequence];
  if (!seq->affine) return seq->sum * r;
  uint64_t indices = sum_of_indices(r), squares = sum_of_squares(r), total = 0;
  for (uint32_t i = 0; i < seq->length; i++) {
    const ms_fold_term *term = &fold->pool[seq->first + i];
    ms_fold_steps steps = fold_steps_of(fold, term);
    uint64_t count = term->count, count_step = (uint64_t)steps.count_step;
    if (steps.body_steps) { /* a body that changes with this group */
      for (uint64_t q = 0; q < r; q++)
        total += fold_body_sum_at(fold, term->group, &steps, q) * (count + count_step * q);
      continue;
    }
    if (term->group && fold->seqs[term->group].affine) { /* a body with steps of its own */
      if (count_step == 0) {
        total += fold_iterations_sum(fold, term->group, count) * r;
        continue;
      }
      for (uint64_t q = 0; q < r; q++)
        total += fold_iterations_sum(fold, term->group, count + count_step * q);
      continue;
    }
    if (term->group) { /* a constant body: its sum times the total count */
      total += fold->seqs[term->group].sum * (count * r + count_step * indices);
      continue;
    }
    /* sum over q of (c + q dc)(v + q dv) = c v r + (c dv + dc v) S1 + dc dv S2 */
    uint64_t value = (uint64_t)term->value, value_step = (uint64_t)steps.value_step;
    total += count * value * r + (count * value_step + count_step * value) * indices +
             count_step * value_step * squares;
  }
  return total;
}

uint64_t fold_term_sum(const ms_fold *fold, const ms_fold_term *term) {
  if (!term->group) return (uint64_t)term->value * term->count;
  return fold_iterations_sum(fold, term->group, term->count);
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
    seq.sum += fold_term_sum(fold, term);
    seq.nodes = fold_saturating_add(seq.nodes, term_nodes(fold, term));
    if (fold_term_has_step(term)) seq.affine = true;
    if ((term->group && fold->seqs[term->group].affine) || fold_steps_of(fold, term).body_steps)
      seq.nested = true;
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

static uint64_t hash_power(const ms_fold *fold, uint32_t k) {
  if (fold->powers) return fold->powers[k];
  uint64_t result = 1, base = FOLD_HASH_BASE;
  for (; k; k >>= 1, base *= base)
    if (k & 1) result *= base;
  return result;
}

/* Hash of win[begin .. begin + k), given power = FOLD_HASH_BASE^k. */
static inline uint64_t range_hash(const ms_fold *fold, uint32_t begin, uint32_t k, uint64_t power) {
  return fold->win_hash[begin + k] - fold->win_hash[begin] * power;
}

/* ---- Window index ----------------------------------------------------------------------
 * A window wider than the default is searched through an index instead of every length k:
 * the repetitions and extensions worth checking start at an earlier term of the newest
 * term's shape, or at a group whose body would end just before the newest term. The
 * window is a stack at its newest end, so the chains are too: positions are indexed
 * oldest first up to the term before the newest, and a change at position i unindexes
 * i and everything newer (window_rehash, which every change calls). */

static uint32_t shape_bucket(const ms_fold *fold, const ms_fold_term *term) {
  uint64_t h = (uint64_t)term->value * 0x9e3779b97f4a7c15ULL ^
               ((uint64_t)term->group + 1) * 0xc2b2ae3d27d4eb4fULL;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return (uint32_t)(h >> 32) & fold->index_mask;
}

static void index_drop(ms_fold *fold, uint32_t from) {
  while (fold->indexed > from) {
    uint32_t i = --fold->indexed;
    fold->shape_head[fold->shape_of[i]] = fold->shape_next[i];
    if (fold->end_of[i] != UINT32_MAX) fold->end_head[fold->end_of[i]] = fold->end_next[i];
  }
}

static void index_up_to(ms_fold *fold, uint32_t end) {
  while (fold->indexed < end) {
    uint32_t i = fold->indexed++;
    const ms_fold_term *term = &fold->win[i];
    uint32_t b = shape_bucket(fold, term);
    fold->shape_of[i] = b;
    fold->shape_next[i] = fold->shape_head[b];
    fold->shape_head[b] = i + 1;
    fold->end_of[i] = UINT32_MAX;
    if (term->group) {
      uint32_t e = i + fold->seqs[term->group].length;
      if (e <= fold->index_mask) { /* longer bodies never fit the window's search */
        fold->end_of[i] = e;
        fold->end_next[i] = fold->end_head[e];
        fold->end_head[e] = i + 1;
      }
    }
  }
}

static void window_rehash(ms_fold *fold, uint32_t from) {
  if (fold->indexed > from) index_drop(fold, from);
  for (uint32_t i = from; i < fold->win_count; i++)
    fold->win_hash[i + 1] = fold->win_hash[i] * FOLD_HASH_BASE + fold_term_hash(&fold->win[i]);
}

static void window_tail_changed(ms_fold *fold) {
  const ms_fold_term *tail = &fold->win[fold->win_count - 1];
  if (tail->group || tail->count > 1) fold->plain_run = 0;
  window_rehash(fold, fold->win_count - 1);
}

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
  fold->plain_run++;
  window_tail_changed(fold);
  fold->nodes = fold_saturating_add(fold->nodes, term_nodes(fold, term));
  return MS_OK;
}

static void nodes_remove(ms_fold *fold, uint64_t removed) {
  if (fold->nodes != UINT64_MAX) fold->nodes -= removed;
}

/* True when a term's body varies (steps): such a group is not repeated exactly (it may
 * only become a term with steps of a larger body with steps, affine_try). */
static bool has_affine_body(const ms_fold *fold, const ms_fold_term *terms, uint32_t count) {
  for (uint32_t i = 0; i < count; i++)
    if (terms[i].group && fold->seqs[terms[i].group].affine) return true;
  return false;
}

/* Whether `tail` (k terms) is iteration `group->count` of the affine group `group`. */
static bool affine_extends(const ms_fold *fold, const ms_fold_term *group, const ms_fold_term *tail,
                           uint32_t k) {
  const fold_sequence *body = &fold->seqs[group->group];
  for (uint32_t j = k; j-- > 0;) { /* newest first: most candidates fail there */
    const ms_fold_term *term = &fold->pool[body->first + j];
    __int128 count = fold_count_at(fold, term, group->count);
    if (count < 1 || count > (__int128)UINT64_MAX) return false;
    ms_fold_term at = fold_term_at(fold, term, group->count);
    ms_fold_steps steps = fold_steps_of(fold, term);
    if (steps.body_steps) { /* the tail's body is this body in that iteration */
      const fold_sequence *seq = &fold->seqs[term->group];
      if (!tail[j].group || tail[j].count != at.count || tail[j].steps) return false;
      const fold_sequence *other = &fold->seqs[tail[j].group];
      if (other->length != seq->length || other->affine || other->nested) return false;
      for (uint32_t i = 0; i < seq->length; i++) {
        bool valid;
        ms_fold_term inner = fold_body_term_at(fold, term->group, &steps, i, group->count, &valid);
        if (!valid || !terms_equal(&inner, &fold->pool[other->first + i], 1)) return false;
      }
      continue;
    }
    if (!terms_equal(&at, &tail[j], 1)) return false;
  }
  return true;
}

/* Iterations seen before a body with steps is made (see affine_create). */
#define FOLD_AFFINE_COPIES 4
/* Longest body that may change with an outer loop (bodies_step). */
#define FOLD_BODY_STEPS_MAX 64

/* Whether the bodies of group terms t[0], t[k], t[2k], ... (one per copy) are one body that
 * steps: the same length, no steps of their own, term by term the same group (or both
 * values), values and counts changing by one step each from copy to copy, and some count
 * among them (LU's trailing update: the k loop's count grows by one each row, and the
 * stride back with it). Values alone are not enough: distinct small loops one after the
 * other, `(s1 s2)^2 (s3 s4)^2 ...`, would become one body with steps that a loop around
 * them could then not repeat. Fills body[] with those steps. */
static bool bodies_step(const ms_fold *fold, const ms_fold_term *t, uint32_t k, ms_fold_steps *body,
                        uint32_t room, uint32_t *length) {
  const fold_sequence *first = &fold->seqs[t->group];
  if (first->affine || first->nested || first->length > room) return false;
  for (uint32_t copy = 1; copy < FOLD_AFFINE_COPIES; copy++) {
    const fold_sequence *seq = &fold->seqs[t[copy * k].group];
    if (!t[copy * k].group || seq->affine || seq->nested || seq->length != first->length)
      return false;
  }
  bool counts = false;
  for (uint32_t j = 0; j < first->length; j++) {
    const ms_fold_term *a = &fold->pool[first->first + j];
    const ms_fold_term *b = &fold->pool[fold->seqs[t[k].group].first + j];
    uint64_t value_step = (uint64_t)b->value - (uint64_t)a->value;
    __int128 count_step = (__int128)b->count - (__int128)a->count;
    if (count_step < INT64_MIN || count_step > INT64_MAX) return false;
    for (uint32_t copy = 1; copy < FOLD_AFFINE_COPIES; copy++) {
      const ms_fold_term *before = &fold->pool[fold->seqs[t[(copy - 1) * k].group].first + j];
      const ms_fold_term *next = &fold->pool[fold->seqs[t[copy * k].group].first + j];
      if (next->group != a->group || next->steps ||
          (uint64_t)next->value - (uint64_t)before->value != value_step ||
          (__int128)next->count - (__int128)before->count != count_step)
        return false;
    }
    body[j] = (ms_fold_steps){(int64_t)value_step, (int64_t)count_step, 0, 0};
    counts |= count_step != 0;
  }
  *length = first->length;
  return counts;
}

/* Terms t[0], t[k], t[2k], ... (FOLD_AFFINE_COPIES of them) in an arithmetic progression:
 * same body (one with steps of its own too: a doubly triangular nest), values and counts
 * changing by one step each. Bodies that differ may step too (bodies_step). */
static bool similar_terms(const ms_fold *fold, const ms_fold_term *t, uint32_t k) {
  const ms_fold_term *a = t, *b = t + k;
  uint64_t value_step = (uint64_t)b->value - (uint64_t)a->value;
  __int128 count_step = (__int128)b->count - (__int128)a->count;
  if (count_step < INT64_MIN || count_step > INT64_MAX) return false;
  bool bodies = false;
  for (uint32_t copy = 1; copy < FOLD_AFFINE_COPIES; copy++) {
    const ms_fold_term *before = t + (copy - 1) * k, *next = t + copy * k;
    if ((uint64_t)next->value - (uint64_t)before->value != value_step ||
        (__int128)next->count - (__int128)before->count != count_step)
      return false;
    if (next->group != a->group) {
      if (!a->group || !next->group) return false;
      bodies = true;
    }
  }
  if (bodies) {
    ms_fold_steps body[FOLD_BODY_STEPS_MAX];
    uint32_t length = 0;
    return bodies_step(fold, t, k, body, FOLD_BODY_STEPS_MAX, &length);
  }
  return true;
}

/* The non-rectangular step: the newest 4k terms are four iterations of one body whose
 * counts (and values) change by constant steps (a triangular loop's inner count, a reset
 * stride that shrinks with it); they become (body with steps)^4. Tried only when no exact
 * repetition applies, so exact folds are unchanged; only for a body of two terms or more
 * with a count that changes (an inner loop and what follows it); and on four iterations,
 * not two (any two bodies of one shape differ by some step) nor three: a body with steps
 * is never repeated exactly (only a larger body with steps may hold it), so a progression
 * taken by chance inside a larger loop keeps that loop from folding, and with three copies
 * test_fold's generated nests met such chances (`c^3 d^2 e^3 f^3 g^3 h^4` in a nest of
 * letters). */
/* The affine step for bodies of k terms (affine_create). */
static int affine_try(ms_fold *fold, uint32_t k, bool *changed) {
  uint32_t n = fold->win_count;
  ms_fold_term *a = &fold->win[n - FOLD_AFFINE_COPIES * k], *b = a + k;
  if (!similar_terms(fold, &a[k - 1], k)) return MS_OK;
  bool similar = true, counts_differ = false;
  for (uint32_t j = 0; j < k && similar; j++) {
    similar = similar_terms(fold, &a[j], k);
    counts_differ |= a[j].count != b[j].count || a[j].group != b[j].group;
  }
  if (!similar || !counts_differ) return MS_OK;
  uint64_t hash = 0;
  for (uint32_t j = 0; j < k; j++) {
    int64_t value_step = (int64_t)((uint64_t)b[j].value - (uint64_t)a[j].value);
    int64_t count_step = (int64_t)(b[j].count - a[j].count);
    if (a[j].group != b[j].group) { /* a body that steps with this one */
      ms_fold_steps body[FOLD_BODY_STEPS_MAX];
      uint32_t length = 0;
      if (!bodies_step(fold, &a[j], k, body, FOLD_BODY_STEPS_MAX, &length))
        return MS_OK; /* not reached: similar_terms checked every term */
      if (!(a[j].steps = fold_steps_add_body(fold, count_step, body, length)))
        return MS_ERR_NOMEM;
    } else if ((value_step || count_step) &&
               !(a[j].steps = fold_steps_add(fold, value_step, count_step)))
      return MS_ERR_NOMEM;
    hash = hash * FOLD_HASH_BASE + fold_term_hash(&a[j]);
  }
  uint32_t id = intern_find(fold, a, k, hash);
  int status;
  if (!id) {
    id = fold_sequence_create(fold, a, k, hash, &status);
    if (!id) return status;
    if ((status = intern_insert(fold, id)) != MS_OK) return status;
  }
  uint64_t body_nodes = fold->seqs[id].nodes;
  for (int copy = 0; copy < FOLD_AFFINE_COPIES; copy++)
    nodes_remove(fold, body_nodes);
  fold->win_count -= FOLD_AFFINE_COPIES * k;
  ms_fold_term group = {0, FOLD_AFFINE_COPIES, id, 0};
  if ((status = window_append(fold, &group)) != MS_OK) return status;
  *changed = true;
  return MS_OK;
}

__attribute__((noinline)) static int affine_create(ms_fold *fold, bool *changed) {
  uint32_t n = fold->win_count;
  uint32_t span = n < fold->window ? n : fold->window;
  /* A count that changes needs a term of count > 1 or a group among the 4k newest: none
   * in the newest plain_run, so the search starts past them. Irregular input never gets
   * further (bench_fold irregular push: 180x the read loop with the search, 76x without). */
  uint32_t plain = fold->plain_run < n ? fold->plain_run : n;
  uint32_t first = plain / FOLD_AFFINE_COPIES + 1;
  if (first < 2) first = 2;
  /* A body of one term steps only as four groups whose bodies step (the rows of LU's order
   * of sites, `(s4 s5 (s6..s8)^159)^159 (s4 s5 (s6..s8)^158)^158 ...`): values or counts
   * alone in progression are too often chance. */
  if (plain == 0 && n >= FOLD_AFFINE_COPIES && span >= FOLD_AFFINE_COPIES) {
    const ms_fold_term *t = &fold->win[n - FOLD_AFFINE_COPIES];
    bool bodies = t->group != 0;
    for (uint32_t copy = 1; copy < FOLD_AFFINE_COPIES && bodies; copy++)
      bodies = t[copy].group && t[copy].group != t[copy - 1].group;
    ms_fold_steps body[FOLD_BODY_STEPS_MAX];
    uint32_t length = 0;
    if (bodies && bodies_step(fold, t, 1, body, FOLD_BODY_STEPS_MAX, &length)) {
      int status = affine_try(fold, 1, changed);
      if (status != MS_OK || *changed) return status;
    }
  }
  if (fold->indexed_search) {
    /* Through the index: bodies whose newest term keeps its value (the order of sites,
     * which wide windows are for, has counts that step, never values). */
    for (uint32_t at = fold->shape_head[shape_bucket(fold, &fold->win[n - 1])]; at;
         at = fold->shape_next[at - 1]) {
      uint32_t k = n - at;
      if (FOLD_AFFINE_COPIES * k > span) break;
      if (k < first) continue;
      int status = affine_try(fold, k, changed);
      if (status != MS_OK || *changed) return status;
    }
    return MS_OK;
  }
  for (uint32_t k = first; FOLD_AFFINE_COPIES * k <= span; k++) {
    int status = affine_try(fold, k, changed);
    if (status != MS_OK || *changed) return status;
  }
  return MS_OK;
}

/* One step of Algorithm 1 on the closed window: the smallest k (<= W/2) for which the
 * newest k terms equal the body of the group just before them (that group's count grows),
 * or equal the k terms before them (the two copies become (body)^2); failing both, the
 * affine step (affine_create). */
/* Repetition or extension with a body of k terms (reduce_once). */
static int reduce_at(ms_fold *fold, uint32_t k, bool *changed) {
  uint32_t n = fold->win_count;
  uint32_t span = n < fold->window ? n : fold->window;
  const ms_fold_term *newest = &fold->win[n - 1];
  /* Candidates are filtered on the newest term alone (a load and a compare per k) before
   * the range hashes are computed: 4x fewer instructions per push on irregular input. */
  ms_fold_term *before = &fold->win[n - 1 - k];
  const fold_sequence *before_body = before->group ? &fold->seqs[before->group] : NULL;
  if (before_body && before_body->affine) {
    if (before_body->length == k && affine_extends(fold, before, &fold->win[n - k], k)) {
      before->count++;
      nodes_remove(fold, before_body->nodes);
      fold->win_count -= k;
      window_tail_changed(fold);
      *changed = true;
      return MS_OK;
    }
    before_body = NULL;
  }
  bool extend = before_body && before_body->length == k &&
                terms_equal(&fold->pool[before_body->first + k - 1], newest, 1);
  bool repeat = 2 * k <= span && terms_equal(&fold->win[n - 1 - k], newest, 1);
  if (!extend && !repeat) return MS_OK;
  uint64_t power = hash_power(fold, k);
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
      terms_equal(&fold->win[n - 2 * k], &fold->win[n - k], k) &&
      !has_affine_body(fold, &fold->win[n - k], k)) {
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
    ms_fold_term group = {0, 2, id, 0};
    int status = window_append(fold, &group);
    if (status != MS_OK) return status;
    *changed = true;
    return MS_OK;
  }
  return MS_OK;
}

static int reduce_once(ms_fold *fold, bool *changed) {
  *changed = false;
  uint32_t n = fold->win_count;
  if (n < 2) return MS_OK;
  uint32_t span = n < fold->window ? n : fold->window;
  /* Bodies of up to W/2 terms: a repetition needs 2k terms in the window, an extension
   * k + 1 (the group and its next iteration), so a window that a reduction left shorter
   * than W still extends its groups (a group with steps and one more iteration after it,
   * alone in the window: LU's trailing update). */
  uint32_t most = span - 1 < fold->window / 2 ? span - 1 : fold->window / 2;
  if (fold->indexed_search) {
    /* the k of an earlier term of the newest's shape, or of a group ending before it, in
     * increasing order: the chains run newest first */
    index_up_to(fold, n - 1);
    uint32_t shape = fold->shape_head[shape_bucket(fold, &fold->win[n - 1])];
    uint32_t end = n - 1 <= fold->index_mask ? fold->end_head[n - 1] : 0;
    while (shape || end) {
      uint32_t at = shape > end ? shape : end;
      if (shape == at) shape = fold->shape_next[at - 1];
      if (end == at) end = fold->end_next[at - 1];
      uint32_t k = n - at;
      if (k > most) break;
      int status = reduce_at(fold, k, changed);
      if (status != MS_OK || *changed) return status;
    }
  } else
    for (uint32_t k = 1; k <= most; k++) {
      int status = reduce_at(fold, k, changed);
      if (status != MS_OK || *changed) return status;
    }
  return affine_create(fold, changed);
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
      ms_fold_term part = {current.value, frame.rep, current.group, 0};
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
  fold->predict_affine = false;
  return status;
}

static int64_t first_element(const ms_fold *fold, uint32_t sequence) {
  for (;;) {
    const ms_fold_term *term = &fold->pool[fold->seqs[sequence].first];
    if (!term->group) return term->value;
    sequence = term->group;
  }
}

/* Writes iteration r of the affine body `body` into the instance sequence (created, or
 * re-created larger, on demand); *valid is false when a count of that iteration would leave
 * [1, 2^64-1] (the group cannot continue). */
static int instance_fill(ms_fold *fold, uint32_t body, uint64_t r, bool *valid) {
  *valid = false;
  uint32_t length = fold->seqs[body].length;
  if (!fold->instance || fold->instance_room < length) {
    ms_fold_term *copy = malloc(length * sizeof *copy);
    if (!copy) return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    memcpy(copy, &fold->pool[fold->seqs[body].first], length * sizeof *copy);
    int status;
    uint32_t id = fold_sequence_create(fold, copy, length, 0, &status);
    free(copy);
    if (!id) return status;
    fold->instance = id;
    fold->instance_room = length;
  }
  const fold_sequence *seq = &fold->seqs[body];
  fold_sequence *instance = &fold->seqs[fold->instance];
  uint64_t expanded = 0, sum = 0, nodes = 0;
  uint32_t deepest = 0;
  for (uint32_t i = 0; i < length; i++) {
    const ms_fold_term *term = &fold->pool[seq->first + i];
    __int128 count = fold_count_at(fold, term, r);
    if (count < 1 || count > (__int128)UINT64_MAX) return MS_OK;
    ms_fold_term at = fold_term_at(fold, term, r);
    uint64_t elements;
    if (!fold_term_length(fold, &at, &elements) ||
        fold_add_overflows(expanded, elements, &elements))
      return MS_OK;
    fold->pool[instance->first + i] = at;
    fold->pool_before_length[instance->first + i] = expanded;
    fold->pool_before_sum[instance->first + i] = sum;
    expanded = elements;
    sum += fold_term_sum(fold, &at);
    nodes = fold_saturating_add(nodes, term_nodes(fold, &at));
    if (at.group && fold->seqs[at.group].depth > deepest) deepest = fold->seqs[at.group].depth;
  }
  instance->length = length;
  instance->expanded = expanded;
  instance->sum = sum;
  instance->nodes = nodes;
  instance->depth = deepest + 1;
  fold->predict_flat_body = 0; /* the copy of the previous iteration is stale */
  *valid = true;
  return MS_OK;
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
      uint32_t body = tail->group;
      bool affine = body && fold->seqs[body].affine;
      /* A body with steps around a body with steps (a doubly triangular nest) is not
       * predicted (the walk steps one level): its next iteration is folded at the top
       * level, its inner body predicted there, and joins it in reduce_at. */
      if (affine && fold->seqs[body].nested) body = 0, affine = false;
      if (affine) { /* predicts the next iteration, written out in the instance */
        bool valid;
        int status = instance_fill(fold, body, tail->count, &valid);
        if (status != MS_OK) return status;
        body = valid ? fold->instance : 0;
      }
      if (body && first_element(fold, body) == value) {
        int status;
        /* an instance is walked, never copied: push_flat then needs no test for it (the
         * test there cost site-order pushes 1 ns in bench_fold) */
        if (!affine && fold->seqs[body].expanded <= FOLD_PREDICT_FLAT_MAX) {
          if ((status = flat_prepare(fold, body)) != MS_OK) return status;
          flat_run(fold, 0);
          fold->mode = FOLD_PREDICT_FLAT;
        } else {
          if ((status = predict_start(fold, body)) != MS_OK) return status;
          fold->mode = FOLD_PREDICT_GROUP;
        }
        fold->predict_affine = affine;
        fold->expect_left--;
        return MS_OK;
      }
    }
    bool changed;
    int status = reduce_once(fold, &changed);
    if (status != MS_OK) return status;
    if (!changed) break;
  }
  ms_fold_term term = {value, 1, 0, 0};
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
    if (wrapped && fold->predict_affine) return push_slow(fold, value); /* the next differs */
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

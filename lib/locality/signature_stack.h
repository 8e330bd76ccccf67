/* The signature model's LRU stack (internal to signature_model.c, signature_stack.c and
 * signature_loop.c): where a referenced line stands among the lines referenced before it.
 *
 * - Stack positions: the 8 most recent distinct lines sit in a small move-to-front window
 *   (position = index + 1, no table lookup). Older lines hold the logical time at which
 *   they left the window; a bitmap marks the times that are some line's last and a
 *   Fenwick tree counts the marks per 64-bit word, so the position of an older line is
 *   8 + 1 + the number of marks after its time: O(log(times / 64)) in 48 KiB that stay in
 *   L1/L2. Only positions up to 2^16 matter (larger ones miss at every depth and fall in
 *   the last reuse bin), so when the times run out they are renumbered for the 2^16 most
 *   recent lines and the older ones are marked "far".
 *   Measured on matmul 200 (16M accesses, a 200-line column walk: half the references
 *   leave the window): a plain Fenwick tree over 2^18 times took 4.2 s, this layout
 *   1.5 s. On stream_add and stencil2d nearly all references hit the window.
 * - Lines live in an open-addressing table whose slots are the records themselves: the
 *   line, its time and its tree in one aligned 64-byte cache line (default 7 levels), so
 *   a reference outside the window misses the caches once (gather 2000000: 1.06 s ->
 *   0.78 s user against a table of indices into separate records). Records move when the
 *   table grows; the window and the owners of the times are renumbered then.
 * - Each line keeps its tree of halves as two bit arrays in heap order (root 1, children
 *   2i and 2i+1): nodes visited, and the half chosen on the last visit.
 *
 * The operations a reference goes through are here, static inline: the loops of
 * signature_loop.c inline them. The rare ones (a new table, its growth, the renumbering of
 * the times) are in signature_stack.c.
 */
#ifndef MEMSNAP_SIGNATURE_STACK_H
#define MEMSNAP_SIGNATURE_STACK_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/error.h"
#include "signature_model_internal.h"

/* A zeroed table of `slots` records of `record_words` (NULL if out of memory). */
uint64_t *sig_table_new(size_t slots, size_t record_words);
/* Doubles the line table (0 or MS_ERR_NOMEM). */
int sig_grow_table(ms_signature_model *model);
/* Renumbers the times when they are exhausted. */
void sig_rebuild_times(ms_signature_model *model);

static inline uint64_t *record_of(const ms_signature_model *model, uint32_t state) {
  return model->table + (size_t)state * model->record_words;
}

static inline void set_time(uint64_t *record, uint32_t time) {
  record[RECORD_TIME] = (record[RECORD_TIME] & ~(uint64_t)UINT32_MAX) | time;
}

/* ---- marked times ---- */

static inline void word_fenwick_add(uint32_t *tree, uint32_t at, int32_t delta) {
  for (; at <= TIME_WORDS; at += at & (~at + 1))
    tree[at] += (uint32_t)delta;
}

static inline uint32_t word_fenwick_prefix(const uint32_t *tree, uint32_t at) {
  uint32_t sum = 0;
  for (; at > 0; at &= at - 1)
    sum += tree[at];
  return sum;
}

/* The builtin is one instruction where the caller is compiled for POPCNT (SLOW_PATH in
 * signature_loop.c), else a libgcc call. */
static inline uint32_t popcount64(uint64_t x) { return (uint32_t)__builtin_popcountll(x); }

/* The tree holds the words before the current one (now >> 6) only: a word is added once,
 * when the times move past it, so that marking the newest time (every line leaving the
 * window) costs a bit set instead of a tree walk, and unmarking a time of the current word
 * too. Measured with callgrind on matmul 200 (first 3M accesses): the tree's updates fell
 * from 57 to 29 instructions per access. */
static inline void time_mark(ms_signature_model *model, uint32_t time) { /* time == now */
  if ((time & 63) == 0 && time >> 6 >= TREE_LAG) /* word (time >> 6) - TREE_LAG joins */
    word_fenwick_add(model->word_fenwick, (time >> 6) - TREE_LAG + 1,
                     (int32_t)popcount64(model->time_bits[(time >> 6) - TREE_LAG]));
  model->time_bits[time >> 6] |= 1ull << (time & 63);
  model->marked++;
}

static inline void time_unmark(ms_signature_model *model, uint32_t time) {
  model->time_bits[time >> 6] &= ~(1ull << (time & 63));
  if ((time >> 6) + TREE_LAG <= model->now >> 6)
    word_fenwick_add(model->word_fenwick, (time >> 6) + 1, -1);
  model->marked--;
}

/* Marked times after `time`: the lines referenced since. Within TREE_LAG words of the current one
 * the words are counted directly (no tree walk). */
static inline uint32_t marks_after(const ms_signature_model *model, uint32_t time) {
  uint32_t word = time >> 6, bit = time & 63, current = model->now >> 6;
  uint64_t above = bit == 63 ? 0 : model->time_bits[word] >> (bit + 1);
  if (current - word < TREE_LAG) {
    uint32_t marks = popcount64(above);
    for (uint32_t at = word + 1; at <= current; at++)
      marks += popcount64(model->time_bits[at]);
    return marks;
  }
  return model->marked - word_fenwick_prefix(model->word_fenwick, word + 1) + popcount64(above);
}

/* ---- line table ---- */

/* ---- line table ---- */

/* The slot of a line key: Fibonacci hashing, the top bits of the product (a multiply and a
 * shift; an xor-shift, a multiply, a shift and a mask before). With the mask-based count of
 * the marks after a time in add_hist: matmul 16.8 -> 14.2 ns per access (bench_signature,
 * best of 3 interleaved; the other figures: docs/performance.md). */
static inline size_t hash_slot(uint64_t key, unsigned shift) {
  return (size_t)((key * 0x9e3779b97f4a7c15ull) >> shift);
}

/* Record of `line`, created if new (*cold = 1 then). */
static inline int find_line(ms_signature_model *model, uint64_t line, uint32_t *state, int *cold) {
  uint64_t key = line + 1;
  size_t words = model->record_words;
  for (;;) {
    size_t at = hash_slot(key, model->table_shift);
    uint64_t *record;
    while ((record = model->table + at * words)[RECORD_KEY]) {
      if (record[RECORD_KEY] == key) {
        *state = (uint32_t)at;
        *cold = 0;
        return MS_OK;
      }
      at = (at + 1) & model->table_mask;
    }
    if ((model->table_used + 1) * 2 > model->table_mask + 1) { /* grow, then look again */
      int rc = sig_grow_table(model);
      if (rc < 0) return rc;
      continue;
    }
    model->table_used++;
    record[RECORD_KEY] = key;
    record[RECORD_TIME] = TIME_FAR;
    *state = (uint32_t)at;
    *cold = 1;
    return MS_OK;
  }
}

/* ---- window ---- */

/* Puts `state` (its line `line`) at the front of the window; the line pushed out of a full
 * window gets the newest time. */
static inline void window_push(ms_signature_model *model, uint64_t line, uint32_t state) {
  uint32_t count = model->window_count;
  if (count == WINDOW) {
    if (model->now == TIME_SLOTS - 1) sig_rebuild_times(model);
    uint32_t evicted = model->window_state[WINDOW - 1];
    uint32_t time = ++model->now;
    set_time(record_of(model, evicted), time);
    model->time_state[time] = evicted;
    time_mark(model, time);
    count = WINDOW - 1;
  }
  uint64_t *window_line = model->window_line;
  uint32_t *window_state = model->window_state;
  switch (count) { /* entries 0..count-1 move down one (unused entries hold UINT64_MAX) */
  case 7: window_line[7] = window_line[6], window_state[7] = window_state[6]; /* fall through */
  case 6: window_line[6] = window_line[5], window_state[6] = window_state[5]; /* fall through */
  case 5: window_line[5] = window_line[4], window_state[5] = window_state[4]; /* fall through */
  case 4: window_line[4] = window_line[3], window_state[4] = window_state[3]; /* fall through */
  case 3: window_line[3] = window_line[2], window_state[3] = window_state[2]; /* fall through */
  case 2: window_line[2] = window_line[1], window_state[2] = window_state[1]; /* fall through */
  case 1: window_line[1] = window_line[0], window_state[1] = window_state[0]; /* fall through */
  default: break;
  }
  model->window_line[0] = line;
  model->window_state[0] = state;
  model->window_count = count + 1;
}

#endif

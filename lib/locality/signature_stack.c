/* The signature model's LRU stack, its rare operations: a new line table, its growth, and
 * the renumbering of the times when they run out (see signature_stack.h for the stack and
 * its operations per reference). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memsnap/error.h"
#include "signature_stack.h"

/* A zeroed table of `slots` records, aligned to cache lines; from 2 MiB on, aligned to
 * 2 MiB and backed by huge pages where the kernel has them (MADV_HUGEPAGE): a reference
 * outside the window misses the TLB on its record too, and the page walk stalled even the
 * prefetches: gather 3000000 29.7-35.1 -> 26.0-33.3 ns per access (bench_signature, 4
 * interleaved pairs; each pair and linked_list: docs/performance.md). */
uint64_t *sig_table_new(size_t slots, size_t record_words) {
  size_t bytes = slots * record_words * sizeof(uint64_t);
  size_t huge = (size_t)2 << 20;
  uint64_t *table = bytes >= huge ? aligned_alloc(huge, (bytes + huge - 1) / huge * huge)
                                  : aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!table) return NULL;
#ifdef MADV_HUGEPAGE
  if (bytes >= huge) madvise(table, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
  memset(table, 0, bytes);
  return table;
}

/* Times exhausted: the KEEP_LINES most recent lines get times 1..kept in order, the others
 * become far; bitmap and tree are rebuilt in linear time. */
void sig_rebuild_times(ms_signature_model *model) {
  uint32_t kept = 0;
  /* The marks from the newest down, a word at a time (a test per time took 5% of gather's
   * time: about 1 time in 5 is marked there). Times after `now` are never marked. */
  for (uint32_t word = model->now >> 6;; word--) {
    for (uint64_t bits = model->time_bits[word]; bits;) {
      uint32_t bit = 63u - (uint32_t)__builtin_clzll(bits);
      bits &= ~(1ull << bit);
      uint32_t state = model->time_state[word * 64 + bit];
      if (kept < KEEP_LINES)
        model->scratch[kept++] = state;
      else
        set_time(record_of(model, state), TIME_FAR);
    }
    if (word == 0) break;
  }
  memset(model->time_bits, 0, TIME_WORDS * sizeof *model->time_bits);
  memset(model->word_fenwick, 0, (TIME_WORDS + 1) * sizeof *model->word_fenwick);
  for (uint32_t time = 1; time <= kept; time++) {
    uint32_t state = model->scratch[kept - time];
    set_time(record_of(model, state), time);
    model->time_state[time] = state;
    model->time_bits[time >> 6] |= 1ull << (time & 63);
  }
  /* Linear construction: every node passes its sum to its parent, up to the last word. */
  for (uint32_t at = 1; at <= TIME_WORDS; at++) {
    if (at - 1 + TREE_LAG <= kept >> 6)
      model->word_fenwick[at] += popcount64(model->time_bits[at - 1]);
    uint32_t parent = at + (at & (~at + 1));
    if (parent <= TIME_WORDS) model->word_fenwick[parent] += model->word_fenwick[at];
  }
  model->now = kept;
  model->marked = kept;
}

/* Doubles the table; records move, so the window and the times' owners are renumbered. */
int sig_grow_table(ms_signature_model *model) {
  size_t old_slots = model->table_mask + 1, slots = old_slots * 2, mask = slots - 1;
  size_t words = model->record_words;
  uint64_t *table = sig_table_new(slots, words);
  uint32_t *remap = malloc(old_slots * sizeof *remap);
  if (!table || !remap || slots > UINT32_MAX) {
    free(table);
    free(remap);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature's line table");
  }
  for (size_t i = 0; i < old_slots; i++) {
    const uint64_t *record = model->table + i * words;
    if (!record[RECORD_KEY]) continue;
    size_t at = hash_slot(record[RECORD_KEY], model->table_shift - 1);
    while (table[at * words + RECORD_KEY])
      at = (at + 1) & mask;
    memcpy(table + at * words, record, words * sizeof *table);
    remap[i] = (uint32_t)at;
  }
  for (uint32_t k = 0; k < model->window_count; k++)
    model->window_state[k] = remap[model->window_state[k]];
  for (uint32_t time = 1; time <= model->now; time++)
    if (model->time_bits[time >> 6] >> (time & 63) & 1)
      model->time_state[time] = remap[model->time_state[time]];
  free(remap);
  free(model->table);
  model->table = table;
  model->table_mask = mask;
  model->table_shift--;
  return MS_OK;
}

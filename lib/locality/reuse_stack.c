/* Reuse distances by marks in time: see reuse_stack.h for the model.
 *
 * Invariants: bit t of `bits` is set iff time t (< now) is the latest reference of a live
 * block; the live blocks are exactly the hash table's entries, each with that time;
 * live <= capacity; no mark lies before `oldest`; fenwick sums popcount(bits[w]) over the
 * words w < flushed (flushed_marks is their total), the words after are counted directly.
 *
 * Why not the dissertation's LRU list with a marker at each depth (section 3.1): a deep
 * reference moves up to 17 markers, each onto a far-apart node (a cache miss each). On a
 * 54M-access matmul trace, 8 widths x 17 depths, that list ran at 65x one simulator pass
 * and this method, before its hash-table changes below, at 72x (same run conditions, a
 * loaded machine): no faster, but its work per reference is bounded by the Fenwick
 * tree's height whatever the distance, and its memory by the deepest depth.
 */
#include "reuse_stack.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memsnap/error.h"

/* Zeroed memory; blocks of 2 MB and more are aligned and asked for as huge pages (every
 * reference reads one random slot and, when the stack is full, removes another: with 4 KB
 * pages each is also a TLB miss). Exact surface, CPU time, interleaved runs on a loaded
 * machine: random_gather (8.2M accesses) 4.42 / 4.63 s -> 4.15 / 4.33 s, matmul 150
 * 2.19 / 2.31 s -> 1.92 / 2.12 s (one run of three the other way). */
static void *huge_calloc(size_t count, size_t size) {
  size_t bytes = count * size;
  if (bytes < (2u << 20)) return calloc(count, size);
  bytes = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  void *p = NULL;
  if (posix_memalign(&p, 2u << 20, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE);
#endif
  memset(p, 0, bytes);
  return p;
}

int reuse_stack_init(reuse_stack *stack, const uint64_t *thresholds, int count) {
  memset(stack, 0, sizeof *stack);
  stack->threshold_count = count;
  stack->capacity = (uint32_t)thresholds[count - 1];
  uint32_t slots = 1024; /* grows up to twice the capacity (rehash) */
  stack->slot_mask = slots - 1;
  stack->hash_shift = 64 - 10;
  stack->window = 1024;
  while (stack->window < 4 * stack->capacity)
    stack->window *= 2;
  stack->word_count = stack->window / 64;
  stack->thresholds = malloc((size_t)count * sizeof *stack->thresholds);
  stack->bits = calloc(stack->word_count, sizeof *stack->bits);
  stack->fenwick = calloc((size_t)stack->word_count + 1, sizeof *stack->fenwick);
  stack->time_block = huge_calloc(stack->window, sizeof *stack->time_block);
  stack->slots = calloc(slots, sizeof *stack->slots);
  if (!stack->thresholds || !stack->bits || !stack->fenwick || !stack->time_block ||
      !stack->slots) {
    reuse_stack_free(stack);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for reuse distances up to %u blocks",
                        (unsigned)thresholds[count - 1]);
  }
  memcpy(stack->thresholds, thresholds, (size_t)count * sizeof *thresholds);
  stack->powers_of_two = 1;
  for (int j = 0; j < count; j++)
    if (thresholds[j] != 1ull << j) stack->powers_of_two = 0;
  return MS_OK;
}

void reuse_stack_free(reuse_stack *stack) {
  free(stack->thresholds);
  free(stack->bits);
  free(stack->fenwick);
  free(stack->time_block);
  free(stack->slots);
  memset(stack, 0, sizeof *stack);
}

/* ---- the hash table: block -> time of its latest reference ---- */

static inline uint32_t find_slot(const reuse_stack *stack, uint64_t block) {
  uint32_t s = reuse_slot_of(stack, block);
  while (stack->slots[s].used && stack->slots[s].block != block)
    s = (s + 1) & stack->slot_mask;
  return s;
}

/* Removes the entry of a live block, shifting back the following run (no tombstones). */
static void remove_block(reuse_stack *stack, uint64_t block) {
  uint32_t hole = find_slot(stack, block);
  uint32_t s = hole;
  for (;;) {
    s = (s + 1) & stack->slot_mask;
    if (!stack->slots[s].used) break;
    uint32_t home = reuse_slot_of(stack, stack->slots[s].block);
    /* The entry at s may fill the hole iff its home is not in the cyclic range (hole, s]. */
    if (((s - home) & stack->slot_mask) >= ((s - hole) & stack->slot_mask)) {
      stack->slots[hole] = stack->slots[s];
      hole = s;
    }
  }
  stack->slots[hole].used = 0;
}

/* Doubles the table: a small footprint keeps a small, cache-resident table (the table is
 * the one random memory access per reference). */
static int grow(reuse_stack *stack) {
  reuse_slot *old = stack->slots;
  uint32_t old_count = stack->slot_mask + 1;
  reuse_slot *slots = huge_calloc((size_t)old_count * 2, sizeof *slots);
  if (!slots) return ms_error_set(MS_ERR_NOMEM, "out of memory for %u blocks", stack->live);
  stack->slots = slots;
  stack->slot_mask = old_count * 2 - 1;
  stack->hash_shift--;
  for (uint32_t i = 0; i < old_count; i++)
    if (old[i].used) stack->slots[find_slot(stack, old[i].block)] = old[i];
  free(old);
  return MS_OK;
}

/* ---- marks ---- */

/* Popcounts take 15% of the instructions of a reference (callgrind, matmul 60): the
 * reference is compiled twice, and the clone for CPUs with POPCNT (chosen at load time)
 * turns __builtin_popcountll into one instruction. The default clone calls libgcc (the
 * inline SWAR popcount was 6% faster there, but only pre-2008 x86 CPUs take that path).
 * Exact surface of matmul 60: 1.308 -> 1.135 G instructions; CPU time on the loaded
 * machine moved within its noise (random_gather 4.49 / 4.27 s -> 4.45 / 4.01 s). */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#endif
#endif
#ifndef POPCNT_CLONES
#define POPCNT_CLONES
#endif

static inline uint32_t popcount64(uint64_t x) { return (uint32_t)__builtin_popcountll(x); }

static inline void fenwick_add(reuse_stack *stack, uint32_t word, int32_t delta) {
  for (uint32_t i = word + 1; i <= stack->word_count; i += i & (0u - i))
    stack->fenwick[i] += (uint32_t)delta;
}

/* Marks in the words [0, word). */
static inline uint32_t fenwick_prefix(const reuse_stack *stack, uint32_t word) {
  uint32_t sum = 0;
  for (uint32_t i = word; i > 0; i &= i - 1)
    sum += stack->fenwick[i];
  return sum;
}

/* Marks are set at `now` only, so the Fenwick tree holds the complete words [0, flushed)
 * and a word enters it once, when its last time is set: one tree update per 64 references
 * instead of one per reference. */
static inline void set_mark(reuse_stack *stack, uint32_t t) {
  stack->bits[t >> 6] |= 1ull << (t & 63);
  if ((t & 63) == 63) {
    uint32_t marks = popcount64(stack->bits[t >> 6]);
    fenwick_add(stack, t >> 6, (int32_t)marks);
    stack->flushed_marks += marks;
    stack->flushed = (t >> 6) + 1;
  }
}

static inline void clear_mark(reuse_stack *stack, uint32_t t) {
  stack->bits[t >> 6] &= ~(1ull << (t & 63));
  if ((t >> 6) < stack->flushed) {
    fenwick_add(stack, t >> 6, -1);
    stack->flushed_marks--;
  }
}

/* Marks strictly after time t (all marks lie before now). */
static inline uint32_t marks_after(const reuse_stack *stack, uint32_t t) {
  uint32_t word = t >> 6, last_word = (stack->now - 1) >> 6;
  uint64_t after = (t & 63) == 63 ? 0 : stack->bits[word] & (~0ull << ((t & 63) + 1));
  uint32_t count = popcount64(after);
  if (last_word - word <= 4) { /* short gap: the words themselves */
    for (uint32_t w = word + 1; w <= last_word; w++)
      count += popcount64(stack->bits[w]);
    return count;
  }
  /* word + 1 < flushed here: the tree counts up to `flushed`, the words after directly */
  count += stack->flushed_marks - fenwick_prefix(stack, word + 1);
  for (uint32_t w = stack->flushed; w <= last_word; w++)
    count += popcount64(stack->bits[w]);
  return count;
}

/* Forgets the oldest live block. */
static void drop_oldest(reuse_stack *stack) {
  uint32_t w = stack->oldest >> 6;
  uint64_t word = stack->bits[w] & (~0ull << (stack->oldest & 63));
  while (!word)
    word = stack->bits[++w];
  uint32_t t = (w << 6) | (uint32_t)__builtin_ctzll(word);
  clear_mark(stack, t);
  remove_block(stack, stack->time_block[t]);
  stack->live--;
  stack->oldest = t + 1;
}

/* The window is used up: renumber the live marks 0..live-1 in order. */
static void compact(reuse_stack *stack) {
  uint32_t next = 0;
  for (uint32_t w = stack->oldest >> 6; w < stack->word_count; w++) {
    uint64_t word = stack->bits[w];
    while (word) {
      uint32_t t = (w << 6) | (uint32_t)__builtin_ctzll(word);
      word &= word - 1;
      uint64_t block = stack->time_block[t];
      stack->slots[find_slot(stack, block)].time = next;
      stack->time_block[next++] = block;
    }
  }
  memset(stack->bits, 0, stack->word_count * sizeof *stack->bits);
  memset(stack->fenwick, 0, ((size_t)stack->word_count + 1) * sizeof *stack->fenwick);
  for (uint32_t t = 0; t < next; t++)
    stack->bits[t >> 6] |= 1ull << (t & 63);
  stack->flushed = next >> 6;
  stack->flushed_marks = stack->flushed * 64;
  for (uint32_t w = 0; w < stack->word_count; w++) { /* linear-time Fenwick build */
    uint32_t i = w + 1;
    if (w < stack->flushed) stack->fenwick[i] += popcount64(stack->bits[w]);
    uint32_t parent = i + (i & (0u - i));
    if (parent <= stack->word_count) stack->fenwick[parent] += stack->fenwick[i];
  }
  stack->now = next;
  stack->oldest = 0;
}

static inline int zone_of(const reuse_stack *stack, uint64_t distance) {
  if (stack->powers_of_two) { /* #{j : 2^j <= distance} = floor(log2 distance) + 1 */
    int zone = distance ? 64 - __builtin_clzll(distance) : 0;
    return zone < stack->threshold_count ? zone : stack->threshold_count;
  }
  int lo = 0, hi = stack->threshold_count; /* first j with t_j > distance */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (stack->thresholds[mid] > distance)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

POPCNT_CLONES int reuse_stack_reference(reuse_stack *stack, uint64_t block) {
  if (stack->has_last && stack->last_block == block) return 0;
  stack->has_last = 1;
  stack->last_block = block;
  if (stack->now == stack->window) compact(stack);
  /* A full stack drops its oldest block at most once per reference: the slot of a block
   * a few marks past the oldest is fetched ahead (often one of the next drops). */
  if (stack->live >= stack->capacity && stack->oldest + 8 < stack->now)
    reuse_stack_prefetch(stack, stack->time_block[stack->oldest + 8]);
  uint32_t s = find_slot(stack, block);
  int zone;
  if (stack->slots[s].used) {
    uint32_t t = stack->slots[s].time;
    zone = zone_of(stack, marks_after(stack, t));
    clear_mark(stack, t);
  } else {
    zone = stack->threshold_count;
    if (2 * (stack->live + 1) > stack->slot_mask + 1) {
      if (grow(stack) < 0) return MS_ERR_NOMEM;
      s = find_slot(stack, block);
    }
    stack->slots[s].used = 1;
    stack->slots[s].block = block;
    stack->live++;
  }
  stack->slots[s].time = stack->now;
  stack->time_block[stack->now] = block;
  set_mark(stack, stack->now++);
  if (stack->live > stack->capacity) drop_oldest(stack);
  return zone;
}

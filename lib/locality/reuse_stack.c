/* Reuse distances by marks in time: see reuse_stack.h for the model.
 *
 * Invariants: bit t of `bits` is set iff time t (< now) is the latest reference of a live
 * block; the live blocks are exactly the hash table's entries, each with that time;
 * live <= capacity; no mark lies before `oldest`; times start at 1. For every boundary j,
 * after[j] + marks_set is the number of marks strictly after time boundary[j], unless
 * boundary[j] < oldest (stale: then every live mark is after it). The true boundary B_j
 * (the mark with t_j marks after it) is never before boundary[j], and no mark between the
 * two is cleared before B_j is resolved: a hit at t resolves every boundary at or after t,
 * and the drop of the oldest mark only concerns stale boundaries. Live never decreases, so
 * a boundary that exists keeps existing; one that does not yet is before every mark.
 *
 * Why lazy boundaries rather than the earlier Fenwick tree over per-word popcounts: the
 * tree paid two updates of its height (12 levels for 65536 blocks) on every reference
 * (the mark cleared by a hit or by the drop of the oldest block) and a prefix query on
 * every hit, whatever the distance. Boundaries cost nothing on a miss and z + 1 word
 * scans on a hit of zone z; each boundary only moves forward in time, so its scans add up
 * to about one pass over the window per renumbering.
 * Measured against the Fenwick version (exact 8x17 surface, CPU time, best of 3
 * interleaved runs in one session on the shared machine): gather 1.62 -> 1.53 s,
 * random_gather 3.69 -> 3.24 s, matmul 2.10 -> 2.20 s in one session and 2.19 -> 1.88 s
 * in the next: a small gain at best, because the time goes to the hash table's memory
 * accesses, which both versions share (surface.c).
 *
 * Why not the dissertation's LRU list with a marker at each depth (section 3.1) itself: a
 * deep reference moves up to 17 markers, each onto a far-apart list node (a cache miss
 * each); here a marker move is a bit scan in a 32 KB array that stays in L1/L2. On a
 * 54M-access matmul trace, 8 widths x 17 depths, that list ran at 65x one simulator pass.
 *
 * A 4-entry move-to-front list of the most recent blocks in front of the marks (hits at
 * distance 1 are 38% of the references of matmul at widths 16..512) measured no faster,
 * as every miss then also moves the list's last block to the marks: exact surface, CPU
 * time, best of 4 interleaved runs, gather 1.417 -> 1.419 s, matmul 1.894 -> 1.868 s,
 * random_gather 3.343 -> 3.522 s.
 *
 * Dropping the oldest block lazily (its slot left in place, stale by its time, and the
 * table purged by renumbering into a second table whenever half its entries were stale;
 * no ring of blocks by time) measured no faster: exact surface, CPU time, interleaved
 * pairs, matmul 2.17 / 2.39 s -> 2.28 / 2.33 s, random_gather 3.70 / 3.52 s -> 3.87 /
 * 3.82 s; the purges (a 4 MB table read, rewritten and cleared per 65536 drops) took 30%
 * of random_gather's time (perf), as much as the slot reads they saved.
 *
 * Renumbering (the window is used up) sweeps the hash table linearly, mapping each time to
 * its rank among the marks with a per-word prefix count: looking every live block up
 * instead was one random table access per live block, 11% of the exact surface of
 * random_gather (perf).
 */
#include "reuse_stack.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memsnap/error.h"

/* Zeroed, on cache lines of its own: the stacks of different widths run in different
 * threads (surface.c), and two small arrays of theirs from calloc would share lines (the
 * boundaries' counts change on every hit). */
static void *line_calloc(size_t count, size_t size) {
  size_t bytes = (count * size + 63) & ~(size_t)63;
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes) != 0) return NULL;
  memset(p, 0, bytes);
  return p;
}

/* Zeroed memory; blocks of 2 MB and more are aligned and asked for as huge pages (every
 * reference reads one random slot and, when the stack is full, removes another: with 4 KB
 * pages each is also a TLB miss). Exact surface, CPU time, interleaved runs on a loaded
 * machine: random_gather (8.2M accesses) 4.42 / 4.63 s -> 4.15 / 4.33 s, matmul 150
 * 2.19 / 2.31 s -> 1.92 / 2.12 s (one run of three the other way). */
static void *huge_calloc(size_t count, size_t size) {
  size_t bytes = count * size;
  if (bytes < (2u << 20)) return line_calloc(count, size);
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
  stack->hash_multiplier = REUSE_HASH_GOLDEN;
  stack->window = 1024;
  while (stack->window < 4 * stack->capacity)
    stack->window *= 2;
  stack->word_count = stack->window / 64;
  stack->time_bits = __builtin_ctz(stack->window);
  stack->time_mask = stack->window - 1;
  stack->tag_limit = (1ull << (64 - stack->time_bits)) - 1;
  stack->thresholds = line_calloc((size_t)count, sizeof *stack->thresholds);
  stack->bits = line_calloc(stack->word_count, sizeof *stack->bits);
  stack->rank = line_calloc(stack->word_count, sizeof *stack->rank);
  const size_t lanes = (size_t)(count + REUSE_LANES - 1) / REUSE_LANES * REUSE_LANES;
  stack->boundary = line_calloc(lanes, sizeof *stack->boundary);
  stack->after = line_calloc(lanes, sizeof *stack->after);
  stack->time_block = huge_calloc(stack->window, sizeof *stack->time_block);
  stack->slots = line_calloc(slots, sizeof *stack->slots);
  if (!stack->thresholds || !stack->bits || !stack->rank || !stack->boundary || !stack->after ||
      !stack->time_block || !stack->slots) {
    reuse_stack_free(stack);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for reuse distances up to %u blocks",
                        (unsigned)thresholds[count - 1]);
  }
  memcpy(stack->thresholds, thresholds, (size_t)count * sizeof *thresholds);
  for (size_t j = (size_t)count - 1; j < lanes; j++) /* padding: never before a time */
    stack->boundary[j] = REUSE_NO_BOUNDARY;
  stack->now = 1; /* time 0 stays before every mark: boundaries start there */
  stack->oldest = 1;
  stack->powers_of_two = 1;
  for (int j = 0; j < count; j++)
    if (thresholds[j] != 1ull << j) stack->powers_of_two = 0;
  return MS_OK;
}

void reuse_stack_free(reuse_stack *stack) {
  free(stack->thresholds);
  free(stack->bits);
  free(stack->rank);
  free(stack->boundary);
  free(stack->after);
  free(stack->time_block);
  free(stack->slots);
  memset(stack, 0, sizeof *stack);
}

/* ---- the hash table: block -> time of its latest reference ----
 *
 * 8-byte slots (tag and time, reuse_stack.h) instead of 16 (block, time, used flag): the
 * table of 65536 lines is 2 MB instead of 4 MB, and the 8 widths' tables fit the L3 with
 * their rings. Exact surface, CPU time, best of 2, two interleaved pairs: random_gather
 * 2.14 / 2.07 s -> 1.78 / 1.70 s, gather 0.99 / 0.98 s -> 0.93 / 0.90 s, matmul 0.99 /
 * 1.00 s -> 0.99 / 1.00 s (its lines fit in cache either way); same CSV. A block whose tag
 * is shared (tag_limit) costs a read of time_block per probe it meets.
 * Not kept (same measure, 8-byte slots): load up to 0.5 (1 MB tables, longer probe runs):
 * random_gather 1.76 / 2.01 s -> 2.28 / 2.27 s, matmul and gather within noise; groups of
 * 8 lines (a 64-byte line of slots) instead of 4: 1.76 / 2.01 s -> 1.83 / 1.85 s, matmul
 * and gather within noise. With 16-byte slots: a prefetch distance of 16 or 32 accesses
 * instead of 8 (random_gather 2.36 -> 2.92 / 3.08 s), a prefetch of the next 64-byte line
 * too, for probe runs that cross it (gather 1.02 / 1.03 -> 0.98 / 0.97 s, random_gather
 * within noise). */

static inline uint64_t tag_of(const reuse_stack *stack, uint64_t block) {
  return block < stack->tag_limit ? block : stack->tag_limit;
}

static inline uint32_t slot_time(const reuse_stack *stack, reuse_slot slot) {
  return (uint32_t)(slot & stack->time_mask);
}

/* The block of a used slot. */
static inline uint64_t slot_block(const reuse_stack *stack, reuse_slot slot) {
  uint64_t tag = slot >> stack->time_bits;
  return tag < stack->tag_limit ? tag : stack->time_block[slot_time(stack, slot)];
}

static inline int slot_holds(const reuse_stack *stack, reuse_slot slot, uint64_t block) {
  uint64_t tag = tag_of(stack, block);
  return slot >> stack->time_bits == tag &&
         (tag < stack->tag_limit || stack->time_block[slot_time(stack, slot)] == block);
}

static inline uint32_t find_slot(const reuse_stack *stack, uint64_t block) {
  uint32_t s = reuse_slot_of(stack, block);
  while (stack->slots[s] && !slot_holds(stack, stack->slots[s], block))
    s = (s + 1) & stack->slot_mask;
  return s;
}

/* Removes the entry of a live block, shifting back the following run (no tombstones). */
static void remove_block(reuse_stack *stack, uint64_t block) {
  uint32_t hole = find_slot(stack, block);
  uint32_t s = hole;
  for (;;) {
    s = (s + 1) & stack->slot_mask;
    if (!stack->slots[s]) break;
    uint32_t home = reuse_slot_of(stack, slot_block(stack, stack->slots[s]));
    /* The entry at s may fill the hole iff its home is not in the cyclic range (hole, s]. */
    if (((s - home) & stack->slot_mask) >= ((s - hole) & stack->slot_mask)) {
      stack->slots[hole] = stack->slots[s];
      hole = s;
    }
  }
  stack->slots[hole] = 0;
}

/* Doubles the table: a small footprint keeps a small, cache-resident table (the table is
 * the one random memory access per reference). */
static int grow(reuse_stack *stack) {
  reuse_slot *old = stack->slots;
  uint32_t old_count = stack->slot_mask + 1;
  if (old_count == 0) /* 2^32 slots already: slot_mask cannot double again */
    return ms_error_set(MS_ERR_NOMEM, "out of memory for %u blocks", stack->live);
  reuse_slot *slots = huge_calloc((size_t)old_count * 2, sizeof *slots);
  if (!slots) return ms_error_set(MS_ERR_NOMEM, "out of memory for %u blocks", stack->live);
  stack->slots = slots;
  stack->slot_mask = old_count * 2 - 1;
  stack->hash_shift--;
  for (uint32_t i = 0; i < old_count; i++)
    if (old[i]) stack->slots[find_slot(stack, slot_block(stack, old[i]))] = old[i];
  free(old);
  return MS_OK;
}

/* ---- marks ---- */

/* The bit scans compile twice; the clone for CPUs with POPCNT (chosen at load time) turns
 * __builtin_popcountll into one instruction instead of a libgcc call. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#endif
#endif
#ifndef POPCNT_CLONES
#define POPCNT_CLONES
#endif

static inline uint32_t popcount64(uint64_t x) { return (uint32_t)__builtin_popcountll(x); }

static inline int is_mark(const reuse_stack *stack, uint32_t t) {
  return (int)((stack->bits[t >> 6] >> (t & 63)) & 1);
}

/* Hits at most this many words of times back are counted directly: 16 popcounts of words
 * in L1 cost less than the boundary search and its mispredicted exit. */
#define SHORT_GAP_WORDS 16

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

/* Forgets the oldest live block. Inlined into reference(): exact surface, CPU time, best of
 * 2, two interleaved pairs: random_gather 1.85 / 1.87 s -> 1.78 / 1.78 s, gather 0.91 /
 * 0.89 s -> 0.88 / 0.85 s, matmul 0.99 / 1.00 s -> 0.99 / 1.04 s (noise). */
__attribute__((always_inline)) static inline void drop_oldest(reuse_stack *stack) {
  uint32_t w = stack->oldest >> 6;
  uint64_t word = stack->bits[w] & (~0ull << (stack->oldest & 63));
  while (!word)
    word = stack->bits[++w];
  uint32_t t = (w << 6) | (uint32_t)__builtin_ctzll(word);
  stack->bits[w] &= ~(1ull << (t & 63));
  remove_block(stack, stack->time_block[t]);
  stack->live--;
  stack->oldest = t + 1;
}

/* Resolves boundary j: moves boundary[j] onto B_j, the mark with exactly t_j marks after it.
 * Returns 0 if there is no such mark (t_j live marks or fewer), else 1. */
static inline int resolve(reuse_stack *stack, int j) {
  uint32_t s = stack->boundary[j];
  uint32_t after = stack->after[j] + stack->marks_set;
  if (s < stack->oldest) { /* stale: every live mark is after it */
    s = stack->oldest - 1;
    after = stack->live;
  }
  uint32_t target = (uint32_t)stack->thresholds[j];
  /* marks at or after s, minus the t_j that must follow B_j: B_j is the r-th from s */
  uint32_t at_or_after = after + (uint32_t)is_mark(stack, s);
  if (at_or_after <= target) {
    stack->boundary[j] = s;
    stack->after[j] = after - stack->marks_set;
    return 0;
  }
  uint32_t r = at_or_after - target;
  uint32_t w = s >> 6;
  uint64_t word = stack->bits[w] & (~0ull << (s & 63));
  uint32_t count = popcount64(word);
  while (count < r) {
    r -= count;
    word = stack->bits[++w];
    count = popcount64(word);
  }
  while (--r)
    word &= word - 1;
  stack->boundary[j] = (w << 6) | (uint32_t)__builtin_ctzll(word);
  stack->after[j] = target - stack->marks_set;
  return 1;
}

/* The mark at t leaves the counts of the boundaries before it: after[j] -= boundary[j] < t,
 * REUSE_LANES boundaries at a time (the padding's boundary is never before t). As a scalar
 * loop over the 16 bounded boundaries it took a third of reference() on matmul at width 64
 * (perf, cpu-clock); 4 lanes are one SSE2 compare and add (8 lanes, wider than SSE2, GCC
 * split into scalar compares: no faster). Exact surface, CPU time, interleaved pairs:
 * matmul 1.39 / 1.49 s -> 1.14 / 1.15 s, random_gather 2.47 / 2.50 s -> 2.25 / 2.26 s,
 * gather 1.15 -> 1.09 s (same CSV). */
static inline void leave_counts(reuse_stack *stack, uint32_t t) {
  const int bounded = stack->threshold_count - 1;
  const reuse_lanes time = (reuse_lanes){0} + (int32_t)t; /* times < 2^31: signed compares */
  for (int j = 0; j < bounded; j += REUSE_LANES) {
    reuse_lanes boundary, after;
    memcpy(&boundary, &stack->boundary[j], sizeof boundary);
    memcpy(&after, &stack->after[j], sizeof after);
    after += boundary < time; /* -1 where before t */
    memcpy(&stack->after[j], &after, sizeof after);
  }
}

/* The window is used up: renumber the live marks 1..live in order. */
POPCNT_CLONES static void compact(reuse_stack *stack) {
  const int bounded = stack->threshold_count - 1;
  int exists[64];
  for (int j = 0; j < bounded; j++)
    exists[j] = resolve(stack, j);
  uint32_t marks = 0;
  for (uint32_t w = 0; w < stack->word_count; w++) {
    stack->rank[w] = marks;
    marks += popcount64(stack->bits[w]);
  }
  /* new time of the mark at t: 1 + marks before it */
#define NEW_TIME(t)                                                                                \
  (1 + stack->rank[(t) >> 6] + popcount64(stack->bits[(t) >> 6] & ((1ull << ((t)&63)) - 1)))
  const uint32_t slot_count = stack->slot_mask + 1;
  for (uint32_t i = 0; i < slot_count; i++)
    if (stack->slots[i])
      stack->slots[i] =
          (stack->slots[i] & ~stack->time_mask) | NEW_TIME(slot_time(stack, stack->slots[i]));
  for (int j = 0; j < bounded; j++) {
    if (exists[j]) {
      stack->boundary[j] = NEW_TIME(stack->boundary[j]);
    } else {
      stack->boundary[j] = 0;
      stack->after[j] = stack->live - stack->marks_set;
    }
  }
  uint32_t next = 1;
  for (uint32_t w = stack->oldest >> 6; w < stack->word_count; w++) {
    uint64_t word = stack->bits[w];
    while (word) {
      uint32_t t = (w << 6) | (uint32_t)__builtin_ctzll(word);
      word &= word - 1;
      stack->time_block[next++] = stack->time_block[t];
    }
  }
#undef NEW_TIME
  memset(stack->bits, 0, stack->word_count * sizeof *stack->bits);
  for (uint32_t t = 1; t < next; t++)
    stack->bits[t >> 6] |= 1ull << (t & 63);
  stack->now = next;
  stack->oldest = 1;
}

/* One reference, inlined into both cloned entry points below. */
__attribute__((always_inline)) static inline int reference(reuse_stack *stack, uint64_t block) {
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
  const int bounded = stack->threshold_count - 1;
  if (stack->slots[s]) {
    uint32_t t = slot_time(stack, stack->slots[s]);
    uint32_t word = t >> 6, last_word = (stack->now - 1) >> 6;
    if (last_word - word < SHORT_GAP_WORDS) {
      /* a short gap in time: the marks after t counted directly */
      uint32_t distance = popcount64(stack->bits[word] & (~1ull << (t & 63)));
      for (uint32_t w = word + 1; w <= last_word; w++)
        distance += popcount64(stack->bits[w]);
      zone = zone_of(stack, distance);
    } else {
      /* zone = #{j : t <= B_j}: a boundary stored at or after t is known to qualify (B_j
       * is never before it), the others are resolved (B_{m-1} never exists for a live
       * block: live <= t_{m-1}) */
      zone = 0;
      while (zone < bounded &&
             (stack->boundary[zone] >= t || (resolve(stack, zone) && stack->boundary[zone] >= t)))
        zone++;
    }
    leave_counts(stack, t);
    stack->bits[word] &= ~(1ull << (t & 63));
  } else {
    zone = stack->threshold_count;
    if (2 * (stack->live + 1) > stack->slot_mask + 1) {
      if (grow(stack) < 0) return MS_ERR_NOMEM;
      s = find_slot(stack, block);
    }
    stack->slots[s] = tag_of(stack, block) << stack->time_bits;
    stack->live++;
  }
  stack->slots[s] = (stack->slots[s] & ~stack->time_mask) | stack->now;
  stack->time_block[stack->now] = block;
  stack->bits[stack->now >> 6] |= 1ull << (stack->now & 63);
  stack->now++;
  stack->marks_set++;
  if (stack->live > stack->capacity) drop_oldest(stack);
  return zone;
}

/* Cloned as static functions behind the exported ones: clang 14 emits no symbol under the
 * plain name for an external function with target_clones (the link of scores.c and
 * surface.c failed). */
POPCNT_CLONES static int reference_one(reuse_stack *stack, uint64_t block) {
  return reference(stack, block);
}

int reuse_stack_reference(reuse_stack *stack, uint64_t block) {
  return reference_one(stack, block);
}

/* Accesses ahead whose hash slots are prefetched (longer distances measured slower, see
 * the hash table's comment). The figures first recorded for these prefetches (gather: 82x
 * -> 72x one simulator pass, 61x with the prefetch of the next dropped block) were taken
 * with the same helper that GCC 12 compiles to nothing (see reuse_stack_prefetch), so
 * most likely measured noise or another change. */
#define PREFETCH_DISTANCE 8

/* The loop over a batch sits here, with reference() inlined into it, rather than in
 * surface.c calling reuse_stack_reference() per line: no call (through the clones' ifunc)
 * per reference, and the stack's fields stay in registers. Exact surface, CPU time,
 * best of 2, two interleaved pairs: matmul 1.07 / 1.08 s -> 1.01 / 1.01 s, random_gather
 * 2.24 / 2.51 s -> 2.16 / 2.22 s, gather 1.11 / 1.03 s -> 1.14 / 0.97 s (noise). */
POPCNT_CLONES static int reference_accesses(reuse_stack *stack, const ms_access *accesses,
                                            size_t count, int shift, reuse_feed *feed) {
  uint64_t last_line = feed->last_line, repeats = feed->repeats, lines = 0;
  uint64_t *zone_refs = feed->zone_refs;
  for (size_t n = 0; n < count; n++) {
    uint64_t first = accesses[n].address;
    uint64_t last = first + (accesses[n].size ? accesses[n].size : 1) - 1;
    if (last < first) last = UINT64_MAX; /* an access at the top of the address space */
    uint64_t line = first >> shift, end = last >> shift;
    lines += end - line + 1;
    if (n + PREFETCH_DISTANCE < count)
      reuse_stack_prefetch(stack, accesses[n + PREFETCH_DISTANCE].address >> shift);
    for (;; line++) {
      if (line == last_line) {
        repeats++;
      } else {
        last_line = line;
        int zone = reference(stack, line);
        if (zone < 0) return zone;
        zone_refs[zone]++;
      }
      if (line == end) break;
    }
  }
  feed->last_line = last_line;
  feed->repeats = repeats;
  feed->lines += lines;
  return MS_OK;
}

int reuse_stack_reference_accesses(reuse_stack *stack, const ms_access *accesses, size_t count,
                                   int shift, reuse_feed *feed) {
  return reference_accesses(stack, accesses, count, shift, feed);
}

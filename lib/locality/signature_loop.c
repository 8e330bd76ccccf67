/* The signature model's loops (see signature_model.c for the model): they feed a batch of
 * accesses to the LRU stack (signature_stack.h), count each reference's stack position and
 * walk the line's tree of halves.
 *
 * - Whole-program counting (the default) does not add to the 2 x levels yes/trials
 *   counters per reference: it counts the walk's outcome (bin, visited nodes, same-half
 *   mask) in a histogram that ms_signature_model_result folds into the counters; a
 *   reference to the word of the line's previous reference needs no walk at all. matmul
 *   200: 459 -> 323 instructions per access (callgrind, its first 3M accesses), outputs
 *   byte-identical.
 * - Whole-program loop (add_hist): the model's fields it reads, the window, the time and
 *   the count of marks are copied into locals for the batch (stores to records and
 *   histograms, uint64_t like many of the model's fields, made the compiler reload them at
 *   every access). The window is kept as 16-byte (line, record) pairs, shifted a pair at a
 *   time. A window hit is a scan of 8 lines (unused entries hold UINT64_MAX; the line itself
 *   after them ends the scan), a written-out shift and walk_hist. A reference outside a
 *   full window is handled in the loop too (a new line gets its record there unless the
 *   table must grow): the table, the marks after its time (the TREE_LAG = 8 most recent
 *   words of times stay out of the Fenwick tree, their marks kept as 8 bytes of one local
 *   word: matmul's column walk reuses ~300 times back, 5 words), walk_hist, the window's
 *   last line gets the newest time. Table growth, accesses spanning lines and time
 *   renumbering go through the general reference() (reference_slow, not inlined). Positions
 *   are counted in local histograms folded at the end of the batch; a walk's outcome is a
 *   16-bit key (bin, 1 << visits | same-half mask) written to a buffer that count_keys adds
 *   to the walk histograms every 512 keys (an increment in the loop, its address known
 *   late, stalled the loads after it). The loop is compiled twice (POPCNT where the CPU has
 *   it) plus a variant with BMI2 that gathers the walk's mask with PEXT and walks a 7-level
 *   tree's two words at once in SSE2 registers, taken where the CPU has them (lib/core/cpu.h)
 *   (not on AMD Zen 1/2, whose PEXT is microcode; the bench machine is a Zen 3). Records
 *   are prefetched PREFETCH_AHEAD accesses ahead when the previous batch left the window for
 *   more than 1 access in 8 (even matmul, whose ~300 records fit in L2, is faster with it).
 *   Line keys hash by their product's top bits.
 *   This loop runs more instructions per access than the one before it (the key buffer
 *   costs 6-10, the hash and PEXT save 3-7) in less time: stream_add 13.2 -> 10.7 ns per
 *   access (bench_signature, best of 3 interleaved runs). Outputs byte-identical;
 *   test_loops_agree checks the loop with and without PEXT and the general per-site loop
 *   against each other. The other kernels' figures, and what was tried and not kept:
 *   docs/performance.md, "lib/locality/signature_loop.c".
 *   The live path (`memsnap signature -- PROG`) hands the capture's batches of 4096 straight
 *   to ms_signature_model_add (no copy, conversion or allocation per batch besides the
 *   capture's own copy out of its shared slot). The model is its bottleneck, not the
 *   capture's parsing (perf of matmul 300 live: 42.5% of the samples of both processes
 *   against 4.6%), so the model has no thread of its own to pipeline with the parsing.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/cpu.h"
#include "memsnap/error.h"
#include "memsnap/signature.h"
#include "signature_internal.h"
#include "signature_stack.h"

/* The whole-program loop has a variant for x86-64 CPUs with BMI2 and POPCNT (chosen per batch
 * with lib/core/cpu.h) where a walk's outcome is gathered with PEXT; not on AMD Zen 1
 * and 2, whose PEXT is microcode. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target)
#define FAST_VARIANT 1
#include <immintrin.h>
#define FAST_TARGET __attribute__((target("bmi2,popcnt")))
#endif
#endif
#ifndef FAST_VARIANT
#define FAST_VARIANT 0
#endif
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* Records of accesses this far ahead are prefetched: a reference outside the window misses
 * the caches on its record (random-access kernels), and overlapping those misses is the
 * cheapest speed-up: gather 1000000 42-43 -> 30-39 ns per access (bench_signature, two runs
 * each; the other kernels: docs/performance.md). */
#define PREFETCH_AHEAD 8
#define KEY_CHUNK 512 /* walk keys buffered by the whole-program loop (count_keys) */

/* Without -mpopcnt the builtin is a libgcc call (4% of the time on matmul 200): the paths
 * that count marks (reference_slow) are compiled twice, and the clone for CPUs with POPCNT
 * (chosen at load time, as in reuse_stack.c) makes it one instruction. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define SLOW_PATH __attribute__((target_clones("popcnt", "default"))) /* never inlined */
#endif
#endif
#ifndef SLOW_PATH
#define SLOW_PATH __attribute__((noinline))
#endif

/* ---- counts ---- */

static sig_counts *site_counts(ms_signature_model *model, uint32_t site) {
  if (site == MS_SITE_NONE) {
    if (!model->no_site) model->no_site = calloc(1, sizeof(sig_counts));
    return model->no_site;
  }
  if (site >= model->site_capacity) {
    uint32_t capacity = model->site_capacity ? model->site_capacity : 64;
    while (capacity <= site)
      capacity *= 2;
    sig_counts **sites = realloc(model->sites, (size_t)capacity * sizeof(sig_counts *));
    if (!sites) return NULL;
    memset(sites + model->site_capacity, 0,
           (size_t)(capacity - model->site_capacity) * sizeof(sig_counts *));
    model->sites = sites;
    model->site_capacity = capacity;
  }
  if (!model->sites[site]) model->sites[site] = calloc(1, sizeof(sig_counts));
  return model->sites[site];
}

static inline int reuse_bin(uint32_t position) {
  if (position <= 1) return 0;
  int bin = 32 - __builtin_clz(position - 1); /* 2^(bin-1) < position <= 2^bin */
  return bin < MS_SIGNATURE_DEPTHS ? bin : MS_SIGNATURE_DEPTHS - 1;
}

/* Counts the trials and yeses of a walk, from the visited and same-half bits of its path. */
static inline void count_walk(const ms_signature_model *model, uint32_t word, int bin,
                              const uint64_t *seen, const uint64_t *same, sig_counts *counts) {
  int levels = model->levels;
  for (int depth = 0; depth < levels; depth++) {
    uint32_t node = (1u << depth) | (word >> (levels - depth));
    int level = levels - 1 - depth;
    counts->trials[level][bin] += seen[node >> 6] >> (node & 63) & 1;
    counts->yes[level][bin] += same[node >> 6] >> (node & 63) & 1;
  }
}

/* The bits of `x`, which has at most one bit set among the nodes [2^d, 2^(d+1)) of every
 * depth d < 6 (a path), as a mask by depth: a table for the nodes 1..7 (depths 0..2), a test
 * per depth below. Against a shift per depth by the path's node index: stream_add 229 -> 200
 * instructions per access, matmul 349 -> 323 (callgrind, first 3M accesses). */
static const uint8_t low_depths[256] = {
#define D3(b) (((b) >> 1 & 1) | ((b)&0x0c ? 2 : 0) | ((b)&0xf0 ? 4 : 0))
#define R4(b) D3(b), D3((b) + 1), D3((b) + 2), D3((b) + 3)
#define R16(b) R4(b), R4((b) + 4), R4((b) + 8), R4((b) + 12)
#define R64(b) R16(b), R16((b) + 16), R16((b) + 32), R16((b) + 48)
    R64(0), R64(64), R64(128), R64(192)
#undef R64
#undef R16
#undef R4
#undef D3
};

static inline uint32_t segment_bits(uint64_t x) {
  return low_depths[x & 0xff] | (uint32_t)((x & 0xff00) != 0) << 3 |
         (uint32_t)((x & 0xffff0000) != 0) << 4 | (uint32_t)((x >> 32) != 0) << 5;
}

/* Walks the tree of halves in `record` to `word`, counting trials and yeses in `bin`. With
 * at most 7 levels the whole walk is a few mask operations on two words (precomputed
 * paths) instead of a load-modify-store per level: 1.45 s -> 1.07 s (user) on matmul 200. */
/* Records a visit to `word` in a line's tree of halves (visited nodes, and the half chosen
 * at each), without counting anything. */
static inline void tree_update(const ms_signature_model *model, uint64_t *visited, uint64_t *choice,
                               uint32_t word) {
  if (model->paths) {
    const uint64_t *path = model->paths[word];
    for (size_t k = 0; k < model->tree_words; k++) {
      visited[k] |= path[k];
      choice[k] = (choice[k] & ~path[k]) | path[2 + k];
    }
    return;
  }
  int levels = model->levels;
  for (int depth = 0; depth < levels; depth++) {
    uint32_t node = (1u << depth) | (word >> (levels - depth));
    uint64_t half = (word >> (levels - depth - 1)) & 1;
    uint64_t bit = 1ull << (node & 63);
    visited[node >> 6] |= bit;
    choice[node >> 6] = (choice[node >> 6] & ~bit) | (half << (node & 63));
  }
}

static inline __attribute__((always_inline)) void walk_tree(ms_signature_model *model,
                                                            uint64_t *record, uint32_t word,
                                                            int bin, sig_counts *counts,
                                                            const int hist) {
  uint64_t *visited = record + RECORD_TREE;
  uint64_t *choice = visited + model->tree_words;
  uint64_t last = record[RECORD_TIME] >> 32;
  record[RECORD_TIME] = (record[RECORD_TIME] & UINT32_MAX) | (uint64_t)(word + 1) << 32;
  if (hist) { /* model->paths set */
    /* The same word as the line's last reference: every node of the path was visited, last
     * by that reference, which went the same way; the tree stays as it is. */
    if (last == word + 1u) {
      model->walks[bin][(2u << model->levels) - 1]++;
      return;
    }
    const uint64_t *path = model->paths[word];
    int wide = model->tree_words > 1; /* levels == 7: the deepest node in a second word */
    uint64_t seen_lo = visited[0] & path[0], seen_hi = wide ? visited[1] & path[1] : 0;
    if (seen_lo) {
      /* The visited nodes of a path are a prefix of it and the node at depth d has an index
       * in [2^d, 2^(d+1)): their number is the bit length of the deepest one's index (the
       * highest bit set in seen_lo, >= 1 as node 0 does not exist). Unrolled for 6 levels
       * with the bits taken from one word: the whole model went from 435 to 367 instructions
       * per access on matmul 200 (callgrind, first 3M accesses). */
      uint32_t deepest = 63u - (uint32_t)__builtin_clzll(seen_lo);
      uint32_t visits = seen_hi ? 7u : 32u - (uint32_t)__builtin_clz(deepest);
      uint64_t same_lo = seen_lo & ~(choice[0] ^ path[2]);
      uint32_t mask = segment_bits(same_lo);
      if (wide) mask |= (uint32_t)((seen_hi & ~(choice[1] ^ path[3])) != 0) << 6;
      model->walks[bin][1u << visits | mask]++;
    }
    visited[0] |= path[0];
    choice[0] = (choice[0] & ~path[0]) | path[2];
    if (wide) {
      visited[1] |= path[1];
      choice[1] = (choice[1] & ~path[1]) | path[3];
    }
    return;
  }
  if (model->paths) {
    const uint64_t *path = model->paths[word];
    uint64_t seen[2] = {visited[0] & path[0], model->tree_words > 1 ? visited[1] & path[1] : 0};
    if (seen[0] | seen[1]) {
      uint64_t same[2] = {seen[0] & ~(choice[0] ^ path[2]),
                          model->tree_words > 1 ? seen[1] & ~(choice[1] ^ path[3]) : 0};
      count_walk(model, word, bin, seen, same, counts);
    }
    tree_update(model, visited, choice, word);
    return;
  }
  int levels = model->levels; /* each depth reads its own node: count all, then update */
  for (int depth = 0; depth < levels; depth++) {
    uint32_t node = (1u << depth) | (word >> (levels - depth));
    uint64_t half = (word >> (levels - depth - 1)) & 1;
    size_t at = node >> 6;
    int level = levels - 1 - depth;
    uint64_t seen = visited[at] >> (node & 63) & 1;
    uint64_t same = ~((choice[at] >> (node & 63)) ^ half) & 1;
    counts->trials[level][bin] += seen;
    counts->yes[level][bin] += seen & same;
  }
  tree_update(model, visited, choice, word);
}

static inline __attribute__((always_inline)) int reference_outside(ms_signature_model *model,
                                                                   uint64_t line, uint32_t word,
                                                                   sig_counts *counts,
                                                                   const int hist);

/* One reference to `line` at word `word`. */
static inline int reference(ms_signature_model *model, uint64_t line, uint32_t word,
                            sig_counts *counts, const int hist) {
  counts->references++;
  uint32_t count = model->window_count;
  for (uint32_t i = 0; i < count; i++) {
    if (model->window_line[i] != line) continue;
    uint32_t state = model->window_state[i];
    counts->positions[reuse_bin(i + 1)]++;
    walk_tree(model, record_of(model, state), word, reuse_bin(i + 1), counts, hist);
    /* Already the most recent: nothing moves (31% of linked_list's references, 16% of
     * stencil2d's; 0.1-0.5% on the others, where the test costs nothing measurable). */
    if (i == 0) return MS_OK;
    /* A fixed-length shift with selects: the compiler turned a loop of i steps into a
     * memmove call (6% of the time on stream_add). */
    for (uint32_t k = WINDOW - 1; k > 0; k--) {
      int move = k <= i;
      model->window_line[k] = move ? model->window_line[k - 1] : model->window_line[k];
      model->window_state[k] = move ? model->window_state[k - 1] : model->window_state[k];
    }
    model->window_line[0] = line;
    model->window_state[0] = state;
    return MS_OK;
  }
  return reference_outside(model, line, word, counts, hist);
}

/* A reference to a line outside the window: the line table, the time structure, then the
 * line enters the window. */
static inline __attribute__((always_inline)) int reference_outside(ms_signature_model *model,
                                                                   uint64_t line, uint32_t word,
                                                                   sig_counts *counts,
                                                                   const int hist) {
  uint32_t count = model->window_count;
  uint32_t state;
  int cold = 0;
  int rc = find_line(model, line, &state, &cold);
  if (rc < 0) return rc;
  uint64_t *record = record_of(model, state);
  uint32_t time = (uint32_t)record[RECORD_TIME];
  if (!cold) {
    int bin = MS_SIGNATURE_DEPTHS - 1;
    if (time != TIME_FAR) {
      uint32_t position = count + marks_after(model, time) + 1;
      bin = reuse_bin(position);
      counts->positions[position > (1u << 16) ? MS_SIGNATURE_DEPTHS : bin]++;
      time_unmark(model, time);
    } else {
      counts->positions[MS_SIGNATURE_DEPTHS]++;
    }
    walk_tree(model, record, word, bin, counts, hist);
  } else {
    counts->cold++;
    walk_tree(model, record, word, 0, counts, hist); /* first visit: marks only, counts nothing */
  }
  set_time(record, TIME_FAR); /* in the window: no time */
  window_push(model, line, state);
  return MS_OK;
}

/* The loop of ms_signature_model_add, specialized on `hist` (walks counted in the
 * histograms: whole program, levels <= 7, not warming). */
static inline __attribute__((always_inline)) int
add_accesses(ms_signature_model *model, const ms_access *accesses, size_t count, const int hist) {
  unsigned line_shift = model->line_shift, word_shift = model->word_shift;
  uint64_t line_mask = ((uint64_t)1 << line_shift) - 1;
  sig_counts *counts = model->warming ? &model->discard : &model->total;
  if (!model->warming) model->given += count;
  if (hist) { /* counted once per batch: per access, the stores through `counts` made the
               * compiler reload the model's fields (11 instructions per access) */
    counts->modeled += count;
    model->added += count;
  }
  for (size_t i = 0; i < count; i++) {
    const ms_access *access = &accesses[i];
    if (i + PREFETCH_AHEAD < count) { /* the record of a later access: see PREFETCH_AHEAD */
      uint64_t key = (accesses[i + PREFETCH_AHEAD].address >> line_shift) + 1;
      __builtin_prefetch(model->table + hash_slot(key, model->table_shift) * model->record_words);
    }
    if (!hist) {
      if (model->config.per_site && !model->warming) {
        counts = site_counts(model, access->site);
        if (!counts) return ms_error_set(MS_ERR_NOMEM, "out of memory for per-site signatures");
        counts->executions++;
        if (model->config.site_cap && counts->modeled >= model->config.site_cap) continue;
      }
      counts->modeled++;
      model->added += !model->warming;
    }
    uint64_t first = access->address >> line_shift;
    uint64_t end = access->address + (access->size ? access->size - 1u : 0u);
    uint64_t last = (end < access->address ? UINT64_MAX : end) >> line_shift; /* no wrap */
    uint32_t word = (uint32_t)((access->address & line_mask) >> word_shift);
    for (uint64_t line = first;; line++) {
      int rc = reference(model, line, word, counts, hist);
      if (rc < 0) return rc;
      if (line == last) break;
      word = 0;
    }
  }
  return MS_OK;
}

/* ---- the whole-program loop ---- */

/* The fields the whole-program loop reads, copied out of the model: the stores to records
 * and histograms (uint64_t, which for the compiler may alias the model's fields) made it
 * reload them at every access. */
typedef struct hot_fields {
  const uint64_t (*paths)[4];
  uint64_t (*walks)[256];
  uint64_t *table;
  unsigned record_shift;
  uint32_t full; /* the key of a walk that visits every level and goes the same way */
} hot_fields;

/* walk_tree for the whole-program histograms, on the copied fields; `wide`: 7 levels (the
 * deepest nodes in the tree's second word). A reference to the word of the line's last
 * reference only counts in same_word[bin] (folded at the end of the batch). */
#if FAST_VARIANT
static inline FAST_TARGET uint64_t pext64(uint64_t x, uint64_t mask) { return _pext_u64(x, mask); }

/* walk_hist's walk for 7 levels in the PEXT variant: both words of the tree at once in SSE2
 * registers (visited [0..1], choice [2..3]); returns the walk's histogram key. */
static inline FAST_TARGET uint32_t walk_key_wide(uint64_t *tree, const uint64_t *path) {
  __m128i visited = _mm_loadu_si128((const __m128i *)tree);
  __m128i choice = _mm_loadu_si128((const __m128i *)(tree + 2));
  __m128i nodes = _mm_loadu_si128((const __m128i *)path);
  __m128i halves = _mm_loadu_si128((const __m128i *)(path + 2));
  __m128i seen = _mm_and_si128(visited, nodes);
  __m128i same = _mm_andnot_si128(_mm_xor_si128(choice, halves), seen);
  _mm_storeu_si128((__m128i *)tree, _mm_or_si128(visited, nodes));
  _mm_storeu_si128((__m128i *)(tree + 2), _mm_or_si128(_mm_andnot_si128(nodes, choice), halves));
  uint64_t seen_lo = (uint64_t)_mm_cvtsi128_si64(seen), same_lo = (uint64_t)_mm_cvtsi128_si64(same);
  uint64_t seen_hi = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(seen, seen));
  uint64_t same_hi = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(same, same));
  /* The deepest node is the one bit of path[1]: PEXT gives it too (2 instructions, not 4;
   * callgrind: stream_add 101.5 -> 99.5 instructions per access, matmul 168.4 -> 167.7). */
  uint32_t seen_bits = (uint32_t)(pext64(seen_lo, path[0]) | pext64(seen_hi, path[1]) << 6);
  uint32_t same_bits = (uint32_t)(pext64(same_lo, path[0]) | pext64(same_hi, path[1]) << 6);
  return (seen_bits + 1) | same_bits; /* nothing visited: 1, never folded */
}
#endif

static inline __attribute__((always_inline)) uint32_t walk_hist(const hot_fields *h,
                                                                uint64_t *record, uint32_t word,
                                                                uint32_t bin, const int wide,
                                                                const int fast) {
  (void)fast;
  uint64_t *visited = record + RECORD_TREE;
  uint64_t *choice = visited + (wide ? 2 : 1);
  uint64_t time = record[RECORD_TIME];
  record[RECORD_TIME] = (uint64_t)(word + 1) << 32; /* time: far (the line is in the window) */
  if ((time >> 32) == word + 1u) return bin << 8 | h->full;
  const uint64_t *path = h->paths[word];
#if FAST_VARIANT
  if (fast && wide) {
    return bin << 8 | walk_key_wide(visited, path);
  }
#endif
  uint64_t visited_lo = visited[0], choice_lo = choice[0];
  uint64_t seen_lo = visited_lo & path[0];
  uint32_t key = 1; /* nothing visited: never folded */
#if FAST_VARIANT
  if (fast) { /* the path's bits by depth: 2^visits - 1 and the same-half mask */
    uint32_t seen = (uint32_t)pext64(seen_lo, path[0]);
    uint32_t same = (uint32_t)pext64(seen_lo & ~(choice_lo ^ path[2]), path[0]);
    if (wide) {
      uint64_t seen_hi = visited[1] & path[1];
      seen |= (uint32_t)(seen_hi != 0) << 6;
      same |= (uint32_t)((seen_hi & ~(choice[1] ^ path[3])) != 0) << 6;
    }
    key = (seen + 1) | same; /* nothing visited: 1 */
  } else
#endif
      if (seen_lo) { /* as in walk_tree */
    uint32_t deepest = 63u - (uint32_t)__builtin_clzll(seen_lo);
    uint32_t mask = segment_bits(seen_lo & ~(choice_lo ^ path[2])), visits;
    if (wide) {
      uint64_t seen_hi = visited[1] & path[1];
      visits = seen_hi ? 7u : 32u - (uint32_t)__builtin_clz(deepest);
      mask |= (uint32_t)((seen_hi & ~(choice[1] ^ path[3])) != 0) << 6;
    } else {
      visits = 32u - (uint32_t)__builtin_clz(deepest);
    }
    key = 1u << visits | mask;
  }
  visited[0] = visited_lo | path[0];
  choice[0] = (choice_lo & ~path[0]) | path[2];
  if (wide) {
    visited[1] |= path[1];
    choice[1] = (choice[1] & ~path[1]) | path[3];
  }
  return bin << 8 | key;
}

/* Outside the window, or an access spanning lines: the general path (not inlined). */
static SLOW_PATH int reference_slow(ms_signature_model *model, const ms_access *access,
                                    sig_counts *counts) {
  unsigned line_shift = model->line_shift;
  uint64_t first = access->address >> line_shift;
  uint64_t end = access->address + (access->size ? access->size - 1u : 0u);
  uint64_t last = (end < access->address ? UINT64_MAX : end) >> line_shift; /* no wrap */
  uint32_t word =
      (uint32_t)((access->address & (((uint64_t)1 << line_shift) - 1)) >> model->word_shift);
  if (first == last) { /* outside the window (add_hist looked) */
    counts->references++;
    return reference_outside(model, first, word, counts, 1);
  }
  for (uint64_t line = first;; line++) {
    int rc = reference(model, line, word, counts, 1);
    if (rc < 0) return rc;
    if (line == last) break;
    word = 0;
  }
  return MS_OK;
}

/* Saves the whole-program loop's copies of the window and the times into the model, before
 * a call to the general path, and reads them back after it (the table may have grown). */
typedef struct loop_state {
  /* The window, line and record together (a shift moves 16 bytes at once); [WINDOW].line:
   * the line looked for, so that the scan always stops. */
  struct {
    uint64_t line, state;
  } w[WINDOW + 1];
  uint32_t now, marked, full;
  /* The marks of the TREE_LAG words outside the Fenwick tree, a byte each, from the word
   * now / 64 - 7 (byte 0) to the current one (byte 7): counting the marks after a recent
   * time is a shift and a sum of bytes instead of a popcount per word (matmul's column walk
   * reuses ~300 times back, 5 words: 58 -> ~20 instructions per reference). */
  uint64_t lag;
} loop_state;
_Static_assert(TREE_LAG == 8, "loop_state.lag holds 8 words' marks");

/* Puts (line, state) in the window's first entry with one 16-byte store: the next shift
 * reads the entry as 16 bytes, which two 8-byte stores cannot forward to (the load waits
 * for the stores to reach the cache). Against two stores: stream_add 11.2 -> 10.1 ns per
 * access (bench_signature, best of 4 interleaved; the other kernels: docs/performance.md). */
static inline void window_front(loop_state *s, uint64_t line, uint64_t state) {
#if defined(__x86_64__)
  _mm_storeu_si128((__m128i *)&s->w[0], _mm_set_epi64x((long long)state, (long long)line));
#else
  s->w[0].line = line;
  s->w[0].state = state;
#endif
}

static inline void loop_save(ms_signature_model *model, const loop_state *s) {
  for (uint32_t k = 0; k < WINDOW; k++) {
    model->window_line[k] = s->w[k].line;
    model->window_state[k] = (uint32_t)s->w[k].state;
  }
  model->now = s->now;
  model->marked = s->marked;
}

static inline void loop_load(const ms_signature_model *model, loop_state *s) {
  for (uint32_t k = 0; k < WINDOW; k++) {
    s->w[k].line = model->window_line[k];
    s->w[k].state = model->window_state[k];
  }
  s->now = model->now;
  s->marked = model->marked;
  s->full = model->window_count == WINDOW;
  s->lag = 0;
  for (uint32_t i = 0, current = model->now >> 6; i < TREE_LAG; i++)
    if (current + i >= TREE_LAG - 1)
      s->lag |= (uint64_t)popcount64(model->time_bits[current + i - (TREE_LAG - 1)]) << 8 * i;
}

/* The sum of the bytes of x (each <= 64). */
static inline uint32_t byte_sum(uint64_t x) {
  x = (x & 0x00ff00ff00ff00ffull) + (x >> 8 & 0x00ff00ff00ff00ffull);
  return (uint32_t)((x * 0x0001000100010001ull) >> 48);
}

/* Counts walk keys (bin << 8 | key) in the walk histograms; returns 0. The whole-program loop
 * writes its walks' keys to a buffer of KEY_CHUNK and counts them here, in a loop of its own:
 * an increment of the histogram inside the loop, whose key is known late, stalled the
 * loads of the accesses after it: stream_add 12.6 -> 10.7 ns per access although 6-10
 * instructions per access more (bench_signature, best of 5 interleaved; the other kernels:
 * docs/performance.md). */
static inline uint32_t count_keys(uint64_t (*walks)[256], const uint16_t *keys, uint32_t count) {
  uint64_t *flat = walks[0];
  for (uint32_t i = 0; i < count; i++)
    flat[keys[i]]++;
  return 0;
}

/* ms_signature_model_add for the whole program with levels <= 7 (`wide`: 7). A reference
 * to a line of the window costs a scan of 8 lines, a shift, and walk_hist; its position is
 * counted in a local histogram. A reference to a line outside a full window that is not new
 * (no rebuild of the times due) is handled here too, on local copies of the window and the
 * times: the line table, the marks after its time, walk_hist, the window's last line gets
 * the newest time. Everything else goes through reference_slow. `prefetch`: see
 * PREFETCH_AHEAD. Compiled twice (SLOW_PATH) for POPCNT. */
static inline __attribute__((always_inline)) int add_hist(ms_signature_model *model,
                                                          const ms_access *accesses, size_t count,
                                                          const int wide, const int prefetch,
                                                          const int fast) {
  static const uint8_t window_bin[WINDOW] = {0, 1, 2, 2, 3, 3, 3, 3}; /* reuse_bin(k + 1) */
  unsigned line_shift = model->line_shift, word_shift = model->word_shift;
  uint64_t line_mask = ((uint64_t)1 << line_shift) - 1;
  sig_counts *counts = &model->total;
  hot_fields h = {(const uint64_t(*)[4])model->paths, model->walks, model->table, 0,
                  (2u << model->levels) - 1};
  while (((size_t)1 << h.record_shift) < model->record_words)
    h.record_shift++;
  size_t table_mask = model->table_mask;
  unsigned table_shift = model->table_shift;
  uint64_t *time_bits = model->time_bits;
  uint32_t *time_state = model->time_state, *word_fenwick = model->word_fenwick;
  uint64_t hits[WINDOW] = {0}, slow = 0, outside = 0, cold = 0;
  uint16_t keys[KEY_CHUNK];
  uint32_t key_count = 0;
  uint64_t positions[MS_SIGNATURE_DEPTHS + 1] = {0};
  loop_state s;
  loop_load(model, &s);
  int rc = MS_OK;
  model->given += count;
  counts->modeled += count;
  model->added += count;
  for (size_t i = 0; i < count; i++) {
    const ms_access *access = &accesses[i];
    if (prefetch && i + PREFETCH_AHEAD < count) {
      uint64_t key = (accesses[i + PREFETCH_AHEAD].address >> line_shift) + 1;
      __builtin_prefetch(h.table + (hash_slot(key, table_shift) << h.record_shift));
    }
    uint64_t address = access->address, line = address >> line_shift;
    uint64_t offset = address & line_mask;
    uint32_t word = (uint32_t)(offset >> word_shift);
    if (offset + access->size > line_mask + 1) goto general; /* spans lines (size 0: never) */
    uint32_t k = 0;
    s.w[WINDOW].line = line; /* unused entries hold UINT64_MAX */
    while (s.w[k].line != line)
      k++;
    if (k < WINDOW) {
      uint32_t state = (uint32_t)s.w[k].state;
      hits[k]++;
      switch (k) {             /* move to front (a loop became a memmove call: 6% on stream_add) */
      case 7: s.w[7] = s.w[6]; /* fall through */
      case 6: s.w[6] = s.w[5]; /* fall through */
      case 5: s.w[5] = s.w[4]; /* fall through */
      case 4: s.w[4] = s.w[3]; /* fall through */
      case 3: s.w[3] = s.w[2]; /* fall through */
      case 2: s.w[2] = s.w[1]; /* fall through */
      case 1:
        s.w[1] = s.w[0];
        window_front(&s, line, state);
        break;
      default: break;
      }
      keys[key_count++] = (uint16_t)walk_hist(&h, h.table + ((size_t)state << h.record_shift), word,
                                              window_bin[k], wide, fast);
      if (key_count == KEY_CHUNK) key_count = count_keys(h.walks, keys, key_count);
      continue;
    }
    if (!s.full || s.now == TIME_SLOTS - 1) goto general;
    /* Outside the window: the line's record, created if the line is new and the table need
     * not grow (a new record is zero: its walk visits nothing and counts nothing). New lines
     * went through reference_slow before (~500 instructions with the copies of the loop's
     * state): stream_add, 3 new lines in 192 accesses, 9.8 -> 9.5 ns per access (best of 4
     * interleaved, load ~5), gather 18.5 -> 19.3 (noise: 19-27 on this machine). */
    uint64_t key = line + 1, *record;
    size_t at = hash_slot(key, table_shift);
    int created = 0;
    while ((record = h.table + (at << h.record_shift))[RECORD_KEY] != key) {
      if (!record[RECORD_KEY]) {
        if ((model->table_used + 1) * 2 > table_mask + 1) goto general; /* grow first */
        model->table_used++;
        record[RECORD_KEY] = key; /* time: far */
        created = 1;
        break;
      }
      at = (at + 1) & table_mask;
    }
    uint32_t time = (uint32_t)record[RECORD_TIME], bin = MS_SIGNATURE_DEPTHS - 1;
    outside++;
    if (created) {
      cold++;
    } else if (time != TIME_FAR) { /* position: the window, then the marks after its time */
      uint32_t tword = time >> 6, bit = time & 63, current = s.now >> 6;
      uint32_t marks = popcount64(time_bits[tword] & (~1ull << bit)); /* after bit */
      if (current - tword < TREE_LAG) { /* the words after tword: bytes tword + 8 - current.. */
        unsigned byte = tword + TREE_LAG - 1 - current;
        marks += byte_sum(s.lag >> 8 * byte >> 8);
        s.lag -= 1ull << 8 * byte; /* unmark */
      } else {
        marks += s.marked - word_fenwick_prefix(word_fenwick, tword + 1);
        word_fenwick_add(word_fenwick, tword + 1, -1);
      }
      uint32_t position = WINDOW + marks + 1;
      bin = (uint32_t)reuse_bin(position);
      positions[position > (1u << 16) ? MS_SIGNATURE_DEPTHS : bin]++;
      time_bits[tword] &= ~(1ull << bit); /* unmark */
      s.marked--;
    } else {
      positions[MS_SIGNATURE_DEPTHS]++;
    }
    keys[key_count++] = (uint16_t)walk_hist(&h, record, word, bin, wide, fast); /* time: far */
    if (key_count == KEY_CHUNK) key_count = count_keys(h.walks, keys, key_count);
    /* The window's last line leaves it with the newest time (time_mark). */
    uint32_t evicted = (uint32_t)s.w[WINDOW - 1].state, now = ++s.now;
    uint64_t *old = h.table + ((size_t)evicted << h.record_shift);
    old[RECORD_TIME] = (old[RECORD_TIME] & ~(uint64_t)UINT32_MAX) | now;
    time_state[now] = evicted;
    if ((now & 63) == 0) { /* a new word: word (now >> 6) - TREE_LAG joins the tree */
      if (now >> 6 >= TREE_LAG)
        word_fenwick_add(word_fenwick, (now >> 6) - TREE_LAG + 1, (int32_t)(s.lag & 0xff));
      s.lag >>= 8;
    }
    s.lag += 1ull << 56;
    time_bits[now >> 6] |= 1ull << (now & 63);
    s.marked++;
    for (uint32_t w = WINDOW - 1; w > 0; w--) {
      s.w[w] = s.w[w - 1];
    }
    window_front(&s, line, at);
    continue;
  general:
    slow++;
    loop_save(model, &s);
    rc = reference_slow(model, access, counts);
    if (rc < 0) break;
    loop_load(model, &s);
    h.table = model->table; /* the table may have grown */
    table_mask = model->table_mask;
    table_shift = model->table_shift;
  }
  loop_save(model, &s);
  count_keys(h.walks, keys, key_count);
  /* Fold the local counts. */
  for (uint32_t k = 0; k < WINDOW; k++) {
    counts->references += hits[k];
    counts->positions[window_bin[k]] += hits[k];
  }
  counts->references += outside;
  counts->cold += cold;
  for (uint32_t bin = 0; bin <= MS_SIGNATURE_DEPTHS; bin++)
    counts->positions[bin] += positions[bin];
  model->slow_refs += slow + outside;
  return rc;
}

/* The four variants of add_hist, compiled twice (SLOW_PATH: POPCNT where the CPU has it). */
static SLOW_PATH int add_whole(ms_signature_model *model, const ms_access *accesses, size_t count,
                               int prefetch) {
  if (model->levels == 7)
    return prefetch ? add_hist(model, accesses, count, 1, 1, 0)
                    : add_hist(model, accesses, count, 1, 0, 0);
  return prefetch ? add_hist(model, accesses, count, 0, 1, 0)
                  : add_hist(model, accesses, count, 0, 0, 0);
}

#if FAST_VARIANT
static FAST_TARGET int add_whole_fast(ms_signature_model *model, const ms_access *accesses,
                                      size_t count, int prefetch) {
  if (model->levels == 7)
    return prefetch ? add_hist(model, accesses, count, 1, 1, 1)
                    : add_hist(model, accesses, count, 1, 0, 1);
  return prefetch ? add_hist(model, accesses, count, 0, 1, 1)
                  : add_hist(model, accesses, count, 0, 0, 1);
}

static int fast_cpu(void) { return (cpu_features() & CPU_FAST_PEXT) != 0; }
#endif

int sig_loop_add(ms_signature_model *model, const ms_access *accesses, size_t count) {
  if (model->walks && !model->config.per_site && !model->warming) {
    /* Prefetch when the last batch went outside the window for more than 1 access in 8. */
    int prefetch = model->slow_refs * 8 > model->last_count;
    model->slow_refs = 0;
    model->last_count = count;
#if FAST_VARIANT
    if (!model->portable && fast_cpu()) return add_whole_fast(model, accesses, count, prefetch);
#endif
    return add_whole(model, accesses, count, prefetch);
  }
  return add_accesses(model, accesses, count, 0);
}

/* ---- the gaps of interval sampling ---- */

/* Updates the tree of `record` for a reference to `word` without counting anything. */
static inline void tree_mark(ms_signature_model *model, uint64_t *record, uint32_t word) {
  uint64_t *visited = record + RECORD_TREE;
  record[RECORD_TIME] = (record[RECORD_TIME] & UINT32_MAX) | (uint64_t)(word + 1) << 32;
  tree_update(model, visited, visited + model->tree_words, word);
}

int sig_loop_track(ms_signature_model *model, const ms_access *accesses, size_t count) {
  unsigned line_shift = model->line_shift, word_shift = model->word_shift;
  uint64_t line_mask = ((uint64_t)1 << line_shift) - 1;
  uint64_t previous = UINT64_MAX; /* line of the record at hand */
  uint64_t *record = NULL;
  for (size_t i = 0; i < count; i++) {
    const ms_access *access = &accesses[i];
    if (i + PREFETCH_AHEAD < count) {
      uint64_t key = (accesses[i + PREFETCH_AHEAD].address >> line_shift) + 1;
      __builtin_prefetch(model->table + hash_slot(key, model->table_shift) * model->record_words);
    }
    uint64_t first = access->address >> line_shift;
    uint64_t end = access->address + (access->size ? access->size - 1u : 0u);
    uint64_t last = (end < access->address ? UINT64_MAX : end) >> line_shift;
    uint32_t word = (uint32_t)((access->address & line_mask) >> word_shift);
    for (uint64_t line = first;; line++) {
      if (line != previous || !record) {
        uint32_t state;
        int cold;
        int rc = find_line(model, line, &state, &cold);
        if (rc < 0) return rc;
        record = record_of(model, state);
        previous = line;
      }
      tree_mark(model, record, word);
      if (line == last) break;
      word = 0;
    }
  }
  return MS_OK;
}

int sig_model_fast_cpu(void) {
#if FAST_VARIANT
  return fast_cpu();
#else
  return 0;
#endif
}

/* Reuse distances of one stream of blocks, binned by thresholds (internal to locality).
 *
 * Model: the reuse distance of a reference is the number of distinct other blocks
 * referenced since the previous reference to its block (its LRU stack position); it hits
 * every fully-associative LRU cache of depth D > distance. Ascending thresholds
 * t_0 < ... < t_{m-1} define zones: a reference is in zone z = #{j : t_j <= distance}, and
 * in zone m if it is a first reference or deeper than every threshold.
 *
 * Method (time marks with lazy depth boundaries): every reference gets a time; a bit is set
 * at the time of the latest reference of every live block. The distance of a reference to a
 * block last referenced at time t is the number of marks after t, but only its zone is
 * needed: zone = #{j : t <= B_j}, where the boundary B_j is the mark with exactly t_j marks
 * after it (the dissertation's LRU markers, section 3.1, placed in time instead of in a
 * list). A reference of zone z moves the boundaries B_0..B_{z-1} one mark forward and a
 * first reference moves them all; they are moved lazily: each boundary keeps a time s_j and
 * the number of marks after it, and is advanced (a popcount skip over the bit words) only
 * when a reference needs it, so a miss costs no boundary work at all and a hit of zone z
 * looks at most at z + 1 boundaries (one stored at or after t qualifies unresolved); a
 * hit at most 16 words of times back counts its marks directly instead. Only the latest t_{m-1}
 * blocks can still hit, so the oldest mark is dropped (and its block forgotten) whenever there are
 * more: memory is bounded by t_{m-1} blocks in the hash table and a time window of at least 4
 * t_{m-1}; when the window is used up the live marks are renumbered to its start. A reference to
 * the same block as the previous reference is distance 0 without a lookup.
 */
#ifndef MEMSNAP_REUSE_STACK_H
#define MEMSNAP_REUSE_STACK_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/access.h"

/* A slot of the hash table, 8 bytes: the block's tag above time_bits, the time of its latest
 * reference below (0: empty; times start at 1). The tag is the block itself when below
 * tag_limit, else tag_limit: such a block is told apart by the block its time holds in
 * time_block (the default surface's lines, width >= 4 of 47-bit addresses, have exact
 * tags). See reuse_stack.c for what the 8-byte slot measured. */
typedef uint64_t reuse_slot;

/* The boundaries' arrays are padded to a multiple of REUSE_LANES, a boundary of padding
 * being REUSE_NO_BOUNDARY (after every time): a hit updates them a vector at a time. */
#define REUSE_LANES 4
#define REUSE_NO_BOUNDARY 0x7FFFFFFFu
typedef int32_t reuse_lanes __attribute__((vector_size(REUSE_LANES * sizeof(int32_t))));

typedef struct reuse_stack {
  int threshold_count;  /* m */
  uint64_t *thresholds; /* t_0..t_{m-1} */
  int powers_of_two;    /* t_j = 2^j: the zone is a bit length, no search */
  uint32_t capacity;    /* t_{m-1}: live blocks kept */
  uint32_t live;        /* marks set */
  uint32_t window;      /* times per epoch: a power of two */
  uint32_t now;         /* next time */
  uint32_t oldest;      /* no mark before this time */
  uint64_t *bits;       /* window / 64 words; time 0 is never a mark */
  uint32_t word_count;
  uint32_t marks_set;   /* marks set so far (wraps): the boundaries' counts are relative */
  uint32_t *boundary;   /* s_j, j < m - 1: a time at or before the boundary B_j */
  uint32_t *after;      /* marks after s_j, minus marks_set (wrapping arithmetic) */
  uint32_t *rank;       /* window / 64 words: marks before each word (renumbering) */
  uint64_t *time_block; /* block referenced at each time */
  reuse_slot *slots;    /* open addressing, linear probing, backward-shift deletion */
  int time_bits;        /* log2(window): a slot's time field */
  uint64_t time_mask;   /* window - 1 */
  uint64_t tag_limit;   /* 2^(64 - time_bits) - 1: blocks from here on share this tag */
  uint32_t slot_mask;
  int hash_shift;
  uint64_t hash_multiplier; /* odd; REUSE_HASH_GOLDEN unless set before the first reference */
  uint64_t last_block;
  int has_last;
} __attribute__((aligned(64)))
reuse_stack; /* aligned: widths run in parallel threads (surface.c) */

/* The table's multiplicative hash. The golden ratio spreads strided walks evenly: another
 * odd constant (0xFF51AFD7ED558CCD) made the exact surface 3-20% slower (gather, matmul,
 * random_gather, best of 2 interleaved runs). But the SHARDS sampling hash (surface.c) is
 * the golden ratio too: the lines it samples have the top bits of line x golden ratio in
 * a 1% range, and so did their slots, into probe runs hundreds of slots long; sampled
 * stacks take the other constant (SHARDS at 0.01, best of 2: random_gather 0.167 ->
 * 0.107 s, gather 0.070 -> 0.041 s, matmul 0.085 -> 0.070 s, same surfaces). */
#define REUSE_HASH_GOLDEN 0x9E3779B97F4A7C15ull
#define REUSE_HASH_OTHER 0xFF51AFD7ED558CCDull

/* Groups of 4 neighbouring lines share one 64-byte cache line of slots (their group is
 * scattered by a multiplicative hash): a streaming or strided walk finds 4 lines' slots in
 * one cache miss. Keeping all low bits instead (identity-like hashing) made runs of
 * consecutive lines into probe chains as long as the runs: 7x slower on matmul. */
static inline uint32_t reuse_slot_of(const reuse_stack *stack, uint64_t block) {
  uint32_t group = (uint32_t)(((block >> 2) * stack->hash_multiplier) >> (stack->hash_shift + 2));
  return ((group << 2) | (uint32_t)(block & 3)) & stack->slot_mask;
}

/* Asks for the slot of `block` ahead of its reference (the table is the one random memory
 * access per reference: overlapping those misses is the cheapest speed-up). Always inlined:
 * as a plain static inline, GCC 12's modref pass found the function pure (it takes
 * __builtin_prefetch for a no-op) and deleted every call, so neither this prefetch nor the
 * one of the next dropped block was in the binary. Restoring them, exact surface, CPU time,
 * interleaved old/new on the loaded machine: matmul 1.68 -> 1.34 s, gather 2.34 -> 1.19 s,
 * random_gather 4.86 -> 2.41 s (same CSV). */
__attribute__((always_inline)) static inline void reuse_stack_prefetch(const reuse_stack *stack,
                                                                       uint64_t block) {
  __builtin_prefetch(&stack->slots[reuse_slot_of(stack, block)]);
}

/* thresholds: 1 to 64, ascending, >= 1, the last at most 2^26. Returns 0 or MS_ERR_NOMEM. */
int reuse_stack_init(reuse_stack *stack, const uint64_t *thresholds, int count);
void reuse_stack_free(reuse_stack *stack);
/* References `block`; returns its zone (0..m), or MS_ERR_NOMEM if the table cannot grow. */
int reuse_stack_reference(reuse_stack *stack, uint64_t block);

/* A stream of lines fed a batch of accesses at a time: the line of its latest reference
 * (a line equal to it is an immediate repeat: counted, not referenced) and its counts. */
typedef struct reuse_feed {
  uint64_t last_line;
  uint64_t repeats;    /* immediate repeats */
  uint64_t lines;      /* lines spanned, repeats included */
  uint64_t *zone_refs; /* references per zone, 0..m */
} reuse_feed;

/* References every line of width 2^shift that each access spans, in order. Returns 0 or
 * MS_ERR_NOMEM (the zone counts then hold part of the batch). */
int reuse_stack_reference_accesses(reuse_stack *stack, const ms_access *accesses, size_t count,
                                   int shift, reuse_feed *feed);

#endif

/* One hash index for the tables that keep their entries in a dense array, in order of
 * addition, and look them up by key: the site table (pc -> site), the profile builder's
 * sites ((site, thread, kind, size) -> profile site) and verification's ((pc, thread,
 * kind, size) -> profile site). The entries, and so the keys, stay in the caller's array;
 * a slot holds id + 1 (0: empty), 4 bytes, with linear probing, at most half full. The
 * caller hashes its key and says whether an id's entry has it (`same`); growing rehashes
 * through `hash_of`. The functions are inline so that the callbacks inline too. */
#ifndef MEMSNAP_CORE_ID_INDEX_H
#define MEMSNAP_CORE_ID_INDEX_H

#include <stdint.h>
#include <stdlib.h>

#include "memsnap/error.h"

typedef struct id_index {
  uint32_t *slots;
  uint32_t capacity; /* a power of two, or 0 */
  uint32_t count;    /* ids placed */
} id_index;

static inline uint64_t id_index_hash(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return key;
}

/* The id whose entry `same` recognises, or -1. */
static inline int64_t id_index_find(const id_index *index, uint64_t hash,
                                    int (*same)(const void *context, uint32_t id),
                                    const void *context) {
  if (!index->capacity) return -1;
  uint32_t mask = index->capacity - 1;
  for (uint32_t slot = (uint32_t)hash & mask; index->slots[slot]; slot = (slot + 1) & mask)
    if (same(context, index->slots[slot] - 1)) return index->slots[slot] - 1;
  return -1;
}

static inline void id_index_place(uint32_t *slots, uint32_t capacity, uint64_t hash, uint32_t id) {
  uint32_t mask = capacity - 1, slot = (uint32_t)hash & mask;
  while (slots[slot])
    slot = (slot + 1) & mask;
  slots[slot] = id + 1;
}

/* Adds `id`, whose key the index does not hold yet (the caller looked first: equal keys in
 * one probe chain would make every later probe walk them all; a site table of 131072 lost
 * sites of pc 0 took minutes). Growing re-places the ids held, through `hash_of`. Returns 0
 * or MS_ERR_NOMEM (the index is then as it was). */
static inline int id_index_add(id_index *index, uint64_t hash, uint32_t id,
                               uint64_t (*hash_of)(const void *context, uint32_t id),
                               const void *context) {
  if (2 * ((uint64_t)index->count + 1) > index->capacity) {
    uint32_t capacity = index->capacity ? index->capacity : 64;
    while (2 * ((uint64_t)index->count + 1) > capacity)
      capacity *= 2;
    uint32_t *slots = calloc(capacity, sizeof *slots);
    if (!slots) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    for (uint32_t s = 0; s < index->capacity; s++)
      if (index->slots[s])
        id_index_place(slots, capacity, hash_of(context, index->slots[s] - 1), index->slots[s] - 1);
    free(index->slots);
    index->slots = slots;
    index->capacity = capacity;
  }
  id_index_place(index->slots, index->capacity, hash, id);
  index->count++;
  return 0;
}

static inline void id_index_free(id_index *index) {
  free(index->slots);
  index->slots = NULL;
  index->capacity = index->count = 0;
}

#endif

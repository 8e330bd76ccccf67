/* Arrays indexed by ids that arrive in any order (trace sites, annotation slots), grown by
 * doubling with the new entries zeroed, so that an index seen for the first time reads 0.
 * Internal to libmemsnap; the builder, the annotator and the simulator each kept a copy. */
#ifndef MEMSNAP_CORE_GROW_H
#define MEMSNAP_CORE_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* `array` (of *capacity entries of `size` bytes) grown to hold entry `index`: its capacity
 * (`first` when it has none) doubled until it exceeds index, the new entries zeroed. The
 * array to use from now on, or NULL when out of memory (then `array` and *capacity are as
 * they were). */
static inline void *ms_grow_zeroed(void *array, uint64_t *capacity, size_t size, uint64_t index,
                                   uint64_t first) {
  if (index < *capacity) return array;
  uint64_t grown = *capacity ? *capacity : first;
  while (grown <= index)
    grown *= 2;
  char *more = realloc(array, grown * size);
  if (!more) return NULL;
  memset(more + *capacity * size, 0, (grown - *capacity) * size);
  *capacity = grown;
  return more;
}

#endif

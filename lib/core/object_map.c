/* Live data objects by address (object_map.h). */
#include "object_map.h"

#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"

typedef struct granule {
  uint64_t key; /* granule number + 1; 0 empty */
  uint32_t id;
} granule;

typedef struct large_object {
  uint64_t start, end;
  uint32_t id;
} large_object;

struct object_map {
  granule *slots;
  uint64_t slot_count, used; /* a power of two; at most half full */
  large_object *large;
  uint64_t large_count, large_capacity;
  uint64_t low, high; /* span of every object seen */
  uint64_t last_start, last_end;
  uint32_t last_id;
  /* the objects' extents, by id, to free a small one's granules */
  uint64_t *starts, *ends;
  uint64_t id_capacity;
};

object_map *object_map_new(void) {
  object_map *map = calloc(1, sizeof *map);
  if (!map) return NULL;
  map->low = UINT64_MAX;
  map->last_id = OBJECT_MAP_NONE;
  return map;
}

void object_map_free(object_map *map) {
  if (!map) return;
  free(map->slots);
  free(map->large);
  free(map->starts);
  free(map->ends);
  free(map);
}

static uint64_t hash(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 17; }

static granule *probe(const object_map *map, uint64_t key) {
  uint64_t mask = map->slot_count - 1;
  for (uint64_t i = hash(key) & mask;; i = (i + 1) & mask)
    if (map->slots[i].key == key || map->slots[i].key == 0) return &map->slots[i];
}

static int grow(object_map *map) {
  uint64_t count = map->slot_count ? map->slot_count * 2 : 4096;
  granule *old = map->slots;
  uint64_t old_count = map->slot_count;
  map->slots = calloc(count, sizeof *map->slots);
  if (!map->slots) {
    map->slots = old;
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the objects' map");
  }
  map->slot_count = count;
  for (uint64_t i = 0; i < old_count; i++)
    if (old[i].key) *probe(map, old[i].key) = old[i];
  free(old);
  return 0;
}

/* Removes `key` (backward-shift deletion: no tombstones). */
static void erase(object_map *map, uint64_t key) {
  uint64_t mask = map->slot_count - 1;
  uint64_t i = hash(key) & mask;
  while (map->slots[i].key != key) {
    if (map->slots[i].key == 0) return;
    i = (i + 1) & mask;
  }
  map->used--;
  for (uint64_t j = (i + 1) & mask; map->slots[j].key; j = (j + 1) & mask) {
    uint64_t home = hash(map->slots[j].key) & mask;
    /* the entry at j may move to i if its home is not in (i, j] */
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      map->slots[i] = map->slots[j];
      i = j;
    }
  }
  map->slots[i].key = 0;
}

static uint64_t large_at(const object_map *map, uint64_t address) {
  /* the first entry starting after address */
  uint64_t lo = 0, hi = map->large_count;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (map->large[mid].start <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int remember(object_map *map, uint32_t id, uint64_t start, uint64_t end) {
  if (id >= map->id_capacity) {
    uint64_t capacity = map->id_capacity ? map->id_capacity : 1024;
    while (capacity <= id)
      capacity *= 2;
    uint64_t *starts = realloc(map->starts, capacity * sizeof *starts);
    if (starts) map->starts = starts;
    uint64_t *ends = starts ? realloc(map->ends, capacity * sizeof *ends) : NULL;
    if (!ends) return ms_error_set(MS_ERR_NOMEM, "out of memory for the objects' map");
    map->ends = ends;
    map->id_capacity = capacity;
  }
  map->starts[id] = start;
  map->ends[id] = end;
  return 0;
}

static int add(object_map *map, uint64_t start, uint64_t size, uint32_t id) {
  uint64_t end = start + size < start ? UINT64_MAX : start + size;
  map->last_id = OBJECT_MAP_NONE; /* it may lie inside the object found last */
  map->last_start = map->last_end = 0;
  int rc = remember(map, id, start, end);
  if (rc < 0) return rc;
  if (start < map->low) map->low = start;
  if (end > map->high) map->high = end;
  if (size <= OBJECT_MAP_SMALL) {
    for (uint64_t g = start >> 4; g <= (end - 1) >> 4; g++) {
      if ((map->used + 1) * 2 > map->slot_count && (rc = grow(map)) < 0) return rc;
      granule *slot = probe(map, g + 1);
      if (!slot->key) map->used++;
      *slot = (granule){g + 1, id};
    }
    return 0;
  }
  if (map->large_count == map->large_capacity) {
    uint64_t capacity = map->large_capacity ? map->large_capacity * 2 : 64;
    large_object *grown = realloc(map->large, capacity * sizeof *grown);
    if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for the objects' map");
    map->large = grown;
    map->large_capacity = capacity;
  }
  uint64_t at = large_at(map, start);
  memmove(&map->large[at + 1], &map->large[at], (map->large_count - at) * sizeof *map->large);
  map->large[at] = (large_object){start, end, id};
  map->large_count++;
  return 0;
}

static void remove_at(object_map *map, uint64_t address) {
  map->last_id = OBJECT_MAP_NONE;
  map->last_start = map->last_end = 0;
  uint64_t at = large_at(map, address);
  if (at > 0 && map->large[at - 1].start == address) {
    memmove(&map->large[at - 1], &map->large[at], (map->large_count - at) * sizeof *map->large);
    map->large_count--;
    return;
  }
  if (!map->slot_count) return;
  granule *slot = probe(map, (address >> 4) + 1);
  if (!slot->key) return;
  uint32_t id = slot->id;
  if (id >= map->id_capacity || map->starts[id] != address) return; /* not an object's start */
  for (uint64_t g = address >> 4; g <= (map->ends[id] - 1) >> 4; g++) {
    granule *s = probe(map, g + 1);
    if (s->key && s->id == id) erase(map, g + 1);
  }
}

int object_map_apply(object_map *map, const ms_object_event *event, uint32_t id) {
  if (event->freed) {
    remove_at(map, event->address);
    return 0;
  }
  if (event->size == 0) return 0;
  return add(map, event->address, event->size, id);
}

uint32_t object_map_find(object_map *map, uint64_t address) {
  if (address - map->last_start < map->last_end - map->last_start) return map->last_id;
  if (address < map->low || address >= map->high) return OBJECT_MAP_NONE;
  uint32_t id = OBJECT_MAP_NONE;
  if (map->slot_count) {
    granule *slot = probe(map, (address >> 4) + 1);
    if (slot->key) id = slot->id;
  }
  if (id == OBJECT_MAP_NONE && map->large_count) {
    uint64_t at = large_at(map, address);
    if (at > 0 && address < map->large[at - 1].end) id = map->large[at - 1].id;
  }
  if (id != OBJECT_MAP_NONE) {
    map->last_id = id;
    map->last_start = map->starts[id];
    map->last_end = map->ends[id];
  }
  return id;
}

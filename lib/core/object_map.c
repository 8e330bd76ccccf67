/* Live data objects by address (object_map.h).
 *
 * Objects of at most OBJECT_MAP_SMALL bytes sit in the 4 KiB pages they overlap: a hash of
 * pages, each a table of its 256 granules of 16 bytes (the object each belongs to). A
 * lookup is a probe of a small hash and one load. Measured on bintree's 20000 nodes
 * (annotate --by object, perf): a hash of all 80000 granules (a 4 MiB table) took a third
 * of the time in cache misses, and per page a sorted array searched by bisection a quarter
 * in mispredicted branches. Larger objects sit in one array sorted by address, the one
 * found last tried first.
 *
 * object_map_find_span gives, beside the object, the addresses around that find the same
 * (the object's granules in a group of 16, a large object whole, a gap), so that a caller
 * looks up again only when an access leaves them or an event may change them (the stamps).
 * While no large object overlaps another object, a lookup does not depend on the ones
 * before it, and spans are exact; while one does, spans are empty and every lookup goes to
 * object_map_find. annotate --by object with a span cached per site (perf): two_arrays'
 * lookups and relabelling 33% of its time -> 19%; bintree's (a lookup per node, the node's
 * next access in its span) 1.17 G instructions and 9.8 M mispredicted branches -> 0.9 G and
 * 6.0 M (cachegrind). */
#include "object_map.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "memsnap/error.h"

#define PAGE_GRANULES 256 /* 4 KiB of 16-byte granules */
#define RECENT 8

typedef struct page {
  uint64_t key;  /* page number + 1; 0 empty */
  uint32_t *ids; /* PAGE_GRANULES ids, OBJECT_MAP_NONE where no object */
} page;

typedef struct extent {
  uint64_t start, end;
  uint32_t id;
  uint32_t contested; /* 1: overlaps a small object's granules */
} extent;

struct object_map {
  page *slots;
  uint64_t slot_count, used; /* a power of two; at most half full */
  extent *large;             /* objects above OBJECT_MAP_SMALL, by address */
  uint64_t large_count, large_capacity;
  uint64_t low, high; /* span of every object seen */
  /* the large objects found last (a loop over a few arrays: cg's spmv reads five; with the
   * one found last alone, bisections' mispredicted branches were a third of annotating
   * it by object) */
  extent recent[RECENT];
  unsigned recent_next;
  uint64_t *starts, *ends; /* every object's extent, by id */
  uint64_t id_capacity;
  uint64_t last_page;       /* page number + 1 of the last small lookup, 0 none */
  const uint32_t *last_ids; /* its granules */
  /* Lookups are the same whatever the objects found lately while no large object overlaps
   * another (tangled) or small objects' granules (contested, the live ones counted):
   * object_map_find_span's spans then hold until the stamps change. */
  int tangled;
  uint64_t contested;
  uint64_t stamps[2];
};

object_map *object_map_new(void) {
  object_map *map = calloc(1, sizeof *map);
  if (!map) return NULL;
  map->low = UINT64_MAX;
  return map;
}

void object_map_free(object_map *map) {
  if (!map) return;
  for (uint64_t i = 0; i < map->slot_count; i++)
    free(map->slots[i].ids);
  free(map->slots);
  free(map->large);
  free(map->starts);
  free(map->ends);
  free(map);
}

static uint64_t hash(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 20; }

/* The page's slot, or the empty slot where it would go. */
static page *probe(const object_map *map, uint64_t key) {
  uint64_t mask = map->slot_count - 1;
  for (uint64_t i = hash(key) & mask;; i = (i + 1) & mask)
    if (map->slots[i].key == key || map->slots[i].key == 0) return &map->slots[i];
}

static int grow(object_map *map) {
  uint64_t count = map->slot_count ? map->slot_count * 2 : 256;
  page *old = map->slots;
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

/* The first extent of the large objects that starts after `address`. */
static uint64_t large_after(const object_map *map, uint64_t address) {
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

/* Sets the granules of [start, end) to `id` (where they hold `only`, unless `only` is
 * UINT32_MAX - 1: all), creating pages when `id` is an object. */
#define ANY_ID (OBJECT_MAP_NONE - 1)
static int mark(object_map *map, uint64_t start, uint64_t end, uint32_t id, uint32_t only) {
  for (uint64_t g = start >> 4; g <= (end - 1) >> 4;) {
    uint64_t number = g / PAGE_GRANULES;
    page *slot = map->slot_count ? probe(map, number + 1) : NULL;
    if (!slot || !slot->key) {
      if (id == OBJECT_MAP_NONE) { /* nothing to clear in a page never made */
        g = (number + 1) * PAGE_GRANULES;
        continue;
      }
      if ((map->used + 1) * 2 > map->slot_count) {
        int rc = grow(map);
        if (rc < 0) return rc;
      }
      slot = probe(map, number + 1);
      if (!(slot->ids = malloc(PAGE_GRANULES * sizeof *slot->ids)))
        return ms_error_set(MS_ERR_NOMEM, "out of memory for the objects' map");
      memset(slot->ids, 0xff, PAGE_GRANULES * sizeof *slot->ids);
      slot->key = number + 1;
      map->used++;
      map->last_page = 0; /* a page the last lookup found missing may exist now */
    }
    for (; g <= (end - 1) >> 4 && g / PAGE_GRANULES == number; g++) {
      uint32_t *held = &slot->ids[g % PAGE_GRANULES];
      if (only != ANY_ID && *held != only) continue;
      if (*held != OBJECT_MAP_NONE) map->stamps[0]++; /* a span of the object held */
      *held = id;
    }
  }
  return 0;
}

/* Whether a granule of [start, end) holds an object. */
static int granules_held(const object_map *map, uint64_t start, uint64_t end) {
  uint64_t first = start >> 12, last = (end - 1) >> 12;
  for (uint64_t i = 0, n = first; map->slot_count;) {
    const page *slot; /* each page of the range, or each page made if fewer */
    if (last - first >= map->slot_count) {
      if (i == map->slot_count) break;
      slot = &map->slots[i++];
      if (!slot->key || slot->key - 1 < first || slot->key - 1 > last) continue;
    } else {
      if (n > last) break;
      slot = probe(map, ++n);
      if (!slot->key) continue;
    }
    uint64_t base = (slot->key - 1) << 12;
    uint64_t from = start > base ? (start - base) >> 4 : 0;
    uint64_t to = end - 1 - base < 4096 ? ((end - 1 - base) >> 4) + 1 : PAGE_GRANULES;
    for (uint64_t g = from; g < to; g++)
      if (slot->ids[g] != OBJECT_MAP_NONE) return 1;
  }
  return 0;
}

/* Counts a large object overlapping small objects' granules (a lookup there finds either). */
static void contest(object_map *map, extent *large) {
  if (large->contested) return;
  large->contested = 1;
  map->contested++;
  map->stamps[0]++, map->stamps[1]++;
}

int object_map_apply(object_map *map, const ms_object_event *event, uint32_t id) {
  /* an object may begin inside or end; and the ring starts over, so that lookups after an
   * event do not depend on the ones before it (which object_map_find_span's callers skip) */
  memset(map->recent, 0, sizeof map->recent);
  map->recent_next = 0;
  if (event->freed) {
    uint64_t at = large_after(map, event->address);
    if (at > 0 && map->large[at - 1].start == event->address) {
      map->stamps[0]++;
      if (map->large[at - 1].contested) map->contested--;
      memmove(&map->large[at - 1], &map->large[at], (map->large_count - at) * sizeof *map->large);
      map->large_count--;
      return 0;
    }
    uint32_t found = object_map_find(map, event->address);
    memset(map->recent, 0, sizeof map->recent);
    map->recent_next = 0;
    if (found == OBJECT_MAP_NONE || map->starts[found] != event->address) return 0;
    map->stamps[0]++;
    return mark(map, map->starts[found], map->ends[found], OBJECT_MAP_NONE, found);
  }
  if (event->size == 0) return 0;
  map->stamps[1]++;
  uint64_t start = event->address;
  uint64_t end = start + event->size < start ? UINT64_MAX : start + event->size;
  int rc = remember(map, id, start, end);
  if (rc < 0) return rc;
  /* a small object holds its granules whole: its last one's slack too */
  uint64_t reach =
      event->size <= OBJECT_MAP_SMALL && end < UINT64_MAX - 15 ? ((end - 1) | 15) + 1 : end;
  if ((start & ~15ull) < map->low) map->low = start & ~15ull;
  if (reach > map->high) map->high = reach;
  if (event->size <= OBJECT_MAP_SMALL) {
    uint64_t at = large_after(map, reach - 1); /* the large objects are apart unless tangled */
    if (at > 0 && map->large[at - 1].end > (start & ~15ull)) contest(map, &map->large[at - 1]);
    return mark(map, start, end, id, ANY_ID);
  }
  if (map->large_count == map->large_capacity) {
    uint64_t capacity = map->large_capacity ? map->large_capacity * 2 : 64;
    extent *grown = realloc(map->large, capacity * sizeof *grown);
    if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for the objects' map");
    map->large = grown;
    map->large_capacity = capacity;
  }
  uint64_t at = large_after(map, start);
  if (!map->tangled && ((at > 0 && map->large[at - 1].end > start) ||
                        (at < map->large_count && map->large[at].start < end))) {
    map->tangled = 1; /* for good: the neighbours no longer tell every overlap */
    map->stamps[0]++, map->stamps[1]++;
  }
  memmove(&map->large[at + 1], &map->large[at], (map->large_count - at) * sizeof *map->large);
  map->large[at] = (extent){start, end, id, 0};
  map->large_count++;
  if (granules_held(map, start, end)) contest(map, &map->large[at]);
  return 0;
}

/* The granule table of the page of `address` (NULL: no small object there), the page
 * found last kept at hand. */
static const uint32_t *page_ids(object_map *map, uint64_t address) {
  if ((address >> 12) + 1 != map->last_page) {
    const page *slot = probe(map, (address >> 12) + 1);
    map->last_ids = slot->key ? slot->ids : NULL;
    map->last_page = slot->key ? (address >> 12) + 1 : 0;
  }
  return map->last_ids;
}

uint32_t object_map_find(object_map *map, uint64_t address) {
  if (address < map->low || address >= map->high) return OBJECT_MAP_NONE;
  for (int i = 0; i < RECENT; i++) /* a large object found lately */
    if (address - map->recent[i].start < map->recent[i].end - map->recent[i].start)
      return map->recent[i].id;
  if (map->slot_count) { /* a small object: no more than a probe and a load */
    const uint32_t *ids = page_ids(map, address);
    if (ids && ids[(address >> 4) % PAGE_GRANULES] != OBJECT_MAP_NONE)
      return ids[(address >> 4) % PAGE_GRANULES];
  }
  if (!map->large_count) return OBJECT_MAP_NONE;
  uint64_t at = large_after(map, address);
  if (at == 0 || address >= map->large[at - 1].end) return OBJECT_MAP_NONE;
  map->recent[map->recent_next++ % RECENT] = map->large[at - 1];
  return map->large[at - 1].id;
}

const uint64_t *object_map_stamps(const object_map *map) { return map->stamps; }

/* The granules around granule g that hold what it holds, among its group of 16 (a cache
 * line of the page's table): [*from, *to). Without a branch on what they hold (bintree: a
 * node of 2 granules, where a scan's mispredicted ends waited for the table's cache miss,
 * and ran 300 M instructions of 2.6 G). */
static void granule_run(const uint32_t *ids, unsigned g, unsigned *from, unsigned *to) {
  const uint32_t *group = ids + (g & ~15u), held = ids[g];
  unsigned bit = g & 15u, same = 0;
#ifdef __SSE2__
  const __m128i key = _mm_set1_epi32((int)held);
  for (unsigned k = 0; k < 16; k += 4) {
    __m128i four = _mm_loadu_si128((const __m128i *)(group + k));
    same |= (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(four, key))) << k;
  }
#else
  for (unsigned k = 0; k < 16; k++)
    same |= (unsigned)(group[k] == held) << k;
#endif
  unsigned below = ~same & ((1u << bit) - 1); /* granules below g that differ */
  *from = (g & ~15u) + (below ? 32u - (unsigned)__builtin_clz(below) : 0u);
  *to = g + (unsigned)__builtin_ctz(~(same >> bit));
}

void object_map_find_span(object_map *map, uint64_t address, object_map_span *span) {
  if (map->tangled || map->contested) {
    uint32_t id = object_map_find(map, address);
    *span = (object_map_span){0, 0, 0, id, 0};
    return;
  }
  span->which = 1, span->id = OBJECT_MAP_NONE;
  if (address < map->low || address >= map->high) {
    span->lo = address < map->low ? 0 : map->high;
    span->hi = address < map->low ? map->low : UINT64_MAX;
    span->stamp = map->stamps[1];
    return;
  }
  /* the page's granules that hold what the address's granule holds, else the page */
  uint64_t page_start = address & ~4095ull, from = page_start, to = page_start + 4096;
  if (map->slot_count) {
    const uint32_t *ids = page_ids(map, address);
    if (ids) {
      unsigned g = (unsigned)((address >> 4) % PAGE_GRANULES), down, up;
      uint32_t held = ids[g];
      granule_run(ids, g, &down, &up);
      from = page_start + 16ull * down, to = page_start + 16ull * up;
      if (held != OBJECT_MAP_NONE) {
        *span = (object_map_span){from, to, map->stamps[0], held, 0};
        return;
      }
    }
  }
  /* no granule: a large object, or the gap between two */
  uint64_t at = large_after(map, address);
  if (at > 0 && address < map->large[at - 1].end) {
    const extent *e = &map->large[at - 1];
    *span = (object_map_span){e->start, e->end, map->stamps[0], e->id, 0};
    return;
  }
  if (at > 0 && map->large[at - 1].end > from) from = map->large[at - 1].end;
  if (at < map->large_count && map->large[at].start < to) to = map->large[at].start;
  span->lo = from, span->hi = to, span->stamp = map->stamps[1];
}

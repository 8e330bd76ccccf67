/* The live data objects of a stream at each access (memsnap/objects.h), for attributing
 * accesses to objects: the events applied in stream order, and a lookup of the object
 * that holds an address.
 *
 * Objects of at most OBJECT_MAP_SMALL bytes (most heap blocks) sit in a hash of the 4 KiB
 * pages they overlap, each page a table of its 16-byte granules; larger ones in an array
 * sorted by address. A lookup rejects addresses outside the span of every object seen (the
 * stack, usually), then tries the large objects found lately, the page's granules, and a
 * bisection of the large ones. Where objects overlap (a block inside a mapping), which of
 * them an address belongs to is not specified (the large objects found since the last
 * event first). object_map_find_span adds the span of addresses around that find the same,
 * for a cache of lookups. */
#ifndef MEMSNAP_OBJECT_MAP_H
#define MEMSNAP_OBJECT_MAP_H

#include <stdint.h>

#include "memsnap/objects.h"

#define OBJECT_MAP_NONE UINT32_MAX
#define OBJECT_MAP_SMALL 4096

typedef struct object_map object_map;

object_map *object_map_new(void);
void object_map_free(object_map *map);
/* Applies event `id` of a table (its number there names the object it creates). Frees of
 * unknown objects are ignored. 0, or MS_ERR_NOMEM. */
int object_map_apply(object_map *map, const ms_object_event *event, uint32_t id);
/* The live object holding `address`, OBJECT_MAP_NONE if none. */
uint32_t object_map_find(object_map *map, uint64_t address);
/* A span of addresses that all find the same answer (`id`) for as long as the map's stamp
 * `which` is `stamp` (object_map_stamps); empty when lo == hi. */
typedef struct object_map_span {
  uint64_t lo, hi, stamp;
  uint32_t id, which;
} object_map_span;
/* object_map_find, and the span around `address` where every address finds the same: a
 * cache of lookups in front of the map answers as object_map_find would. Spans are empty
 * while a large object overlaps another object (where lookups try the large objects found
 * lately first). */
void object_map_find_span(object_map *map, uint64_t address, object_map_span *span);
/* The map's two stamps: [0] changes when an object's span may no longer hold (a free, an
 * object over another), [1] when a span of no object may not (an allocation). */
const uint64_t *object_map_stamps(const object_map *map);

#endif

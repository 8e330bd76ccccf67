/* The live data objects of a stream at each access (memsnap/objects.h), for attributing
 * accesses to objects: the events applied in stream order, and a lookup of the object
 * that holds an address.
 *
 * Objects of at most OBJECT_MAP_SMALL bytes (most heap blocks) sit in a hash of the 4 KiB
 * pages they overlap, each page a table of its 16-byte granules; larger ones in an array
 * sorted by address. A lookup rejects addresses outside the span of every object seen (the
 * stack, usually), then tries the large objects found lately, the page's granules, and a
 * bisection of the large ones. Where objects overlap (a block inside a mapping), which of
 * them an address belongs to is not specified. */
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

#endif

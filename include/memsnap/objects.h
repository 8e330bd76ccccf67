/* Data objects of a run: the heap blocks it allocated and freed, its anonymous mappings,
 * and its global and static variables, each with where in the stream it came and went.
 *
 * Capture records them beside the accesses: the Valgrind tool wraps malloc, calloc,
 * realloc, free, memalign, posix_memalign, aligned_alloc, valloc and pvalloc (their own
 * accesses stay in the trace; the wrappers' do not), and sees mmap and munmap of
 * anonymous memory; the site of an allocation is the call instruction that made it (a
 * site of the stream's site table, which may have no accesses of its own). Global and
 * static variables come from the symbol tables (STT_OBJECT) of the executable and the
 * libraries, placed at their load addresses. An .mtr keeps the events in its trailer
 * (docs/formats.md); a trace without them reads as a run without objects.
 *
 * An event's `index` is the number of accesses of the stream before it: an access at
 * index i belongs to the objects allocated by events with index <= i and not freed by an
 * event with index <= i. A realloc is a free of the old block and an allocation of the new
 * one (at the same index); an object freed and a new one allocated at the same address are
 * two objects.
 */
#ifndef MEMSNAP_OBJECTS_H
#define MEMSNAP_OBJECTS_H

#include <stdint.h>

#include "memsnap/access.h"
#include "memsnap/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ms_object_kind {
  MS_OBJECT_HEAP = 0,   /* malloc and friends */
  MS_OBJECT_MAP = 1,    /* an anonymous mmap */
  MS_OBJECT_STATIC = 2, /* a global or static variable (index 0, never freed) */
} ms_object_kind;

typedef struct ms_object_event {
  uint64_t index;   /* accesses of the stream before the event */
  uint64_t address; /* first byte */
  uint64_t size;    /* bytes; for a free, 0 */
  uint32_t site;    /* the allocating call's site, MS_SITE_NONE if unknown (statics, frees) */
  uint16_t thread;
  uint8_t kind;       /* ms_object_kind */
  uint8_t freed;      /* 1: the event frees the live object that starts at `address` */
  const char *name;   /* a static: its symbol; else NULL */
  const char *object; /* a static: the ELF file that defines it; else NULL */
} ms_object_event;

typedef struct ms_object_table ms_object_table;

MS_API ms_object_table *ms_object_table_new(void);
MS_API void ms_object_table_free(ms_object_table *table);
MS_API uint64_t ms_object_table_count(const ms_object_table *table);
/* Events in the order they were added (by index); NULL out of range. Valid until the
 * next addition. */
MS_API const ms_object_event *ms_object_table_get(const ms_object_table *table, uint64_t i);
/* Adds an event (its name and object copied). Events must come in order of index:
 * MS_ERR_ARG otherwise. */
MS_API int ms_object_table_add(ms_object_table *table, const ms_object_event *event);
/* The number of allocations, frees and statics. */
MS_API void ms_object_table_counts(const ms_object_table *table, uint64_t *allocations,
                                   uint64_t *frees, uint64_t *statics);

#ifdef __cplusplus
}
#endif

#endif

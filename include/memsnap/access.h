/* The access record and the batch: what travels from sources to sinks.
 *
 * An access is one data reference by one instruction: its address, size in bytes, kind,
 * the site (an index into the stream's site table, see sites.h) and the thread (a small
 * integer, 0 for the first thread, in order of first appearance). Records travel in
 * batches of thousands so that no stage pays a function call per access.
 */
#ifndef MEMSNAP_ACCESS_H
#define MEMSNAP_ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ms_access_kind {
  MS_LOAD = 0,
  MS_STORE = 1,
  MS_MODIFY = 2, /* a load and a store of the same address and size by one instruction */
} ms_access_kind;

#define MS_ACCESS_KIND_COUNT 3
#define MS_SITE_NONE UINT32_MAX /* no site known (din traces, for example) */

typedef struct ms_access {
  uint64_t address;
  uint32_t site;   /* index into the site table, or MS_SITE_NONE */
  uint16_t thread; /* 0..65535 */
  uint8_t size;    /* bytes, 1..255 */
  uint8_t kind;    /* ms_access_kind */
} ms_access;

/* C11's _Static_assert is not C++'s static_assert: the header is read by both. */
#ifdef __cplusplus
static_assert(sizeof(ms_access) == 16, "ms_access is a 16-byte record");
#else
_Static_assert(sizeof(ms_access) == 16, "ms_access is a 16-byte record");
#endif

#define MS_BATCH_CAPACITY 4096

typedef struct ms_batch {
  ms_access *accesses;
  size_t count;
  size_t capacity;
} ms_batch;

/* Allocates room for `capacity` accesses (MS_BATCH_CAPACITY if 0). */
MS_API int ms_batch_init(ms_batch *batch, size_t capacity);
MS_API void ms_batch_free(ms_batch *batch);

/* "load", "store", "modify" and back; ms_access_kind_parse returns -1 if unknown. */
MS_API const char *ms_access_kind_name(ms_access_kind kind);
MS_API int ms_access_kind_parse(const char *name);

#ifdef __cplusplus
}
#endif

#endif

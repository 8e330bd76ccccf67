/* The site table: instruction address -> object, function, file:line.
 *
 * A site is one instruction that touches memory. Sources add sites as they discover them
 * (ids are dense, in order of addition, and never change); the table owns copies of all
 * strings. ms_site_table_resolve fills function/file/line from an object's ELF symbols and
 * DWARF line table through elfutils libdw, for sites whose information is missing.
 */
#ifndef MEMSNAP_SITES_H
#define MEMSNAP_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_site {
  uint64_t pc;          /* run-time instruction address */
  const char *object;   /* path of the ELF object holding pc, or NULL */
  const char *function; /* symbol name, or NULL */
  const char *file;     /* source file, or NULL */
  uint32_t line;        /* source line, 0 if unknown */
} ms_site;

typedef struct ms_site_table ms_site_table;

MS_API ms_site_table *ms_site_table_new(void);
MS_API void ms_site_table_free(ms_site_table *table);

MS_API uint32_t ms_site_table_count(const ms_site_table *table);
/* NULL if id is out of range. */
MS_API const ms_site *ms_site_table_get(const ms_site_table *table, uint32_t id);

/* Appends a site (any string may be NULL) and returns its id (>= 0) or a negative status. */
MS_API int64_t ms_site_table_add(ms_site_table *table, uint64_t pc, const char *object,
                                 const char *function, const char *file, uint32_t line);
/* Id of the first site with this pc, or -1. O(1) on average. */
MS_API int64_t ms_site_table_find(const ms_site_table *table, uint64_t pc);
/* Replaces the location of site `id` (strings copied; NULL clears). */
MS_API int ms_site_table_set_location(ms_site_table *table, uint32_t id, const char *function,
                                      const char *file, uint32_t line);

/* For every site whose object is `object_path` and whose function or line is missing,
 * looks pc - load_bias up in that object's symbol table and DWARF line table (libdw).
 * Objects without debug info give function names only. Returns the number of sites
 * resolved, or a negative status if the object cannot be opened. */
MS_API int ms_site_table_resolve(ms_site_table *table, const char *object_path, uint64_t load_bias);

/* For every site of `object_path` that still has neither function nor file, names it by
 * the object's base name and the link-time address pc - load_bias, as "gzip+0x430e" (the
 * address that addr2line and objdump take): a stripped program's own code has no symbol,
 * and this name stays the same across runs and tells objects apart, where the run-time
 * pc does neither. Returns the number of sites named, or a negative status. */
MS_API int ms_site_table_name_by_offset(ms_site_table *table, const char *object_path,
                                        uint64_t load_bias);

/* "function (file:line)", "function (0x4005d0)", "gzip+0x430e" (named by offset: no
 * run-time pc) or "0x4005d0" into buf; returns buf. */
MS_API const char *ms_site_describe(const ms_site *site, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif

/* Where the misses are: a hierarchy's accesses and misses per function and per source line.
 *
 * An annotation simulates one hierarchy (memsnap/cache.h) and counts each site's accesses
 * at the first level as the hierarchy's model counts them (memsnap model: one per line an
 * access spans; Cachegrind model: one per reference), beside the simulator's misses per
 * site and level. Sites are then added up per function (object and symbol) and per source
 * line (file and line, from DWARF); a site without a line stands for itself (its
 * instruction, `object+0xOFFSET` or its pc), and one without a symbol is counted under
 * the function "???" of its object. The rows of either kind add up to the simulation's
 * totals, less the accesses that carry no site (`unattributed`).
 *
 * By data object (memsnap/objects.h), each access counts for the live object that holds its
 * address at that point of the stream (each object, or all objects of one allocating call,
 * or a global or static variable by its symbol): the simulation's sites are replaced by the
 * objects, so that its misses per site are the misses per object.
 *
 * The text report is cg_annotate's: the totals, the functions by misses at one level, the
 * lines by the same, then each hot line's source text with its neighbours when the file
 * is found (its path as DWARF gives it, else under one of the source folders given).
 */
#ifndef MEMSNAP_ANNOTATE_H
#define MEMSNAP_ANNOTATE_H

#include <stdint.h>
#include <stdio.h>

#include "memsnap/api.h"
#include "memsnap/cache.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ms_annotate_by {
  MS_ANNOTATE_CODE = 0,       /* functions and source lines */
  MS_ANNOTATE_OBJECTS = 1,    /* each data object (memsnap/objects.h) */
  MS_ANNOTATE_ALLOCATIONS = 2 /* data objects by allocating call (statics by symbol) */
} ms_annotate_by;

typedef struct ms_annotate_config {
  ms_hierarchy_config hierarchy;
  ms_annotate_by by;
  int sort_level;                 /* 0-based level whose misses order the rows; -1: the last */
  int functions;                  /* functions listed in reports (default 10; -1 all) */
  int lines;                      /* lines listed (default 20; -1 all) */
  int context;                    /* source lines shown around each hot line (default 2) */
  int source;                     /* 1: print source text in the text report (default) */
  const char *const *source_dirs; /* folders to look for source files in, or NULL */
  int source_dir_count;
} ms_annotate_config;

/* The defaults above, for `hierarchy`. */
MS_API void ms_annotate_config_default(ms_annotate_config *config,
                                       const ms_hierarchy_config *hierarchy);

typedef struct ms_annotation_row {
  const char *object;   /* ELF object, or NULL */
  const char *function; /* symbol, or NULL ("???") */
  const char *file;     /* source file (line rows), or NULL */
  uint32_t line;        /* source line, 0 for a function row or a site without a line */
  uint64_t pc;          /* a line row without a file: the site's pc */
  uint32_t site;        /* a line row without a file: the site */
  uint64_t accesses;    /* first-level accesses */
  uint64_t misses[MS_HIERARCHY_MAX_LEVELS];
  /* data object rows: the kind (ms_object_kind), a static's symbol, the first object's
   * address, the objects and their bytes; the allocating call's site in the fields above
   * (object, function, file, line, pc, site) */
  uint8_t kind;
  const char *name;
  uint64_t address, objects, bytes;
} ms_annotation_row;

typedef struct ms_annotation {
  const ms_hierarchy *hierarchy;
  int level_count;
  int sort_level;
  ms_annotation_row total;        /* the simulation's totals */
  ms_annotation_row unattributed; /* accesses without a site */
  uint64_t function_count, line_count, object_count;
  ms_annotation_row *functions; /* most misses at sort_level first, then most accesses */
  ms_annotation_row *lines;     /* the same order */
  /* by objects or allocations (functions and lines are then empty): the rows, in the
   * same order; `unattributed` holds the accesses outside every object (the stack, memory
   * the program did not allocate through the functions capture sees) */
  ms_annotation_row *objects;
  int has_objects; /* the stream recorded data objects */
} ms_annotation;

typedef struct ms_annotator ms_annotator;

MS_API int ms_annotator_new(const ms_annotate_config *config, ms_annotator **out);
MS_API void ms_annotator_free(ms_annotator *annotator);
/* The sink that feeds it (owned by the annotator: do not destroy it). */
MS_API ms_sink *ms_annotator_sink(ms_annotator *annotator);
/* After the stream's end: the rows, described through `sites` (the stream's site table).
 * The annotation stays the annotator's. */
MS_API int ms_annotator_finish(ms_annotator *annotator, const ms_site_table *sites,
                               const ms_annotation **out);
MS_API int ms_annotation_write_text(FILE *out, const ms_annotator *annotator);
MS_API int ms_annotation_write_json(FILE *out, const ms_annotator *annotator);

#ifdef __cplusplus
}
#endif

#endif

/* Helpers shared by the capture tests: run a program under memsnap's tool and collect what
 * it reports, or under Lackey --trace-mem=yes (the oracle) and count its lines. */
#ifndef MEMSNAP_TEST_CAPTURE_UTIL_H
#define MEMSNAP_TEST_CAPTURE_UTIL_H

#include <stdint.h>

#include "memsnap/memsnap.h"

typedef struct kind_counts {
  uint64_t by_kind[MS_ACCESS_KIND_COUNT];
  uint64_t total;
} kind_counts;

/* Called for every batch while a capture runs; return non-zero to stop reading. */
typedef int (*batch_visitor)(void *context, ms_source *source, const ms_batch *batch);

/* Opens a capture of argv (NULL-terminated), reads it to the end (or until the visitor
 * stops), counts accesses by kind. Returns the open source (caller destroys) or fails the
 * test. */
ms_source *capture_run(char *const *argv, kind_counts *counts, batch_visitor visitor,
                       void *context);

/* Runs `valgrind --tool=lackey --trace-mem=yes` on argv with the same VALGRIND_LIB and
 * standard streams as a capture, and counts its " L", " S" and " M" lines. */
void lackey_counts(char *const *argv, kind_counts *counts);

/* The build tree's VALGRIND_LIB folder. */
const char *capture_tool_dir(void);

#endif

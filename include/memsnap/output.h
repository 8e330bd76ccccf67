/* Atomic output files: write to a temporary name beside the target, then rename.
 *
 * A reader never sees a half-written output: until ms_output_commit succeeds the target
 * keeps its old contents (or does not exist); ms_output_abort removes the temporary.
 * "-" means standard output (no rename, committed by flushing). A target that exists and
 * is not a regular file (/dev/null, a FIFO, a terminal, /dev/stdout) is written in place:
 * renaming onto it would replace the device or FIFO with a file (as root, `-o /dev/null`
 * replaced /dev/null itself).
 */
#ifndef MEMSNAP_OUTPUT_H
#define MEMSNAP_OUTPUT_H

#include <stdio.h>

#include "memsnap/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_output {
  FILE *file;      /* write here */
  char *path;      /* target path */
  char *temp_path; /* temporary path, NULL for stdout and targets written in place */
} ms_output;

MS_API int ms_output_open(ms_output *out, const char *path);
/* Flushes, fsyncs, closes and renames onto the target. On failure the temporary is removed. */
MS_API int ms_output_commit(ms_output *out);
/* Closes and removes the temporary. Safe to call after commit (does nothing then). */
MS_API void ms_output_abort(ms_output *out);

#ifdef __cplusplus
}
#endif

#endif

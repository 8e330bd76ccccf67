/* Live capture of an unmodified program's data accesses through memsnap's Valgrind tool.
 *
 * ms_capture_open starts `valgrind --tool=memsnap PROGRAM ARGS` with VALGRIND_LIB pointing
 * at a folder that mirrors Valgrind's libexec folder plus the memsnap tool, and returns a
 * source that reads the tool's raw records from a pipe. The tool does no encoding; this
 * process does. When the stream ends, info.exit_status holds the program's exit status
 * (128 + signal number if it was killed, and MS_STREAM_TRUNCATED is then set).
 */
#ifndef MEMSNAP_CAPTURE_H
#define MEMSNAP_CAPTURE_H

#include "memsnap/stream.h"

typedef struct ms_capture_options {
  const char *tool_dir; /* the VALGRIND_LIB folder; NULL: $MEMSNAP_VALGRIND_LIB, else the
                           installed or build-tree location */
  int quiet;            /* pass -q to valgrind (default on in the CLI) */
} ms_capture_options;

int ms_capture_open(const ms_capture_options *options, int argc, char *const *argv,
                    ms_source **out);

#endif

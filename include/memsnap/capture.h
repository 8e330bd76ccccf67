/* Live capture of a program's data accesses: through memsnap's Valgrind tool (any program),
 * or through memsnap's compiler runtime (programs built by memsnap-cc; see lib/capture/rt).
 *
 * ms_capture_open starts `valgrind --tool=memsnap PROGRAM ARGS` with VALGRIND_LIB pointing
 * at a folder that mirrors Valgrind's libexec folder plus the memsnap tool, and returns a
 * source that reads the tool's raw records from a pipe. The tool does no encoding; this
 * process does. When the stream ends, info.exit_status holds the program's exit status
 * (128 + signal number if it was killed, and MS_STREAM_TRUNCATED is then set).
 */
#ifndef MEMSNAP_CAPTURE_H
#define MEMSNAP_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/api.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ms_capture_via {
  MS_CAPTURE_AUTO = 0, /* the runtime if the program contains it, else Valgrind */
  MS_CAPTURE_VALGRIND, /* memsnap's Valgrind tool */
  MS_CAPTURE_RT,       /* the program's own memsnap runtime (built with memsnap-cc) */
} ms_capture_via;

typedef struct ms_capture_options {
  const char *tool_dir; /* the VALGRIND_LIB folder; NULL: $MEMSNAP_VALGRIND_LIB, else the
                           installed or build-tree location */
  int quiet;            /* pass -q to valgrind (default on in the CLI) */
  ms_capture_via via;
  /* Interval sampling (Chameleon dissertation, section 3.3.1): record sample_on
   * consecutive accesses, skip sample_off, and so on (sample_on = 0: record all). The rt
   * path counts per thread, in the program; the Valgrind path counts over the whole
   * stream, in this process. The stream is flagged MS_STREAM_SAMPLED. */
  uint64_t sample_on, sample_off;
  /* Valgrind path: a program that replaces itself (execve: env, taskset, numactl, shell
   * scripts, version-manager shims) is followed into the new program (Valgrind's
   * --trace-children=yes), unless this is set; the stream is flagged
   * MS_STREAM_EXEC_FOLLOWED. Processes the program forks are never followed. */
  int no_follow_exec;
  /* Capture data objects (memsnap/objects.h): the allocation functions wrapped by the
   * tool's preload library (Valgrind path) or by memsnap-cc's runtime (rt path, told by
   * MEMSNAP_OBJECTS=1; heap blocks only), anonymous mappings (Valgrind path), global and
   * static variables (both). Off by default: the library costs the loader about 4100
   * accesses of its own at start-up (it joins every symbol lookup), and without it the
   * stream is the program's accesses exactly as Cachegrind and Lackey count them. */
  int objects;
  /* Valgrind path: Valgrind's own messages (its warnings and errors; its banner too without
   * quiet) are read from a pipe (--log-fd) instead of going to the program's standard
   * error, and handed here unchanged as they come; NULL: they are dropped. Either way the
   * capture recognises a Valgrind that gave up (it exits without running the tool's end,
   * e.g. on debug information it cannot read): before the program ran, ms_source_next fails
   * with Valgrind's first line and what to do; later, info.capture_failure says so. */
  void (*tool_messages)(void *context, const char *text, size_t length);
  void *tool_messages_context;
} ms_capture_options;

MS_API int ms_capture_open(const ms_capture_options *options, int argc, char *const *argv,
                           ms_source **out);

/* 1 if the ELF file `path` contains memsnap's compiler runtime (its .memsnap_rt section),
 * 0 if not (or not an ELF file), negative if it cannot be read. */
MS_API int ms_capture_has_rt(const char *path);

/* The writer side of MEMSNAP_OUT: reads the stream that an instrumented program's runtime
 * sends on descriptors it opened (notice socket, shared slots, credit socket), for the
 * program named by argc/argv. The exit status comes from the stream's last record. The
 * three descriptors belong to the source from the call on, whatever it returns. */
MS_API int ms_capture_attach(int notice_fd, int shm_fd, int credit_fd,
                             const ms_capture_options *options, int argc, char *const *argv,
                             ms_source **out);

#ifdef __cplusplus
}
#endif

#endif

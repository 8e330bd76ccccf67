/* Input files that are not files: "-" (standard input), pipes (`<(zcat t.lackey.gz)`,
 * /dev/fd/N) and FIFOs, as well as regular files, behind one set of calls.
 *
 * Telling a file's kind takes a look at its first bytes, and a pipe's bytes can be read
 * only once. So the first look at a stream opens it and keeps what was read (the prefix);
 * later looks are served from that prefix, and the reader that finally opens the stream
 * gets the prefix and then the rest of the stream. The streams are kept by path for the
 * whole process (a pipe is a process-wide thing: two opens of /dev/fd/63 are one pipe).
 *
 * Two ways to open an input:
 * - ms_input_open: the bytes in order, once (Lackey and din are read as they arrive, in
 *   constant memory, and a stream opened this way cannot be opened again);
 * - ms_input_open_seekable: a file that can be read at any offset and opened again (.mtr
 *   traces, whose site table and chunk index are at their end, profiles, signatures): a
 *   stream is first copied to an unlinked temporary file in $TMPDIR (or /tmp), once.
 *
 * Opening a FIFO blocks until a program opens it for writing; the notice set by
 * ms_input_set_wait_notice is called if that takes more than a second. Standard input
 * that is a terminal is refused (nothing memsnap reads is typed). Regular files behave as
 * fopen() would; "-" is never a file name.
 */
#ifndef MEMSNAP_INPUT_H
#define MEMSNAP_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memsnap/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if `path` is "-" or names something other than a regular file or a directory (a pipe,
 * a FIFO, a character device): read in order, once; 0 otherwise (also if it does not
 * exist: opening it then says so). */
MS_API int ms_input_is_stream(const char *path);
/* The name for messages: "standard input" for "-", else the path itself. */
MS_API const char *ms_input_name(const char *path);

/* Copies up to `size` bytes at `offset` from the start of the input into buf, without
 * consuming anything; *got is less than size only at the end of the input. Blocks on a
 * stream until the bytes arrive. Returns 0 or a negative status (cannot open, read
 * failed, or a stream already read). */
MS_API int ms_input_peek(const char *path, uint64_t offset, void *buf, size_t size, size_t *got);

/* The whole input from its first byte, for reading in order (fread). A stream can be
 * opened this way once; the caller fcloses the FILE. */
MS_API int ms_input_open(const char *path, FILE **out);
/* The whole input as a regular file (fileno() and pread() work): the file itself, or a
 * stream's temporary copy, which any later open of the same path gets again. */
MS_API int ms_input_open_seekable(const char *path, FILE **out);

/* Bytes of the input: a regular file's size, a stream's bytes read so far (all of them
 * once read to its end). 0 if unknown. */
MS_API uint64_t ms_input_size(const char *path);

/* Called (from another thread) with the input's name when opening a FIFO has waited for
 * a writer for a second; NULL (the default) for none. */
MS_API void ms_input_set_wait_notice(void (*notice)(const char *name));

#ifdef __cplusplus
}
#endif

#endif

/* Private to the launcher's two files: capture_spawn.c starts the program (or takes a
 * channel a runtime opened) and capture_decode.c turns the channel's records into batches.
 * The source they share, and the transport's sizes. */
#ifndef MEMSNAP_CAPTURE_INTERNAL_H
#define MEMSNAP_CAPTURE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memsnap/stream.h"

#include "../protocol.h"
#define UNIT MS_VG_UNIT_BYTES
#define SLOT_BYTES ((size_t)MS_VG_SLOT_UNITS * MS_VG_UNIT_BYTES)
/* 8 MiB in flight: the tool waits for a free slot only when this process is far behind. */
#define SLOT_COUNT 8
#define READ_BUFFER ((size_t)64 * UNIT) /* the pipe only carries HELLO and CHUNK notices */

typedef struct tool_names { /* what Valgrind itself said about a site */
  char *function;
  char *file;
  uint32_t line;
} tool_names;

typedef struct object_bias {
  char *path;
  uint64_t bias;
} object_bias;

typedef struct capture_source {
  ms_source base;
  pid_t pid;                              /* > 0 while the child has not been reaped */
  int fd;                                 /* read end of the notice pipe, -1 once closed */
  int credit_fd;                          /* our end of the credit socket, -1 once closed */
  unsigned char *slots;                   /* the shared slots, read-only here */
  const unsigned char *chunk, *chunk_end; /* units of the slot being parsed */
  int chunk_slot;                         /* that slot, -1 if none */
  unsigned char *buffer;
  size_t start, end; /* unread bytes are buffer[start, end) */
  int eof;
  int finished; /* end-of-stream work done */
  int attached; /* ms_capture_attach: the credit socket stays open until destroy, so that
                   the program, waiting for its end of file, exits after the trace is written */
  int saw_exit;
  int64_t exit_code; /* from the EXIT record (rt: the status given to exit) */
  int signal_number; /* from a SIGNAL record, 0 if none */
  int forwarding;    /* its pid is in forward_pids (see forward_begin) */
  int exec_last;     /* an EXEC unit ended the last slot read: no slot came after it */
  /* Followed execs (Valgrind path): each image's tool numbers its sites and threads from 0;
   * here its site i is site_base + i, its thread 0 (the one that called execve) keeps
   * exec_thread, and its thread t > 0 is thread_base + t - 1 (info.execs counts them). */
  uint32_t site_base, thread_base;
  uint16_t exec_thread;
  int rt_layout;        /* HELLO said MS_RT_VERSION: the slots hold the runtime's 8-byte words */
  uint64_t *site_tails; /* rt: site | size << 48 | kind << 56 of each site, from its SITE */
  int sampling;         /* sample here (Valgrind path) */
  int capture_objects;  /* data objects captured (ms_capture_options.objects) */
  int sample_recording;
  uint64_t sample_left;   /* accesses left in the current phase */
  uint16_t thread;        /* thread of the accesses that follow */
  uint64_t accesses_read; /* access records received, sampled out or not */
  uint64_t delivered;     /* accesses handed out in the batches before this one */
  size_t filling;         /* accesses of the batch being filled, before the unit at hand */
  /* Valgrind's own messages (--log-fd): read end of their pipe (-1: none, or closed), where
   * they go, and what the diagnosis of a Valgrind that gave up needs of them: the first
   * line (its "==pid== " cut off) and whether they speak of debug information. */
  int log_fd;
  void (*log_to)(void *context, const char *text, size_t length);
  void *log_context;
  char log_line[256], log_first[256];
  size_t log_line_length;
  int log_dwarf_form, log_debuginfo;
  int gave_up; /* Valgrind exited without the tool's end before any access: an error */
  tool_names *names;
  size_t names_capacity;
  object_bias *objects;
  size_t object_count, object_capacity;
} capture_source;

/* capture_decode.c: a source with no channel yet (NULL if out of memory); its destroy
 * (closes what is open, kills and reaps a child left running); the tool's or runtime's
 * HELLO, read first (a Valgrind that failed to start closes the channel instead: the error
 * says why). */
capture_source *capture_new_source(void);
void capture_destroy(ms_source *source);
int capture_expect_hello(capture_source *cs, const char *program);

/* capture_spawn.c: waits for the child to end (status -1 if waitpid failed) and stops
 * forwarding signals to it. */
void capture_wait_child(capture_source *cs, int *status);

/* symbols/data_symbols.c: `emit` for each global or static variable of the ELF file at
 * `path` (STT_OBJECT with a size, .symtab else .dynsym; one name per address), at its
 * address plus `bias`, in address order. 0 (also for a file that cannot be read), or the
 * first negative status of `emit`. */
int capture_data_symbols(const char *path, uint64_t bias,
                         int (*emit)(void *context, uint64_t address, uint64_t size,
                                     const char *name),
                         void *context);

#endif

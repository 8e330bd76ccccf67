/* Live capture through memsnap's Valgrind tool (see memsnap/capture.h).
 *
 * ms_capture_open starts
 *     VALGRIND_LIB=<tool dir> valgrind --tool=memsnap [-q] --memsnap-fd=N --memsnap-shm=M
 *         --memsnap-credit=C --memsnap-slots=S PROGRAM ARGS
 * waits for the tool's HELLO (so that a Valgrind that cannot start is reported at open, as
 * MS_ERR_CHILD), and returns a source that turns the tool's records into access batches.
 * Transport: M is a memfd of S slots of 1 MiB shared with the tool, which fills them in
 * turn and announces each full slot with a CHUNK unit on the pipe N; this process parses
 * the slot in place and gives it back with one byte on the socket C (a socket, so that a
 * dead tool gives EPIPE rather than SIGPIPE: send(MSG_NOSIGNAL)). The wire format is
 * described at the top of lib/capture/valgrind/ms_main.c and in README.md beside this
 * file; in short, 16-byte units {u64 a, u64 b} where b packs site<<32 | extra<<16 |
 * tag<<8 | size, with tags access (load, store, modify), HELLO, THREAD, SITE, EXIT, CHUNK.
 *
 * End of stream: the pipe reaches end of file when the tool exits (or is killed). The
 * source then reaps the child: exit_status is the exit code, or 128 + signal, in which
 * case the stream is flagged MS_STREAM_TRUNCATED (so it is when the tool's EXIT record is
 * missing). Finally every site is resolved through libdw from its object's file and load
 * bias; where libdw finds nothing, Valgrind's own names are kept.
 *
 * The compiler runtime (lib/capture/rt) speaks the same protocol: with --via=rt the program
 * itself is started, with MEMSNAP_RT_CHANNEL=N,M,C (and MEMSNAP_SAMPLE=ON/OFF) in its
 * environment, and its runtime sends HELLO from a constructor; ms_capture_attach reads a
 * channel that a runtime opened itself (MEMSNAP_OUT). The rt runtime's EXIT carries the
 * exit status and a SIGNAL record (tag 0x15) reports a fatal signal. Its HELLO says protocol
 * version 4: its slots hold 8-byte words, address | site << 48 per access (../protocol.h).
 * Sampling on the Valgrind path happens here, before any record is decoded into a batch:
 * skipped accesses cost a comparison each, and no encoding.
 *
 * Assumption: the tool writes whole notices in order; a partial notice at end of file can
 * only come from a killed process and is dropped (the stream is then truncated anyway).
 * Nothing in a slot is read after its credit is returned.
 */
#include "memsnap/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memsnap/error.h"

#define TOOL_NAME "memsnap-amd64-linux"
#include "../protocol.h"
#define UNIT MS_VG_UNIT_BYTES
#define SLOT_BYTES ((size_t)MS_VG_SLOT_UNITS * MS_VG_UNIT_BYTES)
/* 8 MiB in flight: the tool waits for a free slot only when this process is far behind. */
#define SLOT_COUNT 8
#define READ_BUFFER ((size_t)64 * UNIT) /* the pipe only carries HELLO and CHUNK notices */

extern char **environ;

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
  int sample_recording;
  uint64_t sample_left; /* accesses left in the current phase */
  uint16_t thread;      /* thread of the accesses that follow */
  uint64_t accesses_read; /* access records received, sampled out or not */
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

/*------------------------------------------------------------*/
/* Reading units                                              */
/*------------------------------------------------------------*/

static inline uint64_t read_u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v; /* amd64 only: the tool and this process share the byte order */
}

/* The fields of a slot unit's second word b, in the sender's layout (../protocol.h): the
 * Valgrind tool's site << 32 | extra << 16 | tag << 8 | size, or the runtime's (control
 * units and long forms) site | field << 32 | size << 48 | tag << 56 (field: thread or extra
 * units). */
static inline unsigned unit_tag(int rt, uint64_t b) {
  return rt ? (unsigned)(b >> 56) : (unsigned)(b >> 8) & 0xff;
}
static inline uint32_t unit_site(int rt, uint64_t b) {
  return rt ? (uint32_t)b : (uint32_t)(b >> 32);
}
static inline size_t unit_extra(int rt, uint64_t b) {
  return (size_t)(rt ? b >> 32 : b >> 16) & 0xffff;
}

/* One line of Valgrind's messages, for the diagnosis: the first one, and the words that say
 * its debug-information reader gave up. */
static void scan_log_line(capture_source *cs, char *line) {
  char *text = line;
  if (text[0] == '=' && text[1] == '=') { /* "==1234== " */
    char *end = strstr(text + 2, "== ");
    if (end) text = end + 3;
  }
  text[strcspn(text, "\r\n")] = '\0';
  if (strstr(text, "unhandled dwarf2 abbrev form")) cs->log_dwarf_form = 1;
  if (strstr(text, "debuginfo reader")) cs->log_debuginfo = 1;
  if (!cs->log_first[0] && text[strspn(text, " \t")])
    snprintf(cs->log_first, sizeof cs->log_first, "%s", text);
}

/* Reads what is in Valgrind's log pipe (one read: poll said there is something, or the
 * pipe is non-blocking), hands it on and scans its lines; closes the pipe at end of file.
 * Returns the bytes read, 0 at end of file or when nothing was there. */
static ssize_t read_log(capture_source *cs) {
  char text[4096];
  ssize_t n = read(cs->log_fd, text, sizeof text);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  if (n <= 0) {
    close(cs->log_fd);
    cs->log_fd = -1;
    return 0;
  }
  if (cs->log_to) cs->log_to(cs->log_context, text, (size_t)n);
  for (ssize_t i = 0; i < n; i++) {
    if (cs->log_line_length + 1 < sizeof cs->log_line) cs->log_line[cs->log_line_length++] = text[i];
    if (text[i] != '\n') continue;
    cs->log_line[cs->log_line_length] = '\0';
    scan_log_line(cs, cs->log_line);
    cs->log_line_length = 0;
  }
  return n;
}

/* After Valgrind exited: the rest of its messages (without waiting for a process it forked,
 * which may hold the pipe open), then the pipe is closed. */
static void drain_log(capture_source *cs) {
  if (cs->log_fd < 0) return;
  fcntl(cs->log_fd, F_SETFL, fcntl(cs->log_fd, F_GETFL) | O_NONBLOCK);
  while (cs->log_fd >= 0 && read_log(cs) > 0) {
  }
  if (cs->log_line_length) { /* a last line without its newline */
    cs->log_line[cs->log_line_length] = '\0';
    scan_log_line(cs, cs->log_line);
    cs->log_line_length = 0;
  }
  if (cs->log_fd >= 0) close(cs->log_fd);
  cs->log_fd = -1;
}

/* Makes at least `need` bytes available (need <= READ_BUFFER); 0 if they are, 1 at end of
 * file with fewer, negative on a read error. */
static int fill(capture_source *cs, size_t need) {
  while (cs->end - cs->start < need) {
    if (cs->eof) return 1;
    if (cs->start > 0) {
      memmove(cs->buffer, cs->buffer + cs->start, cs->end - cs->start);
      cs->end -= cs->start;
      cs->start = 0;
    }
    if (cs->log_fd >= 0) { /* Valgrind blocks on a full log pipe: read both */
      struct pollfd fds[2] = {{.fd = cs->fd, .events = POLLIN}, {.fd = cs->log_fd, .events = POLLIN}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return ms_error_set(MS_ERR_IO, "waiting for the capture channel: %s", strerror(errno));
      }
      if (fds[1].revents) read_log(cs);
      if (!fds[0].revents) continue;
    }
    ssize_t n = read(cs->fd, cs->buffer + cs->end, READ_BUFFER - cs->end);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ms_error_set(MS_ERR_IO, "reading the capture channel: %s", strerror(errno));
    if (n == 0) cs->eof = 1;
    cs->end += (size_t)n;
  }
  return 0;
}

/* Signals while a program runs, as system() and `perf record` have them: an interrupt or
 * quit from the terminal reaches the whole process group, so memsnap ignores it and lets the
 * program decide; a termination or hangup sent to memsnap alone (`timeout 600 memsnap
 * record ...`, a batch system's time limit) is passed on to the program. Either way the
 * stream then ends with the program's death, and the command writes what it observed
 * (truncated) instead of dying with a temporary file left behind. */
#define FORWARD_SLOTS 8
static volatile pid_t forward_pids[FORWARD_SLOTS];
static int forward_count;
static struct sigaction forward_saved[4];
static const int forward_signals[4] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};

static void forward_signal(int signo) {
  int saved = errno;
  for (int i = 0; i < FORWARD_SLOTS; i++) {
    pid_t pid = forward_pids[i];
    if (pid > 0) kill(pid, signo);
  }
  errno = saved;
}

static void forward_begin(capture_source *cs) {
  int slot = 0;
  while (slot < FORWARD_SLOTS && forward_pids[slot] > 0)
    slot++;
  if (cs->pid <= 0 || slot == FORWARD_SLOTS) return;
  forward_pids[slot] = cs->pid;
  cs->forwarding = 1;
  if (forward_count++ > 0) return;
  struct sigaction forward = {.sa_handler = forward_signal, .sa_flags = SA_RESTART};
  struct sigaction ignore = {.sa_handler = SIG_IGN};
  sigemptyset(&forward.sa_mask);
  sigemptyset(&ignore.sa_mask);
  for (int i = 0; i < 4; i++)
    sigaction(forward_signals[i], i < 2 ? &forward : &ignore, &forward_saved[i]);
}

static void forward_end(capture_source *cs, pid_t pid) {
  if (!cs->forwarding) return;
  cs->forwarding = 0;
  for (int i = 0; i < FORWARD_SLOTS; i++)
    if (forward_pids[i] == pid) forward_pids[i] = 0;
  if (--forward_count > 0) return;
  for (int i = 0; i < 4; i++)
    sigaction(forward_signals[i], &forward_saved[i], NULL);
}

static void wait_child(capture_source *cs, int *status) {
  *status = 0;
  const pid_t pid = cs->pid;
  while (cs->pid > 0) {
    pid_t r = waitpid(cs->pid, status, 0);
    if (r == cs->pid || (r < 0 && errno != EINTR)) {
      if (r < 0) *status = -1;
      cs->pid = -1;
    }
  }
  forward_end(cs, pid);
}

/*------------------------------------------------------------*/
/* Sites                                                      */
/*------------------------------------------------------------*/

static char *dup_nonempty(const char *s) { return s && *s ? strdup(s) : NULL; }

static int remember_object(capture_source *cs, const char *path, uint64_t bias) {
  if (!path || path[0] != '/') return MS_OK; /* vdso, JIT code: nothing to read */
  for (size_t i = 0; i < cs->object_count; i++)
    if (strcmp(cs->objects[i].path, path) == 0) return MS_OK;
  if (cs->object_count == cs->object_capacity) {
    size_t capacity = cs->object_capacity ? 2 * cs->object_capacity : 16;
    object_bias *grown = realloc(cs->objects, capacity * sizeof *grown);
    if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for capture objects");
    cs->objects = grown;
    cs->object_capacity = capacity;
  }
  char *copy = strdup(path);
  if (!copy) return ms_error_set(MS_ERR_NOMEM, "out of memory for capture objects");
  cs->objects[cs->object_count++] = (object_bias){copy, bias};
  return MS_OK;
}

/* A SITE record: its `extra` payload units start at `payload`. */
static int define_site(capture_source *cs, uint32_t id, uint64_t pc, const unsigned char *payload,
                       size_t extra) {
  ms_site_table *table = cs->base.info.sites;
  if (id != ms_site_table_count(table) || extra < 1)
    return ms_error_set(MS_ERR_FORMAT, "capture channel: site %u defined out of order", id);
  uint64_t bias = read_u64(payload);
  uint32_t line;
  memcpy(&line, payload + 8, 4);
  const char *strings[3] = {"", "", ""};
  const char *p = (const char *)payload + UNIT, *end = (const char *)payload + extra * UNIT;
  for (int i = 0; i < 3 && p < end; i++) {
    const char *nul = memchr(p, '\0', (size_t)(end - p));
    if (!nul) return ms_error_set(MS_ERR_FORMAT, "capture channel: site %u: unterminated name", id);
    strings[i] = p;
    p = nul + 1;
  }
  /* Valgrind's names serve while the stream runs (a `dump --limit` may stop early); at the
   * end of the stream resolve_sites replaces them with libdw's. */
  int64_t added =
      ms_site_table_add(table, pc, strings[0][0] ? strings[0] : NULL,
                        strings[1][0] ? strings[1] : NULL, strings[2][0] ? strings[2] : NULL, line);
  if (added < 0) return (int)added;
  if (id >= cs->names_capacity) {
    size_t capacity = cs->names_capacity ? 2 * cs->names_capacity : 1024;
    tool_names *grown = realloc(cs->names, capacity * sizeof *grown);
    if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for sites");
    memset(grown + cs->names_capacity, 0, (capacity - cs->names_capacity) * sizeof *grown);
    uint64_t *tails = realloc(cs->site_tails, capacity * sizeof *tails);
    if (!tails) {
      cs->names = grown; /* kept: destroy frees it */
      return ms_error_set(MS_ERR_NOMEM, "out of memory for sites");
    }
    cs->site_tails = tails;
    cs->names = grown;
    cs->names_capacity = capacity;
  }
  if (cs->rt_layout) {
    uint32_t attributes; /* size | kind << 8 */
    memcpy(&attributes, payload + 12, 4);
    if ((attributes >> 8 & 0xff) > TAG_MODIFY)
      return ms_error_set(MS_ERR_FORMAT, "capture channel: site %u: bad kind %u", id,
                          attributes >> 8 & 0xff);
    cs->site_tails[id] =
        id | (uint64_t)(attributes & 0xff) << 48 | (uint64_t)(attributes >> 8 & 0xff) << 56;
  }
  cs->names[id] = (tool_names){dup_nonempty(strings[1]), dup_nonempty(strings[2]), line};
  return remember_object(cs, strings[0], bias);
}

/* libdw first; Valgrind's names where libdw knows nothing; then object+offset. */
static void resolve_sites(capture_source *cs) {
  ms_site_table *table = cs->base.info.sites;
  for (uint32_t id = 0; id < ms_site_table_count(table); id++)
    ms_site_table_set_location(table, id, NULL, NULL, 0);
  for (size_t i = 0; i < cs->object_count; i++)
    (void)ms_site_table_resolve(table, cs->objects[i].path, cs->objects[i].bias);
  uint32_t count = ms_site_table_count(table);
  for (uint32_t id = 0; id < count && id < cs->names_capacity; id++) {
    const ms_site *site = ms_site_table_get(table, id);
    const tool_names *names = &cs->names[id];
    if (site->function && site->file) continue;
    if (!names->function && !names->file) continue;
    if (site->function && !site->file && names->file)
      ms_site_table_set_location(table, id, site->function, names->file, names->line);
    else if (!site->function && !site->file)
      ms_site_table_set_location(table, id, names->function, names->file, names->line);
  }
  for (size_t i = 0; i < cs->object_count; i++) /* what no symbol covers: gzip+0x430e */
    (void)ms_site_table_name_by_offset(table, cs->objects[i].path, cs->objects[i].bias);
}

/*------------------------------------------------------------*/
/* The source                                                 */
/*------------------------------------------------------------*/

/* What to do when Valgrind's messages say it could not read debug information, or NULL. */
static const char *debuginfo_advice(const capture_source *cs) {
  if (cs->log_dwarf_form)
    return "the program's debug information has DWARF 5 forms that this Valgrind cannot read "
           "(clang 14 writes them with -g): rebuild it with -gdwarf-4, or build it with "
           "memsnap-cc, whose capture runs the program natively";
  if (cs->log_debuginfo)
    return "Valgrind could not read the program's debug information: rebuild it with "
           "-gdwarf-4 (or without -g), or build it with memsnap-cc, whose capture runs the "
           "program natively";
  return NULL;
}

/* "Valgrind gave up WHEN PROGRAM ... (exit status N: "its first line"): advice", malloc'ed. */
static char *gave_up_text(const capture_source *cs, const char *when) {
  const ms_stream_info *info = &cs->base.info;
  const char *advice = debuginfo_advice(cs);
  char *text = NULL;
  if (asprintf(&text, "Valgrind gave up %s %s (exit status %d%s%s%s)%s%s", when,
               info->program ? info->program : "the program", info->exit_status,
               cs->log_first[0] ? ": \"" : "", cs->log_first, cs->log_first[0] ? "\"" : "",
               advice ? ": " : "", advice ? advice : "") < 0)
    return NULL;
  return text;
}

static void finish_stream(capture_source *cs) {
  if (cs->finished) return;
  cs->finished = 1;
  if (cs->fd >= 0) close(cs->fd);
  cs->fd = -1;
  if (cs->credit_fd >= 0 && !cs->attached) {
    close(cs->credit_fd);
    cs->credit_fd = -1;
  }
  int status = -1;
  int had_child = cs->pid > 0;
  wait_child(cs, &status);
  ms_stream_info *info = &cs->base.info;
  if (!had_child) {
    if (cs->signal_number) {
      info->exit_status = 128 + cs->signal_number;
      info->flags |= MS_STREAM_TRUNCATED;
    } else if (cs->saw_exit) {
      info->exit_status = (int)cs->exit_code;
    }
  } else if (status >= 0 && WIFEXITED(status)) {
    info->exit_status = WEXITSTATUS(status);
  } else if (status >= 0 && WIFSIGNALED(status)) {
    info->exit_status = 128 + WTERMSIG(status);
    info->flags |= MS_STREAM_TRUNCATED;
  }
  if (!cs->saw_exit) info->flags |= MS_STREAM_TRUNCATED;
  if (!cs->saw_exit && cs->exec_last) info->flags |= MS_STREAM_EXEC;
  drain_log(cs);
  /* Under Valgrind a program that exits, even by _exit, runs the tool's end (EXIT): an exit
   * without it is Valgrind's own (status 1 when its debug-information reader gives up). */
  if (had_child && strcmp(info->capture, "valgrind") == 0 && !cs->saw_exit && !cs->exec_last &&
      status >= 0 && WIFEXITED(status)) {
    if (cs->accesses_read == 0)
      cs->gave_up = 1;
    else
      info->capture_failure = gave_up_text(cs, "while it ran");
  }
  resolve_sites(cs);
}

/* The tool of a new process image says HELLO after the last image's EXEC: its sites and
 * threads are numbered on from here. */
static void start_image(capture_source *cs) {
  ms_stream_info *info = &cs->base.info;
  cs->site_base = ms_site_table_count(info->sites);
  cs->thread_base = info->thread_count;
  cs->exec_thread = cs->thread;
  cs->exec_last = 0;
  info->execs++;
  info->flags |= MS_STREAM_EXEC_FOLLOWED;
}

/* Gives the parsed slot back and waits for the next CHUNK notice: 0, 1 at end of stream,
 * or a negative status. */
static int next_chunk(capture_source *cs) {
  if (cs->chunk_slot >= 0) {
    unsigned char credit = 1;
    if (cs->credit_fd >= 0 && send(cs->credit_fd, &credit, 1, MSG_NOSIGNAL) != 1) {
      close(cs->credit_fd); /* the tool is gone; its last notices are still in the pipe */
      cs->credit_fd = -1;
    }
    cs->chunk_slot = -1;
  }
  for (;;) {
    int rc = fill(cs, UNIT);
    if (rc != 0) return rc;
    const unsigned char *p = cs->buffer + cs->start;
    uint64_t a = read_u64(p), b = read_u64(p + 8);
    cs->start += UNIT;
    unsigned tag = (unsigned)(b >> 8) & 0xff;
    if (tag == TAG_HELLO) {
      if (!cs->exec_last || cs->rt_layout || a != MS_VG_MAGIC || b >> 32 != MS_VG_VERSION)
        return ms_error_set(MS_ERR_FORMAT, "capture channel: unexpected HELLO");
      start_image(cs);
      continue;
    }
    if (tag == TAG_SIGNAL) {
      cs->signal_number = (int)(a & 0x7f);
      continue;
    }
    uint32_t slot = (uint32_t)(b >> 32);
    if (tag != TAG_CHUNK || slot >= SLOT_COUNT || a > SLOT_BYTES || a % (cs->rt_layout ? 8 : UNIT))
      return ms_error_set(MS_ERR_FORMAT, "capture channel: bad notice (tag 0x%x, slot %u)", tag,
                          slot);
    cs->chunk = cs->slots + (size_t)slot * SLOT_BYTES;
    cs->chunk_end = cs->chunk + a;
    cs->chunk_slot = (int)slot;
    cs->exec_last = 0; /* an execve that failed: the program goes on */
    return 0;
  }
}

/* A unit that is not an access (THREAD, SITE, EXIT, SIGNAL) at p, whose `extra` payload
 * units follow it; returns the units it takes (1 + extra), or a negative status. */
static long control_unit(capture_source *cs, const unsigned char *p, uint32_t *site_count) {
  ms_stream_info *info = &cs->base.info;
  uint64_t a = read_u64(p), b = read_u64(p + 8);
  unsigned tag = unit_tag(cs->rt_layout, b);
  uint32_t site = unit_site(cs->rt_layout, b);
  if (tag == TAG_THREAD) {
    if (cs->base.info.execs) a = a == 0 ? cs->exec_thread : (uint64_t)cs->thread_base + a - 1;
    if (a > UINT16_MAX) return ms_error_set(MS_ERR_UNSUPPORTED, "capture: more than 65536 threads");
    cs->thread = (uint16_t)a;
    if (a + 1 > info->thread_count) info->thread_count = (uint32_t)a + 1;
  } else if (tag == TAG_SITE) {
    size_t extra = unit_extra(cs->rt_layout, b);
    if (extra * UNIT > (size_t)(cs->chunk_end - p - UNIT))
      return ms_error_set(MS_ERR_FORMAT, "capture channel: site %u straddles a slot", site);
    int rc = define_site(cs, cs->site_base + site, a, p + UNIT, extra);
    if (rc < 0) return rc;
    ++*site_count;
    return 1 + (long)extra;
  } else if (tag == TAG_EXIT) {
    cs->saw_exit = 1;
    cs->exit_code = (int64_t)a;
  } else if (tag == TAG_SIGNAL) {
    cs->signal_number = (int)(a & 0x7f);
  } else if (tag == TAG_EXEC && !cs->rt_layout) {
    cs->exec_last = 1;
  } else if (tag == TAG_FORK && !cs->rt_layout) {
    info->children++;
    info->flags |= MS_STREAM_CHILDREN;
  } else {
    return ms_error_set(MS_ERR_FORMAT, "capture channel: unknown record tag 0x%x", tag);
  }
  return 1;
}

/* Accesses of the slot from p (at most n units, all within the slot) into out while they
 * last: stops at the first unit that is not an access, or that names an undefined site.
 * Returns the units read.
 * Speed: this loop was 13-15 % of the cycles of an rt-traced run (perf, matmul 250). Its
 * state is in locals (stores of ms_access, whose uint8_t fields may alias anything, made gcc
 * reload the thread, the sampling flag and the bounds from the source around every record),
 * it has one bound instead of two, and a record is two 8-byte stores: the address, and
 * bytes 8..15 (site, thread, size, kind) assembled from the unit's second word. Measured
 * after: still 14-15 % of the cycles of a run that takes ~1.5x less CPU in all, ~2 ns per
 * access, spent on the loads of the slot (16 bytes per access, written by the program on
 * the other core). Neither a software prefetch 1 KiB ahead nor batches of 1024 records
 * (16 KiB, within L1) instead of 4096 changed its share (perf, matmul 250, three runs
 * each). */
static size_t copy_accesses(const unsigned char *p, size_t n, uint16_t thread, uint32_t site_base,
                            uint32_t site_count, ms_access *out) {
  const uint64_t image_sites = site_count - site_base; /* the sites this image defined */
  size_t i = 0;
  for (; i < n; i++, p += UNIT) {
    uint64_t a = read_u64(p), b = read_u64(p + 8);
    uint64_t tag = (b >> 8) & 0xff, site = b >> 32;
    if (__builtin_expect(tag > TAG_MODIFY || site >= image_sites, 0)) break;
    uint64_t tail = (site + site_base) | (uint64_t)thread << 32 | (b & 0xff) << 48 | tag << 56;
    memcpy(&out[i].address, &a, 8);
    memcpy((unsigned char *)&out[i] + 8, &tail, 8);
  }
  return i;
}

/* copy_accesses for the runtime's words (MS_RT_VERSION): address | site << 48, the size and
 * kind from the site's definition, the thread from the last THREAD unit. Stops at the first
 * word whose site is not below `short_sites` (the number of sites defined, at most
 * MS_RT_SHORT_SITES): an escape (all ones) or an undefined site. Half the bytes of a
 * 16-byte unit to read from the slot, which the program wrote with non-temporal stores
 * (measured in lib/capture/rt/DESIGN.md). */
static size_t copy_rt_words(const unsigned char *p, size_t n, uint16_t thread, uint32_t short_sites,
                            const uint64_t *tails, ms_access *out) {
  const uint64_t thread_bits = (uint64_t)thread << 32, mask = (1ull << 48) - 1;
  size_t i = 0;
  for (; i < n; i++, p += 8) {
    uint64_t w = read_u64(p), site = w >> 48;
    if (__builtin_expect(site >= short_sites, 0)) break;
    uint64_t address = w & mask, tail = tails[site] | thread_bits;
    memcpy(&out[i].address, &address, 8);
    memcpy((unsigned char *)&out[i] + 8, &tail, 8);
  }
  return i;
}

/* One access or control unit of the runtime's words at p: the access into *access (1), or
 * the control unit handled (0); *bytes is what it took. Negative status if malformed. */
static int rt_record(capture_source *cs, const unsigned char *p, uint32_t *site_count,
                     ms_access *access, size_t *bytes) {
  size_t left = (size_t)(cs->chunk_end - p);
  uint64_t w = read_u64(p);
  if (w >> 48 != 0xffff) {
    uint32_t site = (uint32_t)(w >> 48);
    if (site >= *site_count)
      return ms_error_set(MS_ERR_FORMAT, "capture channel: access names undefined site %u", site);
    uint64_t tail = cs->site_tails[site];
    *access = (ms_access){.address = w & ((1ull << 48) - 1),
                          .site = site,
                          .thread = cs->thread,
                          .size = (uint8_t)(tail >> 48),
                          .kind = (uint8_t)(tail >> 56)};
    *bytes = 8;
    return 1;
  }
  if (left < 8 + UNIT || (w != MS_RT_ESCAPE_LONG && w != MS_RT_ESCAPE_CONTROL))
    return ms_error_set(MS_ERR_FORMAT,
                        "capture channel: bad escape 0x%llx, or one cut by the end of a slot",
                        (unsigned long long)w);
  if (w == MS_RT_ESCAPE_CONTROL) {
    long taken = control_unit(cs, p + 8, site_count);
    if (taken < 0) return (int)taken;
    *bytes = 8 + (size_t)taken * UNIT;
    return 0;
  }
  uint64_t a = read_u64(p + 8), b = read_u64(p + 16);
  unsigned tag = (unsigned)(b >> 56), thread = (unsigned)(b >> 32) & 0xffff;
  uint32_t site = (uint32_t)b;
  if (tag > TAG_MODIFY)
    return ms_error_set(MS_ERR_FORMAT, "capture channel: unknown record tag 0x%x", tag);
  if (site >= *site_count)
    return ms_error_set(MS_ERR_FORMAT, "capture channel: access names undefined site %u", site);
  if (thread >= cs->base.info.thread_count)
    return ms_error_set(MS_ERR_FORMAT, "capture channel: access names undeclared thread %u",
                        thread);
  *access = (ms_access){.address = a,
                        .site = site,
                        .thread = (uint16_t)thread,
                        .size = (uint8_t)(b >> 48),
                        .kind = (uint8_t)tag};
  *bytes = 8 + UNIT;
  return 1;
}

static int capture_next(ms_source *source, ms_batch *batch) {
  capture_source *cs = (capture_source *)source;
  ms_stream_info *info = &source->info;
  batch->count = 0;
  if (cs->finished) return 0;
  ms_access *out = batch->accesses;
  size_t count = 0;
  uint32_t site_count = ms_site_table_count(info->sites);
  while (count < batch->capacity) {
    if (cs->chunk == cs->chunk_end) {
      int rc = next_chunk(cs);
      if (rc < 0) return rc;
      if (rc > 0) { /* end of file: a partial notice can only come from a killed tool */
        finish_stream(cs);
        if (cs->gave_up) {
          char *text = gave_up_text(cs, "before it ran");
          rc = ms_error_set(MS_ERR_CHILD, "%s", text ? text : "Valgrind gave up");
          free(text);
          return rc;
        }
        break;
      }
      continue;
    }
    const unsigned char *p = cs->chunk;
    int rt = cs->rt_layout;
    size_t step = rt ? 8 : UNIT, units = (size_t)(cs->chunk_end - p) / step;
    if (!cs->sampling) {
      size_t room = batch->capacity - count, n = units < room ? units : room;
      size_t copied =
          rt ? copy_rt_words(p, n, cs->thread,
                             site_count < MS_RT_SHORT_SITES ? site_count : MS_RT_SHORT_SITES,
                             cs->site_tails, out + count)
             : copy_accesses(p, n, cs->thread, cs->site_base, site_count, out + count);
      count += copied;
      cs->accesses_read += copied;
      p += copied * step;
      cs->chunk = p;
      if (copied == units || count == batch->capacity) continue;
    }
    ms_access access;
    size_t bytes = UNIT;
    int is_access;
    if (rt) {
      is_access = rt_record(cs, p, &site_count, &access, &bytes);
      if (is_access < 0) return is_access;
    } else {
      uint64_t a = read_u64(p), b = read_u64(p + 8);
      unsigned tag = (unsigned)(b >> 8) & 0xff;
      uint64_t site = (b >> 32) + cs->site_base;
      is_access = tag <= TAG_MODIFY;
      if (is_access) {
        if (site >= site_count)
          return ms_error_set(MS_ERR_FORMAT, "capture channel: access names undefined site %llu",
                              (unsigned long long)(site - cs->site_base));
        access = (ms_access){.address = a,
                             .site = (uint32_t)site,
                             .thread = cs->thread,
                             .size = (uint8_t)b,
                             .kind = (uint8_t)tag};
      } else {
        long taken = control_unit(cs, p, &site_count);
        if (taken < 0) return (int)taken;
        bytes = (size_t)taken * UNIT;
      }
    }
    cs->chunk = p + bytes;
    if (!is_access) continue;
    cs->accesses_read++;
    if (cs->sampling) {
      if (cs->sample_left == 0) {
        cs->sample_recording = !cs->sample_recording;
        cs->sample_left = cs->sample_recording ? info->sample_on : info->sample_off;
      }
      cs->sample_left--;
      if (!cs->sample_recording) continue;
    }
    out[count++] = access;
  }
  batch->count = count;
  return (int)count;
}

static void capture_destroy(ms_source *source) {
  capture_source *cs = (capture_source *)source;
  if (cs->fd >= 0) close(cs->fd);
  if (cs->credit_fd >= 0) close(cs->credit_fd);
  if (cs->log_fd >= 0) close(cs->log_fd);
  if (cs->slots) munmap(cs->slots, (size_t)SLOT_COUNT * SLOT_BYTES);
  if (cs->pid > 0) {
    kill(cs->pid, SIGKILL);
    int status;
    wait_child(cs, &status);
  }
  for (size_t i = 0; i < cs->names_capacity; i++) {
    free(cs->names[i].function);
    free(cs->names[i].file);
  }
  free(cs->names);
  free(cs->site_tails);
  for (size_t i = 0; i < cs->object_count; i++)
    free(cs->objects[i].path);
  free(cs->objects);
  free(cs->buffer);
  free(cs->base.info.capture_failure);
  cs->base.info.capture_failure = NULL;
  ms_stream_info_clear(&cs->base.info);
  free(cs);
}

static const ms_source_ops capture_ops = {
    .next = capture_next, .seek = NULL, .destroy = capture_destroy};

/*------------------------------------------------------------*/
/* Starting the program                                       */
/*------------------------------------------------------------*/

static int is_executable_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The program's path as execve wants it: argv[0] itself if it names a path, else the first
 * match in $PATH. Fails with MS_ERR_CHILD naming the program. */
static int find_program(const char *name, char **out) {
  if (!name || !*name) return ms_error_set(MS_ERR_CHILD, "no program to observe");
  if (strchr(name, '/')) {
    struct stat st;
    if (stat(name, &st) != 0)
      return ms_error_set(MS_ERR_CHILD, "%s: cannot start program: %s", name, strerror(errno));
    if (!S_ISREG(st.st_mode) || access(name, X_OK) != 0)
      return ms_error_set(MS_ERR_CHILD, "%s: cannot start program: not an executable file", name);
    *out = strdup(name);
    return *out ? MS_OK : ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    const char *colon = strchr(path, ':');
    size_t length = colon ? (size_t)(colon - path) : strlen(path);
    char candidate[PATH_MAX];
    int n = snprintf(candidate, sizeof candidate, "%.*s/%s", (int)(length ? length : 1),
                     length ? path : ".", name);
    if (n > 0 && (size_t)n < sizeof candidate && is_executable_file(candidate)) {
      *out = strdup(candidate);
      return *out ? MS_OK : ms_error_set(MS_ERR_NOMEM, "out of memory");
    }
    path += length + (colon ? 1 : 0);
  }
  return ms_error_set(MS_ERR_CHILD, "%s: cannot start program: not found in PATH", name);
}

static int tool_dir_ok(const char *dir) {
  char path[PATH_MAX];
  int n = snprintf(path, sizeof path, "%s/%s", dir, TOOL_NAME);
  return n > 0 && (size_t)n < sizeof path && is_executable_file(path);
}

/* options->tool_dir, $MEMSNAP_VALGRIND_LIB, the installed folder beside the running
 * executable, the build tree; the first one given (or, for the last two, present) wins. */
static int find_tool_dir(const ms_capture_options *options, char *out, size_t size) {
  const char *given =
      options && options->tool_dir ? options->tool_dir : getenv("MEMSNAP_VALGRIND_LIB");
  if (given && *given) {
    if (!tool_dir_ok(given))
      return ms_error_set(MS_ERR_CHILD, "%s: no memsnap Valgrind tool (%s) in this folder", given,
                          TOOL_NAME);
    snprintf(out, size, "%s", given);
    return MS_OK;
  }
#ifdef MEMSNAP_INSTALL_VALGRIND_LIB_FROM_BIN
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      int m = snprintf(out, size, "%s/%s", self, MEMSNAP_INSTALL_VALGRIND_LIB_FROM_BIN);
      if (m > 0 && (size_t)m < size && tool_dir_ok(out)) return MS_OK;
    }
  }
#endif
#ifdef MEMSNAP_BUILD_VALGRIND_LIB
  if (tool_dir_ok(MEMSNAP_BUILD_VALGRIND_LIB)) {
    snprintf(out, size, "%s", MEMSNAP_BUILD_VALGRIND_LIB);
    return MS_OK;
  }
#endif
  return ms_error_set(MS_ERR_CHILD,
                      "the memsnap Valgrind tool (%s) is not installed: set MEMSNAP_VALGRIND_LIB",
                      TOOL_NAME);
}

/* environ plus VALGRIND_LIB=dir (replacing any other), built before fork. */
static char **child_environment(const char *tool_dir) {
  size_t count = 0;
  while (environ && environ[count])
    count++;
  char **env = calloc(count + 2, sizeof *env);
  size_t length = strlen("VALGRIND_LIB=") + strlen(tool_dir) + 1;
  char *entry = malloc(length);
  if (!env || !entry) {
    free(env);
    free(entry);
    return NULL;
  }
  snprintf(entry, length, "VALGRIND_LIB=%s", tool_dir);
  size_t n = 0;
  env[n++] = entry;
  for (size_t i = 0; i < count; i++)
    if (strncmp(environ[i], "VALGRIND_LIB=", 13) != 0) env[n++] = environ[i];
  env[n] = NULL;
  return env;
}

/* fork + execve; the exec's errno comes back through a close-on-exec pipe. */
static int spawn(const char *executable, char *const *argv, char **env, const int *inherit,
                 int inherit_count, pid_t *pid_out) {
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0)
    return ms_error_set(MS_ERR_CHILD, "pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    int saved = errno;
    close(status_pipe[0]);
    close(status_pipe[1]);
    return ms_error_set(MS_ERR_CHILD, "fork: %s", strerror(saved));
  }
  if (pid == 0) {
    /* the channel's descriptors are the only ones the tool must inherit */
    for (int i = 0; i < inherit_count; i++)
      fcntl(inherit[i], F_SETFD, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    execve(executable, argv, env);
    int error = errno;
    ssize_t ignored = write(status_pipe[1], &error, sizeof error);
    (void)ignored;
    _exit(127);
  }
  close(status_pipe[1]);
  int error = 0;
  ssize_t n;
  do
    n = read(status_pipe[0], &error, sizeof error);
  while (n < 0 && errno == EINTR);
  close(status_pipe[0]);
  if (n == (ssize_t)sizeof error) {
    waitpid(pid, NULL, 0);
    return ms_error_set(MS_ERR_CHILD, "cannot run %s: %s", executable, strerror(error));
  }
  *pid_out = pid;
  return MS_OK;
}

static int init_info(capture_source *cs, int argc, char *const *argv, const char *program,
                     const char *capture, const ms_capture_options *options) {
  ms_stream_info *info = &cs->base.info;
  info->exit_status = -1;
  info->sites = ms_site_table_new();
  info->capture = strdup(capture);
  if (options && options->sample_on > 0 && options->sample_off > 0) {
    info->flags |= MS_STREAM_SAMPLED;
    info->sample_on = options->sample_on;
    info->sample_off = options->sample_off;
  }
  info->arch = strdup("amd64");
  if (!info->sites || !info->capture || !info->arch)
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  return ms_stream_info_set_program(info, program, argc, argv);
}

/* Reads the tool's HELLO; a Valgrind that failed to start closes the channel first. */
static int expect_hello(capture_source *cs, const char *program) {
  int rc = fill(cs, UNIT);
  if (rc < 0) return rc;
  if (rc == 0 && read_u64(cs->buffer) == MS_VG_MAGIC &&
      ((read_u64(cs->buffer + 8) >> 8) & 0xff) == TAG_HELLO) {
    uint32_t version = (uint32_t)(read_u64(cs->buffer + 8) >> 32);
    if (version != MS_VG_VERSION && version != MS_RT_VERSION)
      return ms_error_set(MS_ERR_UNSUPPORTED,
                          "the capture channel speaks protocol %u, not %u (Valgrind tool) or %u "
                          "(memsnap runtime)",
                          version, MS_VG_VERSION, MS_RT_VERSION);
    cs->rt_layout = version == MS_RT_VERSION;
    cs->start += UNIT;
    return MS_OK;
  }
  int status;
  wait_child(cs, &status);
  drain_log(cs);
  if (strcmp(cs->base.info.capture, "rt") == 0)
    return ms_error_set(MS_ERR_CHILD,
                        "%s: no memsnap runtime answered (build the program with memsnap-cc, or "
                        "use --via=valgrind)",
                        program);
  if (status >= 0 && WIFEXITED(status))
    return ms_error_set(MS_ERR_CHILD, "%s: valgrind failed to start it (exit status %d%s%s%s)",
                        program, WEXITSTATUS(status), cs->log_first[0] ? ": \"" : "",
                        cs->log_first, cs->log_first[0] ? "\"" : "");
  return ms_error_set(MS_ERR_CHILD, "%s: valgrind failed to start it (%s)", program,
                      status >= 0 && WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
                                                         : "no records");
}

int ms_capture_has_rt(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ms_error_set(MS_ERR_IO, "%s: %s", path, strerror(errno));
  elf_version(EV_CURRENT);
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  int found = 0;
  size_t names;
  if (elf && elf_kind(elf) == ELF_K_ELF && elf_getshdrstrndx(elf, &names) == 0) {
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn && !found; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr header;
      const char *name = gelf_getshdr(scn, &header) ? elf_strptr(elf, names, header.sh_name) : NULL;
      found = name && strcmp(name, ".memsnap_rt") == 0;
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  return found;
}

/* environ without MEMSNAP_OUT, MEMSNAP_RT_CHANNEL and MEMSNAP_SAMPLE, plus the channel (and
 * the sampling) for the runtime; entries 0 and 1 are allocated here. */
static char **rt_environment(int notice_fd, int shm_fd, int credit_fd,
                             const ms_capture_options *options) {
  size_t count = 0;
  while (environ && environ[count])
    count++;
  char **env = calloc(count + 3, sizeof *env);
  char *channel = malloc(64), *sample = malloc(80);
  if (!env || !channel || !sample) {
    free(env);
    free(channel);
    free(sample);
    return NULL;
  }
  snprintf(channel, 64, "MEMSNAP_RT_CHANNEL=%d,%d,%d", notice_fd, shm_fd, credit_fd);
  if (options && options->sample_on > 0 && options->sample_off > 0)
    snprintf(sample, 80, "MEMSNAP_SAMPLE=%llu/%llu", (unsigned long long)options->sample_on,
             (unsigned long long)options->sample_off);
  else
    snprintf(sample, 80, "MEMSNAP_SAMPLE=");
  size_t n = 0;
  env[n++] = channel;
  env[n++] = sample;
  for (size_t i = 0; i < count; i++)
    if (strncmp(environ[i], "MEMSNAP_OUT=", 12) != 0 &&
        strncmp(environ[i], "MEMSNAP_RT_CHANNEL=", 19) != 0 &&
        strncmp(environ[i], "MEMSNAP_SAMPLE=", 15) != 0)
      env[n++] = environ[i];
  env[n] = NULL;
  return env;
}

static capture_source *new_source(void) {
  capture_source *cs = calloc(1, sizeof *cs);
  if (!cs) return NULL;
  cs->base.ops = &capture_ops;
  cs->pid = -1;
  cs->fd = -1;
  cs->credit_fd = -1;
  cs->log_fd = -1;
  cs->chunk_slot = -1;
  cs->buffer = malloc(READ_BUFFER);
  if (!cs->buffer) {
    free(cs);
    return NULL;
  }
  return cs;
}

int ms_capture_attach(int notice_fd, int shm_fd, int credit_fd, const ms_capture_options *options,
                      int argc, char *const *argv, ms_source **out) {
  *out = NULL;
  capture_source *cs = argc >= 1 && argv && argv[0] ? new_source() : NULL;
  if (!cs) {
    close(notice_fd);
    close(shm_fd);
    close(credit_fd);
    return argc >= 1 && argv && argv[0] ? ms_error_set(MS_ERR_NOMEM, "out of memory")
                                        : ms_error_set(MS_ERR_ARG, "no program named");
  }
  cs->fd = notice_fd;
  cs->credit_fd = credit_fd;
  cs->attached = 1;
  fcntl(notice_fd, F_SETFD, FD_CLOEXEC);
  fcntl(credit_fd, F_SETFD, FD_CLOEXEC);
  int rc = init_info(cs, argc, argv, argv[0], "rt", options);
  if (rc == 0) {
    void *map = mmap(NULL, (size_t)SLOT_COUNT * SLOT_BYTES, PROT_READ, MAP_SHARED, shm_fd, 0);
    if (map == MAP_FAILED)
      rc = ms_error_set(MS_ERR_CHILD, "capture shared memory: %s", strerror(errno));
    else
      cs->slots = map;
  }
  close(shm_fd);
  if (rc == 0) rc = expect_hello(cs, argv[0]);
  if (rc < 0) {
    capture_destroy(&cs->base);
    return rc;
  }
  *out = &cs->base;
  return MS_OK;
}

int ms_capture_open(const ms_capture_options *options, int argc, char *const *argv,
                    ms_source **out) {
  *out = NULL;
  if (argc < 1 || !argv || !argv[0]) return ms_error_set(MS_ERR_ARG, "no program to observe");
  char *program = NULL;
  int rc = find_program(argv[0], &program);
  if (rc < 0) return rc;
  ms_capture_via via = options ? options->via : MS_CAPTURE_AUTO;
  if (via == MS_CAPTURE_AUTO)
    via = ms_capture_has_rt(program) > 0 ? MS_CAPTURE_RT : MS_CAPTURE_VALGRIND;
  char tool_dir[PATH_MAX];
  rc = via == MS_CAPTURE_RT ? MS_OK : find_tool_dir(options, tool_dir, sizeof tool_dir);
  if (rc < 0) {
    free(program);
    return rc;
  }
  capture_source *cs = new_source();
  if (!cs) {
    free(program);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  rc = init_info(cs, argc, argv, program, via == MS_CAPTURE_RT ? "rt" : "valgrind", options);
  cs->sampling = via == MS_CAPTURE_VALGRIND && (cs->base.info.flags & MS_STREAM_SAMPLED);

  int channel[2] = {-1, -1}, credit[2] = {-1, -1}, log[2] = {-1, -1}, shm = -1;
  char **env = NULL;
  char **child_argv = NULL;
  /* for the runtime, the notice channel is a socket too: its writes use MSG_NOSIGNAL, so
   * that a memsnap that died gives the program EPIPE, not SIGPIPE */
  if (rc == 0 && via == MS_CAPTURE_RT &&
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0)
    rc = ms_error_set(MS_ERR_CHILD, "capture channel: %s", strerror(errno));
  if (rc == 0 &&
      ((via != MS_CAPTURE_RT && (pipe2(channel, O_CLOEXEC) != 0 || pipe2(log, O_CLOEXEC) != 0)) ||
       socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, credit) != 0))
    rc = ms_error_set(MS_ERR_CHILD, "capture channel: %s", strerror(errno));
  if (rc == 0) {
    shm = memfd_create("memsnap-capture", MFD_CLOEXEC);
    size_t bytes = (size_t)SLOT_COUNT * SLOT_BYTES;
    void *map = MAP_FAILED;
    if (shm >= 0 && ftruncate(shm, (off_t)bytes) == 0)
      map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, shm, 0);
    if (map == MAP_FAILED)
      rc = ms_error_set(MS_ERR_CHILD, "capture shared memory: %s", strerror(errno));
    else
      cs->slots = map;
  }
  if (rc == 0) {
    env = via == MS_CAPTURE_RT ? rt_environment(channel[1], shm, credit[1], options)
                               : child_environment(tool_dir);
    child_argv = calloc((size_t)argc + 10, sizeof *child_argv);
    if (!env || !child_argv) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  char options_text[5][40];
  if (rc == 0 && via == MS_CAPTURE_RT) {
    for (int i = 0; i < argc; i++)
      child_argv[i] = argv[i];
    child_argv[argc] = NULL;
    int inherit[3] = {channel[1], shm, credit[1]};
    rc = spawn(program, child_argv, env, inherit, 3, &cs->pid);
  } else if (rc == 0) {
    snprintf(options_text[0], sizeof options_text[0], "--memsnap-fd=%d", channel[1]);
    snprintf(options_text[1], sizeof options_text[1], "--memsnap-shm=%d", shm);
    snprintf(options_text[2], sizeof options_text[2], "--memsnap-credit=%d", credit[1]);
    snprintf(options_text[3], sizeof options_text[3], "--memsnap-slots=%d", SLOT_COUNT);
    /* Valgrind's own messages come here, not to the program's standard error: Valgrind
     * moves the descriptor out of the program's reach and keeps it across followed execs */
    snprintf(options_text[4], sizeof options_text[4], "--log-fd=%d", log[1]);
    int n = 0;
    child_argv[n++] = (char *)"valgrind";
    child_argv[n++] = (char *)"--tool=memsnap";
    if (!options || options->quiet) child_argv[n++] = (char *)"-q";
    if (!options || !options->no_follow_exec) child_argv[n++] = (char *)"--trace-children=yes";
    for (int i = 0; i < 5; i++)
      child_argv[n++] = options_text[i];
    child_argv[n++] = program;
    for (int i = 1; i < argc; i++)
      child_argv[n++] = argv[i];
    child_argv[n] = NULL;
    int inherit[4] = {channel[1], shm, credit[1], log[1]};
    rc = spawn(MEMSNAP_VALGRIND_EXECUTABLE, child_argv, env, inherit, 4, &cs->pid);
  }
  if (env) free(env[0]);
  if (env && via == MS_CAPTURE_RT) free(env[1]);
  free(env);
  free(child_argv);
  if (channel[1] >= 0) close(channel[1]);
  if (credit[1] >= 0) close(credit[1]);
  if (log[1] >= 0) close(log[1]);
  if (shm >= 0) close(shm);
  cs->fd = channel[0];
  cs->log_fd = log[0];
  if (options) {
    cs->log_to = options->tool_messages;
    cs->log_context = options->tool_messages_context;
  }
  cs->credit_fd = credit[0];
  if (rc == 0) forward_begin(cs);
  if (rc == 0) rc = expect_hello(cs, program);
  free(program);
  if (rc < 0) {
    capture_destroy(&cs->base);
    return rc;
  }
  *out = &cs->base;
  return MS_OK;
}

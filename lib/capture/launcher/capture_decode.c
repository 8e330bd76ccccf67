/* Live capture (see memsnap/capture.h): the source that decodes the capture channel's
 * records into access batches (capture_spawn.c starts the program and opens the channel).
 *
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
 * The compiler runtime (lib/capture/rt) speaks the same protocol. The rt runtime's EXIT
 * carries the exit status and a SIGNAL record (tag 0x15) reports a fatal signal. Its HELLO
 * says protocol version 4: its slots hold 8-byte words, address | site << 48 per access
 * (../protocol.h).
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
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture_internal.h"
#include "memsnap/error.h"

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
    if (cs->log_line_length + 1 < sizeof cs->log_line)
      cs->log_line[cs->log_line_length++] = text[i];
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
      struct pollfd fds[2] = {{.fd = cs->fd, .events = POLLIN},
                              {.fd = cs->log_fd, .events = POLLIN}};
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

/*------------------------------------------------------------*/
/* Sites                                                      */
/*------------------------------------------------------------*/

static char *dup_nonempty(const char *s) { return s && *s ? strdup(s) : NULL; }

typedef struct static_context {
  capture_source *cs;
  const char *object;
} static_context;

static int add_static(void *context, uint64_t address, uint64_t size, const char *name) {
  static_context *c = context;
  ms_stream_info *info = &c->cs->base.info;
  ms_object_event event = {.index = c->cs->delivered + c->cs->filling,
                           .address = address,
                           .size = size,
                           .site = MS_SITE_NONE,
                           .kind = MS_OBJECT_STATIC,
                           .name = name,
                           .object = c->object};
  return ms_object_table_add(info->objects, &event);
}

/* A new object's global and static variables, from the point of the stream where its
 * first site appears (its code runs before its data is touched, as a rule). With data
 * objects only (either path: ms_capture_options.objects). */
static int add_statics(capture_source *cs, const char *path, uint64_t bias) {
  if (!cs->capture_objects) return MS_OK;
  if (!cs->base.info.objects && !(cs->base.info.objects = ms_object_table_new()))
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the data objects");
  static_context context = {cs, path};
  return capture_data_symbols(path, bias, add_static, &context);
}

static int remember_object(capture_source *cs, const char *path, uint64_t bias) {
  if (!path || path[0] != '/') return MS_OK; /* vdso, JIT code: nothing to read */
  for (size_t i = 0; i < cs->object_count; i++)
    if (strcmp(cs->objects[i].path, path) == 0) return MS_OK;
  int rc = add_statics(cs, path, bias);
  if (rc < 0) return rc;
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
  capture_wait_child(cs, &status);
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
  } else if (tag == TAG_ALLOC || tag == TAG_FREE) {
    size_t extra = unit_extra(cs->rt_layout, b);
    if (tag == TAG_ALLOC && (extra != 1 || UNIT > (size_t)(cs->chunk_end - p - UNIT)))
      return ms_error_set(MS_ERR_FORMAT, "capture channel: bad allocation record");
    if (tag == TAG_ALLOC && cs->site_base + site >= ms_site_table_count(info->sites))
      return ms_error_set(MS_ERR_FORMAT, "capture channel: allocation names undefined site %u",
                          site);
    if (!info->objects && !(info->objects = ms_object_table_new()))
      return ms_error_set(MS_ERR_NOMEM, "out of memory for the data objects");
    unsigned kind = (unsigned)(cs->rt_layout ? b >> 48 : b) & 0xff; /* the size field */
    ms_object_event event = {.index = cs->delivered + cs->filling,
                             .address = a,
                             .size = tag == TAG_ALLOC ? read_u64(p + UNIT) : 0,
                             .site = tag == TAG_ALLOC ? cs->site_base + site : MS_SITE_NONE,
                             .thread = cs->thread,
                             .kind = (uint8_t)(kind <= MS_OBJECT_MAP ? kind : MS_OBJECT_HEAP),
                             .freed = tag == TAG_FREE};
    int rc = ms_object_table_add(info->objects, &event);
    if (rc < 0) return rc;
    return tag == TAG_ALLOC ? 2 : 1;
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
 * bytes 8..15 (site, thread, size, kind) assembled from the unit's second word. What is
 * left, ~2 ns per access, is the loads of the slot, which the program wrote on the other
 * core (what was measured and tried: docs/performance.md). */
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
      cs->filling = count;
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
        cs->filling = count;
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
  cs->delivered += count;
  return (int)count;
}

void capture_destroy(ms_source *source) {
  capture_source *cs = (capture_source *)source;
  if (cs->fd >= 0) close(cs->fd);
  if (cs->credit_fd >= 0) close(cs->credit_fd);
  if (cs->log_fd >= 0) close(cs->log_fd);
  if (cs->slots) munmap(cs->slots, (size_t)SLOT_COUNT * SLOT_BYTES);
  if (cs->pid > 0) {
    kill(cs->pid, SIGKILL);
    int status;
    capture_wait_child(cs, &status);
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

/* Reads the tool's HELLO; a Valgrind that failed to start closes the channel first. */
int capture_expect_hello(capture_source *cs, const char *program) {
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
  capture_wait_child(cs, &status);
  drain_log(cs);
  if (strcmp(cs->base.info.capture, "rt") == 0)
    return ms_error_set(MS_ERR_CHILD,
                        "%s: no memsnap runtime answered (build the program with memsnap-cc, or "
                        "use --via=valgrind)",
                        program);
  if (status >= 0 && WIFEXITED(status))
    return ms_error_set(MS_ERR_CHILD, "%s: valgrind failed to start it (exit status %d%s%s%s)",
                        program, WEXITSTATUS(status), cs->log_first[0] ? ": \"" : "", cs->log_first,
                        cs->log_first[0] ? "\"" : "");
  return ms_error_set(MS_ERR_CHILD, "%s: valgrind failed to start it (%s)", program,
                      status >= 0 && WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
                                                         : "no records");
}

capture_source *capture_new_source(void) {
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

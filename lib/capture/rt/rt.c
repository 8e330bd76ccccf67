/* libmemsnap-rt: the run-time half of compiler-instrumented capture (see DESIGN.md here).
 *
 * Model. Programs built by memsnap-cc call __sanitizer_cov_loadN / __sanitizer_cov_storeN
 * (clang SanitizerCoverage trace-loads,trace-stores; N = 1, 2, 4, 8, 16) with the address
 * of every IR load and store, just before the access. The site of an access is the
 * callback's return address. Each thread appends one 8-byte word, address | site << 48, to
 * its own buffer, already in the layout of memsnap's capture protocol (../protocol.h,
 * version 4; the thread, size and kind are known from the stream and the site's
 * definition), taking the site from its own pc -> site cache (no lock,
 * no call but the callback itself); a full buffer is copied by its own thread, under one
 * process-wide lock, into the shared-memory slots that a
 * memsnap process parses and encodes into .mtr: `memsnap record` itself (MEMSNAP_RT_CHANNEL
 * in the environment), or a `memsnap record --rt-channel` helper that this runtime starts
 * when MEMSNAP_OUT names a file. Without either variable every callback returns at once.
 *
 * Order: each thread's accesses are kept in program order exactly; between threads, the
 * stream interleaves whole buffers (4 Ki accesses) in the order they were flushed.
 * Sites: a pc -> site id hash table (process-wide, under the lock) and a SITE record for
 * each new pc, with the object's path and load bias so that memsnap resolves function and
 * file:line through libdw (PIE or not); each thread caches pc -> site for its callbacks, and
 * a miss defines the site (SITE unit sent at once, before any access naming it).
 * Sampling (MEMSNAP_SAMPLE=ON/OFF, Chameleon's interval sampling): each thread records ON
 * consecutive accesses, then skips OFF, and so on; the counting is per thread and exact.
 * Registers: on x86-64 the callbacks are assembly that preserves every register but the
 * flags, and memsnap-cc declares them so (memsnap-rt.h), so that callers keep their
 * values in registers across them; elsewhere they are C with the ordinary convention.
 * Ends: on_exit (the exit status goes in the EXIT record), thread exit (a pthread key
 * destructor flushes), fatal signals (flush without allocating, no EXIT: the stream is
 * truncated, then the default action), fork (the child records into OUT.<pid> in MEMSNAP_OUT
 * mode, nothing under `memsnap record`).
 * Inline records: code that memsnap-pass.so instrumented appends the same word itself
 * (../llvm/inline-records.cpp) and calls ms_rt_inline_<kind><size> only where a callback
 * would take its slow path; that entry fills the site's word in the module's table.
 * Nothing here calls malloc: buffers and tables come from mmap, strings live in static
 * storage, so the runtime works inside signal handlers and under any malloc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <emmintrin.h>

#include "../protocol.h"

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LIKELY(x) __builtin_expect(!!(x), 1)

/* The marker that `memsnap record` and `memsnap sim` look for to pick this capture path. */
__attribute__((used, retain, section(".memsnap_rt"))) EXPORT const char memsnap_rt_marker[] =
    "memsnap-rt 1";

/*------------------------------------------------------------*/
/* State                                                      */
/*------------------------------------------------------------*/

enum { STATE_UNINIT = 0, STATE_INITIALIZING, STATE_ACTIVE, STATE_OFF };

/* A buffered access, already in the channel's layout (../protocol.h, MS_RT_VERSION): the
 * word address | site << 48, for a site below MS_RT_SHORT_SITES and an address below
 * 2^48; any other access is a long form of three words (MS_RT_ESCAPE_LONG, address, and
 * bytes 8..15 of its ms_access). A full buffer is copied into the slots as it is: 8 bytes
 * per access cross the shared memory instead of 16, on both sides (see DESIGN.md). */
typedef uint64_t record;
#define ADDRESS_BOUND (1ull << 48)

/* Each thread's own direct-mapped cache return address -> site << 48 (sites below
 * MS_RT_SHORT_SITES only: the others always take the slow path, and a long form),
 * indexed by the low bits of the return address (call sites 5+ bytes apart never collide
 * within 4 KiB of code); filled under the lock on a miss, read by its owner only. */
#define THREAD_SITES 4096
typedef struct thread_site {
  uint64_t pc; /* 0: empty */
  uint64_t bits;
} thread_site;

/* 4 Ki accesses (32 KiB of words; 64 KiB of 16-byte units before version 4) per thread
 * buffer, so that the flush's copy reads from L2
 * (512 KiB per core here). Measured against 64 Ki (1 MiB), program-side CPU of MEMSNAP_OUT
 * runs, best of 7, interleaved: matmul 320 0.288 -> 0.258 s and 0.362 -> 0.340 s, stream_add
 * 8M 0.241 -> 0.235 s and 0.231 -> 0.227 s; 1 Ki measured the same as 4 Ki. */
#define THREAD_RECORDS (1u << 12)
#define RECORD_SLACK 2 /* a long form (3 words) fits wherever a short one does */

typedef struct rt_thread {
  record *records;
  record *pos; /* the next free record: written by the owner only; read by a finalizing thread */
  record *end; /* the hot path records while pos < end */
  uint64_t address_bound; /* ADDRESS_BOUND: the hot path's bound on short addresses */
  uint64_t on_left;
  uint32_t limit_base; /* count when end was last set */
  uint32_t flushed;    /* records [0, flushed) already sent by a finalizing thread */
  uint32_t id;
  int live;
  struct rt_thread *next;
  thread_site sites[THREAD_SITES];
} rt_thread;

typedef struct unit {
  uint64_t a, b;
} unit;

/* Hidden globals rather than statics: the callbacks' assembly names them. The runtime is
 * linked into executables only (memsnap-cc), so its thread-local variables are the
 * executable's own and local-exec: %fs-relative at a link-time offset, no GOT load. */
EXPORT __thread rt_thread *ms_rt_self __attribute__((tls_model("local-exec")));
/* Sampling, OFF phase (ms_rt_off): the accesses this thread still skips, split into
 * budgets by bits 4..7 of the callback's return address (call sites of a loop body lie
 * 10-20 bytes apart: each in its own 16-byte block, unlike bits 0..2, which put 3 of
 * stencil2d's 6 sites in one class). A skipped access spends one
 * unit of its own class's budget; a class with none left goes to the slow path, which ends
 * the phase when every budget is spent or else spreads what is left again. So the count
 * stays exact while consecutive accesses (different call sites) decrement different
 * counters: one counter decremented by every access was a chain of store-to-load
 * forwardings, one per access (measured in DESIGN.md). Inline instrumentation
 * (memsnap-pass.so) spends the budget of its site's index in its module, mod 16, instead:
 * any class with budget left keeps the count exact. */
#define SKIP_CLASSES 16
EXPORT __thread uint64_t ms_rt_skips[SKIP_CLASSES] __attribute__((tls_model("local-exec")));
static inline unsigned skip_class(uint64_t pc) { return (unsigned)(pc >> 4) & (SKIP_CLASSES - 1); }
EXPORT __thread uint8_t ms_rt_off __attribute__((tls_model("local-exec")));
/* The records buffered: the cursor is a pointer so that the hot path compares and bumps
 * it without scaling an index (measured in record_access's comment). */
static inline uint32_t count_of(rt_thread *t) {
  return (uint32_t)(__atomic_load_n(&t->pos, __ATOMIC_ACQUIRE) - t->records);
}
static inline void set_count(rt_thread *t, uint32_t n) {
  __atomic_store_n(&t->pos, t->records + n, __ATOMIC_RELEASE);
}

/* This thread holds the lock or is taking it. */
static __thread volatile sig_atomic_t lock_held __attribute__((tls_model("initial-exec")));
/* A termination signal (kill, Ctrl-C) that landed while lock_held: unlock() raises it again.
 * Handled at once, it would lose the flush it interrupted, and with it the records copied
 * into the slot not yet submitted (up to a slot, 131072 records): a program killed while it
 * waited for the writer's credits left a trace of only what the full slots held. */
static __thread volatile sig_atomic_t deferred_signal __attribute__((tls_model("initial-exec")));

EXPORT int ms_rt_state; /* STATE_*; read by inline instrumentation too */
static int helper_mode; /* MEMSNAP_OUT: this process started the writer */
/* MEMSNAP_OBJECTS=1: the allocation wrappers record heap objects (ALLOC and FREE units in
 * the thread's buffer). Read once by rt_init; off, a wrapper costs one load and branch. */
static int objects_on;
static uint64_t sample_on, sample_off;
static rt_thread *threads; /* every thread ever seen, under the lock */
static rt_thread *free_threads;
static uint32_t thread_ids; /* next thread number */
static pthread_key_t thread_key;

/* The channel (under the lock). */
static int notice_fd = -1, credit_fd = -1;
/* The sockets behind them: a program that closes descriptors it did not open may get the
 * same numbers back for its own files, which the runtime must then never write, read or
 * close (channel_ours). */
static dev_t notice_dev, credit_dev;
static ino_t notice_ino, credit_ino;
static unit *slots;
static uint32_t slot_index, slots_in_flight;
static uint64_t *slot_pos, *slot_end; /* in 8-byte words */
#define SLOT_WORDS ((size_t)MS_VG_SLOT_UNITS * 2)
static inline uint64_t *slot_words(uint32_t index) {
  return (uint64_t *)(void *)slots + (size_t)index * SLOT_WORDS;
}
static uint32_t last_thread = UINT32_MAX;
static int channel_broken;

static char out_path[PATH_MAX];
static char exe_path[PATH_MAX];
static int saved_argc;
static char **saved_argv;

/*------------------------------------------------------------*/
/* The lock: an atomic flag, usable from a signal handler     */
/*------------------------------------------------------------*/

static int lock_word;
static pid_t lock_owner;

static pid_t my_tid(void) { return (pid_t)syscall(SYS_gettid); }

static void pause_briefly(void) {
  struct timespec t = {0, 50000};
  nanosleep(&t, NULL);
}

static void lock(void) {
  lock_held = 1; /* first: a termination signal from here to unlock() waits for it */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE))
    pause_briefly();
  lock_owner = my_tid();
}

/* For signal handlers and exit: 0 if the lock cannot be had, because this very thread
 * holds it (a signal interrupted its flush) or another one held it through `attempts`
 * waits of 50 us (-1: no limit). */
static int lock_bounded_by(int attempts) {
  if (lock_held) return 0;
  pid_t me = my_tid();
  for (int i = 0; attempts < 0 || i < attempts; i++) {
    if (!__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) {
      lock_owner = me;
      lock_held = 1;
      return 1;
    }
    if (__atomic_load_n(&lock_owner, __ATOMIC_RELAXED) == me) return 0;
    pause_briefly();
  }
  return 0;
}

static int lock_bounded(void) { return lock_bounded_by(40000); } /* ~2 s */

static void unlock(void) {
  lock_owner = 0;
  __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  lock_held = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  int deferred = deferred_signal;
  if (UNLIKELY(deferred)) {
    deferred_signal = 0;
    raise(deferred); /* the handler finds the lock free now */
  }
}

/*------------------------------------------------------------*/
/* Small async-signal-safe helpers                            */
/*------------------------------------------------------------*/

static void *map_zeroed(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static char *append_text(char *to, const char *end, const char *text) {
  while (*text && to < end - 1)
    *to++ = *text++;
  *to = '\0';
  return to;
}

static char *append_number(char *to, const char *end, uint64_t value) {
  char digits[24];
  int n = 0;
  do
    digits[n++] = (char)('0' + value % 10);
  while ((value /= 10) != 0);
  while (n > 0 && to < end - 1)
    *to++ = digits[--n];
  *to = '\0';
  return to;
}

/* The notice channel is a socket (memsnap makes it one): MSG_NOSIGNAL turns a vanished
 * reader into EPIPE instead of killing the program with SIGPIPE, and send() fails on
 * anything else the descriptor may have become. */
static int write_all(int fd, const void *data, size_t bytes) {
  const char *p = data;
  while (bytes > 0) {
    ssize_t n = send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    bytes -= (size_t)n;
  }
  return 0;
}

/*------------------------------------------------------------*/
/* Objects: which file holds a pc, and its load bias          */
/*------------------------------------------------------------*/

#define MAX_OBJECTS 256
#define OBJECT_PATHS ((size_t)64 * 1024)

typedef struct object {
  uint64_t start, end, bias;
  const char *path;
} object;

static object objects[MAX_OBJECTS];
static int object_count;
static char object_paths[OBJECT_PATHS];
static size_t object_paths_used;

static int add_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : exe_path;
  for (int i = 0; i < info->dlpi_phnum && object_count < MAX_OBJECTS; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    size_t length = strlen(name) + 1;
    if (object_paths_used + length > OBJECT_PATHS) return 1;
    char *copy = object_paths + object_paths_used;
    memcpy(copy, name, length);
    object_paths_used += length;
    objects[object_count++] =
        (object){info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
                 info->dlpi_addr, copy};
  }
  return 0;
}

static void scan_objects(void) {
  object_count = 0;
  object_paths_used = 0;
  dl_iterate_phdr(add_object, NULL);
}

/* The object of pc; rescans the loaded objects once on a miss unless in a signal handler. */
static const object *object_of(uint64_t pc, int in_signal) {
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < object_count; i++)
      if (pc >= objects[i].start && pc < objects[i].end) return &objects[i];
    if (in_signal) break;
    scan_objects();
  }
  return NULL;
}

/*------------------------------------------------------------*/
/* The channel: units in shared slots, notices on a socket    */
/*------------------------------------------------------------*/

#define SLOT_UNITS MS_VG_SLOT_UNITS
#define SLOT_COUNT 8

/* A notice on the pipe (HELLO, CHUNK, SIGNAL): the version 2 layout of every sender. */
static inline uint64_t pack(uint32_t site, uint32_t tag, uint32_t size, uint32_t extra) {
  return (uint64_t)site << 32 | (uint64_t)extra << 16 | (uint64_t)tag << 8 | size;
}

/* A unit in a slot (MS_RT_VERSION): the layout of ms_access's second half, `field` the
 * thread of an access or the payload units of a SITE. */
static inline uint64_t pack_slot(uint32_t site, uint32_t tag, uint32_t size, uint32_t field) {
  return (uint64_t)tag << 56 | (uint64_t)size << 48 | (uint64_t)(field & 0xffff) << 32 | site;
}

static int same_file(int fd, dev_t dev, ino_t ino) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static void remember_channel(void) {
  struct stat st;
  if (notice_fd >= 0 && fstat(notice_fd, &st) == 0) notice_dev = st.st_dev, notice_ino = st.st_ino;
  if (credit_fd >= 0 && fstat(credit_fd, &st) == 0) credit_dev = st.st_dev, credit_ino = st.st_ino;
}

/* Whether both descriptors are still the channel's sockets (async-signal-safe). If the
 * program closed them, they are forgotten: the stream ends there, truncated, and memsnap
 * says so. */
static int channel_ours(void) {
  if ((notice_fd < 0 || same_file(notice_fd, notice_dev, notice_ino)) &&
      (credit_fd < 0 || same_file(credit_fd, credit_dev, credit_ino)))
    return 1;
  notice_fd = -1;
  credit_fd = -1;
  return 0;
}

static void break_channel(void) {
  channel_broken = 1;
  slot_pos = slot_words(0); /* records keep landing in slot 0, never sent */
}

/* Hands the current slot to the reader and moves to the next free one. */
static void submit_slot(void) {
  if (channel_broken) {
    slot_pos = slot_words(0);
    return;
  }
  if (!channel_ours()) {
    break_channel();
    return;
  }
  unit notice = {(uint64_t)(slot_pos - slot_words(slot_index)) * sizeof(uint64_t),
                 pack(slot_index, TAG_CHUNK, 0, 0)};
  if (write_all(notice_fd, &notice, sizeof notice) != 0) {
    break_channel();
    return;
  }
  slots_in_flight++;
  while (slots_in_flight >= SLOT_COUNT) {
    unsigned char credits[64];
    ssize_t n = recv(credit_fd, credits, sizeof credits, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      break_channel();
      return;
    }
    slots_in_flight -= (uint32_t)n < slots_in_flight ? (uint32_t)n : slots_in_flight;
  }
  slot_index = (slot_index + 1) % SLOT_COUNT;
  slot_pos = slot_words(slot_index);
  slot_end = slot_pos + SLOT_WORDS;
}

/* A payload unit (two words); the caller made sure that its control unit does not straddle
 * two slots. */
static inline void put_unit(uint64_t a, uint64_t b) {
  slot_pos[0] = a;
  slot_pos[1] = b;
  slot_pos += 2;
  if (slot_pos == slot_end) submit_slot();
}

/* A control unit: the escape word, then the unit, in one slot, with `payload` units after
 * it in the same slot. */
static inline void put_control(uint64_t a, uint64_t b, size_t payload) {
  if ((size_t)(slot_end - slot_pos) < 3 + 2 * payload) submit_slot();
  *slot_pos++ = MS_RT_ESCAPE_CONTROL;
  put_unit(a, b);
}

static void submit_partial_slot(void) {
  if (slot_pos > slot_words(slot_index)) submit_slot();
}

/*------------------------------------------------------------*/
/* Sites                                                      */
/*------------------------------------------------------------*/

typedef struct site_entry {
  uint64_t pc; /* 0: empty */
  uint32_t id;
} site_entry;

static site_entry *site_table;
static uint64_t site_capacity; /* power of two */
static uint32_t site_count;

/* Last pcs seen by the converter: a direct-mapped cache in front of the hash table. In a
 * loop the same few call sites repeat, so most lookups end here. */
#define SITE_CACHE 4096
static site_entry site_cache[SITE_CACHE];

static inline uint64_t hash_pc(uint64_t pc) { return pc * 0x9E3779B97F4A7C15ull; }

static int grow_sites(void) {
  uint64_t capacity = site_capacity ? 2 * site_capacity : 1u << 14;
  site_entry *table = map_zeroed(capacity * sizeof *table);
  if (!table) return -1;
  for (uint64_t i = 0; i < site_capacity; i++) {
    if (!site_table[i].pc) continue;
    uint64_t j = hash_pc(site_table[i].pc) >> 20 & (capacity - 1);
    while (table[j].pc)
      j = (j + 1) & (capacity - 1);
    table[j] = site_table[i];
  }
  if (site_table) munmap(site_table, site_capacity * sizeof *site_table);
  site_table = table;
  site_capacity = capacity;
  return 0;
}

/* A site is known by its callback's return address; the SITE record names the call
 * instruction instead (`call rel32`, 5 bytes, else one byte back: inside the call), whose
 * line is the access's: the instruction after the call often has line 0 or the next
 * statement's (1000 of 3000 sites of stream_add's loop had line 0). */
static uint64_t call_address(uint64_t return_address) {
  return *(const uint8_t *)(uintptr_t)(return_address - 5) == 0xE8 ? return_address - 5
                                                                   : return_address - 1;
}

static void emit_site(uint32_t id, uint64_t return_address, uint64_t low, int in_signal) {
  uint64_t pc = call_address(return_address);
  const object *o = object_of(pc, in_signal);
  const char *path = o ? o->path : "";
  size_t length = strlen(path);
  if (length > 4000) length = 4000;
  /* payload: bias, line, then "path\0" "\0" "\0", zero padded */
  size_t extra = 1 + (length + 3 + sizeof(unit) - 1) / sizeof(unit);
  put_control(pc, pack_slot(id, TAG_SITE, 0, (uint32_t)extra), extra); /* never straddles */
  put_unit(o ? o->bias : 0, (low & 0xffff) << 32); /* line 0, then size | kind << 8 */
  unit text[4004 / sizeof(unit) + 1];
  memset(text, 0, (extra - 1) * sizeof(unit));
  memcpy(text, path, length);
  for (size_t i = 0; i + 1 < extra; i++)
    put_unit(text[i].a, text[i].b);
}

static uint32_t site_of(uint64_t pc, uint64_t low, int in_signal) {
  site_entry *cached = &site_cache[(pc ^ pc >> 12) & (SITE_CACHE - 1)];
  if (LIKELY(cached->pc == pc)) return cached->id;
  if ((uint64_t)site_count * 2 >= site_capacity && grow_sites() != 0) return 0;
  uint64_t j = hash_pc(pc) >> 20 & (site_capacity - 1);
  while (site_table[j].pc && site_table[j].pc != pc)
    j = (j + 1) & (site_capacity - 1);
  if (!site_table[j].pc) {
    site_table[j] = (site_entry){pc, site_count++};
    emit_site(site_table[j].id, pc, low, in_signal);
  }
  *cached = site_table[j];
  return cached->id;
}

/*------------------------------------------------------------*/
/* Flushing a thread's buffer into the channel                */
/*------------------------------------------------------------*/

/* Under the lock. Sends records [flushed, count) of t: they are units already, so this is
 * a copy into the slots (the sites were defined when the thread first met them).
 * Measured (program-side CPU of MEMSNAP_OUT runs, best of 5, on a loaded 2-core machine):
 * matmul 320 0.43 -> 0.31 s, stream_add 8M 0.29 -> 0.25 s, linked_list 1.2M 0.45 -> 0.43 s
 * against the former per-record conversion (site lookup + repack of each record); in a
 * perf profile of a traced matmul 250 the program's conversion went from 23 % of the
 * cycles to 15 % (this memcpy), its callbacks from 17 % to 21 % (the cache probe). */
static void convert(rt_thread *t, uint32_t count, int in_signal) {
  (void)in_signal;
  if (t->flushed >= count) return;
  if (t->id != last_thread) {
    put_control(t->id, pack_slot(0, TAG_THREAD, 0, 0), 0);
    last_thread = t->id;
  }
  const record *from = t->records + t->flushed;
  size_t n = count - t->flushed; /* at most THREAD_RECORDS + RECORD_SLACK: fits in a slot */
  /* whole in one slot, so that no long form straddles two */
  if ((size_t)(slot_end - slot_pos) < n) submit_slot();
  /* Non-temporal stores: the slot's lines are not pulled into this core's cache only to be
   * read by memsnap on another core. Against memcpy, interleaved best of 5: program CPU
   * matmul 320 0.261 -> 0.240 s, stream_add 8M 0.239 -> 0.218 s; program + memsnap CPU
   * matmul 0.569 -> 0.532 s, stream_add 0.375 -> 0.336 s (the reader does not lose).
   * 16 bytes at a time from the first 16-byte boundary of the slot (words after a control
   * unit of 3 start on an 8-byte one). */
  uint64_t *to = slot_pos;
  size_t i = 0;
  if (n > 0 && ((uintptr_t)to & 15)) {
    _mm_stream_si64((long long *)to, (long long)from[0]);
    i = 1;
  }
  for (; i + 2 <= n; i += 2)
    _mm_stream_si128((__m128i *)(void *)(to + i), _mm_loadu_si128((const __m128i *)(from + i)));
  if (i < n) _mm_stream_si64((long long *)(to + i), (long long)from[i]);
  _mm_sfence();
  slot_pos += n;
  if (slot_pos == slot_end) submit_slot();
}

/* The owner flushes its whole buffer. */
static void flush_own(rt_thread *t) {
  lock();
  if (ms_rt_state == STATE_ACTIVE && !channel_broken) convert(t, count_of(t), 0);
  t->flushed = 0;
  set_count(t, 0);
  unlock();
}

/* Under the lock: sends what every thread has buffered (other threads keep running: their
 * records written after the snapshot of count are not sent). */
static void flush_all(int in_signal) {
  for (rt_thread *t = threads; t; t = t->next) {
    if (!t->live) continue;
    uint32_t count = count_of(t);
    convert(t, count, in_signal);
    t->flushed = count;
  }
}

/*------------------------------------------------------------*/
/* Threads                                                    */
/*------------------------------------------------------------*/

static void set_limit(rt_thread *t) {
  uint32_t count = count_of(t);
  uint64_t room = THREAD_RECORDS;
  if (sample_on && t->on_left < room - count) room = count + t->on_left;
  t->end = t->records + room;
  t->limit_base = count;
}

/* Flushes, then gives the buffer to the next thread that starts. */
static void thread_exit(void *arg) {
  rt_thread *t = arg;
  flush_own(t);
  lock();
  t->live = 0;
  for (rt_thread **link = &threads; *link; link = &(*link)->next)
    if (*link == t) {
      *link = t->next;
      break;
    }
  t->next = free_threads;
  free_threads = t;
  ms_rt_self = NULL;
  unlock();
}

static rt_thread *thread_new(void) {
  lock();
  rt_thread *t = free_threads;
  if (t) {
    free_threads = t->next;
    memset(t->sites, 0, sizeof t->sites); /* their bits name the previous owner */
  } else {
    t = map_zeroed(sizeof *t);
    record *records = t ? map_zeroed((THREAD_RECORDS + RECORD_SLACK) * sizeof *records) : NULL;
    if (!records) {
      unlock();
      return NULL;
    }
    t->records = records;
  }
  set_count(t, 0);
  t->flushed = 0;
  ms_rt_off = 0; /* thread_new runs in the thread itself */
  memset(ms_rt_skips, 0, sizeof ms_rt_skips);
  t->on_left = sample_on;
  t->id = thread_ids++;
  t->address_bound = ADDRESS_BOUND;
  t->live = 1;
  set_limit(t);
  t->next = threads;
  threads = t;
  unlock();
  pthread_setspecific(thread_key, t);
  return t;
}

/*------------------------------------------------------------*/
/* The slow path of the callbacks                             */
/*------------------------------------------------------------*/

static void rt_init(void);

/* The low bits' flag of the inline instrumentation's entries (__memsnap_inline_*): their
 * fourth argument is the site's word in the module's table, which the slow path fills. */
#define LOW_INLINE 0x10000u

/* Starts or goes on with an OFF phase of `count` (>= 1) accesses, this one (pc) the first. */
static void skip_from(uint64_t count, uint64_t pc) {
  for (int i = 0; i < SKIP_CLASSES; i++)
    ms_rt_skips[i] = count / SKIP_CLASSES;
  ms_rt_skips[skip_class(pc)] += count % SKIP_CLASSES - 1;
  ms_rt_off = 1;
}

/* An OFF access whose class has no budget left: 1 if skipped, 0 if the phase is over (every
 * budget spent) and the ON phase starts with this access. */
static int skip_off(rt_thread *t, uint64_t pc) {
  uint64_t left = 0;
  for (int i = 0; i < SKIP_CLASSES; i++)
    left += ms_rt_skips[i];
  if (left > 0) {
    skip_from(left, pc);
    return 1;
  }
  ms_rt_off = 0;
  t->on_left = sample_on;
  set_limit(t);
  return 0;
}

/* The unit bits of an access by thread t at pc, whose callback passes `low` (kind << 8 |
 * size): from its cache, else from the process-wide table under the lock (a new site's
 * SITE unit goes into the channel now, before any access of it).
 * 0 if the lock is this thread's already (a signal handler interrupted a flush): the
 * access is then dropped. */
static int thread_site_of(rt_thread *t, uint64_t pc, uint64_t low, uint32_t *site) {
  thread_site *e = &t->sites[pc & (THREAD_SITES - 1)];
  if (e->pc == pc) {
    *site = (uint32_t)(e->bits >> 48);
    return 1;
  }
  if (lock_held) return 0;
  lock();
  int ok =
      ms_rt_state == STATE_ACTIVE && !channel_broken && (site_capacity != 0 || grow_sites() == 0);
  if (ok) {
    *site = site_of(pc, low, 0);
    if (*site < MS_RT_SHORT_SITES) { /* the others are never cached: always a long form */
      e->bits = (uint64_t)*site << 48;
      e->pc = pc;
    }
  }
  unlock();
  return ok;
}

/* The slow path's record: a short word, or a long form (which settles the sampling count
 * of the ON phase, since its three words are one access). Room: pos < end, and the buffer
 * has RECORD_SLACK words beyond THREAD_RECORDS. */
static void put_record(rt_thread *t, uint64_t address, uint32_t site, uint64_t low) {
  record *p = t->pos;
  if (LIKELY(site < MS_RT_SHORT_SITES && address < ADDRESS_BOUND)) {
    *p = address | (uint64_t)site << 48;
    __atomic_store_n(&t->pos, p + 1, __ATOMIC_RELEASE);
    return;
  }
  if (sample_on) t->on_left -= count_of(t) - t->limit_base;
  p[0] = MS_RT_ESCAPE_LONG;
  p[1] = address;
  p[2] = pack_slot(site, (uint32_t)(low >> 8) & 0xff, (uint32_t)low & 0xff, t->id);
  __atomic_store_n(&t->pos, p + 3, __ATOMIC_RELEASE);
  if (sample_on) t->on_left -= 1;
  if (count_of(t) >= THREAD_RECORDS) flush_own(t);
  set_limit(t); /* an ON phase that ends here: the next access goes to the slow path */
}

/* Everything but the callbacks' fast path: the first access (initialization), a thread's
 * first access, a full buffer or the end of a sampling phase, a site that the thread's
 * cache does not hold. Called by the callbacks (assembly or C) with the access's address,
 * the callback's return address and the unit's low bits (kind << 8 | size). */
__attribute__((noinline, visibility("hidden"))) void ms_rt_slow_path(uint64_t address, uint64_t pc,
                                                                     uint64_t low, uint64_t slot) {
  /* inline instrumentation (memsnap-pass.so): `slot` is the site's word in its module */
  uint64_t *site_word = low & LOW_INLINE ? (uint64_t *)(uintptr_t)slot : NULL;
  low &= ~(uint64_t)LOW_INLINE;
  if (__atomic_load_n(&ms_rt_state, __ATOMIC_ACQUIRE) == STATE_UNINIT) rt_init();
  if (ms_rt_state != STATE_ACTIVE) {
    if (ms_rt_self) set_count(ms_rt_self, 0);
    return;
  }
  rt_thread *t = ms_rt_self;
  if (!t) {
    t = ms_rt_self = thread_new();
    if (!t) return;
  } else if (t->pos < t->end) {
    /* here for a site that the thread's cache does not hold */
  } else if (ms_rt_off) {
    if (skip_off(t, pc)) return;
  } else {
    if (sample_on) t->on_left -= count_of(t) - t->limit_base;
    if (count_of(t) >= THREAD_RECORDS) flush_own(t);
    if (sample_on && t->on_left == 0) {
      t->end = t->records;
      skip_from(sample_off, pc);
      return;
    }
    set_limit(t);
  }
  uint32_t site;
  if (!thread_site_of(t, pc, low, &site)) return;
  if (site_word && site < MS_RT_SHORT_SITES)
    __atomic_store_n(site_word, (uint64_t)site << 48, __ATOMIC_RELAXED);
  put_record(t, address, site, low);
}

#define LOW(size, kind) ((uint64_t)(kind) << 8 | (uint64_t)(size))

#if defined(__x86_64__)
/* The callbacks on x86-64, in assembly, preserving every register but the flags.
 * memsnap-cc declares them `no_caller_saved_registers` in each translation unit
 * (memsnap-rt.h, included with -include), so the caller keeps its values in registers
 * across the call: with the ordinary convention, every live vector register and most
 * general ones were spilled and reloaded around each access (matmul's inner loop: 2
 * spills and 2 reloads of its sums per pair of loads). The measurements are in DESIGN.md.
 * A caller built without memsnap-rt.h assumes less and is served as well.
 *
 * Fast path (the same as the C one below): a program that records nothing (state OFF)
 * compares one global and returns; otherwise four registers go to the red zone and the
 * access is appended with the site from the thread's cache, or a sampling OFF phase counts
 * down. Everything else goes through ms_rt_slow_entry, which saves the general registers
 * the C ABI lets a callee clobber and, with XSAVE (x87, SSE, AVX, AVX-512 state), the
 * vector ones, then calls ms_rt_slow_path. Offsets into rt_thread are checked below. */
_Static_assert(STATE_OFF == 3 && SKIP_CLASSES == 16, "asm: STATE_OFF, SKIP_CLASSES");
_Static_assert(offsetof(rt_thread, pos) == 8 && offsetof(rt_thread, end) == 16 &&
                   offsetof(rt_thread, address_bound) == 24 && offsetof(rt_thread, sites) == 64 &&
                   sizeof(thread_site) == 16 && offsetof(thread_site, bits) == 8 &&
                   THREAD_SITES == 4096,
               "asm: rt_thread layout");

/* 0: not probed yet, 1: XSAVE, 2: FXSAVE (no OSXSAVE: SSE state only). */
__attribute__((visibility("hidden"))) int ms_rt_save_kind;

__asm__(".text\n"
        ".macro MS_RT_CALLBACK name, low\n"
        "  .globl \\name\n"
        "  .type \\name, @function\n"
        "  .p2align 4\n"
        "\\name:\n"
        "  cmpb $0, %fs:ms_rt_off@tpoff\n" /* this thread skips (sampling, OFF phase) */
        "  jne 3f\n"
        "  cmpl $3, ms_rt_state(%rip)\n" /* STATE_OFF: nothing to record */
        "  jne 1f\n"
        "  ret\n"
        "1:\n"
        "  movq %rax, -8(%rsp)\n"
        "  movq %rcx, -16(%rsp)\n"
        "  movq %rsi, -32(%rsp)\n"
        "  movq %fs:ms_rt_self@tpoff, %rax\n" /* t */
        "  testq %rax, %rax\n"
        "  je 6f\n"
        "  movq (%rsp), %rcx\n" /* the return address: pc */
        "  movl %ecx, %esi\n"
        "  andl $4095, %esi\n"
        "  shll $4, %esi\n"
        "  cmpq %rcx, 64(%rax,%rsi)\n" /* t->sites[pc & 4095].pc */
        "  jne 6f\n"
        "  cmpq 24(%rax), %rdi\n" /* address >= t->address_bound: a long form */
        "  jae 6f\n"
        "  movq 72(%rax,%rsi), %rsi\n" /* .bits: site << 48 */
        "  orq %rdi, %rsi\n"
        "  movq 8(%rax), %rcx\n" /* p = t->pos */
        "  cmpq 16(%rax), %rcx\n"
        "  jae 6f\n"
        "  movq %rsi, (%rcx)\n"
        "  addq $8, %rcx\n"
        "  movq %rcx, 8(%rax)\n" /* t->pos = p + 1 (a release store on x86) */
        "  movq -8(%rsp), %rax\n"
        "  movq -16(%rsp), %rcx\n"
        "  movq -32(%rsp), %rsi\n"
        "  ret\n"
        "3:\n" /* OFF phase: spend one unit of this class's budget */
        "  movq %rax, -8(%rsp)\n"
        "  movzbl (%rsp), %eax\n"
        "  shrl $4, %eax\n" /* (pc >> 4) & (SKIP_CLASSES - 1) */
        "  subq $1, %fs:ms_rt_skips@tpoff(,%rax,8)\n"
        "  jb 4f\n"
        "  movq -8(%rsp), %rax\n"
        "  ret\n"
        "4:\n" /* none left: undo, and the slow path decides */
        "  addq $1, %fs:ms_rt_skips@tpoff(,%rax,8)\n"
        "  movq %rcx, -16(%rsp)\n"
        "  movq %rsi, -32(%rsp)\n"
        "6:\n" /* the slow path: a new thread or site, a full buffer, a phase ends */
        "  movq %rdx, -24(%rsp)\n"
        "  movl $\\low, %esi\n"
        "  jmp ms_rt_slow_entry\n"
        "  .size \\name, .-\\name\n"
        ".endm\n"
        /* rdi: address, esi: low bits; rax, rcx, rdx, rsi saved below rsp (red zone, at -8,
         * -16, -24, -32) */
        "  .p2align 4\n"
        "  .type ms_rt_slow_entry, @function\n"
        "ms_rt_slow_entry:\n"
        "  subq $32, %rsp\n"
        "  pushq %r8\n"
        "  pushq %r9\n"
        "  pushq %r10\n"
        "  pushq %r11\n"
        "  pushq %rdi\n"
        "  pushq %rbx\n"
        "  pushq %rbp\n"
        "  movq %rsp, %rbp\n" /* the callback's return address at 88(%rbp) */
        "  movl ms_rt_save_kind(%rip), %eax\n"
        "  testl %eax, %eax\n"
        "  jne 1f\n"
        "  movl $1, %eax\n"
        "  cpuid\n"
        "  movl $2, %eax\n"
        "  btl $27, %ecx\n" /* OSXSAVE */
        "  jnc 2f\n"
        "  movl $1, %eax\n"
        "2:\n"
        "  movl %eax, ms_rt_save_kind(%rip)\n"
        "1:\n"
        "  movq %rsi, %rbx\n"
        "  andq $-64, %rsp\n"
        "  subq $2752, %rsp\n" /* standard XSAVE layout up to Hi16_ZMM: 2688 bytes */
        "  cmpl $1, %eax\n"
        "  jne 3f\n"
        "  xorl %edx, %edx\n"
        "  movq %rdx, 512(%rsp)\n" /* the XSAVE header must be zero for XRSTOR */
        "  movq %rdx, 520(%rsp)\n"
        "  movq %rdx, 528(%rsp)\n"
        "  movq %rdx, 536(%rsp)\n"
        "  movq %rdx, 544(%rsp)\n"
        "  movq %rdx, 552(%rsp)\n"
        "  movq %rdx, 560(%rsp)\n"
        "  movq %rdx, 568(%rsp)\n"
        "  movl $0xe7, %eax\n" /* x87, SSE, AVX, opmask, ZMM: not MPX, PKRU, AMX */
        "  xsave (%rsp)\n"
        "  jmp 4f\n"
        "3:\n"
        "  fxsave (%rsp)\n"
        "4:\n"
        "  movq %rbx, %rdx\n"
        "  movq 88(%rbp), %rsi\n"
        "  movq 56(%rbp), %rcx\n" /* the caller's rsi: an inline entry's slot */
        "  call ms_rt_slow_path\n"
        "  cmpl $1, ms_rt_save_kind(%rip)\n"
        "  jne 3f\n"
        "  movl $0xe7, %eax\n"
        "  xorl %edx, %edx\n"
        "  xrstor (%rsp)\n"
        "  jmp 4f\n"
        "3:\n"
        "  fxrstor (%rsp)\n"
        "4:\n"
        "  movq %rbp, %rsp\n"
        "  popq %rbp\n"
        "  popq %rbx\n"
        "  popq %rdi\n"
        "  popq %r11\n"
        "  popq %r10\n"
        "  popq %r9\n"
        "  popq %r8\n"
        "  movq (%rsp), %rsi\n"
        "  movq 8(%rsp), %rdx\n"
        "  movq 16(%rsp), %rcx\n"
        "  movq 24(%rsp), %rax\n"
        "  leaq 32(%rsp), %rsp\n"
        "  ret\n"
        "  .size ms_rt_slow_entry, .-ms_rt_slow_entry\n"
        /* The inline instrumentation's slow entries (memsnap-pass.so): rdi the address,
         * rsi the site's word in the module's table; everything else inline code does
         * itself. Same saves as a callback's slow path, low bits with LOW_INLINE. */
        ".macro MS_RT_INLINE name, low\n"
        "  .globl \\name\n"
        "  .type \\name, @function\n"
        "  .p2align 4\n"
        "\\name:\n"
        "  movq %rax, -8(%rsp)\n"
        "  movq %rcx, -16(%rsp)\n"
        "  movq %rdx, -24(%rsp)\n"
        "  movq %rsi, -32(%rsp)\n"
        "  movl $\\low, %esi\n"
        "  jmp ms_rt_slow_entry\n"
        "  .size \\name, .-\\name\n"
        ".endm\n"
        "MS_RT_INLINE ms_rt_inline_load1, 65537\n"
        "MS_RT_INLINE ms_rt_inline_store1, 65793\n"
        "MS_RT_INLINE ms_rt_inline_load2, 65538\n"
        "MS_RT_INLINE ms_rt_inline_store2, 65794\n"
        "MS_RT_INLINE ms_rt_inline_load4, 65540\n"
        "MS_RT_INLINE ms_rt_inline_store4, 65796\n"
        "MS_RT_INLINE ms_rt_inline_load8, 65544\n"
        "MS_RT_INLINE ms_rt_inline_store8, 65800\n"
        "MS_RT_INLINE ms_rt_inline_load16, 65552\n"
        "MS_RT_INLINE ms_rt_inline_store16, 65808\n"
        /* low bits: kind << 8 | size (TAG_LOAD 0, TAG_STORE 1) */
        "MS_RT_CALLBACK __sanitizer_cov_load1, 1\n"
        "MS_RT_CALLBACK __sanitizer_cov_store1, 257\n"
        "MS_RT_CALLBACK __sanitizer_cov_load2, 2\n"
        "MS_RT_CALLBACK __sanitizer_cov_store2, 258\n"
        "MS_RT_CALLBACK __sanitizer_cov_load4, 4\n"
        "MS_RT_CALLBACK __sanitizer_cov_store4, 260\n"
        "MS_RT_CALLBACK __sanitizer_cov_load8, 8\n"
        "MS_RT_CALLBACK __sanitizer_cov_store8, 264\n"
        "MS_RT_CALLBACK __sanitizer_cov_load16, 16\n"
        "MS_RT_CALLBACK __sanitizer_cov_store16, 272\n");

_Static_assert(TAG_LOAD == 0 && TAG_STORE == 1 && LOW_INLINE == 65536,
               "asm: the callbacks' low bits");

#else
/* The hot path, inlined into every callback: a buffer append in the channel's layout, with
 * the site from the thread's own cache. The cursor is a pointer compared with `end` (an
 * index scaled and added to the base took a load and two instructions more): program-side
 * CPU, best of 7 interleaved, matmul 320 0.359 -> 0.336 s and 0.344 -> 0.321 s, stream_add
 * 8M 0.253 -> 0.217 s and 0.283 -> 0.251 s. */
static inline __attribute__((always_inline)) void record_access(uint64_t address, uint64_t pc,
                                                                uint64_t low) {
  rt_thread *t = ms_rt_self;
  if (LIKELY(t != NULL)) {
    record *p = t->pos;
    if (UNLIKELY(ms_rt_off)) {
      uint64_t *budget = &ms_rt_skips[skip_class(pc)];
      if (LIKELY(*budget > 0)) {
        (*budget)--;
        return;
      }
    } else if (LIKELY(p < t->end)) {
      const thread_site *e = &t->sites[pc & (THREAD_SITES - 1)];
      if (LIKELY(e->pc == pc && address < ADDRESS_BOUND)) {
        *p = address | e->bits;
        __atomic_store_n(&t->pos, p + 1, __ATOMIC_RELEASE);
        return;
      }
    }
  } else if (LIKELY(ms_rt_state == STATE_OFF)) {
    return;
  }
  ms_rt_slow_path(address, pc, low, 0);
}

#define PC ((uint64_t)(uintptr_t)__builtin_return_address(0))

#define CALLBACKS(n, type)                                                                         \
  EXPORT void __sanitizer_cov_load##n(type *address) {                                             \
    record_access((uint64_t)(uintptr_t)address, PC, LOW(n, TAG_LOAD));                             \
  }                                                                                                \
  EXPORT void __sanitizer_cov_store##n(type *address) {                                            \
    record_access((uint64_t)(uintptr_t)address, PC, LOW(n, TAG_STORE));                            \
  }

CALLBACKS(1, uint8_t)
CALLBACKS(2, uint16_t)
CALLBACKS(4, uint32_t)
CALLBACKS(8, uint64_t)
CALLBACKS(16, __int128)
#endif

/* Programs built by earlier versions of memsnap-cc also call trace-pc-guard at function
 * entries (clang 14 needs a coverage level besides trace-loads,trace-stores: `func` alone
 * is enough, and is what memsnap-cc passes now); the guards are not used. */
EXPORT void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) {
  (void)start;
  (void)stop;
}
EXPORT void __sanitizer_cov_trace_pc_guard(uint32_t *guard) { (void)guard; }

/*------------------------------------------------------------*/
/* Ends of the stream                                         */
/*------------------------------------------------------------*/

static void close_channel(void) {
  if (notice_fd >= 0 && channel_ours()) close(notice_fd);
  notice_fd = -1;
}

/* MEMSNAP_OUT mode: the writer closes its end of the credit socket when it exits, after
 * renaming the finished trace into place. Bounded, so that a stuck writer cannot hang
 * the program's exit (60 s). */
static void wait_for_writer(void) {
  if (!helper_mode || credit_fd < 0 || !channel_ours()) return;
  for (int waited = 0; waited < 600;) {
    struct pollfd p = {credit_fd, POLLIN, 0};
    int r = poll(&p, 1, 100);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      waited++;
      continue;
    }
    unsigned char credits[64];
    ssize_t n = recv(credit_fd, credits, sizeof credits, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
  }
  close(credit_fd);
  credit_fd = -1;
}

/* exit() may come from a signal handler that interrupted this thread's own flush: then
 * the lock is ours already and the slots are mid-update, so the stream is only closed
 * (and reads as truncated) instead of deadlocking. Another thread holding the lock always
 * releases it: the writer keeps reading, or is gone and the channel breaks. */
static void finish(int status) {
  int locked = lock_bounded_by(-1);
  if (ms_rt_state != STATE_ACTIVE) {
    if (locked) unlock();
    return;
  }
  if (locked && !channel_broken) {
    flush_all(0);
    put_control((uint64_t)(int64_t)status, pack_slot(0, TAG_EXIT, 0, 0), 0);
    submit_partial_slot();
  }
  __atomic_store_n(&ms_rt_state, STATE_OFF, __ATOMIC_RELEASE);
  close_channel();
  wait_for_writer();
  if (locked) unlock();
}

static void on_exit_handler(int status, void *arg) {
  (void)arg;
  finish(status);
}

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE,  SIGILL, SIGABRT,
                                    SIGTERM, SIGINT, SIGQUIT, SIGHUP};

/* A termination signal that lands while this thread holds the lock (inside a flush, or
 * waiting for the writer's credits) is put off until unlock(), so the flush completes and
 * nothing is lost. Any other signal there (a fault, which the runtime's own code does not
 * cause) is handled at once: the SIGNAL notice goes on the notice socket itself (one
 * 16-byte send), so that it arrives although the slots are in an unknown state; the
 * records of that flush are lost. */
static void fatal_handler(int signal_number) {
  if (lock_held && !deferred_signal &&
      (signal_number == SIGTERM || signal_number == SIGINT || signal_number == SIGQUIT ||
       signal_number == SIGHUP)) {
    deferred_signal = signal_number; /* never a fault: returning does not repeat it */
    return;
  }
  int saved = errno;
  unit notice = {(uint64_t)signal_number, pack(0, TAG_SIGNAL, 0, 0)};
  int locked = lock_bounded();
  if (locked && ms_rt_state == STATE_ACTIVE && !channel_broken) {
    flush_all(1);
    submit_partial_slot();
  }
  int was_active = __atomic_exchange_n(&ms_rt_state, STATE_OFF, __ATOMIC_ACQ_REL) == STATE_ACTIVE;
  if (was_active && notice_fd >= 0 && channel_ours())
    (void)write_all(notice_fd, &notice, sizeof notice);
  close_channel();
  wait_for_writer(); /* touches only the credit socket: safe even inside a flush */
  if (locked) unlock();
  /* the default action, as if this handler had never been there */
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = SIG_DFL;
  sigaction(signal_number, &action, NULL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal_number);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  errno = saved;
  raise(signal_number);
}

static void install_signal_handlers(void) {
  for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
    struct sigaction old;
    if (sigaction(fatal_signals[i], NULL, &old) != 0) continue;
    if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue; /* the program's */
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = fatal_handler;
    action.sa_flags = SA_RESTART | SA_NODEFER;
    sigfillset(&action.sa_mask);
    sigaction(fatal_signals[i], &action, NULL);
  }
}

/*------------------------------------------------------------*/
/* Starting the channel                                       */
/*------------------------------------------------------------*/

static int move_high(int fd) {
  if (fd < 0) return -1;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
  if (high < 0) return fd;
  close(fd);
  return high;
}

static int map_slots(int shm) {
  void *map = mmap(NULL, (size_t)SLOT_COUNT * SLOT_UNITS * sizeof(unit), PROT_READ | PROT_WRITE,
                   MAP_SHARED, shm, 0);
  if (map == MAP_FAILED) return -1;
  slots = map;
  slot_index = 0;
  slots_in_flight = 0;
  slot_pos = slot_words(0);
  slot_end = slot_pos + SLOT_WORDS;
  channel_broken = 0;
  return 0;
}

static int send_hello(void) {
  unit hello = {MS_VG_MAGIC, pack(MS_RT_VERSION, TAG_HELLO, 0, 0)};
  return write_all(notice_fd, &hello, sizeof hello);
}

/* MEMSNAP_RT_CHANNEL=N,M,C: descriptors opened by `memsnap record`. */
static int attach_channel(const char *text) {
  int fds[3];
  for (int i = 0; i < 3; i++) {
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || v < 0 || v > INT_MAX || (i < 2 && *end != ',')) return -1;
    fds[i] = (int)v;
    text = end + 1;
  }
  notice_fd = move_high(fds[0]);
  credit_fd = move_high(fds[2]);
  int shm = fds[1];
  int rc = map_slots(shm);
  close(shm);
  remember_channel();
  return rc == 0 ? send_hello() : -1;
}

static const char *memsnap_program(void) {
  const char *given = getenv("MEMSNAP_BIN");
  if (given && *given) return given;
#ifdef MEMSNAP_RT_BUILD_BIN
  if (access(MEMSNAP_RT_BUILD_BIN, X_OK) == 0) return MEMSNAP_RT_BUILD_BIN;
#endif
#ifdef MEMSNAP_RT_INSTALLED_BIN
  if (access(MEMSNAP_RT_INSTALLED_BIN, X_OK) == 0) return MEMSNAP_RT_INSTALLED_BIN;
#endif
  return "memsnap";
}

/* Starts `memsnap record -q --rt-channel=N,M,C [--sample ON/OFF] -o OUT -- PROG ARGS` as a
 * grandchild (so that the program's own wait() never sees it), with raw fork system calls
 * so that no atfork handler runs; only async-signal-safe calls, so this also serves in
 * the child of a fork. */
static int start_writer(const char *output) {
  int channel[2], credit[2]; /* notices, credits: both sockets */
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) return -1;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, credit) != 0) {
    close(channel[0]);
    close(channel[1]);
    return -1;
  }
  int shm = (int)syscall(SYS_memfd_create, "memsnap-rt", MFD_CLOEXEC);
  if (shm < 0 || ftruncate(shm, (off_t)SLOT_COUNT * SLOT_UNITS * sizeof(unit)) != 0) goto fail;

  static char arguments[4][64];
  char *end = arguments[0] + sizeof arguments[0], *p = arguments[0];
  p = append_text(p, end, "--rt-channel=");
  p = append_number(p, end, (uint64_t)channel[0]);
  p = append_text(p, end, ",");
  p = append_number(p, end, (uint64_t)shm);
  p = append_text(p, end, ",");
  append_number(p, end, (uint64_t)credit[1]);
  p = arguments[1];
  end = p + sizeof arguments[1];
  p = append_number(p, end, sample_on);
  p = append_text(p, end, "/");
  append_number(p, end, sample_off);
  static char *argv[4096];
  int n = 0;
  argv[n++] = (char *)"memsnap";
  argv[n++] = (char *)"record";
  argv[n++] = (char *)"-q";
  argv[n++] = arguments[0];
  if (sample_on) {
    argv[n++] = (char *)"--sample";
    argv[n++] = arguments[1];
  }
  if (objects_on) argv[n++] = (char *)"--objects";
  argv[n++] = (char *)"-o";
  argv[n++] = (char *)output;
  argv[n++] = (char *)"--";
  argv[n++] = exe_path;
  for (int i = 1; i < saved_argc && saved_argv && saved_argv[i] && n < 4095; i++)
    argv[n++] = saved_argv[i];
  argv[n] = NULL;
  const char *program = memsnap_program();

  pid_t child = (pid_t)syscall(SYS_fork);
  if (child < 0) goto fail;
  if (child == 0) {
    if ((pid_t)syscall(SYS_fork) == 0) {
      int keep[3] = {channel[0], shm, credit[1]};
      for (int i = 0; i < 3; i++)
        fcntl(keep[i], F_SETFD, 0);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, NULL);
      for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
        signal(fatal_signals[i], SIG_DFL);
      execvp(program, argv);
      _exit(127);
    }
    _exit(0);
  }
  while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
  }
  close(channel[0]);
  close(credit[1]);
  notice_fd = move_high(channel[1]);
  credit_fd = move_high(credit[0]);
  int rc = map_slots(shm);
  close(shm);
  helper_mode = 1;
  remember_channel();
  return rc == 0 ? send_hello() : -1;
fail:
  if (shm >= 0) close(shm);
  close(channel[0]);
  close(channel[1]);
  close(credit[0]);
  close(credit[1]);
  return -1;
}

/* ON/OFF with k, M, G suffixes (powers of 1000), e.g. 1M/9M. */
static int parse_sample(const char *text) {
  uint64_t values[2];
  for (int i = 0; i < 2; i++) {
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text) return -1;
    if (*end == 'k' || *end == 'K')
      v *= 1000, end++;
    else if (*end == 'M')
      v *= 1000000, end++;
    else if (*end == 'G')
      v *= 1000000000, end++;
    if (i == 0 && *end != '/') return -1;
    if (i == 1 && *end != '\0') return -1;
    values[i] = v;
    text = end + 1;
  }
  if (values[0] == 0) return -1;
  sample_on = values[1] ? values[0] : 0;
  sample_off = values[1];
  return 0;
}

/*------------------------------------------------------------*/
/* Inline instrumentation's site tables                       */
/*------------------------------------------------------------*/

/* Code instrumented inline (memsnap-pass.so) keeps each access site's word, site << 48
 * (0: not known yet), in a table of its module, filled by the slow path. Each module's
 * constructor registers its table, so that a fork child that starts a new stream (site
 * ids afresh) can clear them. Under the lock. */
#define SITE_TABLES 4096
static struct { uint64_t *begin, *end; } site_tables[SITE_TABLES];
static int site_table_count;

EXPORT void ms_rt_register_sites(uint64_t *begin, uint64_t *end) {
  lock();
  if (site_table_count < SITE_TABLES)
    site_tables[site_table_count].begin = begin, site_tables[site_table_count++].end = end;
  unlock();
}

static void clear_site_tables(void) {
  for (int i = 0; i < site_table_count; i++)
    memset(site_tables[i].begin, 0,
           (size_t)(site_tables[i].end - site_tables[i].begin) * sizeof(uint64_t));
}

/*------------------------------------------------------------*/
/* Fork                                                       */
/*------------------------------------------------------------*/

static void before_fork(void) {
  if (ms_rt_self && ms_rt_state == STATE_ACTIVE)
    flush_own(ms_rt_self); /* neither copy keeps them */
  lock();
}

static void after_fork_parent(void) { unlock(); }

static void after_fork_child(void) {
  deferred_signal = 0; /* the parent's, which raises it when it unlocks */
  lock_held = 0;
  lock_owner = 0;
  lock_word = 0;
  if (ms_rt_state != STATE_ACTIVE) return;
  if (slots) munmap(slots, (size_t)SLOT_COUNT * SLOT_UNITS * sizeof(unit));
  slots = NULL;
  close_channel();
  if (credit_fd >= 0) close(credit_fd);
  credit_fd = -1;
  ms_rt_state = STATE_OFF;
  if (!helper_mode) return; /* under `memsnap record`, only the first process is recorded */
  /* a new stream: threads, sites and the channel start afresh */
  rt_thread *me = ms_rt_self;
  threads = free_threads = NULL;
  thread_ids = 0;
  if (me) {
    me->id = thread_ids++;
    set_count(me, 0);
    me->flushed = 0;
    me->live = 1;
    me->next = NULL;
    memset(me->sites, 0, sizeof me->sites); /* site ids start afresh */
    threads = me;
  }
  last_thread = UINT32_MAX;
  if (site_table) memset(site_table, 0, site_capacity * sizeof *site_table);
  memset(site_cache, 0, sizeof site_cache);
  clear_site_tables();
  site_count = 0;
  static char child_path[PATH_MAX + 32];
  char *p = append_text(child_path, child_path + sizeof child_path, out_path);
  p = append_text(p, child_path + sizeof child_path, ".");
  append_number(p, child_path + sizeof child_path, (uint64_t)getpid());
  if (start_writer(child_path) == 0) ms_rt_state = STATE_ACTIVE;
}

/*------------------------------------------------------------*/
/* Initialization                                             */
/*------------------------------------------------------------*/

static void rt_init(void) {
  int expected = STATE_UNINIT;
  if (!__atomic_compare_exchange_n(&ms_rt_state, &expected, STATE_INITIALIZING, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    while (__atomic_load_n(&ms_rt_state, __ATOMIC_ACQUIRE) == STATE_INITIALIZING)
      pause_briefly();
    return;
  }
  int next = STATE_OFF;
  const char *channel = getenv("MEMSNAP_RT_CHANNEL");
  const char *output = getenv("MEMSNAP_OUT");
  const char *sample = getenv("MEMSNAP_SAMPLE");
  const char *objects = getenv("MEMSNAP_OBJECTS");
  objects_on = objects && *objects && strcmp(objects, "0") != 0;
  if ((channel && *channel) || (output && *output)) {
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = '\0';
    if ((sample && *sample && parse_sample(sample) != 0) ||
        pthread_key_create(&thread_key, thread_exit) != 0) {
      /* a malformed MEMSNAP_SAMPLE: record nothing rather than something unasked for */
    } else if (channel && *channel) {
      if (attach_channel(channel) == 0) next = STATE_ACTIVE;
    } else {
      append_text(out_path, out_path + sizeof out_path, output);
      if (start_writer(out_path) == 0) next = STATE_ACTIVE;
    }
    /* an instrumented program that this one starts is not recorded into the same file */
    unsetenv("MEMSNAP_RT_CHANNEL");
    unsetenv("MEMSNAP_OUT");
    unsetenv("MEMSNAP_OBJECTS");
    if (next == STATE_ACTIVE) {
      scan_objects();
      on_exit(on_exit_handler, NULL);
      install_signal_handlers();
      pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    }
  }
  if (next != STATE_ACTIVE) objects_on = 0;
  __atomic_store_n(&ms_rt_state, next, __ATOMIC_RELEASE);
}

/* glibc passes argc and argv to constructors: they name the program in the trace. */
__attribute__((constructor(101))) static void rt_constructor(int argc, char **argv) {
  saved_argc = argc;
  saved_argv = argv;
  if (__atomic_load_n(&ms_rt_state, __ATOMIC_ACQUIRE) == STATE_UNINIT) rt_init();
}

/*------------------------------------------------------------*/
/* Data objects: the allocation functions                     */
/*------------------------------------------------------------*/

/* The executable defines malloc & co. (weak, so that a static link keeps libc's and a
 * program's own definitions win); the dynamic linker binds every caller in the process to
 * them, libc's and other libraries' calls included. Each wrapper calls the next definition
 * (dlsym(RTLD_NEXT): libc's, or that of an allocator library the program links), and with
 * MEMSNAP_OBJECTS records the block: an ALLOC unit, site = the caller's return address, or
 * a FREE, appended to the thread's buffer between its accesses, so that the event's index
 * in the stream is exact. While dlsym resolves (it may calloc) allocations come from a
 * static arena; frees of its blocks are ignored. See DESIGN.md, "Data objects". */
typedef struct real_allocator {
  void *(*malloc)(size_t);
  void (*free)(void *);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void *(*memalign)(size_t, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
} real_allocator;

static real_allocator real;
static int real_state; /* 0: unresolved, 1: resolving, 2: resolved */
static _Alignas(64) unsigned char bootstrap[64 * 1024];
static size_t bootstrap_used;
/* This thread is inside a wrapper's recording (thread_new, pthread_setspecific may
 * allocate): inner allocations are not recorded. */
static __thread int in_wrapper __attribute__((tls_model("initial-exec")));

static void *bootstrap_alloc(size_t size, size_t alignment) {
  if (alignment < 16) alignment = 16;
  if (size > sizeof bootstrap || alignment > sizeof bootstrap) return NULL;
  /* a block of size + alignment taken at once: threads that allocate while dlsym
   * resolves get disjoint blocks */
  size_t start = __atomic_fetch_add(&bootstrap_used, size + alignment, __ATOMIC_RELAXED);
  size_t at = (start + alignment - 1) & ~(alignment - 1);
  if (start > sizeof bootstrap || at > sizeof bootstrap - size) return NULL;
  return bootstrap + at; /* zeroed: static storage, never reused */
}

static int in_bootstrap(const void *p) {
  return (const unsigned char *)p >= bootstrap &&
         (const unsigned char *)p < bootstrap + sizeof bootstrap;
}

static void resolve_real(void) {
  int expected = 0;
  if (!__atomic_compare_exchange_n(&real_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    if (expected == 1) return; /* dlsym allocating: the caller uses the arena */
    return;
  }
  real_allocator r;
  r.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  r.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  r.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
  r.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  r.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
  r.posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  r.aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
  r.valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
  r.pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
  real = r;
  __atomic_store_n(&real_state, 2, __ATOMIC_RELEASE);
}

/* 1 when the real functions are there; 0 while dlsym resolves them (use the arena). */
static inline int have_real(void) {
  if (LIKELY(__atomic_load_n(&real_state, __ATOMIC_ACQUIRE) == 2)) return 1;
  resolve_real();
  return __atomic_load_n(&real_state, __ATOMIC_ACQUIRE) == 2;
}

/* Appends an ALLOC (address, size, the call at return address `from`) or a FREE to this
 * thread's buffer: control units among its access words (../protocol.h), which the flush
 * copies into the channel as they are. Sampling: the words are no access; the ON phase's
 * count is settled before them and its limit set again after. */
static void record_object(uint32_t tag, uint64_t address, uint64_t size, uint64_t from) {
  if (ms_rt_state != STATE_ACTIVE || in_wrapper || lock_held) return;
  in_wrapper = 1;
  rt_thread *t = ms_rt_self;
  if (!t) t = ms_rt_self = thread_new();
  uint32_t site = 0;
  if (t && tag == TAG_ALLOC) {
    lock();
    int ok =
        ms_rt_state == STATE_ACTIVE && !channel_broken && (site_capacity != 0 || grow_sites() == 0);
    if (ok) site = site_of(from, 0, 0);
    unlock();
    if (!ok) t = NULL;
  }
  if (t) {
    uint32_t words = tag == TAG_ALLOC ? 5 : 3;
    int on = !ms_rt_off;
    if (sample_on && on) t->on_left -= count_of(t) - t->limit_base;
    if (count_of(t) + words > THREAD_RECORDS + RECORD_SLACK) flush_own(t);
    record *p = t->pos;
    p[0] = MS_RT_ESCAPE_CONTROL;
    p[1] = address;
    p[2] = pack_slot(site, tag, 0 /* MS_OBJECT_HEAP */, tag == TAG_ALLOC ? 1 : 0);
    if (tag == TAG_ALLOC) p[3] = size, p[4] = 0;
    __atomic_store_n(&t->pos, p + words, __ATOMIC_RELEASE);
    if (count_of(t) >= THREAD_RECORDS) flush_own(t);
    if (on) set_limit(t); /* an OFF phase keeps its end: every access takes the slow path */
  }
  in_wrapper = 0;
}

#define CALLER ((uint64_t)(uintptr_t)__builtin_return_address(0))

EXPORT __attribute__((weak)) void *malloc(size_t size) {
  if (UNLIKELY(!have_real())) return bootstrap_alloc(size, 16);
  void *p = real.malloc(size);
  if (UNLIKELY(objects_on) && p) record_object(TAG_ALLOC, (uintptr_t)p, size, CALLER);
  return p;
}

EXPORT __attribute__((weak)) void free(void *p) {
  if (!p || UNLIKELY(in_bootstrap(p))) return;
  if (UNLIKELY(!have_real())) return; /* not reached: only the arena allocates before */
  if (UNLIKELY(objects_on)) record_object(TAG_FREE, (uintptr_t)p, 0, 0);
  real.free(p);
}

EXPORT __attribute__((weak)) void *calloc(size_t count, size_t size) {
  if (UNLIKELY(!have_real())) {
    size_t bytes;
    return __builtin_mul_overflow(count, size, &bytes) ? NULL : bootstrap_alloc(bytes, 16);
  }
  void *p = real.calloc(count, size);
  if (UNLIKELY(objects_on) && p) record_object(TAG_ALLOC, (uintptr_t)p, count * size, CALLER);
  return p;
}

EXPORT __attribute__((weak)) void *realloc(void *old, size_t size) {
  if (UNLIKELY(!have_real() || in_bootstrap(old))) {
    void *p = have_real() ? real.malloc(size) : bootstrap_alloc(size, 16);
    if (p && old) { /* an arena block: its size is unknown, but never more than the rest */
      size_t room = (size_t)(bootstrap + sizeof bootstrap - (unsigned char *)old);
      memcpy(p, old, size < room ? size : room);
    }
    if (p && objects_on && have_real()) record_object(TAG_ALLOC, (uintptr_t)p, size, CALLER);
    return p;
  }
  void *p = real.realloc(old, size);
  if (UNLIKELY(objects_on) && (p || size == 0)) {
    if (old) record_object(TAG_FREE, (uintptr_t)old, 0, 0);
    if (p) record_object(TAG_ALLOC, (uintptr_t)p, size, CALLER);
  }
  return p;
}

EXPORT __attribute__((weak)) void *reallocarray(void *old, size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  if (UNLIKELY(!have_real() || in_bootstrap(old))) return realloc(old, bytes);
  void *p = real.realloc(old, bytes);
  if (UNLIKELY(objects_on) && (p || bytes == 0)) {
    if (old) record_object(TAG_FREE, (uintptr_t)old, 0, 0);
    if (p) record_object(TAG_ALLOC, (uintptr_t)p, bytes, CALLER);
  }
  return p;
}

EXPORT __attribute__((weak)) void *memalign(size_t alignment, size_t size) {
  if (UNLIKELY(!have_real())) return bootstrap_alloc(size, alignment);
  void *p = real.memalign(alignment, size);
  if (UNLIKELY(objects_on) && p) record_object(TAG_ALLOC, (uintptr_t)p, size, CALLER);
  return p;
}

EXPORT __attribute__((weak)) void *aligned_alloc(size_t alignment, size_t size) {
  if (UNLIKELY(!have_real())) return bootstrap_alloc(size, alignment);
  void *p = real.aligned_alloc(alignment, size);
  if (UNLIKELY(objects_on) && p) record_object(TAG_ALLOC, (uintptr_t)p, size, CALLER);
  return p;
}

EXPORT __attribute__((weak)) int posix_memalign(void **out, size_t alignment, size_t size) {
  if (UNLIKELY(!have_real())) {
    void *p = bootstrap_alloc(size, alignment);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
  }
  int rc = real.posix_memalign(out, alignment, size);
  if (UNLIKELY(objects_on) && rc == 0 && *out)
    record_object(TAG_ALLOC, (uintptr_t)*out, size, CALLER);
  return rc;
}

EXPORT __attribute__((weak)) void *valloc(size_t size) {
  if (UNLIKELY(!have_real())) return bootstrap_alloc(size, 4096);
  void *p = real.valloc(size);
  if (UNLIKELY(objects_on) && p) record_object(TAG_ALLOC, (uintptr_t)p, size, CALLER);
  return p;
}

EXPORT __attribute__((weak)) void *pvalloc(size_t size) {
  if (UNLIKELY(!have_real())) return bootstrap_alloc((size + 4095) & ~(size_t)4095, 4096);
  void *p = real.pvalloc(size);
  size_t bytes = (size + 4095) & ~(size_t)4095;
  if (UNLIKELY(objects_on) && p) record_object(TAG_ALLOC, (uintptr_t)p, bytes, CALLER);
  return p;
}

/* memsnap: a Valgrind tool that records every data load and store of a program.
 *
 * Model. Every guest instruction that touches memory becomes a *site*, numbered densely
 * in the order Valgrind first translates it. For each data reference the instrumented
 * code calls a tiny helper that appends {address, site|kind|size} to a 1 MiB buffer; the
 * buffer goes to the output channel when full, at exit and before an execve, never per
 * access. The
 * tool does no encoding: the memsnap process (lib/capture/launcher/capture_decode.c) does.
 *
 * What counts as an access mirrors Lackey --trace-mem=yes and Cachegrind exactly, so that
 * their counts are an oracle for ours:
 *   - Iex_Load, Ist_Store, Ist_LoadG, Ist_StoreG (guarded: recorded only when the guard
 *     holds), Ist_LLSC (LL is a load, SC a store);
 *   - Ist_CAS is a load then a store of the location (twice the size for a double CAS);
 *   - Ist_Dirty with mFx: its mSize, clamped to 16 bytes as Cachegrind does (FXSAVE and
 *     XSAVE declare regions of 512 bytes and more; Lackey prints the unclamped size, so
 *     only those rare sizes differ from Lackey's, never the counts);
 *   - a store that follows a load of the same address expression and size within the
 *     same instruction, with nothing flushed in between, turns the load into one
 *     *modify* (Lackey's and Cachegrind's rule: `add [rax], 1` is one access).
 * Sizes are the true access size (32 for an AVX load), clamped to 255.
 * Threads: Valgrind runs one thread at a time, so instead of tagging each access the tool
 * writes a THREAD record whenever a different thread starts running client code. Thread
 * numbers are dense, in order of creation (the main thread 0), not of first run: the
 * scheduler decides which new thread runs first, and the numbers of the workers of a
 * program that creates them in a loop must follow that loop for memsnap merge to find
 * them affine (issue: threads4's third and fourth threads swapped from run to run). A
 * ThreadId reused by a new thread gets a new number.
 *
 * Output channels. Fast mode (what memsnap uses): --memsnap-fd=N --memsnap-shm=M
 * --memsnap-credit=C --memsnap-slots=S. M is a shared memory file of S slots of 1 MiB
 * that the tool maps; it fills one slot after the other with units and, for each filled
 * slot, writes a CHUNK unit to the pipe N; the reader parses the slot in place and returns
 * one byte on the socket C per slot it is done with. The tool never has more than S slots
 * outstanding (it blocks on C). Nothing but 16-byte notices crosses the pipe: copying
 * every record through a pipe cost more system time than Valgrind's whole run (1.06 s of
 * sys for 54 M accesses, measured). Plain mode: --memsnap-fd=N or --memsnap-out=PATH (a
 * file or FIFO) receives the units themselves (handy for `--memsnap-out=/dev/null`).
 * Descriptors move into Valgrind's reserved range, so the client can neither see nor
 * close them. A forked child of the client stops recording (its records would mix with
 * the parent's). An execve is followed when Valgrind runs with --trace-children=yes: the
 * next image's tool continues the channel (follow_exec).
 *
 * Protocol (little-endian; the stream is a sequence of 16-byte units):
 *
 *   unit = { u64 a; u64 b }   b bits 0-7: size, 8-15: tag, 16-31: extra units, 32-63: site
 *
 *   tag 0, 1, 2  access: load, store, modify of `size` bytes at address a by site b>>32
 *   tag 0x10     HELLO: a = MS_VG_MAGIC, site field = protocol version. First unit on
 *                the pipe, in both modes.
 *   tag 0x11     THREAD: the following accesses belong to thread a (0, 1, 2, ...)
 *   tag 0x12     SITE: defines site b>>32 at pc a, before any access names it. Followed by
 *                `extra units` units: u64 text load bias of its object, u32 line, u32 0,
 *                then three NUL-terminated strings (object path, function, source file,
 *                empty if unknown), zero-padded to a whole unit. Names come from
 *                Valgrind's own debug info reader; the reader prefers libdw's. A SITE
 *                record never straddles two slots.
 *   tag 0x13     EXIT: a = the exit code Valgrind gives the tool's fini (Valgrind 3.19
 *                passes 0; the reader takes the status from waitpid). Last unit.
 *   tag 0x14     CHUNK (fast mode, on the pipe only): slot b>>32 holds `a` bytes of units.
 *   tag 0x16     EXEC: the client calls execve; sent as the last unit of a slot. If it is
 *                the last unit of the stream (no EXIT), the program replaced its image,
 *                which Valgrind did not follow. If a HELLO follows it on the pipe, it did
 *                (--trace-children=yes): the new image's tool goes on with the same
 *                channel, numbering its sites and threads from 0 again.
 * *   tag 0x17     FORK: the client started process `a` (fork, vfork, clone without
 *                CLONE_THREAD), whose accesses are not recorded.
 *
 * A stream that ends without EXIT was cut short (the process was killed).
 */
#include "pub_tool_aspacemgr.h"
#include "pub_tool_basics.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_stacktrace.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_vkiscnums.h"
#include "pub_tool_xarray.h"

/* Not in the pub_tool headers, but exported by libcoregrind: duplicates a descriptor into
 * Valgrind's reserved range (above the client's limit), closes the original, sets
 * close-on-exec. */
extern Int VG_(safe_fd)(Int oldfd);

/* Also libcoregrind's (pub_core_libcfile.h, pub_core_clientstate.h, pub_core_options.h),
 * for following execve (see ms_pre_syscall): descriptor flags, the options the next
 * Valgrind is started with, and whether it is started at all. */
extern Int VG_(fcntl)(Int fd, Int cmd, Addr arg);
extern XArray *VG_(args_for_valgrind);
extern Bool VG_(clo_trace_children);

#include "../protocol.h"

/* Not in the pub_tool headers either (pub_core_aspacemgr.h): maps a file shared, at an
 * address of Valgrind's choosing, in Valgrind's part of the address space. */
extern SysRes VG_(am_shared_mmap_file_float_valgrind)(SizeT length, UInt prot, Int fd,
                                                      Off64T offset);

#define DIRTY_SIZE_CLAMP 16 /* Cachegrind's MIN_LINE_SIZE */
#define MAX_STRING 4095

typedef struct {
  ULong a;
  ULong b;
} Unit;

static inline ULong pack(UInt site, UInt tag, UInt size, UInt extra_units) {
  return ((ULong)site << 32) | ((ULong)extra_units << 16) | ((ULong)tag << 8) | size;
}

/*------------------------------------------------------------*/
/*--- Options                                              ---*/
/*------------------------------------------------------------*/

static Long clo_fd = -1;
static Long clo_shm = -1;
static Long clo_credit = -1;
static Long clo_slots = 0;
static const HChar *clo_out = NULL;
static Bool clo_objects = False; /* anonymous mappings too (the preload library wraps malloc) */

static Bool ms_process_cmd_line_option(const HChar *arg) {
  if VG_INT_CLO (arg, "--memsnap-fd", clo_fd) {
  } else if VG_INT_CLO (arg, "--memsnap-shm", clo_shm) {
  } else if VG_INT_CLO (arg, "--memsnap-credit", clo_credit) {
  } else if VG_BINT_CLO (arg, "--memsnap-slots", clo_slots, 2, 1024) {
  } else if VG_STR_CLO (arg, "--memsnap-out", clo_out) {
  } else if VG_BOOL_CLO (arg, "--memsnap-objects", clo_objects) {
  } else
    return False;
  return True;
}

static void ms_print_usage(void) {
  VG_(printf)
  ("    --memsnap-fd=N           write records (or chunk notices) to descriptor N\n"
   "    --memsnap-out=PATH       write records to PATH (file or FIFO)\n"
   "    --memsnap-shm=M --memsnap-credit=C --memsnap-slots=S\n"
   "                             fast mode: records in S 1 MiB slots of shared\n"
   "                             memory file M, credits back on socket C\n"
   "    --memsnap-objects=yes    data objects: anonymous mappings (run as memsnapobj,\n"
   "                             whose preload library wraps the allocation functions)\n");
}

static void ms_print_debug_usage(void) { VG_(printf)("    (none)\n"); }

/*------------------------------------------------------------*/
/*--- The record buffer                                    ---*/
/*------------------------------------------------------------*/

/* 1 MiB = 65536 units: one write per 64 Ki accesses keeps the syscall cost invisible. */
#define BUFFER_UNITS MS_VG_SLOT_UNITS

static Int out_fd = -1;    /* the pipe or file; -1 once the reader is gone */
static Int credit_fd = -1; /* fast mode: slots given back by the reader */
static Int shm_fd = -1;    /* fast mode: the slots' file, kept for a followed execve */
static Unit *slots = NULL; /* fast mode: slot_count * BUFFER_UNITS units, shared */
static UInt slot_count = 0, current_slot = 0, slots_in_flight = 0;
static Unit *buffer, *buffer_pos, *buffer_end;

static void write_all(const void *data, SizeT bytes) {
  const UChar *p = data;
  while (bytes > 0 && out_fd >= 0) {
    Int chunk = bytes > (1u << 30) ? (1 << 30) : (Int)bytes;
    Int n = VG_(write)(out_fd, p, chunk);
    if (n <= 0) {
      /* the reader went away: keep running the client, stop recording */
      VG_(close)(out_fd);
      out_fd = -1;
      break;
    }
    p += n;
    bytes -= (SizeT)n;
  }
}

static void stop_recording(void) {
  if (out_fd >= 0) VG_(close)(out_fd);
  out_fd = -1;
  slots = NULL; /* the current buffer stays as scratch space */
}

/* Fast mode: reads credits until at most `limit` slots are in flight; False if the reader
 * is gone (recording stopped). */
static Bool wait_credits(UInt limit) {
  while (slots_in_flight > limit) {
    UChar credits[64];
    Int n = VG_(read)(credit_fd, credits, sizeof credits);
    if (n <= 0) {
      stop_recording();
      return False;
    }
    slots_in_flight -= (UInt)n < slots_in_flight ? (UInt)n : slots_in_flight;
  }
  return True;
}

/* Fast mode: hands the filled slot to the reader and moves to the next free one. */
static void submit_slot(void) {
  Unit notice = {(ULong)(buffer_pos - buffer) * sizeof(Unit),
                 ((ULong)current_slot << 32) | ((ULong)TAG_CHUNK << 8)};
  write_all(&notice, sizeof notice);
  if (out_fd < 0) {
    stop_recording();
    return;
  }
  slots_in_flight++;
  if (!wait_credits(slot_count - 1)) return;
  current_slot = (current_slot + 1) % slot_count;
  buffer = slots + (SizeT)current_slot * BUFFER_UNITS;
  buffer_end = buffer + BUFFER_UNITS;
}

static void flush_buffer(void) {
  if (buffer_pos > buffer) {
    if (slots)
      submit_slot();
    else
      write_all(buffer, (SizeT)(buffer_pos - buffer) * sizeof(Unit));
  }
  buffer_pos = buffer;
}

/* Invariant: buffer_pos < buffer_end between calls, so a helper may always write one unit. */
static void put_unit(ULong a, ULong b) {
  buffer_pos->a = a;
  buffer_pos->b = b;
  if (++buffer_pos == buffer_end) flush_buffer();
}

/* The hot helpers: called once per access (or per pair), no branches but the full test. */
static VG_REGPARM(2) void log_access(Addr address, UWord meta) {
  Unit *u = buffer_pos;
  u->a = address;
  u->b = meta;
  if (++buffer_pos == buffer_end) flush_buffer();
}

static VG_REGPARM(3) void log_access_pair(Addr address1, UWord meta1, Addr address2, UWord meta2) {
  Unit *u = buffer_pos;
  if (buffer_end - u < 2) {
    flush_buffer();
    u = buffer_pos;
  }
  u[0].a = address1;
  u[0].b = meta1;
  u[1].a = address2;
  u[1].b = meta2;
  buffer_pos = u + 2;
  if (buffer_pos == buffer_end) flush_buffer();
}

/*------------------------------------------------------------*/
/*--- Threads                                              ---*/
/*------------------------------------------------------------*/

#define THREAD_UNSEEN 0xFFFFFFFFu

static UInt *thread_number; /* by ThreadId; VG_N_THREADS is a run-time option */
static UInt threads_seen = 0;
static ThreadId running_tid = VG_INVALID_THREADID;

static void ms_start_client_code(ThreadId tid, ULong blocks_dispatched) {
  (void)blocks_dispatched;
  if (tid == running_tid) return;
  running_tid = tid;
  if (thread_number[tid] == THREAD_UNSEEN) thread_number[tid] = threads_seen++;
  put_unit(thread_number[tid], pack(0, TAG_THREAD, 0, 0));
}

static void ms_thread_created(ThreadId parent, ThreadId child) {
  (void)parent;
  if (parent != VG_INVALID_THREADID && thread_number[parent] == THREAD_UNSEEN)
    thread_number[parent] = threads_seen++;
  thread_number[child] = threads_seen++;
  if (child == running_tid) running_tid = VG_INVALID_THREADID;
}

static void ms_forked_child(ThreadId tid) {
  (void)tid;
  /* the shared slots are the parent's: record nothing more, into a private scratch buffer;
   * a program this child execs runs without Valgrind (nothing would record it, and its
   * tool would take the original descriptor numbers from the command line) */
  VG_(clo_trace_children) = False;
  if (credit_fd >= 0) VG_(close)(credit_fd);
  credit_fd = -1;
  if (shm_fd >= 0) VG_(close)(shm_fd);
  shm_fd = -1;
  stop_recording();
  buffer = VG_(malloc)("memsnap.child", BUFFER_UNITS * sizeof(Unit));
  buffer_pos = buffer;
  buffer_end = buffer + BUFFER_UNITS;
}

/*------------------------------------------------------------*/
/*--- Sites                                                ---*/
/*------------------------------------------------------------*/

typedef struct SiteNode {
  struct SiteNode *next;
  UWord pc; /* hash key */
  UInt id;
} SiteNode;

static VgHashTable *site_table;
static UInt site_count = 0;

static SizeT string_length(const HChar *s) {
  if (!s) return 0;
  SizeT n = VG_(strlen)(s);
  return n > MAX_STRING ? MAX_STRING : n;
}

static void put_bytes(UChar *dst, SizeT *offset, const HChar *s, SizeT n) {
  if (n) VG_(memcpy)(dst + *offset, s, n);
  dst[*offset + n] = 0;
  *offset += n + 1;
}

/* The object holding pc and its load bias. VG_(find_DebugInfo) only knows text sections,
 * so for code elsewhere in a mapped file (PLT stubs) the mapping names the file and any
 * DebugInfo of that file gives its bias. */
static const HChar *object_of(DiEpoch epoch, Addr pc, ULong *bias) {
  *bias = 0;
  DebugInfo *di = VG_(find_DebugInfo)(epoch, pc);
  if (di) {
    *bias = (ULong)VG_(DebugInfo_get_text_bias)(di);
    return VG_(DebugInfo_get_filename)(di);
  }
  NSegment const *segment = VG_(am_find_nsegment)(pc);
  const HChar *file = segment ? VG_(am_get_filename)(segment) : NULL;
  if (!file) return NULL;
  for (const DebugInfo *d = VG_(next_DebugInfo)(NULL); d; d = VG_(next_DebugInfo)(d)) {
    const HChar *name = VG_(DebugInfo_get_filename)(d);
    if (name && VG_(strcmp)(name, file) == 0) {
      *bias = (ULong)VG_(DebugInfo_get_text_bias)(d);
      return name;
    }
  }
  return NULL;
}

static void emit_site(UInt id, Addr pc) {
  DiEpoch epoch = VG_(current_DiEpoch)();
  ULong bias;
  const HChar *object = object_of(epoch, pc, &bias);
  /* Valgrind's name buffers are only valid until the next query: copy each at once. */
  static UChar payload[16 + 3 * (MAX_STRING + 1) + 16];
  SizeT offset = 16, n = string_length(object);
  put_bytes(payload, &offset, object, n);
  const HChar *function = NULL;
  if (!VG_(get_fnname)(epoch, pc, &function)) function = NULL;
  put_bytes(payload, &offset, function, string_length(function));
  const HChar *file = NULL, *dir = NULL;
  UInt line = 0;
  if (!VG_(get_filename_linenum)(epoch, pc, &file, &dir, &line)) file = NULL, line = 0;
  SizeT dir_n = string_length(dir), file_n = string_length(file);
  if (file && dir_n && file[0] != '/' && dir_n + 1 + file_n <= MAX_STRING) {
    VG_(memcpy)(payload + offset, dir, dir_n);
    payload[offset + dir_n] = '/';
    offset += dir_n + 1;
  }
  put_bytes(payload, &offset, file, file_n);
  while (offset % sizeof(Unit))
    payload[offset++] = 0;
  VG_(memcpy)(payload, &bias, 8);
  VG_(memset)(payload + 8, 0, 8);
  VG_(memcpy)(payload + 8, &line, 4);

  UInt extra = (UInt)(offset / sizeof(Unit));
  if ((SizeT)(buffer_end - buffer_pos) <= extra + 1) flush_buffer(); /* keep it in one slot */
  put_unit(pc, pack(id, TAG_SITE, 0, extra));
  const Unit *units = (const Unit *)payload;
  for (UInt i = 0; i < extra; i++)
    put_unit(units[i].a, units[i].b);
}

static UInt site_of(Addr pc) {
  SiteNode *node = VG_(HT_lookup)(site_table, pc);
  if (node) return node->id;
  node = VG_(malloc)("memsnap.site", sizeof *node);
  node->pc = pc;
  node->id = site_count++;
  VG_(HT_add_node)(site_table, node);
  emit_site(node->id, pc);
  return node->id;
}

/*------------------------------------------------------------*/
/*--- Data objects                                         ---*/
/*------------------------------------------------------------*/

/* The preload library's text (vgpreload_memsnap, ms_preload.c), whose instructions are
 * not instrumented: its wrappers add no accesses to the trace. Found once its debug info
 * is loaded; [0, 0) until then. */
static Addr preload_low = 0, preload_high = 0;

static void find_preload(void) {
  if (preload_high) return;
  for (const DebugInfo *d = VG_(next_DebugInfo)(NULL); d; d = VG_(next_DebugInfo)(d)) {
    const HChar *name = VG_(DebugInfo_get_filename)(d);
    if (name && VG_(strstr)(name, "vgpreload_memsnap")) {
      preload_low = VG_(DebugInfo_get_text_avma)(d);
      preload_high = preload_low + VG_(DebugInfo_get_text_size)(d);
      return;
    }
  }
}

/* Whether pc is in libc, libstdc++, libgcc_s, the loader or a Valgrind preload library:
 * code that allocates on behalf of its caller. */
static Bool in_system_object(DiEpoch epoch, Addr pc) {
  ULong bias;
  const HChar *object = object_of(epoch, pc, &bias);
  if (!object) return False;
  const HChar *base = VG_(strrchr)(object, '/');
  base = base ? base + 1 : object;
  return VG_(strncmp)(base, "libc.so", 7) == 0 || VG_(strncmp)(base, "libstdc++", 9) == 0 ||
         VG_(strncmp)(base, "libgcc_s", 8) == 0 || VG_(strncmp)(base, "ld-linux", 8) == 0 ||
         VG_(strncmp)(base, "vgpreload_", 10) == 0;
}

/* The site of the call that allocates: the first caller frame, from frame `first` on,
 * outside the system objects (operator new's caller, not operator new); the innermost one
 * if all are system code. VG_(get_StackTrace) gives a caller frame as its return address
 * minus one, which falls in the call instruction. */
#define CALLER_FRAMES 8
#define CALLER_CACHE 1024 /* the site of an allocating call, by its callee's return address */
static struct {
  Addr from;
  UInt site;
} caller_cache[CALLER_CACHE];

/* `from`: the return address of the frame above `first` when the caller knows it (the
 * preload's wrappers pass theirs), else 0. */
static UInt call_site(ThreadId tid, UInt first, Addr from) {
  Addr ips[CALLER_FRAMES];
  /* most allocations come from few calls: the return address names the call when the
   * program made it, and the walk (an unwinding of the stack, a debug info lookup per frame)
   * is done once per call (bench/run-objects.sh measures what capturing allocations costs) */
  UInt slot = (UInt)((from >> 1) * 2654435761u) % CALLER_CACHE;
  if (from && caller_cache[slot].from == from) return caller_cache[slot].site;
  UInt n = VG_(get_StackTrace)(tid, ips, CALLER_FRAMES, NULL, NULL, 0);
  if (n <= first) return 0xFFFFFFFFu;
  DiEpoch epoch = VG_(current_DiEpoch)();
  UInt pick = first;
  for (UInt i = first; i < n; i++)
    if (!in_system_object(epoch, ips[i])) {
      pick = i;
      break;
    }
  UInt site = site_of(ips[pick]);
  if (from && pick == first && ips[first] + 1 == from) { /* a call from the program itself */
    caller_cache[slot].from = from;
    caller_cache[slot].site = site;
  }
  return site;
}

/* ALLOC (with its size in a payload unit) or FREE of the object at `address`. */
static void emit_object(UInt tag, Addr address, ULong size, UInt kind, UInt site) {
  if (out_fd < 0) return;
  if (tag == TAG_ALLOC) {
    if (buffer_end - buffer_pos <= 2) flush_buffer(); /* keep it in one slot */
    put_unit(address, pack(site, TAG_ALLOC, kind, 1));
    put_unit(size, 0);
  } else {
    put_unit(address, pack(0, TAG_FREE, kind, 0));
  }
}

static Bool ms_handle_client_request(ThreadId tid, UWord *args, UWord *ret) {
  if ((args[0] & 0xffff0000u) != (MS_REQ_ALLOC & 0xffff0000u)) return False;
  *ret = 0;
  if (args[0] == MS_REQ_ALLOC)
    emit_object(TAG_ALLOC, args[1], args[2], 0 /* MS_OBJECT_HEAP */, call_site(tid, 1, args[3]));
  else if (args[0] == MS_REQ_FREE)
    emit_object(TAG_FREE, args[1], 0, 0, 0);
  else
    return False;
  return True;
}

/*------------------------------------------------------------*/
/*--- Instrumentation                                      ---*/
/*------------------------------------------------------------*/

/* Accesses wait in a short queue so that a load and a following store of the same
 * address merge into a modify, and two unguarded accesses share one helper call. Four
 * is Lackey's number: longer queues only lengthen temporaries' live ranges. */
#define MAX_EVENTS 4

typedef IRExpr IRAtom; /* an IRExpr that isIRAtom: a temporary or a constant */

typedef struct {
  UInt tag;
  Int size;
  IRAtom *address;
  IRAtom *guard; /* Ity_I1, or NULL for always */
  UInt site;
  UInt instruction; /* sequence number of the IMark within the superblock */
} Event;

static Event events[MAX_EVENTS];
static Int events_used = 0;

static ULong event_meta(const Event *event) {
  UInt size = event->size > 255 ? 255 : (UInt)event->size;
  return pack(event->site, event->tag, size, 0);
}

static void flush_events(IRSB *sb) {
  Int i = 0;
  while (i < events_used) {
    Event *first = &events[i];
    IRDirty *di;
    if (!first->guard && i + 1 < events_used && !events[i + 1].guard) {
      Event *second = &events[i + 1];
      di = unsafeIRDirty_0_N(3, "log_access_pair", VG_(fnptr_to_fnentry)(&log_access_pair),
                             mkIRExprVec_4(first->address, mkIRExpr_HWord(event_meta(first)),
                                           second->address, mkIRExpr_HWord(event_meta(second))));
      i += 2;
    } else {
      di = unsafeIRDirty_0_N(2, "log_access", VG_(fnptr_to_fnentry)(&log_access),
                             mkIRExprVec_2(first->address, mkIRExpr_HWord(event_meta(first))));
      if (first->guard) di->guard = first->guard;
      i += 1;
    }
    addStmtToIRSB(sb, IRStmt_Dirty(di));
  }
  events_used = 0;
}

static void add_event(IRSB *sb, UInt tag, IRAtom *address, Int size, IRAtom *guard, UInt site,
                      UInt instruction) {
  tl_assert(isIRAtom(address));
  tl_assert(size >= 1);
  if (tag == TAG_STORE && !guard && events_used > 0) {
    Event *last = &events[events_used - 1];
    if (last->tag == TAG_LOAD && !last->guard && last->size == size &&
        last->instruction == instruction && eqIRAtom(last->address, address)) {
      last->tag = TAG_MODIFY;
      return;
    }
  }
  if (events_used == MAX_EVENTS) flush_events(sb);
  Event *event = &events[events_used++];
  event->tag = tag;
  event->size = size;
  event->address = address;
  event->guard = guard;
  event->site = site;
  event->instruction = instruction;
}

static IRSB *ms_instrument(VgCallbackClosure *closure, IRSB *sb_in, const VexGuestLayout *layout,
                           const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                           IRType guest_word, IRType host_word) {
  (void)closure, (void)layout, (void)vge, (void)archinfo_host;
  if (guest_word != host_word) VG_(tool_panic)("host/guest word size mismatch");
  IRTypeEnv *tyenv = sb_in->tyenv;
  IRSB *sb = deepCopyIRSBExceptStmts(sb_in);
  Int i = 0;
  while (i < sb_in->stmts_used && sb_in->stmts[i]->tag != Ist_IMark)
    addStmtToIRSB(sb, sb_in->stmts[i++]);

  events_used = 0;
  find_preload();
  Addr pc = 0;
  UInt instruction = 0;
  Bool have_site = False, skip = False;
  UInt site = 0;
#define SITE() (have_site ? site : (have_site = True, site = site_of(pc)))

  for (; i < sb_in->stmts_used; i++) {
    IRStmt *st = sb_in->stmts[i];
    if (!st || st->tag == Ist_NoOp) continue;
    if (skip && st->tag != Ist_IMark) { /* the preload library's own accesses */
      addStmtToIRSB(sb, st);
      continue;
    }
    switch (st->tag) {
    case Ist_IMark:
      pc = (Addr)st->Ist.IMark.addr;
      instruction++;
      have_site = False;
      skip = pc >= preload_low && pc < preload_high;
      break;
    case Ist_WrTmp: {
      IRExpr *data = st->Ist.WrTmp.data;
      if (data->tag == Iex_Load)
        add_event(sb, TAG_LOAD, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty), NULL, SITE(),
                  instruction);
      break;
    }
    case Ist_Store: {
      IRType type = typeOfIRExpr(tyenv, st->Ist.Store.data);
      add_event(sb, TAG_STORE, st->Ist.Store.addr, sizeofIRType(type), NULL, SITE(), instruction);
      break;
    }
    case Ist_StoreG: {
      IRStoreG *sg = st->Ist.StoreG.details;
      IRType type = typeOfIRExpr(tyenv, sg->data);
      add_event(sb, TAG_STORE, sg->addr, sizeofIRType(type), sg->guard, SITE(), instruction);
      break;
    }
    case Ist_LoadG: {
      IRLoadG *lg = st->Ist.LoadG.details;
      IRType type = Ity_INVALID, wide = Ity_INVALID;
      typeOfIRLoadGOp(lg->cvt, &wide, &type);
      tl_assert(type != Ity_INVALID);
      add_event(sb, TAG_LOAD, lg->addr, sizeofIRType(type), lg->guard, SITE(), instruction);
      break;
    }
    case Ist_Dirty: {
      IRDirty *d = st->Ist.Dirty.details;
      if (d->mFx != Ifx_None) {
        tl_assert(d->mAddr != NULL && d->mSize != 0);
        Int size = d->mSize > DIRTY_SIZE_CLAMP ? DIRTY_SIZE_CLAMP : d->mSize;
        if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
          add_event(sb, TAG_LOAD, d->mAddr, size, NULL, SITE(), instruction);
        if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
          add_event(sb, TAG_STORE, d->mAddr, size, NULL, SITE(), instruction);
      }
      break;
    }
    case Ist_CAS: {
      IRCAS *cas = st->Ist.CAS.details;
      Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
      if (cas->dataHi != NULL) size *= 2;
      add_event(sb, TAG_LOAD, cas->addr, size, NULL, SITE(), instruction);
      add_event(sb, TAG_STORE, cas->addr, size, NULL, SITE(), instruction);
      break;
    }
    case Ist_LLSC:
      if (st->Ist.LLSC.storedata == NULL) {
        IRType type = typeOfIRTemp(tyenv, st->Ist.LLSC.result);
        add_event(sb, TAG_LOAD, st->Ist.LLSC.addr, sizeofIRType(type), NULL, SITE(), instruction);
        flush_events(sb); /* helps the SC succeed */
      } else {
        IRType type = typeOfIRExpr(tyenv, st->Ist.LLSC.storedata);
        add_event(sb, TAG_STORE, st->Ist.LLSC.addr, sizeofIRType(type), NULL, SITE(), instruction);
      }
      break;
    case Ist_Exit: flush_events(sb); break;
    default: break;
    }
    addStmtToIRSB(sb, st);
  }
#undef SITE
  flush_events(sb);
  return sb;
}

/*------------------------------------------------------------*/
/*--- Start and finish                                     ---*/
/*------------------------------------------------------------*/

static Int reserved_fd(const HChar *option, Long fd) {
  struct vg_stat st;
  if (fd < 0 || VG_(fstat)((Int)fd, &st) != 0)
    VG_(fmsg_bad_option)(option, "descriptor %lld is not open\n", fd);
  return VG_(safe_fd)((Int)fd);
}

static void ms_post_clo_init(void) {
  if (clo_out && *clo_out) { /* empty: cleared by a followed execve (follow_exec) */
    SysRes res = VG_(open)(clo_out, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC, 0644);
    if (sr_isError(res))
      VG_(fmsg_bad_option)("--memsnap-out", "cannot open '%s' for writing\n", clo_out);
    clo_fd = (Long)sr_Res(res);
  }
  if (clo_fd < 0)
    VG_(fmsg_bad_option)("--memsnap-fd", "give --memsnap-fd=N or --memsnap-out=PATH\n");
  out_fd = reserved_fd("--memsnap-fd", clo_fd);

  if (clo_shm >= 0 || clo_credit >= 0 || clo_slots > 0) {
    if (clo_shm < 0 || clo_credit < 0 || clo_slots < 2) VG_(fmsg_bad_option)
    ("--memsnap-shm", "fast mode needs --memsnap-shm, --memsnap-credit and --memsnap-slots\n");
    slot_count = (UInt)clo_slots;
    SizeT bytes = (SizeT)slot_count * BUFFER_UNITS * sizeof(Unit);
    SysRes res = VG_(am_shared_mmap_file_float_valgrind)(bytes, VKI_PROT_READ | VKI_PROT_WRITE,
                                                         (Int)clo_shm, 0);
    if (sr_isError(res))
      VG_(fmsg_bad_option)("--memsnap-shm", "cannot map descriptor %lld\n", clo_shm);
    shm_fd = reserved_fd("--memsnap-shm", clo_shm);
    slots = (Unit *)sr_Res(res);
    credit_fd = reserved_fd("--memsnap-credit", clo_credit);
    buffer = slots;
  } else {
    buffer = VG_(malloc)("memsnap.buffer", BUFFER_UNITS * sizeof(Unit));
  }
  buffer_pos = buffer;
  buffer_end = buffer + BUFFER_UNITS;

  thread_number = VG_(malloc)("memsnap.threads", VG_N_THREADS * sizeof *thread_number);
  for (UInt t = 0; t < VG_N_THREADS; t++)
    thread_number[t] = THREAD_UNSEEN;
  site_table = VG_(HT_construct)("memsnap.sites");
  /* straight to the pipe: the reader waits for HELLO to know the tool started */
  Unit hello = {MS_VG_MAGIC, pack(MS_VG_VERSION, TAG_HELLO, 0, 0)};
  write_all(&hello, sizeof hello);
}

static void ms_fini(Int exit_code) {
  put_unit((ULong)(Long)exit_code, pack(0, TAG_EXIT, 0, 0));
  flush_buffer();
  if (out_fd >= 0) VG_(close)(out_fd);
  out_fd = -1;
  if (credit_fd >= 0) VG_(close)(credit_fd);
  credit_fd = -1;
  if (shm_fd >= 0) VG_(close)(shm_fd);
  shm_fd = -1;
}

static Bool exec_not_followed = False; /* the execve under way runs natively (can_follow) */

static void set_close_on_exec(Bool on) {
  Int fds[3] = {out_fd, credit_fd, shm_fd};
  for (Int i = 0; i < 3; i++)
    if (fds[i] >= 0) VG_(fcntl)(fds[i], VKI_F_SETFD, on ? VKI_FD_CLOEXEC : 0);
}

static void add_exec_option(const HChar *name, Int value) {
  HChar text[64];
  if (value >= 0)
    VG_(snprintf)(text, sizeof text, "%s=%d", name, value);
  else
    VG_(snprintf)(text, sizeof text, "%s=", name);
  HChar *copy = VG_(strdup)("memsnap.exec", text);
  VG_(addToXA)(VG_(args_for_valgrind), &copy);
}

/* Following an execve (--trace-children=yes, memsnap's default): Valgrind starts itself
 * again on the new program with the options it was given, and that tool must continue this
 * channel. Its descriptors have moved (reserved range), so their numbers are appended to
 * the options (a later option wins); they stay open across the exec, and every slot is
 * back from the reader first, so that the next tool starts with all slots free. Returns
 * whether the exec can be followed; when it cannot (recording stopped), Valgrind must not
 * trace it, or the next tool would take the original numbers, now the client's. */
static Bool follow_exec(void) {
  if (slots && out_fd >= 0) wait_credits(0);
  if (out_fd < 0) return False;
  static Bool options_added = False; /* the same descriptors for every attempt (execvp) */
  if (!options_added) {
    add_exec_option("--memsnap-fd", out_fd);
    add_exec_option("--memsnap-out", -1);
    if (slots) {
      add_exec_option("--memsnap-credit", credit_fd);
      add_exec_option("--memsnap-shm", shm_fd);
    }
    options_added = True;
  }
  set_close_on_exec(False);
  return True;
}

/* Whether Valgrind can run `path` traced: not a setuid or setgid file (Valgrind refuses
 * those, and the exec would fail in the program), and an amd64 ELF file or a script (the
 * only tool built is memsnap-amd64-linux). A program that cannot be followed is exec'd
 * natively, as without --trace-children, and the stream ends at the exec. A path that
 * cannot be read is left to Valgrind and the kernel (the exec fails as it would natively). */
static Bool can_follow(const HChar *path) {
  struct vg_stat st;
  SysRes res = VG_(stat)(path, &st);
  if (sr_isError(res)) return True;
  if (st.mode & (VKI_S_ISUID | VKI_S_ISGID)) return False;
  if (!VKI_S_ISREG(st.mode)) return True; /* not opened (a FIFO would block): execve fails */
  res = VG_(open)(path, VKI_O_RDONLY, 0);
  if (sr_isError(res)) return True;
  UChar head[20];
  Int fd = (Int)sr_Res(res), n = VG_(read)(fd, head, sizeof head);
  VG_(close)(fd);
  if (n >= 2 && head[0] == '#' && head[1] == '!') return True;
  Bool elf = n >= 20 && head[0] == 0x7f && head[1] == 'E' && head[2] == 'L' && head[3] == 'F';
  if (!elf) return True;
  return head[4] == 2 /* ELFCLASS64 */ && head[18] == 62 && head[19] == 0 /* EM_X86_64 */;
}

/* Before an execve, whatever is buffered goes to the reader, ended by an EXEC unit, so
 * that the reader can tell why the stream stops (not followed: the channel closes on
 * exec) or where the next image starts (followed: its HELLO comes next on the pipe). An
 * execve that fails (execvp trying each directory of PATH) returns, and the accesses after
 * it come in later slots: the EXEC unit is then not the last one, which is how the reader
 * tells the two apart. */
static void ms_pre_syscall(ThreadId tid, UInt syscall_number, UWord *args, UInt arg_count) {
  (void)tid, (void)arg_count;
  if (syscall_number == __NR_munmap && clo_objects && out_fd >= 0) /* ends what it knows */
    emit_object(TAG_FREE, args[0], 0, 1 /* MS_OBJECT_MAP */, 0);
  if (syscall_number != __NR_execve && syscall_number != __NR_execveat) return;
  if (out_fd >= 0) put_unit(0, pack(0, TAG_EXEC, 0, 0));
  flush_buffer();
  if (!VG_(clo_trace_children)) return;
  Bool follow = syscall_number == __NR_execveat || !args[0] || can_follow((const HChar *)args[0]);
  exec_not_followed = !follow || !follow_exec();
  if (exec_not_followed) VG_(clo_trace_children) = False;
}

/* A process the client forks (fork, vfork, or clone without CLONE_THREAD, as posix_spawn
 * and system() do) is not observed (ms_forked_child): a FORK unit with its pid lets memsnap
 * say so. Seen in the parent only (the child's result is 0). */
static void ms_post_syscall(ThreadId tid, UInt syscall_number, UWord *args, UInt arg_count,
                            SysRes result) {
  (void)arg_count;
  /* an anonymous mapping the program asked for itself (mmap called from outside libc: not
   * malloc's own arenas, whose blocks are heap objects) */
  if (syscall_number == __NR_mmap && clo_objects && !sr_isError(result) &&
      (args[3] & VKI_MAP_ANONYMOUS) && out_fd >= 0) {
    Addr ips[2];
    if (VG_(get_StackTrace)(tid, ips, 2, NULL, NULL, 0) == 2 &&
        !in_system_object(VG_(current_DiEpoch)(), ips[1]))
      emit_object(TAG_ALLOC, sr_Res(result), args[1], 1 /* MS_OBJECT_MAP */, call_site(tid, 1, 0));
  }
  if ((syscall_number == __NR_execve || syscall_number == __NR_execveat) && sr_isError(result)) {
    set_close_on_exec(True); /* the exec failed: this image goes on (follow_exec) */
    if (exec_not_followed) VG_(clo_trace_children) = True; /* the next one may be followed */
    exec_not_followed = False;
  }
  Bool process = syscall_number == __NR_clone && !(args[0] & 0x00010000 /* CLONE_THREAD */);
#ifdef __NR_fork
  process = process || syscall_number == __NR_fork;
#endif
#ifdef __NR_vfork
  process = process || syscall_number == __NR_vfork;
#endif
  if (!process || sr_isError(result) || sr_Res(result) == 0 || out_fd < 0) return;
  put_unit((ULong)sr_Res(result), pack(0, TAG_FORK, 0, 0));
}

static void ms_pre_clo_init(void) {
  VG_(details_name)("memsnap");
  VG_(details_version)("0.1");
  VG_(details_description)("memsnap's data access recorder");
  VG_(details_copyright_author)("memsnap authors");
  VG_(details_bug_reports_to)("memsnap authors");
  VG_(details_avg_translation_sizeB)(275);
  VG_(basic_tool_funcs)(ms_post_clo_init, ms_instrument, ms_fini);
  VG_(needs_command_line_options)(ms_process_cmd_line_option, ms_print_usage, ms_print_debug_usage);
  VG_(track_start_client_code)(ms_start_client_code);
  VG_(track_pre_thread_ll_create)(ms_thread_created);
  VG_(atfork)(NULL, NULL, ms_forked_child);
  VG_(needs_syscall_wrapper)(ms_pre_syscall, ms_post_syscall);
  VG_(needs_client_requests)(ms_handle_client_request);
}

VG_DETERMINE_INTERFACE_VERSION(ms_pre_clo_init)

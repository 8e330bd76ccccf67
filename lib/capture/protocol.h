/* The wire protocol between memsnap's Valgrind tool (valgrind/ms_main.c, no libc) or the
 * compiler runtime (rt/rt.c) and the launcher (launcher/capture_decode.c): constants only,
 * so that both sides include the same definitions. The protocol itself is described in
 * launcher/README.md. */
#ifndef MEMSNAP_CAPTURE_PROTOCOL_H
#define MEMSNAP_CAPTURE_PROTOCOL_H

#define MS_VG_MAGIC 0x3147564150534d53ULL /* "SMSPAVG1" little-endian */
#define MS_VG_VERSION 3
/* The compiler runtime's version (rt/rt.c): the same notices on the pipe (HELLO, CHUNK,
 * SIGNAL, in the version 2 layout), but its slots hold 8-byte words: an access is
 * address | site << 48 (site < MS_RT_SHORT_SITES, address < 2^48; thread from the THREAD
 * units, size and kind from the site's definition), and a word whose top 16 bits are all
 * ones escapes: MS_RT_ESCAPE_LONG is followed by an access as an ms_access (address, then
 * site | thread << 32 | size << 48 | kind << 56), MS_RT_ESCAPE_CONTROL by a THREAD, SITE
 * or EXIT unit {a, b = site | extra << 32 | tag << 56} and its payload units. A SITE's
 * payload has size | kind << 8 at byte 12 (the u32 after the line). Never straddles slots. */
#define MS_RT_VERSION 4
#define MS_RT_SHORT_SITES 0xffffu
#define MS_RT_ESCAPE_LONG 0xffff000000000000ull
#define MS_RT_ESCAPE_CONTROL 0xffff000000000001ull
#define MS_VG_UNIT_BYTES 16         /* every record is {u64 a; u64 b} */
#define MS_VG_SLOT_UNITS (1u << 16) /* units per shared-memory slot (1 MiB) */

enum {
  TAG_LOAD = 0,
  TAG_STORE = 1,
  TAG_MODIFY = 2,
  TAG_HELLO = 0x10,
  TAG_THREAD = 0x11,
  TAG_SITE = 0x12,
  TAG_EXIT = 0x13,
  TAG_CHUNK = 0x14,
  TAG_SIGNAL = 0x15, /* rt only: the program died of signal `a`; the stream is truncated */
  TAG_EXEC = 0x16,   /* Valgrind only: execve next; the last unit of its slot (see ms_main.c) */
  TAG_FORK = 0x17,   /* Valgrind only: the program forked process `a`, which is not observed */
  /* Protocol 3 and the runtime's: a data object allocated at `a` by the call of `site`,
   * of the size in its one payload unit (u64 size, u64 0); the size field holds its kind
   * (ms_object_kind). The runtime sends both as control units after an escape word. */
  TAG_ALLOC = 0x18,
  TAG_FREE = 0x19 /* the object at `a` is freed; size field: kind */
};

/* The client requests of the tool's preload library (valgrind/ms_preload.c):
 * VG_USERREQ_TOOL_BASE('M', 'S') + n, arguments (pointer, size). */
#define MS_REQ_ALLOC (((unsigned)'M' << 24 | (unsigned)'S' << 16) + 0)
#define MS_REQ_FREE (((unsigned)'M' << 24 | (unsigned)'S' << 16) + 1)

#endif

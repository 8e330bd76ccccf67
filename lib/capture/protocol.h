/* The wire protocol between memsnap's Valgrind tool (valgrind/ms_main.c, no libc) or the
 * compiler runtime (rt/rt.c) and the launcher (launcher/capture.c): constants only, so that both
 * sides include the same definitions. The protocol itself is described in launcher/README.md. */
#ifndef MEMSNAP_CAPTURE_PROTOCOL_H
#define MEMSNAP_CAPTURE_PROTOCOL_H

#define MS_VG_MAGIC 0x3147564150534d53ULL /* "SMSPAVG1" little-endian */
#define MS_VG_VERSION 2
/* The compiler runtime's version (rt/rt.c): the same notices on the pipe (HELLO, CHUNK,
 * SIGNAL, in the version 2 layout), but the units in the slots are laid out as ms_access
 * (include/memsnap/access.h), b = site | field << 32 | size << 48 | tag << 56, field being
 * the thread of an access or the payload units of a SITE, so that the reader copies runs of
 * accesses as they are (launcher/README.md). */
#define MS_RT_VERSION 3
#define MS_VG_UNIT_BYTES 16               /* every record is {u64 a; u64 b} */
#define MS_VG_SLOT_UNITS (1u << 16)       /* units per shared-memory slot (1 MiB) */

enum {
  TAG_LOAD = 0,
  TAG_STORE = 1,
  TAG_MODIFY = 2,
  TAG_HELLO = 0x10,
  TAG_THREAD = 0x11,
  TAG_SITE = 0x12,
  TAG_EXIT = 0x13,
  TAG_CHUNK = 0x14,
  TAG_SIGNAL = 0x15 /* rt only: the program died of signal `a`; the stream is truncated */
};

#endif

/* .mtr internals shared by the writer and the reader: layout constants, little-endian
 * helpers, varints, CRC-32, and the record codec state. docs/formats.md is the contract;
 * this header only names what it specifies.
 *
 * Record model (docs/formats.md, "Records"): each record is one tag byte (three "miss" bits)
 * plus, on a miss, fields in three column streams. The prediction state lives per site
 * ("slot" = site + 1 mod 2^32, so MS_SITE_NONE is slot 0) and resets at each chunk start so
 * that chunks decode independently.
 */
#ifndef MEMSNAP_IO_MTR_INTERNAL_H
#define MEMSNAP_IO_MTR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memsnap/access.h"
#include "memsnap/stream.h"

_Static_assert(offsetof(ms_access, site) == 8, "ms_access: address, then 8 bytes of tail");

#define MTR_MAGIC "\x89MTR\r\n\x1a\n" /* 8 bytes, PNG-style: catches text-mode mangling */
#define MTR_MAGIC_BYTES 8
#define MTR_VERSION 1
#define MTR_CHUNK_MAGIC "MSCK"
#define MTR_TRAILER_MAGIC "MSTR"
#define MTR_OBJECTS_MAGIC "MSOB" /* the trailer's data objects block, after the chunk index */
#define MTR_FOOTER_MAGIC "MTR-END\n"
#define MTR_CHUNK_HEADER_BYTES 40
#define MTR_FOOTER_BYTES 24
/* Records per chunk written (measured in docs/formats.md); readers accept up to the max. */
#ifndef MTR_CHUNK_RECORDS /* overridable for measurements only */
#define MTR_CHUNK_RECORDS (1u << 18)
#endif
#define MTR_MAX_CHUNK_RECORDS (1u << 22)
#ifndef MTR_ZSTD_LEVEL
#define MTR_ZSTD_LEVEL 1
#endif
#ifndef MTR_ADDRESS_FAST_LEVEL /* overridable for measurements only */
#define MTR_ADDRESS_FAST_LEVEL (-1)
#endif
#ifndef MTR_ADDRESS_RAW_DENOMINATOR
#define MTR_ADDRESS_RAW_DENOMINATOR 8 /* level 1 saving less than 1/8: use the fast level */
#endif
#define MTR_SITES_ZSTD_LEVEL 9 /* written once, at the end */
#define MTR_OBJECTS_ZSTD_LEVEL 3 /* the data objects' events, at the end too, but megabytes */
#define MTR_NO_STRING UINT32_MAX

/* Tag bits. The low three are set when the record departs from the prediction; on an
 * address miss, bit 3 names the base of the stored delta and bits 4-6 hold its byte count
 * minus one (docs/formats.md, "Records"). */
enum {
  MTR_SITE_MISS = 1,
  MTR_ADDRESS_MISS = 2,
  MTR_ATTRIBUTES_CHANGE = 4,
  MTR_FROM_PREVIOUS = 8, /* the delta is from the previous record's address */
  MTR_WIDTH_SHIFT = 4,
  MTR_TAG_MASK = 0x7f
};

/* Nonzero if one of the n tags has bit 7 set, or a base or width without an address miss.
 * Eight tags at a time (SWAR): checking them here, once per chunk, takes the check out of the
 * decoding loop; a byte-at-a-time loop, which gcc -O2 does not vectorize, took 20% of
 * matmul's decoding time, and checking each tag inside the decoding loop instead made gather
 * 1.3x slower. */
static inline uint64_t mtr_tags_invalid(const uint8_t *tags, size_t n) {
  const uint64_t ones = 0x0101010101010101u;
  uint64_t bad = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    memcpy(&x, tags + i, 8);
    uint64_t miss = ((x >> 1) & ones) * 0xff; /* 0xff in the bytes with an address miss */
    bad |= (x & 0x80 * ones) | (x & 0x78 * ones & ~miss);
  }
  for (; i < n; i++)
    bad |= (tags[i] & 0x80u) | (tags[i] & (tags[i] & MTR_ADDRESS_MISS ? 0 : 0x78u));
  return bad;
}

/* Prediction state of one slot. `tail` holds bytes 8..15 of the slot's last ms_access (site,
 * thread, size, kind), so a record is written as two 8-byte stores and compared in one
 * (measured: decoding 10-15% faster than assembling four fields; copying a whole 16-byte
 * ms_access kept in the state was 2x slower, a store-forwarding stall after the address add).
 * A slot predicts `base + stride`, the base being its own last address or, when
 * `from_previous`, the previous record's address: a field of a struct read right after
 * another field of the same struct by another instruction (linked_list's p->next after
 * p->value: 2.32 -> 1.50 bytes/access). Both deltas of every record are kept, so either kind
 * of stride is adopted whichever base the misses were stored against. */
typedef struct mtr_slot_state {
  uint64_t last_address;
  uint64_t tail;
  uint64_t stride;          /* predicted delta from the base */
  uint64_t last_own_delta;  /* address - the slot's previous address, last time */
  uint64_t last_from_delta; /* address - the previous record's address, last time */
  uint32_t next_slot;       /* the slot that followed this one last time */
  uint32_t from_previous;   /* 1: the stride is from the previous record's address */
} mtr_slot_state;

static inline uint64_t mtr_access_tail(const ms_access *a) {
  uint64_t tail;
  memcpy(&tail, (const char *)a + offsetof(ms_access, site), sizeof tail);
  return tail;
}

static inline mtr_slot_state mtr_slot_initial(uint32_t slot) {
  ms_access initial = {.site = slot - 1, .size = 8, .kind = MS_LOAD};
  return (mtr_slot_state){.tail = mtr_access_tail(&initial), .next_slot = slot};
}

static inline void mtr_slot_reset(mtr_slot_state *states, uint32_t slot_count) {
  for (uint32_t s = 0; s < slot_count; s++)
    states[s] = mtr_slot_initial(s);
}

/* After a record at `address` (the previous record's was `previous_address`): on an address
 * miss, a delta seen twice in a row becomes the stride, the slot's own delta first. */
static inline void mtr_slot_learn(mtr_slot_state *s, uint64_t address, uint64_t previous_address,
                                  int miss) {
  uint64_t own = address - s->last_address, from = address - previous_address;
  if (miss) {
    if (own == s->last_own_delta) {
      s->stride = own;
      s->from_previous = 0;
    } else if (from == s->last_from_delta) {
      s->stride = from;
      s->from_previous = 1;
    }
  }
  s->last_own_delta = own;
  s->last_from_delta = from;
  s->last_address = address;
}

/* Bytes needed to store v little-endian, at least 1. */
static inline unsigned mtr_byte_width(uint64_t v) {
  unsigned bits = v ? 64 - (unsigned)__builtin_clzll(v) : 1;
  return (bits + 7) / 8;
}

static inline void put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static inline void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t get_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t get_u64(const uint8_t *p) {
  return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static inline uint64_t zigzag_encode(uint64_t delta) {
  return (delta << 1) ^ (0 - (delta >> 63)); /* all ones when the delta is negative */
}
static inline uint64_t zigzag_decode(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

/* LEB128; returns the number of bytes written (at most 10). */
static inline size_t varint_put(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

/* Reads a LEB128 of at most 10 bytes from [*p, end); returns 0, or -1 if it runs past end
 * or is longer than 10 bytes. */
static inline int varint_get(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  const uint8_t *q = *p;
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (q == end) return -1;
    uint8_t b = *q++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *p = q;
      *out = v;
      return 0;
    }
  }
  return -1;
}

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32) of a header, trailer or footer. */
uint32_t mtr_crc32(const uint8_t *data, size_t size);

/* Scan mode of the reader (lib/io/mtr_reader.c), for memsnap recover: the chunks one after
 * another from the header on, each read, checked and decoded whole before it is returned,
 * up to the first damage. The trailer is used when it is intact (the index, the site table);
 * otherwise chunks are found in order and the sites they name are placeholders (no pc, no
 * location). Opening needs an intact header. */
typedef struct mtr_reader mtr_reader;
int mtr_scan_open(const char *path, mtr_reader **out);
/* Decodes the next chunk whole into batch (grown to hold it): 1, 0 after the last chunk of
 * an intact file, or a negative status at the damage (message set). */
int mtr_scan_next(mtr_reader *r, ms_batch *batch);
ms_source *mtr_scan_source(mtr_reader *r); /* its info: header, and trailer if intact */
int mtr_scan_indexed(const mtr_reader *r); /* 1 if the trailer was intact */
const char *mtr_scan_trailer_error(const mtr_reader *r); /* why it was not, else "" */
uint64_t mtr_scan_offset(const mtr_reader *r);           /* the next chunk's offset */
uint64_t mtr_scan_file_bytes(const mtr_reader *r);
void mtr_scan_close(mtr_reader *r);

#endif

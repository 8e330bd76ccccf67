/* .mtr writer sink (docs/formats.md is the contract).
 *
 * Model: a streaming writer in constant memory. begin() writes the header; consume() encodes
 * records into four column buffers (tags, sites, address deltas, attributes) and, every
 * MTR_CHUNK_RECORDS records, compresses them as two zstd frames (content checksum on: tags,
 * sites and attributes; addresses) behind a chunk header; end() writes the last chunk, then the
 * trailer (what is only known at the end: threads, counts, flags, exit status, sites, chunk index)
 * and the footer, then renames the temporary file onto the target. Memory: the column buffers (~18
 * bytes per record of a chunk), the per-site prediction table (48 bytes per site) and the chunk
 * index (16 bytes per chunk).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "memsnap/error.h"
#include "memsnap/output.h"
#include "memsnap/trace.h"
#include "mtr_internal.h"
#include "text_lines.h" /* output_name */

/* The column frame's level (overridable for measurements only). Level -1 made gather's file
 * 1.5 % larger and linked_list's 0.2 %, and its effect on the writer's time was within the
 * noise of bench_write on this machine (gather 8.0/8.6 ns per access at 1/-1, then 7.0/6.5). */
#ifndef MTR_COLUMN_ZSTD_LEVEL
#define MTR_COLUMN_ZSTD_LEVEL MTR_ZSTD_LEVEL
#endif
#ifndef MTR_ADDRESS_SAMPLE_BYTES /* overridable for measurements only */
#define MTR_ADDRESS_SAMPLE_BYTES ((size_t)65536)
#endif

/* A growable byte buffer for the header and the trailer. */
typedef struct byte_buffer {
  uint8_t *data;
  size_t size, capacity;
  int failed;
} byte_buffer;

static uint8_t *buffer_grow(byte_buffer *b, size_t n) {
  if (b->failed) return NULL;
  if (b->size + n > b->capacity) {
    size_t capacity = b->capacity ? b->capacity : 256;
    while (capacity < b->size + n)
      capacity *= 2;
    uint8_t *data = realloc(b->data, capacity);
    if (!data) {
      b->failed = 1;
      return NULL;
    }
    b->data = data;
    b->capacity = capacity;
  }
  uint8_t *p = b->data + b->size;
  b->size += n;
  return p;
}

static void buffer_u32(byte_buffer *b, uint32_t v) {
  uint8_t *p = buffer_grow(b, 4);
  if (p) put_u32(p, v);
}
static void buffer_u64(byte_buffer *b, uint64_t v) {
  uint8_t *p = buffer_grow(b, 8);
  if (p) put_u64(p, v);
}
static void buffer_bytes(byte_buffer *b, const void *data, size_t n) {
  uint8_t *p = buffer_grow(b, n);
  if (p && n) memcpy(p, data, n);
}
static void buffer_string(byte_buffer *b, const char *s) {
  if (!s) {
    buffer_u32(b, MTR_NO_STRING);
    return;
  }
  size_t n = strlen(s);
  if (n >= MTR_NO_STRING) n = MTR_NO_STRING - 1;
  buffer_u32(b, (uint32_t)n);
  buffer_bytes(b, s, n);
}
static void buffer_crc(byte_buffer *b) {
  if (!b->failed) buffer_u32(b, mtr_crc32(b->data, b->size));
}

/* The encoder's state of one slot: mtr_slot_state with the two deltas of the slot's last
 * record held as the addresses they were taken from (last_own_delta = last_address -
 * own_base, last_from_delta = last_address - from_base), as in the reader. */
typedef struct encode_slot {
  uint64_t last_address;
  uint64_t tail; /* bytes 8..15 of the slot's last ms_access */
  uint64_t stride;
  uint64_t own_base;  /* the slot's address before last_address */
  uint64_t from_base; /* the previous record's address when last_address was written */
  uint64_t run;       /* records of the slot since its attributes (its kind) last changed */
  uint32_t next_slot;
  uint32_t from_previous;
  uint64_t padding; /* 64 bytes: the slot's address is one shift of its number */
} encode_slot;

_Static_assert(sizeof(encode_slot) == 64, "encode_slot is 64 bytes");

static inline encode_slot encode_slot_initial(uint32_t slot) {
  mtr_slot_state initial = mtr_slot_initial(slot);
  return (encode_slot){.tail = initial.tail, .next_slot = slot};
}

typedef struct chunk_entry {
  uint64_t offset, first_index;
} chunk_entry;

typedef struct mtr_writer {
  ms_sink sink;
  ms_output out;
  int begun, failed;
  uint64_t offset; /* bytes written so far */
  ZSTD_CCtx *cctx;
  /* the chunk being encoded */
  uint8_t *tags, *sites, *addresses, *attributes, *compressed;
  size_t site_bytes, address_bytes, attribute_bytes, compressed_capacity;
  uint32_t records;
  uint32_t previous_slot;
  uint64_t previous_address;
  encode_slot *states;
  uint32_t state_capacity;
  uint32_t state_high; /* slots touched this chunk are below: slot 0 (the first record's
                          previous slot) and those that a site miss named */
  /* totals */
  uint64_t access_count, counts_by_kind[MS_ACCESS_KIND_COUNT];
  uint32_t max_thread_plus_one;
  chunk_entry *chunks;
  uint64_t chunk_count, chunk_capacity;
} mtr_writer;

static int write_bytes(mtr_writer *w, const void *data, size_t n) {
  if (n && fwrite(data, 1, n, w->out.file) != n)
    return ms_error_set(MS_ERR_IO, "%s: write failed", output_name(&w->out));
  w->offset += n;
  return MS_OK;
}

static int write_header(mtr_writer *w, const ms_stream_info *info) {
  byte_buffer b = {0};
  buffer_bytes(&b, MTR_MAGIC, MTR_MAGIC_BYTES);
  buffer_u32(&b, MTR_VERSION);
  buffer_u32(&b, 0); /* header_bytes, patched below */
  buffer_u32(&b, info->flags);
  buffer_u32(&b, 0); /* reserved */
  buffer_u64(&b, info->sample_on);
  buffer_u64(&b, info->sample_off);
  buffer_string(&b, info->program);
  buffer_string(&b, info->arch);
  buffer_string(&b, info->capture);
  buffer_u32(&b, info->argc > 0 ? (uint32_t)info->argc : 0);
  for (int i = 0; i < info->argc; i++)
    buffer_string(&b, info->argv[i]);
  if (!b.failed) put_u32(b.data + 12, (uint32_t)(b.size + 4));
  buffer_crc(&b);
  int rc = b.failed ? ms_error_set(MS_ERR_NOMEM, "out of memory for the .mtr header")
                    : write_bytes(w, b.data, b.size);
  free(b.data);
  return rc;
}

static int writer_begin(ms_sink *sink, const ms_stream_info *info) {
  mtr_writer *w = (mtr_writer *)sink;
  if (w->begun) return MS_OK;
  w->begun = 1;
  int rc = write_header(w, info);
  if (rc < 0) w->failed = 1;
  return rc;
}

/* Makes room for `slot` in the prediction table; new slots start in their reset state. */
static int ensure_slot(mtr_writer *w, uint32_t slot) {
  if (slot < w->state_capacity) return MS_OK;
  uint64_t capacity = w->state_capacity ? w->state_capacity : 256;
  while (capacity <= slot)
    capacity *= 2;
  encode_slot *states = realloc(w->states, capacity * sizeof *states);
  if (!states) return ms_error_set(MS_ERR_NOMEM, "out of memory for the site table");
  for (uint64_t s = w->state_capacity; s < capacity; s++)
    states[s] = encode_slot_initial((uint32_t)s);
  w->states = states;
  w->state_capacity = (uint32_t)capacity;
  return MS_OK;
}

/* The address column as its own zstd frame. Irregular programs' deltas are nearly random:
 * zstd level 1 saves only ~6% on them (gather, linked_list), with Huffman-coded literals that
 * cost a quarter of the decoding time. Such a column is compressed at a negative level
 * instead, which stores literals raw, so its frame decodes at memcpy speed. Regular
 * programs' columns compress 10x and more at level 1 and keep it.
 * The choice: level 1 if it saves at least 1/MTR_ADDRESS_RAW_DENOMINATOR. A column whose
 * first MTR_ADDRESS_SAMPLE_BYTES saved less than 3/4 of that at level 1 goes to the fast
 * level without compressing the whole column at level 1 first: that attempt, thrown away,
 * was the most expensive step of writing gather (bench_write, CPU, rt-recorded traces of 6-8
 * M accesses: gather 8.8 -> 7.0 ns per access, linked_list 11.0 -> 10.5; byte-identical
 * files: the random columns' savings hardly vary along a chunk; level -1 itself saves nothing on
 * them, so it cannot serve as the estimate). Going to the fast level directly for every chunk once
 * one had taken it, trying level 1 every 16th chunk, lost on linked_list, whose chunks alternate.
 */
static size_t compress_addresses(mtr_writer *w, uint8_t *out, size_t capacity) {
  size_t raw = w->address_bytes;
  ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, MTR_ZSTD_LEVEL);
  if (raw > 2 * MTR_ADDRESS_SAMPLE_BYTES) {
    size_t sample = ZSTD_compress2(w->cctx, out, capacity, w->addresses, MTR_ADDRESS_SAMPLE_BYTES);
    int hopeless = !ZSTD_isError(sample) &&
                   sample * MTR_ADDRESS_RAW_DENOMINATOR * 4 >=
                       MTR_ADDRESS_SAMPLE_BYTES * (MTR_ADDRESS_RAW_DENOMINATOR * 4 - 3);
    if (hopeless) {
      ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, MTR_ADDRESS_FAST_LEVEL);
      return ZSTD_compress2(w->cctx, out, capacity, w->addresses, raw);
    }
  }
  size_t compressed = ZSTD_compress2(w->cctx, out, capacity, w->addresses, raw);
  if (ZSTD_isError(compressed) ||
      compressed * MTR_ADDRESS_RAW_DENOMINATOR < raw * (MTR_ADDRESS_RAW_DENOMINATOR - 1))
    return compressed;
  ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, MTR_ADDRESS_FAST_LEVEL);
  return ZSTD_compress2(w->cctx, out, capacity, w->addresses, raw);
}

static int flush_chunk(mtr_writer *w) {
  if (w->records == 0) return MS_OK;
  if (w->chunk_count == w->chunk_capacity) {
    uint64_t capacity = w->chunk_capacity ? w->chunk_capacity * 2 : 64;
    chunk_entry *chunks = realloc(w->chunks, capacity * sizeof *chunks);
    if (!chunks) return ms_error_set(MS_ERR_NOMEM, "out of memory for the chunk index");
    w->chunks = chunks;
    w->chunk_capacity = capacity;
  }
  uint64_t first_index = w->access_count - w->records;
  w->chunks[w->chunk_count++] = (chunk_entry){w->offset, first_index};
  /* compact the columns behind the tags: one frame of tags, sites and attributes, then
   * one of the addresses */
  uint8_t *payload = w->tags;
  size_t size = w->records;
  memmove(payload + size, w->sites, w->site_bytes);
  size += w->site_bytes;
  memmove(payload + size, w->attributes, w->attribute_bytes);
  size += w->attribute_bytes;
  ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, MTR_COLUMN_ZSTD_LEVEL);
  size_t compressed = ZSTD_compress2(w->cctx, w->compressed, w->compressed_capacity, payload, size);
  if (ZSTD_isError(compressed))
    return ms_error_set(MS_ERR_IO, "zstd: %s", ZSTD_getErrorName(compressed));
  size_t address_compressed =
      compress_addresses(w, w->compressed + compressed, w->compressed_capacity - compressed);
  if (ZSTD_isError(address_compressed))
    return ms_error_set(MS_ERR_IO, "zstd: %s", ZSTD_getErrorName(address_compressed));
  uint8_t header[MTR_CHUNK_HEADER_BYTES];
  // NOLINTNEXTLINE(bugprone-not-null-terminated-result): a 4-byte binary magic, no NUL
  memcpy(header, MTR_CHUNK_MAGIC, 4);
  put_u32(header + 4, w->records);
  put_u64(header + 8, first_index);
  put_u32(header + 16, (uint32_t)compressed);
  put_u32(header + 20, (uint32_t)w->site_bytes);
  put_u32(header + 24, (uint32_t)w->address_bytes);
  put_u32(header + 28, (uint32_t)w->attribute_bytes);
  put_u32(header + 32, (uint32_t)address_compressed);
  put_u32(header + 36, mtr_crc32(header, 36));
  int rc = write_bytes(w, header, sizeof header);
  if (rc == 0) rc = write_bytes(w, w->compressed, compressed + address_compressed);
  w->records = 0;
  w->site_bytes = w->address_bytes = w->attribute_bytes = 0;
  w->previous_slot = 0;
  w->previous_address = 0;
  for (uint32_t slot = 0; slot < w->state_high; slot++) {
    w->counts_by_kind[w->states[slot].tail >> 56] += w->states[slot].run;
    w->states[slot] = encode_slot_initial(slot);
  }
  w->state_high = 1;
  memset(w->tags, 0, MTR_CHUNK_RECORDS); /* encode_records() stores nonzero tags only */
  return rc;
}

/* The tag of a record that departs from its prediction, with its fields appended to the
 * site, address and attribute columns, and the state learned (docs/formats.md, "Records");
 * -1 if the record's kind is out of range. An address miss stores the zigzagged delta from
 * the slot's own last address, or from the previous record's when that delta repeats and the
 * own one does not (choosing the smaller of the two instead made matmul 3x larger: its
 * row-end jumps, identical from row to row, turned into varying deltas zstd could not match).
 * Kinds and the thread bound are checked here only: a record with its slot's previous
 * attributes repeats values checked before. */
static int encode_departure(mtr_writer *w, encode_slot *previous, encode_slot *s, uint32_t slot,
                            const ms_access *a, uint64_t previous_address) {
  int tag = 0;
  uint64_t address = a->address, tail = mtr_access_tail(a);
  if (previous->next_slot != slot) {
    uint32_t previous_slot = (uint32_t)(previous - w->states);
    tag |= MTR_SITE_MISS;
    w->site_bytes += varint_put(w->sites + w->site_bytes,
                                zigzag_encode((uint64_t)(int64_t)(int32_t)(slot - previous_slot)));
    previous->next_slot = slot;
    if (slot >= w->state_high) w->state_high = slot + 1;
  }
  uint64_t base = s->from_previous ? previous_address : s->last_address;
  if (address != base + s->stride) {
    uint64_t own = address - s->last_address, from = address - previous_address;
    uint64_t last_own = s->last_address - s->own_base, last_from = s->last_address - s->from_base;
    uint64_t stored = zigzag_encode(own);
    if (own != last_own && from == last_from) {
      stored = zigzag_encode(from);
      tag |= MTR_FROM_PREVIOUS;
    }
    unsigned width = mtr_byte_width(stored);
    put_u64(w->addresses + w->address_bytes, stored); /* the column has 8 bytes of slack */
    w->address_bytes += width;
    tag |= MTR_ADDRESS_MISS | (int)((width - 1) << MTR_WIDTH_SHIFT);
    if (own == last_own) { /* a delta seen twice in a row becomes the stride, the own first */
      s->stride = own;
      s->from_previous = 0;
    } else if (from == last_from) {
      s->stride = from;
      s->from_previous = 1;
    }
  }
  if (tail != s->tail) {
    if (a->kind >= MS_ACCESS_KIND_COUNT) return -1;
    w->counts_by_kind[s->tail >> 56] += s->run;
    s->run = 0;
    if (a->thread >= w->max_thread_plus_one) w->max_thread_plus_one = a->thread + 1u;
    tag |= MTR_ATTRIBUTES_CHANGE;
    uint8_t *p = w->attributes + w->attribute_bytes;
    p[0] = a->kind;
    p[1] = a->size;
    put_u16(p + 2, a->thread);
    w->attribute_bytes += 4;
    s->tail = tail;
  }
  return tag;
}

/* Encodes n records (n <= the room left in the chunk); returns the number encoded, fewer
 * than n when record n is invalid (site or kind out of range).
 *
 * Speed: the writer bounds both capture paths (perf of `memsnap record --via=rt`: 37-39 % of
 * the cycles in the writer's loop, which took 66-68 instructions per record on the regular
 * kernels, callgrind). The column stores are uint8_t stores, which may alias any field of the
 * writer: with the loop's variables in `w`, gcc reloaded and stored them around every store.
 * Here the loop keeps only what a fully predicted record needs in registers: the common
 * record (98 % of gather's and matmul's, 89 % of linked_list's) tests its site, address and
 * attributes in one condition and stores nothing but its state (its tag is the 0 that
 * flush_chunk left in the tag column); encode_departure(), on the unlikely branch, does the
 * rest, its column cursors in `w`. Kinds
 * are counted per slot, as the run of records since the slot's attributes last changed,
 * added to counts_by_kind when they change and at the end of the chunk: one increment of
 * the slot's line, which the record stores to anyway (counts_by_kind[kind]++ is a
 * store-forwarded 5-cycle chain on runs of one kind; two sums, of kind and of kind >> 1,
 * took 5 instructions of the loop's ~35). The slot state is 64 bytes so that its address is
 * a shift. The two deltas of a slot's last record are kept as the addresses they were taken
 * from, as the reader's decode_slot does, so that a predicted record stores addresses it
 * already holds. Measured by bench_write (CPU, best of 3, on a loaded 2-core machine) on
 * `memsnap record --via=rt` traces of 5-8 M accesses, the whole writer including zstd and
 * the address sampling of compress_addresses(): stream_add 5.3 -> 2.4 ns per access,
 * matmul 6.1 -> 2.5, stencil2d 5.2 -> 2.2, gather 10.3 -> 6.1, linked_list 11.5 -> 6.7,
 * byte-identical files; callgrind on 1-1.6 M accesses, instructions per access: 67 -> 36
 * (regular kernels), gather 93 -> 60, linked_list 117 -> 106 (zstd on its tag column). */
static size_t encode_records(mtr_writer *w, const ms_access *records, size_t n,
                             uint32_t site_count) {
  encode_slot *states = w->states, *previous = &states[w->previous_slot];
  uint64_t previous_address = w->previous_address;
  uint8_t *tags = w->tags + w->records;
  const ms_access *a = records, *end = records + n;
  for (; a < end; a++) {
    uint64_t address = a->address, tail = mtr_access_tail(a);
    uint32_t slot = (uint32_t)tail + 1; /* site + 1: MS_SITE_NONE -> 0 */
    if (__builtin_expect(slot > site_count, 0)) break;
    encode_slot *s = &states[slot];
    uint64_t base = s->from_previous ? previous_address : s->last_address;
    if (__builtin_expect(
            previous->next_slot != slot || address != base + s->stride || tail != s->tail, 0)) {
      int tag = encode_departure(w, previous, s, slot, a, previous_address);
      if (tag < 0) break;
      tags[a - records] = (uint8_t)tag;
    }
    s->own_base = s->last_address;
    s->from_base = previous_address;
    s->last_address = address;
    previous_address = address;
    previous = s;
    s->run++;
  }
  size_t done = (size_t)(a - records);
  w->previous_slot = (uint32_t)(previous - states);
  w->previous_address = previous_address;
  w->records += (uint32_t)done;
  /* threads are learned on attribute changes; thread 0 may come with the initial ones */
  if (done > 0 && w->max_thread_plus_one == 0) w->max_thread_plus_one = 1;
  w->access_count += done;
  return done;
}

/* A writer that failed refuses everything after: the file would have a hole. */
static int writer_failed(mtr_writer *w, int status) {
  w->failed = 1;
  return status;
}

static int writer_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  mtr_writer *w = (mtr_writer *)sink;
  if (w->failed) return ms_error_set(MS_ERR_IO, "%s: writer already failed", output_name(&w->out));
  int rc = writer_begin(sink, info);
  if (rc < 0) return rc;
  uint32_t site_count = ms_site_table_count(info->sites);
  if (site_count >= w->state_capacity && (rc = ensure_slot(w, site_count)) < 0)
    return writer_failed(w, rc);
  for (size_t i = 0; i < batch->count;) {
    size_t room = MTR_CHUNK_RECORDS - w->records;
    size_t n = batch->count - i < room ? batch->count - i : room;
    size_t done = encode_records(w, batch->accesses + i, n, site_count);
    i += done;
    if (done < n) {
      const ms_access *a = &batch->accesses[i];
      w->failed = 1;
      return ms_error_set(MS_ERR_ARG, "%s: access %llu: site %u or kind %u out of range",
                          output_name(&w->out), (unsigned long long)w->access_count, a->site,
                          a->kind);
    }
    if (w->records == MTR_CHUNK_RECORDS && (rc = flush_chunk(w)) < 0) return writer_failed(w, rc);
  }
  return MS_OK;
}

/* Appends `raw` (freed here) to b as u64 raw size, u64 compressed size and one zstd frame at
 * `level`; `what` names it in errors. */
static int append_frame(mtr_writer *w, byte_buffer *b, byte_buffer *raw, int level,
                        const char *what) {
  size_t bound = ZSTD_compressBound(raw->size);
  uint8_t *frame = raw->failed ? NULL : malloc(bound);
  int rc = MS_OK;
  if (!frame) {
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory for the %s", what);
  } else {
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    size_t compressed =
        ZSTD_compress2(w->cctx, frame, bound, raw->data ? raw->data : frame, raw->size);
    if (ZSTD_isError(compressed)) {
      rc = ms_error_set(MS_ERR_IO, "zstd: %s", ZSTD_getErrorName(compressed));
    } else {
      buffer_u64(b, raw->size);
      buffer_u64(b, compressed);
      buffer_bytes(b, frame, compressed);
    }
  }
  free(frame);
  free(raw->data);
  return rc;
}

/* The site table as one zstd frame: its strings (object paths, file names) repeat from
 * site to site, and compressed they take ~6% of their raw size (measured on memsnap's
 * recordings of tests/kernels: 565 KB -> 27 KB at level 9). */
static int append_site_table(mtr_writer *w, byte_buffer *b, const ms_site_table *sites,
                             uint32_t site_count) {
  byte_buffer raw = {0};
  for (uint32_t id = 0; id < site_count; id++) {
    const ms_site *site = ms_site_table_get(sites, id);
    buffer_u64(&raw, site->pc);
    buffer_string(&raw, site->object);
    buffer_string(&raw, site->function);
    buffer_string(&raw, site->file);
    buffer_u32(&raw, site->line);
  }
  return append_frame(w, b, &raw, MTR_SITES_ZSTD_LEVEL, "site table");
}

/* The data objects' events as one zstd frame, between the site table and the chunk index
 * (docs/formats.md). */
static int append_objects(mtr_writer *w, byte_buffer *b, const ms_object_table *objects) {
  /* the events up to the last access written (a recovered or shortened trace keeps those
   * of its accesses) */
  uint64_t count = 0, total = ms_object_table_count(objects);
  while (count < total && ms_object_table_get(objects, count)->index <= w->access_count)
    count++;
  if (count == 0) return MS_OK;
  byte_buffer raw = {0};
  buffer_u64(&raw, count);
  for (uint64_t i = 0; i < count; i++) {
    const ms_object_event *e = ms_object_table_get(objects, i);
    buffer_u64(&raw, e->index);
    buffer_u64(&raw, e->address);
    buffer_u64(&raw, e->size);
    buffer_u32(&raw, e->site);
    uint8_t tail[4] = {(uint8_t)e->thread, (uint8_t)(e->thread >> 8), e->kind, e->freed};
    buffer_bytes(&raw, tail, 4);
    buffer_string(&raw, e->name);
    buffer_string(&raw, e->object);
  }
  /* level 3: an allocation-heavy run's events are megabytes (hashtab 200000: 400000 events,
   * 17 MB raw), which level 9 took 0.4 s to compress at the end of a 1.2 s recording */
  buffer_bytes(b, MTR_OBJECTS_MAGIC, 4);
  return append_frame(w, b, &raw, MTR_OBJECTS_ZSTD_LEVEL, "data objects");
}

static int write_trailer(mtr_writer *w, const ms_stream_info *info) {
  byte_buffer b = {0};
  uint64_t trailer_offset = w->offset;
  uint32_t threads =
      info->thread_count > w->max_thread_plus_one ? info->thread_count : w->max_thread_plus_one;
  buffer_bytes(&b, MTR_TRAILER_MAGIC, 4);
  buffer_u32(&b, threads);
  buffer_u32(&b, info->flags);
  buffer_u32(&b, (uint32_t)info->exit_status);
  buffer_u64(&b, w->access_count);
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++)
    buffer_u64(&b, w->counts_by_kind[k]);
  buffer_u64(&b, w->chunk_count);
  uint32_t site_count = ms_site_table_count(info->sites);
  buffer_u32(&b, site_count);
  int rc = append_site_table(w, &b, info->sites, site_count);
  if (rc < 0) {
    free(b.data);
    return rc;
  }
  if ((rc = append_objects(w, &b, info->objects)) < 0) {
    free(b.data);
    return rc;
  }
  for (uint64_t c = 0; c < w->chunk_count; c++) {
    buffer_u64(&b, w->chunks[c].offset);
    buffer_u64(&b, w->chunks[c].first_index);
  }
  buffer_crc(&b);
  uint64_t trailer_bytes = b.size;
  buffer_u64(&b, trailer_offset);
  buffer_u64(&b, trailer_bytes);
  buffer_bytes(&b, MTR_FOOTER_MAGIC, 8);
  rc = b.failed ? ms_error_set(MS_ERR_NOMEM, "out of memory for the .mtr trailer")
                : write_bytes(w, b.data, b.size);
  free(b.data);
  return rc;
}

static int writer_end(ms_sink *sink, const ms_stream_info *info) {
  mtr_writer *w = (mtr_writer *)sink;
  if (w->failed) return ms_error_set(MS_ERR_IO, "%s: writer already failed", output_name(&w->out));
  int rc = writer_begin(sink, info);
  if (rc == 0) rc = flush_chunk(w);
  if (rc == 0) rc = write_trailer(w, info);
  if (rc == 0) rc = ms_output_commit(&w->out);
  if (rc < 0) {
    w->failed = 1;
    ms_output_abort(&w->out);
  }
  return rc;
}

static void writer_destroy(ms_sink *sink) {
  mtr_writer *w = (mtr_writer *)sink;
  ms_output_abort(&w->out); /* no-op after a successful end() */
  ZSTD_freeCCtx(w->cctx);
  free(w->tags);
  free(w->sites);
  free(w->addresses);
  free(w->attributes);
  free(w->compressed);
  free(w->states);
  free(w->chunks);
  free(w);
}

static const ms_sink_ops mtr_writer_ops = {writer_begin, writer_consume, writer_end,
                                           writer_destroy};

int ms_mtr_sink_new(const char *path, ms_sink **out) {
  *out = NULL;
  mtr_writer *w = calloc(1, sizeof *w);
  if (!w) return ms_error_set(MS_ERR_NOMEM, "out of memory for a .mtr writer");
  w->sink.ops = &mtr_writer_ops;
  size_t n = MTR_CHUNK_RECORDS;
  /* tags share their buffer with the compacted first frame: 1 + 5 + 4 bytes per record */
  w->tags = calloc(10, n); /* zero: encode_records() stores nonzero tags only */
  w->sites = malloc(5 * n);
  w->addresses = malloc(8 * n + 8); /* + 8: each delta is stored as a whole u64 */
  w->attributes = malloc(4 * n);
  w->compressed_capacity = ZSTD_compressBound(10 * n) + ZSTD_compressBound(8 * n);
  w->compressed = malloc(w->compressed_capacity);
  w->cctx = ZSTD_createCCtx();
  w->state_high = 1;
  if (!w->tags || !w->sites || !w->addresses || !w->attributes || !w->compressed || !w->cctx ||
      ensure_slot(w, 0) < 0) {
    writer_destroy(&w->sink);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for a .mtr writer");
  }
  ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, MTR_ZSTD_LEVEL);
  ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
  int rc = ms_output_open(&w->out, path);
  if (rc < 0) {
    writer_destroy(&w->sink);
    return rc;
  }
  *out = &w->sink;
  return MS_OK;
}

/* .mtr reader source (docs/formats.md is the contract).
 *
 * Model: open() reads the header, the footer and the trailer (sites, counts, chunk index)
 * and validates every size and offset against the file size before trusting it; chunks are
 * read one at a time, their header CRC checked, their two zstd frames decompressed (zstd
 * checks their content checksums) into a buffer whose size the chunk header announced, their
 * tags checked, and the four columns decoded with bounds checks on every varint and address
 * delta. While the reader decodes a chunk, a thread of its own reads and decompresses the
 * next one (read_ahead below): reading a trace then costs the decoding alone in wall time
 * when a second core is free. Memory: two chunks' compressed and decoded bytes, the
 * per-site prediction table and the chunk index, whatever the trace length. Any inconsistency is an
 * error naming the file and the byte offset; nothing in the file is trusted to stay in bounds.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "memsnap/error.h"
#include "memsnap/input.h"
#include "memsnap/trace.h"
#include "mtr_internal.h"

#define MTR_MIN_HEADER_BYTES 60  /* fixed fields, three absent strings, argc, CRC */
#define MTR_MIN_TRAILER_BYTES 80 /* fixed fields, site table sizes, CRC */

#define MTR_SCAN_MAX_SLOTS (1u << 22) /* sites a scan without the trailer may find: 4 M */

typedef struct chunk_entry {
  uint64_t offset, first_index;
} chunk_entry;

/* The decoder's prediction state of one slot: docs/formats.md's per-slot state, as
 * mtr_slot_state, in two changed forms.
 * - The slot that followed this one last time is held as a pointer to its state. Each
 *   record's state is found from the previous one's, a chain of loads that bounds the
 *   decoding speed: with an index, each load was followed by a multiply by 48 (lea + shl)
 *   before the next load.
 * - The two deltas of the slot's last record, needed only on an address miss, are held as
 *   the two addresses they were taken from: last_own_delta = last_address - own_base,
 *   last_from_delta = last_address - from_base. A predicted record then stores two
 *   addresses it already holds instead of computing two differences (the tag-0 path of
 *   decode_records() went from 22 to 20 instructions).
 * Measured together with that tag-0 path (bench_read, gcc -O2, a 2-core machine shared with
 * another build, best .mtr decode time of 6 runs alternating with the previous decoder):
 * linked_list 0.0530 -> 0.0502 s, gather 0.0723 -> 0.0565 s, matmul 0.2558 -> 0.1804 s. */
typedef struct decode_slot {
  uint64_t last_address;
  uint64_t tail; /* bytes 8..15 of the slot's last ms_access, as mtr_slot_state's */
  uint64_t stride;
  struct decode_slot *next; /* the state of the slot that followed this one last time */
  uint64_t own_base;        /* the slot's address before last_address */
  uint64_t from_base;       /* the previous record's address when last_address was read */
  uint32_t from_previous;
} decode_slot;

/* One chunk as read and decompressed, before decoding. */
typedef struct chunk_bytes {
  uint8_t *compressed, *payload;
  size_t compressed_capacity, payload_capacity;
  uint32_t records;
  uint64_t site_bytes, address_bytes, attribute_bytes;
} chunk_bytes;

/* Read-ahead: while the reader decodes chunk k, a thread of its own reads and decompresses
 * chunk k + 1 into `bytes` (with its own zstd context; pread() leaves no shared offset).
 * The reader takes those bytes if the chunk it needs next is the one read ahead, and reads
 * synchronously otherwise (after a seek). A failure of the read-ahead is kept, and reported
 * only if that chunk is the one needed. */
typedef struct read_ahead {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  int stop, pending; /* pending: `wanted` is asked for and not finished */
  uint64_t wanted;
  int64_t ready; /* the chunk in `bytes`, or -1 */
  int status;    /* of reading `ready` */
  char error[512];
  chunk_bytes bytes;
  ZSTD_DCtx *dctx;
} read_ahead;

typedef struct mtr_reader {
  ms_source source;
  char *path;
  FILE *file;
  uint64_t file_bytes, trailer_offset, access_count;
  uint32_t version;
  uint64_t counts_by_kind[MS_ACCESS_KIND_COUNT];
  chunk_entry *chunks;
  uint64_t chunk_count;
  ZSTD_DCtx *dctx;
  chunk_bytes current; /* the chunk being decoded */
  read_ahead *ahead;   /* NULL: not started (yet), or a trace of one chunk */
  int ahead_failed;    /* could not start it: read synchronously */
  decode_slot *states;
  uint32_t slot_count; /* site count + 1 */
  /* scan mode (mtr_scan_*, memsnap recover): chunks read in order from the header on, and
   * without a usable trailer (`indexed` 0) the index built as they are found and the slots
   * added as records name them */
  int scanning, indexed;
  uint64_t scan_chunk, scan_offset, scan_accesses; /* the next chunk, its offset and index */
  uint64_t chunk_capacity;                         /* entries of `chunks` allocated */
  uint32_t slot_capacity;                          /* entries of `states` allocated */
  char trailer_error[256];                         /* why the trailer was not used */
  /* decoding position in the loaded chunk */
  uint64_t chunk, next_chunk; /* loaded chunk; the one to load next */
  uint32_t records, position, previous_slot;
  uint64_t previous_address;
  const uint8_t *tags, *site_p, *site_end, *address_p, *address_end, *attribute_p, *attribute_end;
} mtr_reader;

/* A bounds-checked cursor over a header or trailer held in memory. */
typedef struct cursor {
  const uint8_t *p, *end;
  int bad;
} cursor;

static const uint8_t *cursor_take(cursor *c, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) {
    c->bad = 1;
    return NULL;
  }
  const uint8_t *p = c->p;
  c->p += n;
  return p;
}
static uint32_t cursor_u32(cursor *c) {
  const uint8_t *p = cursor_take(c, 4);
  return p ? get_u32(p) : 0;
}
static uint64_t cursor_u64(cursor *c) {
  const uint8_t *p = cursor_take(c, 8);
  return p ? get_u64(p) : 0;
}
/* A malloc'd NUL-terminated copy, or NULL for an absent string (or on error: c->bad). */
static char *cursor_string(cursor *c) {
  uint32_t n = cursor_u32(c);
  if (c->bad || n == MTR_NO_STRING) return NULL;
  const uint8_t *p = cursor_take(c, n);
  if (!p) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) {
    c->bad = 2; /* out of memory */
    return NULL;
  }
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

static int truncated(const mtr_reader *r, uint64_t offset) {
  return ms_error_set(MS_ERR_TRUNCATED, "%s: truncated at offset %llu", r->path,
                      (unsigned long long)offset);
}
/* The file lost its end (its header is whole): the chunks before the cut are intact. */
static int truncated_end(const mtr_reader *r, uint64_t offset) {
  return ms_error_set(MS_ERR_TRUNCATED,
                      "%s: truncated at offset %llu (its end is missing; `memsnap recover` "
                      "keeps the intact chunks)",
                      r->path, (unsigned long long)offset);
}
static int corrupt(const mtr_reader *r, uint64_t offset, const char *what) {
  return ms_error_set(MS_ERR_FORMAT, "%s: offset %llu: %s", r->path, (unsigned long long)offset,
                      what);
}
static int chunk_corrupt(const mtr_reader *r, uint64_t chunk, const char *why) {
  if (r->scanning || chunk == 0)
    return ms_error_set(MS_ERR_FORMAT, "%s: offset %llu: chunk %llu corrupt (%s)", r->path,
                        (unsigned long long)r->chunks[chunk].offset, (unsigned long long)chunk,
                        why);
  return ms_error_set(MS_ERR_FORMAT,
                      "%s: offset %llu: chunk %llu corrupt (%s; `memsnap recover` keeps the "
                      "chunks before it)",
                      r->path, (unsigned long long)r->chunks[chunk].offset,
                      (unsigned long long)chunk, why);
}

/* Reads exactly n bytes at offset; a short read is a truncation. pread(): the read-ahead
 * thread reads the same descriptor at the same time. */
static int read_at(const mtr_reader *r, uint64_t offset, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t m = pread(fileno(r->file), (uint8_t *)buf + got, n - got, (off_t)(offset + got));
    if (m < 0 && errno == EINTR) continue;
    if (m < 0) return ms_error_set(MS_ERR_IO, "%s: read failed: %s", r->path, strerror(errno));
    if (m == 0) return truncated(r, offset + got);
    got += (size_t)m;
  }
  return MS_OK;
}

static int read_header(mtr_reader *r, uint32_t *header_bytes_out) {
  uint8_t fixed[16];
  size_t want = r->file_bytes < sizeof fixed ? (size_t)r->file_bytes : sizeof fixed;
  int rc = read_at(r, 0, fixed, want);
  if (rc < 0) return rc;
  size_t magic_seen = want < MTR_MAGIC_BYTES ? want : MTR_MAGIC_BYTES;
  if (memcmp(fixed, MTR_MAGIC, magic_seen) != 0)
    return ms_error_set(MS_ERR_FORMAT, "%s: offset 0: not a memsnap trace (bad magic)", r->path);
  if (want < sizeof fixed) return truncated(r, r->file_bytes);
  r->version = get_u32(fixed + 8);
  if (r->version != MTR_VERSION)
    return ms_error_set(MS_ERR_UNSUPPORTED,
                        "%s: offset 8: .mtr version %u not supported (this "
                        "memsnap reads version %d)",
                        r->path, r->version, MTR_VERSION);
  uint32_t header_bytes = get_u32(fixed + 12);
  if (header_bytes < MTR_MIN_HEADER_BYTES) return corrupt(r, 12, "header size invalid");
  if (header_bytes > r->file_bytes) return truncated(r, r->file_bytes);
  *header_bytes_out = header_bytes;
  uint8_t *header = malloc(header_bytes);
  if (!header) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for the header", r->path);
  rc = read_at(r, 0, header, header_bytes);
  if (rc == 0 && mtr_crc32(header, header_bytes - 4) != get_u32(header + header_bytes - 4))
    rc = corrupt(r, 0, "header corrupt (CRC mismatch)");
  if (rc < 0) {
    free(header);
    return rc;
  }
  ms_stream_info *info = &r->source.info;
  cursor c = {header + 16, header + header_bytes - 4, 0};
  info->flags = cursor_u32(&c);
  cursor_u32(&c); /* reserved */
  info->sample_on = cursor_u64(&c);
  info->sample_off = cursor_u64(&c);
  info->program = cursor_string(&c);
  info->arch = cursor_string(&c);
  info->capture = cursor_string(&c);
  uint32_t argc = cursor_u32(&c);
  if (!c.bad && argc <= (size_t)(c.end - c.p) / 4) {
    info->argv = calloc((size_t)argc + 1, sizeof *info->argv);
    if (!info->argv) c.bad = 2;
    for (uint32_t i = 0; i < argc && !c.bad; i++) {
      info->argv[i] = cursor_string(&c);
      info->argc = (int)i + 1;
      if (!info->argv[i] && !c.bad) info->argv[i] = strdup(""); /* argv has no NULL holes */
      if (!info->argv[i]) c.bad = c.bad ? c.bad : 2;
    }
  } else {
    c.bad = 1;
  }
  free(header);
  if (c.bad == 2) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for the header", r->path);
  if (c.bad) return corrupt(r, 16, "header fields overrun the header");
  return MS_OK;
}

/* The data objects' block between the site table and the chunk index, if any
 * (docs/formats.md): `MSOB`, u64 raw bytes, u64 compressed bytes, one zstd frame of u64
 * count and the events; `c` spans exactly the block. Traces written before it existed
 * have none. */
static int parse_objects(mtr_reader *r, cursor *c) {
  uint64_t at = r->trailer_offset;
  const uint8_t *magic = cursor_take(c, 4);
  uint64_t raw_bytes = cursor_u64(c), compressed_bytes = cursor_u64(c);
  const uint8_t *frame = !c->bad && compressed_bytes <= (size_t)(c->end - c->p)
                             ? cursor_take(c, (size_t)compressed_bytes)
                             : NULL;
  if (!magic || memcmp(magic, MTR_OBJECTS_MAGIC, 4) != 0 || !frame || c->p != c->end ||
      raw_bytes < 8 || raw_bytes > 1000 * compressed_bytes + 4096)
    return corrupt(r, at, "trailer corrupt (data objects block)");
  uint8_t *raw = malloc((size_t)raw_bytes);
  if (!raw) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for the objects", r->path);
  size_t got = ZSTD_decompress(raw, (size_t)raw_bytes, frame, (size_t)compressed_bytes);
  if (ZSTD_isError(got) || got != raw_bytes) {
    free(raw);
    return corrupt(r, at, "trailer corrupt (data objects: bad frame)");
  }
  ms_stream_info *info = &r->source.info;
  cursor e = {raw, raw + raw_bytes, 0};
  uint64_t count = cursor_u64(&e);
  /* an event takes at least 40 bytes */
  if (count > raw_bytes / 40 || !(info->objects = ms_object_table_new())) {
    free(raw);
    return count > raw_bytes / 40 ? corrupt(r, at, "trailer corrupt (data objects count)")
                                  : ms_error_set(MS_ERR_NOMEM, "%s: out of memory", r->path);
  }
  uint32_t site_count = ms_site_table_count(info->sites);
  int bad = 0;
  for (uint64_t i = 0; i < count && !e.bad && !bad; i++) {
    ms_object_event event = {0};
    event.index = cursor_u64(&e);
    event.address = cursor_u64(&e);
    event.size = cursor_u64(&e);
    event.site = cursor_u32(&e);
    const uint8_t *tail = cursor_take(&e, 4);
    char *name = cursor_string(&e), *object = cursor_string(&e);
    if (tail) {
      event.thread = (uint16_t)(tail[0] | tail[1] << 8);
      event.kind = tail[2];
      event.freed = tail[3];
    }
    event.name = name;
    event.object = object;
    if (!e.bad && ((event.site != MS_SITE_NONE && event.site >= site_count) ||
                   event.index > r->access_count || event.freed > 1 ||
                   ms_object_table_add(info->objects, &event) < 0))
      bad = 1;
    free(name);
    free(object);
  }
  int oom = e.bad == 2;
  if (!e.bad && e.p != e.end) bad = 1;
  free(raw);
  if (oom) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for the objects", r->path);
  if (bad || e.bad) return corrupt(r, at, "trailer corrupt (data objects)");
  return MS_OK;
}

static int parse_trailer(mtr_reader *r, const uint8_t *trailer, size_t size,
                         uint32_t header_bytes) {
  uint64_t at = r->trailer_offset;
  if (size < MTR_MIN_TRAILER_BYTES || memcmp(trailer, MTR_TRAILER_MAGIC, 4) != 0)
    return corrupt(r, at, "trailer corrupt (bad magic)");
  if (mtr_crc32(trailer, size - 4) != get_u32(trailer + size - 4))
    return corrupt(r, at, "trailer corrupt (CRC mismatch)");
  ms_stream_info *info = &r->source.info;
  cursor c = {trailer + 4, trailer + size - 4, 0};
  info->thread_count = cursor_u32(&c);
  info->flags = cursor_u32(&c);
  info->exit_status = (int)cursor_u32(&c);
  r->access_count = info->access_count = cursor_u64(&c);
  uint64_t sum = 0;
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++)
    sum += r->counts_by_kind[k] = cursor_u64(&c);
  r->chunk_count = cursor_u64(&c);
  uint32_t site_count = cursor_u32(&c);
  if (sum != r->access_count) return corrupt(r, at, "trailer corrupt (counts disagree)");
  uint64_t raw_bytes = cursor_u64(&c), compressed_bytes = cursor_u64(&c);
  const uint8_t *frame =
      compressed_bytes <= (size_t)(c.end - c.p) ? cursor_take(&c, (size_t)compressed_bytes) : NULL;
  /* bound the allocation: a site takes at least 24 bytes, zstd rarely beats 1000:1 here */
  if (!frame || raw_bytes < 24ull * site_count || raw_bytes > 1000 * compressed_bytes + 4096)
    return corrupt(r, at, "trailer corrupt (site table size)");
  uint8_t *raw = malloc((size_t)raw_bytes + 1);
  if (!raw) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for the sites", r->path);
  size_t got = ZSTD_decompress(raw, (size_t)raw_bytes, frame, (size_t)compressed_bytes);
  if (ZSTD_isError(got) || got != raw_bytes) {
    free(raw);
    char why[160];
    snprintf(why, sizeof why, "trailer corrupt (site table: %s)",
             ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size differs");
    return corrupt(r, at, why);
  }
  cursor sites = {raw, raw + raw_bytes, 0};
  for (uint32_t id = 0; id < site_count && !sites.bad; id++) {
    uint64_t pc = cursor_u64(&sites);
    char *object = cursor_string(&sites), *function = cursor_string(&sites),
         *file = cursor_string(&sites);
    uint32_t line = cursor_u32(&sites);
    if (!sites.bad && ms_site_table_add(info->sites, pc, object, function, file, line) < 0)
      sites.bad = 2;
    free(object);
    free(function);
    free(file);
  }
  if (!sites.bad && sites.p != sites.end) sites.bad = 1;
  free(raw);
  if (sites.bad == 2)
    c.bad = 2;
  else if (sites.bad)
    return corrupt(r, at, "trailer corrupt (site table overrun)");
  if (c.bad == 2) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for the sites", r->path);
  if (c.bad || r->chunk_count > (uint64_t)(c.end - c.p) / 16)
    return corrupt(r, at, "trailer corrupt (chunk index overrun)");
  /* the data objects' block, when the chunk index is not all that is left */
  if ((uint64_t)(c.end - c.p) != r->chunk_count * 16) {
    cursor objects = {c.p, c.end - r->chunk_count * 16, 0};
    int rc = parse_objects(r, &objects);
    if (rc < 0) return rc;
    c.p = objects.end;
  }
  r->chunks = malloc((r->chunk_count + 1) * sizeof *r->chunks);
  if (!r->chunks) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for the index", r->path);
  for (uint64_t k = 0; k < r->chunk_count; k++) {
    r->chunks[k].offset = cursor_u64(&c);
    r->chunks[k].first_index = cursor_u64(&c);
  }
  /* a sentinel entry: the end of the last chunk */
  r->chunks[r->chunk_count] = (chunk_entry){r->trailer_offset, r->access_count};
  for (uint64_t k = 0; k < r->chunk_count; k++) {
    const chunk_entry *e = &r->chunks[k], *next = e + 1;
    int offset_ok = k == 0 ? e->offset == header_bytes : e->offset > e[-1].offset;
    int index_ok = k == 0 ? e->first_index == 0 : e->first_index > e[-1].first_index;
    if (!offset_ok || !index_ok || next->offset < e->offset + MTR_CHUNK_HEADER_BYTES ||
        next->first_index <= e->first_index ||
        next->first_index - e->first_index > MTR_MAX_CHUNK_RECORDS)
      return corrupt(r, at, "trailer corrupt (chunk index inconsistent)");
  }
  if (r->chunk_count == 0 && (r->access_count != 0 || r->trailer_offset != header_bytes))
    return corrupt(r, at, "trailer corrupt (no chunks)");
  r->slot_count = site_count + 1;
  return MS_OK;
}

static int read_trailer(mtr_reader *r, uint32_t header_bytes) {
  if (r->file_bytes < (uint64_t)header_bytes + MTR_FOOTER_BYTES)
    return r->file_bytes == header_bytes ? truncated(r, r->file_bytes)
                                         : truncated_end(r, r->file_bytes);
  uint8_t footer[MTR_FOOTER_BYTES];
  uint64_t footer_offset = r->file_bytes - MTR_FOOTER_BYTES;
  int rc = read_at(r, footer_offset, footer, sizeof footer);
  if (rc < 0) return rc;
  /* a file cut anywhere loses its footer: that is how truncation is detected */
  if (memcmp(footer + 16, MTR_FOOTER_MAGIC, 8) != 0) return truncated_end(r, r->file_bytes);
  r->trailer_offset = get_u64(footer);
  uint64_t trailer_bytes = get_u64(footer + 8);
  if (r->trailer_offset < header_bytes || r->trailer_offset > footer_offset ||
      trailer_bytes != footer_offset - r->trailer_offset)
    return corrupt(r, footer_offset, "footer corrupt (trailer position)");
  uint8_t *trailer = malloc(trailer_bytes ? trailer_bytes : 1);
  if (!trailer) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for the trailer", r->path);
  rc = read_at(r, r->trailer_offset, trailer, trailer_bytes);
  if (rc == 0) rc = parse_trailer(r, trailer, trailer_bytes, header_bytes);
  free(trailer);
  return rc;
}

static void decode_slots_reset(decode_slot *states, uint32_t slot_count) {
  for (uint32_t slot = 0; slot < slot_count; slot++) {
    mtr_slot_state initial = mtr_slot_initial(slot);
    states[slot] = (decode_slot){.tail = initial.tail, .next = &states[slot]};
  }
}

/* Decompresses one frame of chunk k, which must give exactly `size` bytes. */
static int decompress_frame(const mtr_reader *r, ZSTD_DCtx *dctx, uint64_t k, uint8_t *out,
                            size_t size, const uint8_t *frame, size_t frame_bytes) {
  size_t got = ZSTD_decompressDCtx(dctx, out, size, frame, frame_bytes);
  if (ZSTD_isError(got)) {
    char why[128];
    snprintf(why, sizeof why, "zstd: %s", ZSTD_getErrorName(got));
    return chunk_corrupt(r, k, why);
  }
  if (got != size) return chunk_corrupt(r, k, "decoded size differs from its header");
  return MS_OK;
}

/* Reads chunk k into `bytes`: header checks, both frames decompressed, tags checked. Reads
 * only what open() set (path, index, descriptor), so the read-ahead thread may run it. */
static int fetch_chunk(const mtr_reader *r, ZSTD_DCtx *dctx, uint64_t k, chunk_bytes *bytes) {
  const chunk_entry *e = &r->chunks[k];
  uint8_t h[MTR_CHUNK_HEADER_BYTES];
  int rc = read_at(r, e->offset, h, sizeof h);
  if (rc < 0) return rc;
  if (memcmp(h, MTR_CHUNK_MAGIC, 4) != 0) return chunk_corrupt(r, k, "bad chunk magic");
  if (mtr_crc32(h, 36) != get_u32(h + 36)) return chunk_corrupt(r, k, "header CRC mismatch");
  uint32_t records = get_u32(h + 4);
  uint64_t compressed = get_u32(h + 16), address_compressed = get_u32(h + 32);
  uint64_t site_bytes = get_u32(h + 20), address_bytes = get_u32(h + 24),
           attribute_bytes = get_u32(h + 28);
  if (get_u64(h + 8) != e->first_index || records != e[1].first_index - e->first_index ||
      compressed + address_compressed != e[1].offset - e->offset - MTR_CHUNK_HEADER_BYTES ||
      site_bytes > 5ull * records || address_bytes > 8ull * records ||
      attribute_bytes > 4ull * records)
    return chunk_corrupt(r, k, "header disagrees with the index");
  size_t frames = compressed + address_compressed;
  size_t columns = records + site_bytes + attribute_bytes; /* the first frame's bytes */
  size_t payload_bytes = columns + address_bytes;
  if (frames > bytes->compressed_capacity) {
    uint8_t *p = realloc(bytes->compressed, frames);
    if (!p) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for a chunk", r->path);
    bytes->compressed = p;
    bytes->compressed_capacity = frames;
  }
  if (payload_bytes + 8 > bytes->payload_capacity) {
    uint8_t *p = realloc(bytes->payload, payload_bytes + 8); /* + 8: the decoder's 8-byte loads */
    if (!p) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for a chunk", r->path);
    bytes->payload = p;
    bytes->payload_capacity = payload_bytes + 8;
  }
  rc = read_at(r, e->offset + MTR_CHUNK_HEADER_BYTES, bytes->compressed, frames);
  if (rc < 0) return rc;
  rc = decompress_frame(r, dctx, k, bytes->payload, columns, bytes->compressed, compressed);
  if (rc == 0)
    rc = decompress_frame(r, dctx, k, bytes->payload + columns, address_bytes,
                          bytes->compressed + compressed, address_compressed);
  if (rc < 0) return rc;
  memset(bytes->payload + payload_bytes, 0, 8);
  if (mtr_tags_invalid(bytes->payload, records)) return chunk_corrupt(r, k, "bad record tag");
  bytes->records = records;
  bytes->site_bytes = site_bytes;
  bytes->address_bytes = address_bytes;
  bytes->attribute_bytes = attribute_bytes;
  return MS_OK;
}

static void chunk_bytes_free(chunk_bytes *bytes) {
  free(bytes->compressed);
  free(bytes->payload);
}

static void *read_ahead_main(void *arg) {
  mtr_reader *r = arg;
  read_ahead *a = r->ahead;
  pthread_mutex_lock(&a->lock);
  for (;;) {
    while (!a->stop && !a->pending)
      pthread_cond_wait(&a->wake, &a->lock);
    if (a->stop) break;
    uint64_t k = a->wanted;
    pthread_mutex_unlock(&a->lock);
    int rc = fetch_chunk(r, a->dctx, k, &a->bytes);
    pthread_mutex_lock(&a->lock);
    a->status = rc;
    if (rc < 0) snprintf(a->error, sizeof a->error, "%s", ms_error_message());
    a->ready = (int64_t)k;
    a->pending = 0;
    pthread_cond_signal(&a->done);
  }
  pthread_mutex_unlock(&a->lock);
  return NULL;
}

/* Starts the read-ahead thread; on any failure the reader just reads synchronously. */
static void read_ahead_start(mtr_reader *r) {
  read_ahead *a = calloc(1, sizeof *a);
  if (!a || !(a->dctx = ZSTD_createDCtx())) {
    free(a);
    r->ahead_failed = 1;
    return;
  }
  a->ready = -1;
  pthread_mutex_init(&a->lock, NULL);
  pthread_cond_init(&a->wake, NULL);
  pthread_cond_init(&a->done, NULL);
  r->ahead = a;
  if (pthread_create(&a->thread, NULL, read_ahead_main, r) != 0) {
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->wake);
    pthread_cond_destroy(&a->done);
    ZSTD_freeDCtx(a->dctx);
    free(a);
    r->ahead = NULL;
    r->ahead_failed = 1;
  }
}

static void read_ahead_stop(mtr_reader *r) {
  read_ahead *a = r->ahead;
  if (!a) return;
  pthread_mutex_lock(&a->lock);
  a->stop = 1;
  pthread_cond_signal(&a->wake);
  pthread_mutex_unlock(&a->lock);
  pthread_join(a->thread, NULL);
  pthread_mutex_destroy(&a->lock);
  pthread_cond_destroy(&a->wake);
  pthread_cond_destroy(&a->done);
  ZSTD_freeDCtx(a->dctx);
  chunk_bytes_free(&a->bytes);
  free(a);
  r->ahead = NULL;
}

/* If chunk k was read ahead, swaps its bytes in as the current chunk and returns 1 with its
 * status in *rc; else 0. Waits for a read-ahead in progress. */
static int read_ahead_take(mtr_reader *r, uint64_t k, int *rc) {
  read_ahead *a = r->ahead;
  pthread_mutex_lock(&a->lock);
  while (a->pending)
    pthread_cond_wait(&a->done, &a->lock);
  int taken = a->ready == (int64_t)k;
  if (taken) {
    chunk_bytes spare = r->current;
    r->current = a->bytes;
    a->bytes = spare;
    a->ready = -1;
    *rc = a->status;
    if (a->status < 0) ms_error_set(a->status, "%s", a->error);
  }
  pthread_mutex_unlock(&a->lock);
  return taken;
}

static void read_ahead_ask(mtr_reader *r, uint64_t k) {
  read_ahead *a = r->ahead;
  pthread_mutex_lock(&a->lock);
  a->wanted = k;
  a->ready = -1;
  a->pending = 1;
  pthread_cond_signal(&a->wake);
  pthread_mutex_unlock(&a->lock);
}

/* Loads chunk k (read ahead, or read now) and points the column cursors at its bytes; asks
 * for chunk k + 1 to be read ahead. */
static int load_chunk(mtr_reader *r, uint64_t k) {
  int rc;
  if (!r->ahead && !r->ahead_failed && r->chunk_count > 1) read_ahead_start(r);
  if (!r->ahead || !read_ahead_take(r, k, &rc)) rc = fetch_chunk(r, r->dctx, k, &r->current);
  if (rc < 0) return rc; /* the state stays: the next call fails the same way */
  if (r->ahead && k + 1 < r->chunk_count) read_ahead_ask(r, k + 1);
  const chunk_bytes *c = &r->current;
  r->chunk = k;
  r->next_chunk = k + 1;
  r->records = c->records;
  r->position = 0;
  r->previous_slot = 0;
  r->previous_address = 0;
  r->tags = c->payload;
  r->site_p = r->tags + c->records;
  r->site_end = r->attribute_p = r->site_p + c->site_bytes;
  r->attribute_end = r->address_p = r->attribute_p + c->attribute_bytes;
  r->address_end = r->address_p + c->address_bytes;
  decode_slots_reset(r->states, r->slot_count);
  return MS_OK;
}

/* The state update of docs/formats.md after a record at `address`: mtr_slot_learn() on the
 * decoder's state. */
static inline void decode_slot_learn(decode_slot *s, uint64_t address, uint64_t previous_address,
                                     int miss) {
  if (miss) {
    uint64_t own = address - s->last_address, from = address - previous_address;
    if (own == s->last_address - s->own_base) {
      s->stride = own;
      s->from_previous = 0;
    } else if (from == s->last_address - s->from_base) {
      s->stride = from;
      s->from_previous = 1;
    }
  }
  s->own_base = s->last_address;
  s->from_base = previous_address;
  s->last_address = address;
}

/* Scan mode without a trailer: the site table is lost with it, so a slot is known only when
 * a record names it. Makes room for slots up to `slot` (a placeholder site each: no pc, no
 * object or location, the function "[lost site N]") and returns the states, moved (their `next`
 * pointers with them), or NULL beyond MTR_SCAN_MAX_SLOTS or out of memory. Off the decoding loop's
 * path. */
static __attribute__((noinline)) decode_slot *scan_add_slots(mtr_reader *r, uint32_t slot) {
  if (slot >= MTR_SCAN_MAX_SLOTS) return NULL;
  if (slot >= r->slot_capacity) {
    uint32_t capacity = r->slot_capacity ? r->slot_capacity : 256;
    while (capacity <= slot)
      capacity *= 2;
    decode_slot *states = malloc((size_t)capacity * sizeof *states);
    if (!states) return NULL;
    for (uint32_t s = 0; s < r->slot_count; s++) {
      states[s] = r->states[s];
      states[s].next = states + (r->states[s].next - r->states);
    }
    free(r->states);
    r->states = states;
    r->slot_capacity = capacity;
  }
  for (uint32_t s = r->slot_count; s <= slot; s++) {
    mtr_slot_state initial = mtr_slot_initial(s);
    r->states[s] = (decode_slot){.tail = initial.tail, .next = &r->states[s]};
    char name[32]; /* what reports print for the site: not a symbol, and one per site */
    snprintf(name, sizeof name, "[lost site %u]", s - 1);
    if (ms_site_table_add(r->source.info.sites, 0, NULL, name, NULL, 0) < 0) return NULL;
    r->slot_count = s + 1;
  }
  return r->states;
}

/* Decodes n records of the loaded chunk into out (the mirror of the writer's encoder). Each
 * record's state is the previous one's `next` (a chain of loads) unless the tag says
 * otherwise; the site and attribute cursors, used on misses only, stay in the reader, so
 * that gcc keeps the chain in registers. A tag of 0 (site, address and attributes all
 * predicted: 89 % of linked_list's records, 98 % of gather's and matmul's, in their first
 * three chunks) takes a path of its own, 20 instructions with one test of the tag instead
 * of three (measured with decode_slot above). An address delta is one unaligned 8-byte load
 * masked to the width the tag gives (the payload has 8 bytes of slack after its end). */
static int decode_records(mtr_reader *r, ms_access *out, uint32_t n) {
  decode_slot *states = r->states;
  decode_slot *s = &states[r->previous_slot];
  uint64_t previous_address = r->previous_address;
  const uint8_t *tag_p = r->tags + r->position, *tag_end = tag_p + n;
  const uint8_t *address_p = r->address_p;
  const char *error = NULL;
  for (; tag_p < tag_end; tag_p++, out++) {
    uint8_t tag = *tag_p; /* checked by load_chunk() */
    uint64_t address;
    if (__builtin_expect(tag == 0, 1)) {
      s = s->next;
      address = (s->from_previous ? previous_address : s->last_address) + s->stride;
      decode_slot_learn(s, address, previous_address, 0);
      previous_address = address;
      memcpy(&out->address, &address, 8);
      memcpy(&out->site, &s->tail, 8); /* site, thread, size, kind */
      continue;
    }
    if (tag & MTR_SITE_MISS) {
      uint32_t previous = (uint32_t)(s - states);
      uint64_t v;
      if (varint_get(&r->site_p, r->site_end, &v) < 0) {
        error = "site column overrun";
        break;
      }
      uint32_t slot = previous + (uint32_t)zigzag_decode(v);
      if (slot >= r->slot_count) {
        decode_slot *grown = r->scanning && !r->indexed ? scan_add_slots(r, slot) : NULL;
        if (!grown) {
          error = r->scanning && !r->indexed ? "too many sites" : "site out of range";
          break;
        }
        s = grown + previous;
        states = grown;
      }
      s->next = &states[slot];
    }
    s = s->next;
    int miss = tag & MTR_ADDRESS_MISS;
    if (miss) {
      unsigned width = ((tag >> MTR_WIDTH_SHIFT) & 7) + 1;
      if (width > (size_t)(r->address_end - address_p)) {
        error = "address column overrun";
        break;
      }
      uint64_t stored = get_u64(address_p) & (UINT64_MAX >> (64 - 8 * width));
      address_p += width;
      uint64_t base = tag & MTR_FROM_PREVIOUS ? previous_address : s->last_address;
      address = base + zigzag_decode(stored);
    } else {
      address = (s->from_previous ? previous_address : s->last_address) + s->stride;
    }
    decode_slot_learn(s, address, previous_address, miss);
    previous_address = address;
    if (tag & MTR_ATTRIBUTES_CHANGE) {
      const uint8_t *p = r->attribute_p;
      if (r->attribute_end - p < 4) {
        error = "attribute column overrun";
        break;
      }
      if (p[0] >= MS_ACCESS_KIND_COUNT) {
        error = "bad access kind";
        break;
      }
      ms_access attributes = {
          .site = (uint32_t)(s - states) - 1, .thread = get_u16(p + 2), .size = p[1], .kind = p[0]};
      s->tail = mtr_access_tail(&attributes);
      r->attribute_p = p + 4;
    }
    memcpy(&out->address, &address, 8);
    memcpy(&out->site, &s->tail, 8);
  }
  r->address_p = address_p;
  r->previous_slot = (uint32_t)(s - states);
  r->previous_address = previous_address;
  r->position = (uint32_t)(tag_p - r->tags);
  if (error) return chunk_corrupt(r, r->chunk, error);
  if (r->position == r->records && (r->site_p != r->site_end || address_p != r->address_end ||
                                    r->attribute_p != r->attribute_end))
    return chunk_corrupt(r, r->chunk, "columns longer than their records");
  return MS_OK;
}

static int reader_next(ms_source *source, ms_batch *batch) {
  mtr_reader *r = (mtr_reader *)source;
  batch->count = 0;
  while (batch->count < batch->capacity) {
    if (r->position == r->records) {
      if (r->next_chunk >= r->chunk_count) break;
      int rc = load_chunk(r, r->next_chunk);
      if (rc < 0) return rc;
    }
    uint32_t n = r->records - r->position;
    if (n > batch->capacity - batch->count) n = (uint32_t)(batch->capacity - batch->count);
    int rc = decode_records(r, batch->accesses + batch->count, n);
    if (rc < 0) return rc;
    batch->count += n;
  }
  return (int)batch->count;
}

static int reader_seek(ms_source *source, uint64_t index) {
  mtr_reader *r = (mtr_reader *)source;
  if (index > r->access_count)
    return ms_error_set(MS_ERR_ARG, "%s: cannot seek to access %llu (the trace has %llu)", r->path,
                        (unsigned long long)index, (unsigned long long)r->access_count);
  r->records = r->position = 0;
  r->next_chunk = r->chunk_count;
  if (index == r->access_count) return MS_OK;
  uint64_t low = 0, high = r->chunk_count; /* last chunk whose first_index <= index */
  while (high - low > 1) {
    uint64_t mid = low + (high - low) / 2;
    if (r->chunks[mid].first_index <= index)
      low = mid;
    else
      high = mid;
  }
  int rc = load_chunk(r, low);
  for (uint64_t skip = index - r->chunks[low].first_index; rc == 0 && skip > 0;) {
    ms_access scratch[256];
    uint32_t n = skip < 256 ? (uint32_t)skip : 256;
    rc = decode_records(r, scratch, n);
    skip -= n;
  }
  if (rc < 0) r->records = r->position = 0;
  return rc;
}

static void reader_destroy(ms_source *source) {
  mtr_reader *r = (mtr_reader *)source;
  read_ahead_stop(r);
  if (r->file) fclose(r->file);
  ZSTD_freeDCtx(r->dctx);
  chunk_bytes_free(&r->current);
  free(r->states);
  free(r->chunks);
  free(r->path);
  ms_stream_info_clear(&r->source.info);
  free(r);
}

static const ms_source_ops mtr_reader_ops = {reader_next, reader_seek, reader_destroy};

/* Scan mode: forgets what a trailer that failed its checks (`status`) had set, back to the
 * header's, and keeps why for the message where the scan meets it. */
static int forget_trailer(mtr_reader *r, int status, uint32_t header_flags) {
  ms_stream_info *info = &r->source.info;
  const char *why = ms_error_message();
  size_t n = strlen(r->path);
  if (!strncmp(why, r->path, n) && !strncmp(why + n, ": ", 2)) why += n + 2;
  if (status == MS_ERR_TRUNCATED)
    snprintf(r->trailer_error, sizeof r->trailer_error,
             "the file ends at offset %llu, before its footer", (unsigned long long)r->file_bytes);
  else
    snprintf(r->trailer_error, sizeof r->trailer_error, "%s", why);
  ms_site_table_free(info->sites);
  info->sites = ms_site_table_new();
  info->flags = header_flags;
  info->thread_count = 0;
  info->exit_status = -1;
  info->access_count = r->access_count = 0;
  memset(r->counts_by_kind, 0, sizeof r->counts_by_kind);
  free(r->chunks);
  r->chunks = NULL;
  r->chunk_count = 0;
  r->slot_count = 1; /* slot 0, no site */
  return info->sites ? MS_OK : ms_error_set(MS_ERR_NOMEM, "out of memory for a .mtr reader");
}

/* Opens and validates everything but the chunks. Scanning: the header only must be valid;
 * the trailer is used if it is (`indexed`). */
static int reader_open_mode(const char *path, int with_decoder, int scanning, mtr_reader **out) {
  *out = NULL;
  mtr_reader *r = calloc(1, sizeof *r);
  if (!r) return ms_error_set(MS_ERR_NOMEM, "out of memory for a .mtr reader");
  r->source.ops = &mtr_reader_ops;
  r->source.info.exit_status = -1;
  r->source.info.sites = ms_site_table_new();
  r->path = strdup(ms_input_name(path));
  if (!r->source.info.sites || !r->path) {
    reader_destroy(&r->source);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for a .mtr reader");
  }
  /* a stream (standard input, a pipe) is copied to a temporary file first: the site table
   * and the chunk index are at the end */
  struct stat st;
  int rc = ms_input_open_seekable(path, &r->file);
  if (rc == 0 && fstat(fileno(r->file), &st) != 0)
    rc = ms_error_set(MS_ERR_IO, "%s: cannot open: %s", r->path, strerror(errno));
  else if (rc == 0 && !S_ISREG(st.st_mode))
    rc = ms_error_set(MS_ERR_IO, "%s: not a regular file (.mtr needs seeking)", r->path);
  uint32_t header_bytes = 0;
  if (rc == 0) {
    r->file_bytes = (uint64_t)st.st_size;
    rc = read_header(r, &header_bytes);
  }
  if (rc == 0) {
    uint32_t header_flags = r->source.info.flags;
    rc = read_trailer(r, header_bytes);
    r->scanning = scanning;
    r->indexed = scanning && rc == 0;
    r->scan_offset = header_bytes;
    if (scanning && rc < 0 && rc != MS_ERR_NOMEM) rc = forget_trailer(r, rc, header_flags);
    if (scanning) r->ahead_failed = 1; /* chunk k + 1 may not be known yet */
  }
  if (rc == 0 && with_decoder) {
    r->dctx = ZSTD_createDCtx();
    r->states = malloc((size_t)r->slot_count * sizeof *r->states);
    r->slot_capacity = r->slot_count;
    if (!r->dctx || !r->states)
      rc = ms_error_set(MS_ERR_NOMEM, "%s: out of memory", path);
    else
      decode_slots_reset(r->states, r->slot_count);
  }
  if (rc < 0) {
    reader_destroy(&r->source);
    return rc;
  }
  *out = r;
  return MS_OK;
}

static int reader_open(const char *path, int with_decoder, mtr_reader **out) {
  return reader_open_mode(path, with_decoder, 0, out);
}

int ms_mtr_open(const char *path, ms_source **out) {
  mtr_reader *r;
  int rc = reader_open(path, 1, &r);
  *out = rc == 0 ? &r->source : NULL;
  return rc;
}

int ms_mtr_stat_file(const char *path, ms_mtr_stat *stat, ms_stream_info *info) {
  mtr_reader *r;
  int rc = reader_open(path, 0, &r);
  if (rc < 0) return rc;
  if (stat) {
    memset(stat, 0, sizeof *stat);
    stat->version = r->version;
    stat->access_count = r->access_count;
    stat->chunk_count = r->chunk_count;
    stat->file_bytes = r->file_bytes;
    memcpy(stat->counts_by_kind, r->counts_by_kind, sizeof stat->counts_by_kind);
    stat->truncated = (r->source.info.flags & MS_STREAM_TRUNCATED) != 0;
  }
  if (info) {
    *info = r->source.info; /* ownership moves to the caller */
    memset(&r->source.info, 0, sizeof r->source.info);
  }
  reader_destroy(&r->source);
  return MS_OK;
}

/* ---- Scan mode (mtr_internal.h) ------------------------------------------------------- */

int mtr_scan_open(const char *path, mtr_reader **out) { return reader_open_mode(path, 1, 1, out); }

ms_source *mtr_scan_source(mtr_reader *r) { return &r->source; }
int mtr_scan_indexed(const mtr_reader *r) { return r->indexed; }
const char *mtr_scan_trailer_error(const mtr_reader *r) { return r->trailer_error; }
uint64_t mtr_scan_offset(const mtr_reader *r) { return r->scan_offset; }
uint64_t mtr_scan_file_bytes(const mtr_reader *r) { return r->file_bytes; }

/* Without an index: the chunk that should start at r->scan_offset, checked as far as its
 * header goes and entered in the index (with the sentinel after it). */
static int scan_find_chunk(mtr_reader *r, uint64_t k) {
  uint64_t at = r->scan_offset;
  if (at == r->file_bytes)
    return ms_error_set(MS_ERR_TRUNCATED,
                        "%s: truncated at offset %llu: the file ends after %s (its trailer "
                        "and footer are missing)",
                        r->path, (unsigned long long)at, k ? "a chunk" : "its header");
  uint8_t h[MTR_CHUNK_HEADER_BYTES];
  size_t n = r->file_bytes - at < sizeof h ? (size_t)(r->file_bytes - at) : sizeof h;
  int rc = read_at(r, at, h, n);
  if (rc < 0) return rc;
  if (n >= 4 && memcmp(h, MTR_TRAILER_MAGIC, 4) == 0) {
    char why[400];
    snprintf(why, sizeof why, "the chunks end here; the trailer after them is damaged (%s)",
             r->trailer_error);
    return corrupt(r, at, why);
  }
  if (n >= 4 && memcmp(h, MTR_CHUNK_MAGIC, 4) != 0) return corrupt(r, at, "bad chunk magic");
  if (n < sizeof h) return truncated(r, r->file_bytes); /* in a chunk header */
  if (mtr_crc32(h, 36) != get_u32(h + 36)) return corrupt(r, at, "chunk header CRC mismatch");
  uint32_t records = get_u32(h + 4);
  uint64_t frames = (uint64_t)get_u32(h + 16) + get_u32(h + 32);
  if (records == 0 || records > MTR_MAX_CHUNK_RECORDS || get_u64(h + 8) != r->scan_accesses)
    return corrupt(r, at, "chunk header out of sequence");
  if (frames > r->file_bytes - at - sizeof h) return truncated(r, r->file_bytes);
  if (k + 2 > r->chunk_capacity) {
    uint64_t capacity = r->chunk_capacity ? r->chunk_capacity * 2 : 64;
    chunk_entry *chunks = realloc(r->chunks, capacity * sizeof *chunks);
    if (!chunks) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for the index", r->path);
    r->chunks = chunks;
    r->chunk_capacity = capacity;
  }
  r->chunks[k] = (chunk_entry){at, r->scan_accesses};
  r->chunks[k + 1] = (chunk_entry){at + sizeof h + frames, r->scan_accesses + records};
  r->chunk_count = k + 1;
  return MS_OK;
}

int mtr_scan_next(mtr_reader *r, ms_batch *batch) {
  batch->count = 0;
  uint64_t k = r->scan_chunk;
  int rc = MS_OK;
  if (r->indexed && k == r->chunk_count) return 0; /* the trailer: the end */
  if (!r->indexed) rc = scan_find_chunk(r, k);
  if (rc < 0) return rc;
  size_t records = (size_t)(r->chunks[k + 1].first_index - r->chunks[k].first_index);
  if (records > batch->capacity) {
    ms_access *accesses = realloc(batch->accesses, records * sizeof *accesses);
    if (!accesses) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory for a chunk", r->path);
    batch->accesses = accesses;
    batch->capacity = records;
  }
  rc = load_chunk(r, k);
  if (rc == 0) rc = decode_records(r, batch->accesses, r->records);
  if (rc < 0) return rc;
  batch->count = records;
  r->scan_chunk = k + 1;
  r->scan_offset = r->chunks[k + 1].offset;
  r->scan_accesses = r->chunks[k + 1].first_index;
  return 1;
}

void mtr_scan_close(mtr_reader *r) {
  if (r) reader_destroy(&r->source);
}

/* The .psnap text format (docs/formats.md, "The .psnap profile"): freeing a profile, what
 * its writer and parsers share, and loading a profile from memory or a file, plain or
 * compressed.
 *
 * Version 2 (written): a header of `key value` lines, then one line per site
 * (`s24 store 8 x100000 @0x4af0010 +8^99999 at stream_add.c:16 pc=0x1090e9 in main`,
 * defaults left out: thread 0, the class the pattern suggests, files relative to a
 * `source-dir` header line), indented continuation lines for lossy and lossless sites,
 * then one line per thread with its order. Version 1 (one `key value` line per field of
 * a site, blocks per site and thread) is still read.
 * Compressed profiles: the whole text through zstd (told by the zstd magic), decompressed
 * as a stream into at most MS_PSNAP_MAX_TEXT bytes: the frame header's size is not trusted.
 *
 * Files: profile_write.c writes; profile_parse.c parses version 2 and what both versions
 * share, profile_legacy.c version 1's blocks, both with the line reader of
 * profile_reader.c; profile_addresses.c encodes and decodes the addresses of lossless
 * sites. They share profile_internal.h.
 */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "memsnap/error.h"
#include "memsnap/input.h"
#include "memsnap/psnap.h"
#include "profile_internal.h"

void ms_psnap_profile_free(ms_psnap_profile *profile) {
  for (uint32_t i = 0; i < profile->site_count; i++) {
    ms_expr_free(&profile->sites[i].pattern);
    free(profile->sites[i].addresses);
    free(profile->sites[i].histogram);
  }
  free(profile->sites);
  for (uint32_t t = 0; t < profile->thread_count; t++) {
    ms_psnap_thread_order *order = &profile->threads[t];
    ms_expr_free(&order->order);
    free(order->transition_from);
    free(order->transition_to);
    free(order->transition_times);
    free(order->transition_period);
    free(order->moves);
  }
  free(profile->threads);
  free(profile->selection);
  free(profile->excluded_object);
  ms_stream_info_clear(&profile->info);
  memset(profile, 0, sizeof *profile);
}

int profile_ensure_histogram(ms_psnap_site *site) {
  if (!site->histogram && !(site->histogram = calloc(MS_PSNAP_SEGMENTS, sizeof *site->histogram)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  return 0;
}

/* The class a site's storage and pattern suggest; written only when the site's differs:
 * a single stride (or none) is constant, any other exact pattern a simple repeat, a site
 * without a pattern undesignated. */
ms_stride_class profile_default_class(const ms_psnap_site *site) {
  const ms_expr *e = &site->pattern;
  if (site->lossy || site->addresses) return MS_STRIDE_UNDESIGNATED;
  if (!e->finished || e->nodes == NULL) return MS_STRIDE_CONSTANT;
  const ms_expr_node *root = &e->nodes[e->root];
  if (root->count == 0) return MS_STRIDE_CONSTANT;
  if (root->count == 1 && e->nodes[e->children[root->first]].count == 0) return MS_STRIDE_CONSTANT;
  return MS_STRIDE_SIMPLE_REPEAT;
}

static int is_zstd(const void *data, size_t size) {
  static const uint8_t magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
  return size >= 4 && memcmp(data, magic, 4) == 0;
}

/* Decompresses zstd frames (any number, streamed: the frame header's size is not
 * trusted) into a malloc'ed buffer of at most `limit` bytes. */
static int decompress(const void *data, size_t size, const char *name, size_t limit, char **text,
                      size_t *text_size) {
  if (limit == 0 || limit >= SIZE_MAX / 2) /* the buffer doubles up to limit + 1 bytes */
    return ms_error_set(MS_ERR_ARG, "%s: decompression limit %zu out of range", name, limit);
  ZSTD_DStream *stream = ZSTD_createDStream();
  size_t capacity = size * 4 < (1u << 16) ? 1u << 16 : size * 4;
  if (capacity > limit + 1) capacity = limit + 1;
  char *buffer = malloc(capacity);
  if (!stream || !buffer) {
    ZSTD_freeDStream(stream);
    free(buffer);
    return ms_error_set(MS_ERR_NOMEM, "%s: out of memory", name);
  }
  ZSTD_inBuffer in = {data, size, 0};
  ZSTD_outBuffer out = {buffer, capacity, 0};
  size_t left = 1;
  int rc = 0;
  while (rc == 0 && (in.pos < in.size || out.pos == out.size)) {
    if (out.pos == out.size) {
      if (capacity > limit) { /* capacity == out.size, which zstd reads but never writes */
        rc = ms_error_set(MS_ERR_FORMAT,
                          "%s: decompresses to more than %zu MiB, the limit of a profile", name,
                          limit >> 20);
        break;
      }
      size_t bigger_size = capacity * 2 > limit + 1 ? limit + 1 : capacity * 2;
      char *bigger = realloc(buffer, bigger_size);
      if (!bigger) {
        rc = ms_error_set(MS_ERR_NOMEM, "%s: out of memory", name);
        break;
      }
      buffer = bigger;
      out.dst = buffer;
      out.size = capacity = bigger_size;
    }
    size_t before_in = in.pos, before_out = out.pos;
    left = ZSTD_decompressStream(stream, &out, &in);
    if (ZSTD_isError(left))
      rc = ms_error_set(MS_ERR_FORMAT, "%s: offset %zu: corrupt zstd data: %s", name, in.pos,
                        ZSTD_getErrorName(left));
    else if (in.pos == before_in && out.pos == before_out && out.pos < out.size)
      break; /* no progress: the input ends inside a frame */
  }
  ZSTD_freeDStream(stream);
  if (rc == 0 && left != 0)
    rc = ms_error_set(MS_ERR_FORMAT, "%s: offset %zu: truncated zstd data", name, in.pos);
  if (rc < 0) {
    free(buffer);
    return rc;
  }
  *text = buffer;
  *text_size = out.pos;
  return 0;
}

int ms_psnap_profile_parse(const char *text, size_t size, const char *name, ms_psnap_profile *out) {
  if (!is_zstd(text, size)) return profile_parse_text(text, size, name, out);
  memset(out, 0, sizeof *out);
  char *plain = NULL;
  size_t plain_size = 0;
  int rc = decompress(text, size, name, MS_PSNAP_MAX_TEXT, &plain, &plain_size);
  if (rc < 0) return rc;
  rc = profile_parse_text(plain, plain_size, name, out);
  free(plain);
  return rc;
}

int ms_psnap_profile_load(const char *path, ms_psnap_profile *out) {
  memset(out, 0, sizeof *out);
  const char *name = ms_input_name(path);
  FILE *file;
  int rc = ms_input_open_seekable(path, &file); /* a stream: copied once, so loaded again */
  if (rc < 0) return rc;
  size_t capacity = 1 << 16, size = 0;
  char *text = malloc(capacity);
  while (text) {
    size += fread(text + size, 1, capacity - size, file);
    if (size < capacity) break;
    char *bigger = realloc(text, capacity * 2);
    if (!bigger) free(text);
    text = bigger;
    capacity *= 2;
  }
  int failed = ferror(file);
  fclose(file);
  if (!text) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory", name);
  if (failed) {
    free(text);
    return ms_error_set(MS_ERR_IO, "%s: read failed", name);
  }
  rc = ms_psnap_profile_parse(text, size, name, out);
  free(text);
  return rc;
}

static int is_magic(const char *head, size_t n) {
  return n >= 8 && (!memcmp(head, PSNAP_MAGIC "\n", 8) || !memcmp(head, PSNAP_MAGIC_1 "\n", 8));
}

/* Compressed bytes read to find the first ones of the text: a zstd frame header (at most
 * 18 bytes) and its first block (at most 128 KiB compressed) give them, whatever the
 * profile's size. */
#define DETECT_MAX_COMPRESSED ((size_t)256 << 10)

/* The first `size` bytes (at most) of a profile's text into `text`, decompressed through
 * zstd when the file is compressed; *n says how many. Negative when the file cannot be
 * read. */
static int peek_text(const char *path, char *text, size_t size, size_t *n) {
  unsigned char head[4];
  size_t got;
  *n = 0;
  int rc = ms_input_peek(path, 0, head, sizeof head, &got);
  if (rc < 0) return rc;
  if (!is_zstd(head, got)) return ms_input_peek(path, 0, text, size, n);
  ZSTD_DStream *stream = ZSTD_createDStream();
  unsigned char *piece = malloc(16384);
  ZSTD_outBuffer out = {text, size, 0};
  uint64_t offset = 0;
  while (stream && piece && out.pos < out.size && offset < DETECT_MAX_COMPRESSED) {
    if (ms_input_peek(path, offset, piece, 16384, &got) < 0 || got == 0) break;
    ZSTD_inBuffer in = {piece, got, 0};
    size_t left = 1;
    while (in.pos < in.size && out.pos < out.size && !ZSTD_isError(left))
      left = ZSTD_decompressStream(stream, &out, &in);
    if (ZSTD_isError(left) || got < 16384) break;
    offset += got;
  }
  int failed = !stream || !piece;
  ZSTD_freeDStream(stream);
  free(piece);
  *n = out.pos;
  return failed ? ms_error_set(MS_ERR_NOMEM, "out of memory") : 0;
}

int ms_psnap_detect(const char *path) {
  char text[8];
  size_t n;
  return peek_text(path, text, sizeof text, &n) == 0 && is_magic(text, n);
}

/* Text of the header read to find a `rank` line: program, arguments and the few keys
 * before it fit in far less, unless the arguments are very long. */
#define PEEK_TEXT ((size_t)64 << 10)

int ms_psnap_peek_rank(const char *path, uint32_t *rank) {
  char *text = malloc(PEEK_TEXT + 1);
  if (!text) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  size_t n = 0;
  int rc = peek_text(path, text, PEEK_TEXT, &n);
  int found = 0;
  if (rc == 0) {
    text[n] = '\0';
    /* header lines up to `sites`: a `rank R` line */
    for (char *line = text; line && *line && !found;) {
      char *end = strchr(line, '\n');
      if (!end) break; /* a line cut by the peek */
      if (!strncmp(line, "sites ", 6)) break;
      unsigned long long value;
      char tail;
      if (!strncmp(line, "rank ", 5) && sscanf(line + 5, "%llu%c", &value, &tail) == 2 &&
          tail == '\n' && value <= UINT32_MAX)
        *rank = (uint32_t)value, found = 1;
      line = end + 1;
    }
  }
  free(text);
  return rc < 0 ? rc : found;
}

/* DineroIV "din" traces: one reference per line, "LABEL ADDRESS [SIZE]".
 *
 * LABEL 0 is a data read, 1 a data write, 2 an instruction fetch (skipped: memsnap observes
 * data), 3 an escape and 4 a cache flush (both ignored). ADDRESS is hexadecimal, with or
 * without "0x". SIZE, decimal, is optional: without it an access is 4 bytes (DineroIV's
 * default word). Blank lines and lines starting with '#' are ignored. din has no sites and
 * no threads: every access is site MS_SITE_NONE, thread 0. The writer writes a modify as a
 * read then a write of the same address and size, so din -> mtr gives two accesses for it.
 */
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/output.h"
#include "memsnap/trace.h"
#include "text_lines.h"

#define DIN_DEFAULT_SIZE 4

typedef struct din_reader {
  ms_source source;
  text_lines lines;
} din_reader;

static int din_next(ms_source *source, ms_batch *batch) {
  din_reader *r = (din_reader *)source;
  batch->count = 0;
  const char *line;
  size_t length;
  int rc = 0;
  while (batch->count < batch->capacity && (rc = text_lines_next(&r->lines, &line, &length)) > 0) {
    const char *end = line + length, *p = skip_blanks(line, end);
    if (p == end || *p == '#') continue;
    unsigned label = (unsigned char)*p++ - '0';
    const char *after_label = p;
    p = skip_blanks(p, end);
    if (p + 2 <= end && p[0] == '0' && (p[1] | 0x20) == 'x') p += 2;
    uint64_t address;
    uint32_t size = DIN_DEFAULT_SIZE;
    if (label > 4 || p == after_label || parse_hex(&p, end, &address) < 0)
      return text_lines_malformed(&r->lines, "din", line, length);
    const char *before_size = p;
    p = skip_blanks(p, end);
    if (p != end && (p == before_size || parse_decimal(&p, end, &size) < 0 || size == 0 ||
                     skip_blanks(p, end) != end))
      return text_lines_malformed(&r->lines, "din", line, length);
    if (label > 1) continue;
    batch->accesses[batch->count++] = (ms_access){.address = address,
                                                  .site = MS_SITE_NONE,
                                                  .thread = 0,
                                                  .size = (uint8_t)(size > 255 ? 255 : size),
                                                  .kind = (uint8_t)(label ? MS_STORE : MS_LOAD)};
  }
  return rc < 0 ? rc : (int)batch->count;
}

static void din_destroy(ms_source *source) {
  din_reader *r = (din_reader *)source;
  text_lines_close(&r->lines);
  ms_stream_info_clear(&r->source.info);
  free(r);
}

static const ms_source_ops din_ops = {din_next, NULL, din_destroy};

int ms_din_open(const char *path, ms_source **out) {
  *out = NULL;
  din_reader *r = calloc(1, sizeof *r);
  if (!r) return ms_error_set(MS_ERR_NOMEM, "out of memory for a din reader");
  r->source.ops = &din_ops;
  ms_stream_info *info = &r->source.info;
  info->exit_status = -1;
  info->thread_count = 1;
  info->sites = ms_site_table_new();
  info->capture = strdup("din");
  int rc = !info->sites || !info->capture
               ? ms_error_set(MS_ERR_NOMEM, "out of memory for a din reader")
               : text_lines_open(&r->lines, path);
  if (rc < 0) {
    din_destroy(&r->source);
    return rc;
  }
  *out = &r->source;
  return MS_OK;
}

/* Writer: lines are formatted by hand into a 64 KiB buffer (printf per access is ~5x slower). */
typedef struct din_writer {
  ms_sink sink;
  ms_output out;
  char buffer[1 << 16];
  size_t used;
  int failed;
} din_writer;

static int din_flush(din_writer *w) {
  if (w->used && fwrite(w->buffer, 1, w->used, w->out.file) != w->used) {
    w->failed = 1;
    return ms_error_set(MS_ERR_IO, "%s: write failed", output_name(&w->out));
  }
  w->used = 0;
  return MS_OK;
}

static char *format_line(char *p, int label, uint64_t address, unsigned size) {
  static const char hex[] = "0123456789abcdef";
  *p++ = (char)('0' + label);
  *p++ = ' ';
  int shift = 60;
  while (shift > 0 && !(address >> shift))
    shift -= 4;
  for (; shift >= 0; shift -= 4)
    *p++ = hex[(address >> shift) & 15];
  *p++ = ' ';
  if (size >= 100) *p++ = (char)('0' + size / 100);
  if (size >= 10) *p++ = (char)('0' + size / 10 % 10);
  *p++ = (char)('0' + size % 10);
  *p++ = '\n';
  return p;
}

static int din_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  (void)info;
  din_writer *w = (din_writer *)sink;
  if (w->failed) return ms_error_set(MS_ERR_IO, "%s: writer already failed", output_name(&w->out));
  for (size_t i = 0; i < batch->count; i++) {
    const ms_access *a = &batch->accesses[i];
    if (w->used > sizeof w->buffer - 64) {
      int rc = din_flush(w);
      if (rc < 0) return rc;
    }
    char *p = w->buffer + w->used;
    if (a->kind != MS_STORE) p = format_line(p, 0, a->address, a->size);
    if (a->kind != MS_LOAD) p = format_line(p, 1, a->address, a->size);
    w->used = (size_t)(p - w->buffer);
  }
  return MS_OK;
}

static int din_end(ms_sink *sink, const ms_stream_info *info) {
  (void)info;
  din_writer *w = (din_writer *)sink;
  if (w->failed) return ms_error_set(MS_ERR_IO, "%s: writer already failed", output_name(&w->out));
  int rc = din_flush(w);
  if (rc == 0) rc = ms_output_commit(&w->out);
  if (rc < 0) {
    w->failed = 1;
    ms_output_abort(&w->out);
  }
  return rc;
}

static void din_writer_destroy(ms_sink *sink) {
  din_writer *w = (din_writer *)sink;
  ms_output_abort(&w->out);
  free(w);
}

static const ms_sink_ops din_writer_ops = {NULL, din_consume, din_end, din_writer_destroy};

int ms_din_sink_new(const char *path, ms_sink **out) {
  *out = NULL;
  din_writer *w = calloc(1, sizeof *w);
  if (!w) return ms_error_set(MS_ERR_NOMEM, "out of memory for a din writer");
  w->sink.ops = &din_writer_ops;
  int rc = ms_output_open(&w->out, path);
  if (rc < 0) {
    free(w);
    return rc;
  }
  *out = &w->sink;
  return MS_OK;
}

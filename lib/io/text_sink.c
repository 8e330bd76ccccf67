/* Accesses as text lines (see ms_text_sink_new in memsnap/trace.h). */
#include <inttypes.h>
#include <stdlib.h>

#include "memsnap/error.h"
#include "memsnap/trace.h"

typedef struct text_sink {
  ms_sink base;
  FILE *out;
  uint64_t index;
  int site_numbers;
} text_sink;

static int write_failed(void) { return ms_error_set(MS_ERR_IO, "standard output: write failed"); }

static int text_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  text_sink *t = (text_sink *)sink;
  char site[512];
  for (size_t i = 0; i < batch->count; i++) {
    const ms_access *a = &batch->accesses[i];
    const char *kind = ms_access_kind_name((ms_access_kind)a->kind);
    if (t->site_numbers) {
      fprintf(t->out, "%" PRIu64 " %u %s 0x%" PRIx64 " %u s%u\n", t->index++, a->thread, kind,
              a->address, a->size, a->site);
      continue;
    }
    const char *where = "-";
    if (a->site != MS_SITE_NONE)
      where = ms_site_describe(ms_site_table_get(info->sites, a->site), site, sizeof site);
    fprintf(t->out, "%" PRIu64 " %u %s 0x%" PRIx64 " %u %s\n", t->index++, a->thread, kind,
            a->address, a->size, where);
  }
  return ferror(t->out) ? write_failed() : 0;
}

static int text_end(ms_sink *sink, const ms_stream_info *info) {
  (void)info;
  return fflush(((text_sink *)sink)->out) == 0 ? 0 : write_failed();
}

static void text_destroy(ms_sink *sink) { free(sink); }

static const ms_sink_ops text_ops = {NULL, text_consume, text_end, text_destroy};

int ms_text_sink_new(FILE *out, uint64_t first_index, int site_numbers, ms_sink **sink) {
  text_sink *t = calloc(1, sizeof *t);
  *sink = NULL;
  if (!t) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  t->base.ops = &text_ops;
  t->out = out;
  t->index = first_index;
  t->site_numbers = site_numbers;
  *sink = &t->base;
  return 0;
}

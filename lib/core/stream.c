/* Sources, sinks, fan-out (see memsnap/stream.h). */
#include "memsnap/stream.h"

#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"

int ms_source_seek(ms_source *source, uint64_t index) {
  if (!source->ops->seek) return ms_error_set(MS_ERR_UNSUPPORTED, "this source cannot seek");
  return source->ops->seek(source, index);
}

void ms_source_destroy(ms_source *source) {
  if (source) source->ops->destroy(source);
}

void ms_sink_destroy(ms_sink *sink) {
  if (sink) sink->ops->destroy(sink);
}

int ms_pipeline_run(ms_source *source, ms_sink *const *sinks, int sink_count, uint64_t limit) {
  const ms_stream_info *info = &source->info;
  for (int i = 0; i < sink_count; i++)
    if (sinks[i]->ops->begin) {
      int rc = sinks[i]->ops->begin(sinks[i], info);
      if (rc < 0) return rc;
    }
  ms_batch batch;
  int rc = ms_batch_init(&batch, 0);
  if (rc < 0) return rc;
  uint64_t seen = 0;
  for (;;) {
    int n = ms_source_next(source, &batch);
    if (n < 0) {
      rc = n;
      break;
    }
    if (n == 0) break;
    if (limit && seen + batch.count > limit) batch.count = (size_t)(limit - seen);
    seen += batch.count;
    for (int i = 0; i < sink_count && rc == 0; i++)
      rc = sinks[i]->ops->consume(sinks[i], info, &batch);
    if (rc < 0 || (limit && seen >= limit)) break;
  }
  ms_batch_free(&batch);
  if (rc < 0) return rc;
  for (int i = 0; i < sink_count; i++)
    if (sinks[i]->ops->end) {
      rc = sinks[i]->ops->end(sinks[i], info);
      if (rc < 0) return rc;
    }
  return MS_OK;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

int ms_stream_info_set_program(ms_stream_info *info, const char *program, int argc,
                               char *const *argv) {
  free(info->program);
  for (int i = 0; i < info->argc; i++)
    free(info->argv[i]);
  free(info->argv);
  info->program = dup_or_null(program);
  info->argc = 0;
  info->argv = calloc((size_t)argc + 1, sizeof *info->argv);
  if ((program && !info->program) || !info->argv)
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the program's arguments");
  for (int i = 0; i < argc; i++) {
    info->argv[i] = strdup(argv[i]);
    if (!info->argv[i])
      return ms_error_set(MS_ERR_NOMEM, "out of memory for the program's arguments");
    info->argc = i + 1;
  }
  return MS_OK;
}

void ms_stream_info_clear(ms_stream_info *info) {
  free(info->program);
  for (int i = 0; i < info->argc; i++)
    free(info->argv[i]);
  free(info->argv);
  free(info->arch);
  free(info->capture);
  ms_site_table_free(info->sites);
  ms_object_table_free(info->objects);
  memset(info, 0, sizeof *info);
  info->exit_status = -1;
}

int ms_source_skip(ms_source *source, uint64_t index) {
  if (index == 0) return 0;
  if (source->ops->seek) return ms_source_seek(source, index);
  ms_batch batch;
  int rc = ms_batch_init(&batch, 0);
  for (uint64_t skipped = 0; rc == 0 && skipped < index;) {
    size_t want = index - skipped < batch.capacity ? (size_t)(index - skipped) : batch.capacity;
    batch.capacity = want; /* never read past `index` */
    int n = ms_source_next(source, &batch);
    if (n < 0)
      rc = n;
    else if (n == 0)
      break;
    skipped += (uint64_t)n;
  }
  ms_batch_free(&batch);
  return rc;
}

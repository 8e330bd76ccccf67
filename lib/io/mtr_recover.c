/* memsnap recover: a valid .mtr of the intact chunks of a damaged one (memsnap/trace.h).
 *
 * The reader's scan mode (mtr_internal.h) reads the chunks in order from the header on,
 * each checked and decoded whole (header CRC, zstd checksums, every record) before any of
 * its records is kept, and stops at the first damage: the end of the file, a chunk that
 * does not check, or a trailer that does not. The records kept go through the ordinary
 * writer, which gives the new file its own chunk index, counts and trailer; the writer's
 * temporary name and rename mean that the output is never half written, and that the
 * output may even be the input's own name.
 *
 * The site table lives in the trailer, the part of the file a cut loses first. If the
 * trailer is intact (a damaged byte in a chunk), its sites, exit status and flags are kept;
 * if not, every site a kept record names becomes a placeholder (no pc, no location: the
 * records keep their site numbers, so per-site results still separate the instructions).
 */
#include <stdio.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/input.h"
#include "memsnap/trace.h"
#include "mtr_internal.h"

/* A reader's message without the file name it starts with. */
static const char *without_name(const char *message, const char *name) {
  size_t n = strlen(name);
  return strncmp(message, name, n) == 0 && strncmp(message + n, ": ", 2) == 0 ? message + n + 2
                                                                              : message;
}

int ms_mtr_recover(const char *path, const char *out_path, ms_mtr_recovery *report) {
  memset(report, 0, sizeof *report);
  mtr_reader *r;
  char magic[MTR_MAGIC_BYTES];
  size_t n;
  int rc = ms_input_peek(path, 0, magic, sizeof magic, &n);
  if (rc < 0) return rc;
  if (n == sizeof magic && memcmp(magic, MTR_MAGIC, n) != 0)
    return ms_error_set(MS_ERR_FORMAT,
                        "%s: offset 0: not a memsnap trace (bad magic; recover "
                        "reads .mtr traces)",
                        ms_input_name(path));
  rc = mtr_scan_open(path, &r);
  if (rc == MS_ERR_FORMAT || rc == MS_ERR_TRUNCATED) { /* nothing says what the chunks are */
    char why[400];
    snprintf(why, sizeof why, "%s", without_name(ms_error_message(), ms_input_name(path)));
    return ms_error_set(rc, "%s: nothing to recover: its header is damaged (%s)",
                        ms_input_name(path), why);
  }
  if (rc < 0) return rc;
  ms_source *source = mtr_scan_source(r);
  ms_stream_info *info = &source->info;
  report->file_bytes = mtr_scan_file_bytes(r);
  report->sites_lost = !mtr_scan_indexed(r);
  ms_sink *sink = NULL;
  ms_batch batch = {0};
  int status = MS_OK;
  for (;;) {
    rc = mtr_scan_next(r, &batch);
    if (rc == 0) {
      report->intact = 1;
      break;
    }
    if (rc == MS_ERR_NOMEM) { /* not damage: no verdict on the file */
      status = rc;
      break;
    }
    if (rc < 0) {
      report->damage_offset = mtr_scan_offset(r);
      snprintf(report->damage, sizeof report->damage, "%s", ms_error_message());
      break;
    }
    if (!sink && (status = ms_mtr_sink_new(out_path, &sink)) < 0) break;
    if ((status = sink->ops->consume(sink, info, &batch)) < 0) break;
    report->chunks++;
    report->accesses += batch.count;
  }
  if (status == 0 && !report->intact && report->chunks == 0) {
    const char *name = ms_input_name(path), *why = without_name(report->damage, name);
    status = ms_error_set(MS_ERR_FORMAT,
                          "%s: nothing to recover: the damage starts at the first chunk, offset "
                          "%llu (%s)",
                          name, (unsigned long long)report->damage_offset, why);
  }
  if (status == 0) {
    if (!sink) status = ms_mtr_sink_new(out_path, &sink); /* an intact, empty trace */
    if (!report->intact) {
      info->flags |= MS_STREAM_TRUNCATED | MS_STREAM_RECOVERED;
      info->thread_count = 0; /* the writer counts those of the accesses kept */
    }
    if (status == 0) status = sink->ops->end(sink, info);
  }
  report->sites = ms_site_table_count(info->sites);
  ms_sink_destroy(sink); /* removes the temporary file after a failure */
  ms_batch_free(&batch);
  mtr_scan_close(r);
  return status;
}

/* Reports: their destination and what they observed (see report.h). */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/input.h"

int report_observe(const char *command, report_observed *observed, const ms_stream_info *info,
                   const char *path) {
  if (ms_observed_take(observed, info, path) == 0) return 0;
  cli_fail(command);
  return -1;
}

void report_add_observed_json(json_object *object, const report_observed *observed) {
  char *text = NULL;
  size_t length = 0;
  FILE *out = open_memstream(&text, &length);
  if (!out) return;
  int rc = ms_observed_write_json(out, observed, NULL);
  json_object *fields = fclose(out) == 0 && rc == 0 ? json_tokener_parse(text) : NULL;
  free(text);
  if (!fields) return;
  json_object_object_foreach(fields, key, value) {
    json_object_object_add(object, key, json_object_get(value));
  }
  json_object_put(fields);
}

int report_write_json(FILE *out, const report_observed *observed, const char *json) {
  return ms_observed_write_json(out, observed, json) == 0 ? 0 : -1;
}

int report_open(const char *command, ms_output *out, const char *path, int live) {
  if (ms_output_open(out, path ? path : "-") < 0) {
    cli_fail(command);
    return -1;
  }
  if (!path && live) out->file = stderr;
  return 0;
}

int report_commit(const char *command, ms_output *out) {
  if (ms_output_commit(out) < 0) {
    cli_fail(command);
    return -1;
  }
  return 0;
}

int report_finish(const char *command, ms_output *out, int rc) {
  if (rc >= 0 && !ferror(out->file)) return report_commit(command, out);
  ms_output_abort(out);
  cli_error(command, "cannot write the report");
  return -1;
}

int report_analysis(const char *command, const ms_analysis *analysis, const ms_source *source,
                    const char *path, const char *output, ms_report_format format) {
  ms_output out;
  if (report_open(command, &out, output, path == NULL) < 0) return -1;
  int rc = ms_analysis_report(analysis, ms_source_info(source), path, out.file, format);
  return report_finish(command, &out, rc);
}

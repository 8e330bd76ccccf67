/* Reports: their destination and what they observed (see report.h). */
#include "report.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/input.h"

int report_observe(const char *command, report_observed *observed, const ms_stream_info *info,
                   const char *path) {
  memset(observed, 0, sizeof *observed);
  observed->exit_status = info->exit_status;
  observed->truncated = (info->flags & MS_STREAM_TRUNCATED) != 0;
  /* exit_status is 128 + the signal of a killed program, whose stream is then truncated
   * (memsnap/stream.h); a program that replaced itself unobserved (EXEC) is truncated too,
   * with the status of what it became. */
  if (observed->truncated && !(info->flags & MS_STREAM_EXEC) && info->exit_status > 128 &&
      info->exit_status < 128 + 65)
    observed->signal = info->exit_status - 128;
  size_t length = 0;
  const char *program = info->program ? info->program : info->argc > 0 ? info->argv[0] : NULL;
  if (program) {
    length = strlen(program) + 1;
    for (int i = 1; i < info->argc; i++)
      length += strlen(info->argv[i]) + 1;
    observed->program = malloc(length);
  }
  if (path) observed->input = strdup(ms_input_name(path));
  if ((program && !observed->program) || (path && !observed->input)) {
    report_observed_free(observed);
    cli_error(command, "out of memory");
    return -1;
  }
  if (program) {
    strcpy(observed->program, program);
    for (int i = 1; i < info->argc; i++) {
      strcat(observed->program, " ");
      strcat(observed->program, info->argv[i]);
    }
  }
  return 0;
}

void report_observed_free(report_observed *observed) {
  free(observed->program);
  free(observed->input);
  memset(observed, 0, sizeof *observed);
}

/* "SIGTERM" for 15 (into name, 16 bytes). */
static const char *signal_name(int signal, char *name) {
  const char *abbrev = sigabbrev_np(signal);
  snprintf(name, 16, "SIG%s", abbrev ? abbrev : "?");
  return name;
}

void report_write_observed(FILE *out, const report_observed *o) {
  char name[16];
  fprintf(out, "observed: %s", o->program ? o->program : "(program unknown)");
  if (o->input) fprintf(out, " (from %s)", o->input);
  if (o->signal)
    fprintf(out, ": killed by %s (signal %d)", signal_name(o->signal, name), o->signal);
  else if (o->exit_status >= 0)
    fprintf(out, ": exit status %d", o->exit_status);
  else
    fprintf(out, ": exit status unknown");
  fprintf(out, "; %s\n",
          o->truncated > 0   ? "truncated: the accesses are those before the program stopped"
          : o->truncated < 0 ? "whether it is complete is not known"
                             : "complete");
}

void report_add_observed_json(json_object *object, const report_observed *o) {
  json_object_object_add(object, "program", o->program ? json_object_new_string(o->program) : NULL);
  if (o->input) json_object_object_add(object, "input", json_object_new_string(o->input));
  json_object_object_add(object, "exit_status",
                         o->exit_status >= 0 ? json_object_new_int(o->exit_status) : NULL);
  char name[16];
  json_object_object_add(object, "signal",
                         o->signal ? json_object_new_string(signal_name(o->signal, name)) : NULL);
  json_object_object_add(object, "truncated",
                         o->truncated >= 0 ? json_object_new_boolean(o->truncated) : NULL);
}

int report_write_json(FILE *out, const report_observed *observed, const char *json) {
  json_object *parsed = json_tokener_parse(json);
  if (!parsed || !json_object_is_type(parsed, json_type_object)) {
    json_object_put(parsed);
    return -1;
  }
  json_object *root = json_object_new_object();
  report_add_observed_json(root, observed);
  json_object_object_foreach(parsed, key, value) {
    json_object_object_add(root, key, json_object_get(value));
  }
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root,
                                         JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
  json_object_put(parsed);
  return 0;
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

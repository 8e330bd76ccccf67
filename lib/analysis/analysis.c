/* The analysis frame, the catalog by name and what a stream was observed from (see
 * memsnap/analysis.h). */
#include <ctype.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "memsnap/error.h"
#include "memsnap/input.h"
#include "memsnap/sample.h"

/* ---- observed ---- */

int ms_observed_take(ms_observed *observed, const ms_stream_info *info, const char *input) {
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
  if (input) observed->input = strdup(ms_input_name(input));
  if ((program && !observed->program) || (input && !observed->input)) {
    ms_observed_free(observed);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
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

void ms_observed_free(ms_observed *observed) {
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

void ms_observed_write_text(FILE *out, const ms_observed *o) {
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

int ms_observed_write_json(FILE *out, const ms_observed *o, const char *object_text) {
  json_object *parsed = object_text ? json_tokener_parse(object_text) : json_object_new_object();
  if (!parsed || !json_object_is_type(parsed, json_type_object)) {
    json_object_put(parsed);
    return ms_error_set(MS_ERR_ARG, "a report that is not a JSON object");
  }
  json_object *root = json_object_new_object();
  char name[16];
  json_object_object_add(root, "program", o->program ? json_object_new_string(o->program) : NULL);
  if (o->input) json_object_object_add(root, "input", json_object_new_string(o->input));
  json_object_object_add(root, "exit_status",
                         o->exit_status >= 0 ? json_object_new_int(o->exit_status) : NULL);
  json_object_object_add(root, "signal",
                         o->signal ? json_object_new_string(signal_name(o->signal, name)) : NULL);
  json_object_object_add(root, "truncated",
                         o->truncated >= 0 ? json_object_new_boolean(o->truncated) : NULL);
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

/* ---- the frame ---- */

static int frame_begin(ms_sink *sink, const ms_stream_info *info) {
  ms_analysis *a = (ms_analysis *)sink;
  return a->first->ops->begin ? a->first->ops->begin(a->first, info) : 0;
}

static int frame_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  ms_analysis *a = (ms_analysis *)sink;
  return a->first->ops->consume(a->first, info, batch);
}

static int frame_end(ms_sink *sink, const ms_stream_info *info) {
  ms_analysis *a = (ms_analysis *)sink;
  int rc = a->first->ops->end ? a->first->ops->end(a->first, info) : 0;
  if (rc == 0) rc = a->ops->finish(a, info);
  if (rc == 0) a->finished = 1;
  return rc;
}

/* The frame is destroyed by ms_analysis_free, never as a sink of a pipeline. */
static void frame_destroy(ms_sink *sink) { (void)sink; }

static const ms_sink_ops frame_ops = {
    .begin = frame_begin, .consume = frame_consume, .end = frame_end, .destroy = frame_destroy};

int analysis_init(ms_analysis *analysis, const char *name, const analysis_ops *ops, ms_sink *inner,
                  ms_analysis_sampling sampling) {
  analysis->sink.ops = &frame_ops;
  analysis->ops = ops;
  analysis->name = name;
  analysis->inner = inner;
  analysis->first = inner;
  if (sampling.on > 0) {
    int rc = ms_sample_sink_new(inner, sampling.on, sampling.off, NULL, NULL, &analysis->sampler);
    if (rc < 0) return rc;
    analysis->first = analysis->sampler;
  }
  return 0;
}

void ms_analysis_free(ms_analysis *analysis) {
  if (!analysis) return;
  ms_sink_destroy(analysis->sampler);
  ms_sink_destroy(analysis->inner);
  analysis->ops->destroy(analysis);
}

const char *ms_analysis_name(const ms_analysis *analysis) { return analysis->name; }

ms_sink *ms_analysis_sink(ms_analysis *analysis) { return &analysis->sink; }

const void *ms_analysis_result(const ms_analysis *analysis) {
  return analysis->finished ? analysis->ops->result(analysis) : NULL;
}

int ms_analysis_write(const ms_analysis *analysis, const ms_stream_info *info, FILE *out,
                      ms_report_format format) {
  if (!analysis->finished)
    return ms_error_set(MS_ERR_ARG, "%s: no result before the stream has ended", analysis->name);
  return analysis->ops->write(analysis, info, out, format);
}

int ms_analysis_report(const ms_analysis *analysis, const ms_stream_info *info, const char *input,
                       FILE *out, ms_report_format format) {
  if (format == MS_REPORT_CSV) return ms_analysis_write(analysis, info, out, format);
  ms_observed observed;
  int rc = ms_observed_take(&observed, info, input);
  if (rc < 0) return rc;
  if (format == MS_REPORT_JSON) {
    char *json = NULL;
    size_t length = 0;
    FILE *text = open_memstream(&json, &length);
    rc = text ? ms_analysis_write(analysis, info, text, format)
              : ms_error_set(MS_ERR_NOMEM, "out of memory");
    if (text && fclose(text) != 0 && rc == 0) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
    if (rc == 0) rc = ms_observed_write_json(out, &observed, json);
    free(json);
  } else {
    ms_observed_write_text(out, &observed);
    rc = ms_analysis_write(analysis, info, out, format);
  }
  ms_observed_free(&observed);
  return rc;
}

/* ---- by name ---- */

typedef struct catalog_entry {
  ms_analysis_entry entry;
  int (*create)(const analysis_option *options, int count, ms_analysis **out);
} catalog_entry;

static const catalog_entry catalog[] = {
    {{"sim", "set-associative cache hierarchies: hits and misses per level, thread and site",
      "hierarchy=H (repeatable: a catalog name or size/line/ways[,...]) top=N (sites listed)"},
     analysis_sim_create},
    {{"annotate", "misses of one hierarchy per function and per source line",
      "hierarchy=H level=N (the misses that order the rows; default the last) functions=N lines=N"},
     analysis_annotate_create},
    {{"surface", "cache surface: hit rates of fully-associative LRU caches, widths x depths",
      "widths=W depths=D (LO:HI or A,B,C) shards=RATE sample=ON/OFF"},
     analysis_surface_create},
    {{"scores", "spatial and temporal locality scores, whole run and per site",
      "word=B lookback=N window-log2=L top=N sample=ON/OFF"},
     analysis_scores_create},
    {{"signature", "memory signature: reuse CDF and alpha values (.sig)",
      "width=W word=B per-site site-cap=N sample=ON/OFF"},
     analysis_signature_create},
    {{"profile", "PSnAP profile: per-instruction stride patterns and their order (.psnap)",
      "fidelity=low|normal|high lossless"},
     analysis_profile_create},
};
enum { CATALOG_COUNT = sizeof catalog / sizeof *catalog };

int ms_analysis_catalog_count(void) { return CATALOG_COUNT; }

const ms_analysis_entry *ms_analysis_catalog_get(int index) {
  return index >= 0 && index < CATALOG_COUNT ? &catalog[index].entry : NULL;
}

const char *analysis_option_text(const analysis_option *option, char *buf, size_t size) {
  size_t n = option->value ? option->value_length : 0;
  if (n >= size) n = size - 1;
  if (n) memcpy(buf, option->value, n);
  buf[n] = '\0';
  return buf;
}

int analysis_option_is(const analysis_option *option, const char *key) {
  return strlen(key) == option->key_length && !memcmp(option->key, key, option->key_length);
}

int analysis_option_error(const char *name, const analysis_option *option, const char *why) {
  char reason[512]; /* `why` may be ms_error_message(), which ms_error_set overwrites */
  snprintf(reason, sizeof reason, "%s", why);
  if (!option->value)
    return ms_error_set(MS_ERR_ARG, "%s: option '%.*s' %s", name, (int)option->key_length,
                        option->key, reason);
  return ms_error_set(MS_ERR_ARG, "%s: bad %.*s '%.*s' (%s)", name, (int)option->key_length,
                      option->key, (int)option->value_length, option->value, reason);
}

int ms_analysis_new(const char *spec, ms_analysis **out) {
  *out = NULL;
  const char *p = spec ? spec : "";
  while (isspace((unsigned char)*p))
    p++;
  const char *name = p;
  while (*p && !isspace((unsigned char)*p))
    p++;
  size_t name_length = (size_t)(p - name);
  const catalog_entry *entry = NULL;
  for (int i = 0; i < CATALOG_COUNT; i++)
    if (strlen(catalog[i].entry.name) == name_length &&
        !memcmp(catalog[i].entry.name, name, name_length))
      entry = &catalog[i];
  if (!entry) {
    char names[128] = "";
    for (int i = 0; i < CATALOG_COUNT; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
               catalog[i].entry.name);
    return ms_error_set(MS_ERR_ARG, "unknown analysis '%.*s' (%s)", (int)name_length, name, names);
  }
  /* words: as many options as there are blanks, at most */
  size_t words = 1;
  for (const char *q = p; *q; q++)
    words += isspace((unsigned char)*q) != 0;
  analysis_option *options = calloc(words, sizeof *options);
  if (!options) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  int count = 0;
  for (;;) {
    while (isspace((unsigned char)*p))
      p++;
    if (!*p) break;
    const char *word = p;
    while (*p && !isspace((unsigned char)*p))
      p++;
    const char *equals = memchr(word, '=', (size_t)(p - word));
    analysis_option *o = &options[count++];
    o->key = word;
    o->key_length = (size_t)((equals ? equals : p) - word);
    o->value = equals ? equals + 1 : NULL;
    o->value_length = equals ? (size_t)(p - equals - 1) : 0;
  }
  int rc = entry->create(options, count, out);
  free(options);
  return rc;
}

/* memsnap report [--json] [-o FILE] [--hierarchy H] [--top N]
 *                INPUT... [-- PROGRAM ARGS...]
 *
 * One self-contained page (HTML, inline CSS and SVG, a few lines of inline script) of what
 * memsnap knows of each input, or the same numbers as JSON. Per input, in one pass over its
 * accesses: the hit rates of the 46 evaluation hierarchies (sim), the sites with most misses
 * per level of one more hierarchy (sim), and the memory signature (signature) with the
 * reuse CDFs of every width from its word to its line: its CDFs and alpha values, and, as
 * those CDFs are the rows of the cache surface at depths 2^0..2^16 counted as `memsnap
 * surface` counts them, the surface itself for the cost of one surface computation. A
 * profile also lists its sites with their patterns (as `memsnap show` does); a signature
 * (.sig) holds no accesses: its page has its CDFs, alpha values and surface (measured if it
 * has its widths' CDFs, derived from the CDF and alphas otherwise).
 *
 * The numbers are gathered first as one JSON object per input (what --json prints); the
 * page is drawn from those objects (report_html.c), so that both always agree.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "locality_cli.h"
#include "memsnap/evaluation.h"
#include "memsnap/input.h"
#include "memsnap/psnap.h"
#include "report.h"
#include "report_html.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: memsnap report [OPTIONS] INPUT... [-- PROGRAM ARGS...]\n"
          "  one self-contained HTML page (inline SVG and CSS, no network needed) of each\n"
          "  input: what was observed, hit rates of the 46 evaluation hierarchies, the cache\n"
          "  surface, the reuse CDF and alpha values, the sites with most misses; a .psnap\n"
          "  also lists its sites and patterns, a .sig gives its CDF, alpha and surface\n"
          "  INPUT               a trace, a .psnap profile, a .sig signature (one section each)\n"
          "  --json              the same numbers as JSON instead of the page\n"
          "  -o, --output FILE   write the report to FILE (default: standard output; standard\n"
          "                      error for -- PROGRAM, whose standard output is its own)\n"
          "  -H, --hierarchy H   the hierarchy whose sites with most misses are listed per\n"
          "                      level (default nehalem; a catalog name or size/line/ways,...)\n"
          "  --top N             sites listed per level, and profile sites (default 10)\n");
}

typedef struct report_options {
  int json;
  const char *output;
  const char *hierarchy;
  int top;
} report_options;

static int parse_options(int argc, char **argv, report_options *o) {
  static const struct option long_options[] = {{"json", no_argument, NULL, 'j'},
                                               {"output", required_argument, NULL, 'o'},
                                               {"hierarchy", required_argument, NULL, 'H'},
                                               {"top", required_argument, NULL, 't'},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c;
  uint64_t number;
  while ((c = getopt_long(argc, argv, ":o:H:h", long_options, NULL)) != -1) {
    switch (c) {
    case 'j': o->json = 1; break;
    case 'o': o->output = optarg; break;
    case 'H': o->hierarchy = optarg; break;
    case 't':
      if (cli_parse_count(optarg, &number) < 0 || number > 1000) {
        cli_error(argv[0], "bad --top '%s' (a count up to 1000)", optarg);
        return 2;
      }
      o->top = (int)number;
      break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  return -1;
}

/* ---- JSON of analyses ---- */

/* A report written into memory, then parsed. */
typedef struct memory_text {
  char *text;
  size_t length;
  FILE *file;
} memory_text;

static FILE *memory_open(memory_text *memory) {
  memory->text = NULL;
  memory->file = open_memstream(&memory->text, &memory->length);
  return memory->file;
}

/* What was written, parsed (`rc` is the writer's status); NULL after a message. */
static json_object *memory_json(const char *command, memory_text *memory, int rc) {
  if (memory->file && fclose(memory->file) != 0 && rc >= 0)
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  json_object *parsed = rc >= 0 && memory->text ? json_tokener_parse(memory->text) : NULL;
  free(memory->text);
  if (rc < 0)
    cli_fail(command);
  else if (!parsed)
    cli_error(command, "out of memory");
  return parsed;
}

static json_object *analysis_json(const char *command, const ms_analysis *analysis,
                                  const ms_stream_info *info) {
  memory_text memory;
  int rc = memory_open(&memory) ? ms_analysis_write(analysis, info, memory.file, MS_REPORT_JSON)
                                : ms_error_set(MS_ERR_NOMEM, "out of memory");
  return memory_json(command, &memory, rc);
}

static json_object *observed_json(const char *command, const ms_observed *observed) {
  memory_text memory;
  int rc = memory_open(&memory) ? ms_observed_write_json(memory.file, observed, NULL)
                                : ms_error_set(MS_ERR_NOMEM, "out of memory");
  return memory_json(command, &memory, rc);
}

/* The whole-program bin of a signature only: a per-site signature's bins stay in the .sig. */
static json_object *signature_json(const char *command, const ms_signature *signature) {
  ms_signature whole = *signature;
  whole.bin_count = signature->bin_count > 0 ? 1 : 0;
  memory_text memory;
  int rc = memory_open(&memory) ? ms_signature_write_json(memory.file, &whole)
                                : ms_error_set(MS_ERR_NOMEM, "out of memory");
  json_object *object = memory_json(command, &memory, rc);
  if (object)
    json_object_object_add(
        object, "site_bins",
        json_object_new_int(signature->bin_count > 0 ? signature->bin_count - 1 : 0));
  return object;
}

static json_object *surface_json(const char *command, const ms_surface *surface) {
  memory_text memory;
  int rc = memory_open(&memory) ? ms_surface_write_json(memory.file, surface)
                                : ms_error_set(MS_ERR_NOMEM, "out of memory");
  return memory_json(command, &memory, rc);
}

/* The sim report's one hierarchy, its top sites given their function from the site table. */
static json_object *sites_json(const char *command, const ms_analysis *sim,
                               const ms_stream_info *info) {
  json_object *report = analysis_json(command, sim, info), *hierarchies, *levels;
  if (!report) return NULL;
  json_object *hierarchy = NULL;
  if (json_object_object_get_ex(report, "hierarchies", &hierarchies))
    hierarchy = json_object_get(json_object_array_get_idx(hierarchies, 0));
  json_object_put(report);
  if (!hierarchy || !json_object_object_get_ex(hierarchy, "levels", &levels)) return hierarchy;
  for (size_t l = 0; l < json_object_array_length(levels); l++) {
    json_object *top;
    if (!json_object_object_get_ex(json_object_array_get_idx(levels, l), "top_sites", &top))
      continue;
    for (size_t i = 0; i < json_object_array_length(top); i++) {
      json_object *entry = json_object_array_get_idx(top, i), *id;
      const ms_site *site =
          json_object_object_get_ex(entry, "site", &id)
              ? ms_site_table_get(info->sites, (uint32_t)json_object_get_uint64(id))
              : NULL;
      if (site && site->function)
        json_object_object_add(entry, "function", json_object_new_string(site->function));
    }
  }
  return hierarchy;
}

/* ---- a profile's sites, as `memsnap show` lists them ---- */

static const ms_psnap_profile *sorting;
static int by_weight(const void *a, const void *b) {
  uint64_t x = sorting->sites[*(const uint32_t *)a].count;
  uint64_t y = sorting->sites[*(const uint32_t *)b].count;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  return x < y ? 1 : x > y ? -1 : (i > j) - (i < j);
}

/* Patterns longer than this are cut (with "...") in the report: the profile has them whole. */
#define REPORT_PATTERN_MAX 160

static json_object *profile_site_json(const ms_psnap_profile *p, uint32_t s) {
  const ms_psnap_site *site = &p->sites[s];
  json_object *entry = json_object_new_object();
  char text[512];
  json_object_object_add(entry, "site", json_object_new_uint64(s));
  json_object_object_add(entry, "count", json_object_new_uint64(site->count));
  json_object_object_add(entry, "share",
                         json_object_new_double(p->access_count
                                                    ? (double)site->count / (double)p->access_count
                                                    : 0.0));
  json_object_object_add(entry, "kind",
                         json_object_new_string(ms_access_kind_name((ms_access_kind)site->kind)));
  json_object_object_add(entry, "size", json_object_new_int(site->size));
  json_object_object_add(entry, "class", json_object_new_string(ms_stride_class_name(site->cls)));
  json_object_object_add(entry, "stored",
                         json_object_new_string(site->addresses ? "lossless"
                                                : site->lossy   ? "lossy"
                                                                : "exact"));
  const ms_site *where = ms_site_table_get(p->info.sites, site->trace_site);
  json_object_object_add(entry, "where",
                         json_object_new_string(ms_site_describe(where, text, sizeof text)));
  snprintf(text, sizeof text, "0x%" PRIx64, site->first_address);
  json_object_object_add(entry, "first_address", json_object_new_string(text));
  char *pattern = site->lossy ? NULL : ms_expr_string(&site->pattern, MS_EXPR_STRIDES);
  if (pattern && strlen(pattern) > REPORT_PATTERN_MAX)
    strcpy(pattern + REPORT_PATTERN_MAX - 3, "...");
  json_object_object_add(entry, "pattern", pattern ? json_object_new_string(pattern) : NULL);
  free(pattern);
  return entry;
}

static json_object *profile_json(const ms_psnap_profile *p, int top) {
  uint32_t *order = malloc((p->site_count + 1) * sizeof *order);
  if (!order) return NULL;
  for (uint32_t s = 0; s < p->site_count; s++)
    order[s] = s;
  sorting = p;
  qsort(order, p->site_count, sizeof *order, by_weight);
  json_object *object = json_object_new_object(), *sites = json_object_new_array();
  ms_psnap_lossy_summary lossy;
  ms_psnap_profile_lossy(p, &lossy);
  json_object_object_add(object, "accesses", json_object_new_uint64(p->access_count));
  json_object_object_add(object, "site_count", json_object_new_uint64(p->site_count));
  json_object_object_add(object, "lossy_sites", json_object_new_uint64(lossy.sites));
  json_object_object_add(object, "threads", json_object_new_uint64(p->thread_count));
  json_object_object_add(object, "selection",
                         json_object_new_string(p->selection ? p->selection : "all"));
  for (uint32_t k = 0; k < p->site_count && k < (uint32_t)top; k++)
    json_object_array_add(sites, profile_site_json(p, order[k]));
  json_object_object_add(object, "sites", sites);
  free(order);
  return object;
}

/* ---- one input ---- */

/* The analyses run over an input's accesses in one pass; OBJECTS only for an input that
 * records data objects (memsnap record --objects). */
enum { EVALUATION, SITES, SIGNATURE, LINES, OBJECTS, ANALYSES };

static int new_analyses(const char *command, const report_options *o, ms_analysis **a) {
  ms_hierarchy_config configs[MS_EVALUATION_COUNT], sites_config;
  if (ms_hierarchy_parse(o->hierarchy, &sites_config) < 0) {
    cli_error(command, "--hierarchy: %s", ms_error_message());
    return 2;
  }
  /* the narrower widths' reuse CDFs too: the cache surface, as memsnap surface counts it */
  ms_signature_config signature;
  ms_signature_config_default(&signature);
  signature.widths = 1;
  ms_signature_sampling no_sampling = {0, 0, 0, 0};
  /* the source lines with most misses on that hierarchy, without their text */
  ms_annotate_config lines;
  ms_annotate_config_default(&lines, &sites_config);
  lines.functions = lines.lines = o->top;
  lines.source = 0;
  if (ms_evaluation_configs(configs) < 0 ||
      ms_sim_analysis_new(configs, MS_EVALUATION_COUNT, 0, &a[EVALUATION]) < 0 ||
      ms_sim_analysis_new(&sites_config, 1, o->top, &a[SITES]) < 0 ||
      ms_signature_analysis_new(&signature, &no_sampling, &a[SIGNATURE]) < 0 ||
      ms_annotate_analysis_new(&lines, &a[LINES]) < 0)
    return cli_fail(command);
  return 0;
}

/* The data objects with most misses on the sites' hierarchy, by allocating call. */
static int new_objects(const char *command, const report_options *o, ms_analysis **out) {
  ms_hierarchy_config config;
  ms_annotate_config objects;
  if (ms_hierarchy_parse(o->hierarchy, &config) < 0) return cli_fail(command);
  ms_annotate_config_default(&objects, &config);
  objects.by = MS_ANNOTATE_ALLOCATIONS;
  objects.lines = o->top;
  return ms_annotate_analysis_new(&objects, out) < 0 ? cli_fail(command) : 0;
}

/* The annotation's rows (`key`: "lines" or "objects") and its totals, as its JSON has them. */
static json_object *annotation_json(const char *command, const ms_analysis *annotate,
                                    const ms_stream_info *info, const char *key) {
  json_object *report = analysis_json(command, annotate, info);
  if (!report) return NULL;
  json_object *out = json_object_new_object(), *value;
  const char *keep[] = {"hierarchy", "sort_level",
                        "total",     "unattributed",
                        key,         key[0] == 'l' ? "line_count" : "object_count"};
  for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
    if (json_object_object_get_ex(report, keep[i], &value))
      json_object_object_add(out, keep[i], json_object_get(value));
  json_object_put(report);
  return out;
}

/* The cache surface of a signature with the reuse CDFs of its narrower widths (signature
 * --widths, or the report's own): those rows and the maximal width's CDF, counted as
 * `memsnap surface` counts them (memsnap/signature.h). Without them, the surface derived
 * from the CDF and the alpha values (ms_signature_to_surface). *measured says which. */
static int signature_surface(const ms_signature *signature, ms_surface *surface, int *measured) {
  *measured = signature->widths > 0 && signature->bin_count > 0 &&
              signature->levels + 1 <= MS_SURFACE_MAX_WIDTHS;
  if (!*measured) return ms_signature_to_surface(signature, surface);
  memset(surface, 0, sizeof *surface);
  surface->width_count = signature->levels + 1;
  surface->depth_count = MS_SIGNATURE_DEPTHS;
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
    surface->depths[k] = 1ull << k;
  for (int level = 0; level <= signature->levels; level++) {
    int widest = level == signature->levels;
    double references = widest ? signature->bins[0].references : signature->width_references[level];
    surface->widths[level] = signature->word << level;
    surface->references[level] = (uint64_t)references;
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      double hits = widest ? signature->bins[0].hits[k] : signature->width_hits[level][k];
      surface->hit_rate[level][k] = references > 0 ? hits / references : 0;
    }
  }
  surface->accesses = signature->accesses_seen;
  surface->sample_rate = signature->widths < 1 ? signature->widths : 1;
  return 0;
}

/* Adds "surface" and "signature" (its whole-program bin) to `object`; 0 or 1. */
static int add_signature(const char *command, json_object *object, const ms_signature *signature) {
  static ms_surface surface;
  int measured;
  if (signature_surface(signature, &surface, &measured) < 0) return cli_fail(command);
  json_object *surface_object = surface_json(command, &surface), *widths;
  if (!surface_object) return 1;
  json_object_object_add(surface_object, "from_signature",
                         json_object_new_string(measured ? "measured" : "derived"));
  /* no reuse histogram: the signature's CDFs are cumulative counts */
  if (json_object_object_get_ex(surface_object, "widths", &widths))
    for (size_t i = 0; i < json_object_array_length(widths); i++)
      json_object_object_del(json_object_array_get_idx(widths, i), "reuse_histogram");
  json_object_object_add(object, "surface", surface_object);
  json_object *whole = signature_json(command, signature);
  json_object_object_add(object, "signature", whole);
  return whole ? 0 : 1;
}

/* Adds to `object` the results of the analyses; 0 or an exit status. */
static int add_results(const char *command, json_object *object, ms_analysis **a,
                       const ms_stream_info *info) {
  json_object *evaluation = analysis_json(command, a[EVALUATION], info), *hierarchies;
  if (!evaluation) return 1;
  if (json_object_object_get_ex(evaluation, "hierarchies", &hierarchies))
    json_object_object_add(object, "hierarchies", json_object_get(hierarchies));
  json_object_put(evaluation);
  json_object *sites = sites_json(command, a[SITES], info);
  if (!sites) return 1;
  json_object_object_add(object, "sites", sites);
  json_object *lines = annotation_json(command, a[LINES], info, "lines");
  if (!lines) return 1;
  json_object_object_add(object, "lines", lines);
  if (a[OBJECTS]) {
    json_object *objects = annotation_json(command, a[OBJECTS], info, "objects");
    if (!objects) return 1;
    json_object_object_add(object, "objects", objects);
  }
  return add_signature(command, object, ms_analysis_result(a[SIGNATURE]));
}

/* The report object of a memory signature: what it says it observed, its CDF and alpha
 * values, and its surface. */
static int report_signature(const char *command, const char *path, json_object *object) {
  ms_signature *signature;
  if (ms_signature_load(path, &signature) < 0) return cli_fail(command);
  ms_observed observed = {.program = signature->program,
                          .input = (char *)ms_input_name(path),
                          .exit_status = -1,
                          .truncated = -1};
  json_object *fields = observed_json(command, &observed);
  int status = 1;
  if (fields) {
    json_object_object_foreach(fields, key, value) {
      json_object_object_add(object, key, json_object_get(value));
    }
    json_object_object_add(object, "kind",
                           json_object_new_string(ms_input_kind_name(MS_INPUT_SIGNATURE)));
    status = add_signature(command, object, signature);
  }
  json_object_put(fields);
  ms_signature_free(signature);
  return status;
}

/* The report object of an input with accesses: a file, or the program (path NULL). */
static int report_accesses(const char *command, const report_options *o, const char *path,
                           int program_argc, char **program_argv, json_object *object,
                           int *program_status) {
  ms_analysis *a[ANALYSES] = {0};
  ms_source *source = NULL;
  ms_psnap_profile profile;
  ms_input_kind kind = MS_INPUT_UNKNOWN;
  int status = new_analyses(command, o, a);
  if (status) goto done;
  status = 1;
  if (path && ms_input_kind_of(path, &kind) < 0) {
    cli_fail(command);
    goto done;
  }
  if (kind == MS_INPUT_PSNAP) {
    if (ms_psnap_profile_load(path, &profile) < 0 ||
        ms_psnap_profile_pick(&profile, cli_rank, cli_thread) < 0) {
      cli_fail(command);
      goto done;
    }
    json_object *sites = profile_json(&profile, o->top);
    if (!sites) {
      ms_psnap_profile_free(&profile);
      cli_error(command, "out of memory");
      goto done;
    }
    json_object_object_add(object, "profile", sites);
    if (ms_psnap_replay_open(&profile, NULL, &source) < 0) { /* takes the profile */
      cli_fail(command);
      goto done;
    }
  } else if (!(source = cli_open_source(command, path, program_argc, program_argv, NULL))) {
    goto done;
  }
  if (ms_source_info(source)->objects && (status = new_objects(command, o, &a[OBJECTS])) != 0)
    goto done;
  status = 1;
  ms_sink *sinks[ANALYSES];
  int sink_count = 0;
  for (int i = 0; i < ANALYSES; i++)
    if (a[i]) sinks[sink_count++] = ms_analysis_sink(a[i]);
  if (ms_pipeline_run(source, sinks, sink_count, 0) < 0) {
    cli_fail(command);
    goto done;
  }
  const ms_stream_info *info = ms_source_info(source);
  ms_observed observed;
  if (report_observe(command, &observed, info, path) < 0) goto done;
  json_object *fields = observed_json(command, &observed);
  ms_observed_free(&observed);
  if (!fields) goto done;
  json_object_object_foreach(fields, key, value) {
    json_object_object_add(object, key, json_object_get(value));
  }
  json_object_put(fields);
  json_object_object_add(object, "kind",
                         json_object_new_string(path ? ms_input_kind_name(kind) : "live program"));
  status = add_results(command, object, a, info);
  if (status == 0) *program_status = cli_program_status(source);
done:
  ms_source_destroy(source);
  for (int i = 0; i < ANALYSES; i++)
    ms_analysis_free(a[i]);
  return status;
}

/* ---- the command ---- */

static int write_report(const char *command, const report_options *o, json_object *root, int live) {
  ms_output out;
  if (report_open(command, &out, o->output, live) < 0) return 1;
  int rc = 0;
  if (o->json)
    rc = fprintf(out.file, "%s\n",
                 json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE)) < 0
             ? -1
             : 0;
  else
    rc = report_html_write(out.file, root);
  return report_finish(command, &out, rc) < 0 ? 1 : 0;
}

int cmd_report(int argc, char **argv) {
  report_options o = {.hierarchy = "nehalem", .top = 10};
  int status = parse_options(argc, argv, &o);
  if (status >= 0) return status;
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count == 0 && inputs.program_argc == 0) {
    cli_error(argv[0], "give an input: a trace, a .psnap, a .sig or -- PROGRAM ARGS");
    return 2;
  }
  ms_hierarchy_config check;
  if (ms_hierarchy_parse(o.hierarchy, &check) < 0) {
    cli_error(argv[0], "--hierarchy: %s", ms_error_message());
    return 2;
  }
  json_object *root = json_object_new_object(), *array = json_object_new_array();
  json_object_object_add(root, "memsnap_version", json_object_new_string(MEMSNAP_VERSION));
  json_object_object_add(root, "inputs", array);
  int program_status = 0;
  status = 0;
  for (int i = 0; status == 0 && i <= inputs.count; i++) {
    int live = i == inputs.count;
    if (live && inputs.program_argc == 0) break;
    json_object *object = json_object_new_object();
    json_object_array_add(array, object);
    const char *path = live ? NULL : inputs.paths[i];
    if (path && locality_is_signature(path))
      status = report_signature(argv[0], path, object);
    else
      status = report_accesses(argv[0], &o, path, live ? inputs.program_argc : 0,
                               inputs.program_argv, object, &program_status);
  }
  if (status == 0) status = write_report(argv[0], &o, root, inputs.program_argc > 0);
  json_object_put(root);
  return status ? status : program_status;
}

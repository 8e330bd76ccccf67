/* memsnap compare SOURCE SOURCE: two sources of accesses side by side (issue 6, "Compare").
 *
 * Each source (a trace, a trace seed expanded as `memsnap sim --footprint/--length` does, a
 * .psnap profile replayed, or a live program) is read once and fed to two sinks: the 46
 * evaluation hierarchies simulated together (evaluation.h, exactly `memsnap sim --hierarchy
 * hpcmo-NN` each) and a cache surface builder (lib/locality, the grid of the options).
 * Reported: per hierarchy and level the hit rate of each and their absolute difference; per
 * level the mean and max absolute difference over the hierarchies that have that level;
 * over the common points of the two surfaces the mean and max absolute difference, and the
 * same at the 512-byte width (the widest block the benchmark's alignment serves). Hit rates
 * are fractions (0..1), not percentages.
 */
#include "compare_sources.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/cache.h"
#include "memsnap/evaluation.h"
#include "memsnap/output.h"
#include "memsnap/psnap.h"
#include "memsnap/synth.h"
#include "memsnap/trace.h"
#include "report.h"

/* 1 if `path` is a trace seed (memsnap synth); 0 if not or if it cannot be read (the open
 * that follows reports that). */
static int is_seed(const char *path) {
  ms_input_kind kind;
  return path && ms_input_kind_of(path, &kind) == 0 && kind == MS_INPUT_SEED;
}

typedef struct source_result {
  const char *name;
  report_observed observed;
} source_result;

static int observe(const char *command, const char *path, int program_argc, char **program_argv,
                   const compare_sources_options *o, ms_comparison *comparison, int side,
                   source_result *r, int *program_status) {
  int status = 1;
  ms_open_options open_options;
  cli_open_options_init(&open_options);
  if (program_argc == 0 && (o->footprint || o->length) && is_seed(path)) {
    open_options.expand_seeds = 1;
    open_options.seed_footprint = o->footprint;
    open_options.seed_length = o->length;
  }
  ms_source *source = cli_open_source(command, path, program_argc, program_argv, &open_options);
  if (!source) goto done;
  if (ms_comparison_observe(comparison, side, source, &o->config) < 0) {
    cli_fail(command);
    goto done;
  }
  *program_status = cli_program_status(source);
  if (report_observe(command, &r->observed, ms_source_info(source), program_argc ? NULL : path) < 0)
    goto done;
  status = 0;
done:
  ms_source_destroy(source);
  return status;
}

static json_object *difference_json(ms_rate_difference d) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "points", json_object_new_int(d.count));
  json_object_object_add(o, "mean", json_object_new_double(d.mean));
  json_object_object_add(o, "max", json_object_new_double(d.max));
  return o;
}

static void write_json(FILE *out, const ms_hierarchy_config *configs, const source_result *r,
                       const ms_comparison *c) {
  const ms_rate_difference *levels = c->levels;
  json_object *root = json_object_new_object();
  json_object *sources = json_object_new_array();
  for (int s = 0; s < 2; s++) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(r[s].name));
    json_object_object_add(o, "accesses", json_object_new_int64((int64_t)c->sides[s].accesses));
    report_add_observed_json(o, &r[s].observed);
    json_object_array_add(sources, o);
  }
  json_object_object_add(root, "sources", sources);
  json_object *hierarchies = json_object_new_array();
  for (int h = 0; h < MS_EVALUATION_COUNT; h++) {
    json_object *o = json_object_new_object(), *list = json_object_new_array();
    json_object_object_add(o, "name", json_object_new_string(configs[h].name));
    for (int l = 0; l < configs[h].level_count; l++) {
      json_object *level = json_object_new_object(), *rates = json_object_new_array();
      json_object_object_add(level, "level", json_object_new_int(l + 1));
      double a = c->sides[0].rates.hit_rate[h][l], b = c->sides[1].rates.hit_rate[h][l];
      json_object_array_add(rates, json_object_new_double(a));
      json_object_array_add(rates, json_object_new_double(b));
      json_object_object_add(level, "hit_rates", rates);
      json_object_object_add(level, "difference", json_object_new_double(fabs(a - b)));
      json_object_array_add(list, level);
    }
    json_object_object_add(o, "levels", list);
    json_object_array_add(hierarchies, o);
  }
  json_object_object_add(root, "hierarchies", hierarchies);
  json_object *per_level = json_object_new_array();
  for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++) {
    if (!levels[l].count) continue;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "level", json_object_new_int(l + 1));
    json_object_object_add(o, "hierarchies", json_object_new_int(levels[l].count));
    json_object_object_add(o, "mean", json_object_new_double(levels[l].mean));
    json_object_object_add(o, "max", json_object_new_double(levels[l].max));
    json_object_array_add(per_level, o);
  }
  json_object_object_add(root, "levels", per_level);
  json_object *surface = difference_json(c->surface);
  json_object_object_add(surface, "width_512", difference_json(c->surface_512));
  json_object_object_add(root, "surface", surface);
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root,
                                         JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
}

static void write_table(FILE *out, const ms_hierarchy_config *configs, const source_result *r,
                        const ms_comparison *c) {
  const ms_rate_difference *levels = c->levels;
  ms_rate_difference all = c->surface, w512 = c->surface_512;
  for (int s = 0; s < 2; s++) {
    fprintf(out, "%c: %s (%llu accesses), ", 'A' + s, r[s].name,
            (unsigned long long)c->sides[s].accesses);
    report_write_observed(out, &r[s].observed);
  }
  fprintf(out, "hit rates on the %d evaluation hierarchies:\n", MS_EVALUATION_COUNT);
  fprintf(out, "%-12s %-5s %8s %8s %8s\n", "hierarchy", "level", "A", "B", "|A-B|");
  for (int h = 0; h < MS_EVALUATION_COUNT; h++)
    for (int l = 0; l < configs[h].level_count; l++) {
      double a = c->sides[0].rates.hit_rate[h][l], b = c->sides[1].rates.hit_rate[h][l];
      fprintf(out, "%-12s L%-4d %8.4f %8.4f %8.4f\n", l ? "" : configs[h].name, l + 1, a, b,
              fabs(a - b));
    }
  fprintf(out, "absolute difference of hit rates per level:\n");
  for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++)
    if (levels[l].count)
      fprintf(out, "  L%d mean %.4f max %.4f (%d hierarchies)\n", l + 1, levels[l].mean,
              levels[l].max, levels[l].count);
  fprintf(out, "surfaces: mean %.4f max %.4f over %d points", all.mean, all.max, all.count);
  if (w512.count)
    fprintf(out, "; width 512: mean %.4f max %.4f over %d depths\n", w512.mean, w512.max,
            w512.count);
  else
    fprintf(out, "; no width 512 in the grid\n");
}

int compare_sources(const char *command, const cli_inputs *inputs,
                    const compare_sources_options *o) {
  ms_hierarchy_config *configs = calloc(MS_EVALUATION_COUNT, sizeof *configs);
  source_result *r = calloc(2, sizeof *r);
  ms_comparison *comparison = calloc(1, sizeof *comparison);
  int status = 1, program_status = 0;
  if (!configs || !r || !comparison) {
    cli_error(command, "out of memory");
    goto done;
  }
  if (ms_evaluation_configs(configs) < 0) {
    cli_fail(command);
    goto done;
  }
  for (int s = 0; s < 2; s++) {
    int live = s == inputs->count;
    r[s].name = live ? inputs->program_argv[0] : inputs->paths[s];
    if (!live && locality_is_signature(inputs->paths[s])) {
      cli_error(command,
                "%s: a memory signature holds no accesses to simulate (two sources are traces, "
                "seeds, profiles or a program; --matrix compares surfaces of .sig files)",
                inputs->paths[s]);
      status = 2;
      goto done;
    }
  }
  for (int s = 0; s < 2; s++) {
    int live = s == inputs->count, this_status = 0;
    if (observe(command, live ? NULL : inputs->paths[s], live ? inputs->program_argc : 0,
                inputs->program_argv, o, comparison, s, &r[s], &this_status))
      goto done;
    if (this_status) program_status = this_status;
  }
  ms_comparison_finish(comparison);
  ms_output out;
  if (report_open(command, &out, o->output, inputs->program_argc > 0) < 0) goto done;
  if (o->json)
    write_json(out.file, configs, r, comparison);
  else
    write_table(out.file, configs, r, comparison);
  if (ferror(out.file)) {
    ms_output_abort(&out);
    cli_error(command, "cannot write the comparison");
    goto done;
  }
  if (report_commit(command, &out) < 0) goto done;
  status = program_status;
done:
  for (int s = 0; r && s < 2; s++)
    report_observed_free(&r[s].observed);
  free(configs);
  free(r);
  free(comparison);
  return status;
}

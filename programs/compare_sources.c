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
#include "evaluation.h"
#include "memsnap/cache.h"
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
  uint64_t accesses;
  evaluation_rates rates;
  ms_surface surface;
  report_observed observed;
} source_result;

static int observe(const char *command, const char *path, int program_argc, char **program_argv,
                   const compare_sources_options *o, const ms_hierarchy_config *configs,
                   source_result *r, int *program_status) {
  ms_hierarchy_set *set = NULL;
  ms_surface_builder *builder = NULL;
  ms_sink *sinks[2] = {NULL, NULL};
  ms_source *source = NULL;
  int status = 1;
  if (ms_hierarchy_set_new(configs, EVALUATION_COUNT, &set) < 0 ||
      ms_cache_sink_new(set, &sinks[0]) < 0 || ms_surface_builder_new(&o->config, &builder) < 0 ||
      ms_surface_sink_new(builder, &sinks[1]) < 0) {
    cli_fail(command);
    goto done;
  }
  ms_open_options open_options;
  cli_open_options_init(&open_options);
  if (program_argc == 0 && (o->footprint || o->length) && is_seed(path)) {
    open_options.expand_seeds = 1;
    open_options.seed_footprint = o->footprint;
    open_options.seed_length = o->length;
  }
  source = cli_open_source(command, path, program_argc, program_argv, &open_options);
  if (!source) goto done;
  if (ms_pipeline_run(source, sinks, 2, 0) < 0 || ms_hierarchy_set_flush(set) < 0) {
    cli_fail(command);
    goto done;
  }
  evaluation_hit_rates(set, r->rates);
  ms_surface_builder_result(builder, &r->surface);
  r->accesses = r->surface.accesses;
  *program_status = cli_program_status(source);
  if (report_observe(command, &r->observed, ms_source_info(source), program_argc ? NULL : path) < 0)
    goto done;
  status = 0;
done:
  ms_source_destroy(source);
  ms_sink_destroy(sinks[0]);
  ms_sink_destroy(sinks[1]);
  ms_hierarchy_set_free(set);
  ms_surface_builder_free(builder);
  return status;
}

/* Mean and max |a - b| over the points both surfaces have, at every width (width 0) or at
 * one width; points = 0 when they share none. */
typedef struct surface_difference {
  int points;
  double mean, max;
} surface_difference;

static surface_difference surfaces_differ(const ms_surface *a, const ms_surface *b,
                                          uint32_t width) {
  surface_difference d = {0, 0.0, 0.0};
  double sum = 0;
  for (int i = 0; i < a->width_count; i++) {
    if (width && a->widths[i] != width) continue;
    int j = ms_surface_width_index(b, a->widths[i]);
    if (j < 0) continue;
    for (int k = 0; k < a->depth_count; k++) {
      int m = ms_surface_depth_index(b, a->depths[k]);
      if (m < 0) continue;
      double diff = fabs(a->hit_rate[i][k] - b->hit_rate[j][m]);
      sum += diff;
      d.max = diff > d.max ? diff : d.max;
      d.points++;
    }
  }
  d.mean = d.points ? sum / d.points : 0.0;
  return d;
}

static json_object *difference_json(surface_difference d) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "points", json_object_new_int(d.points));
  json_object_object_add(o, "mean", json_object_new_double(d.mean));
  json_object_object_add(o, "max", json_object_new_double(d.max));
  return o;
}

static void write_json(FILE *out, const ms_hierarchy_config *configs, source_result *r,
                       const evaluation_level *levels, surface_difference all,
                       surface_difference w512) {
  json_object *root = json_object_new_object();
  json_object *sources = json_object_new_array();
  for (int s = 0; s < 2; s++) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(r[s].name));
    json_object_object_add(o, "accesses", json_object_new_int64((int64_t)r[s].accesses));
    report_add_observed_json(o, &r[s].observed);
    json_object_array_add(sources, o);
  }
  json_object_object_add(root, "sources", sources);
  json_object *hierarchies = json_object_new_array();
  for (int h = 0; h < EVALUATION_COUNT; h++) {
    json_object *o = json_object_new_object(), *list = json_object_new_array();
    json_object_object_add(o, "name", json_object_new_string(configs[h].name));
    for (int l = 0; l < configs[h].level_count; l++) {
      json_object *level = json_object_new_object(), *rates = json_object_new_array();
      json_object_object_add(level, "level", json_object_new_int(l + 1));
      json_object_array_add(rates, json_object_new_double(r[0].rates[h][l]));
      json_object_array_add(rates, json_object_new_double(r[1].rates[h][l]));
      json_object_object_add(level, "hit_rates", rates);
      json_object_object_add(level, "difference",
                             json_object_new_double(fabs(r[0].rates[h][l] - r[1].rates[h][l])));
      json_object_array_add(list, level);
    }
    json_object_object_add(o, "levels", list);
    json_object_array_add(hierarchies, o);
  }
  json_object_object_add(root, "hierarchies", hierarchies);
  json_object *per_level = json_object_new_array();
  for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++) {
    if (!levels[l].hierarchies) continue;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "level", json_object_new_int(l + 1));
    json_object_object_add(o, "hierarchies", json_object_new_int(levels[l].hierarchies));
    json_object_object_add(o, "mean", json_object_new_double(levels[l].mean));
    json_object_object_add(o, "max", json_object_new_double(levels[l].max));
    json_object_array_add(per_level, o);
  }
  json_object_object_add(root, "levels", per_level);
  json_object *surface = difference_json(all);
  json_object_object_add(surface, "width_512", difference_json(w512));
  json_object_object_add(root, "surface", surface);
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root,
                                         JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
}

static void write_table(FILE *out, const ms_hierarchy_config *configs, source_result *r,
                        const evaluation_level *levels, surface_difference all,
                        surface_difference w512) {
  for (int s = 0; s < 2; s++) {
    fprintf(out, "%c: %s (%llu accesses), ", 'A' + s, r[s].name, (unsigned long long)r[s].accesses);
    report_write_observed(out, &r[s].observed);
  }
  fprintf(out, "hit rates on the %d evaluation hierarchies:\n", EVALUATION_COUNT);
  fprintf(out, "%-12s %-5s %8s %8s %8s\n", "hierarchy", "level", "A", "B", "|A-B|");
  for (int h = 0; h < EVALUATION_COUNT; h++)
    for (int l = 0; l < configs[h].level_count; l++)
      fprintf(out, "%-12s L%-4d %8.4f %8.4f %8.4f\n", l ? "" : configs[h].name, l + 1,
              r[0].rates[h][l], r[1].rates[h][l], fabs(r[0].rates[h][l] - r[1].rates[h][l]));
  fprintf(out, "absolute difference of hit rates per level:\n");
  for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++)
    if (levels[l].hierarchies)
      fprintf(out, "  L%d mean %.4f max %.4f (%d hierarchies)\n", l + 1, levels[l].mean,
              levels[l].max, levels[l].hierarchies);
  fprintf(out, "surfaces: mean %.4f max %.4f over %d points", all.mean, all.max, all.points);
  if (w512.points)
    fprintf(out, "; width 512: mean %.4f max %.4f over %d depths\n", w512.mean, w512.max,
            w512.points);
  else
    fprintf(out, "; no width 512 in the grid\n");
}

int compare_sources(const char *command, const cli_inputs *inputs,
                    const compare_sources_options *o) {
  ms_hierarchy_config *configs = calloc(EVALUATION_COUNT, sizeof *configs);
  source_result *r = calloc(2, sizeof *r);
  int status = 1, program_status = 0;
  if (!configs || !r) {
    cli_error(command, "out of memory");
    goto done;
  }
  if (evaluation_configs(command, configs) < 0) goto done;
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
                inputs->program_argv, o, configs, &r[s], &this_status))
      goto done;
    if (this_status) program_status = this_status;
  }
  evaluation_level levels[MS_HIERARCHY_MAX_LEVELS];
  evaluation_differences(configs, r[0].rates, r[1].rates, levels);
  surface_difference all = surfaces_differ(&r[0].surface, &r[1].surface, 0);
  surface_difference w512 = surfaces_differ(&r[0].surface, &r[1].surface, 512);
  ms_output out;
  if (report_open(command, &out, o->output, inputs->program_argc > 0) < 0) goto done;
  if (o->json)
    write_json(out.file, configs, r, levels, all, w512);
  else
    write_table(out.file, configs, r, levels, all, w512);
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
  return status;
}

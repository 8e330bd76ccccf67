/* memsnap sim --hierarchy H [--hierarchy H2 ...] [--all-catalog] [--policy P] [--seed N]
 *              [--write-through] [--model memsnap|cachegrind] [--top N] [--json]
 *              [-o FILE] (TRACE | -- PROGRAM ARGS...)
 *
 * Simulates every given hierarchy in one pass over the accesses of a trace or of a live
 * program, and reports per hierarchy and level the accesses, hits, misses and hit rate,
 * their load/store/modify and per-thread splits, and the sites with most misses, after a
 * line (JSON: fields) saying what was observed (report.h).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/cache.h"
#include "report.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: memsnap sim --hierarchy H [--hierarchy H ...] [OPTIONS] (TRACE | -- PROGRAM "
          "ARGS...)\n"
          "  -H, --hierarchy H   a catalog name (memsnap hierarchies), `evaluation` (the 46\n"
          "                      evaluation hierarchies hpcmo-01..46), or size/line/ways[,...]\n"
          "                      level 1 first, sizes with k, M, G (or Ki, KiB...) suffixes:\n"
          "                      32k/64/8,256KiB/64/8 (repeatable)\n"
          "  --all-catalog       every hierarchy of the catalog (the 46 and the named ones)\n"
          "  --policy P          replacement: lru (default), fifo, random, plru\n"
          "  --seed N            seed of the random policy (default 1)\n"
          "  --write-through     write-through no-allocate (default write-back write-allocate)\n"
          "  --model M           memsnap (default: each line an access spans is an access)\n"
          "                      or cachegrind (Cachegrind 3.19's accounting)\n"
          "  --top N             sites with most misses to list per level (default 10)\n"
          "  --json              JSON report\n"
          "  -o, --output FILE   write the report to FILE (default: standard output; standard\n"
          "                      error for -- PROGRAM, whose standard output is its own)\n"
          "  --footprint F       expand a trace seed: replicate it to F bytes (k/M/G, Ki/Mi/Gi)\n"
          "  --length N          expand a trace seed: repeat it to N accesses\n");
}

typedef struct sim_options {
  const char **names;
  int name_count;
  int all_catalog;
  ms_cache_policy policy;
  uint64_t seed;
  ms_cache_write_policy write_policy;
  ms_cache_model model;
  int top;
  int json;
  uint64_t footprint, length;
  const char *output;
} sim_options;

/* "--hierarchy evaluation" names the 46 evaluation hierarchies (hpcmo-01..46). */
static int names_in(const char *name) {
  return strcmp(name, "evaluation") == 0 ? MS_HIERARCHY_CATALOG_EVALUATION : 1;
}

static int configure(const sim_options *options, const char *name, ms_hierarchy_config *config) {
  int rc = ms_hierarchy_parse(name, config);
  for (int l = 0; rc == MS_OK && l < config->level_count; l++)
    config->levels[l].policy = options->policy;
  config->write_policy = options->write_policy;
  config->model = options->model;
  config->seed = options->seed;
  return rc == MS_OK ? ms_hierarchy_config_check(config) : rc;
}

/* The configurations to simulate, or NULL after printing why not: *status is 2 for a bad
 * hierarchy (a usage error), 1 when out of memory. */
static ms_hierarchy_config *build_configs(const char *command, const sim_options *options,
                                          int *count, int *status) {
  *count = options->all_catalog ? ms_hierarchy_catalog_count() : 0;
  for (int n = 0; n < options->name_count; n++)
    *count += names_in(options->names[n]);
  ms_hierarchy_config *configs = calloc((size_t)*count, sizeof *configs);
  if (!configs) {
    cli_error(command, "out of memory");
    *status = 1;
    return NULL;
  }
  int i = 0, rc = MS_OK;
  for (int n = 0; rc == MS_OK && n < options->name_count; n++)
    if (names_in(options->names[n]) == 1)
      rc = configure(options, options->names[n], &configs[i++]);
    else
      for (int k = 0; rc == MS_OK && k < MS_HIERARCHY_CATALOG_EVALUATION; k++)
        rc = configure(options, ms_hierarchy_catalog_get(k)->name, &configs[i++]);
  for (int k = 0; rc == MS_OK && options->all_catalog && k < ms_hierarchy_catalog_count(); k++)
    rc = configure(options, ms_hierarchy_catalog_get(k)->name, &configs[i++]);
  if (rc < 0) {
    cli_error(command, "--hierarchy: %s", ms_error_message());
    *status = 2;
    free(configs);
    return NULL;
  }
  return configs;
}

static int parse_options(int argc, char **argv, sim_options *options) {
  static const struct option long_options[] = {{"hierarchy", required_argument, NULL, 'H'},
                                               {"all-catalog", no_argument, NULL, 'a'},
                                               {"policy", required_argument, NULL, 'p'},
                                               {"seed", required_argument, NULL, 's'},
                                               {"write-through", no_argument, NULL, 'w'},
                                               {"model", required_argument, NULL, 'm'},
                                               {"top", required_argument, NULL, 't'},
                                               {"json", no_argument, NULL, 'j'},
                                               {"footprint", required_argument, NULL, 'F'},
                                               {"length", required_argument, NULL, 'L'},
                                               {"output", required_argument, NULL, 'o'},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c;
  uint64_t number;
  while ((c = getopt_long(argc, argv, ":H:o:h", long_options, NULL)) != -1) {
    switch (c) {
    case 'H': options->names[options->name_count++] = optarg; break;
    case 'a': options->all_catalog = 1; break;
    case 'p':
      if ((number = (uint64_t)ms_cache_policy_parse(optarg)) > MS_CACHE_PLRU) {
        cli_error(argv[0], "unknown policy '%s' (lru, fifo, random or plru)", optarg);
        return 2;
      }
      options->policy = (ms_cache_policy)number;
      break;
    case 's':
      if (cli_parse_count(optarg, &options->seed) < 0) {
        cli_error(argv[0], "bad seed '%s'", optarg);
        return 2;
      }
      break;
    case 'w': options->write_policy = MS_CACHE_WRITE_THROUGH; break;
    case 'm':
      if ((number = (uint64_t)ms_cache_model_parse(optarg)) > MS_CACHE_MODEL_CACHEGRIND) {
        cli_error(argv[0], "unknown model '%s' (memsnap or cachegrind)", optarg);
        return 2;
      }
      options->model = (ms_cache_model)number;
      break;
    case 't':
      if (cli_parse_count(optarg, &number) < 0 || number > 1000000) {
        cli_error(argv[0], "bad --top '%s'", optarg);
        return 2;
      }
      options->top = (int)number;
      break;
    case 'j': options->json = 1; break;
    case 'o': options->output = optarg; break;
    case 'F':
    case 'L':
      if (cli_parse_expansion_option(argv[0], c, optarg, &options->footprint, &options->length))
        return 2;
      break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  return -1;
}

int cmd_sim(int argc, char **argv) {
  sim_options options = {.names = calloc((size_t)argc + 1, sizeof(char *)),
                         .policy = MS_CACHE_LRU,
                         .seed = 1,
                         .write_policy = MS_CACHE_WRITE_BACK,
                         .model = MS_CACHE_MODEL_MEMSNAP,
                         .top = 10};
  if (!options.names) {
    cli_error(argv[0], "out of memory");
    return 1;
  }
  int status = parse_options(argc, argv, &options);
  if (status >= 0) {
    free(options.names);
    return status;
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  status = 2;
  if (options.name_count == 0 && !options.all_catalog)
    cli_error(argv[0], "no hierarchy: give --hierarchy NAME or SPEC, or --all-catalog");
  else if (inputs.count > 1 || (inputs.count == 1 && inputs.program_argc > 0))
    cli_error(argv[0], "give one input: a trace or -- PROGRAM ARGS");
  else
    status = 1;
  if (status == 2) {
    free(options.names);
    return status;
  }

  int count;
  ms_hierarchy_config *configs = build_configs(argv[0], &options, &count, &status);
  ms_analysis *sim = NULL;
  ms_source *source = NULL;
  if (!configs) goto done;
  if (ms_sim_analysis_new(configs, count, options.top, &sim) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  ms_open_options open_options;
  cli_open_options_init(&open_options);
  open_options.expand_seeds = options.footprint || options.length;
  open_options.seed_footprint = options.footprint;
  open_options.seed_length = options.length;
  source = cli_open_source(argv[0], inputs.count ? inputs.paths[0] : NULL, inputs.program_argc,
                           inputs.program_argv, &open_options);
  if (!source) goto done;
  ms_sink *sink = ms_analysis_sink(sim);
  if (ms_pipeline_run(source, &sink, 1, 0) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  if (report_analysis(argv[0], sim, source, inputs.count ? inputs.paths[0] : NULL, options.output,
                      options.json ? MS_REPORT_JSON : MS_REPORT_TEXT) < 0)
    goto done;
  status = cli_program_status(source);
done:
  ms_source_destroy(source);
  ms_analysis_free(sim);
  free(configs);
  free(options.names);
  return status;
}

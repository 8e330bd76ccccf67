/* memsnap annotate -H HIERARCHY [--by code|object|allocation] [--level N] [--functions N] [--lines
 * N] [--all]
 *                  [--context N] [--source-dir DIR] [--no-source] [--policy P]
 *                  [--model M] [--json] [-o FILE] (TRACE | -- PROGRAM ARGS...)
 *
 * Where one hierarchy's misses are: accesses and misses per level of each function and
 * each source line (or each data object, or each allocating call's objects), most misses first,
 * then the hot lines' source text (memsnap/annotate.h), after the line (JSON: fields) that says
 * what was observed (report.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/analysis.h"
#include "memsnap/annotate.h"
#include "report.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: memsnap annotate -H HIERARCHY [OPTIONS] (TRACE | -- PROGRAM ARGS...)\n"
          "  -H, --hierarchy H   a catalog name (memsnap hierarchies) or size/line/ways[,...],\n"
          "                      level 1 first (one hierarchy)\n"
          "  --by WHAT           code: functions and source lines (default); object: each\n"
          "                      data object (heap block, mmap, global or static variable);\n"
          "                      allocation: the objects of each allocating call together\n"
          "  --level N           order by the misses of level N (1 first; default the last)\n"
          "  --functions N       functions to list (default 10)\n"
          "  --lines N           source lines (or objects) to list and show (default 20)\n"
          "  --all               every function and line\n"
          "  --context N         source lines shown around each hot line (default 2)\n"
          "  --source-dir DIR    look for source files there too (repeatable)\n"
          "  --no-source         no source text\n"
          "  --policy P          replacement: lru (default), fifo, random, plru\n"
          "  --model M           memsnap (default: each line an access spans is an access)\n"
          "                      or cachegrind (Cachegrind 3.19's accounting)\n"
          "  --json              JSON report (rows, no source text)\n"
          "  -o, --output FILE   write the report to FILE (default: standard output; standard\n"
          "                      error for -- PROGRAM, whose standard output is its own)\n"
          "Sites without a source line are listed by instruction (object and offset); build\n"
          "with -g for lines, and keep the symbols for functions.\n");
}

typedef struct annotate_options {
  const char *hierarchy;
  const char **source_dirs;
  int source_dir_count;
  int64_t level, functions, lines, context;
  int source, json;
  ms_annotate_by by;
  ms_cache_policy policy;
  ms_cache_model model;
  const char *output;
} annotate_options;

static int count_option(const char *command, const char *name, const char *text, int64_t low,
                        int64_t *out) {
  uint64_t value;
  if (cli_parse_count(text, &value) < 0 || value > 100000000 || (int64_t)value < low) {
    cli_error(command, "bad %s '%s'", name, text);
    return -1;
  }
  *out = (int64_t)value;
  return 0;
}

static int parse_options(int argc, char **argv, annotate_options *o) {
  static const struct option long_options[] = {{"hierarchy", required_argument, NULL, 'H'},
                                               {"by", required_argument, NULL, 'b'},
                                               {"level", required_argument, NULL, 'l'},
                                               {"functions", required_argument, NULL, 'f'},
                                               {"lines", required_argument, NULL, 'n'},
                                               {"all", no_argument, NULL, 'a'},
                                               {"context", required_argument, NULL, 'c'},
                                               {"source-dir", required_argument, NULL, 'd'},
                                               {"no-source", no_argument, NULL, 'S'},
                                               {"policy", required_argument, NULL, 'p'},
                                               {"model", required_argument, NULL, 'm'},
                                               {"json", no_argument, NULL, 'j'},
                                               {"output", required_argument, NULL, 'o'},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c, number;
  while ((c = getopt_long(argc, argv, ":H:o:h", long_options, NULL)) != -1) {
    switch (c) {
    case 'H':
      if (o->hierarchy) {
        cli_error(argv[0], "one hierarchy (-H) only; `memsnap sim` compares several");
        return 2;
      }
      o->hierarchy = optarg;
      break;
    case 'b':
      if (!strcmp(optarg, "code"))
        o->by = MS_ANNOTATE_CODE;
      else if (!strcmp(optarg, "object"))
        o->by = MS_ANNOTATE_OBJECTS;
      else if (!strcmp(optarg, "allocation"))
        o->by = MS_ANNOTATE_ALLOCATIONS;
      else {
        cli_error(argv[0], "bad --by '%s' (code, object or allocation)", optarg);
        return 2;
      }
      break;
    case 'l':
      if (count_option(argv[0], "--level", optarg, 1, &o->level) < 0) return 2;
      break;
    case 'f':
      if (count_option(argv[0], "--functions", optarg, 0, &o->functions) < 0) return 2;
      break;
    case 'n':
      if (count_option(argv[0], "--lines", optarg, 0, &o->lines) < 0) return 2;
      break;
    case 'a': o->functions = o->lines = -1; break;
    case 'c':
      if (count_option(argv[0], "--context", optarg, 0, &o->context) < 0) return 2;
      if (o->context > 1000) {
        cli_error(argv[0], "bad --context '%s' (at most 1000)", optarg);
        return 2;
      }
      break;
    case 'd': o->source_dirs[o->source_dir_count++] = optarg; break;
    case 'S': o->source = 0; break;
    case 'p':
      if ((number = ms_cache_policy_parse(optarg)) < 0 || number > MS_CACHE_PLRU) {
        cli_error(argv[0], "unknown policy '%s' (lru, fifo, random or plru)", optarg);
        return 2;
      }
      o->policy = (ms_cache_policy)number;
      break;
    case 'm':
      if ((number = ms_cache_model_parse(optarg)) < 0 || number > MS_CACHE_MODEL_CACHEGRIND) {
        cli_error(argv[0], "unknown model '%s' (memsnap or cachegrind)", optarg);
        return 2;
      }
      o->model = (ms_cache_model)number;
      break;
    case 'j': o->json = 1; break;
    case 'o': o->output = optarg; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  return -1;
}

int cmd_annotate(int argc, char **argv) {
  annotate_options o = {.source_dirs = calloc((size_t)argc + 1, sizeof(char *)),
                        .level = 0,
                        .functions = 10,
                        .lines = 20,
                        .context = 2,
                        .source = 1,
                        .policy = MS_CACHE_LRU,
                        .model = MS_CACHE_MODEL_MEMSNAP};
  if (!o.source_dirs) {
    cli_error(argv[0], "out of memory");
    return 1;
  }
  int status = parse_options(argc, argv, &o);
  if (status >= 0) {
    free(o.source_dirs);
    return status;
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  ms_hierarchy_config hierarchy;
  status = 2;
  if (!o.hierarchy)
    cli_error(argv[0], "no hierarchy: give -H NAME or SPEC (memsnap hierarchies lists them)");
  else if (inputs.count > 1 || (inputs.count == 1 && inputs.program_argc > 0))
    cli_error(argv[0], "give one input: a trace or -- PROGRAM ARGS");
  else if (ms_hierarchy_parse(o.hierarchy, &hierarchy) < 0)
    cli_error(argv[0], "--hierarchy: %s", ms_error_message());
  else if (o.level > hierarchy.level_count)
    cli_error(argv[0], "--level %lld: %s has %d levels", (long long)o.level, o.hierarchy,
              hierarchy.level_count);
  else
    status = 1;
  if (status == 2) {
    free(o.source_dirs);
    return status;
  }
  for (int l = 0; l < hierarchy.level_count; l++)
    hierarchy.levels[l].policy = o.policy;
  hierarchy.model = o.model;
  ms_analysis *annotate = NULL;
  ms_source *source = NULL;
  if (ms_hierarchy_config_check(&hierarchy) < 0) {
    cli_error(argv[0], "--hierarchy: %s", ms_error_message());
    status = 2;
    goto done;
  }
  ms_annotate_config config;
  ms_annotate_config_default(&config, &hierarchy);
  config.sort_level = (int)o.level - 1;
  config.by = o.by;
  config.functions = (int)o.functions;
  config.lines = (int)o.lines;
  config.context = (int)o.context;
  config.source = o.source;
  config.source_dirs = o.source_dirs;
  config.source_dir_count = o.source_dir_count;
  if (ms_annotate_analysis_new(&config, &annotate) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  ms_open_options open_options;
  cli_open_options_init(&open_options);
  open_options.capture.objects = o.by != MS_ANNOTATE_CODE; /* a live program's, if asked */
  source = cli_open_source(argv[0], inputs.count ? inputs.paths[0] : NULL, inputs.program_argc,
                           inputs.program_argv, &open_options);
  if (!source) goto done;
  ms_sink *sink = ms_analysis_sink(annotate);
  if (ms_pipeline_run(source, &sink, 1, 0) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  if (report_analysis(argv[0], annotate, source, inputs.count ? inputs.paths[0] : NULL, o.output,
                      o.json ? MS_REPORT_JSON : MS_REPORT_TEXT) < 0)
    goto done;
  status = cli_program_status(source);
done:
  ms_source_destroy(source);
  ms_analysis_free(annotate);
  free(o.source_dirs);
  return status;
}

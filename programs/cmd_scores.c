/* memsnap scores [--word B] [--lookback N] [--window-log2 L] [--top N] [--json]
 *                [--sample ON/OFF] [-o FILE] (TRACE | -- PROGRAM ARGS)
 *
 * Spatial and temporal locality scores of the whole run and of each site with its source
 * line, sorted by contribution (lib/locality/scores.c; definitions in scores.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "locality_cli.h"
#include "memsnap/scores.h"
#include "report.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap scores [OPTIONS] (TRACE | -- PROGRAM ARGS...)\n"
              "  --word B           word size in bytes (default 8)\n"
              "  --lookback N       accesses in the spatial lookback window (default 32)\n"
              "  --window-log2 L    temporal window of 2^L words (default 16)\n"
              "  --top N            sites to list (default 20; 0: none; all: every site)\n"
              "  --json             JSON report\n"
              "  --sample ON/OFF    interval sampling: keep ON accesses, drop OFF (e.g. 1M/9M)\n"
              "  -o, --output FILE  write the report to FILE (default: standard output; standard\n"
              "                     error for -- PROGRAM, whose standard output is its own)\n");
}

typedef struct scores_options {
  ms_scores_config config;
  int top, json;
  uint64_t sample_on, sample_off;
  const char *output;
} scores_options;

static int parse_options(int argc, char **argv, scores_options *o) {
  static const struct option long_options[] = {{"word", required_argument, NULL, 'W'},
                                               {"lookback", required_argument, NULL, 'l'},
                                               {"window-log2", required_argument, NULL, 'L'},
                                               {"top", required_argument, NULL, 't'},
                                               {"json", no_argument, NULL, 'j'},
                                               {"sample", required_argument, NULL, 's'},
                                               {"output", required_argument, NULL, 'o'},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c;
  uint64_t n;
  while ((c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1) {
    int scores = locality_parse_scores_option(argv[0], c, optarg, &o->config);
    if (scores < 0) return 2;
    if (scores > 0) continue;
    switch (c) {
    case 't':
      if (!strcmp(optarg, "all"))
        o->top = -1;
      else if (cli_parse_count(optarg, &n) < 0 || n > 1000000) {
        cli_error(argv[0], "bad --top '%s' (a count or all)", optarg);
        return 2;
      } else
        o->top = (int)n;
      break;
    case 'j': o->json = 1; break;
    case 's':
      if (cli_parse_sample(optarg, &o->sample_on, &o->sample_off) < 0) {
        cli_error(argv[0], "bad --sample '%s' (ON/OFF accesses, e.g. 1M/9M)", optarg);
        return 2;
      }
      break;
    case 'o': o->output = optarg; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  if (ms_scores_config_check(&o->config) < 0) {
    cli_error(argv[0], "%s", ms_error_message());
    return 2;
  }
  return -1;
}

int cmd_scores(int argc, char **argv) {
  scores_options o = {.top = 20};
  ms_scores_config_default(&o.config);
  int status = parse_options(argc, argv, &o);
  if (status >= 0) return status;
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count + (inputs.program_argc > 0) != 1) {
    cli_error(argv[0], "give one input: a trace or -- PROGRAM ARGS");
    return 2;
  }
  ms_analysis *scores = NULL;
  ms_source *source = NULL;
  status = 1;
  if (ms_scores_analysis_new(&o.config, o.top, (ms_analysis_sampling){o.sample_on, o.sample_off},
                             &scores) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  source = cli_open_source(argv[0], inputs.count ? inputs.paths[0] : NULL, inputs.program_argc,
                           inputs.program_argv, NULL);
  if (!source) goto done;
  ms_sink *sink = ms_analysis_sink(scores);
  if (ms_pipeline_run(source, &sink, 1, 0) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  if (report_analysis(argv[0], scores, source, inputs.count ? inputs.paths[0] : NULL, o.output,
                      o.json ? MS_REPORT_JSON : MS_REPORT_TEXT) < 0)
    goto done;
  status = cli_program_status(source);
done:
  ms_source_destroy(source);
  ms_analysis_free(scores);
  return status;
}

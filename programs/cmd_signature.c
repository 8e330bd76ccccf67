/* memsnap signature [--width 512] [--word 4] [--sample ON/OFF [--sample-cold] [--warmup N]]
 *                   [--per-site [--site-cap N]] [--widths | --widths-shards RATE]
 *                   [--json] [-o OUT.sig] (TRACE | -- PROGRAM ARGS...)
 *
 * Extracts the memory signature of a trace or a live program (memsnap/signature.h): the
 * reuse CDF at the maximal width and the alpha values by reuse bin, optionally with
 * interval sampling (by default the LRU order is kept across the skipped accesses and the
 * trees of halves follow them; --sample-cold starts each interval cold as the
 * dissertation's tracer; --warmup feeds the end of each skipped run to the state without
 * counting it) and per-site bins; --widths adds the reuse CDFs of the narrower widths (whole
 * program, the modeled accesses), exact or by SHARDS sampling. Writes the .sig text format,
 * or JSON with --json.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/output.h"
#include "memsnap/sample.h"
#include "memsnap/signature.h"
#include "report.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: memsnap signature [OPTIONS] [-o OUT.sig] (TRACE | -- PROGRAM ARGS...)\n"
          "  -o, --output FILE   where to write (default: standard output, standard error\n"
          "                      for -- PROGRAM, whose standard output is its own; %%r: the\n"
          "                      MPI rank, %%p: the pid)\n"
          "  --width N           maximal line width in bytes, a power of two (default 512)\n"
          "  --word N            word size in bytes, a power of two (default 4)\n"
          "  --sample ON/OFF     interval sampling: ON accesses modeled, OFF skipped, e.g. 1M/9M;\n"
          "                      the LRU order is kept across the skipped accesses, and the\n"
          "                      trees of halves follow them (nothing of them is counted)\n"
          "  --sample-cold       with --sample: every interval starts cold (no history)\n"
          "  --warmup N          with --sample: the last N skipped accesses before each interval\n"
          "                      update the model's state without being counted\n"
          "  --per-site          also one signature per site (results binned, state shared)\n"
          "  --site-cap N        with --per-site: model at most N accesses of each site\n"
          "  --widths            also the reuse CDFs of the narrower widths (word..width/2),\n"
          "                      whole program, exact (as `memsnap surface` counts them)\n"
          "  --widths-shards RATE  the same estimated by SHARDS sampling at RATE in (0, 1)\n"
          "  --json              JSON instead of the .sig text format\n");
}

typedef struct signature_options {
  ms_signature_config config;
  uint64_t sample_on, sample_off;
  uint64_t warmup; /* accesses before each interval that warm the model */
  int cold;        /* forget the model's history at each interval */
  int json;
  const char *output;
} signature_options;

static int parse_power_of_two(const char *command, const char *name, const char *text,
                              uint32_t *out) {
  uint64_t value;
  if (cli_parse_count(text, &value) < 0 || value == 0 || (value & (value - 1)) ||
      value > (1u << 30)) {
    cli_error(command, "bad %s '%s' (a power of two)", name, text);
    return -1;
  }
  *out = (uint32_t)value;
  return 0;
}

static int parse_sample(const char *command, const char *text, signature_options *options) {
  if (cli_parse_sample(text, &options->sample_on, &options->sample_off) == 0) return 0;
  cli_error(command, "bad --sample '%s' (ON/OFF counts such as 1M/9M, ON > 0)", text);
  return -1;
}

static int parse_options(int argc, char **argv, signature_options *options) {
  static const struct option long_options[] = {{"output", required_argument, NULL, 'o'},
                                               {"width", required_argument, NULL, 'w'},
                                               {"word", required_argument, NULL, 'W'},
                                               {"sample", required_argument, NULL, 's'},
                                               {"sample-cold", no_argument, NULL, 'C'},
                                               {"warmup", required_argument, NULL, 'u'},
                                               {"per-site", no_argument, NULL, 'p'},
                                               {"site-cap", required_argument, NULL, 'c'},
                                               {"widths", no_argument, NULL, 'x'},
                                               {"widths-shards", required_argument, NULL, 'X'},
                                               {"json", no_argument, NULL, 'j'},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c, cap_given = 0;
  while ((c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1) {
    switch (c) {
    case 'o': options->output = optarg; break;
    case 'w':
      if (parse_power_of_two(argv[0], "--width", optarg, &options->config.width) < 0) return 2;
      break;
    case 'W':
      if (parse_power_of_two(argv[0], "--word", optarg, &options->config.word) < 0) return 2;
      break;
    case 's':
      if (parse_sample(argv[0], optarg, options) < 0) return 2;
      break;
    case 'C': options->cold = 1; break;
    case 'u':
      if (cli_parse_count(optarg, &options->warmup) < 0) {
        cli_error(argv[0], "bad --warmup '%s' (a count)", optarg);
        return 2;
      }
      break;
    case 'p': options->config.per_site = 1; break;
    case 'c':
      if (cli_parse_count(optarg, &options->config.site_cap) < 0 || options->config.site_cap == 0) {
        cli_error(argv[0], "bad --site-cap '%s' (a count > 0)", optarg);
        return 2;
      }
      cap_given = 1;
      break;
    case 'x':
      if (options->config.widths > 0 && options->config.widths < 1) {
        cli_error(argv[0], "give --widths or --widths-shards, not both");
        return 2;
      }
      options->config.widths = 1;
      break;
    case 'X': {
      char *end;
      double rate = strtod(optarg, &end);
      if (end == optarg || *end || !(rate > 0 && rate < 1)) {
        cli_error(argv[0], "bad --widths-shards '%s' (a sampling rate in (0, 1))", optarg);
        return 2;
      }
      if (options->config.widths >= 1) {
        cli_error(argv[0], "give --widths or --widths-shards, not both");
        return 2;
      }
      options->config.widths = rate;
      break;
    }
    case 'j': options->json = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  if (options->output && strcmp(options->output, "-")) { /* a bad pattern before the run */
    char *name = cli_output_name(argv[0], "-o", options->output);
    if (!name) return 2;
    free(name);
  }
  if ((options->cold || options->warmup) && !options->sample_off) {
    cli_error(argv[0], "--sample-cold and --warmup need --sample ON/OFF with OFF > 0");
    return 2;
  }
  if (options->warmup > options->sample_off) {
    cli_error(argv[0], "--warmup %llu exceeds the %llu skipped accesses of --sample",
              (unsigned long long)options->warmup, (unsigned long long)options->sample_off);
    return 2;
  }
  if (cap_given && !options->config.per_site) {
    cli_error(argv[0], "--site-cap needs --per-site");
    return 2;
  }
  return -1;
}

static int write_signature(const char *command, const ms_analysis *analysis,
                           const ms_source *source, const signature_options *options, int live) {
  ms_output output;
  char *path = options->output ? cli_output_name(command, "-o", options->output) : NULL;
  if (options->output && !path) return 2;
  int opened = report_open(command, &output, path, live);
  free(path);
  if (opened < 0) return 1;
  int rc = ms_analysis_write(analysis, ms_source_info(source), output.file,
                             options->json ? MS_REPORT_JSON : MS_REPORT_TEXT);
  if (rc < 0) {
    ms_output_abort(&output);
    return cli_fail(command);
  }
  if (ms_output_commit(&output) < 0) return cli_fail(command);
  return 0;
}

int cmd_signature(int argc, char **argv) {
  signature_options options = {0};
  ms_signature_config_default(&options.config);
  int status = parse_options(argc, argv, &options);
  if (status >= 0) return status;
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count + (inputs.program_argc > 0) != 1) {
    cli_error(argv[0], "give one input: a trace or -- PROGRAM ARGS");
    return 2;
  }
  if (options.config.word >= options.config.width) {
    cli_error(argv[0], "--word %u must be smaller than --width %u", options.config.word,
              options.config.width);
    return 2;
  }
  ms_signature_sampling sampling = {.on = options.sample_off > 0 ? options.sample_on : 0,
                                    .off = options.sample_off,
                                    .cold = options.cold,
                                    .warmup = options.warmup};
  ms_analysis *analysis = NULL;
  ms_source *source = NULL;
  status = 1;
  if (ms_signature_analysis_new(&options.config, &sampling, &analysis) < 0) {
    status = cli_fail(argv[0]);
    goto done;
  }
  source = cli_open_source(argv[0], inputs.count ? inputs.paths[0] : NULL, inputs.program_argc,
                           inputs.program_argv, NULL);
  if (!source) goto done;
  ms_sink *sink = ms_analysis_sink(analysis);
  if (ms_pipeline_run(source, &sink, 1, 0) < 0) {
    status = cli_fail(argv[0]);
    goto done;
  }
  status = write_signature(argv[0], analysis, source, &options, inputs.program_argc > 0);
  if (status == 0) status = cli_program_status(source);
done:
  ms_source_destroy(source);
  ms_analysis_free(analysis);
  return status;
}

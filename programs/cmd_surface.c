/* memsnap surface [--widths W] [--depths D] [--format table|csv|json] [--shards RATE
 *                 [--shards-check]] [--sample ON/OFF] [-o FILE] (TRACE | SIG | -- PROGRAM ARGS)
 *
 * The cache surface: exact hit rates of fully-associative LRU caches of every width x depth
 * of a grid, with the reuse-distance histogram per width (lib/locality/surface.c).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "locality_cli.h"
#include "memsnap/evaluation.h"
#include "memsnap/output.h"
#include "memsnap/surface.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: memsnap surface [OPTIONS] (TRACE | SIG | -- PROGRAM ARGS...)\n"
          "  -w, --widths W      line widths in bytes: LO:HI (powers of two) or A,B,C\n"
          "                      (default 4:512)\n"
          "  -d, --depths D      depths in lines: LO:HI or A,B,C (default 1:65536)\n"
          "  --format F          table (default), csv or json\n"
          "  --json              same as --format json\n"
          "  --shards RATE       spatially hashed sampling of lines (SHARDS) at RATE in (0,1),\n"
          "                      e.g. 0.01\n"
          "  --shards-check      with --shards: also compute the exact surface in the same pass\n"
          "                      and report the sampling error\n"
          "  --sample ON/OFF     interval sampling: keep ON accesses, drop OFF (e.g. 1M/9M)\n"
          "  --threads N         exact surface: N threads share the widths (default: one\n"
          "                      per CPU; the result is the same)\n"
          "  -o, --output FILE   write the report to FILE (default: standard output; standard\n"
          "                      error for -- PROGRAM, whose standard output is its own)\n");
}

typedef struct surface_options {
  locality_input_options input;
  const char *format;
  int shards_check;
  const char *output;
} surface_options;

static int parse_options(int argc, char **argv, surface_options *o) {
  static const struct option long_options[] = {
      {"widths", required_argument, NULL, 'w'},
      {"depths", required_argument, NULL, 'd'},
      {"format", required_argument, NULL, 'f'},
      {"json", no_argument, NULL, 'j'},
      {"shards", required_argument, NULL, 'S'},
      {"shards-check", no_argument, NULL, 'C'},
      {"sample", required_argument, NULL, 's'},
      {"output", required_argument, NULL, 'o'},
      {"threads", required_argument, NULL, LOCALITY_OPT_THREADS},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":w:d:o:h", long_options, NULL)) != -1) {
    int input = locality_parse_input_option(argv[0], c, optarg, &o->input);
    if (input < 0) return 2;
    if (input > 0) continue;
    switch (c) {
    case 'f':
      if (locality_parse_format(argv[0], optarg, &o->format) < 0) return 2;
      break;
    case 'j': o->format = "json"; break;
    case 'C': o->shards_check = 1; break;
    case 'o': o->output = optarg; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  if (ms_surface_config_check(&o->input.config) < 0) {
    cli_error(argv[0], "%s", ms_error_message());
    return 2;
  }
  if (o->shards_check && o->input.config.sample_rate >= 1.0) {
    cli_error(argv[0], "--shards-check needs --shards RATE");
    return 2;
  }
  return -1;
}

/* The sampled surface against the exact one: mean absolute error over all points and over
 * the points of depth >= 256 (where the sample is large), and the largest. */
static void write_error(FILE *out, const ms_surface *sampled, const ms_surface *exact) {
  ms_rate_difference all = ms_surface_rate_difference(sampled, exact, 0);
  ms_rate_difference deep = ms_surface_rate_difference_from(sampled, exact, 0, 256);
  fprintf(out, "sampling error (rate %g", sampled->sample_rate);
  if (sampled->near_depth_count > 0)
    fprintf(out, "; depths %" PRIu64 "..%" PRIu64 " at %g", sampled->depths[0],
            sampled->depths[sampled->near_depth_count - 1], sampled->near_rate);
  fprintf(out, "): mean absolute error %.4f over all %d points, ", all.mean, all.count);
  if (deep.count) fprintf(out, "%.4f over the %d points of depth >= 256, ", deep.mean, deep.count);
  fprintf(out, "max %.4f\n", all.max);
}

/* The surface in the format of the options, after what was observed (not in csv, which is
 * data for other programs). Returns 0 or 1. */
static int write_report(const char *command, const surface_options *o, const ms_surface *surface,
                        const report_observed *observed, int live) {
  ms_output out;
  if (report_open(command, &out, o->output, live) < 0) return 1;
  char *json = NULL;
  size_t json_length = 0;
  int rc;
  if (!strcmp(o->format, "json")) {
    FILE *text = open_memstream(&json, &json_length);
    rc = text ? ms_surface_write_json(text, surface) : -1;
    if (text && fclose(text) != 0) rc = -1;
    if (rc >= 0) rc = report_write_json(out.file, observed, json);
  } else if (!strcmp(o->format, "csv")) {
    rc = ms_surface_write_csv(out.file, surface);
  } else {
    report_write_observed(out.file, observed);
    rc = ms_surface_write_table(out.file, surface);
  }
  free(json);
  return report_finish(command, &out, rc) < 0 ? 1 : 0;
}

int cmd_surface(int argc, char **argv) {
  surface_options o = {.format = "table"};
  ms_surface_config_default(&o.input.config);
  int status = parse_options(argc, argv, &o);
  if (status >= 0) return status;
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count + (inputs.program_argc > 0) != 1) {
    cli_error(argv[0], "give one input: a trace, a .sig or -- PROGRAM ARGS");
    return 2;
  }
  static ms_surface surface, exact;
  int program_status, live = inputs.program_argc > 0;
  report_observed observed;
  status = locality_surface_observe(argv[0], inputs.count ? inputs.paths[0] : NULL,
                                    inputs.program_argc, inputs.program_argv, &o.input, &surface,
                                    o.shards_check ? &exact : NULL, &program_status, &observed);
  if (status) return status;
  status = write_report(argv[0], &o, &surface, &observed, live);
  if (status == 0 && o.shards_check) {
    /* beside the report: on standard error when the report or the program has standard
     * output */
    int report_is_file = o.output && strcmp(o.output, "-") != 0;
    write_error(report_is_file && !live ? stdout : stderr, &surface, &exact);
  }
  report_observed_free(&observed);
  return status ? status : program_status;
}

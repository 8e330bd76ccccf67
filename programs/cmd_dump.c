/* memsnap dump [--from I] [--limit N] [--format text|din] FILE | -- PROG ARGS
 * (--count N is --limit N, as in memsnap replay)
 *
 * Prints accesses, one per line. Text: "INDEX THREAD KIND ADDRESS SIZE SITE", e.g.
 * "12 0 load 0x7ffd1c 8 main (stream.c:14)"; din: DineroIV input (see memsnap/trace.h).
 * --from seeks (directly in a .mtr, by skipping elsewhere).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memsnap/trace.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: memsnap dump [--from I] [--limit N] [--format text|din] FILE | -- PROGRAM ARGS\n"
          "      --from I    start at the I-th access (0-based)\n"
          "  -n, --limit N   print at most N accesses (e.g. 100, 4k, 1M); --count N is\n"
          "                  the same (as in memsnap replay)\n"
          "      --format F  text (default) or din\n");
}

int cmd_dump(int argc, char **argv) {
  static const struct option options[] = {
      {"from", required_argument, NULL, 'f'},  {"limit", required_argument, NULL, 'n'},
      {"count", required_argument, NULL, 'n'}, {"format", required_argument, NULL, 'F'},
      {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
  uint64_t from = 0, limit = 0;
  int din = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":n:h", options, NULL)) != -1) {
    switch (c) {
    case 'f':
    case 'n':
      if (cli_parse_count(optarg, c == 'f' ? &from : &limit) < 0) {
        cli_error(argv[0], "option %s: '%s' is not a count", c == 'f' ? "--from" : "--limit",
                  optarg);
        return 2;
      }
      break;
    case 'F':
      if (strcmp(optarg, "text") != 0 && strcmp(optarg, "din") != 0) {
        cli_error(argv[0], "option --format: '%s' is not text or din", optarg);
        return 2;
      }
      din = strcmp(optarg, "din") == 0;
      break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count > 1 || (inputs.count == 1 && inputs.program_argc > 0)) {
    cli_error(argv[0], "give one trace file or -- PROGRAM ARGS");
    return 2;
  }
  ms_source *source = cli_open_source(argv[0], inputs.count ? inputs.paths[0] : NULL,
                                      inputs.program_argc, inputs.program_argv, NULL);
  if (!source) return 1;
  ms_sink *sink = NULL;
  int rc = din ? ms_din_sink_new("-", &sink) : ms_text_sink_new(stdout, from, 0, &sink);
  if (rc == 0) rc = ms_source_skip(source, from);
  if (rc == 0) rc = ms_pipeline_run(source, &sink, 1, limit);
  int status = rc < 0 ? cli_fail(argv[0]) : cli_program_status(source);
  ms_sink_destroy(sink);
  ms_source_destroy(source);
  return status;
}

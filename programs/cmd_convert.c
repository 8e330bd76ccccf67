/* memsnap convert [--to mtr|din] IN OUT
 *
 * Converts between trace formats: Lackey or din -> .mtr, .mtr -> din, and any other
 * readable/writable pair. The output format comes from --to, else OUT's extension. OUT is
 * written under a temporary name and renamed at the end, so a failed conversion leaves no
 * file behind. OUT may not be IN under another name (a link, ./x): the rename would
 * replace the input with its own conversion.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "memsnap/trace.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap convert [--to mtr|din] IN OUT\n"
              "  --to F  output format (default: from OUT's extension, .mtr or .din)\n");
}

int cmd_convert(int argc, char **argv) {
  static const struct option options[] = {
      {"to", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  ms_trace_format to = MS_FORMAT_UNKNOWN;
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":t:h", options, NULL)) != -1) {
    switch (c) {
    case 't':
      if (strcmp(optarg, "mtr") == 0)
        to = MS_FORMAT_MTR;
      else if (strcmp(optarg, "din") == 0)
        to = MS_FORMAT_DIN;
      else {
        cli_error(argv[0], "option --to: '%s' is not mtr or din", optarg);
        return 2;
      }
      break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count != 2 || inputs.program_argc > 0) {
    cli_error(argv[0], "give an input and an output file");
    return 2;
  }
  const char *in = inputs.paths[0], *out = inputs.paths[1];
  struct stat in_stat, out_stat;
  if (stat(in, &in_stat) == 0 && stat(out, &out_stat) == 0 && in_stat.st_dev == out_stat.st_dev &&
      in_stat.st_ino == out_stat.st_ino) {
    cli_error(argv[0], "%s: the output is the input file (%s); give another output name", out, in);
    return 2;
  }
  if (to == MS_FORMAT_UNKNOWN) to = ms_trace_format_from_extension(out);
  if (to == MS_FORMAT_UNKNOWN) {
    cli_error(argv[0], "%s: cannot tell the output format from its name (use --to mtr|din)", out);
    return 2;
  }
  ms_source *source = cli_open_source(argv[0], in, 0, NULL, NULL);
  if (!source) return 1;
  ms_sink *sink;
  int rc = ms_trace_sink_new(out, to, &sink);
  if (rc == 0) {
    rc = ms_pipeline_run(source, &sink, 1, 0);
    ms_sink_destroy(sink); /* removes the temporary if the run failed */
  }
  ms_source_destroy(source);
  return rc < 0 ? cli_fail(argv[0]) : 0;
}

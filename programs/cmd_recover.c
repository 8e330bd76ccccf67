/* memsnap recover DAMAGED.mtr -o OUT.mtr
 *
 * A trace cut short (a full disk, a copy that stopped) or with a damaged byte is refused
 * whole by every reader, though the chunks before the damage are intact and checksummed.
 * recover writes a valid .mtr of those chunks (ms_mtr_recover), marked truncated, and says
 * what it kept and where the damage starts. Readers stay strict: a result computed from part
 * of a trace would pass for the whole run's, so the cut is made explicit, in a file of its
 * own that `memsnap info` reports as truncated and recovered.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "memsnap/input.h"
#include "memsnap/trace.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap recover DAMAGED.mtr -o OUT.mtr\n"
              "  a valid trace of the intact chunks of a damaged one (cut short, or with a\n"
              "  damaged byte): every chunk before the damage, checked, marked truncated\n"
              "  -o, --output FILE  the trace to write (may be DAMAGED.mtr itself;\n"
              "                     - for standard output)\n"
              "  -q, --quiet        no report (the exit status says: 0 kept some, 1 none)\n");
}

/* A reader's message without the file name it starts with. */
static const char *without_name(const char *message, const char *name) {
  size_t n = strlen(name);
  return strncmp(message, name, n) == 0 && strncmp(message + n, ": ", 2) == 0 ? message + n + 2
                                                                              : message;
}

int cmd_recover(int argc, char **argv) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char *out = NULL;
  int quiet = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:qh", options, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'q': quiet = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count != 1 || inputs.program_argc > 0) {
    cli_error(argv[0], inputs.count == 0 ? "no trace given (memsnap recover DAMAGED.mtr -o OUT.mtr)"
                                         : "give one damaged trace");
    return 2;
  }
  if (!out) {
    cli_error(argv[0], "no output given: -o OUT.mtr");
    return 2;
  }
  if (strcmp(out, "-") == 0 && isatty(STDOUT_FILENO)) {
    cli_error(argv[0], "-o -: standard output is a terminal (redirect it, or name a file)");
    return 2;
  }
  const char *path = inputs.paths[0], *name = ms_input_name(path);
  ms_mtr_recovery report;
  if (ms_mtr_recover(path, out, &report) < 0) return cli_fail(argv[0]);
  if (quiet) return 0;
  const char *out_name = strcmp(out, "-") == 0 ? "standard output" : out;
  if (report.intact) {
    fprintf(stderr,
            "memsnap recover: %s: no damage found: copied whole to %s (%" PRIu64
            " chunk%s, %" PRIu64 " accesses)\n",
            name, out_name, report.chunks, report.chunks == 1 ? "" : "s", report.accesses);
    return 0;
  }
  const char *why = without_name(report.damage, name);
  char at[64]; /* the reason's own "offset N: ", when N is where the damage starts */
  snprintf(at, sizeof at, "offset %" PRIu64 ": ", report.damage_offset);
  if (!strncmp(why, at, strlen(at))) why += strlen(at);
  fprintf(stderr,
          "memsnap recover: %s: damaged from offset %" PRIu64 ", after %" PRIu64
          " intact chunk%s: %s\n",
          name, report.damage_offset, report.chunks, report.chunks == 1 ? "" : "s", why);
  fprintf(stderr,
          "memsnap recover: %s: kept %" PRIu64 " chunk%s, %" PRIu64
          " accesses (all those before offset %" PRIu64 " of %" PRIu64
          "), marked truncated and recovered\n",
          out_name, report.chunks, report.chunks == 1 ? "" : "s", report.accesses,
          report.damage_offset, report.file_bytes);
  if (report.sites_lost)
    fprintf(stderr,
            "memsnap recover: %s: the site table was in the damaged end: its %" PRIu32
            " sites are kept apart as \"[lost site N]\", without addresses or source lines\n",
            out_name, report.sites);
  return 0;
}

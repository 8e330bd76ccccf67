/* memsnap replay PROFILE.psnap [-o OUT.mtr|OUT.din] [--site N]... [--function F]...
 *                [--line FILE:LINE]... [--from I] [--limit N]
 * (--count N is --limit N, its name before dump's spelling was taken for both)
 *
 * Regenerates the accesses of a profile: all of them, or those of the selected sites in
 * program order, from access I (counted among the selected) without generating what
 * precedes it. Without -o, prints one access per line: index (in the selection), thread,
 * kind, address, size, site.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/psnap.h"
#include "memsnap/trace.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap replay PROFILE.psnap [-o OUT] [SELECTION] [--from I] [--limit N]\n"
              "  -o, --output FILE     write a trace (.mtr or .din) instead of text\n"
              "  -s, --site N          replay site N (repeatable)\n"
              "  -f, --function NAME   replay the sites of a function (repeatable)\n"
              "  -l, --line FILE:LINE  replay the sites of a source line (repeatable)\n"
              "      --from I          start at access I of the selection\n"
              "  -n, --limit N         at most N accesses; --count N is the same\n");
}

int cmd_replay(int argc, char **argv) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"site", required_argument, NULL, 's'},
                                          {"function", required_argument, NULL, 'f'},
                                          {"line", required_argument, NULL, 'l'},
                                          {"from", required_argument, NULL, 'F'},
                                          {"count", required_argument, NULL, 'n'},
                                          {"limit", required_argument, NULL, 'n'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char *output = NULL;
  char **sites = calloc((size_t)argc + 1, sizeof *sites);
  char **functions = calloc((size_t)argc + 1, sizeof *functions);
  char **lines = calloc((size_t)argc + 1, sizeof *lines);
  int site_count = 0, function_count = 0, line_count = 0, c, status = 0;
  ms_psnap_replay_options replay = {0};
  opterr = 0;
  optind = 1;
  while (status == 0 && (c = getopt_long(argc, argv, ":o:s:f:l:n:h", options, NULL)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 's': sites[site_count++] = optarg; break;
    case 'f': functions[function_count++] = optarg; break;
    case 'l': lines[line_count++] = optarg; break;
    case 'F':
    case 'n':
      if (cli_parse_count(optarg, c == 'F' ? &replay.from : &replay.count) < 0) {
        cli_error(argv[0], "--%s: expected a count, got '%s'", c == 'F' ? "from" : "limit", optarg);
        status = 2;
      }
      break;
    case 'h': usage(stdout); goto out;
    default: status = cli_option_error(argv[0], c, argv); break;
    }
  }
  if (status) goto out;
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count != 1 || inputs.program_argc) {
    cli_error(argv[0], "give one profile (.psnap)");
    status = 2;
    goto out;
  }
  status = 1;
  ms_psnap_profile profile;
  if (ms_psnap_profile_load(inputs.paths[0], &profile) < 0) {
    cli_fail(argv[0]);
    goto out;
  }
  if (ms_psnap_profile_pick(&profile, cli_rank, cli_thread) < 0) {
    cli_error(argv[0], "%s: %s", inputs.paths[0], ms_error_message());
    ms_psnap_profile_free(&profile);
    status = 2;
    goto out;
  }
  uint8_t *mask = NULL;
  if (site_count + function_count + line_count > 0) {
    mask = calloc(profile.site_count + 1, 1);
    for (int i = 0; mask && i < site_count; i++) {
      char *end;
      unsigned long n = strtoul(sites[i] + (sites[i][0] == 's'), &end, 10);
      if (*end || n >= profile.site_count) {
        cli_error(argv[0], "--site: no site %s in %s (%u sites)", sites[i], inputs.paths[0],
                  profile.site_count);
        status = 2;
      } else
        mask[n] = 1;
    }
    for (int i = 0; mask && i < function_count; i++)
      if (ms_psnap_select(&profile, functions[i], NULL, mask) == 0)
        cli_error(argv[0], "warning: no site of function %s in %s", functions[i], inputs.paths[0]);
    for (int i = 0; mask && i < line_count; i++)
      if (ms_psnap_select(&profile, NULL, lines[i], mask) == 0)
        cli_error(argv[0], "warning: no site at %s in %s", lines[i], inputs.paths[0]);
    if (status == 2) {
      free(mask);
      ms_psnap_profile_free(&profile);
      goto out;
    }
  }
  replay.site_mask = mask;
  ms_source *source = NULL;
  ms_sink *sink = NULL;
  /* each step runs only if the ones before it succeeded */
  if (ms_psnap_replay_open(&profile, &replay, &source) < 0 ||
      (output ? ms_trace_sink_new(output, ms_trace_format_from_extension(output), &sink)
              : ms_text_sink_new(stdout, replay.from, 1, &sink)) < 0 ||
      ms_pipeline_run(source, &sink, 1, 0) < 0)
    cli_fail(argv[0]);
  else
    status = 0;
  free(mask);
  if (sink) ms_sink_destroy(sink);
  if (source) ms_source_destroy(source);
out:
  free(sites);
  free(functions);
  free(lines);
  return status;
}

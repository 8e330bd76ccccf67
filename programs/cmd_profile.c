/* memsnap profile -o OUT.psnap[.zst] [--compress] [--all-objects] [--object NAME]...
 *                 [--function F]... [--line FILE:LINE]... [--lossless]
 *                 [--max-strides N] [--site-cap N] [--order-cap N] [--order-floor N]
 *                 [--order-window N] [--order-periods N] [--fidelity low|normal|high]
 *                 (TRACE | -- PROGRAM ARGS)
 *
 * Builds a PSnAP profile (docs/formats.md) from any source: live through Valgrind
 * without storing a trace, or from a trace file. By default only the accesses of the
 * program's own executable are kept (not the loader's or the libraries'); --all-objects
 * keeps every access, --object those of the objects named (a program whose work is in a
 * shared library). When the selection leaves out most of the stream, the summary names the
 * object it left out most and the option that would keep it. An output named *.zst, or --compress,
 * is written through zstd (every reader of a profile decompresses it). Prints a one-line summary on
 * stderr.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/fold.h"
#include "memsnap/psnap.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap profile [-o OUT.psnap] [OPTIONS] (TRACE | -- PROGRAM [ARGS...])\n"
              "  -o, --output FILE     profile to write (default: standard output, standard\n"
              "                        error for -- PROGRAM, whose standard output is its\n"
              "                        own; %%r: the MPI rank, %%p: the pid);\n"
              "                        FILE.zst is compressed with zstd\n"
              "  -z, --compress        compress with zstd whatever the name\n"
              "      --all-objects     keep the accesses of every object (loader, libraries);\n"
              "                        default: only those of the program's executable\n"
              "      --object NAME     keep the accesses of this object (repeatable): a\n"
              "                        shared library by its name (liblammps, libsqlite3.so)\n"
              "                        or the end of its path\n"
              "  -f, --function NAME   keep only the accesses of this function (repeatable)\n"
              "  -l, --line FILE:LINE  keep only the accesses of this source line (repeatable)\n"
              "      --lossless        keep the exact addresses of sites without a pattern\n"
              "      --max-strides N   unique strides per stride history (default 32)\n"
              "      --site-cap N      pattern terms per site before it is lossy (default 2048)\n"
              "      --order-cap N     order terms per thread before it is lossy (default 262144)\n"
              "      --order-floor N   the order also goes lossy when, past 16384 terms, it\n"
              "                        holds fewer than N accesses per term (default 16;\n"
              "                        0: only --order-cap; --fidelity high: 0)\n"
              "      --order-window N  order terms searched for loops, whose bodies can have\n"
              "                        up to N/2 (a power of two, 2 to 4096; default 1024)\n"
              "      --order-periods N a lossy order's path counts in at most N periods of\n"
              "                        the run, so that its phases replay in their time\n"
              "                        (default 64, with --lossless 512)\n"
              "      --fidelity LEVEL  the three caps at once, size against fidelity: low\n"
              "                        (site 128, order 16384, window 64), normal (the\n"
              "                        defaults) or high (site 4096, order 2^20, window\n"
              "                        4096: longer to build, up to 7x larger; the caps\n"
              "                        given as options win)\n"
              "      --keep-threads    one block per thread: threads that differ only by\n"
              "                        their addresses are merged by default\n"
              "      --rank R          the MPI rank the profile is of (default: the rank of\n"
              "                        mpirun's environment, if any), written as its rank\n"
              "  -q, --quiet           no summary line\n");
}

static int parse_cap(const char *command, const char *option, const char *text, uint32_t *out) {
  uint64_t value;
  if (cli_parse_count(text, &value) < 0 || value < 2 || value > (1u << 30)) {
    cli_error(command, "%s: expected a count from 2 to 2^30, got '%s'", option, text);
    return 2;
  }
  *out = (uint32_t)value;
  return 0;
}

int cmd_profile(int argc, char **argv) {
  enum {
    LOSSLESS = 256,
    MAX_STRIDES,
    SITE_CAP,
    ORDER_CAP,
    ORDER_WINDOW,
    ORDER_PERIODS,
    FIDELITY,
    ALL_OBJECTS,
    KEEP_THREADS,
    OBJECT,
    ORDER_FLOOR
  };
  size_t output_length;
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"function", required_argument, NULL, 'f'},
                                          {"line", required_argument, NULL, 'l'},
                                          {"lossless", no_argument, NULL, LOSSLESS},
                                          {"all-objects", no_argument, NULL, ALL_OBJECTS},
                                          {"object", required_argument, NULL, OBJECT},
                                          {"max-strides", required_argument, NULL, MAX_STRIDES},
                                          {"site-cap", required_argument, NULL, SITE_CAP},
                                          {"order-cap", required_argument, NULL, ORDER_CAP},
                                          {"order-floor", required_argument, NULL, ORDER_FLOOR},
                                          {"order-window", required_argument, NULL, ORDER_WINDOW},
                                          {"order-periods", required_argument, NULL, ORDER_PERIODS},
                                          {"fidelity", required_argument, NULL, FIDELITY},
                                          {"keep-threads", no_argument, NULL, KEEP_THREADS},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"compress", no_argument, NULL, 'z'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  ms_psnap_options settings;
  ms_psnap_options_default(&settings);
  const char *output = NULL;
  char *expanded = NULL;
  const char **functions = calloc((size_t)argc + 1, sizeof *functions);
  const char **lines = calloc((size_t)argc + 1, sizeof *lines);
  const char **objects = calloc((size_t)argc + 1, sizeof *objects);
  int quiet = 0, compress = 0, c, status = 0, fidelity = 1, explicit_caps = 0;
  uint64_t count;
  if (!functions || !lines || !objects) {
    free(functions), free(lines), free(objects);
    cli_error(argv[0], "out of memory");
    return 1;
  }
  opterr = 0;
  optind = 1;
  while (status == 0 && (c = getopt_long(argc, argv, ":o:f:l:qzh", options, NULL)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'f': functions[settings.function_count++] = optarg; break;
    case 'l':
      if (!strrchr(optarg, ':')) {
        cli_error(argv[0], "--line: expected FILE:LINE, got '%s'", optarg);
        status = 2;
      }
      lines[settings.line_count++] = optarg;
      break;
    case LOSSLESS: settings.lossless = 1; break;
    case KEEP_THREADS: settings.keep_threads = 1; break;
    case ALL_OBJECTS: settings.all_objects = 1; break;
    case OBJECT:
      if (!*optarg || strchr(optarg, ' ')) {
        cli_error(argv[0], "--object: expected an object's name or path without spaces, got '%s'",
                  optarg);
        status = 2;
      }
      objects[settings.object_count++] = optarg;
      break;
    case MAX_STRIDES:
      status = parse_cap(argv[0], "--max-strides", optarg, &settings.max_strides);
      if (status == 0 && settings.max_strides > 64) {
        cli_error(argv[0], "--max-strides: at most 64");
        status = 2;
      }
      break;
    case SITE_CAP:
      status = parse_cap(argv[0], "--site-cap", optarg, &settings.site_cap);
      explicit_caps |= 1;
      break;
    case ORDER_CAP:
      status = parse_cap(argv[0], "--order-cap", optarg, &settings.order_cap);
      explicit_caps |= 2;
      break;
    case ORDER_FLOOR:
      explicit_caps |= 16;
      if (cli_parse_count(optarg, &count) < 0 || count > (1u << 20)) {
        cli_error(argv[0], "--order-floor: expected a count from 0 to 2^20, got '%s'", optarg);
        status = 2;
      }
      settings.order_floor = (uint32_t)count;
      break;
    case FIDELITY:
      if (!strcmp(optarg, "low"))
        fidelity = 0;
      else if (!strcmp(optarg, "normal"))
        fidelity = 1;
      else if (!strcmp(optarg, "high"))
        fidelity = 2;
      else {
        cli_error(argv[0], "--fidelity: expected low, normal or high, got '%s'", optarg);
        status = 2;
      }
      break;
    case ORDER_PERIODS:
      explicit_caps |= 8;
      if (cli_parse_count(optarg, &count) < 0 || count < 1 || count > (1u << 20)) {
        cli_error(argv[0], "--order-periods: expected a count from 1 to 2^20, got '%s'", optarg);
        status = 2;
      }
      settings.order_periods = (uint32_t)count;
      break;
    case ORDER_WINDOW:
      explicit_caps |= 4;
      status = parse_cap(argv[0], "--order-window", optarg, &settings.order_window);
      if (status == 0 && (settings.order_window > MS_FOLD_MAX_WINDOW ||
                          (settings.order_window & (settings.order_window - 1)))) {
        cli_error(argv[0], "--order-window: expected a power of two from 2 to %d, got '%s'",
                  MS_FOLD_MAX_WINDOW, optarg);
        status = 2;
      }
      break;
    case 'q': quiet = 1; break;
    case 'z': compress = 1; break;
    case 'h': usage(stdout); goto out;
    default: status = cli_option_error(argv[0], c, argv); break;
    }
  }
  if (status) goto out;
  /* the preset of the fidelity, then the caps given explicitly */
  ms_psnap_options given = settings;
  ms_psnap_options_preset(&settings, fidelity);
  if (explicit_caps & 1) settings.site_cap = given.site_cap;
  if (explicit_caps & 2) settings.order_cap = given.order_cap;
  if (explicit_caps & 4) settings.order_window = given.order_window;
  if (explicit_caps & 8) settings.order_periods = given.order_periods;
  if (explicit_caps & 16) settings.order_floor = given.order_floor;
  settings.functions = functions;
  settings.lines = lines;
  settings.objects = objects;
  settings.keep_threads = given.keep_threads;
  const char *mpi_rank = cli_mpi_rank();
  if (cli_rank >= 0)
    settings.has_rank = 1, settings.rank = (uint32_t)cli_rank;
  else if (mpi_rank && strspn(mpi_rank, "0123456789") == strlen(mpi_rank) && *mpi_rank &&
           strlen(mpi_rank) < 10)
    settings.has_rank = 1, settings.rank = (uint32_t)strtoul(mpi_rank, NULL, 10);
  cli_rank = -1; /* the profile's own rank, not one to pick in its input */
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count > 1 || (inputs.count == 1 && inputs.program_argc > 0)) {
    cli_error(argv[0], "give one input: a trace, or -- PROGRAM ARGS");
    status = 2;
    goto out;
  }
  /* a live program's standard output is its own: without -o the profile goes to stderr */
  int to_stderr = !output && inputs.program_argc > 0;
  if (!output) output = "-";
  if (strcmp(output, "-") && !(output = expanded = cli_output_name(argv[0], "-o", output))) {
    status = 2;
    goto out;
  }
  ms_analysis *builder = NULL;
  ms_source *source = NULL;
  status = 1;
  if (ms_profile_analysis_new(&settings, &builder) < 0) {
    cli_fail(argv[0]);
    goto out;
  }
  source = cli_open_source(argv[0], inputs.count ? inputs.paths[0] : NULL, inputs.program_argc,
                           inputs.program_argv, NULL);
  int zst = compress ||
            ((output_length = strlen(output)) > 4 && !strcmp(output + output_length - 4, ".zst"));
  ms_sink *sink = ms_analysis_sink(builder);
  const ms_psnap_profile *result = NULL;
  if (source && ms_pipeline_run(source, &sink, 1, 0) >= 0 &&
      (result = ms_analysis_result(builder)) &&
      (to_stderr ? (zst ? ms_psnap_profile_write_compressed(result, stderr)
                        : ms_psnap_profile_write(result, stderr))
                 : ms_psnap_profile_save_as(result, output, zst)) >= 0) {
    status = inputs.program_argc > 0 ? cli_program_status(source) : 0;
    if (!quiet) {
      /* what is not exact, why (which cap), and what the selection left out */
      ms_psnap_lossy_summary lossy;
      ms_psnap_profile_lossy(result, &lossy);
      double total = (double)(result->access_count ? result->access_count : 1);
      if (result->blocks)
        fprintf(stderr, "memsnap profile: %s: %llu accesses, %u sites, %u threads in %u blocks; ",
                output, (unsigned long long)result->access_count, result->site_count,
                result->info.thread_count, result->thread_count);
      else
        fprintf(stderr, "memsnap profile: %s: %llu accesses, %u sites, %u threads; ", output,
                (unsigned long long)result->access_count, result->site_count, result->thread_count);
      if (lossy.sites)
        fprintf(stderr, "%u sites lossy (over --site-cap %u: %.1f%% of the accesses)", lossy.sites,
                settings.site_cap, 100.0 * (double)lossy.accesses / total);
      else
        fprintf(stderr, "every site exact");
      if (lossy.threads && result->floor_threads >= lossy.threads)
        fprintf(stderr,
                ", order lossy in %u of %u %s (under --order-floor %u accesses per term: path"
                " counts)",
                lossy.threads, result->thread_count, result->blocks ? "blocks" : "threads",
                settings.order_floor);
      else if (lossy.threads && result->floor_threads)
        fprintf(stderr,
                ", order lossy in %u of %u %s (%u under --order-floor %u accesses per term,"
                " the others over --order-cap %u: path counts)",
                lossy.threads, result->thread_count, result->blocks ? "blocks" : "threads",
                result->floor_threads, settings.order_floor, settings.order_cap);
      else if (lossy.threads)
        fprintf(stderr, ", order lossy in %u of %u %s (over --order-cap %u: path counts)",
                lossy.threads, result->thread_count, result->blocks ? "blocks" : "threads",
                settings.order_cap);
      else
        fprintf(stderr, ", order exact");
      uint64_t stream = result->access_count + result->excluded;
      fprintf(stderr, "; selection %s, %llu accesses left out (%.1f%% of the stream)\n",
              result->selection ? result->selection : "all", (unsigned long long)result->excluded,
              stream ? 100.0 * (double)result->excluded / (double)stream : 0.0);
      /* the default selection left out most of the run: say where it is and how to keep it */
      if (result->excluded_object && 2 * result->excluded > stream && result->selection &&
          !strncmp(result->selection, "executable ", 11)) {
        const char *slash = strrchr(result->excluded_object, '/');
        const char *base = slash ? slash + 1 : result->excluded_object;
        const char *dot = strchr(base, '.');
        fprintf(stderr,
                "memsnap profile: note: %.1f%% of the stream is in %s; to profile it, add"
                " --object %.*s (or --all-objects)\n",
                100.0 * (double)result->excluded_object_accesses / (double)stream,
                result->excluded_object, dot ? (int)(dot - base) : (int)strlen(base), base);
      }
    }
  } else if (source)
    cli_fail(argv[0]);
  if (source) ms_source_destroy(source);
  ms_analysis_free(builder);
out:
  free(expanded);
  free(functions);
  free(lines);
  free(objects);
  return status;
}

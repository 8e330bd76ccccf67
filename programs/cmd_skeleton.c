/* memsnap skeleton [--slices N] [--slice-size N] [--ratio R] [--line B] [--cluster N]
 *                  -o SKEL.c (TRACE | -- PROGRAM ARGS)
 * memsnap skeleton [--scale F] -o SKEL.c PROFILE.psnap
 * memsnap skeleton --check SKEL -- PROGRAM ARGS
 *
 * A memory skeleton of a run: a short C program whose accesses are slices of the run's,
 * line by line and cluster by cluster, or, from a profile, its sites' patterns as loops in
 * its order (memsnap/skeleton.h, docs/skeletons.md). The C file is written whole or not at
 * all. --check runs the compiled skeleton and the program natively, once each, under the
 * hardware counters, and prints their L1D and last-level read miss ratios side by side.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/chase.h"
#include "memsnap/output.h"
#include "memsnap/psnap.h"
#include "memsnap/skeleton.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: memsnap skeleton [OPTIONS] -o SKEL.c (TRACE | -- PROGRAM ARGS...)\n"
          "       memsnap skeleton [--scale F] -o SKEL.c PROFILE.psnap\n"
          "       memsnap skeleton --check SKEL -- PROGRAM ARGS...\n"
          "  -o, --output FILE   the C program to write\n"
          "  --scale F           of a profile: its orders' outermost repeat counts times F\n"
          "                      (0 < F <= 1, default 1), every pattern's shape kept\n"
          "  --slices N          slices spread evenly over the run (default 10, fewer rather\n"
          "                      than slices under --min-slice-size; 0: one slice every\n"
          "                      RATIO x SLICE-SIZE accesses)\n"
          "  --min-slice-size N  accesses (default 1Mi; 0: no minimum)\n"
          "  --slice-size N      accesses per slice (default: the run's length / (N x RATIO),\n"
          "                      1Mi for a live program, whose length is not known)\n"
          "  --ratio R           keep one access in R (default 10)\n"
          "  --line B            bytes per line (default 32, the catalog's smallest)\n"
          "  --cluster N         accesses per cluster, reordered freely (default 256)\n"
          "  --form F            table (default: the runs as data that one loop walks; compiles\n"
          "                      in seconds) or code (a loop per run: no data of its own, the\n"
          "                      most faithful; GCC -O2 takes about 1 ms per run)\n"
          "  --check SKEL        run the compiled skeleton SKEL and PROGRAM natively, once\n"
          "                      each (their standard output to /dev/null), and print\n"
          "                      their CPU time and hardware L1D and last-level read miss\n"
          "                      ratios side by side (perf_event_open; exit status 1 when\n"
          "                      the machine has no such counters, which it then says)\n"
          "  -q, --quiet         no summary on standard error\n");
}

static int parse_count_option(const char *command, const char *name, const char *text,
                              uint64_t *value) {
  if (cli_parse_count(text, value) == 0) return 0;
  cli_error(command, "--%s: expected a count, got '%s'", name, text);
  return -1;
}

/* The skeleton of a profile: its lowest rank, every thread. */
static int profile_skeleton(const char *command, const char *path, double scale, const char *output,
                            int quiet) {
  ms_psnap_profile profile;
  if (ms_psnap_profile_load(path, &profile) < 0) {
    cli_fail(command);
    return 1;
  }
  int status = 1;
  ms_output out = {0};
  ms_skeleton_profile_summary summary;
  if (ms_psnap_profile_pick(&profile, -1, -1) < 0) {
    cli_error(command, "%s: %s", path, ms_error_message());
    goto done;
  }
  if (!profile.site_count) {
    cli_error(command, "%s: the profile has no sites: nothing to make a skeleton of", path);
    goto done;
  }
  if (ms_output_open(&out, output) < 0) {
    cli_fail(command);
    goto done;
  }
  if (ms_skeleton_write_profile_c(&profile, scale, out.file, &summary) < 0) {
    ms_output_abort(&out);
    cli_error(command, "%s: %s", output, ms_error_message());
    goto done;
  }
  if (ms_output_commit(&out) < 0) {
    cli_fail(command);
    goto done;
  }
  if (!quiet)
    fprintf(stderr,
            "memsnap skeleton: %s: %" PRIu32 " sites (%" PRIu32 " lossy or lossless, %" PRIu32
            " iterators), %" PRIu32 " threads (%" PRIu32 " lossy orders), %" PRIu32
            " regions in %.1f MiB, %" PRIu64 " of the profile's %" PRIu64 " accesses\n",
            output, summary.sites, summary.lossy_sites, summary.iterators, summary.threads,
            summary.lossy_threads, summary.regions, (double)summary.reservation / (1 << 20),
            summary.kept, summary.accesses);
  status = 0;
done:
  ms_psnap_profile_free(&profile);
  return status;
}

static double ratio_percent(uint64_t misses, uint64_t reads) {
  return reads ? 100.0 * (double)misses / (double)reads : 0;
}

/* --check: the skeleton and the program under the counters, one run each. */
static int check_skeleton(const char *command, const char *skeleton, char **program_argv) {
  ms_program_counters app, skel;
  char *skeleton_argv[] = {(char *)skeleton, NULL};
  if (ms_counters_run(program_argv, 1, &app) < 0 || ms_counters_run(skeleton_argv, 1, &skel) < 0) {
    cli_fail(command);
    return 1;
  }
  printf("memsnap skeleton --check: one native run of each (cache counters: user space)\n");
  printf("  %-28s %14s %14s\n", "", "program", "skeleton");
  printf("  %-28s %14d %14d\n", "exit status", app.exit_status, skel.exit_status);
  printf("  %-28s %14.3f %14.3f   skeleton / program %.3f\n", "CPU time (s)", app.cpu_seconds,
         skel.cpu_seconds, app.cpu_seconds > 0 ? skel.cpu_seconds / app.cpu_seconds : 0);
  if (app.have_cache && skel.have_cache) {
    double a1 = ratio_percent(app.l1d_misses, app.l1d_reads),
           s1 = ratio_percent(skel.l1d_misses, skel.l1d_reads);
    double a2 = ratio_percent(app.ll_misses, app.ll_reads),
           s2 = ratio_percent(skel.ll_misses, skel.ll_reads);
    printf("  %-28s %14" PRIu64 " %14" PRIu64 "\n", "L1D reads", app.l1d_reads, skel.l1d_reads);
    printf("  %-28s %13.2f%% %13.2f%%   difference %+.2f points\n", "L1D read miss ratio", a1, s1,
           s1 - a1);
    printf("  %-28s %14" PRIu64 " %14" PRIu64 "\n", "last-level reads", app.ll_reads,
           skel.ll_reads);
    printf("  %-28s %13.2f%% %13.2f%%   difference %+.2f points\n", "last-level read miss ratio",
           a2, s2, s2 - a2);
    return 0;
  }
  printf("  %-28s %14s %14s\n", "L1D, last-level miss ratios", "not measured", "not measured");
  cli_error(command,
            "--check: no hardware cache counters here: %s; judge the skeleton on the simulated "
            "hierarchies instead: memsnap compare TRACE -- %s",
            app.have_cache ? skel.cache_why : app.cache_why, skeleton);
  return 1;
}

int cmd_skeleton(int argc, char **argv) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"slices", required_argument, NULL, 'S'},
                                          {"slice-size", required_argument, NULL, 'z'},
                                          {"min-slice-size", required_argument, NULL, 'm'},
                                          {"ratio", required_argument, NULL, 'r'},
                                          {"line", required_argument, NULL, 'L'},
                                          {"cluster", required_argument, NULL, 'c'},
                                          {"form", required_argument, NULL, 'F'},
                                          {"scale", required_argument, NULL, 's'},
                                          {"check", required_argument, NULL, 'C'},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  ms_skeleton_config config;
  ms_skeleton_config_default(&config);
  const char *output = NULL;
  int quiet = 0, c;
  uint64_t value;
  double scale = 1;
  const char *scale_text = NULL, *check = NULL;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:qh", options, NULL)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'S':
      if (parse_count_option(argv[0], "slices", optarg, &config.slices) < 0) return 2;
      break;
    case 'z':
      if (parse_count_option(argv[0], "slice-size", optarg, &config.slice_size) < 0) return 2;
      break;
    case 'm':
      if (parse_count_option(argv[0], "min-slice-size", optarg, &config.min_slice_size) < 0)
        return 2;
      break;
    case 'r':
      if (parse_count_option(argv[0], "ratio", optarg, &config.ratio) < 0) return 2;
      break;
    case 'L':
    case 'c':
      if (parse_count_option(argv[0], c == 'L' ? "line" : "cluster", optarg, &value) < 0) return 2;
      if (value > UINT32_MAX) value = UINT32_MAX;
      *(c == 'L' ? &config.line : &config.cluster) = (uint32_t)value;
      break;
    case 'F':
      if (!strcmp(optarg, "table"))
        config.form = MS_SKELETON_TABLE;
      else if (!strcmp(optarg, "code"))
        config.form = MS_SKELETON_CODE;
      else {
        cli_error(argv[0], "--form: table or code, not '%s'", optarg);
        return 2;
      }
      break;
    case 's': {
      char *end;
      scale = strtod(optarg, &end);
      if (end == optarg || *end || !(scale > 0 && scale <= 1)) {
        cli_error(argv[0], "--scale: a fraction in (0, 1], not '%s'", optarg);
        return 2;
      }
      scale_text = optarg;
      break;
    }
    case 'C': check = optarg; break;
    case 'q': quiet = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  if (ms_skeleton_config_check(&config) < 0) {
    cli_error(argv[0], "%s", ms_error_message());
    return 2;
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (check) {
    if (inputs.count || !inputs.program_argc) {
      cli_error(argv[0], "--check SKEL: give the program to compare with: -- PROGRAM ARGS");
      return 2;
    }
    if (output || scale_text) {
      cli_error(argv[0], "--check runs programs and writes no C: no -o or --scale with it");
      return 2;
    }
    return check_skeleton(argv[0], check, inputs.program_argv);
  }
  if (inputs.count + (inputs.program_argc > 0) != 1) {
    cli_error(argv[0], "give one input: a trace or -- PROGRAM ARGS");
    return 2;
  }
  if (!output) {
    cli_error(argv[0], "give the C file to write: -o SKEL.c");
    return 2;
  }
  if (inputs.count && ms_psnap_detect(inputs.paths[0]) == 1)
    return profile_skeleton(argv[0], inputs.paths[0], scale, output, quiet);
  if (scale_text) {
    cli_error(argv[0], "--scale is for a profile; of a trace, use --ratio or --slices");
    return 2;
  }
  ms_sink *builder = NULL;
  ms_source *source = NULL;
  ms_output out = {0};
  int status = 1;
  if (ms_skeleton_builder_new(&config, &builder) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  source = cli_open_source(argv[0], inputs.count ? inputs.paths[0] : NULL, inputs.program_argc,
                           inputs.program_argv, NULL);
  if (!source) goto done;
  if (ms_pipeline_run(source, &builder, 1, 0) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  if (ms_output_open(&out, output) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  if (ms_skeleton_write_c(builder, ms_source_info(source), out.file) < 0) {
    ms_output_abort(&out);
    cli_error(argv[0], "%s: %s", output, ms_error_message());
    goto done;
  }
  if (ms_output_commit(&out) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  ms_skeleton_summary summary;
  if (!quiet && ms_skeleton_summarize(builder, &summary) == 0)
    fprintf(stderr,
            "memsnap skeleton: %s: %" PRIu64 " slices of %" PRIu64 " accesses (%" PRIu64
            " of the run's %" PRIu64 "), %" PRIu64 " clusters, %" PRIu64 " table words (%" PRIu64
            " groups in program order; %s), %" PRIu64 " chunks of 2 MiB\n",
            output, summary.slices, summary.slice_size, summary.kept, summary.accesses,
            summary.clusters, summary.runs, summary.groups,
            config.form == MS_SKELETON_CODE ? "as code, no data of its own" : "bookkeeping loads",
            summary.chunks);
  if (!quiet && config.form == MS_SKELETON_TABLE && summary.kept)
    fprintf(stderr, "memsnap skeleton: bookkeeping loads: %.2f%% of the skeleton's accesses\n",
            100.0 * (double)summary.runs / (double)(summary.kept + summary.runs));
  status = cli_program_status(source);
done:
  if (source) ms_source_destroy(source);
  if (builder) ms_sink_destroy(builder);
  return status;
}

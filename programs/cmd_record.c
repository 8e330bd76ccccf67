/* memsnap record -o OUT.mtr [--quiet] [--via=auto|valgrind|rt] [--sample ON/OFF]
 *                [--no-follow-exec] [--objects] -- PROG ARGS
 *
 * Runs PROG under memsnap's Valgrind tool, or through its own memsnap runtime if it was
 * built with memsnap-cc, and writes every data access to a .mtr trace.
 * Prints a one-line summary on stderr and exits with PROG's exit status (128 + signal if it
 * was killed; the trace is then kept and flagged truncated).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "report.h"
#include "memsnap/capture.h"
#include "memsnap/trace.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: memsnap record [-o OUT.mtr] [--quiet] [--via=auto|valgrind|rt]\n"
          "                      [--sample ON/OFF] -- PROGRAM [ARGS...]\n"
          "  -o, --output FILE  trace to write (default: PROGRAM's basename + .mtr, or\n"
          "                     + .RANK.mtr under an MPI launcher); %%r: the MPI rank,\n"
          "                     %%p: the pid (mpirun -n 4 memsnap record -o app.%%r.mtr)\n"
          "  -q, --quiet        no summary line\n"
          "  --via=HOW          valgrind (any program), rt (built with memsnap-cc), or auto\n"
          "                     (rt if the program contains memsnap's runtime; default)\n"
          "  --sample ON/OFF    interval sampling: record ON accesses, skip OFF (1M/9M)\n"
          "  --no-follow-exec   Valgrind path: stop at an execve instead of following the\n"
          "                     program into the new image (followed by default: env,\n"
          "                     taskset, numactl, scripts and shims that exec the program)\n"
          "  --objects          also record data objects (heap blocks and their allocating\n"
          "                     calls, global and static variables; Valgrind path: anonymous\n"
          "                     mappings too), for annotating misses by object. Valgrind\n"
          "                     path: costs the loader ~4100 accesses at start-up (without\n"
          "                     it the accesses are exactly Cachegrind's and Lackey's); rt\n"
          "                     path: the runtime's malloc & co. record (MEMSNAP_OBJECTS=1\n"
          "                     with MEMSNAP_OUT), no access changes\n"
          "  -a, --analysis 'NAME KEY=VALUE...'\n"
          "                     also run an analysis in the same pass (repeatable, up to 8):\n"
          "                     sim, surface, scores, signature or profile, with the\n"
          "                     options of memsnap/analysis.h, e.g. -a 'sim hierarchy=nehalem'\n"
          "  --report FILE      where the analyses' reports go (default: standard error)\n");
}

/* Counts what flows to the writer, for the summary. */
typedef struct counting_sink {
  ms_sink base;
  uint64_t accesses;
} counting_sink;

static int count_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  (void)info;
  ((counting_sink *)sink)->accesses += batch->count;
  return 0;
}

static void count_destroy(ms_sink *sink) { (void)sink; }

static const ms_sink_ops counting_ops = {
    .begin = NULL, .consume = count_consume, .end = NULL, .destroy = count_destroy};

/* PROGRAM's basename + .mtr; under an MPI launcher + .RANK.mtr, so that the ranks of
 * `mpirun -n 4 memsnap record -- ./app` do not all write app.mtr. */
static char *default_output(const char *program) {
  const char *slash = strrchr(program, '/'), *rank = cli_mpi_rank();
  const char *base = slash ? slash + 1 : program;
  size_t length = strlen(base) + sizeof ".mtr" + (rank ? strlen(rank) + 1 : 0);
  char *path = malloc(length);
  if (path && rank)
    snprintf(path, length, "%s.%s.mtr", base, rank);
  else if (path)
    snprintf(path, length, "%s.mtr", base);
  return path;
}

int cmd_record(int argc, char **argv) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"help", no_argument, NULL, 'h'},
                                          {"via", required_argument, NULL, 'V'},
                                          {"sample", required_argument, NULL, 's'},
                                          {"rt-channel", required_argument, NULL, 'C'},
                                          {"no-follow-exec", no_argument, NULL, 'E'},
                                          {"objects", no_argument, NULL, 'O'},
                                          {"analysis", required_argument, NULL, 'a'},
                                          {"report", required_argument, NULL, 'R'},
                                          {NULL, 0, NULL, 0}};
  enum { MAX_ANALYSES = 8 };
  ms_analysis *analyses[MAX_ANALYSES] = {NULL};
  int analysis_count = 0, status = 2;
  const char *report_path = NULL;
  const char *output = NULL;
  char *default_path = NULL;
  ms_sink *writer = NULL;
  ms_source *source = NULL;
  int quiet = 0, via = MS_CAPTURE_AUTO, follow_exec = 1, objects = 0;
  uint64_t sample_on = 0, sample_off = 0;
  int channel[3] = {-1, -1, -1};
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":o:qha:", options, NULL)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'R': report_path = optarg; break;
    case 'a':
      if (analysis_count == MAX_ANALYSES) {
        cli_error(argv[0], "--analysis: at most %d analyses", MAX_ANALYSES);
        goto done;
      }
      if (ms_analysis_new(optarg, &analyses[analysis_count]) < 0) {
        cli_error(argv[0], "--analysis: %s", ms_error_message());
        goto done;
      }
      analysis_count++;
      break;
    case 'q': quiet = 1; break;
    case 'E': follow_exec = 0; break;
    case 'O': objects = 1; break;
    case 'h':
      usage(stdout);
      status = 0;
      goto done;
    case 'V':
      if (cli_parse_via(optarg, &via) != 0) {
        cli_error(argv[0], "--via %s: expected auto, valgrind or rt", optarg);
        goto done;
      }
      break;
    case 's':
      if (cli_parse_sample(optarg, &sample_on, &sample_off) != 0) {
        cli_error(argv[0], "--sample %s: expected ON/OFF counts such as 1M/9M (ON > 0)", optarg);
        goto done;
      }
      break;
    case 'C': /* internal: the writer that an instrumented program starts for MEMSNAP_OUT */
      if (sscanf(optarg, "%d,%d,%d", &channel[0], &channel[1], &channel[2]) != 3 ||
          channel[0] < 0 || channel[1] < 0 || channel[2] < 0) {
        cli_error(argv[0], "--rt-channel %s: expected three descriptors N,M,C", optarg);
        goto done;
      }
      break;
    default: status = cli_option_error(argv[0], c, argv); goto done;
    }
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count > 0) {
    cli_error(argv[0], "unexpected argument %s (put the program after --)", inputs.paths[0]);
    goto done;
  }
  if (inputs.program_argc == 0) {
    cli_error(argv[0], "no program to record: give -- PROGRAM [ARGS...]");
    goto done;
  }
  if (!output) {
    default_path = default_output(inputs.program_argv[0]);
    if (!default_path) {
      cli_error(argv[0], "out of memory");
      status = 1;
      goto done;
    }
  } else if (!(default_path = cli_output_name(argv[0], "-o", output))) {
    goto done;
  }
  output = default_path;

  status = 1;
  /* the output first: a bad path is reported before a program is started for nothing */
  if (ms_mtr_sink_new(output, &writer) < 0) {
    cli_error(argv[0], "%s", ms_error_message());
    goto done;
  }
  ms_open_options open_options;
  cli_open_options_init(&open_options);
  open_options.capture.via = (ms_capture_via)via;
  open_options.capture.sample_on = sample_on;
  open_options.capture.sample_off = sample_off;
  open_options.capture.no_follow_exec = !follow_exec;
  open_options.capture.objects = objects;
  if (channel[0] >= 0) {
    ms_capture_options attach = {
        .via = MS_CAPTURE_RT, .sample_on = sample_on, .sample_off = sample_off, .objects = objects};
    if (ms_capture_attach(channel[0], channel[1], channel[2], &attach, inputs.program_argc,
                          inputs.program_argv, &source) < 0) {
      cli_fail(argv[0]);
      goto done;
    }
  } else {
    source =
        cli_open_source(argv[0], NULL, inputs.program_argc, inputs.program_argv, &open_options);
  }
  if (!source) goto done;
  /* Like system(): an interrupt from the terminal is for the program; the recording of
   * what it did until then is still written. */
  /* The writer of an instrumented program (--rt-channel) lives until the program's stream
   * ends, whatever signal its process group gets: the program finalizes the trace. */
  if (channel[0] >= 0) {
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
  }
  void (*old_int)(int) = signal(SIGINT, SIG_IGN);
  void (*old_quit)(int) = signal(SIGQUIT, SIG_IGN);
  counting_sink counter = {.base = {.ops = &counting_ops}, .accesses = 0};
  ms_sink *sinks[2 + MAX_ANALYSES] = {writer, &counter.base};
  for (int i = 0; i < analysis_count; i++)
    sinks[2 + i] = ms_analysis_sink(analyses[i]);
  int rc = ms_pipeline_run(source, sinks, 2 + analysis_count, 0);
  signal(SIGINT, old_int);
  signal(SIGQUIT, old_quit);
  if (rc < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  const ms_stream_info *info = ms_source_info(source);
  status = cli_program_status(source);
  if (!quiet) {
    struct stat st;
    double bytes = stat(output, &st) == 0 ? (double)st.st_size : 0.0;
    fprintf(stderr,
            "memsnap record: %s: %llu accesses, %u threads, %u sites, %.2f bytes/access, "
            "exit status %d%s\n",
            output, (unsigned long long)counter.accesses, info->thread_count,
            ms_site_table_count(info->sites),
            counter.accesses ? bytes / (double)counter.accesses : 0.0, info->exit_status,
            info->flags & MS_STREAM_TRUNCATED ? " (truncated)" : "");
  }
  /* the analyses' reports, after the summary (a live program's standard output is its own) */
  if (analysis_count) {
    ms_output report;
    if (report_open(argv[0], &report, report_path, 1) < 0) {
      status = 1;
      goto done;
    }
    int written = 0;
    for (int i = 0; i < analysis_count && written == 0; i++) {
      if (i) fputc('\n', report.file);
      written = ms_analysis_report(analyses[i], info, NULL, report.file, MS_REPORT_TEXT);
    }
    if (report_finish(argv[0], &report, written) < 0) status = 1;
  }
done:
  ms_sink_destroy(writer);
  ms_source_destroy(source);
  for (int i = 0; i < analysis_count; i++)
    ms_analysis_free(analyses[i]);
  free(default_path);
  return status;
}

/* memsnap bench SEED [--footprint F] [--ops N] [--ilp K] [--cpu N] [--delay S] [--counters]
 *                    [--json] [-o FILE]
 *
 * The pointer-chasing benchmark (lib/chase, memsnap/chase.h): builds the array for a
 * unique-index seed, optionally binds to a CPU and waits, runs N chase steps with K chains
 * and reports memory operations per second (and hardware counters when asked).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "memsnap/chase.h"
#include "memsnap/output.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap bench SEED [OPTIONS]\n"
              "  --footprint F   array size in bytes (k/M/G, Ki/Mi/Gi; default: the seed's)\n"
              "  --ops N         memory operations to run (default 100M)\n"
              "  --ilp K         independent chains, 1..20 (default 1)\n"
              "  --cpu N         bind to processor N (0-based)\n"
              "  --delay S       seconds to wait after initialization\n"
              "  --counters      hardware counters (cycles, cache misses) via perf_event_open\n"
              "  --json          JSON report\n"
              "  -o, --output FILE  write the report to FILE (default standard output)\n");
}

typedef struct bench_options {
  uint64_t footprint, ops, ilp, delay;
  long cpu;
  int counters, json;
  const char *output;
} bench_options;

static int parse_options(int argc, char **argv, bench_options *o) {
  static const struct option long_options[] = {{"footprint", required_argument, NULL, 'f'},
                                               {"ops", required_argument, NULL, 'n'},
                                               {"ilp", required_argument, NULL, 'k'},
                                               {"cpu", required_argument, NULL, 'c'},
                                               {"delay", required_argument, NULL, 'd'},
                                               {"counters", no_argument, NULL, 'C'},
                                               {"json", no_argument, NULL, 'j'},
                                               {"output", required_argument, NULL, 'o'},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c;
  uint64_t cpu;
  while ((c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1) {
    uint64_t *target = NULL;
    switch (c) {
    case 'f': target = &o->footprint; break;
    case 'n': target = &o->ops; break;
    case 'k': target = &o->ilp; break;
    case 'd': target = &o->delay; break;
    case 'c': target = &cpu; break;
    case 'C': o->counters = 1; continue;
    case 'j': o->json = 1; continue;
    case 'o': o->output = optarg; continue;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
    if (cli_parse_count(optarg, target) < 0) {
      cli_error(argv[0], "bad value '%s' for %s", optarg, argv[optind - 1]);
      return 2;
    }
    if (c == 'c') o->cpu = cpu < CPU_SETSIZE ? (long)cpu : CPU_SETSIZE;
  }
  if (o->ilp < 1 || o->ilp > MS_CHASE_MAX_ILP) {
    cli_error(argv[0], "--ilp %" PRIu64 " out of range (1..%d)", o->ilp, MS_CHASE_MAX_ILP);
    return 2;
  }
  if (o->cpu >= CPU_SETSIZE || o->delay > 86400) {
    cli_error(argv[0], "--cpu or --delay out of range");
    return 2;
  }
  return -1;
}

static double seconds_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

int cmd_bench(int argc, char **argv) {
  bench_options o = {.ops = 100000000, .ilp = 1, .cpu = -1};
  int status = parse_options(argc, argv, &o);
  if (status >= 0) return status;
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count != 1 || inputs.program_argc) {
    cli_error(argv[0], "give one seed (memsnap synth --unique writes them)");
    return 2;
  }
  if (o.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)o.cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      cli_error(argv[0], "cannot bind to processor %ld: %s", o.cpu, strerror(errno));
      return 1;
    }
  }
  ms_chase chase;
  int rc = ms_chase_build(inputs.paths[0], o.footprint, (int)o.ilp, &chase);
  if (rc < 0) return rc == MS_ERR_ARG ? (cli_fail(argv[0]), 2) : cli_fail(argv[0]);
  ms_counters counters = {0};
  const char *counters_why = NULL;
  if (o.counters && ms_counters_open(&counters) < 0) counters_why = ms_error_message();
  if (o.delay) sleep((unsigned)o.delay);
  uint64_t operations = o.ops / o.ilp * o.ilp;
  ms_counters_start(&counters);
  double start = seconds_now();
  uint64_t result = ms_chase_run(&chase, operations);
  double elapsed = seconds_now() - start;
  ms_counters_stop(&counters);
  double rate = elapsed > 0 ? (double)operations / elapsed : 0;
  ms_output report;
  if (ms_output_open(&report, o.output ? o.output : "-") < 0) {
    ms_counters_close(&counters);
    ms_chase_free(&chase);
    return cli_fail(argv[0]);
  }
  FILE *out = report.file;
  if (o.json) {
    fprintf(out,
            "{\"footprint\": %" PRIu64 ", \"replications\": %" PRIu64 ", \"operations\": %" PRIu64
            ", \"ilp\": %" PRIu64 ", \"seconds\": %.6f, \"memops_per_second\": %.6g, "
            "\"checksum\": %" PRIu64,
            chase.footprint, chase.replications, operations, o.ilp, elapsed, rate, result);
    if (o.counters) {
      fprintf(out, ", \"counters\": ");
      if (counters_why) {
        fprintf(out, "null, \"counters_unavailable\": \"%s\"", counters_why);
      } else {
        fprintf(out, "{");
        for (int i = 0; i < counters.count; i++)
          fprintf(out, "%s\"%s\": %" PRIu64, i ? ", " : "", counters.names[i], counters.values[i]);
        fprintf(out, "}");
      }
    }
    fprintf(out, "}\n");
  } else {
    fprintf(out, "footprint %" PRIu64 " bytes (%" PRIu64 " replications), ilp %" PRIu64 "\n",
            chase.footprint, chase.replications, o.ilp);
    fprintf(out,
            "%" PRIu64 " memory operations in %.3f s: %.4g memory operations per second "
            "(checksum %" PRIu64 ")\n",
            operations, elapsed, rate, result);
    if (counters_why) fprintf(out, "%s\n", counters_why);
    for (int i = 0; i < counters.count; i++)
      fprintf(out, "%-16s %" PRIu64 "\n", counters.names[i], counters.values[i]);
  }
  ms_counters_close(&counters);
  ms_chase_free(&chase);
  if (ferror(out)) {
    ms_output_abort(&report);
    cli_error(argv[0], "cannot write the report");
    return 1;
  }
  return ms_output_commit(&report) < 0 ? cli_fail(argv[0]) : 0;
}

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

typedef struct text_sink {
  ms_sink base;
  uint64_t index;
} text_sink;

static int text_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  text_sink *t = (text_sink *)sink;
  char site[512];
  for (size_t i = 0; i < batch->count; i++) {
    const ms_access *a = &batch->accesses[i];
    const char *where = "-";
    if (a->site != MS_SITE_NONE)
      where = ms_site_describe(ms_site_table_get(info->sites, a->site), site, sizeof site);
    printf("%" PRIu64 " %u %s 0x%" PRIx64 " %u %s\n", t->index++, a->thread,
           ms_access_kind_name((ms_access_kind)a->kind), a->address, a->size, where);
  }
  return ferror(stdout) ? ms_error_set(MS_ERR_IO, "standard output: write failed") : 0;
}

static int text_end(ms_sink *sink, const ms_stream_info *info) {
  (void)sink;
  (void)info;
  return fflush(stdout) == 0 ? 0 : ms_error_set(MS_ERR_IO, "standard output: write failed");
}

static void text_destroy(ms_sink *sink) { (void)sink; }

static const ms_sink_ops text_ops = {NULL, text_consume, text_end, text_destroy};

/* Positions `source` at access `from`: a seek if it can, else reading and dropping. */
static int skip_to(ms_source *source, uint64_t from) {
  if (from == 0) return 0;
  if (source->ops->seek) return ms_source_seek(source, from);
  ms_batch batch;
  int rc = ms_batch_init(&batch, 0);
  for (uint64_t skipped = 0; rc == 0 && skipped < from;) {
    size_t want = from - skipped < batch.capacity ? (size_t)(from - skipped) : batch.capacity;
    batch.capacity = want; /* never read past `from` */
    int n = ms_source_next(source, &batch);
    if (n < 0)
      rc = n;
    else if (n == 0)
      break;
    skipped += (uint64_t)n;
  }
  ms_batch_free(&batch);
  return rc;
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
  text_sink text = {.base = {&text_ops}, .index = from};
  ms_sink *sink = &text.base;
  int rc = din ? ms_din_sink_new("-", &sink) : 0;
  if (rc == 0) rc = skip_to(source, from);
  if (rc == 0) rc = ms_pipeline_run(source, &sink, 1, limit);
  int status = rc < 0 ? cli_fail(argv[0]) : cli_program_status(source);
  if (din) ms_sink_destroy(sink);
  ms_source_destroy(source);
  return status;
}

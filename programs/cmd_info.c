/* memsnap info FILE [--json]
 *
 * Describes a trace: format, program and arguments, architecture, capture kind, threads,
 * accesses (per kind), sites, chunks, file size, bytes per access, truncation and exit
 * status. A .mtr file is described from its header and trailer alone (--check also decodes
 * every chunk and compares the counts with the trailer's); Lackey and din traces carry no
 * summary, so they are read through once to count.
 */
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memsnap/input.h"
#include "memsnap/psnap.h"
#include "memsnap/trace.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap info [--json] [--check] FILE\n"
              "  --json   print the description as a JSON object\n"
              "  --check  also decode every access of a .mtr (its chunks' checksums and\n"
              "           counts) and end with a line saying so; other formats are\n"
              "           always read through\n");
}

typedef struct trace_summary {
  ms_trace_format format;
  uint32_t version;
  uint64_t accesses, counts_by_kind[MS_ACCESS_KIND_COUNT], chunks, file_bytes;
} trace_summary;

/* Lackey, din and profiles: read through, counting per kind and threads. */
static int count_by_streaming(const char *path, trace_summary *summary, ms_stream_info *info) {
  ms_input_counts counts;
  ms_open_options options; /* --rank and --thread of a profile */
  cli_open_options_init(&options);
  int rc = ms_input_count_with(path, &options, &counts, info);
  if (rc == 0) {
    summary->accesses = counts.accesses;
    memcpy(summary->counts_by_kind, counts.by_kind, sizeof summary->counts_by_kind);
  }
  return rc;
}

static void print_text(const char *path, const trace_summary *s, const ms_stream_info *info) {
  printf("file:          %s\n", path);
  /* a .psnap profile is the one readable file without a trace format: its replay */
  printf("format:        %s",
         s->format == MS_FORMAT_UNKNOWN ? "psnap (replayed)" : ms_trace_format_name(s->format));
  if (s->format == MS_FORMAT_MTR) printf(" (version %u)", s->version);
  printf("\nprogram:       %s", info->program ? info->program : "(unknown)");
  /* a seed's arguments are its metadata, the last its whole target signature (kilobytes
   * of .sig text): shown as the program that signature describes */
  int seed = info->capture && strcmp(info->capture, "seed") == 0;
  const char *signature = NULL;
  for (int i = 1; i < info->argc; i++) {
    if (seed && strncmp(info->argv[i], "signature=", 10) == 0) {
      signature = info->argv[i] + 10;
      continue;
    }
    printf(" %s", info->argv[i]);
  }
  if (signature) {
    const char *of = strstr(signature, "\nProgram : ");
    if (of) of += strlen("\nProgram : ");
    printf("\nsignature:     of %.*s, embedded (%zu bytes of .sig text; info --json has it)",
           of ? (int)strcspn(of, "\n") : 9, of ? of : "(unknown)", strlen(signature));
  }
  printf("\narchitecture:  %s\n", info->arch ? info->arch : "(unknown)");
  printf("capture:       %s\n", info->capture ? info->capture : "(unknown)");
  printf("threads:       %" PRIu32 "\n", info->thread_count);
  printf("accesses:      %" PRIu64 " (load %" PRIu64 ", store %" PRIu64 ", modify %" PRIu64 ")\n",
         s->accesses, s->counts_by_kind[MS_LOAD], s->counts_by_kind[MS_STORE],
         s->counts_by_kind[MS_MODIFY]);
  printf("sites:         %" PRIu32 "\n", ms_site_table_count(info->sites));
  if (info->objects) {
    uint64_t allocations, frees, statics;
    ms_object_table_counts(info->objects, &allocations, &frees, &statics);
    printf("data objects:  %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
           " global or static variables\n",
           allocations, frees, statics);
  }
  if (s->format == MS_FORMAT_MTR) printf("chunks:        %" PRIu64 "\n", s->chunks);
  printf("file size:     %" PRIu64 " bytes (%.3f bytes/access)\n", s->file_bytes,
         s->accesses ? (double)s->file_bytes / (double)s->accesses : 0.0);
  if (info->flags & MS_STREAM_SAMPLED)
    printf("sampled:       %" PRIu64 " on, %" PRIu64 " off\n", info->sample_on, info->sample_off);
  printf("truncated:     %s", info->flags & MS_STREAM_TRUNCATED ? "yes" : "no");
  if (info->exit_status >= 0) printf(" (exit status %d)", info->exit_status);
  if (info->flags & MS_STREAM_RECOVERED)
    printf("; recovered from a damaged trace by memsnap recover: the accesses before the damage");
  if (info->flags & MS_STREAM_EXEC)
    printf("; the program replaced itself (execve) and what ran after was not observed");
  printf("\n");
  if (info->flags & MS_STREAM_EXEC_FOLLOWED)
    printf("exec:          the program replaced itself (execve); the trace follows the new "
           "program (its sites are new sites)\n");
  if (info->flags & MS_STREAM_CHILDREN)
    printf("processes:     the program started other processes, not observed\n");
}

static json_object *string_or_null(const char *s) { return s ? json_object_new_string(s) : NULL; }

static void print_json(const char *path, const trace_summary *s, const ms_stream_info *info) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "file", json_object_new_string(path));
  json_object_object_add(root, "format", json_object_new_string(ms_trace_format_name(s->format)));
  if (s->format == MS_FORMAT_MTR)
    json_object_object_add(root, "version", json_object_new_int64(s->version));
  json_object_object_add(root, "program", string_or_null(info->program));
  json_object *args = json_object_new_array();
  for (int i = 0; i < info->argc; i++)
    json_object_array_add(args, string_or_null(info->argv[i]));
  json_object_object_add(root, "argv", args);
  json_object_object_add(root, "arch", string_or_null(info->arch));
  json_object_object_add(root, "capture", string_or_null(info->capture));
  json_object_object_add(root, "threads", json_object_new_int64(info->thread_count));
  json_object_object_add(root, "accesses", json_object_new_uint64(s->accesses));
  json_object *kinds = json_object_new_object();
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++)
    json_object_object_add(kinds, ms_access_kind_name((ms_access_kind)k),
                           json_object_new_uint64(s->counts_by_kind[k]));
  json_object_object_add(root, "accesses_by_kind", kinds);
  json_object_object_add(root, "sites", json_object_new_int64(ms_site_table_count(info->sites)));
  if (info->objects) {
    uint64_t allocations, frees, statics;
    ms_object_table_counts(info->objects, &allocations, &frees, &statics);
    json_object *objects = json_object_new_object();
    json_object_object_add(objects, "allocations", json_object_new_uint64(allocations));
    json_object_object_add(objects, "frees", json_object_new_uint64(frees));
    json_object_object_add(objects, "statics", json_object_new_uint64(statics));
    json_object_object_add(root, "objects", objects);
  }
  if (s->format == MS_FORMAT_MTR)
    json_object_object_add(root, "chunks", json_object_new_uint64(s->chunks));
  json_object_object_add(root, "file_bytes", json_object_new_uint64(s->file_bytes));
  json_object_object_add(
      root, "bytes_per_access",
      json_object_new_double(s->accesses ? (double)s->file_bytes / (double)s->accesses : 0.0));
  json_object_object_add(root, "sampled",
                         json_object_new_boolean((info->flags & MS_STREAM_SAMPLED) != 0));
  if (info->flags & MS_STREAM_SAMPLED) {
    json_object_object_add(root, "sample_on", json_object_new_uint64(info->sample_on));
    json_object_object_add(root, "sample_off", json_object_new_uint64(info->sample_off));
  }
  json_object_object_add(root, "truncated",
                         json_object_new_boolean((info->flags & MS_STREAM_TRUNCATED) != 0));
  json_object_object_add(root, "recovered",
                         json_object_new_boolean((info->flags & MS_STREAM_RECOVERED) != 0));
  json_object_object_add(root, "exec",
                         json_object_new_boolean((info->flags & MS_STREAM_EXEC) != 0));
  json_object_object_add(root, "exec_followed",
                         json_object_new_boolean((info->flags & MS_STREAM_EXEC_FOLLOWED) != 0));
  json_object_object_add(root, "children_not_observed",
                         json_object_new_boolean((info->flags & MS_STREAM_CHILDREN) != 0));
  json_object_object_add(root, "exit_status",
                         info->exit_status >= 0 ? json_object_new_int(info->exit_status) : NULL);
  printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
}

int cmd_info(int argc, char **argv) {
  static const struct option options[] = {{"json", no_argument, NULL, 'j'},
                                          {"check", no_argument, NULL, 'c'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  int json = 0, check = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'j': json = 1; break;
    case 'c': check = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count != 1 || inputs.program_argc > 0) {
    cli_error(argv[0], inputs.count == 0 ? "no trace file given" : "give exactly one trace file");
    return 2;
  }
  const char *path = inputs.paths[0];
  trace_summary summary = {.format = ms_trace_detect(path)};
  ms_stream_info info = {0};
  int rc;
  if (summary.format == MS_FORMAT_MTR && (cli_rank >= 0 || cli_thread >= 0)) {
    cli_error(argv[0], "%s: --rank and --thread pick in a profile, this is a mtr trace", path);
    return 2;
  }
  if (summary.format == MS_FORMAT_MTR) {
    ms_mtr_stat stat;
    rc = ms_mtr_stat_file(path, &stat, &info);
    summary.version = stat.version;
    summary.accesses = stat.access_count;
    summary.chunks = stat.chunk_count;
    memcpy(summary.counts_by_kind, stat.counts_by_kind, sizeof summary.counts_by_kind);
  } else {
    rc = count_by_streaming(path, &summary, &info);
  }
  if (rc == 0 && check && summary.format == MS_FORMAT_MTR) {
    /* every chunk decoded (the reader checks each one's checksum), counts against the
     * trailer's */
    trace_summary decoded = {.format = MS_FORMAT_MTR};
    ms_stream_info scratch = {0};
    rc = count_by_streaming(path, &decoded, &scratch);
    ms_stream_info_clear(&scratch);
    if (rc == 0 && memcmp(decoded.counts_by_kind, summary.counts_by_kind,
                          sizeof decoded.counts_by_kind) != 0) {
      ms_stream_info_clear(&info);
      cli_error(argv[0], "%s: the chunks hold %" PRIu64 " accesses, the trailer says %" PRIu64,
                path, decoded.accesses, summary.accesses);
      return 1;
    }
  }
  if (rc < 0) {
    ms_stream_info_clear(&info);
    return cli_fail(argv[0]);
  }
  summary.file_bytes = ms_input_size(path); /* of a stream, the bytes it gave */
  if (json)
    print_json(path, &summary, &info);
  else
    print_text(path, &summary, &info);
  if (check && !json && summary.format == MS_FORMAT_MTR)
    printf("check: %" PRIu64 " chunk%s, %" PRIu64 " accesses decoded, all checksums good\n",
           summary.chunks, summary.chunks == 1 ? "" : "s", summary.accesses);
  else if (check && !json)
    printf("check: %" PRIu64 " accesses read through (this format has no checksums)\n",
           summary.accesses);
  ms_stream_info_clear(&info);
  return 0;
}

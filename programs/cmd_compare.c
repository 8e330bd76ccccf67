/* memsnap compare [--widths W] [--depths D] [--shards RATE] [--sample ON/OFF]
 *                 [--format table|csv|json] [-o FILE] INPUT INPUT... [-- PROGRAM ARGS]
 * memsnap compare [--json] [--footprint F] [--length N] SOURCE SOURCE
 *
 * Two modes. Exactly two inputs, not both .sig, and no --matrix: the two sources side by
 * side on the 46 evaluation hierarchies and on their surfaces (compare_sources.c).
 * Otherwise the matrix below.
 *
 * Surface similarity (dissertation Table 6.1): the mean absolute difference between the
 * hit rates of two cache surfaces over the (width, depth) points they share, for every
 * pair of inputs. Inputs are traces, .sig memory signatures (surface derived from the
 * signature) and at most one live program after `--`.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare_sources.h"
#include "locality_cli.h"
#include "memsnap/output.h"
#include "memsnap/surface.h"
#include "report.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap compare [OPTIONS] INPUT INPUT... [-- PROGRAM ARGS...]\n"
              "  INPUT              a trace, a seed, a .psnap profile or a .sig signature\n"
              "  -w, --widths W     widths of the surfaces of traces (default 4:512)\n"
              "  -d, --depths D     depths of the surfaces of traces (default 1:65536)\n"
              "  --shards RATE      SHARDS sampling of the surfaces of traces\n"
              "  --sample ON/OFF    interval sampling of traces and programs\n"
              "  --format F         table (default), csv or json\n"
              "  -o, --output FILE  write the report to FILE (default: standard output; standard\n"
              "                     error with -- PROGRAM, whose standard output is its own)\n"
              "  --matrix           the similarity matrix even for two inputs\n"
              "  --json             same as --format json\n"
              "  --footprint F      expand trace seeds to F bytes (as memsnap sim)\n"
              "  --length N         expand trace seeds to N accesses (as memsnap sim)\n"
              "Two inputs, not both .sig: hit rates on the 46 evaluation hierarchies and the\n"
              "surfaces of both, with their absolute differences (table or --json).\n"
              "Otherwise (or --matrix): each cell is the mean absolute difference of hit rates\n"
              "over the common grid.\n");
}

typedef struct compare_options {
  locality_input_options input;
  const char *format;
  const char *output;
  int matrix;
  uint64_t footprint, length;
} compare_options;

static int parse_options(int argc, char **argv, compare_options *o) {
  static const struct option long_options[] = {{"widths", required_argument, NULL, 'w'},
                                               {"depths", required_argument, NULL, 'd'},
                                               {"shards", required_argument, NULL, 'S'},
                                               {"sample", required_argument, NULL, 's'},
                                               {"format", required_argument, NULL, 'f'},
                                               {"output", required_argument, NULL, 'o'},
                                               {"matrix", no_argument, NULL, 'M'},
                                               {"json", no_argument, NULL, 'j'},
                                               {"footprint", required_argument, NULL, 'F'},
                                               {"length", required_argument, NULL, 'L'},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":w:d:o:h", long_options, NULL)) != -1) {
    int input = locality_parse_input_option(argv[0], c, optarg, &o->input);
    if (input < 0) return 2;
    if (input > 0) continue;
    switch (c) {
    case 'f':
      if (locality_parse_format(argv[0], optarg, &o->format) < 0) return 2;
      break;
    case 'o': o->output = optarg; break;
    case 'M': o->matrix = 1; break;
    case 'j': o->format = "json"; break;
    case 'F':
    case 'L':
      if (cli_parse_expansion_option(argv[0], c, optarg, &o->footprint, &o->length)) return 2;
      break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  if (ms_surface_config_check(&o->input.config) < 0) {
    cli_error(argv[0], "%s", ms_error_message());
    return 2;
  }
  return -1;
}

static void write_matrix(FILE *out, const char *format, char **names, int n, const double *d,
                         const report_observed *observed) {
  if (!strcmp(format, "json")) {
    fprintf(out, "{\n  \"inputs\": [");
    for (int i = 0; i < n; i++) {
      fputc('"', out);
      for (const char *p = names[i]; *p; p++)
        if (*p == '"' || *p == '\\')
          fprintf(out, "\\%c", *p);
        else if ((unsigned char)*p < 0x20)
          fprintf(out, "\\u%04x", *p);
        else
          fputc(*p, out);
      fprintf(out, "\"%s", i + 1 < n ? ", " : "");
    }
    fprintf(out, "],\n  \"observed\": [");
    for (int i = 0; i < n; i++) {
      json_object *o = json_object_new_object();
      report_add_observed_json(o, &observed[i]);
      fprintf(out, "%s%s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_NOSLASHESCAPE),
              i + 1 < n ? ", " : "");
      json_object_put(o);
    }
    fprintf(out, "],\n  \"mean_absolute_difference\": [\n");
    for (int i = 0; i < n; i++) {
      fprintf(out, "    [");
      for (int j = 0; j < n; j++)
        fprintf(out, "%.6f%s", d[i * n + j], j + 1 < n ? ", " : "");
      fprintf(out, "]%s\n", i + 1 < n ? "," : "");
    }
    fprintf(out, "  ]\n}\n");
  } else if (!strcmp(format, "csv")) {
    fprintf(out, "input");
    for (int j = 0; j < n; j++)
      fprintf(out, ",%s", names[j]);
    fprintf(out, "\n");
    for (int i = 0; i < n; i++) {
      fprintf(out, "%s", names[i]);
      for (int j = 0; j < n; j++)
        fprintf(out, ",%.6f", d[i * n + j]);
      fprintf(out, "\n");
    }
  } else {
    fprintf(out, "surface similarity: mean absolute difference of hit rates over the common grid"
                 " (0: identical)\n");
    for (int i = 0; i < n; i++) {
      fprintf(out, "  [%d] %s, ", i + 1, names[i]);
      report_write_observed(out, &observed[i]);
    }
    fprintf(out, "%6s", "");
    for (int j = 0; j < n; j++) {
      char label[16];
      snprintf(label, sizeof label, "[%d]", j + 1);
      fprintf(out, " %7s", label);
    }
    fprintf(out, "\n");
    for (int i = 0; i < n; i++) {
      char label[16];
      snprintf(label, sizeof label, "[%d]", i + 1);
      fprintf(out, "%6s", label);
      for (int j = 0; j < n; j++)
        if (i == j)
          fprintf(out, " %7s", "-");
        else
          fprintf(out, " %7.4f", d[i * n + j]);
      fprintf(out, "\n");
    }
  }
}

int cmd_compare(int argc, char **argv) {
  compare_options o = {.format = "table"};
  ms_surface_config_default(&o.input.config);
  int status = parse_options(argc, argv, &o);
  if (status >= 0) return status;
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  int n = inputs.count + (inputs.program_argc > 0);
  if (n < 2) {
    cli_error(argv[0], "give two inputs or more (traces, .sig files, -- PROGRAM ARGS)");
    return 2;
  }
  int signatures = 0;
  for (int i = 0; i < inputs.count; i++)
    signatures += locality_is_signature(inputs.paths[i]);
  if (n == 2 && signatures < 2 && !o.matrix) {
    if (!strcmp(o.format, "csv") || o.input.sample_on) {
      cli_error(argv[0], "%s: for the matrix only (two sources: table or json)",
                o.input.sample_on ? "--sample" : "--format csv");
      return 2;
    }
    compare_sources_options two = {.config = o.input.config,
                                   .footprint = o.footprint,
                                   .length = o.length,
                                   .output = o.output,
                                   .json = !strcmp(o.format, "json")};
    return compare_sources(argv[0], &inputs, &two);
  }
  if (o.footprint || o.length) {
    cli_error(argv[0], "--footprint/--length: for two sources only");
    return 2;
  }
  ms_surface *surfaces = calloc((size_t)n, sizeof *surfaces);
  double *matrix = calloc((size_t)n * (size_t)n, sizeof *matrix);
  char **names = calloc((size_t)n, sizeof *names);
  report_observed *observed = calloc((size_t)n, sizeof *observed);
  status = 1;
  if (!surfaces || !matrix || !names || !observed) {
    cli_error(argv[0], "out of memory");
    goto done;
  }
  int program_status = 0;
  for (int i = 0; i < n; i++) {
    int live = i == inputs.count;
    names[i] = live ? inputs.program_argv[0] : inputs.paths[i];
    int s = locality_surface_observe(argv[0], live ? NULL : inputs.paths[i],
                                     live ? inputs.program_argc : 0, inputs.program_argv, &o.input,
                                     &surfaces[i], NULL, &program_status, &observed[i]);
    if (s) goto done;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      int points;
      if (ms_surface_difference(&surfaces[i], &surfaces[j], &matrix[i * n + j], &points) < 0) {
        cli_error(argv[0], "%s and %s: %s", names[i], names[j], ms_error_message());
        goto done;
      }
    }
  ms_output out;
  if (report_open(argv[0], &out, o.output, inputs.program_argc > 0) < 0) goto done;
  write_matrix(out.file, o.format, names, n, matrix, observed);
  if (ferror(out.file)) {
    ms_output_abort(&out);
    cli_error(argv[0], "cannot write the matrix");
    goto done;
  }
  if (report_commit(argv[0], &out) < 0) goto done;
  status = program_status;
done:
  for (int i = 0; observed && i < n; i++)
    report_observed_free(&observed[i]);
  free(observed);
  free(surfaces);
  free(matrix);
  free(names);
  return status;
}

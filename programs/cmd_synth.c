/* memsnap synth SIGNATURE.sig -o SEED [--unique] [--seed N] [--bin N] [--footprint F]
 *              [--min-length N] [--max-length N] [--check N] [--max-error E]
 *              [--max-width-error E]
 *              [--iterations N] [--improvement X] [--report FILE]
 * memsnap synth --hand random|stride [--width W] [--word W] --footprint F -o SEED
 *
 * Generates a trace seed from a memory signature (lib/synth) and writes it as an .mtr
 * trace with the seed metadata; prints what was achieved.
 */
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/output.h"
#include "memsnap/synth.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: memsnap synth SIGNATURE.sig -o SEED [OPTIONS]\n"
          "       memsnap synth --hand random|stride [--width W] [--word W] -o SEED\n"
          "  -o, --output SEED    the seed to write (an .mtr trace with seed metadata)\n"
          "  --unique             no word used twice (seeds for memsnap bench)\n"
          "  --seed N             random seed (default 1): same seed, same trace\n"
          "  --bin N              signature bin to imitate (default 0: the whole program)\n"
          "  --footprint F        default footprint of the expansion (bytes, k/M/G or Ki/Mi/Gi)\n"
          "  --hand P             hand-written signature: random (all 0) or stride (all 1)\n"
          "  --width W, --word W  hand signatures: block width and word (default 512, 4)\n"
          "  --min-length N       references before the first check (default 200000)\n"
          "  --max-length N       length cap of an iteration (default 1000000)\n"
          "  --check N            references between checks (default 10000)\n"
          "  --max-error E        accepted mean and max CDF discrepancy (default 0.001)\n"
          "  --max-width-error E  with width rows: accepted mean hit-rate error of the\n"
          "                       narrower widths (default 0.002)\n"
          "  --iterations N       block-phase iterations at most (default 5)\n"
          "  --improvement X      stop when an iteration improves less (default 0.0005)\n"
          "  --report FILE        write what was achieved to FILE (default standard output)\n"
          "  --json               the report as a JSON object\n");
}

static int parse_rate(const char *command, const char *option, const char *text, double *out) {
  char *end;
  double value = strtod(text, &end);
  if (*end || !(value >= 0 && value <= 1)) {
    cli_error(command, "bad %s '%s' (a number in [0, 1])", option, text);
    return -1;
  }
  *out = value;
  return 0;
}

typedef struct synth_options {
  ms_synth_config config;
  const char *output, *hand, *report;
  uint64_t bin, footprint, width, word;
  int json;
} synth_options;

static int parse_options(int argc, char **argv, synth_options *o) {
  static const struct option long_options[] = {{"output", required_argument, NULL, 'o'},
                                               {"unique", no_argument, NULL, 'u'},
                                               {"seed", required_argument, NULL, 's'},
                                               {"bin", required_argument, NULL, 'b'},
                                               {"footprint", required_argument, NULL, 'f'},
                                               {"hand", required_argument, NULL, 'H'},
                                               {"width", required_argument, NULL, 'W'},
                                               {"word", required_argument, NULL, 'w'},
                                               {"min-length", required_argument, NULL, 'm'},
                                               {"max-length", required_argument, NULL, 'M'},
                                               {"check", required_argument, NULL, 'c'},
                                               {"max-error", required_argument, NULL, 'e'},
                                               {"max-width-error", required_argument, NULL, 'E'},
                                               {"iterations", required_argument, NULL, 'i'},
                                               {"improvement", required_argument, NULL, 'I'},
                                               {"report", required_argument, NULL, 'R'},
                                               {"json", no_argument, NULL, 'j'},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c;
  uint64_t number;
  while ((c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1) {
    uint64_t *target = NULL;
    switch (c) {
    case 'o': o->output = optarg; continue;
    case 'u': o->config.unique = 1; continue;
    case 'H': o->hand = optarg; continue;
    case 'R': o->report = optarg; continue;
    case 'j': o->json = 1; continue;
    case 's': target = &o->config.seed; break;
    case 'b': target = &o->bin; break;
    case 'f': target = &o->footprint; break;
    case 'W': target = &o->width; break;
    case 'w': target = &o->word; break;
    case 'm': target = &o->config.min_length; break;
    case 'M': target = &o->config.max_length; break;
    case 'c': target = &o->config.check_interval; break;
    case 'e':
      if (parse_rate(argv[0], "--max-error", optarg, &o->config.max_max_error) < 0) return 2;
      o->config.max_mean_error = o->config.max_max_error;
      continue;
    case 'E':
      if (parse_rate(argv[0], "--max-width-error", optarg, &o->config.max_width_error) < 0)
        return 2;
      continue;
    case 'I':
      if (parse_rate(argv[0], "--improvement", optarg, &o->config.min_improvement) < 0) return 2;
      continue;
    case 'i':
      if (cli_parse_count(optarg, &number) < 0 || number < 1 || number > 100) {
        cli_error(argv[0], "bad --iterations '%s' (1..100)", optarg);
        return 2;
      }
      o->config.max_iterations = (int)number;
      continue;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
    if (cli_parse_count(optarg, target) < 0) {
      cli_error(argv[0], "bad value '%s' for %s", optarg, argv[optind - 1]);
      return 2;
    }
  }
  return -1;
}

/* Commits the report, or removes it when a write failed; the exit status. */
static int finish_report(const char *command, ms_output *report) {
  if (ferror(report->file)) {
    ms_output_abort(report);
    cli_error(command, "cannot write the report");
    return 1;
  }
  return ms_output_commit(report) < 0 ? cli_fail(command) : 0;
}

static void write_json(FILE *out, const char *path, const ms_seed *seed) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "seed", json_object_new_string(path));
  json_object_object_add(root, "references", json_object_new_int64((int64_t)seed->length));
  json_object_object_add(root, "blocks", json_object_new_int64((int64_t)seed->unique_blocks));
  json_object_object_add(root, "working_set", json_object_new_int64((int64_t)seed->working_set));
  json_object_object_add(root, "min_replications",
                         json_object_new_int64((int64_t)seed->min_replications));
  json_object_object_add(root, "iterations", json_object_new_int(seed->iterations));
  json_object_object_add(root, "cdf_error_mean", json_object_new_double(seed->mean_error));
  json_object_object_add(root, "cdf_error_max", json_object_new_double(seed->max_error));
  json_object_object_add(root, "alpha_error", json_object_new_double(seed->alpha_error));
  json_object_object_add(root, "unique", json_object_new_boolean(seed->unique));
  json_object_object_add(root, "width_error",
                         seed->width_error >= 0 ? json_object_new_double(seed->width_error) : NULL);
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root,
                                         JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
}

int cmd_synth(int argc, char **argv) {
  synth_options o = {.width = 512, .word = 4};
  ms_synth_config_default(&o.config);
  int status = parse_options(argc, argv, &o);
  if (status >= 0) return status;
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (!o.output) {
    cli_error(argv[0], "no output: give -o SEED");
    return 2;
  }
  if ((o.hand != NULL) == (inputs.count == 1) || inputs.count > 1 || inputs.program_argc) {
    cli_error(argv[0], "give one signature file, or --hand random|stride");
    return 2;
  }
  if (o.width > UINT32_MAX || o.word > UINT32_MAX || o.bin > INT32_MAX) {
    cli_error(argv[0], "--width, --word or --bin out of range");
    return 2;
  }
  ms_signature *signature = NULL;
  ms_seed *seed = NULL;
  ms_output report;
  int rc = o.hand ? ms_synth_hand_signature(o.hand, (uint32_t)o.width, (uint32_t)o.word, &signature)
                  : ms_signature_load(inputs.paths[0], &signature);
  if (rc < 0) return o.hand ? (cli_fail(argv[0]), 2) : cli_fail(argv[0]);
  rc = ms_synth_generate(signature, (int)o.bin, &o.config, &seed);
  if (rc == MS_OK) {
    seed->footprint = o.footprint;
    rc = ms_seed_save(seed, o.output);
  }
  if (rc < 0) {
    status = rc == MS_ERR_ARG ? (cli_fail(argv[0]), 2) : cli_fail(argv[0]);
  } else if (ms_output_open(&report, o.report ? o.report : "-") < 0) {
    status = cli_fail(argv[0]);
  } else if (o.json) {
    write_json(report.file, o.output, seed);
    status = finish_report(argv[0], &report);
  } else {
    fprintf(report.file,
            "seed %s: %" PRIu64 " references, %" PRIu64 " blocks (working set %" PRIu64
            " bytes), min replications %" PRIu64 "\n",
            o.output, seed->length, seed->unique_blocks, seed->working_set, seed->min_replications);
    fprintf(report.file, "iterations %d, CDF error mean %.4f max %.4f, alpha error %.4f%s\n",
            seed->iterations, seed->mean_error, seed->max_error, seed->alpha_error,
            seed->unique ? " (unique-index)" : "");
    if (seed->width_error >= 0)
      fprintf(report.file,
              "narrower widths: mean hit-rate error %.4f against the signature's width rows\n",
              seed->width_error);
    else if (!o.hand)
      fprintf(stderr,
              "memsnap synth: note: the signature has no width rows (memsnap signature "
              "--widths), so the words follow the alphas alone: expect the seed's surface "
              "to differ from the program's by a few %% at widths below %u bytes\n",
              seed->width);
    status = finish_report(argv[0], &report);
  }
  ms_seed_free(seed);
  ms_signature_free(signature);
  return status;
}

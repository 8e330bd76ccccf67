/* The surface of any input for the locality commands: see locality_cli.h. */
#include "locality_cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/input.h"
#include "memsnap/open.h"
#include "memsnap/sample.h"
#include "memsnap/signature.h"

int locality_is_signature(const char *path) {
  ms_input_kind kind;
  return path && ms_input_kind_of(path, &kind) == 0 && kind == MS_INPUT_SIGNATURE;
}

int locality_parse_format(const char *command, const char *value, const char **format) {
  if (strcmp(value, "table") != 0 && strcmp(value, "csv") != 0 && strcmp(value, "json") != 0) {
    cli_error(command, "unknown --format '%s' (table, csv or json)", value);
    return -1;
  }
  *format = value;
  return 0;
}

int locality_parse_input_option(const char *command, int option, const char *value,
                                locality_input_options *options) {
  ms_surface_config *config = &options->config;
  uint64_t values[MS_SURFACE_MAX_DEPTHS];
  int count;
  char *end;
  switch (option) {
  case 'w':
    if (ms_surface_parse_grid(value, "--widths", values, MS_SURFACE_MAX_WIDTHS, &count) < 0) break;
    config->width_count = count;
    for (int i = 0; i < count; i++)
      config->widths[i] = values[i] > UINT32_MAX ? 0 : (uint32_t)values[i];
    return 1;
  case 'd':
    if (ms_surface_parse_grid(value, "--depths", values, MS_SURFACE_MAX_DEPTHS, &count) < 0) break;
    config->depth_count = count;
    memcpy(config->depths, values, (size_t)count * sizeof values[0]);
    return 1;
  case 'S':
    config->sample_rate = strtod(value, &end);
    if (*end || end == value || !(config->sample_rate > 0.0) || !(config->sample_rate < 1.0)) {
      cli_error(command, "bad --shards '%s' (a rate in (0, 1), e.g. 0.01)", value);
      return -1;
    }
    return 1;
  case LOCALITY_OPT_THREADS: {
    long threads = strtol(value, &end, 10);
    if (*end || end == value || threads < 1 || threads > 1024) {
      cli_error(command, "bad --threads '%s' (1 to 1024)", value);
      return -1;
    }
    config->threads = (int)threads;
    return 1;
  }
  case 's':
    if (cli_parse_sample(value, &options->sample_on, &options->sample_off) < 0) {
      cli_error(command, "bad --sample '%s' (ON/OFF accesses, e.g. 1M/9M)", value);
      return -1;
    }
    return 1;
  default: return 0;
  }
  cli_error(command, "%s", ms_error_message()); /* a bad grid */
  return -1;
}

static int surface_of_signature(const char *command, const char *path, ms_surface *out,
                                report_observed *observed) {
  ms_signature *signature = NULL;
  if (ms_signature_load(path, &signature) < 0 || ms_signature_to_surface(signature, out) < 0) {
    ms_signature_free(signature);
    return cli_fail(command);
  }
  /* a signature names its program, not how the program ended */
  ms_stream_info info = {.program = signature->program, .exit_status = -1};
  int rc = observed ? report_observe(command, observed, &info, path) : 0;
  if (observed && rc == 0) observed->truncated = -1;
  ms_signature_free(signature);
  return rc < 0 ? 1 : 0;
}

int locality_surface_of(const char *command, const char *path, int program_argc,
                        char **program_argv, const locality_input_options *options, ms_surface *out,
                        ms_surface *exact, int *program_status) {
  return locality_surface_observe(command, path, program_argc, program_argv, options, out, exact,
                                  program_status, NULL);
}

int locality_surface_observe(const char *command, const char *path, int program_argc,
                             char **program_argv, const locality_input_options *options,
                             ms_surface *out, ms_surface *exact, int *program_status,
                             report_observed *observed) {
  *program_status = 0;
  if (program_argc == 0 && locality_is_signature(path)) {
    int rc = surface_of_signature(command, path, out, observed);
    if (exact) *exact = *out;
    return rc;
  }
  ms_surface_config exact_config = options->config;
  exact_config.sample_rate = 1.0;
  ms_analysis_sampling sampling = {options->sample_on, options->sample_off};
  ms_analysis *surfaces[2] = {NULL, NULL};
  ms_source *source = NULL;
  int status = 1;
  if (ms_surface_analysis_new(&options->config, sampling, &surfaces[0]) < 0 ||
      (exact && ms_surface_analysis_new(&exact_config, sampling, &surfaces[1]) < 0)) {
    cli_fail(command);
    goto done;
  }
  source = cli_open_source(command, path, program_argc, program_argv, NULL);
  if (!source) goto done;
  ms_sink *sinks[2] = {ms_analysis_sink(surfaces[0]),
                       surfaces[1] ? ms_analysis_sink(surfaces[1]) : NULL};
  if (ms_pipeline_run(source, sinks, exact ? 2 : 1, 0) < 0) {
    cli_fail(command);
    goto done;
  }
  *out = *(const ms_surface *)ms_analysis_result(surfaces[0]);
  if (exact) *exact = *(const ms_surface *)ms_analysis_result(surfaces[1]);
  *program_status = cli_program_status(source);
  if (observed &&
      report_observe(command, observed, ms_source_info(source), program_argc ? NULL : path) < 0)
    goto done;
  status = 0;
done:
  ms_source_destroy(source);
  ms_analysis_free(surfaces[0]);
  ms_analysis_free(surfaces[1]);
  return status;
}

int locality_parse_scores_option(const char *command, int option, const char *value,
                                 ms_scores_config *config) {
  uint64_t n;
  switch (option) {
  case 'W':
    if (cli_parse_count(value, &n) < 0 || n > 4096) {
      cli_error(command, "bad --word '%s' (bytes, a power of two up to 4096)", value);
      return -1;
    }
    config->word = (uint32_t)n;
    return 1;
  case 'l':
    if (cli_parse_count(value, &n) < 0 || n > MS_SCORES_MAX_LOOKBACK) {
      cli_error(command, "bad --lookback '%s' (1..%d accesses)", value, MS_SCORES_MAX_LOOKBACK);
      return -1;
    }
    config->lookback = (int)n;
    return 1;
  case 'L':
    if (cli_parse_count(value, &n) < 0 || n > 20) {
      cli_error(command, "bad --window-log2 '%s' (1..20)", value);
      return -1;
    }
    config->log2_window = (int)n;
    return 1;
  default: return 0;
  }
}

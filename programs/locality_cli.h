/* Shared pieces of the locality commands (surface, scores, compare, plot): the surface of
 * one input, whatever it is (a trace, a live program, a .sig memory signature). */
#ifndef MEMSNAP_LOCALITY_CLI_H
#define MEMSNAP_LOCALITY_CLI_H

#include <stdint.h>

#include "memsnap/scores.h"
#include "memsnap/surface.h"
#include "report.h"

/* How to observe an input: the grid (and SHARDS rate) and optional interval sampling
 * (sample_on accesses kept, then sample_off dropped; both 0: everything). */
typedef struct locality_input_options {
  ms_surface_config config;
  uint64_t sample_on, sample_off;
} locality_input_options;

/* 1 if path holds a memory signature (ms_input_kind_of: its first line, or an empty or
 * unreadable .sig). */
int locality_is_signature(const char *path);

/* The surface of a trace, of a live program (program_argc > 0) or of a .sig (derived from
 * its whole-program bin; the grid is then the signature's). Prints the error and returns a
 * non-zero exit status on failure, 0 on success. When `exact` is not NULL (a trace or a
 * program), the exact surface of the same grid is computed in the same pass too; *program_status
 * gets the live program's status (0 for files). */
int locality_surface_of(const char *command, const char *path, int program_argc,
                        char **program_argv, const locality_input_options *options, ms_surface *out,
                        ms_surface *exact, int *program_status);

/* locality_surface_of, and what was observed (report.h) into *observed when it is not NULL
 * (freed by the caller with report_observed_free, on success only). */
int locality_surface_observe(const char *command, const char *path, int program_argc,
                             char **program_argv, const locality_input_options *options,
                             ms_surface *out, ms_surface *exact, int *program_status,
                             report_observed *observed);

/* Parses --format: table, csv or json. Returns 0, or -1 (message printed). */
int locality_parse_format(const char *command, const char *value, const char **format);

/* getopt_long's value for --threads N (no short form; 'T' is plot's --title). */
#define LOCALITY_OPT_THREADS 1000

/* The options every locality command shares, by their getopt letters: 'w' --widths, 'd'
 * --depths, 'S' --shards, 's' --sample ON/OFF, LOCALITY_OPT_THREADS --threads N. Returns 1
 * when `option` is one of them and its value is stored, 0 when it is not one of them, -1
 * (message printed) on a bad value. */
int locality_parse_input_option(const char *command, int option, const char *value,
                                locality_input_options *options);

/* The locality-score options of `scores` and `plot scores`: 'W' --word, 'l' --lookback,
 * 'L' --window-log2. Same returns as locality_parse_input_option. */
int locality_parse_scores_option(const char *command, int option, const char *value,
                                 ms_scores_config *config);

#endif

/* `memsnap compare` of exactly two sources (programs/compare_sources.c): hit rates on the
 * 46 evaluation hierarchies and cache surfaces, side by side. */
#ifndef MEMSNAP_COMPARE_SOURCES_H
#define MEMSNAP_COMPARE_SOURCES_H

#include <stdint.h>

#include "cli.h"
#include "locality_cli.h"
#include "memsnap/surface.h"

typedef struct compare_sources_options {
  ms_surface_config config;   /* the grid of both surfaces */
  uint64_t footprint, length; /* expansion of trace seeds, as `memsnap sim` */
  const char *output;         /* NULL: standard output (standard error with a live program) */
  int json;
} compare_sources_options;

/* Compares inputs->paths[0..count) and the program set aside (two sources in all). Prints
 * errors; returns the exit status (a live program's own status when it failed). */
int compare_sources(const char *command, const cli_inputs *inputs,
                    const compare_sources_options *options);

#endif

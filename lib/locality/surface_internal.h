/* Internal hooks of the cache surface builder (lib/locality/surface.c), for the tests. */
#ifndef MEMSNAP_SURFACE_INTERNAL_H
#define MEMSNAP_SURFACE_INTERNAL_H

#include "memsnap/surface.h"

/* The versions of the sampled pass's per-access loop; they give identical surfaces. */
typedef enum surface_pass {
  SURFACE_PASS_SCALAR, /* any CPU, any number of widths */
  SURFACE_PASS_AVX2,   /* up to 8 widths, two vectors of 4 lanes */
  SURFACE_PASS_AVX512  /* up to 8 widths, one vector of 8 lanes (AVX-512F and DQ) */
} surface_pass;

/* Runs the sampled pass of `builder` (before its first batch) with `pass`: MS_OK, or
 * MS_ERR_ARG if this CPU or build lacks it or the grid has more than 8 widths. The builder
 * picks the fastest one the CPU has by itself. */
int surface_builder_set_pass(ms_surface_builder *builder, surface_pass pass);

/* Line references of width `width_index` so far (every line each access spans), counted
 * exactly even when sampling: the total that sampled hit rates apply to. */
uint64_t surface_builder_line_references(const ms_surface_builder *builder, int width_index);

#endif

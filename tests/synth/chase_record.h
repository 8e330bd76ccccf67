/* The benchmark's own stream, observed: the chase loads of a `memsnap record` of
 * `memsnap bench SEED --footprint F --ops N --ilp K` and the oracles of issue 6 on them.
 * Shared by tests/synth/test_chase_record.c and bench/bench_chase.c.
 *
 * Chase loads are told apart by where they come from, not by where they go: a 4-byte load
 * at a site of a function ms_chase_kernel_K (lib/chase/chase_kernels.c) whose site runs
 * more than once in the trace. The kernel's prologue (K loads of the chains' starting
 * words from the caller's array, one run per site) is not part of the chase; a loop site
 * that loaded anything else (a register spilled to the stack) would be counted as chase and
 * then fail the address checks, never pass them silently.
 * The run phase is every access from the first chase load to the end of the trace: the
 * loop, then the report and the exit. Before it come the program's start-up, the seed's
 * decoding and the array's construction, which the benchmark does not time.
 */
#ifndef MEMSNAP_TESTS_CHASE_RECORD_H
#define MEMSNAP_TESTS_CHASE_RECORD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/memsnap.h"
#include "memsnap/synth.h"
#include "memsnap/trace.h"

typedef struct chase_record {
  uint64_t accesses;   /* every access of the trace */
  uint64_t run;        /* accesses from the first chase load to the end */
  uint64_t chase;      /* chase loads */
  uint64_t *addresses; /* of the chase loads, in trace order (`chase` of them) */
} chase_record;

static inline void chase_record_free(chase_record *r) {
  free(r->addresses);
  memset(r, 0, sizeof *r);
}

/* Per site: 0 unknown yet, 1 a kernel site, 2 another site. */
static inline int chase_kernel_site(const ms_stream_info *info, uint8_t **kinds, size_t *size,
                                    uint32_t site) {
  if (site == MS_SITE_NONE) return 0;
  if (site >= *size) {
    size_t n = *size ? *size : 1024;
    while (n <= site)
      n *= 2;
    uint8_t *grown = realloc(*kinds, n);
    if (!grown) abort();
    memset(grown + *size, 0, n - *size);
    *kinds = grown;
    *size = n;
  }
  if (!(*kinds)[site]) {
    const ms_site *s = ms_site_table_get(info->sites, site);
    int kernel = s && s->function && !strncmp(s->function, "ms_chase_kernel_", 16);
    (*kinds)[site] = kernel ? 1 : 2;
  }
  return (*kinds)[site] == 1;
}

/* Reads `trace` (two passes) into `out`; writes the chase loads, alone, to `chase_path`
 * (an .mtr trace) unless it is NULL. 0, or -1 after a message on stderr. */
static inline int chase_record_read(const char *trace, const char *chase_path, chase_record *out) {
  memset(out, 0, sizeof *out);
  uint8_t *kinds = NULL;
  size_t kinds_size = 0, counts_size = 0;
  uint64_t *counts = NULL; /* 4-byte loads per kernel site */
  ms_batch batch = {0}, kept = {0};
  ms_sink *sink = NULL;
  ms_source *source = NULL;
  size_t capacity = 0;
  int rc = ms_batch_init(&batch, 0) < 0 || ms_batch_init(&kept, 0) < 0 ? -1 : 0;
  for (int pass = 0; pass < 2 && rc == 0; pass++) {
    if (ms_trace_open(trace, &source) < 0) {
      rc = -1;
      break;
    }
    const ms_stream_info *info = ms_source_info(source);
    if (pass == 1 && chase_path &&
        (ms_mtr_sink_new(chase_path, &sink) < 0 || sink->ops->begin(sink, info) < 0))
      rc = -1;
    int n;
    while (rc == 0 && (n = ms_source_next(source, &batch)) > 0) {
      kept.count = 0;
      for (size_t i = 0; i < batch.count; i++) {
        const ms_access *a = &batch.accesses[i];
        if (pass == 1 && out->chase) out->run++;
        if (pass == 0) out->accesses++;
        if (a->kind != MS_LOAD || a->size != 4 ||
            !chase_kernel_site(info, &kinds, &kinds_size, a->site))
          continue;
        if (pass == 0) {
          if (a->site >= counts_size) {
            size_t n2 = kinds_size;
            uint64_t *grown = realloc(counts, n2 * sizeof *counts);
            if (!grown) abort();
            memset(grown + counts_size, 0, (n2 - counts_size) * sizeof *counts);
            counts = grown;
            counts_size = n2;
          }
          counts[a->site]++;
          continue;
        }
        if (a->site >= counts_size || counts[a->site] < 2) continue;
        if (!out->chase) out->run = 1;
        if (out->chase == capacity) {
          capacity = capacity ? capacity * 2 : 1 << 20;
          uint64_t *grown = realloc(out->addresses, capacity * sizeof *grown);
          if (!grown) abort();
          out->addresses = grown;
        }
        out->addresses[out->chase++] = a->address;
        kept.accesses[kept.count++] = *a;
      }
      if (sink && kept.count && sink->ops->consume(sink, info, &kept) < 0) rc = -1;
    }
    if (rc == 0 && n < 0) rc = -1;
    if (rc == 0 && sink && sink->ops->end(sink, info) < 0) rc = -1;
    ms_source_destroy(source);
    source = NULL;
  }
  if (rc < 0) fprintf(stderr, "%s: %s\n", trace, ms_error_message());
  ms_sink_destroy(sink);
  ms_batch_free(&batch);
  ms_batch_free(&kept);
  free(kinds);
  free(counts);
  if (rc < 0) chase_record_free(out);
  return rc;
}

/* The addresses of the seed at `seed` expanded as `memsnap sim --footprint F --length N`
 * does (and as the benchmark lays out its array). 0, or -1 after a message on stderr. */
static inline int chase_seed_addresses(const char *seed, uint64_t footprint, uint64_t length,
                                       uint64_t **out, uint64_t *count) {
  ms_source *source = NULL;
  ms_seed_info info;
  ms_batch batch = {0};
  *out = NULL;
  *count = 0;
  int rc = ms_trace_open(seed, &source);
  if (rc == 0) rc = ms_seed_info_parse(ms_source_info(source), seed, &info) == 1 ? 0 : -1;
  ms_source_destroy(source);
  source = NULL;
  if (rc == 0)
    rc = ms_seed_source_open(
        seed, ms_seed_replications(&info, footprint ? footprint : info.footprint), length, &source);
  if (rc == 0) rc = ms_batch_init(&batch, 0);
  *out = rc == 0 ? malloc((length ? length : 1) * sizeof **out) : NULL;
  if (rc == 0 && !*out) abort();
  int n = 0;
  while (rc == 0 && (n = ms_source_next(source, &batch)) > 0)
    for (size_t i = 0; i < batch.count && *count < length; i++)
      (*out)[(*count)++] = batch.accesses[i].address;
  if (n < 0) rc = -1;
  if (rc < 0) {
    fprintf(stderr, "%s: %s\n", seed, ms_error_message());
    free(*out);
    *out = NULL;
  }
  ms_batch_free(&batch);
  ms_source_destroy(source);
  return rc < 0 ? -1 : 0;
}

/* The first i where a[i] - base differs from b[i] (base = a[0] - b[0]: the rebasing that
 * makes the first addresses equal); the shorter length if one is a prefix of the other,
 * UINT64_MAX if the two are equal. */
static inline uint64_t chase_first_difference(const uint64_t *a, uint64_t na, const uint64_t *b,
                                              uint64_t nb) {
  uint64_t base = na && nb ? a[0] - b[0] : 0, n = na < nb ? na : nb;
  for (uint64_t i = 0; i < n; i++)
    if (a[i] - base != b[i]) return i;
  return na == nb ? UINT64_MAX : n;
}

static inline int chase_compare_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* 1 if a and b, each rebased by its own minimum, are equal as multisets. */
static inline int chase_same_multiset(const uint64_t *a, uint64_t na, const uint64_t *b,
                                      uint64_t nb) {
  if (na != nb) return 0;
  uint64_t *x = malloc((na ? na : 1) * sizeof *x), *y = malloc((nb ? nb : 1) * sizeof *y);
  if (!x || !y) abort();
  memcpy(x, a, na * sizeof *x);
  memcpy(y, b, nb * sizeof *y);
  qsort(x, na, sizeof *x, chase_compare_u64);
  qsort(y, nb, sizeof *y, chase_compare_u64);
  int same = 1;
  for (uint64_t i = 0; i < na && same; i++)
    same = x[i] - x[0] == y[i] - y[0];
  free(x);
  free(y);
  return same;
}

#endif

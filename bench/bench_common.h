/* Shared helpers of the bench programs: a monotonic clock, and loading a whole trace into
 * memory as 16-byte records (the baseline every ratio is measured against). */
#ifndef MEMSNAP_BENCH_COMMON_H
#define MEMSNAP_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "memsnap/memsnap.h"
#include "memsnap/trace.h"

static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU time of the whole process, all its threads. */
static inline double bench_cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct bench_trace {
  ms_access *accesses;
  size_t count;
} bench_trace;

/* Reads every access of `path` into memory; exits with a message on failure. */
static inline bench_trace bench_load(const char *path) {
  ms_source *source;
  if (ms_trace_open(path, &source) < 0) {
    fprintf(stderr, "bench: %s\n", ms_error_message());
    exit(1);
  }
  bench_trace trace = {NULL, 0};
  size_t capacity = 0;
  ms_batch batch;
  ms_batch_init(&batch, 0);
  int n;
  while ((n = ms_source_next(source, &batch)) > 0) {
    if (trace.count + batch.count > capacity) {
      capacity = capacity ? capacity * 2 : 1 << 20;
      while (capacity < trace.count + batch.count)
        capacity *= 2;
      trace.accesses = realloc(trace.accesses, capacity * sizeof *trace.accesses);
      if (!trace.accesses) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
      }
    }
    for (size_t i = 0; i < batch.count; i++)
      trace.accesses[trace.count + i] = batch.accesses[i];
    trace.count += batch.count;
  }
  if (n < 0) {
    fprintf(stderr, "bench: %s\n", ms_error_message());
    exit(1);
  }
  ms_batch_free(&batch);
  ms_source_destroy(source);
  return trace;
}

/* The baseline: hand the in-memory records out in batches, as a source would, and touch
 * every field of every record. Returns a checksum so that nothing is optimized away. */
static inline uint64_t bench_read_loop(const bench_trace *trace) {
  uint64_t sum = 0;
  for (size_t start = 0; start < trace->count; start += MS_BATCH_CAPACITY) {
    size_t end =
        start + MS_BATCH_CAPACITY < trace->count ? start + MS_BATCH_CAPACITY : trace->count;
    for (size_t i = start; i < end; i++) {
      const ms_access *a = &trace->accesses[i];
      sum +=
          a->address ^ ((uint64_t)a->site << 20) ^ ((uint64_t)a->thread << 8) ^ a->size ^ a->kind;
    }
  }
  return sum;
}

/* Best of `repeats` timings of the baseline loop, in seconds. */
static inline double bench_time_read_loop(const bench_trace *trace, int repeats,
                                          uint64_t *checksum) {
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    double t0 = bench_now();
    *checksum += bench_read_loop(trace);
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

#endif

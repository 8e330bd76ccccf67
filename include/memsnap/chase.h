/* The pointer-chasing benchmark (chameleon-weinberg-dissertation-2008.txt, chapter 5):
 * runs a unique-index trace seed (memsnap/synth.h) as a real memory access pattern.
 *
 * - One array of 4-byte words doubles as data and index array (section 5.3): the element
 *   at a word the seed visits holds the index of the next word visited, so the only memory
 *   accesses of the work loop are the pattern itself.
 * - Replication r of the seed occupies words [r * W, (r + 1) * W) (W: the working set in
 *   words); the last word of a replication points to the first of the next, the last
 *   replication to the first: one closed loop whatever the number of operations.
 * - Footprint (section 5.5): the smallest multiple of the working set reaching the request,
 *   at least the seed's minimum replications; the array starts on a 512-byte boundary.
 * - ILP K (section 5.8.1): the array is interleaved so that element S(j) holds S(j + K)
 *   (S: the combined sequence of visits); K chains start at S(0..K-1) and kernel K advances
 *   them in turn, so an in-order machine issues exactly the sequence S, for any K.
 */
#ifndef MEMSNAP_CHASE_H
#define MEMSNAP_CHASE_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_CHASE_MAX_ILP 20

typedef void (*ms_chase_kernel)(const uint32_t *data, uint32_t *pointers, uint64_t iterations);
/* ms_chase_kernels[K] runs K chains for `iterations` iterations (K loads each), updating
 * pointers[0..K-1]. Index 0 is NULL. */
MS_API extern const ms_chase_kernel ms_chase_kernels[MS_CHASE_MAX_ILP + 1];

typedef struct ms_chase {
  uint32_t *data; /* 512-byte aligned, inside `allocation` */
  void *allocation;
  uint64_t elements;     /* words in the array */
  uint64_t footprint;    /* bytes */
  uint64_t replications; /* copies of the seed */
  uint64_t sequence;     /* visits in one turn of the loop: replications * seed length */
  int ilp;
  uint32_t start[MS_CHASE_MAX_ILP]; /* the chains' first words */
} ms_chase;

/* Builds the array for the seed at `seed_path` (written by memsnap synth --unique; word
 * size 4), a footprint request in bytes (0: the seed's default) and ILP 1..20. MS_ERR_ARG
 * naming the reason for a seed that is not unique-index or an ILP out of range. */
MS_API int ms_chase_build(const char *seed_path, uint64_t footprint, int ilp, ms_chase *out);
/* Performs `operations` chase steps (rounded down to a multiple of the ILP) from the
 * starting words; returns a value depending on every load (so that none can be dropped). */
MS_API uint64_t ms_chase_run(const ms_chase *chase, uint64_t operations);
MS_API void ms_chase_free(ms_chase *chase);

/* Hardware counters through perf_event_open: cycles and L1D, L2 (as far as the kernel
 * exposes it: generic LL for the last level) read misses of the calling thread. */
typedef struct ms_counters {
  int fds[4];
  int count;
  const char *names[4];
  uint64_t values[4];
} ms_counters;
/* MS_ERR_UNSUPPORTED with "counters unavailable: WHY" when the machine has none. */
MS_API int ms_counters_open(ms_counters *counters);
MS_API void ms_counters_start(ms_counters *counters);
MS_API void ms_counters_stop(ms_counters *counters); /* reads the values */
MS_API void ms_counters_close(ms_counters *counters);

/* One native run of a program (argv[0] looked up in PATH; its standard output sent to
 * /dev/null when quiet_stdout) under counters: its CPU time (user + system, of it and the
 * processes it waited for: wait4) always, and where the machine has them, the L1D and
 * last-level cache reads and read misses of its user space, all its threads and children
 * (perf_event_open, enable on exec, inherited; scaled when the kernel multiplexed them). */
typedef struct ms_program_counters {
  double cpu_seconds;
  int exit_status; /* its exit code, or 128 + the signal that killed it */
  int have_cache;  /* 0: the cache counters could not be opened; why: */
  char cache_why[256];
  uint64_t l1d_reads, l1d_misses, ll_reads, ll_misses;
} ms_program_counters;
/* MS_ERR_CHILD when the program cannot be started (the message names it and why). */
MS_API int ms_counters_run(char *const argv[], int quiet_stdout, ms_program_counters *out);

#ifdef __cplusplus
}
#endif

#endif

/* A PSnAP profile measured against the stream it came from (what `memsnap verify` prints).
 *
 * The trace is filtered by the profile's selection (its `selection` line). Per thread, each
 * access is compared with the profile's replay of that thread (address, size and kind):
 * the exact-match rate overall and per site, and the first divergence. Each site's own
 * accesses are also compared with its pattern alone, order aside (the k-th access of the
 * site in the trace with the k-th address of its pattern): where the order is lossy the
 * streams part at once while every exact site may still be exact, and this says so. Sites
 * are matched by instruction address, thread, kind and size, so that a live run whose site
 * numbers differ is still compared. Then the hit rates of the selected trace and of the
 * whole replay on the 46 evaluation hierarchies (memsnap/evaluation.h); with `whole`, of
 * the whole trace and of the whole trace with the selected accesses replaced by the
 * replay's (each thread's next one, in the trace's order): the run as the caches see it,
 * the accesses the selection left out (libc's memcpy, the loader) on both sides.
 */
#ifndef MEMSNAP_VERIFY_H
#define MEMSNAP_VERIFY_H

#include "memsnap/api.h"
#include <stdint.h>

#include "memsnap/evaluation.h"
#include "memsnap/psnap.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_verify_options {
  int no_cache; /* skip the hit rates on the 46 hierarchies */
  int whole;    /* hit rates of the whole run, left-out accesses included on both sides */
  /* which rank and thread of a merged profile (ms_psnap_profile_pick); with pick_thread,
   * the trace's other threads count as left out */
  int pick_rank, pick_thread;
  uint32_t rank, thread;
} ms_verify_options;

/* One profile site. */
typedef struct ms_verify_site {
  uint64_t total, exact;         /* in program order: replayed accesses of the site, and those that
                                  * matched the trace's access at the same place */
  int own;                       /* 1 if its own sequence was compared (exact and lossless sites) */
  uint64_t own_total, own_exact; /* trace accesses of the site against its own sequence */
} ms_verify_site;

typedef struct ms_verify_result {
  ms_psnap_profile profile; /* the profile verified: its sites, threads and selection */
  uint64_t compared;        /* trace accesses selected and compared in program order */
  uint64_t left_out;        /* trace accesses the selection left out */
  uint64_t exact;           /* of compared, equal to the replay's */
  uint64_t total;           /* compared + missing: the exact-match rate is exact / total */
  uint64_t extra;           /* trace accesses beyond the replay (or of threads it lacks) */
  uint64_t missing;         /* replayed accesses beyond the trace */
  int diverged;             /* 1: divergence[] describes the first access that differed */
  char divergence[1536];
  uint64_t own_compared, own_exact;  /* trace accesses of exact sites against their own sequence */
  uint64_t own_unmatched;            /* trace accesses of sites the profile does not have */
  uint32_t exact_sites, whole_sites; /* sites compared on their own, and those that matched
                                      * entirely */
  ms_verify_site *sites;             /* [profile.site_count] */
  int has_rates;                     /* 0 with no_cache */
  int whole;                         /* the rates are of the whole run (options.whole) */
  ms_evaluation_rates trace_rates, replay_rates;
  ms_rate_difference levels[MS_HIERARCHY_MAX_LEVELS];
} ms_verify_result;

/* Verifies the profile at profile_path against `trace`, read to its end. options may be
 * NULL. On success the caller frees *out with ms_verify_result_free. */
MS_API int ms_psnap_verify(const char *profile_path, ms_source *trace,
                           const ms_verify_options *options, ms_verify_result *out);
MS_API void ms_verify_result_free(ms_verify_result *result);

/* "access 9435 (thread 0, its access 9435): ..." is in divergence; this describes profile
 * site s ("0x401000 main (k.c:12)") into buf. */
MS_API void ms_verify_describe_site(const ms_verify_result *result, uint32_t site, char *buf,
                                    size_t size);

#ifdef __cplusplus
}
#endif

#endif

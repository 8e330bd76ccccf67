/* Between the profile builder and replay, inside lib/psnap: the builder judges the models of
 * a lossy site by the addresses replay would give it. */
#ifndef MEMSNAP_PSNAP_REPLAY_INTERNAL_H
#define MEMSNAP_PSNAP_REPLAY_INTERNAL_H

#include <stdint.h>

#include "memsnap/psnap.h"

/* A lossy site with reuse odds restarts its recent addresses every MS_PSNAP_REUSE_BLOCK
 * accesses: replay from anywhere steps from the start of that block. */
#define MS_PSNAP_REUSE_BLOCK 16384

/* The builder and replay keep, per recent 128-byte line of a site, the access number (+ 1,
 * modulo 2^32; 0: never) that last touched each of its four 32-byte quarters: the latest
 * of quarters first .. first + n - 1, 0 if none. */
static inline uint32_t ms_psnap_latest(const uint32_t *when, unsigned first, unsigned n) {
  uint32_t best = 0;
  for (unsigned i = first; i < first + n; i++)
    if (when[i] && (!best || (int32_t)(when[i] - best) > 0)) best = when[i];
  return best;
}

/* The addresses replay gives untied lossy site `site` (as site number `id`) at its access
 * numbers from `from` to from + n - 1, into `out` (cheapest with `from` a multiple of
 * MS_PSNAP_REUSE_BLOCK). 0, or MS_ERR_NOMEM. */
int ms_psnap_lossy_addresses(const ms_psnap_site *site, uint32_t id, uint64_t from, uint64_t n,
                             uint64_t *out);

#endif

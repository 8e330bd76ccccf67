/* The benchmark's own stream against its seed (issue 6), on recordings made by
 * bench/run-synth.sh: `memsnap record` of `memsnap bench SEED --footprint F --ops N --ilp 1`
 * and of the same with --ilp K. Prints, each measured on these recordings:
 *   - the share of chase loads in the run phase (target >= 99%) and in the whole trace;
 *   - whether the ILP 1 chase, rebased by the array's base, is the seed expanded to F and N;
 *   - whether ILP K visits the addresses of ILP 1 as a multiset and in order.
 * Writes the ILP 1 chase loads alone to CHASE.mtr for `memsnap compare`.
 * usage: bench_chase ILP1.mtr ILPK.mtr SEED FOOTPRINT OPS CHASE.mtr
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "../tests/synth/chase_record.h"

static void shares(const char *name, const chase_record *r) {
  printf("%s: chase loads / run-phase accesses %.4f%% (%" PRIu64 " of %" PRIu64
         ", target >= 99%%); / whole trace %.2f%% (of %" PRIu64
         ": start-up, seed decoding and array set-up, untimed)\n",
         name, 100.0 * (double)r->chase / (double)(r->run ? r->run : 1), r->chase, r->run,
         100.0 * (double)r->chase / (double)(r->accesses ? r->accesses : 1), r->accesses);
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: bench_chase ILP1.mtr ILPK.mtr SEED FOOTPRINT OPS CHASE.mtr\n");
    return 2;
  }
  uint64_t footprint = strtoull(argv[4], NULL, 10), ops = strtoull(argv[5], NULL, 10);
  chase_record one, k;
  uint64_t *seed, seed_count;
  if (chase_record_read(argv[1], argv[6], &one) < 0 || chase_record_read(argv[2], NULL, &k) < 0 ||
      chase_seed_addresses(argv[3], footprint, ops, &seed, &seed_count) < 0)
    return 1;
  shares("ILP 1", &one);
  shares("ILP K", &k);
  uint64_t d = chase_first_difference(one.addresses, one.chase, seed, seed_count);
  if (d == UINT64_MAX)
    printf("ILP 1 chase = expanded seed rebased by 0x%" PRIx64 " (512-aligned: %s): all %" PRIu64
           " addresses equal (target: all)\n",
           one.addresses[0] - seed[0], (one.addresses[0] - seed[0]) % 512 ? "no" : "yes",
           one.chase);
  else
    printf("ILP 1 chase = expanded seed rebased: first difference at access %" PRIu64 " of %" PRIu64
           " (target: none)\n",
           d, one.chase);
  d = chase_first_difference(k.addresses, k.chase, one.addresses, one.chase);
  printf(
      "ILP K vs ILP 1: same multiset %s, same order %s (first difference: %s) (target: yes, yes)\n",
      chase_same_multiset(k.addresses, k.chase, one.addresses, one.chase) ? "yes" : "no",
      d == UINT64_MAX ? "yes" : "no", d == UINT64_MAX ? "none" : "see above");
  free(seed);
  chase_record_free(&one);
  chase_record_free(&k);
  return 0;
}

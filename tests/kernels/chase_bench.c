/* chase_bench SEED OPS ILP: the work of `memsnap bench SEED --ops OPS --ilp ILP` (the
 * library's ms_chase_build and ms_chase_run, footprint: the seed's default) in a program
 * built plainly. tests/synth/test_compare_sources.c records it instead of memsnap itself
 * when memsnap is built with sanitizers, which Valgrind cannot run. First line as memsnap
 * bench prints it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "memsnap/chase.h"
#include "memsnap/error.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: chase_bench SEED OPS ILP\n");
    return 2;
  }
  uint64_t ops = strtoull(argv[2], NULL, 10);
  int ilp = atoi(argv[3]);
  ms_chase chase;
  if (ms_chase_build(argv[1], 0, ilp, &chase) < 0) {
    fprintf(stderr, "chase_bench: %s\n", ms_error_message());
    return 1;
  }
  printf("footprint %" PRIu64 " bytes (%" PRIu64 " replications), ilp %d\n", chase.footprint,
         chase.replications, ilp);
  uint64_t operations = ops / (uint64_t)ilp * (uint64_t)ilp;
  printf("%" PRIu64 " memory operations (checksum %" PRIu64 ")\n", operations,
         ms_chase_run(&chase, operations));
  ms_chase_free(&chase);
  return 0;
}

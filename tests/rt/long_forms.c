/* Accesses that memsnap's runtime sends in its long form (lib/capture/rt/rt.c: three words
 * instead of one): addresses at or above 2^48, which no load of an ordinary program makes,
 * given to the load callback directly (nothing is dereferenced), each after an ordinary
 * store to cells[i % 4096]. Prints the address of cells. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long cells[4096];

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  printf("%p\n", (void *)cells);
  for (long i = 0; i < n; i++) {
    cells[i & 4095] = i;
    __sanitizer_cov_load8(
        (unsigned long long *)(uintptr_t)(0xffff000000000000ull + 8 * (uint64_t)i));
  }
  return 0;
}

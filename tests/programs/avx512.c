/* Does real work (argv[1] stores, default 10000), then one AVX-512 instruction, as a
 * program built with -march=native on an AVX-512 CPU does (without asking the CPU first).
 * It runs natively on such a CPU; Valgrind cannot decode the instruction on any CPU and
 * raises SIGILL. */
#include <stdio.h>
#include <stdlib.h>

static long touched[100000];

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10000;
  if (n > 100000) n = 100000;
  for (long i = 0; i < n; i++)
    ((volatile long *)touched)[i] = i;
  __asm__ volatile("vpxord %%zmm0, %%zmm0, %%zmm0" ::: "xmm0");
  printf("%ld\n", touched[n - 1]);
  return 0;
}

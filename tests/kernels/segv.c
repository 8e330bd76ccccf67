/* Does real work (argv[1] stores, default 10000), then writes through a null pointer; with
 * argv[2] "avx512", executes one AVX-512 instruction instead, as a program built with
 * -march=native on an AVX-512 CPU does (without asking the CPU first): natively it runs
 * on such a CPU, while Valgrind cannot decode it on any CPU and raises SIGILL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long touched[100000];

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10000;
  if (n > 100000) n = 100000;
  for (long i = 0; i < n; i++)
    ((volatile long *)touched)[i] = i;
  if (argc > 2 && strcmp(argv[2], "avx512") == 0) {
    __asm__ volatile("vpxord %%zmm0, %%zmm0, %%zmm0" ::: "xmm0");
    printf("%ld\n", touched[n - 1]);
    return 0;
  }
  fprintf(stderr, "segv: about to crash\n");
  volatile long *null = (volatile long *)(argc > 100 ? touched : NULL);
  *null = 1;
  return 0;
}

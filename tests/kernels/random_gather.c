/* Random gather: sum of table[x] for a pseudo-random x computed in registers (no index
 * array), argv[2] lookups (default 400000) into a table of argv[1] doubles (default 2^20,
 * 8 MB): every access lands far from the others and is rarely reused soon. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static double random_gather(const double *table, unsigned long n,
                                                      long lookups) {
  double sum = 0.0;
  unsigned long x = 88172645463325252ul;
  for (long i = 0; i < lookups; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    sum += table[x % n];
  }
  return sum;
}

int main(int argc, char **argv) {
  unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1ul << 20;
  long lookups = argc > 2 ? atol(argv[2]) : 400000;
  double *table = malloc(n * sizeof *table);
  if (!table || n == 0) return 1;
  for (unsigned long i = 0; i < n; i++)
    table[i] = (double)(i & 1023);
  printf("%g\n", random_gather(table, n, lookups));
  free(table);
  return 0;
}

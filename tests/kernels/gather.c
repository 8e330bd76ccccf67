/* Gather: sum += a[idx[i]] with a pseudo-random index array (argv[1] elements, default 100000). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static double gather(const double *a, const unsigned *idx, long n) {
  double sum = 0.0;
  for (long i = 0; i < n; i++)
    sum += a[idx[i]];
  return sum;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  double *a = malloc(n * sizeof *a);
  unsigned *idx = malloc(n * sizeof *idx);
  if (!a || !idx) return 1;
  unsigned x = 12345;
  for (long i = 0; i < n; i++) {
    a[i] = (double)i;
    x = x * 1103515245u + 12345u;
    idx[i] = (x >> 8) % (unsigned)n;
  }
  printf("%g\n", gather(a, idx, n));
  free(a), free(idx);
  return 0;
}

/* Two arrays of argv[1] doubles each (default 65536, 512 KiB): a[] swept in order, b[]
 * gathered at pseudo-random indices, each in a function and on a line of its own, so that
 * where their misses belong is known by construction (tests/cli/test_annotate.c): the
 * sweep misses once per line of a, the gather nearly every time once b outgrows the cache. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static double sweep(const double *a, long n) {
  double sum = 0.0;
  for (long i = 0; i < n; i++)
    sum += a[i]; /* the sweep */
  return sum;
}

__attribute__((noinline)) static double gather(const double *b, const unsigned *idx, long n) {
  double sum = 0.0;
  for (long i = 0; i < n; i++)
    sum += b[idx[i]]; /* the gather */
  return sum;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 65536;
  double *a = malloc(n * sizeof *a); /* a's allocation */
  double *b = malloc(n * sizeof *b); /* b's allocation */
  unsigned *idx = malloc(n * sizeof *idx);
  if (!a || !b || !idx || n < 1) return 1;
  unsigned x = 12345;
  for (long i = 0; i < n; i++) {
    a[i] = b[i] = (double)i;
    x = x * 1103515245u + 12345u;
    idx[i] = (x >> 8) % (unsigned)n;
  }
  printf("%g\n", sweep(a, n) + gather(b, idx, n));
  free(a), free(b), free(idx);
  return 0;
}

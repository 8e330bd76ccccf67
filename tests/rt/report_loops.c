/* Loops of known classification for memsnap-cc --memsnap-report (test_rt_report.c checks
 * each line's level by the marker comment on it). Built with -O2 -fno-vectorize
 * -fno-unroll-loops, so that each loop stays one loop as written. */
#include <stdio.h>
#include <stdlib.h>

/* An affine 2-D sweep: both accesses described once per entry of the outer loop. */
__attribute__((noinline)) void sweep(double *a, const double *b, long n, long m) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < m; j++)
      a[i * m + j] = 2.0 * b[i * m + j]; /* SWEEP */
}

/* A triangular nest: the inner trip count varies with i, so once per inner loop entry. */
__attribute__((noinline)) void triangle(double *a, long n) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j <= i; j++)
      a[i * n + j] += 1.0; /* TRIANGLE */
}

/* An indirect gather: index[i] is affine, x[index[i]] is not. */
__attribute__((noinline)) double gather(const double *x, const int *index, long n) {
  double sum = 0;
  for (long i = 0; i < n; i++)
    sum += x[index[i]]; /* GATHER */
  return sum;
}

__attribute__((noinline)) double scale(double v) {
  static volatile double factor = 3.0;
  return v * factor;
}

/* A loop with a call: its accesses stay per access. */
__attribute__((noinline)) void with_call(double *a, long n) {
  for (long i = 0; i < n; i++)
    a[i] = scale(a[i]); /* CALL */
}

/* An early exit: the loop may leave before its trip count. */
__attribute__((noinline)) long find(const long *a, long n, long key) {
  for (long i = 0; i < n; i++)
    if (a[i] == key) /* EARLY */
      return i;
  return -1;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 64;
  double *a = calloc((size_t)(n * n), sizeof *a), *b = calloc((size_t)(n * n), sizeof *b);
  int *index = calloc((size_t)n, sizeof *index);
  long *keys = calloc((size_t)n, sizeof *keys);
  if (!a || !b || !index || !keys) return 1;
  sweep(a, b, n, n);
  triangle(a, n);
  with_call(a, n);
  printf("%g %ld\n", gather(a, index, n), find(keys, n, 1));
  free(a), free(b), free(index), free(keys);
  return 0;
}

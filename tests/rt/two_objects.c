/* Two heap arrays allocated at two call sites, each on a line of its own, then read: a[]
 * N times in order, b[] 2 N times (two sweeps), so that `memsnap annotate --by object` of a
 * trace recorded with data objects has both blocks, of N * 8 bytes, with N and 2 N loads
 * (tests/rt/test_rt_capture.c counts them from these loop bounds). The stores that fill
 * them come from memset, which the runtime does not observe; the sums are printed, so the
 * loads stay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static double sum(const double *v, long n) {
  double s = 0.0;
#pragma clang loop vectorize(disable) interleave(disable)
  for (long i = 0; i < n; i++)
    s += v[i];
  return s;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  double *a = malloc(n * sizeof *a); /* a's allocation */
  double *b = calloc(n, sizeof *b);  /* b's allocation */
  if (!a || !b || n < 1) return 1;
  memset(a, 0, n * sizeof *a);
  printf("objA=%p objB=%p\n", (void *)a, (void *)b);
  double s = sum(a, n) + sum(b, n);
  __asm__ volatile("" ::: "memory"); /* b may have changed: the second sweep stays */
  s += sum(b, n);
  printf("%g\n", s);
  free(a);
  free(b);
  return 0;
}

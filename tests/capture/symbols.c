/* symbols N: a local (static) function and an exported one, for the tests of site names
 * in stripped programs (test_capture_symbols builds it, strips it in several ways and
 * records it). */
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noinline, noclone)) void scale_local(double *a, int n, double s) {
  for (int i = 0; i < n; i++)
    a[i] *= s;
}

__attribute__((noinline, noclone)) double sum_exported(const double *a, int n) {
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += a[i];
  return sum;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  double *a = malloc((size_t)n * sizeof *a);
  if (!a) return 1;
  for (int i = 0; i < n; i++)
    a[i] = i;
  scale_local(a, n, 0.5);
  printf("%g\n", sum_exported(a, n));
  free(a);
  return 0;
}

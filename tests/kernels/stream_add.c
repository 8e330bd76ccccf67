/* STREAM add: a[i] = b[i] + c[i] over doubles. Size: argv[1] elements (default 100000). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void stream_add(double *a, const double *b, const double *c,
                                                 long n) {
  for (long i = 0; i < n; i++)
    a[i] = b[i] + c[i];
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  if (!a || !b || !c) return 1;
  for (long i = 0; i < n; i++)
    b[i] = (double)i, c[i] = 2.0 * i;
  stream_add(a, b, c, n);
  printf("%g\n", a[n / 2]);
  free(a), free(b), free(c);
  return 0;
}

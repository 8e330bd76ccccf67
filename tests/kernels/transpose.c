/* A strided pass like an FFT's transpose step: b = transpose(a) for an n x n matrix of
 * doubles (argv[1], default 300), read by rows and written by columns, twice. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void transpose(const double *a, double *b, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      b[(long)j * n + i] = a[(long)i * n + j];
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 300;
  size_t cells = (size_t)n * n;
  double *a = malloc(cells * sizeof *a), *b = malloc(cells * sizeof *b);
  if (!a || !b) return 1;
  for (size_t i = 0; i < cells; i++)
    a[i] = (double)i;
  transpose(a, b, n);
  transpose(b, a, n);
  printf("%g\n", a[cells / 3]);
  free(a), free(b);
  return 0;
}

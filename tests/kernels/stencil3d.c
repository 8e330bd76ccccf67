/* 7-point Jacobi sweeps over an n x n x n grid (argv[1], default 40), 2 iterations. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void stencil3d(const double *in, double *out, int n) {
  long p = (long)n * n;
  for (int z = 1; z < n - 1; z++)
    for (int y = 1; y < n - 1; y++)
      for (int x = 1; x < n - 1; x++) {
        long c = z * p + (long)y * n + x;
        out[c] =
            (in[c] + in[c - 1] + in[c + 1] + in[c - n] + in[c + n] + in[c - p] + in[c + p]) / 7.0;
      }
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 40;
  size_t cells = (size_t)n * n * n;
  double *u = calloc(cells, sizeof *u), *v = calloc(cells, sizeof *v);
  if (!u || !v) return 1;
  for (size_t i = 0; i < cells; i++)
    u[i] = (double)(i % 11);
  stencil3d(u, v, n);
  stencil3d(v, u, n);
  printf("%g\n", u[cells / 2]);
  free(u), free(v);
  return 0;
}

/* 5-point Jacobi sweeps over an n x n grid (argv[1], default 200), 4 iterations. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void jacobi(const double *in, double *out, int n) {
  for (int i = 1; i < n - 1; i++)
    for (int j = 1; j < n - 1; j++)
      out[i * n + j] = 0.2 * (in[i * n + j] + in[(i - 1) * n + j] + in[(i + 1) * n + j] +
                              in[i * n + j - 1] + in[i * n + j + 1]);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200;
  double *u = calloc((size_t)n * n, sizeof *u), *v = calloc((size_t)n * n, sizeof *v);
  if (!u || !v) return 1;
  for (int i = 0; i < n; i++)
    u[i] = v[i] = 1.0;
  for (int it = 0; it < 4; it++) {
    jacobi(u, v, n);
    jacobi(v, u, n);
  }
  printf("%g\n", u[n + 1]);
  free(u), free(v);
  return 0;
}

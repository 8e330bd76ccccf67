/* Blocked (tiled) matrix multiply of n x n doubles (argv[1], default 120) with 24 x 24 tiles:
 * C[i][j] += A[i][k] * B[k][j] with j innermost, so B and C are walked with unit stride
 * and each tile is reused from cache. */
#include <stdio.h>
#include <stdlib.h>

#define TILE 24

__attribute__((noinline)) static void matmul_blocked(const double *a, const double *b, double *c,
                                                     int n) {
  for (int ii = 0; ii < n; ii += TILE)
    for (int kk = 0; kk < n; kk += TILE)
      for (int jj = 0; jj < n; jj += TILE)
        for (int i = ii; i < ii + TILE && i < n; i++)
          for (int k = kk; k < kk + TILE && k < n; k++) {
            double aik = a[i * n + k];
            for (int j = jj; j < jj + TILE && j < n; j++)
              c[i * n + j] += aik * b[k * n + j];
          }
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 120;
  double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n),
         *c = calloc((size_t)n * n, sizeof(double));
  if (!a || !b || !c) return 1;
  for (int i = 0; i < n * n; i++)
    a[i] = i % 7, b[i] = i % 5;
  matmul_blocked(a, b, c, n);
  printf("%g\n", c[n * n / 2]);
  free(a), free(b), free(c);
  return 0;
}

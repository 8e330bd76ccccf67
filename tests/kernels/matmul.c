/* Naive ijk matrix multiply of n x n doubles (argv[1], default 150). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void matmul(const double *a, const double *b, double *c, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double sum = 0.0;
      for (int k = 0; k < n; k++)
        sum += a[i * n + k] * b[k * n + j];
      c[i * n + j] = sum;
    }
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 150;
  double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n),
         *c = malloc(sizeof(double) * n * n);
  if (!a || !b || !c) return 1;
  for (int i = 0; i < n * n; i++)
    a[i] = i % 7, b[i] = i % 5;
  matmul(a, b, c, n);
  printf("%g\n", c[n * n / 2]);
  free(a), free(b), free(c);
  return 0;
}

/* Non-rectangular loop nests, one per mode, on n x n matrices of doubles:
 *   trinest covariance [n]  for j1, for j2 >= j1, for i: c[j1][j2] += d[i][j1] d[i][j2]
 *   trinest trapezoid [n]   for i, for j in i .. min(i + 8, n - 1): a[i][j] += b[j][i]
 *   trinest lu [n]          for k, for i > k, for j > k: a[i][j] -= a[i][k] a[k][j] / a[k][k]
 *   trinest cholesky [n]    for i, for j < i, for k < j: a[i][j] -= a[i][k] a[j][k] (a row
 *                           by row Cholesky update, doubly triangular)
 *   trinest wavefront [n]   for d = i + j, for i on that diagonal: a[i][j] = a[i-1][j] + a[i][j-1]
 * n defaults to 40. Each nest is its own function (profile -f NAME); the program prints a
 * checksum so that the loops are not optimized away. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void covariance(const double *d, double *c, int n) {
  for (int j1 = 0; j1 < n; j1++)
    for (int j2 = j1; j2 < n; j2++) {
      double s = 0;
      for (int i = 0; i < n; i++)
        s += d[(long)i * n + j1] * d[(long)i * n + j2];
      c[(long)j1 * n + j2] = s;
    }
}

__attribute__((noinline)) static void trapezoid(double *a, const double *b, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i; j <= i + 8 && j < n; j++)
      a[(long)i * n + j] += b[(long)j * n + i];
}

__attribute__((noinline)) static void lu(double *a, int n) {
  for (int k = 0; k < n; k++)
    for (int i = k + 1; i < n; i++) {
      double l = a[(long)i * n + k] / a[(long)k * n + k];
      for (int j = k + 1; j < n; j++)
        a[(long)i * n + j] -= l * a[(long)k * n + j];
    }
}

__attribute__((noinline)) static void cholesky(double *a, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++) {
      double s = a[(long)i * n + j];
      for (int k = 0; k < j; k++)
        s -= a[(long)i * n + k] * a[(long)j * n + k];
      a[(long)i * n + j] = s / a[(long)j * n + j];
    }
}

__attribute__((noinline)) static void wavefront(double *a, int n) {
  for (int d = 2; d <= 2 * (n - 1); d++)
    for (int i = d - (n - 1) > 1 ? d - (n - 1) : 1; i <= d - 1 && i < n; i++) {
      int j = d - i;
      a[(long)i * n + j] = 0.5 * (a[(long)(i - 1) * n + j] + a[(long)i * n + j - 1]);
    }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "covariance";
  int n = argc > 2 ? atoi(argv[2]) : 40;
  if (n < 2) n = 2;
  size_t cells = (size_t)n * n;
  double *a = malloc(cells * sizeof *a), *b = malloc(cells * sizeof *b);
  if (!a || !b) return 1;
  for (size_t i = 0; i < cells; i++) {
    a[i] = 1.0 + (double)(i % 7) / 8 + (i % (size_t)(n + 1) == 0 ? n : 0);
    b[i] = (double)(i % 5);
  }
  if (!strcmp(mode, "covariance"))
    covariance(a, b, n);
  else if (!strcmp(mode, "trapezoid"))
    trapezoid(a, b, n);
  else if (!strcmp(mode, "lu"))
    lu(a, n);
  else if (!strcmp(mode, "cholesky"))
    cholesky(a, n);
  else if (!strcmp(mode, "wavefront"))
    wavefront(a, n);
  else {
    fprintf(stderr, "trinest: unknown mode '%s' (covariance, trapezoid, lu, cholesky, wavefront)\n", mode);
    return 2;
  }
  double sum = 0;
  for (size_t i = 0; i < cells; i++)
    sum += a[i] + b[i];
  printf("%g\n", sum);
  free(a), free(b);
  return 0;
}

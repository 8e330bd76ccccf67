/* Triangular and trapezoidal loop nests of dense linear algebra, shaped like PolyBench's:
 *   triangular covariance [n]  covariance of n samples of n features: j2 runs from j1 to n
 *   triangular cholesky [n]    A = L L^T in place, row by row (k < j <= i)
 *   triangular lu [n]          A = L U in place, no pivoting (doubly triangular: k < j < i
 *                              for L, k < i <= j for U)
 *   triangular syrk [n]        C = alpha A A^T + beta C on the lower triangle (j <= i)
 *   triangular all [n]         the four in turn
 * n defaults to 100. The matrices are symmetric and strictly diagonally dominant, so that
 * Cholesky and LU without pivoting are defined; each result is checked on a few entries
 * against a direct computation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *matrix(int n) {
  double *m = malloc((size_t)n * n * sizeof(double));
  if (!m) {
    fprintf(stderr, "triangular: out of memory\n");
    exit(1);
  }
  return m;
}

/* Symmetric, strictly diagonally dominant: off-diagonal row sums stay below 2 ln n + 2. */
static void dominant(double *a, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      a[i * n + j] = i == j ? n + 1.0 : 1.0 / (1.0 + abs(i - j));
}

static int close_to(double x, double y) { return fabs(x - y) <= 1e-9 * (1.0 + fabs(y)); }

__attribute__((noinline)) static void covariance(const double *data, double *mean, double *centered,
                                                 double *cov, int n, int m) {
  for (int j = 0; j < m; j++) {
    mean[j] = 0.0;
    for (int i = 0; i < n; i++)
      mean[j] += data[i * m + j];
    mean[j] /= n;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      centered[i * m + j] = data[i * m + j] - mean[j];
  for (int j1 = 0; j1 < m; j1++)
    for (int j2 = j1; j2 < m; j2++) {
      double sum = 0.0;
      for (int i = 0; i < n; i++)
        sum += centered[i * m + j1] * centered[i * m + j2];
      cov[j1 * m + j2] = sum / (n - 1.0);
      cov[j2 * m + j1] = cov[j1 * m + j2];
    }
}

static double run_covariance(int n) {
  double *data = matrix(n), *centered = matrix(n), *cov = matrix(n);
  double *mean = malloc(n * sizeof *mean);
  if (!mean) exit(1);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      data[i * n + j] = (double)((i * j + 3 * i + j) % 17) / 17.0;
  covariance(data, mean, centered, cov, n, n);
  int j1 = n / 3, j2 = n - 1;
  double mean1 = 0.0, mean2 = 0.0, direct = 0.0;
  for (int i = 0; i < n; i++)
    mean1 += data[i * n + j1] / n, mean2 += data[i * n + j2] / n;
  for (int i = 0; i < n; i++)
    direct += (data[i * n + j1] - mean1) * (data[i * n + j2] - mean2) / (n - 1.0);
  double sum = 0.0;
  for (int q = 0; q < n * n; q++)
    sum += cov[q];
  int good = close_to(cov[j1 * n + j2], direct) && cov[j2 * n + j1] == cov[j1 * n + j2];
  free(data), free(centered), free(cov), free(mean);
  return good ? sum : NAN;
}

__attribute__((noinline)) static void cholesky(double *a, int n) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < j; k++)
        a[i * n + j] -= a[i * n + k] * a[j * n + k];
      a[i * n + j] /= a[j * n + j];
    }
    for (int k = 0; k < i; k++)
      a[i * n + i] -= a[i * n + k] * a[i * n + k];
    a[i * n + i] = sqrt(a[i * n + i]);
  }
}

static double run_cholesky(int n) {
  double *a = matrix(n), *original = matrix(n);
  dominant(a, n);
  memcpy(original, a, (size_t)n * n * sizeof *a);
  cholesky(a, n);
  int good = 1;
  for (int i = n / 2; i < n; i += n / 7 + 1)
    for (int j = 0; j <= i; j += n / 5 + 1) {
      double product = 0.0;
      for (int k = 0; k <= j; k++)
        product += a[i * n + k] * a[j * n + k];
      good &= close_to(product, original[i * n + j]);
    }
  double sum = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j <= i; j++)
      sum += a[i * n + j];
  free(a), free(original);
  return good ? sum : NAN;
}

__attribute__((noinline)) static void lu(double *a, int n) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < j; k++)
        a[i * n + j] -= a[i * n + k] * a[k * n + j];
      a[i * n + j] /= a[j * n + j];
    }
    for (int j = i; j < n; j++)
      for (int k = 0; k < i; k++)
        a[i * n + j] -= a[i * n + k] * a[k * n + j];
  }
}

static double run_lu(int n) {
  double *a = matrix(n), *original = matrix(n);
  dominant(a, n);
  memcpy(original, a, (size_t)n * n * sizeof *a);
  lu(a, n);
  int good = 1;
  for (int i = 1; i < n; i += n / 6 + 1)
    for (int j = 0; j < n; j += n / 6 + 1) {
      double product = 0.0; /* (L U)[i][j], L with a unit diagonal */
      for (int k = 0; k <= (i < j ? i : j); k++)
        product += (k == i ? 1.0 : a[i * n + k]) * a[k * n + j];
      good &= close_to(product, original[i * n + j]);
    }
  double sum = 0.0;
  for (int q = 0; q < n * n; q++)
    sum += a[q];
  free(a), free(original);
  return good ? sum : NAN;
}

__attribute__((noinline)) static void syrk(double alpha, double beta, const double *a, double *c,
                                           int n, int m) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j <= i; j++)
      c[i * n + j] *= beta;
    for (int k = 0; k < m; k++)
      for (int j = 0; j <= i; j++)
        c[i * n + j] += alpha * a[i * m + k] * a[j * m + k];
  }
}

static double run_syrk(int n) {
  double *a = matrix(n), *c = matrix(n);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      a[i * n + j] = (double)((i * j + 1) % n) / n;
      c[i * n + j] = (double)((i * j + 2) % n) / n;
    }
  int i = n - 2, j = n / 3;
  double direct = 1.2 * c[i * n + j];
  for (int k = 0; k < n; k++)
    direct += 1.5 * a[i * n + k] * a[j * n + k];
  syrk(1.5, 1.2, a, c, n, n);
  double sum = 0.0;
  for (int r = 0; r < n; r++)
    for (int s = 0; s <= r; s++)
      sum += c[r * n + s];
  int good = close_to(c[i * n + j], direct);
  free(a), free(c);
  return good ? sum : NAN;
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    double (*run)(int n);
  } modes[] = {{"covariance", run_covariance},
               {"cholesky", run_cholesky},
               {"lu", run_lu},
               {"syrk", run_syrk}};
  const char *mode = argc > 1 ? argv[1] : "all";
  int n = argc > 2 ? atoi(argv[2]) : 100, ran = 0;
  if (n < 8) return 2;
  for (size_t q = 0; q < sizeof modes / sizeof *modes; q++) {
    if (strcmp(mode, "all") && strcmp(mode, modes[q].name)) continue;
    double sum = modes[q].run(n);
    printf("%s %d: checksum %.10e\n", modes[q].name, n, sum);
    if (isnan(sum)) {
      fprintf(stderr, "triangular: %s gives a wrong result\n", modes[q].name);
      return 1;
    }
    ran++;
  }
  if (!ran) {
    fprintf(stderr, "usage: triangular covariance|cholesky|lu|syrk|all [n]\n");
    return 2;
  }
  return 0;
}

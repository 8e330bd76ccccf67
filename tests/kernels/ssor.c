/* SSOR iterations over an n x n x n grid (argv[1], default 22; argv[2] iterations, default
 * 3), shaped like NAS LU's ssor: each iteration computes the residual of a variable-
 * coefficient 7-point operator (rhs), then sweeps the lower triangle forward (blts: every
 * point uses the already updated k-1, j-1 and i-1 neighbours) and the upper triangle
 * backward (buts: k+1, j+1, i+1), plane by plane; the coefficients of each k plane are
 * formed just before its sweep (jacld / jacu), then u is updated. The residual's norm
 * must fall. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct grid {
  int n;
  double *u, *f, *kappa; /* unknown, source, conductivity per point */
  double *rsd;           /* residual, overwritten by the correction */
  /* one plane of coefficients: west, south, below (or east, north, above) and diagonal */
  double *a, *b, *c, *d;
};

static const double omega = 1.2;

static inline long at(const struct grid *g, int i, int j, int k) {
  return ((long)k * g->n + j) * g->n + i;
}

__attribute__((noinline)) static void setbv(struct grid *g) {
  int n = g->n;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        long c = at(g, i, j, k);
        double x = (double)i / (n - 1), y = (double)j / (n - 1), z = (double)k / (n - 1);
        g->kappa[c] = 1.0 + 0.5 * x * y + 0.25 * z;
        g->f[c] = sin(3.14159 * x) * sin(3.14159 * y) * sin(3.14159 * z);
        g->u[c] = 0.0;
      }
}

/* rsd = f - A u at the interior points, A the 7-point operator with face conductivities. */
__attribute__((noinline)) static void rhs(struct grid *g) {
  int n = g->n;
  long p = (long)n * n;
  const double *u = g->u, *kap = g->kappa;
  for (int k = 1; k < n - 1; k++)
    for (int j = 1; j < n - 1; j++)
      for (int i = 1; i < n - 1; i++) {
        long c = at(g, i, j, k);
        double kc = kap[c], sum = 0.0, diag = 0.0;
        long nb[6] = {c - 1, c + 1, c - n, c + n, c - p, c + p};
        for (int q = 0; q < 6; q++) {
          double face = 0.5 * (kc + kap[nb[q]]);
          sum += face * u[nb[q]];
          diag += face;
        }
        g->rsd[c] = g->f[c] - (diag * u[c] - sum);
      }
}

__attribute__((noinline)) static double l2norm(const struct grid *g) {
  int n = g->n;
  double sum = 0.0;
  for (int k = 1; k < n - 1; k++)
    for (int j = 1; j < n - 1; j++)
      for (int i = 1; i < n - 1; i++) {
        double r = g->rsd[at(g, i, j, k)];
        sum += r * r;
      }
  return sqrt(sum);
}

/* Coefficients of plane k toward the lower neighbours (i-1, j-1, k-1) and the diagonal. */
__attribute__((noinline)) static void jacld(struct grid *g, int k) {
  int n = g->n;
  long p = (long)n * n;
  const double *kap = g->kappa;
  for (int j = 1; j < n - 1; j++)
    for (int i = 1; i < n - 1; i++) {
      long c = at(g, i, j, k), q = (long)j * n + i;
      double kc = kap[c];
      g->a[q] = 0.5 * (kc + kap[c - 1]);
      g->b[q] = 0.5 * (kc + kap[c - n]);
      g->c[q] = 0.5 * (kc + kap[c - p]);
      g->d[q] = 0.5 * (6.0 * kc + kap[c - 1] + kap[c + 1] + kap[c - n] + kap[c + n] + kap[c - p] +
                       kap[c + p]);
    }
}

/* Coefficients of plane k toward the upper neighbours (i+1, j+1, k+1) and the diagonal. */
__attribute__((noinline)) static void jacu(struct grid *g, int k) {
  int n = g->n;
  long p = (long)n * n;
  const double *kap = g->kappa;
  for (int j = n - 2; j >= 1; j--)
    for (int i = n - 2; i >= 1; i--) {
      long c = at(g, i, j, k), q = (long)j * n + i;
      double kc = kap[c];
      g->a[q] = 0.5 * (kc + kap[c + 1]);
      g->b[q] = 0.5 * (kc + kap[c + n]);
      g->c[q] = 0.5 * (kc + kap[c + p]);
      g->d[q] = 0.5 * (6.0 * kc + kap[c - 1] + kap[c + 1] + kap[c - n] + kap[c + n] + kap[c - p] +
                       kap[c + p]);
    }
}

/* Forward substitution of the lower triangle on plane k: v = (rsd + w L v) / d. */
__attribute__((noinline)) static void blts(struct grid *g, int k) {
  int n = g->n;
  long p = (long)n * n;
  double *v = g->rsd;
  for (int j = 1; j < n - 1; j++)
    for (int i = 1; i < n - 1; i++) {
      long c = at(g, i, j, k), q = (long)j * n + i;
      double lower = g->a[q] * v[c - 1] + g->b[q] * v[c - n] + g->c[q] * v[c - p];
      v[c] = (v[c] + omega * lower) / g->d[q];
    }
}

/* Backward substitution of the upper triangle on plane k. */
__attribute__((noinline)) static void buts(struct grid *g, int k) {
  int n = g->n;
  long p = (long)n * n;
  double *v = g->rsd;
  for (int j = n - 2; j >= 1; j--)
    for (int i = n - 2; i >= 1; i--) {
      long c = at(g, i, j, k), q = (long)j * n + i;
      double upper = g->a[q] * v[c + 1] + g->b[q] * v[c + n] + g->c[q] * v[c + p];
      v[c] = v[c] + omega * upper / g->d[q];
    }
}

__attribute__((noinline)) static void update(struct grid *g) {
  int n = g->n;
  double scale = omega * (2.0 - omega);
  for (int k = 1; k < n - 1; k++)
    for (int j = 1; j < n - 1; j++)
      for (int i = 1; i < n - 1; i++) {
        long c = at(g, i, j, k);
        g->u[c] += scale * g->rsd[c];
      }
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 22, iterations = argc > 2 ? atoi(argv[2]) : 3;
  if (n < 4 || iterations < 1) return 2;
  long cells = (long)n * n * n, plane = (long)n * n;
  struct grid g = {.n = n};
  g.u = malloc(cells * sizeof(double)), g.f = malloc(cells * sizeof(double));
  g.kappa = malloc(cells * sizeof(double)), g.rsd = calloc(cells, sizeof(double));
  g.a = malloc(plane * sizeof(double)), g.b = malloc(plane * sizeof(double));
  g.c = malloc(plane * sizeof(double)), g.d = malloc(plane * sizeof(double));
  if (!g.u || !g.f || !g.kappa || !g.rsd || !g.a || !g.b || !g.c || !g.d) return 1;
  setbv(&g);
  rhs(&g);
  double first = l2norm(&g), last = first;
  for (int it = 0; it < iterations; it++) {
    for (int k = 1; k < n - 1; k++) {
      jacld(&g, k);
      blts(&g, k);
    }
    for (int k = n - 2; k >= 1; k--) {
      jacu(&g, k);
      buts(&g, k);
    }
    update(&g);
    rhs(&g);
    last = l2norm(&g);
  }
  printf("ssor %d %d: residual %.10e -> %.10e, u[mid] %.12f\n", n, iterations, first, last,
         g.u[at(&g, n / 2, n / 2, n / 2)]);
  if (!(last < first)) {
    fprintf(stderr, "ssor: the residual did not fall\n");
    return 1;
  }
  free(g.u), free(g.f), free(g.kappa), free(g.rsd), free(g.a), free(g.b), free(g.c), free(g.d);
  return 0;
}

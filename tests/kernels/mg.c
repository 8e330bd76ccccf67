/* Multigrid V-cycles on a periodic 3-D grid of 2^lt points per side (argv[1] = lt, default
 * 5; argv[2] cycles, default 1), shaped like NAS MG: grids of every level from 2^lt down to
 * 2^1 points per side with one ghost layer, a 27-point residual (resid) and smoother
 * (psinv) that sum neighbour lines into scratch lines first, full-weighting restriction
 * (rprj3), trilinear prolongation (interp) and periodic ghost exchange (comm3). The
 * right-hand side is +1 and -1 charges at pseudo-random points. The residual norm must fall. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS 12

struct level {
  int n; /* points per side, ghosts included: 2^k + 2 */
  double *u, *r;
};

/* The operator and smoother of NAS MG classes S, W and A, by distance class. */
static const double a[4] = {-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0};
static const double c[4] = {-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0};

static double *line1, *line2; /* scratch lines of the finest size */

static inline long at(int n, int i1, int i2, int i3) { return ((long)i3 * n + i2) * n + i1; }

__attribute__((noinline)) static void comm3(double *u, int n) {
  for (int i3 = 1; i3 < n - 1; i3++)
    for (int i2 = 1; i2 < n - 1; i2++) {
      u[at(n, 0, i2, i3)] = u[at(n, n - 2, i2, i3)];
      u[at(n, n - 1, i2, i3)] = u[at(n, 1, i2, i3)];
    }
  for (int i3 = 1; i3 < n - 1; i3++)
    for (int i1 = 0; i1 < n; i1++) {
      u[at(n, i1, 0, i3)] = u[at(n, i1, n - 2, i3)];
      u[at(n, i1, n - 1, i3)] = u[at(n, i1, 1, i3)];
    }
  for (int i2 = 0; i2 < n; i2++)
    for (int i1 = 0; i1 < n; i1++) {
      u[at(n, i1, i2, 0)] = u[at(n, i1, i2, n - 2)];
      u[at(n, i1, i2, n - 1)] = u[at(n, i1, i2, 1)];
    }
}

/* r = v - A u */
__attribute__((noinline)) static void resid(const double *u, const double *v, double *r, int n) {
  for (int i3 = 1; i3 < n - 1; i3++)
    for (int i2 = 1; i2 < n - 1; i2++) {
      for (int i1 = 0; i1 < n; i1++) {
        line1[i1] = u[at(n, i1, i2 - 1, i3)] + u[at(n, i1, i2 + 1, i3)] + u[at(n, i1, i2, i3 - 1)] +
                    u[at(n, i1, i2, i3 + 1)];
        line2[i1] = u[at(n, i1, i2 - 1, i3 - 1)] + u[at(n, i1, i2 + 1, i3 - 1)] +
                    u[at(n, i1, i2 - 1, i3 + 1)] + u[at(n, i1, i2 + 1, i3 + 1)];
      }
      for (int i1 = 1; i1 < n - 1; i1++) {
        long p = at(n, i1, i2, i3);
        r[p] = v[p] - a[0] * u[p] - a[2] * (line2[i1] + line1[i1 - 1] + line1[i1 + 1]) -
               a[3] * (line2[i1 - 1] + line2[i1 + 1]);
      }
    }
  comm3(r, n);
}

/* u = u + S r */
__attribute__((noinline)) static void psinv(const double *r, double *u, int n) {
  for (int i3 = 1; i3 < n - 1; i3++)
    for (int i2 = 1; i2 < n - 1; i2++) {
      for (int i1 = 0; i1 < n; i1++) {
        line1[i1] = r[at(n, i1, i2 - 1, i3)] + r[at(n, i1, i2 + 1, i3)] + r[at(n, i1, i2, i3 - 1)] +
                    r[at(n, i1, i2, i3 + 1)];
        line2[i1] = r[at(n, i1, i2 - 1, i3 - 1)] + r[at(n, i1, i2 + 1, i3 - 1)] +
                    r[at(n, i1, i2 - 1, i3 + 1)] + r[at(n, i1, i2 + 1, i3 + 1)];
      }
      for (int i1 = 1; i1 < n - 1; i1++) {
        long p = at(n, i1, i2, i3);
        u[p] += c[0] * r[p] + c[1] * (r[p - 1] + r[p + 1] + line1[i1]) +
                c[2] * (line2[i1] + line1[i1 - 1] + line1[i1 + 1]);
      }
    }
  comm3(u, n);
}

/* Full-weighting restriction of the fine residual r (side m) to the coarse s (side n). */
__attribute__((noinline)) static void rprj3(const double *r, int m, double *s, int n) {
  for (int j3 = 1; j3 < n - 1; j3++)
    for (int j2 = 1; j2 < n - 1; j2++)
      for (int j1 = 1; j1 < n - 1; j1++) {
        int i1 = 2 * j1 - 1, i2 = 2 * j2 - 1, i3 = 2 * j3 - 1;
        double sum = 0.0;
        for (int d3 = -1; d3 <= 1; d3++)
          for (int d2 = -1; d2 <= 1; d2++)
            for (int d1 = -1; d1 <= 1; d1++) {
              double weight = 0.5 / (double)(1 << (abs(d1) + abs(d2) + abs(d3)));
              sum += weight * r[at(m, i1 + d1, i2 + d2, i3 + d3)];
            }
        s[at(n, j1, j2, j3)] = sum;
      }
  comm3(s, n);
}

/* Trilinear prolongation of the coarse correction z (side n) added to u (side m). */
__attribute__((noinline)) static void interp(const double *z, int n, double *u, int m) {
  for (int i3 = 1; i3 < m - 1; i3++)
    for (int i2 = 1; i2 < m - 1; i2++)
      for (int i1 = 1; i1 < m - 1; i1++) {
        /* fine point i sits at coarse coordinate (i + 1) / 2: on a coarse point when odd */
        int j1 = (i1 + 1) / 2, j2 = (i2 + 1) / 2, j3 = (i3 + 1) / 2;
        int e1 = !(i1 & 1), e2 = !(i2 & 1), e3 = !(i3 & 1);
        double sum = 0.0;
        for (int d3 = 0; d3 <= e3; d3++)
          for (int d2 = 0; d2 <= e2; d2++)
            for (int d1 = 0; d1 <= e1; d1++)
              sum += z[at(n, j1 + d1, j2 + d2, j3 + d3)];
        u[at(m, i1, i2, i3)] += sum / (double)(1 << (e1 + e2 + e3));
      }
  comm3(u, m);
}

__attribute__((noinline)) static double norm2u3(const double *r, int n) {
  double sum = 0.0;
  for (int i3 = 1; i3 < n - 1; i3++)
    for (int i2 = 1; i2 < n - 1; i2++)
      for (int i1 = 1; i1 < n - 1; i1++)
        sum += r[at(n, i1, i2, i3)] * r[at(n, i1, i2, i3)];
  double side = n - 2;
  return sqrt(sum / (side * side * side));
}

/* Ten +1 and ten -1 charges at pseudo-random interior points (zran3). */
__attribute__((noinline)) static void zran3(double *v, int n) {
  memset(v, 0, (size_t)n * n * n * sizeof *v);
  unsigned seed = 314159265u;
  for (int q = 0; q < 20; q++) {
    int p[3];
    for (int d = 0; d < 3; d++) {
      seed = seed * 1103515245u + 12345u;
      p[d] = 1 + (int)((seed >> 8) % (unsigned)(n - 2));
    }
    v[at(n, p[0], p[1], p[2])] = q < 10 ? 1.0 : -1.0;
  }
  comm3(v, n);
}

static void zero(double *u, int n) { memset(u, 0, (size_t)n * n * n * sizeof *u); }

/* One V-cycle: restrict down to the coarsest level, smooth there, then prolong, recompute
 * the residual and smooth on the way up. */
static void mg3p(struct level *levels, int lt, const double *v) {
  for (int k = lt; k > 1; k--)
    rprj3(levels[k].r, levels[k].n, levels[k - 1].r, levels[k - 1].n);
  zero(levels[1].u, levels[1].n);
  psinv(levels[1].r, levels[1].u, levels[1].n);
  for (int k = 2; k < lt; k++) {
    zero(levels[k].u, levels[k].n);
    interp(levels[k - 1].u, levels[k - 1].n, levels[k].u, levels[k].n);
    resid(levels[k].u, levels[k].r, levels[k].r, levels[k].n);
    psinv(levels[k].r, levels[k].u, levels[k].n);
  }
  interp(levels[lt - 1].u, levels[lt - 1].n, levels[lt].u, levels[lt].n);
  resid(levels[lt].u, v, levels[lt].r, levels[lt].n);
  psinv(levels[lt].r, levels[lt].u, levels[lt].n);
}

int main(int argc, char **argv) {
  int lt = argc > 1 ? atoi(argv[1]) : 5, cycles = argc > 2 ? atoi(argv[2]) : 1;
  if (lt < 2 || lt >= MAX_LEVELS || cycles < 1) return 2;
  struct level levels[MAX_LEVELS];
  for (int k = 1; k <= lt; k++) {
    int n = (1 << k) + 2;
    levels[k].n = n;
    levels[k].u = calloc((size_t)n * n * n, sizeof(double));
    levels[k].r = calloc((size_t)n * n * n, sizeof(double));
    if (!levels[k].u || !levels[k].r) return 1;
  }
  int n = levels[lt].n;
  double *v = malloc((size_t)n * n * n * sizeof *v);
  line1 = malloc((size_t)n * sizeof *line1), line2 = malloc((size_t)n * sizeof *line2);
  if (!v || !line1 || !line2) return 1;
  zran3(v, n);
  resid(levels[lt].u, v, levels[lt].r, n);
  double first = norm2u3(levels[lt].r, n), last = first;
  for (int cycle = 0; cycle < cycles; cycle++) {
    mg3p(levels, lt, v);
    resid(levels[lt].u, v, levels[lt].r, n);
    last = norm2u3(levels[lt].r, n);
  }
  printf("mg %d %d: residual norm %.12e -> %.12e\n", lt, cycles, first, last);
  if (!(last < first)) {
    fprintf(stderr, "mg: the residual did not fall\n");
    return 1;
  }
  for (int k = 1; k <= lt; k++)
    free(levels[k].u), free(levels[k].r);
  free(v), free(line1), free(line2);
  return 0;
}

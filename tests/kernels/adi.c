/* Alternating-direction implicit time steps over an n x n x n grid (argv[1], default 24;
 * argv[2] steps, default 2), shaped like NAS SP: each step computes the right-hand side
 * (a 7-point stencil of u), then for x, y and z in turn builds the tridiagonal coefficients
 * of every grid line in that direction (they depend on u) and solves the lines by the
 * Thomas algorithm in place, and finally adds the update to u. As in SP, the x lines are
 * solved one at a time along unit stride, while the y and z solves run their elimination
 * along the line direction in the middle loop and across lines (i) innermost.
 * Before the steps, each direction's solver is checked on a system whose solution is known. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct grid {
  int n;
  double *u, *rhs, *forcing;
  double *lhs_a, *lhs_b, *lhs_c; /* sub-, main and super-diagonal at each point */
};

static const double dt = 0.05;

static inline long at(const struct grid *g, int i, int j, int k) {
  return ((long)k * g->n + j) * g->n + i;
}

static inline double diffusivity(double u) { return 1.0 + 0.1 * fabs(u); }

__attribute__((noinline)) static void initialize(struct grid *g) {
  int n = g->n;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        double x = (double)i / (n - 1), y = (double)j / (n - 1), z = (double)k / (n - 1);
        g->u[at(g, i, j, k)] = sin(3.0 * x) * cos(2.0 * y) + z * z;
        g->forcing[at(g, i, j, k)] = 0.01 * (x + y - z);
      }
}

/* rhs = dt * (forcing + laplacian(u)) inside, 0 on the boundary. */
__attribute__((noinline)) static void compute_rhs(struct grid *g) {
  int n = g->n;
  long p = (long)n * n;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        long c = at(g, i, j, k);
        if (i == 0 || j == 0 || k == 0 || i == n - 1 || j == n - 1 || k == n - 1) {
          g->rhs[c] = 0.0;
          continue;
        }
        const double *u = g->u;
        double lap = u[c - 1] + u[c + 1] + u[c - n] + u[c + n] + u[c - p] + u[c + p] - 6.0 * u[c];
        g->rhs[c] = dt * (g->forcing[c] + lap);
      }
}

/* Coefficients of the lines of one direction (0: x, 1: y, 2: z): (1 + 2r) on the diagonal,
 * -r beside it, with r from the local diffusivity; identity rows at the line ends. */
__attribute__((noinline)) static void compute_lhs(struct grid *g, int direction) {
  int n = g->n;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        long c = at(g, i, j, k);
        int m = direction == 0 ? i : direction == 1 ? j : k;
        double r = dt * diffusivity(g->u[c]);
        int end = m == 0 || m == n - 1;
        g->lhs_a[c] = end ? 0.0 : -r;
        g->lhs_b[c] = end ? 1.0 : 1.0 + 2.0 * r;
        g->lhs_c[c] = end ? 0.0 : -r;
      }
}

/* Thomas algorithm along i: each (j, k) line in turn, unit stride. */
__attribute__((noinline)) static void x_solve(struct grid *g) {
  int n = g->n;
  double *a = g->lhs_a, *b = g->lhs_b, *c = g->lhs_c, *d = g->rhs;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++) {
      long base = at(g, 0, j, k);
      for (int i = 1; i < n; i++) {
        long m = base + i;
        double w = a[m] / b[m - 1];
        b[m] -= w * c[m - 1];
        d[m] -= w * d[m - 1];
      }
      d[base + n - 1] /= b[base + n - 1];
      for (int i = n - 2; i >= 0; i--) {
        long m = base + i;
        d[m] = (d[m] - c[m] * d[m + 1]) / b[m];
      }
    }
}

/* Thomas algorithm along j: for each k plane, the elimination walks j with all i lines
 * innermost (as SP's y_solve). */
__attribute__((noinline)) static void y_solve(struct grid *g) {
  int n = g->n;
  double *a = g->lhs_a, *b = g->lhs_b, *c = g->lhs_c, *d = g->rhs;
  for (int k = 0; k < n; k++) {
    for (int j = 1; j < n; j++)
      for (int i = 0; i < n; i++) {
        long m = at(g, i, j, k), prev = m - n;
        double w = a[m] / b[prev];
        b[m] -= w * c[prev];
        d[m] -= w * d[prev];
      }
    for (int i = 0; i < n; i++)
      d[at(g, i, n - 1, k)] /= b[at(g, i, n - 1, k)];
    for (int j = n - 2; j >= 0; j--)
      for (int i = 0; i < n; i++) {
        long m = at(g, i, j, k);
        d[m] = (d[m] - c[m] * d[m + n]) / b[m];
      }
  }
}

/* Thomas algorithm along k: for each j, the elimination walks k with i innermost. */
__attribute__((noinline)) static void z_solve(struct grid *g) {
  int n = g->n;
  long p = (long)n * n;
  double *a = g->lhs_a, *b = g->lhs_b, *c = g->lhs_c, *d = g->rhs;
  for (int j = 0; j < n; j++) {
    for (int k = 1; k < n; k++)
      for (int i = 0; i < n; i++) {
        long m = at(g, i, j, k), prev = m - p;
        double w = a[m] / b[prev];
        b[m] -= w * c[prev];
        d[m] -= w * d[prev];
      }
    for (int i = 0; i < n; i++)
      d[at(g, i, j, n - 1)] /= b[at(g, i, j, n - 1)];
    for (int k = n - 2; k >= 0; k--)
      for (int i = 0; i < n; i++) {
        long m = at(g, i, j, k);
        d[m] = (d[m] - c[m] * d[m + p]) / b[m];
      }
  }
}

__attribute__((noinline)) static void add(struct grid *g) {
  long cells = (long)g->n * g->n * g->n;
  for (long c = 0; c < cells; c++)
    g->u[c] += g->rhs[c];
}

__attribute__((noinline)) static double norm(const double *v, long cells) {
  double sum = 0.0;
  for (long c = 0; c < cells; c++)
    sum += v[c] * v[c];
  return sqrt(sum / (double)cells);
}

/* rhs = T u for the lines of one direction, so that solving must give u back. */
static void apply_lines(struct grid *g, long stride, int direction) {
  int n = g->n;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        long c = at(g, i, j, k);
        int m = direction == 0 ? i : direction == 1 ? j : k;
        double v = g->lhs_b[c] * g->u[c];
        if (m > 0) v += g->lhs_a[c] * g->u[c - stride];
        if (m < n - 1) v += g->lhs_c[c] * g->u[c + stride];
        g->rhs[c] = v;
      }
}

static int check_solvers(struct grid *g) {
  long p = (long)g->n * g->n, cells = p * g->n, strides[3] = {1, g->n, p};
  void (*solve[3])(struct grid *) = {x_solve, y_solve, z_solve};
  for (int direction = 0; direction < 3; direction++) {
    compute_lhs(g, direction);
    apply_lines(g, strides[direction], direction);
    solve[direction](g);
    for (long c = 0; c < cells; c++)
      if (fabs(g->rhs[c] - g->u[c]) > 1e-9) {
        fprintf(stderr, "adi: direction %d solve wrong at %ld\n", direction, c);
        return 0;
      }
  }
  return 1;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 24, steps = argc > 2 ? atoi(argv[2]) : 2;
  if (n < 4 || steps < 1) return 2;
  struct grid g = {.n = n};
  long p = (long)n * n, cells = p * n;
  double **arrays[] = {&g.u, &g.rhs, &g.forcing, &g.lhs_a, &g.lhs_b, &g.lhs_c};
  for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++)
    if (!(*arrays[a] = malloc((size_t)cells * sizeof(double)))) return 1;
  initialize(&g);
  if (!check_solvers(&g)) return 1;
  double before = norm(g.u, cells);
  for (int step = 0; step < steps; step++) {
    compute_rhs(&g);
    compute_lhs(&g, 0);
    x_solve(&g);
    compute_lhs(&g, 1);
    y_solve(&g);
    compute_lhs(&g, 2);
    z_solve(&g);
    add(&g);
  }
  printf("adi %d %d: norm %.12f -> %.12f\n", n, steps, before, norm(g.u, cells));
  for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++)
    free(*arrays[a]);
  return 0;
}

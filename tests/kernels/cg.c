/* Conjugate gradient on a random sparse symmetric positive-definite matrix of n rows
 * (argv[1], default 1000; argv[2] iterations, default 15), shaped like NAS CG: makea sums
 * the outer products of n random sparse vectors (nonzer + 1 entries each, the row's own
 * index included) and a diagonal shift, as coordinate triples; sparse assembles them into
 * CSR (count per row, prefix sums, scatter, then sort and merge duplicates in each row);
 * conj_grad runs the iterations with a CSR matrix-vector product, dot products and axpys.
 * The true residual |b - A x| must fall. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct triples {
  long count;
  int *row, *column;
  double *value;
};

struct csr {
  int rows;
  long *row_start;
  int *column;
  double *value;
};

static unsigned long long rng_state = 271828183ull;

static double randlc(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A random sparse vector: nonzer distinct positions plus `own`, values in (0, 1]. */
__attribute__((noinline)) static int sprnvc(int n, int nonzer, int own, int *position,
                                            double *value, char *taken) {
  int count = 0;
  while (count < nonzer) {
    int p = (int)(randlc() * n);
    if (p >= n || taken[p] || p == own) continue;
    taken[p] = 1;
    position[count] = p, value[count] = randlc();
    count++;
  }
  position[count] = own, value[count] = 0.5;
  count++;
  for (int q = 0; q < count - 1; q++)
    taken[position[q]] = 0;
  return count;
}

__attribute__((noinline)) static void makea(int n, int nonzer, double shift, struct triples *t) {
  int *position = malloc((nonzer + 1) * sizeof *position);
  double *value = malloc((nonzer + 1) * sizeof *value);
  char *taken = calloc(n, 1);
  t->count = 0;
  for (int i = 0; i < n; i++) {
    int count = sprnvc(n, nonzer, i, position, value, taken);
    for (int a = 0; a < count; a++)
      for (int b = 0; b < count; b++) {
        t->row[t->count] = position[a], t->column[t->count] = position[b];
        t->value[t->count] = value[a] * value[b];
        t->count++;
      }
  }
  for (int i = 0; i < n; i++) {
    t->row[t->count] = i, t->column[t->count] = i, t->value[t->count] = shift;
    t->count++;
  }
  free(position), free(value), free(taken);
}

/* Coordinate triples to CSR, duplicates summed, columns ascending in each row. */
__attribute__((noinline)) static void sparse(int n, const struct triples *t, struct csr *a) {
  long *fill = calloc((size_t)n + 1, sizeof *fill);
  for (long q = 0; q < t->count; q++)
    fill[t->row[q] + 1]++;
  for (int i = 0; i < n; i++)
    fill[i + 1] += fill[i];
  int *column = malloc(t->count * sizeof *column);
  double *value = malloc(t->count * sizeof *value);
  for (long q = 0; q < t->count; q++) {
    long slot = fill[t->row[q]]++;
    column[slot] = t->column[q], value[slot] = t->value[q];
  }
  /* fill[i] is now the end of row i */
  a->rows = n;
  a->row_start[0] = 0;
  long out = 0, begin = 0;
  for (int i = 0; i < n; i++) {
    long end = fill[i];
    for (long q = begin + 1; q < end; q++) { /* insertion sort: rows are short */
      int c = column[q];
      double v = value[q];
      long p = q;
      for (; p > begin && column[p - 1] > c; p--)
        column[p] = column[p - 1], value[p] = value[p - 1];
      column[p] = c, value[p] = v;
    }
    for (long q = begin; q < end; q++) {
      if (out > a->row_start[i] && a->column[out - 1] == column[q])
        a->value[out - 1] += value[q];
      else
        a->column[out] = column[q], a->value[out] = value[q], out++;
    }
    a->row_start[i + 1] = out;
    begin = end;
  }
  free(fill), free(column), free(value);
}

__attribute__((noinline)) static void spmv(const struct csr *a, const double *x, double *y) {
  for (int i = 0; i < a->rows; i++) {
    double sum = 0.0;
    for (long k = a->row_start[i]; k < a->row_start[i + 1]; k++)
      sum += a->value[k] * x[a->column[k]];
    y[i] = sum;
  }
}

__attribute__((noinline)) static double dot(const double *x, const double *y, int n) {
  double sum = 0.0;
  for (int i = 0; i < n; i++)
    sum += x[i] * y[i];
  return sum;
}

__attribute__((noinline)) static void axpy(double alpha, const double *x, double *y, int n) {
  for (int i = 0; i < n; i++)
    y[i] += alpha * x[i];
}

__attribute__((noinline)) static void xpay(const double *x, double beta, double *y, int n) {
  for (int i = 0; i < n; i++)
    y[i] = x[i] + beta * y[i];
}

/* Solves A z = x from z = 0; r, p, q are work vectors. */
static void conj_grad(const struct csr *a, const double *x, double *z, double *r, double *p,
                      double *q, int iterations) {
  int n = a->rows;
  for (int i = 0; i < n; i++)
    z[i] = 0.0, r[i] = x[i], p[i] = x[i];
  double rho = dot(r, r, n);
  for (int it = 0; it < iterations; it++) {
    spmv(a, p, q);
    double alpha = rho / dot(p, q, n);
    axpy(alpha, p, z, n);
    axpy(-alpha, q, r, n);
    double rho_next = dot(r, r, n);
    xpay(r, rho_next / rho, p, n);
    rho = rho_next;
  }
}

static double true_residual(const struct csr *a, const double *x, const double *z, double *q) {
  spmv(a, z, q);
  double sum = 0.0;
  for (int i = 0; i < a->rows; i++)
    sum += (x[i] - q[i]) * (x[i] - q[i]);
  return sqrt(sum);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000, iterations = argc > 2 ? atoi(argv[2]) : 15;
  const int nonzer = 7;
  if (n <= 2 * nonzer || iterations < 1) return 2;
  long capacity = (long)n * (nonzer + 1) * (nonzer + 1) + n;
  struct triples t = {0, malloc(capacity * sizeof(int)), malloc(capacity * sizeof(int)),
                      malloc(capacity * sizeof(double))};
  struct csr a = {0, malloc(((size_t)n + 1) * sizeof(long)), malloc(capacity * sizeof(int)),
                  malloc(capacity * sizeof(double))};
  double *x = malloc(n * sizeof(double)), *z = malloc(n * sizeof(double));
  double *r = calloc(n, sizeof(double)), *p = calloc(n, sizeof(double));
  double *q = malloc(n * sizeof(double));
  if (!t.row || !t.column || !t.value || !a.row_start || !a.column || !a.value || !x || !z || !r ||
      !p || !q)
    return 1;
  makea(n, nonzer, 0.1, &t);
  sparse(n, &t, &a);
  for (int i = 0; i < n; i++)
    x[i] = 1.0;
  conj_grad(&a, x, z, r, p, q, iterations);
  double initial = sqrt((double)n), residual = true_residual(&a, x, z, q);
  printf("cg %d %d: %ld nonzeros, |b - Ax| %.10e -> %.10e, zeta %.12f\n", n, iterations,
         a.row_start[n], initial, residual, 1.0 / dot(x, z, n));
  if (!(residual < 0.5 * initial)) {
    fprintf(stderr, "cg: the residual did not fall\n");
    return 1;
  }
  free(t.row), free(t.column), free(t.value), free(a.row_start), free(a.column), free(a.value);
  free(x), free(z), free(r), free(p), free(q);
  return 0;
}

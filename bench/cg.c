/* cg N NONZEROS_PER_ROW ITERATIONS: conjugate gradient on a random sparse symmetric
 * positive-definite matrix, as in NAS CG: the matrix in compressed sparse rows (CSR),
 * about NONZEROS_PER_ROW random columns per row, mirrored to keep it symmetric, a diagonal
 * that dominates;
 * each iteration is one sparse matrix-vector product (the gather x[col[k]]) and a few
 * dot products and vector updates. Built by bench/run-real.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t state = 88172645463325252ull;
static uint32_t next_random(void) { /* xorshift64 */
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (uint32_t)(state >> 32);
}

typedef struct csr {
  int n;
  int *row_start, *column;
  double *value;
} csr;

/* Symmetric: each random (i, j) goes in as both (i, j) and (j, i); diagonal n per row. */
static csr random_spd(int n, int per_row) {
  int pairs = n * per_row / 2;
  int *count = calloc((size_t)n + 1, sizeof *count);
  int *pair_i = malloc((size_t)pairs * sizeof *pair_i),
      *pair_j = malloc((size_t)pairs * sizeof *pair_j);
  if (!count || !pair_i || !pair_j) exit(1);
  for (int p = 0; p < pairs; p++) {
    pair_i[p] = (int)(next_random() % (uint32_t)n);
    pair_j[p] = (int)(next_random() % (uint32_t)n);
    count[pair_i[p]]++;
    count[pair_j[p]]++;
  }
  csr a = {n, malloc(((size_t)n + 1) * sizeof(int)), NULL, NULL};
  size_t nonzeros = (size_t)2 * pairs + (size_t)n;
  a.column = malloc(nonzeros * sizeof(int));
  a.value = malloc(nonzeros * sizeof(double));
  if (!a.row_start || !a.column || !a.value) exit(1);
  a.row_start[0] = 0;
  for (int i = 0; i < n; i++)
    a.row_start[i + 1] = a.row_start[i] + count[i] + 1;
  for (int i = 0; i < n; i++) { /* the diagonal first, then the pairs */
    a.column[a.row_start[i]] = i;
    a.value[a.row_start[i]] = (double)per_row + 1.0;
    count[i] = a.row_start[i] + 1;
  }
  for (int p = 0; p < pairs; p++) {
    double v = -0.5 * (double)(next_random() % 1000) / 1000.0;
    a.column[count[pair_i[p]]] = pair_j[p];
    a.value[count[pair_i[p]]++] = v;
    a.column[count[pair_j[p]]] = pair_i[p];
    a.value[count[pair_j[p]]++] = v;
  }
  free(count);
  free(pair_i);
  free(pair_j);
  return a;
}

static void multiply(const csr *a, const double *x, double *y) {
  for (int i = 0; i < a->n; i++) {
    double sum = 0;
    for (int k = a->row_start[i]; k < a->row_start[i + 1]; k++)
      sum += a->value[k] * x[a->column[k]];
    y[i] = sum;
  }
}

static double dot(int n, const double *x, const double *y) {
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += x[i] * y[i];
  return sum;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: cg N NONZEROS_PER_ROW ITERATIONS\n");
    return 2;
  }
  int n = atoi(argv[1]), per_row = atoi(argv[2]), iterations = atoi(argv[3]);
  if (n < 1 || per_row < 1 || iterations < 0) return 2;
  csr a = random_spd(n, per_row);
  double *x = calloc((size_t)n, sizeof *x), *r = malloc((size_t)n * sizeof *r);
  double *p = malloc((size_t)n * sizeof *p), *q = malloc((size_t)n * sizeof *q);
  if (!x || !r || !p || !q) return 1;
  for (int i = 0; i < n; i++)
    r[i] = p[i] = 1.0; /* b = 1, x0 = 0 */
  double rho = dot(n, r, r);
  for (int it = 0; it < iterations; it++) {
    multiply(&a, p, q);
    double alpha = rho / dot(n, p, q);
    for (int i = 0; i < n; i++) {
      x[i] += alpha * p[i];
      r[i] -= alpha * q[i];
    }
    double rho_next = dot(n, r, r);
    double beta = rho_next / rho;
    rho = rho_next;
    for (int i = 0; i < n; i++)
      p[i] = r[i] + beta * p[i];
  }
  printf("residual %g\n", rho);
  free(a.row_start);
  free(a.column);
  free(a.value);
  free(x);
  free(r);
  free(p);
  free(q);
  return 0;
}

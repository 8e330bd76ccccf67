/* Sparse matrix-vector product like NAS CG's: y = A x with A in CSR form, argv[1] rows
 * (default 20000), 8 nonzeros per row at pseudo-random columns, 2 products. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void spmv(const long *row_start, const int *column,
                                           const double *value, const double *x, double *y,
                                           long rows) {
  for (long i = 0; i < rows; i++) {
    double sum = 0.0;
    for (long k = row_start[i]; k < row_start[i + 1]; k++)
      sum += value[k] * x[column[k]];
    y[i] = sum;
  }
}

int main(int argc, char **argv) {
  long rows = argc > 1 ? atol(argv[1]) : 20000, per_row = 8, nonzeros = rows * per_row;
  long *row_start = malloc((size_t)(rows + 1) * sizeof *row_start);
  int *column = malloc((size_t)nonzeros * sizeof *column);
  double *value = malloc((size_t)nonzeros * sizeof *value);
  double *x = malloc((size_t)rows * sizeof *x), *y = malloc((size_t)rows * sizeof *y);
  if (!row_start || !column || !value || !x || !y) return 1;
  unsigned seed = 2024;
  for (long i = 0; i <= rows; i++)
    row_start[i] = i * per_row;
  for (long k = 0; k < nonzeros; k++) {
    seed = seed * 1103515245u + 12345u;
    column[k] = (int)((seed >> 8) % (unsigned)rows);
    value[k] = 1.0 / (double)(k % 13 + 1);
  }
  for (long i = 0; i < rows; i++)
    x[i] = 1.0;
  spmv(row_start, column, value, x, y, rows);
  spmv(row_start, column, value, y, x, rows);
  printf("%g\n", x[rows / 2]);
  free(row_start), free(column), free(value), free(x), free(y);
  return 0;
}

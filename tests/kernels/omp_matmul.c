/* Weak-scaling dense matrix multiply in OpenMP: C = A B with A and C of THREADS x
 * ROWS_PER_THREAD rows of N doubles and B shared, N x N. Arguments: [THREADS
 * [ROWS_PER_THREAD [N]]] (default 4 16 64).
 *
 * The main thread fills B; every other loop is a schedule(static) loop over the rows, so
 * OpenMP thread t owns rows [t R, (t + 1) R) of A and C: it fills its rows of A, computes
 * its rows of C in i-k-j order (a row of C accumulates a[i][k] times row k of B, the unit
 * stride inner loop of a real code) and sums them into its own 64-byte slot of `partial`.
 * The main thread then adds the THREADS partial sums in order. Each thread's work, and so
 * its accesses, is the same whatever THREADS is (weak scaling). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

struct partial_sum {
  double sum;
  char padding[56]; /* one 64-byte line per thread: no false sharing */
};

__attribute__((noinline)) static void fill_rows(double *a, int rows, int n) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; i++)
    for (int k = 0; k < n; k++)
      a[(long)i * n + k] = (double)((i + 2 * k) % 7);
}

__attribute__((noinline)) static void matmul(const double *a, const double *b, double *c, int rows,
                                             int n) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < rows; i++) {
    double *c_row = c + (long)i * n;
    for (int j = 0; j < n; j++)
      c_row[j] = 0.0;
    for (int k = 0; k < n; k++) {
      double a_ik = a[(long)i * n + k];
      const double *b_row = b + (long)k * n;
      for (int j = 0; j < n; j++)
        c_row[j] += a_ik * b_row[j];
    }
  }
}

__attribute__((noinline)) static void sum_rows(const double *c, int rows, int n,
                                               struct partial_sum *partial) {
#pragma omp parallel
  {
    double sum = 0.0;
#pragma omp for schedule(static)
    for (int i = 0; i < rows; i++)
      for (int j = 0; j < n; j++)
        sum += c[(long)i * n + j];
    partial[omp_get_thread_num()].sum = sum;
  }
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  int rows_per_thread = argc > 2 ? atoi(argv[2]) : 16;
  int n = argc > 3 ? atoi(argv[3]) : 64;
  if (threads < 1 || rows_per_thread < 1 || n < 1) return 2;
  omp_set_dynamic(0);
  omp_set_num_threads(threads);
  int rows = threads * rows_per_thread;
  double *a = malloc(sizeof(double) * rows * n), *b = malloc(sizeof(double) * n * n),
         *c = malloc(sizeof(double) * rows * n);
  struct partial_sum *partial = aligned_alloc(64, threads * sizeof *partial);
  if (!a || !b || !c || !partial) return 1;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      b[(long)k * n + j] = (double)((k + j) % 5);
  fill_rows(a, rows, n);
  matmul(a, b, c, rows, n);
  sum_rows(c, rows, n, partial);
  double checksum = 0.0;
  for (int t = 0; t < threads; t++)
    checksum += partial[t].sum;
  printf("%.1f\n", checksum);
  free(a), free(b), free(c), free(partial);
  return 0;
}

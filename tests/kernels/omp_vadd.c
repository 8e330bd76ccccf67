/* Weak-scaling vector add in OpenMP: c[i] = a[i] + b[i] over THREADS x N_PER_THREAD doubles,
 * REPS times. Arguments: [THREADS [N_PER_THREAD [REPS]]] (default 4 4096 8).
 *
 * Every loop is a schedule(static) loop over the THREADS x N elements, so OpenMP thread t
 * owns exactly elements [t N, (t + 1) N) of each array: it initializes them (first touch),
 * adds them REPS times and sums its part of c into its own 64-byte slot of `partial`. The
 * main thread (OpenMP thread 0) then adds the THREADS partial sums in order: the checksum
 * does not depend on timing, and no atomic retry loop makes a site's count vary. Each
 * thread's work, and so its accesses, is the same whatever THREADS is (weak scaling). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

struct partial_sum {
  double sum;
  char padding[56]; /* one 64-byte line per thread: no false sharing */
};

__attribute__((noinline)) static void vadd_init(double *a, double *b, double *c, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) {
    a[i] = (double)(i % 1000);
    b[i] = 0.5 * (double)(i % 10);
    c[i] = 0.0;
  }
}

__attribute__((noinline)) static void vadd(double *c, const double *a, const double *b, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++)
    c[i] = a[i] + b[i];
}

__attribute__((noinline)) static void vadd_sum(const double *c, long n,
                                               struct partial_sum *partial) {
#pragma omp parallel
  {
    double sum = 0.0;
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++)
      sum += c[i];
    partial[omp_get_thread_num()].sum = sum;
  }
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  long per_thread = argc > 2 ? atol(argv[2]) : 4096;
  int reps = argc > 3 ? atoi(argv[3]) : 8;
  if (threads < 1 || per_thread < 1 || reps < 1) return 2;
  omp_set_dynamic(0);
  omp_set_num_threads(threads);
  long n = threads * per_thread;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  struct partial_sum *partial = aligned_alloc(64, threads * sizeof *partial);
  if (!a || !b || !c || !partial) return 1;
  vadd_init(a, b, c, n);
  for (int rep = 0; rep < reps; rep++)
    vadd(c, a, b, n);
  vadd_sum(c, n, partial);
  double checksum = 0.0;
  for (int t = 0; t < threads; t++)
    checksum += partial[t].sum;
  printf("%.1f\n", checksum);
  free(a), free(b), free(c), free(partial);
  return 0;
}

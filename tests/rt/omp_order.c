/* OpenMP: a parallel region of 4 threads; thread t stores 0..N-1 into row t of `rows`
 * (N = argv[1], default 20000), in order. Prints the rows' address, like threads_order. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define MAX_N 100000

static long rows[THREADS][MAX_N];

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000;
  if (n < 1 || n > MAX_N) return 2;
  printf("rows %p %d %ld\n", (void *)rows, THREADS, (long)MAX_N);
  fflush(stdout);
#pragma omp parallel num_threads(THREADS)
  {
    long *row = rows[omp_get_thread_num()];
    for (long i = 0; i < n; i++) {
      row[i] = i;
      __asm__ volatile("" ::: "memory");
    }
  }
  return 0;
}

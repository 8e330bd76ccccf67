/* 4 pthreads, each storing 0..N-1 into its own row of `rows` (N = argv[1], default
 * 20000), one store at a time in order. Prints the rows' address and N so that a test can
 * tell every store's row and index. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define MAX_N 100000

static long rows[THREADS][MAX_N];
static long n = 20000;

__attribute__((noinline)) static void *worker(void *arg) {
  long *row = arg;
  for (long i = 0; i < n; i++) {
    row[i] = i;
    __asm__ volatile("" ::: "memory"); /* one store per iteration: no vectorizing */
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) n = atol(argv[1]);
  if (n < 1 || n > MAX_N) return 2;
  printf("rows %p %d %ld\n", (void *)rows, THREADS, (long)MAX_N);
  fflush(stdout);
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++)
    if (pthread_create(&threads[t], NULL, worker, rows[t]) != 0) return 1;
  for (int t = 0; t < THREADS; t++)
    pthread_join(threads[t], NULL);
  return 0;
}

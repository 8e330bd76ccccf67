/* 4 threads, each storing 0..N-1 into its own array (N = THREADS4_N), in order. Thread t
 * writes arrays[t][0..N-1] from the function `worker`; main joins them all. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define THREADS4_N 10000

static long arrays[THREADS][THREADS4_N];

static void *worker(void *arg) {
  long *array = arg;
  for (long i = 0; i < THREADS4_N; i++)
    ((volatile long *)array)[i] = i;
  return NULL;
}

int main(void) {
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++)
    if (pthread_create(&threads[t], NULL, worker, arrays[t]) != 0) return 1;
  for (int t = 0; t < THREADS; t++)
    pthread_join(threads[t], NULL);
  long sum = 0;
  for (int t = 0; t < THREADS; t++)
    sum += arrays[t][THREADS4_N - 1];
  printf("%ld\n", sum);
  return 0;
}

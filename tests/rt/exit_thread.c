/* A second thread stores 0..N-1 into `cells` (N = argv[1], default 5000) and calls
 * exit(5) while the main thread waits in pthread_join. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long cells[100000];
static long n = 5000;

static void *worker(void *arg) {
  (void)arg;
  for (long i = 0; i < n; i++) {
    cells[i] = i;
    __asm__ volatile("" ::: "memory");
  }
  exit(5);
}

int main(int argc, char **argv) {
  if (argc > 1) n = atol(argv[1]);
  if (n < 1 || n > 100000) return 2;
  printf("cells %p\n", (void *)cells);
  fflush(stdout);
  pthread_t thread;
  if (pthread_create(&thread, NULL, worker, NULL) != 0) return 1;
  pthread_join(thread, NULL);
  return 0;
}

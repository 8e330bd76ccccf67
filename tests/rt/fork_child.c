/* The parent stores into `before` (N stores, N = argv[1], default 3000), forks; the child
 * stores N into `child` and exits 0; the parent waits, then stores N into `after`. Prints
 * the three arrays' addresses and the child's pid. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static long before[100000], child[100000], after[100000];

__attribute__((noinline)) static void fill(long *array, long n) {
  for (long i = 0; i < n; i++) {
    array[i] = i;
    __asm__ volatile("" ::: "memory");
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 3000;
  if (n < 1 || n > 100000) return 2;
  fill(before, n);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    fill(child, n);
    exit(0);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  fill(after, n);
  printf("arrays %p %p %p child %ld\n", (void *)before, (void *)child, (void *)after, (long)pid);
  return 0;
}

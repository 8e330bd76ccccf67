/* Stores over an array without end; after argv[1] milliseconds (default 200) a SIGALRM
 * handler calls exit(7), wherever the program (or memsnap's runtime) happens to be. */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>

static long cells[1 << 16];

static void on_alarm(int signal_number) {
  (void)signal_number;
  exit(7);
}

int main(int argc, char **argv) {
  long ms = argc > 1 ? atol(argv[1]) : 200;
  signal(SIGALRM, on_alarm);
  struct itimerval timer = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
  setitimer(ITIMER_REAL, &timer, NULL);
  for (long i = 0;; i++) {
    cells[i & ((1 << 16) - 1)] = i;
    __asm__ volatile("" ::: "memory");
  }
}

/* Runs until killed (gives up after argv[1] seconds, default 60): sweeps an array over and
 * over, announcing on stdout once the first sweep is done. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long data[4096];

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 60;
  time_t start = time(NULL);
  for (long round = 0;; round++) {
    for (int i = 0; i < 4096; i++)
      ((volatile long *)data)[i] += round;
    if (round == 0) {
      printf("spinning\n");
      fflush(stdout);
    }
    if ((round & 255) == 0 && time(NULL) - start > seconds) break;
  }
  return 0;
}

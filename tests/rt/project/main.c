/* Fills a buffer of argv[1] bytes (default 4096) and counts its byte values. */
#include <stdio.h>
#include <stdlib.h>

#include "histogram.h"

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 4096;
  unsigned char *data = malloc((size_t)n);
  long bins[256] = {0};
  if (!data) return 1;
  for (long i = 0; i < n; i++)
    data[i] = (unsigned char)(i * 7);
  histogram(data, n, bins);
  printf("%ld\n", bins[0]);
  free(data);
  return 0;
}

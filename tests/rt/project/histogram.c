#include "histogram.h"

void histogram(const unsigned char *data, long n, long *bins) {
  for (long i = 0; i < n; i++)
    bins[data[i]]++;
}

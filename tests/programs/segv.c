/* Does real work (argv[1] stores, default 10000), then writes through a null pointer. */
#include <stdio.h>
#include <stdlib.h>

static long touched[100000];

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10000;
  if (n > 100000) n = 100000;
  for (long i = 0; i < n; i++)
    ((volatile long *)touched)[i] = i;
  fprintf(stderr, "segv: about to crash\n");
  volatile long *null = (volatile long *)(argc > 100 ? touched : NULL);
  *null = 1;
  return 0;
}

/* One block freed and a new one allocated in its place: argv[1] doubles (default 16384)
 * written in a first block, which is freed; a second block of the same size (glibc gives
 * back the same address) read twice. tests/cli/test_annotate.c tells the two objects
 * apart: each one's accesses are its lines' accesses. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 16384;
  if (n < 1) return 1;
  double *first = malloc(n * sizeof *first); /* the first block */
  if (!first) return 1;
  for (long i = 0; i < n; i++)
    first[i] = (double)i; /* the first block's writes */
  uintptr_t first_address = (uintptr_t)first;
  free(first);
  double *second = malloc(n * sizeof *second); /* the second block */
  if (!second) return 1;
  double sum = 0.0;
  for (int pass = 0; pass < 2; pass++)
    for (long i = 0; i < n; i++)
      sum += second[i]; /* the second block's reads */
  printf("%g %d\n", sum, (uintptr_t)second == first_address);
  free(second);
  return 0;
}

/* Keeps values live in registers across the memsnap callbacks: 8 double and 8 integer
 * accumulators over two arrays of n elements (argv[1], default 100000), 4 passes; prints
 * them. test_rt_capture runs it built by memsnap-cc (recording, sampled, idle; plain and
 * -mavx2) against the same source built without instrumentation. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  double *a = malloc(sizeof *a * (size_t)n);
  uint64_t *b = malloc(sizeof *b * (size_t)n);
  if (!a || !b) return 1;
  for (long i = 0; i < n; i++) {
    a[i] = (double)(i % 13) * 0.25 + 1.0;
    b[i] = (uint64_t)i * 2654435761u;
  }
  double d[8] = {0};
  uint64_t u[8] = {0};
  for (int pass = 0; pass < 4; pass++)
    for (long i = 0; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; k++) {
        d[k] = d[k] * 0.999 + a[i + k] * (k + 1);
        u[k] = (u[k] ^ b[i + k]) * 31 + (uint64_t)k;
      }
  for (int k = 0; k < 8; k++)
    printf("%.17g %llu\n", d[k], (unsigned long long)u[k]);
  free(a);
  free(b);
  return 0;
}

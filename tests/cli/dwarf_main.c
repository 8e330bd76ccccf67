/* With dwarf_sum.c, a two-file program whose clang -g build carries DWARF 5 forms (strx,
 * addrx) that Valgrind 3.19's debug-information reader gives up on. Prints the sum. */
#include <stdio.h>

long dwarf_sum(const long *values, int count);

static long values[1000];

int main(void) {
  for (int i = 0; i < 1000; i++)
    values[i] = i;
  printf("%ld\n", dwarf_sum(values, 1000));
  return 0;
}

/* gups LOG2_WORDS UPDATES: the update loop of HPCC RandomAccess (GUPS), one stream.
 * A table of 2^LOG2_WORDS 64-bit words, filled in order, then UPDATES times
 * table[ran & mask] ^= ran, ran the HPCC shift-register sequence (polynomial 0x7): one
 * read-modify-write per update at an address that no cache or stride predicts. With a
 * table larger than the last-level cache nearly every update misses every level. Built by
 * bench/run-real.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define POLY 0x7u

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: gups LOG2_WORDS UPDATES\n");
    return 2;
  }
  int log2_words = atoi(argv[1]);
  uint64_t updates = strtoull(argv[2], NULL, 10);
  if (log2_words < 1 || log2_words > 32) return 2;
  uint64_t words = (uint64_t)1 << log2_words, mask = words - 1;
  uint64_t *table = malloc(words * sizeof *table);
  if (!table) return 1;
  for (uint64_t i = 0; i < words; i++)
    table[i] = i;
  uint64_t ran = 1;
  for (uint64_t u = 0; u < updates; u++) {
    ran = (ran << 1) ^ ((int64_t)ran < 0 ? POLY : 0);
    table[ran & mask] ^= ran;
  }
  uint64_t check = 0;
  for (uint64_t i = 0; i < words; i += 4096)
    check ^= table[i];
  printf("%llx\n", (unsigned long long)check);
  free(table);
  return 0;
}

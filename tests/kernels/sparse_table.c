/* A large table used sparsely, as a compressor's hash heads are (argv[1] slots in use,
 * default 1500; argv[2] lookups, default 40000): a table of 65536 two-word entries (1 MiB)
 * of which only the used slots, spread at random, are ever touched; each lookup draws a used
 * slot, reads its key (one site) and, when it matches, counts the hit (another site, the
 * same line). Every used line is touched again and again at long reuse distances, and the
 * lines between them never: a replay that draws a re-touch from the histogram of the
 * table's range rather than among the lines the site used touches lines the program never
 * did. Prints the number of hits, which must equal the number of lookups. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 65536

struct entry {
  uint64_t key, count;
};

static uint64_t rng_state = 88172645463325252ull;

static uint64_t next_random(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

int main(int argc, char **argv) {
  long used = argc > 1 ? atol(argv[1]) : 1500, lookups = argc > 2 ? atol(argv[2]) : 40000;
  if (used < 1 || used > SLOTS / 4 || lookups < 1) {
    fprintf(stderr, "usage: sparse_table [USED (1..%d)] [LOOKUPS]\n", SLOTS / 4);
    return 2;
  }
  struct entry *table = calloc(SLOTS, sizeof *table);
  uint32_t *slot = malloc((size_t)used * sizeof *slot);
  if (!table || !slot) return 1;
  /* one used slot per 4-entry line at most: every used slot has a line of its own */
  for (long i = 0; i < used; i++) {
    uint32_t s;
    do
      s = (uint32_t)(next_random() % (SLOTS / 4)) * 4;
    while (table[s].key);
    table[s].key = s + 1;
    slot[i] = s;
  }
  long hits = 0;
  for (long i = 0; i < lookups; i++) {
    uint32_t s = slot[next_random() % (uint64_t)used];
    if (*(volatile uint64_t *)&table[s].key == s + 1) {
      table[s].count++;
      hits++;
    }
  }
  printf("%ld\n", hits);
  free(slot);
  free(table);
  return hits == lookups ? 0 : 1;
}

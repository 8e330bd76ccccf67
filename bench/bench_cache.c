/* Cache simulator speed: 3-level nehalem against a loop that only reads the same records,
 * and the 46 evaluation hierarchies in one pass against 46 separate passes.
 * The stream is in memory: 20% random in a 16 KB hot region, 10% random in 64 MB, 70% an
 * 8-byte strided walk over 64 MB; 1/4 stores. Prints accesses/s and the ratios. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "memsnap/cache.h"
#include "memsnap/error.h"

#define BATCH 4096

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ms_access *make_stream(size_t count) {
  ms_access *accesses = malloc(count * sizeof *accesses);
  uint64_t x = 42, walk = 0;
  for (size_t i = 0; i < count; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t address;
    unsigned pick = (unsigned)((x >> 56) % 10);
    if (pick < 2) address = (x >> 16) % (1u << 14);      /* 20%: hot 16 KB */
    else if (pick < 3) address = (x >> 16) % (1u << 26); /* 10%: anywhere in 64 MB */
    else address = walk = (walk + 8) % (1u << 26);       /* 70%: a sequential walk */
    accesses[i] = (ms_access){.address = address & ~7ull, .size = 8,
                              .kind = (uint8_t)((x >> 40) % 4 == 0 ? MS_STORE : MS_LOAD),
                              .site = (uint32_t)((x >> 30) % 64), .thread = 0};
  }
  return accesses;
}

/* The baseline: touch every field of every record once, batch by batch. */
static uint64_t read_loop(const ms_access *accesses, size_t count) {
  uint64_t sum = 0;
  for (size_t i = 0; i < count; i += BATCH) {
    size_t n = count - i < BATCH ? count - i : BATCH;
    for (size_t j = 0; j < n; j++)
      sum += accesses[i + j].address + accesses[i + j].size + accesses[i + j].kind +
             accesses[i + j].site + accesses[i + j].thread;
  }
  return sum;
}

static double simulate(ms_hierarchy_set *set, ms_access *accesses, size_t count) {
  double start = now();
  for (size_t i = 0; i < count; i += BATCH) {
    ms_batch batch = {.accesses = accesses + i, .count = count - i < BATCH ? count - i : BATCH};
    if (ms_hierarchy_set_access_batch(set, &batch) < 0) {
      fprintf(stderr, "bench_cache: %s\n", ms_error_message());
      exit(1);
    }
  }
  return now() - start;
}

static ms_hierarchy_set *new_set(const ms_hierarchy_config *configs, int count) {
  ms_hierarchy_set *set;
  if (ms_hierarchy_set_new(configs, count, &set) < 0) {
    fprintf(stderr, "bench_cache: %s\n", ms_error_message());
    exit(1);
  }
  return set;
}

int main(int argc, char **argv) {
  size_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000;
  ms_access *accesses = make_stream(count);

  double best_read = 1e9;
  uint64_t sink = 0;
  for (int r = 0; r < 5; r++) {
    double start = now();
    sink += read_loop(accesses, count);
    double t = now() - start;
    if (t < best_read) best_read = t;
  }
  ms_hierarchy_config nehalem;
  ms_hierarchy_parse("nehalem", &nehalem);
  ms_hierarchy_set *set = new_set(&nehalem, 1);
  double sim = simulate(set, accesses, count);
  ms_cache_stats l1;
  ms_hierarchy_level_stats(ms_hierarchy_set_get(set, 0), 0, &l1);
  ms_hierarchy_set_free(set);
  printf("read loop: %.1f M records/s (%.3f s; checksum %llu)\n", count / best_read / 1e6,
         best_read, (unsigned long long)(sink & 0xff));
  printf("nehalem 3-level: %.1f M accesses/s (%.3f s, L1 hit rate %.3f): %.1fx the read loop\n",
         count / sim / 1e6, sim, ms_cache_hit_rate(l1.total), sim / best_read);

  int n = MS_HIERARCHY_CATALOG_EVALUATION;
  ms_hierarchy_config configs[MS_HIERARCHY_CATALOG_EVALUATION];
  for (int i = 0; i < n; i++) ms_hierarchy_parse(ms_hierarchy_catalog_get(i)->name, &configs[i]);
  set = new_set(configs, n);
  int instances = ms_hierarchy_set_level_instances(set);
  double one_pass = simulate(set, accesses, count);
  ms_hierarchy_set_free(set);
  double separate = 0;
  for (int i = 0; i < n; i++) {
    set = new_set(&configs[i], 1);
    separate += simulate(set, accesses, count);
    ms_hierarchy_set_free(set);
  }
  printf("46 hierarchies, one pass (%d distinct levels of 92): %.3f s; 46 passes: %.3f s; "
         "one pass = %.2fx of separate\n",
         instances, one_pass, separate, one_pass / separate);
  free(accesses);
  return 0;
}

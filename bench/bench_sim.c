/* Simulation cost on a real trace held in memory:
 *   - the 3-level nehalem hierarchy against the baseline loop that only reads the records;
 *   - the 46 evaluation hierarchies of the catalog in one pass against 46 separate passes.
 * Times are CPU times of this single-threaded process (a shared host preempts it; the
 * baseline loop and the simulation alternate, best of 5 each).
 * usage: bench_sim TRACE */
#include "bench_common.h"
#include "memsnap/cache.h"

/* Feeds the in-memory trace to a set in batches, as a pipeline would. */
static double time_set(const bench_trace *trace, const ms_hierarchy_config *configs, int count) {
  ms_hierarchy_set *set;
  if (ms_hierarchy_set_new(configs, count, &set) < 0) {
    fprintf(stderr, "bench_sim: %s\n", ms_error_message());
    exit(1);
  }
  double t0 = bench_cpu_now();
  for (size_t start = 0; start < trace->count; start += MS_BATCH_CAPACITY) {
    size_t n = trace->count - start < MS_BATCH_CAPACITY ? trace->count - start : MS_BATCH_CAPACITY;
    ms_batch batch = {trace->accesses + start, n, n};
    if (ms_hierarchy_set_access_batch(set, &batch) < 0) {
      fprintf(stderr, "bench_sim: %s\n", ms_error_message());
      exit(1);
    }
  }
  if (ms_hierarchy_set_flush(set) < 0) { /* a set of several holds its last accesses */
    fprintf(stderr, "bench_sim: %s\n", ms_error_message());
    exit(1);
  }
  double elapsed = bench_cpu_now() - t0;
  ms_hierarchy_set_free(set);
  return elapsed;
}

static ms_hierarchy_config parse_or_die(const char *name) {
  ms_hierarchy_config config;
  if (ms_hierarchy_parse(name, &config) < 0) {
    fprintf(stderr, "bench_sim: %s\n", ms_error_message());
    exit(1);
  }
  return config;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: bench_sim TRACE\n");
    return 2;
  }
  bench_trace trace = bench_load(argv[1]);
  uint64_t checksum = 0;
  ms_hierarchy_config nehalem = parse_or_die("nehalem");
  /* Rounds of (baseline, simulation), best of each: both see the same spells of a shared
   * host's memory traffic, rather than the baseline all first and the simulation after. */
  double memory = 1e30, three_level = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = bench_cpu_now();
    checksum += bench_read_loop(&trace);
    double m = bench_cpu_now() - t0;
    if (m < memory) memory = m;
    double t = time_set(&trace, &nehalem, 1);
    if (t < three_level) three_level = t;
  }
  ms_hierarchy_config catalog[MS_HIERARCHY_CATALOG_EVALUATION];
  for (int i = 0; i < MS_HIERARCHY_CATALOG_EVALUATION; i++)
    catalog[i] = parse_or_die(ms_hierarchy_catalog_get(i)->name);
  double one_pass = time_set(&trace, catalog, MS_HIERARCHY_CATALOG_EVALUATION);
  double separate = 0;
  for (int i = 0; i < MS_HIERARCHY_CATALOG_EVALUATION; i++)
    separate += time_set(&trace, &catalog[i], 1);

  printf("sim %s: %zu accesses (checksum %llx)\n", argv[1], trace.count,
         (unsigned long long)checksum);
  printf("  memory loop          %8.4f s  %8.1f M accesses/s\n", memory,
         trace.count / memory / 1e6);
  printf("  nehalem (3 levels)   %8.4f s  %8.1f M accesses/s\n", three_level,
         trace.count / three_level / 1e6);
  printf("  ratio sim/memory %.2fx (target <= 12x)\n", three_level / memory);
  printf("  46 hierarchies, one pass   %8.3f s\n", one_pass);
  printf("  46 hierarchies, 46 passes  %8.3f s\n", separate);
  printf("  ratio one-pass/separate %.2fx (target < 1x)\n", one_pass / separate);
  free(trace.accesses);
  return 0;
}

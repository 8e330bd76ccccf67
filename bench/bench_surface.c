/* Cache surface cost on a real trace held in memory:
 *   - the full 8-width x 17-depth surface against one pass of the simulator with a single
 *     32768/64/8 LRU level (target: at most 8x);
 *   - the SHARDS-sampled surface at rate 0.01 against the exact one (target: at least 20x
 *     faster, mean absolute error at most 0.01 over the points of depth >= 256); its
 *     shallow depths come from a nested sample at 0.02, printed with the time.
 * Times are CPU times. usage: bench_surface TRACE */
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "memsnap/cache.h"
#include "memsnap/surface.h"

/* CPU time of this process (every timed pass is single-threaded): on the shared, loaded
 * machine wall-clock ratios moved by +-30% between runs. */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(void) {
  fprintf(stderr, "bench_surface: %s\n", ms_error_message());
  exit(1);
}

static double time_sim(const bench_trace *trace) {
  ms_hierarchy_config config;
  ms_hierarchy *hierarchy;
  if (ms_hierarchy_parse("32768/64/8", &config) < 0 || ms_hierarchy_new(&config, &hierarchy) < 0)
    die();
  double t0 = cpu_now();
  for (size_t start = 0; start < trace->count; start += MS_BATCH_CAPACITY) {
    size_t n = trace->count - start < MS_BATCH_CAPACITY ? trace->count - start : MS_BATCH_CAPACITY;
    ms_batch batch = {trace->accesses + start, n, n};
    if (ms_hierarchy_access_batch(hierarchy, &batch) < 0) die();
  }
  double elapsed = cpu_now() - t0;
  ms_hierarchy_free(hierarchy);
  return elapsed;
}

/* CPU time of one pass (threads: 1 for the cost; 0, one per CPU, for the wall time; width:
 * 0 for the default 8 widths, else that width alone). */
static double time_surface_of(const bench_trace *trace, double rate, int threads, uint32_t width,
                              ms_surface *out, double *wall) {
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.sample_rate = rate;
  config.threads = threads;
  if (width) {
    config.width_count = 1;
    config.widths[0] = width;
  }
  ms_surface_builder *builder;
  if (ms_surface_builder_new(&config, &builder) < 0) die();
  double w0 = bench_now();
  double t0 = cpu_now();
  for (size_t start = 0; start < trace->count; start += MS_BATCH_CAPACITY) {
    size_t n = trace->count - start < MS_BATCH_CAPACITY ? trace->count - start : MS_BATCH_CAPACITY;
    ms_batch batch = {trace->accesses + start, n, n};
    if (ms_surface_builder_add(builder, &batch) < 0) die();
  }
  double elapsed = cpu_now() - t0;
  if (wall) *wall = bench_now() - w0;
  ms_surface_builder_result(builder, out);
  ms_surface_builder_free(builder);
  return elapsed;
}

static double time_surface(const bench_trace *trace, double rate, int threads, ms_surface *out,
                           double *wall) {
  return time_surface_of(trace, rate, threads, 0, out, wall);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: bench_surface TRACE\n");
    return 2;
  }
  bench_trace trace = bench_load(argv[1]);
  static ms_surface exact, sampled, parallel;
  double sim = 1e30, full = 1e30, shards = 1e30, full_wall = 1e30, parallel_wall = 1e30;
  for (int r = 0; r < 3; r++) {
    double t = time_sim(&trace);
    if (t < sim) sim = t;
  }
  for (int r = 0; r < 2; r++) {
    double wall, t = time_surface(&trace, 1.0, 1, &exact, &wall);
    if (t < full) full = t;
    if (wall < full_wall) full_wall = wall;
    time_surface(&trace, 1.0, 0, &parallel, &wall);
    if (wall < parallel_wall) parallel_wall = wall;
  }
  if (memcmp(&exact, &parallel, sizeof exact) != 0) {
    fprintf(stderr, "bench_surface: the threaded surface differs from the one-thread one\n");
    return 1;
  }
  for (int r = 0; r < 3; r++) {
    double t = time_surface(&trace, 0.01, 1, &sampled, NULL);
    if (t < shards) shards = t;
  }
  double all = 0, deep = 0, worst_deep = 0;
  int n_all = 0, n_deep = 0;
  for (int i = 0; i < exact.width_count; i++)
    for (int k = 0; k < exact.depth_count; k++) {
      double e = fabs(exact.hit_rate[i][k] - sampled.hit_rate[i][k]);
      all += e;
      n_all++;
      if (exact.depths[k] >= 256) {
        deep += e;
        n_deep++;
        if (e > worst_deep) worst_deep = e;
      }
    }
  printf("surface %s: %zu accesses\n", argv[1], trace.count);
  printf("  sim 32768/64/8 (1 level)      %8.4f s  %8.1f M accesses/s\n", sim,
         trace.count / sim / 1e6);
  printf("  surface 8 widths x 17 depths  %8.4f s  %8.1f M accesses/s\n", full,
         trace.count / full / 1e6);
  printf("  surface SHARDS rate 0.01      %8.4f s  %8.1f M accesses/s", shards,
         trace.count / shards / 1e6);
  if (sampled.near_depth_count > 0) /* the shallow depths' nested sample (surface.c) */
    printf("  (depths %" PRIu64 "..%" PRIu64 " at rate %g)", sampled.depths[0],
           sampled.depths[sampled.near_depth_count - 1], sampled.near_rate);
  printf("\n");
  printf("  ratio surface/sim %.2fx (target <= 8x)\n", full / sim);
  printf("  exact surface wall time: %.4f s on 1 thread, %.4f s on %ld (one per CPU): %.2fx\n",
         full_wall, parallel_wall, sysconf(_SC_NPROCESSORS_ONLN), full_wall / parallel_wall);
  /* the floor of the 8x bar with one stack per width: what single widths cost */
  printf("  one width alone (CPU, best of 2):");
  static const uint32_t alone[] = {4, 64, 512};
  for (int w = 0; w < 3; w++) {
    static ms_surface one;
    double best = 1e30;
    for (int r = 0; r < 2; r++) {
      double t = time_surface_of(&trace, 1.0, 1, alone[w], &one, NULL);
      if (t < best) best = t;
    }
    printf("  %u B %.4f s = %.2fx sim", alone[w], best, best / sim);
  }
  printf("\n");
  printf("  ratio exact/sampled %.1fx (target >= 20x)\n", full / shards);
  printf("  sampled mean absolute error %.4f at depth >= 256 (target <= 0.01; max %.4f), "
         "%.4f at all depths\n",
         deep / n_deep, worst_deep, all / n_all);
  free(trace.accesses);
  return 0;
}

/* Memory-signature model cost on a real trace held in memory: ms_signature_model_add over
 * the whole trace (in batches of MS_BATCH_CAPACITY, as a source hands them out) against
 * bench_common's memory loop over the same records. Times are process CPU time (the bench
 * machine is shared), best of 3. Prints ns per access and the ratio to the memory loop;
 * with OUT, also writes the signature (to check that a faster model gives the same bytes).
 * BENCH_LIMIT=N in the environment keeps the first N accesses and runs once (for callgrind).
 * usage: bench_signature TRACE [OUT.sig] */
#include "bench_common.h"
#include "memsnap/signature.h"

static void die(void) {
  fprintf(stderr, "bench_signature: %s\n", ms_error_message());
  exit(1);
}

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double time_model(const bench_trace *trace, ms_signature **out) {
  ms_signature_config config;
  ms_signature_config_default(&config);
  ms_signature_model *model;
  if (ms_signature_model_new(&config, &model) < 0) die();
  double t0 = cpu_now();
  for (size_t start = 0; start < trace->count; start += MS_BATCH_CAPACITY) {
    size_t n = trace->count - start < MS_BATCH_CAPACITY ? trace->count - start : MS_BATCH_CAPACITY;
    if (ms_signature_model_add(model, trace->accesses + start, n) < 0) die();
  }
  double elapsed = cpu_now() - t0;
  if (out && ms_signature_model_result(model, NULL, 0, out) < 0) die();
  ms_signature_model_free(model);
  return elapsed;
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: bench_signature TRACE [OUT.sig]\n");
    return 2;
  }
  bench_trace trace = bench_load(argv[1]);
  const char *limit = getenv("BENCH_LIMIT");
  int repeats = 3;
  if (limit && strtoull(limit, NULL, 10) < trace.count) {
    trace.count = (size_t)strtoull(limit, NULL, 10);
    repeats = 1;
  }
  uint64_t checksum = 0;
  double best = 1e30, loop = 1e30;
  ms_signature *signature = NULL;
  for (int r = 0; r < repeats; r++) {
    double t0 = cpu_now();
    checksum += bench_read_loop(&trace);
    double t = cpu_now() - t0;
    if (t < loop) loop = t;
    t = time_model(&trace, r == 0 && argc == 3 ? &signature : NULL);
    if (t < best) best = t;
  }
  if (signature) {
    if (ms_signature_save(signature, argv[2]) < 0) die();
    ms_signature_free(signature);
  }
  double n = trace.count ? (double)trace.count : 1;
  printf("signature model: %zu accesses, %.1f ns/access, memory loop %.2f ns/access, "
         "ratio model/loop %.1fx (checksum %llx)\n",
         trace.count, 1e9 * best / n, 1e9 * loop / n, loop > 0 ? best / loop : 0,
         (unsigned long long)(checksum & 0xffff));
  free(trace.accesses);
  return 0;
}

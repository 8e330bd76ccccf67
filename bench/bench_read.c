/* Reading a .mtr: decode every record (zstd + varints) through the ordinary source API,
 * against the baseline loop over the same records already in memory.
 * usage: bench_read TRACE.mtr */
#include "bench_common.h"

static double time_decode(const char *path, uint64_t *checksum, size_t *count, double *cpu) {
  double t0 = bench_now(), c0 = bench_cpu_now();
  ms_source *source;
  if (ms_mtr_open(path, &source) < 0) {
    fprintf(stderr, "bench_read: %s\n", ms_error_message());
    exit(1);
  }
  ms_batch batch;
  ms_batch_init(&batch, 0);
  int n;
  *count = 0;
  while ((n = ms_source_next(source, &batch)) > 0) {
    for (size_t i = 0; i < batch.count; i++) {
      const ms_access *a = &batch.accesses[i];
      *checksum +=
          a->address ^ ((uint64_t)a->site << 20) ^ ((uint64_t)a->thread << 8) ^ a->size ^ a->kind;
    }
    *count += batch.count;
  }
  if (n < 0) {
    fprintf(stderr, "bench_read: %s\n", ms_error_message());
    exit(1);
  }
  ms_batch_free(&batch);
  ms_source_destroy(source);
  *cpu = bench_cpu_now() - c0;
  return bench_now() - t0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: bench_read TRACE.mtr\n");
    return 2;
  }
  bench_trace trace = bench_load(argv[1]);
  uint64_t memory_sum = 0, decode_sum = 0;
  double memory = bench_time_read_loop(&trace, 5, &memory_sum);
  double decode = 1e30, decode_cpu = 1e30;
  size_t count = 0;
  for (int r = 0; r < 3; r++) {
    uint64_t sum = 0;
    double cpu, t = time_decode(argv[1], &sum, &count, &cpu);
    if (t < decode) decode = t;
    if (cpu < decode_cpu) decode_cpu = cpu;
    decode_sum = sum;
  }
  if (count != trace.count || decode_sum * 5 != memory_sum) {
    fprintf(stderr, "bench_read: decoded stream differs from the loaded one\n");
    return 1;
  }
  printf("read %s: %zu accesses\n", argv[1], trace.count);
  printf("  memory loop   %8.4f s  %8.1f M accesses/s\n", memory, trace.count / memory / 1e6);
  printf("  .mtr decode   %8.4f s  %8.1f M accesses/s\n", decode, trace.count / decode / 1e6);
  printf("  ratio decode/memory %.2fx (target <= 4x)\n", decode / memory);
  /* the reader decompresses the next chunk on a thread of its own: CPU time of both */
  printf("  (CPU time of the decode, both threads: %.4f s, %.2fx the memory loop)\n", decode_cpu,
         decode_cpu / memory);
  free(trace.accesses);
  return 0;
}

/* Writing a .mtr: encode and compress every record of a trace already in memory through the
 * ordinary sink API (what `memsnap record` does after the capture channel), against the
 * baseline loop over the same records in memory. Times are CPU time of the process (user +
 * sys, every thread; best of 3 writes, of 5 loops), which on a shared machine varies far less
 * than wall time; the writes' wall time is printed beside it. The written file is read back
 * and compared with the records.
 * usage: bench_write TRACE.mtr [OUTPUT.mtr]   (default output: a file in $TMPDIR or /tmp) */
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void fail(void) {
  fprintf(stderr, "bench_write: %s\n", ms_error_message());
  exit(1);
}

/* One whole write of `trace` to `path`: begin, consume in batches, end. */
__attribute__((noinline)) static void write_trace(const bench_trace *trace,
                                                  const ms_stream_info *info, const char *path) {
  ms_sink *sink;
  if (ms_mtr_sink_new(path, &sink) < 0) fail();
  if (sink->ops->begin(sink, info) < 0) fail();
  for (size_t start = 0; start < trace->count; start += MS_BATCH_CAPACITY) {
    size_t n = trace->count - start < MS_BATCH_CAPACITY ? trace->count - start : MS_BATCH_CAPACITY;
    ms_batch batch = {trace->accesses + start, n, n};
    if (sink->ops->consume(sink, info, &batch) < 0) fail();
  }
  if (sink->ops->end(sink, info) < 0) fail();
  ms_sink_destroy(sink);
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: bench_write TRACE.mtr [OUTPUT.mtr]\n");
    return 2;
  }
  char path[4096];
  if (argc == 3) {
    snprintf(path, sizeof path, "%s", argv[2]);
  } else {
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/bench_write-%ld.mtr", dir && *dir ? dir : "/tmp",
             (long)getpid());
  }
  /* the stream's description (sites, threads) as the trace has it */
  ms_source *source;
  if (ms_mtr_open(argv[1], &source) < 0) fail();
  const ms_stream_info *info = ms_source_info(source);
  bench_trace trace = bench_load(argv[1]);

  /* the baseline in CPU time too */
  uint64_t memory_sum = 0;
  double memory = 1e30;
  for (int r = 0; r < 5; r++) {
    double c0 = cpu_now();
    memory_sum += bench_read_loop(&trace);
    double c = cpu_now() - c0;
    if (c < memory) memory = c;
  }
  volatile uint64_t keep = memory_sum; /* so that the loop is not optimized away */
  (void)keep;
  double cpu = 1e30, wall = 1e30;
  for (int r = 0; r < 3; r++) {
    double c0 = cpu_now(), w0 = bench_now();
    write_trace(&trace, info, path);
    double c = cpu_now() - c0, w = bench_now() - w0;
    if (c < cpu) cpu = c;
    if (w < wall) wall = w;
  }
  /* the written file must hold the same stream */
  bench_trace again = bench_load(path);
  if (again.count != trace.count ||
      memcmp(again.accesses, trace.accesses, trace.count * sizeof *trace.accesses) != 0) {
    fprintf(stderr, "bench_write: the written trace differs from the loaded one\n");
    return 1;
  }
  FILE *f = fopen(path, "rb");
  long bytes = -1;
  if (f && fseek(f, 0, SEEK_END) == 0) bytes = ftell(f);
  if (f) fclose(f);
  if (argc == 2) unlink(path);

  double n = (double)trace.count;
  printf("write %s: %zu accesses, %ld bytes (%.4f bytes/access)\n", argv[1], trace.count, bytes,
         (double)bytes / n);
  printf("  memory loop   %8.4f s  %8.1f M accesses/s  %6.2f ns/access\n", memory, n / memory / 1e6,
         1e9 * memory / n);
  printf("  .mtr write    %8.4f s  %8.1f M accesses/s  %6.2f ns/access (CPU; wall %.4f s)\n", cpu,
         n / cpu / 1e6, 1e9 * cpu / n, wall);
  printf("  ratio write/memory %.2fx (CPU time)\n", cpu / memory);
  free(again.accesses);
  free(trace.accesses);
  ms_source_destroy(source);
  return 0;
}

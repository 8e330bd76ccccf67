/* Writes a trace's accesses as plain 16-byte ms_access records (the uncompressed
 * baseline that `zstd -19` is applied to). usage: bench_raw TRACE OUT.raw */
#include "bench_common.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bench_raw TRACE OUT.raw\n");
    return 2;
  }
  bench_trace trace = bench_load(argv[1]);
  FILE *out = fopen(argv[2], "wb");
  if (!out || fwrite(trace.accesses, sizeof *trace.accesses, trace.count, out) != trace.count ||
      fclose(out) != 0) {
    fprintf(stderr, "bench_raw: cannot write %s\n", argv[2]);
    return 1;
  }
  free(trace.accesses);
  return 0;
}

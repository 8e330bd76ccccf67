/* bench_replay PROFILE.psnap SAME.mtr: replay of a profile into an in-memory consumer
 * vs decoding the same accesses from a .mtr trace, in accesses per second, each the best
 * of several passes; prints the ratio. Two consumers: one that sums every address (what
 * any real consumer at least does), and one that only counts the batches' accesses (the
 * cost of producing the records alone). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"
#include "memsnap/psnap.h"

typedef int (*opener)(const char *path, ms_source **out);

/* Accesses per second of the best pass; *count receives the accesses of one pass. */
static double rate(opener open, const char *path, int touch, uint64_t *count, uint64_t *checksum) {
  double best = 0;
  ms_batch batch;
  ms_batch_init(&batch, 0);
  double started = bench_now();
  for (int pass = 0; pass < 20 && (pass < 3 || bench_now() - started < 2.0); pass++) {
    ms_source *source;
    if (open(path, &source) < 0) {
      fprintf(stderr, "bench_replay: %s\n", ms_error_message());
      exit(1);
    }
    uint64_t n = 0, sum = 0;
    double t0 = bench_now();
    int got;
    while ((got = ms_source_next(source, &batch)) > 0) {
      if (touch)
        for (size_t i = 0; i < batch.count; i++)
          sum += batch.accesses[i].address;
      n += batch.count;
    }
    double seconds = bench_now() - t0;
    ms_source_destroy(source);
    if (got < 0) {
      fprintf(stderr, "bench_replay: %s\n", ms_error_message());
      exit(1);
    }
    *count = n;
    *checksum = sum;
    if (seconds > 0 && n / seconds > best) best = (double)n / seconds;
  }
  ms_batch_free(&batch);
  return best;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bench_replay PROFILE.psnap SAME.mtr\n");
    return 2;
  }
  for (int touch = 1; touch >= 0; touch--) {
    uint64_t replayed, decoded, replay_sum, decode_sum;
    double replay_rate = rate(ms_psnap_open, argv[1], touch, &replayed, &replay_sum);
    double decode_rate = rate(ms_mtr_open, argv[2], touch, &decoded, &decode_sum);
    if (replayed != decoded || replay_sum != decode_sum) {
      fprintf(stderr, "bench_replay: %s and %s hold different accesses\n", argv[1], argv[2]);
      return 1;
    }
    printf("%-16s %9llu accesses, consumer %-6s replay %7.1f M/s, .mtr decode %7.1f M/s, "
           "ratio replay/decode %.1fx (target >= 10x)\n",
           argv[1], (unsigned long long)replayed, touch ? "sum:" : "count:", replay_rate / 1e6,
           decode_rate / 1e6, replay_rate / decode_rate);
  }
  return 0;
}

/* bench_replay PROFILE.psnap SAME.mtr: replay of a profile into an in-memory consumer
 * vs decoding the same accesses from a .mtr trace, in accesses per second, each the best
 * of several passes; prints the ratio. Two consumers: one that sums every address (what
 * any real consumer at least does), and one that only counts the batches' accesses (the
 * cost of producing the records alone).
 * For scale, the same consumers are timed on the cheapest producer there is: a loop that
 * fills each batch with one constant-stride run of records (what replay of a perfectly
 * regular site could at best do). Its rate over the decode's is the most any replay can
 * reach on this machine with 16-byte records and 4096-record batches. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The ceiling: batches filled by a constant-stride loop, `count` accesses in all, with the
 * same consumers as rate(). */
static __attribute__((noinline)) void fill_run(ms_access *out, size_t n, uint64_t base) {
  /* each record as its two 8-byte words, as replay's fast path writes them (a vector of two
   * records measured slower: gcc kept it on the stack) */
  ms_access record = {0, 1, 0, 8, MS_LOAD};
  uint64_t words[2];
  memcpy(words, &record, sizeof words);
  for (size_t i = 0; i < n; i++) {
    words[0] = base + 8 * (uint64_t)i;
    memcpy(&out[i], words, sizeof words);
  }
}

static double ceiling_rate(int touch, uint64_t count) {
  double best = 0;
  ms_batch batch;
  ms_batch_init(&batch, 0);
  volatile uint64_t sink = 0;
  double started = bench_now();
  for (int pass = 0; pass < 20 && (pass < 3 || bench_now() - started < 2.0); pass++) {
    uint64_t n = 0, sum = 0;
    double t0 = bench_now();
    while (n < count) {
      size_t take = count - n < batch.capacity ? (size_t)(count - n) : batch.capacity;
      fill_run(batch.accesses, take, n * 8);
      batch.count = take;
      if (touch)
        for (size_t i = 0; i < batch.count; i++)
          sum += batch.accesses[i].address;
      n += batch.count;
    }
    double seconds = bench_now() - t0;
    sink = sum;
    if (seconds > 0 && n / seconds > best) best = (double)n / seconds;
  }
  (void)sink;
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
    double ceiling = ceiling_rate(touch, replayed);
    printf("%-16s   ceiling for consumer %-6s a constant-stride fill loop %7.1f M/s = %.1fx the "
           "decode; replay reaches %.0f%% of it\n",
           "", touch ? "sum:" : "count:", ceiling / 1e6, ceiling / decode_rate,
           100.0 * replay_rate / ceiling);
  }
  return 0;
}

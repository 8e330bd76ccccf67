/* Fold speed: pushing values (compression) and replaying them with a cursor, each measured
 * against a plain loop over the same expanded array in this run.
 *
 *   push:   ms_fold_push per element vs a loop reading the array (sum): the cost of
 *           folding one stride or one site id, the builder's per-access work;
 *   replay: the fold's expression (ms_fold_expr) read by ms_expr_cursor_read in chunks of
 *           4096 vs copying the expanded array in the same chunks (memcpy) - both summed by
 *           the consumer, so the ratio is what expanding an expression costs next to
 *           reading an uncompressed array of the same elements.
 *
 * Workloads: a PSnAP stride pattern ((+16^15 +48)^127 +16^15 -36816)^n, a site order
 * (s0 s1 s2 s3 s4)^n of count-1 terms, a constant stride +8^n, and irregular values (the
 * slow path of push: no repetition to predict).
 * Targets: push <= 10x the read loop on the regular workloads (<= 500x on irregular input,
 * where every push searches the window); replay <= 1x the copy loop on the regular ones
 * (<= 8x irregular: each element is then a 24-byte term read from memory, 3x the bytes
 * of the copied array, plus the per-term work). Times are CPU times (the bench machine
 * is shared), best of 5.
 * Usage: bench_fold [MILLION_ELEMENTS] (default 8). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memsnap/error.h"
#include "memsnap/expr.h"
#include "memsnap/fold.h"

#define CHUNK 4096
#define ROUNDS 5

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void check(int status) {
  if (status != MS_OK) {
    fprintf(stderr, "bench_fold: %s\n", ms_error_message());
    exit(1);
  }
}

typedef struct workload {
  const char *name;
  int64_t *values;
  size_t count;
} workload;

static workload make(const char *name, size_t target) {
  workload w = {name, malloc(target * sizeof(int64_t)), 0};
  if (!w.values) exit(1);
  uint64_t random = 0x9e3779b97f4a7c15ULL;
  while (w.count < target) {
    if (!strcmp(name, "psnap-2d")) {
      for (int j = 0; j < 127; j++) {
        for (int i = 0; i < 15 && w.count < target; i++)
          w.values[w.count++] = 16;
        if (w.count < target) w.values[w.count++] = 48;
      }
      for (int i = 0; i < 15 && w.count < target; i++)
        w.values[w.count++] = 16;
      if (w.count < target) w.values[w.count++] = -36816;
    } else if (!strcmp(name, "site-order")) {
      w.values[w.count] = (int64_t)(w.count % 5);
      w.count++;
    } else if (!strcmp(name, "constant")) {
      w.values[w.count++] = 8;
    } else {
      random ^= random << 13;
      random ^= random >> 7;
      random ^= random << 17;
      w.values[w.count++] = (int64_t)(random % 4096) - 2048;
    }
  }
  return w;
}

static volatile uint64_t sink;

static double time_push(const workload *w, ms_fold **kept) {
  double best = 1e30;
  for (int round = 0; round < ROUNDS; round++) {
    ms_fold_options options = ms_fold_options_default();
    options.max_nodes = 0;
    ms_fold *fold;
    check(ms_fold_new(&options, &fold));
    double t0 = now();
    for (size_t i = 0; i < w->count; i++)
      if (ms_fold_push(fold, w->values[i]) != MS_OK) check(MS_ERR_ARG);
    check(ms_fold_finish(fold));
    double t = now() - t0;
    if (t < best) best = t;
    if (round == 2)
      *kept = fold;
    else
      ms_fold_free(fold);
  }
  return best;
}

static double time_read_loop(const workload *w) {
  double best = 1e30;
  for (int round = 0; round < ROUNDS; round++) {
    double t0 = now();
    uint64_t sum = 0;
    for (size_t i = 0; i < w->count; i++)
      sum += (uint64_t)w->values[i];
    sink = sum;
    double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

static uint64_t consume(const int64_t *buffer, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += (uint64_t)buffer[i];
  return sum;
}

static double time_copy_loop(const workload *w, int64_t *buffer) {
  double best = 1e30;
  for (int round = 0; round < ROUNDS; round++) {
    double t0 = now();
    uint64_t sum = 0;
    for (size_t at = 0; at < w->count; at += CHUNK) {
      size_t n = w->count - at < CHUNK ? w->count - at : CHUNK;
      memcpy(buffer, w->values + at, n * sizeof *buffer);
      sum += consume(buffer, n);
    }
    sink = sum;
    double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

static double time_replay(ms_fold *fold, const workload *w, int64_t *buffer) {
  double best = 1e30;
  uint64_t expected = consume(w->values, w->count);
  ms_expr expr;
  check(ms_fold_expr(fold, &expr));
  for (int round = 0; round < ROUNDS; round++) {
    ms_expr_cursor cursor;
    check(ms_expr_cursor_init(&cursor, &expr, 0));
    double t0 = now();
    uint64_t sum = 0;
    size_t n, total = 0;
    while ((n = ms_expr_cursor_read(&cursor, buffer, CHUNK)) > 0) {
      sum += consume(buffer, n);
      total += n;
    }
    double t = now() - t0;
    ms_expr_cursor_free(&cursor);
    if (sum != expected || total != w->count) {
      fprintf(stderr, "bench_fold: %s: replay differs from the input\n", w->name);
      exit(1);
    }
    if (t < best) best = t;
  }
  ms_expr_free(&expr);
  return best;
}

int main(int argc, char **argv) {
  size_t count = (size_t)((argc > 1 ? atof(argv[1]) : 8.0) * 1e6);
  const char *names[] = {"psnap-2d", "site-order", "constant", "irregular"};
  int64_t *buffer = malloc(CHUNK * sizeof *buffer);
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    workload w = make(names[k], count);
    ms_fold *fold = NULL;
    double push = time_push(&w, &fold);
    double read = time_read_loop(&w);
    double copy = time_copy_loop(&w, buffer);
    double replay = time_replay(fold, &w, buffer);
    bool irregular = !strcmp(w.name, "irregular");
    printf("fold push   %-10s %5.1f ns/element (%zu elements -> %llu terms): ratio push/read-loop "
           "%6.1fx (target <= %s)\n",
           w.name, push / w.count * 1e9, w.count, (unsigned long long)ms_fold_node_count(fold),
           push / read, irregular ? "500x" : "10x");
    printf("fold replay %-10s %6.0f M elements/s: ratio replay/copy-loop %5.2fx (target <= %s)\n",
           w.name, w.count / replay / 1e6, replay / copy, irregular ? "8x" : "1x");
    ms_fold_free(fold);
    free(w.values);
  }
  free(buffer);
  return 0;
}

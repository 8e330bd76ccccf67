/* bench_merge PROFILE...: the cost of `memsnap merge` against reading its inputs, in one
 * run: the seconds to load and parse every profile, then the seconds of the whole merge
 * (load, merge of each file's threads, the log2(N) rounds of ranks, writing the text to
 * memory), and their ratio (issue 19's bar: <= 2). Best of three of each. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"
#include "memsnap/psnap.h"

static void die(void) {
  fprintf(stderr, "bench_merge: %s\n", ms_error_message());
  exit(1);
}

int main(int argc, char **argv) {
  int count = argc - 1;
  if (count < 1) {
    fprintf(stderr, "usage: bench_merge PROFILE...\n");
    return 2;
  }
  ms_psnap_profile *profiles = calloc((size_t)count, sizeof *profiles);
  if (!profiles) return 1;
  double read_best = 1e30, merge_best = 1e30;
  size_t bytes = 0;
  for (int round = 0; round < 3; round++) {
    double start = bench_now();
    for (int i = 0; i < count; i++) {
      if (ms_psnap_profile_load(argv[i + 1], &profiles[i]) < 0) die();
      ms_psnap_profile_free(&profiles[i]);
    }
    double read = bench_now() - start;
    start = bench_now();
    for (int i = 0; i < count; i++) {
      if (ms_psnap_profile_load(argv[i + 1], &profiles[i]) < 0) die();
      if (ms_psnap_merge_threads(&profiles[i]) < 0) die();
    }
    ms_psnap_profile merged;
    if (ms_psnap_merge(profiles, (uint32_t)count, &merged) < 0) die();
    char *text = NULL;
    FILE *out = open_memstream(&text, &bytes);
    if (!out || ms_psnap_profile_write(&merged, out) < 0) die();
    fclose(out);
    double merge = bench_now() - start;
    free(text);
    ms_psnap_profile_free(&merged);
    if (read < read_best) read_best = read;
    if (merge < merge_best) merge_best = merge;
  }
  printf("%d profiles: read %.3f s, merge %.3f s, merge/read %.2f, merged %zu bytes\n", count,
         read_best, merge_best, merge_best / read_best, bytes);
  free(profiles);
  return 0;
}

/* Threads and ranks merged into blocks (memsnap/psnap.h, ms_psnap_merge*): profiles of
 * hand-written ranks and threads whose addresses are affine in their numbers merge into
 * one block each; every rank and thread picked from the merged profile replays address
 * for address what its own profile replays (the lossless oracle of
 * scalamemtrace-budanur-mueller-gamblin-2010.txt); the merge gives the same bytes in any
 * order of its inputs, round-trips through text, is never larger than its inputs
 * together; threads and ranks that differ keep their own blocks; bad sets, slopes and
 * merges are refused with a message. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"
#include "testutil.h"

static char *text_of(const ms_psnap_profile *p) {
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  assert_non_null(out);
  assert_int_equal(ms_psnap_profile_write(p, out), 0);
  fclose(out);
  return text;
}

static void parse(const char *text, ms_psnap_profile *p) {
  int rc = ms_psnap_profile_parse(text, strlen(text), "test.psnap", p);
  if (rc < 0) fail_msg("%s\n%s", ms_error_message(), text);
}

/* Every access of a profile's replay (it takes the profile over). */
static ms_access *replay_all(ms_psnap_profile *p, size_t *count) {
  ms_source *source;
  assert_int_equal(ms_psnap_replay_open(p, NULL, &source), 0);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  ms_access *all = NULL;
  size_t n = 0;
  int got;
  while ((got = ms_source_next(source, &batch)) > 0) {
    all = realloc(all, (n + batch.count) * sizeof *all);
    memcpy(all + n, batch.accesses, batch.count * sizeof *all);
    n += batch.count;
  }
  assert_int_equal(got, 0);
  ms_batch_free(&batch);
  ms_source_destroy(source);
  *count = n;
  return all;
}

/* Rank r of an SPMD run: thread 0 sweeps its own array (0x1000 + 0x100 r) and reads a
 * shared word, thread 1 reads a table on the heap, 16 r^2 bytes further in rank r (not
 * affine: MPI_Init's allocations differ by rank). Rank 0, the master, sweeps twice as
 * long. */
/* noinline: GCC 12 at -O3, having inlined it, took the string that asprintf returned
 * through the local `text` for a pointer to that local (-Wdangling-pointer) */
__attribute__((noinline)) static char *rank_text(unsigned r) {
  char *text;
  unsigned long long a = 0x1000 + 0x100ull * r;
  int master = r == 0;
  int rc = asprintf(&text,
                    "psnap 2\nprogram \"app\"\nrank %u\naccesses %d\nsites 3\nthreads 2\n"
                    "s0 store 8 x%d @0x%llx +8^%d at app.c:10 pc=0x401000 in sweep\n"
                    "s1 load 8 x2 @0x5000 +0^1 at app.c:11 pc=0x401010 in sweep\n"
                    "s2 load 4 x3 t1 @0x%llx +16^2 at app.c:20 pc=0x402000 in table\n"
                    "thread 0 accesses %d order (s0^%d s1)^2\n"
                    "thread 1 accesses 3 order s2^3\n",
                    r, master ? 13 : 9, master ? 8 : 4, a, master ? 7 : 3, 0x9000 + 16ull * r * r,
                    master ? 10 : 6, master ? 4 : 2);
  assert_true(rc > 0);
  return text;
}

/* Eight ranks in two orders: the same bytes, three blocks (the master's thread 0, the
 * others' thread 0 with the sweep at +0x100 per rank, thread 1 of all eight), each rank
 * replaying as its own profile, and smaller than the eight profiles together. */
static void ranks_merge_losslessly(void **state) {
  (void)state;
  enum { RANKS = 8 };
  static const unsigned shuffled[RANKS] = {5, 2, 7, 0, 3, 6, 1, 4};
  char *texts[RANKS];
  size_t inputs = 0;
  for (unsigned r = 0; r < RANKS; r++)
    inputs += strlen(texts[r] = rank_text(r));
  char *merged_text[2];
  for (int pass = 0; pass < 2; pass++) {
    ms_psnap_profile profiles[RANKS], merged;
    for (unsigned i = 0; i < RANKS; i++)
      parse(texts[pass ? shuffled[i] : i], &profiles[i]);
    assert_int_equal(ms_psnap_merge(profiles, RANKS, &merged), 0);
    merged_text[pass] = text_of(&merged);
    ms_psnap_profile_free(&merged);
  }
  assert_string_equal(merged_text[0], merged_text[1]);
  const char *m = merged_text[0];
  if (getenv("MEMSNAP_TEST_SHOW")) fputs(m, stderr);
  assert_non_null(strstr(m, "blocks 3\n"));
  assert_non_null(strstr(m, "s0 store 8 x8 @0x1000 +8^7"));
  assert_non_null(strstr(m, " r1..7 @0x1000+0x100*r +8^3 at app.c:10"));
  assert_non_null(strstr(m, "block t0 r0 accesses 10 order"));
  assert_non_null(strstr(m, "block t0 r1..7 accesses 6 order"));
  assert_non_null(strstr(m, "block t1 r0..7 accesses 3 order s2^3\n"
                            "  moves 0 0 +0x20 +0x60 +0xc0 +0x140 +0x1e0 +0x2a0\n"));
  assert_non_null(strstr(m, "t1 r0..7 @0x9000+0x10*r+m1 +16^2"));
  assert_true(strlen(m) < inputs / 2);
  /* text -> parse -> text */
  ms_psnap_profile again;
  parse(m, &again);
  char *rewritten = text_of(&again);
  assert_string_equal(m, rewritten);
  free(rewritten);
  ms_psnap_profile_free(&again);
  /* each rank, and each thread of it, replays as its own profile */
  for (unsigned r = 0; r < RANKS; r++)
    for (int thread = -1; thread < 2; thread++) {
      ms_psnap_profile own, picked;
      parse(texts[r], &own);
      parse(m, &picked);
      assert_int_equal(ms_psnap_profile_pick(&picked, r, thread), 0);
      assert_int_equal(picked.blocks, 0);
      assert_true(picked.has_rank);
      assert_int_equal(picked.rank, r);
      size_t n_own, n_picked;
      ms_access *a = replay_all(&own, &n_own), *b = replay_all(&picked, &n_picked);
      size_t k = 0;
      for (size_t i = 0; i < n_own; i++) {
        if (thread >= 0 && a[i].thread != thread) continue;
        assert_true(k < n_picked);
        assert_int_equal(a[i].address, b[k].address);
        assert_int_equal(a[i].thread, b[k].thread);
        assert_int_equal(a[i].size, b[k].size);
        assert_int_equal(a[i].kind, b[k].kind);
        k++;
      }
      assert_int_equal(k, n_picked);
      free(a);
      free(b);
    }
  /* without a rank, the lowest; a rank or thread not in the profile is refused */
  ms_psnap_profile p;
  parse(m, &p);
  assert_int_equal(ms_psnap_profile_pick(&p, 8, -1), MS_ERR_ARG);
  assert_non_null(strstr(ms_error_message(), "rank 8"));
  assert_int_equal(ms_psnap_profile_pick(&p, 3, 2), MS_ERR_ARG);
  assert_int_equal(ms_psnap_profile_pick(&p, -1, -1), 0);
  assert_int_equal(p.rank, 0);
  assert_int_equal(p.access_count, 13);
  ms_psnap_profile_free(&p);
  for (unsigned r = 0; r < RANKS; r++)
    free(texts[r]);
  free(merged_text[0]);
  free(merged_text[1]);
}

/* Five threads: 0 alone, 1 to 3 with their arrays 0x2000 apart, 4 with its array
 * elsewhere (one block, 4's move in a table); a lossy site moves its range with its thread, and
 * threads 3 and 5 alike make the set 3..5:2. */
static void threads_merge_where_affine(void **state) {
  (void)state;
  char histogram[512] = "";
  for (int b = 0; b < 32; b++)
    strcat(histogram, b == 0 ? " 1" : " 0");
  char *text;
  int rc = asprintf(&text,
                    "psnap 2\nprogram \"omp\"\naccesses 29\nsites 6\nthreads 5\n"
                    "s0 load 8 x2 @0x100 +8 in main\n"
                    "s1 store 8 x4 t1 @0x12000 +8^3 in work\n"
                    "s2 store 8 x4 t2 @0x14000 +8^3 in work\n"
                    "s3 store 8 x4 t3 @0x16000 +8^3 in work\n"
                    "s4 store 8 x4 t4 @0x90000 +8^3 in work\n"
                    "s5 load 8 x11 t3 @0x40000 lossy range 0x40000 0x40ff8 align 8 in look\n"
                    "  histogram%s\n  histogram%s\n  histogram%s\n  histogram%s\n"
                    "  histogram%s\n  histogram%s\n  histogram%s\n  histogram%s\n"
                    "thread 0 accesses 2 order s0^2\nthread 1 accesses 4 order s1^4\n"
                    "thread 2 accesses 4 order s2^4\nthread 3 accesses 15 order s3^4 s5^11\n"
                    "thread 4 accesses 4 order s4^4\n",
                    histogram, histogram, histogram, histogram, histogram, histogram, histogram,
                    histogram);
  assert_true(rc > 0);
  /* thread 3's lossy site makes it unlike 1 and 2: 0, 1..2, 3, 4 */
  ms_psnap_profile p;
  parse(text, &p);
  assert_int_equal(ms_psnap_merge_threads(&p), 4);
  char *merged = text_of(&p);
  assert_non_null(strstr(merged, "t1..2 @0x10000+0x2000*t +8^3"));
  assert_non_null(strstr(merged, "block t1..2 r0 accesses 4"));
  ms_psnap_profile_free(&p);
  free(merged);
  /* without it, 1 to 3 are one block; 4 stays apart */
  char *cut = strstr(text, "s5 load");
  char *plain;
  assert_true(asprintf(&plain, "%.*s%s", (int)(cut - text), text,
                       "thread 0 accesses 2 order s0^2\nthread 1 accesses 4 order s1^4\n"
                       "thread 2 accesses 4 order s2^4\nthread 3 accesses 4 order s3^4\n"
                       "thread 4 accesses 4 order s4^4\n") > 0);
  char *fix = strstr(plain, "accesses 29");
  memcpy(fix, "accesses 18", 11);
  fix = strstr(plain, "sites 6");
  fix[6] = '5';
  parse(plain, &p);
  size_t n_original;
  ms_psnap_profile original;
  parse(plain, &original);
  ms_access *all = replay_all(&original, &n_original);
  assert_int_equal(ms_psnap_merge_threads(&p), 2);
  merged = text_of(&p);
  /* thread 4's array is 0x78000 beyond where the slope puts it: a table of moves */
  assert_non_null(strstr(merged, "s1 store 8 x4 t1..4 @0x10000+0x2000*t+m1 +8^3 in work\n"));
  assert_non_null(strstr(merged, "block t1..4 r0 accesses 4 order s1^4\n  moves 0 0 0 +0x78000\n"));
  ms_psnap_profile again;
  parse(merged, &again);
  char *rewritten = text_of(&again);
  assert_string_equal(merged, rewritten);
  free(rewritten);
  ms_psnap_profile_free(&again);
  ms_psnap_profile_free(&p);
  for (int t = 0; t < 5; t++) {
    parse(merged, &p);
    assert_int_equal(ms_psnap_profile_pick(&p, -1, t), 0);
    assert_int_equal(p.thread_count, t + 1);
    size_t n;
    ms_access *one = replay_all(&p, &n);
    size_t k = 0;
    for (size_t i = 0; i < n_original; i++)
      if (all[i].thread == t) {
        assert_true(k < n);
        assert_int_equal(all[i].address, one[k].address);
        k++;
      }
    assert_int_equal(k, n);
    free(one);
  }
  free(all);
  free(merged);
  free(plain);
  /* the lossy site's range follows its thread: threads 3 and 5 alike, 2 apart */
  char *lossy;
  assert_true(asprintf(&lossy,
                       "psnap 2\naccesses 22\nsites 2\nthreads 6\n"
                       "s0 load 8 x11 t3 @0x40000 lossy range 0x40000 0x40ff8 align 8\n"
                       "  histogram%s\n  histogram%s\n  histogram%s\n  histogram%s\n"
                       "  histogram%s\n  histogram%s\n  histogram%s\n  histogram%s\n"
                       "s1 load 8 x11 t5 @0x48000 lossy range 0x48000 0x48ff8 align 8\n"
                       "  histogram%s\n  histogram%s\n  histogram%s\n  histogram%s\n"
                       "  histogram%s\n  histogram%s\n  histogram%s\n  histogram%s\n"
                       "thread 0 accesses 0 order\nthread 1 accesses 0 order\n"
                       "thread 2 accesses 0 order\nthread 3 accesses 11 order s0^11\n"
                       "thread 4 accesses 0 order\nthread 5 accesses 11 order s1^11\n",
                       histogram, histogram, histogram, histogram, histogram, histogram, histogram,
                       histogram, histogram, histogram, histogram, histogram, histogram, histogram,
                       histogram, histogram) > 0);
  parse(lossy, &p);
  assert_int_equal(ms_psnap_merge_threads(&p), 3);
  merged = text_of(&p);
  assert_non_null(strstr(merged, "t3..5:2 @0x34000+0x4000*t lossy range 0x40000"));
  assert_non_null(strstr(merged, "block t0..2 r0 accesses 0 order\n"));
  assert_non_null(strstr(merged, "block t4 r0 accesses 0 order\n"));
  ms_psnap_profile_free(&p);
  parse(merged, &p);
  assert_int_equal(ms_psnap_profile_pick(&p, 0, 5), 0);
  assert_int_equal(p.sites[0].low, 0x48000);
  assert_int_equal(p.sites[0].high, 0x48ff8);
  assert_int_equal(p.sites[0].first_address, 0x48000);
  ms_psnap_profile_free(&p);
  free(merged);
  free(lossy);
  free(text);
}

/* Ranks that share nothing (each its own code: other instructions) merge into one block
 * per thread of each rank, never larger than the profiles together. */
static void unlike_ranks_cost_nothing(void **state) {
  (void)state;
  enum { RANKS = 6 };
  ms_psnap_profile profiles[RANKS], merged;
  size_t inputs = 0;
  for (unsigned r = 0; r < RANKS; r++) {
    char *text = rank_text(r + 1), *pc;
    while ((pc = strstr(text, "pc=0x40")))
      pc[5] = (char)('a' + r); /* pc=0x4a1000 ...: rank r's own code */
    inputs += strlen(text);
    parse(text, &profiles[r]);
    free(text);
  }
  assert_int_equal(ms_psnap_merge(profiles, RANKS, &merged), 0);
  assert_int_equal(merged.thread_count, 2 * RANKS);
  char *text = text_of(&merged);
  assert_true(strlen(text) <= inputs);
  free(text);
  ms_psnap_profile_free(&merged);
}

/* Sets, slopes and merges a reader must refuse, each with a message. */
static void bad_blocks_are_refused(void **state) {
  (void)state;
  static const struct {
    const char *text, *message;
  } cases[] = {
      {"psnap 2\naccesses 2\nsites 1\nblocks 1\ns0 load 8 x1 t3..1 @0x10\n"
       "block t3..1 r0 accesses 1 order s0\n",
       "A below B"},
      {"psnap 2\naccesses 1\nsites 1\nblocks 1\ns0 load 8 x1 t3 @0x10+0x8*t\n"
       "block t3 r0 accesses 1 order s0\n",
       "a slope needs a set of several threads"},
      {"psnap 2\naccesses 1\nsites 1\nthreads 1\ns0 load 8 x1 r2 @0x10\n"
       "thread 0 accesses 1 order s0\n",
       "not in block form"},
      {"psnap 2\naccesses 2\nsites 1\nblocks 1\ns0 load 8 x1 t1..2 @0x10+0x8*t\n"
       "block t1..3 r0 accesses 1 order s0\n",
       "uses site s0 1 times"},
      {"psnap 2\nrank 1\naccesses 1\nsites 1\nblocks 1\ns0 load 8 x1 @0x10\n"
       "block t0 r1 accesses 1 order s0\n",
       "no 'rank' line"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ms_psnap_profile p;
    assert_int_equal(ms_psnap_profile_parse(cases[i].text, strlen(cases[i].text), "bad.psnap", &p),
                     MS_ERR_FORMAT);
    if (!strstr(ms_error_message(), cases[i].message))
      fail_msg("case %zu: '%s' lacks '%s'", i, ms_error_message(), cases[i].message);
    assert_non_null(strstr(ms_error_message(), "bad.psnap"));
  }
  /* ranks merge only when each profile says its rank, once */
  char *one = rank_text(1);
  char *no_rank = strdup(one);
  char *line = strstr(no_rank, "rank 1\n");
  memmove(line, line + 7, strlen(line + 7) + 1);
  ms_psnap_profile two[2], merged;
  parse(one, &two[0]);
  parse(no_rank, &two[1]);
  assert_int_equal(ms_psnap_merge(two, 2, &merged), MS_ERR_ARG);
  assert_non_null(strstr(ms_error_message(), "no rank"));
  parse(one, &two[0]);
  parse(one, &two[1]);
  assert_int_equal(ms_psnap_merge(two, 2, &merged), MS_ERR_ARG);
  assert_non_null(strstr(ms_error_message(), "two profiles of rank 1"));
  free(one);
  free(no_rank);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ranks_merge_losslessly),
      cmocka_unit_test(threads_merge_where_affine),
      cmocka_unit_test(unlike_ranks_cost_nothing),
      cmocka_unit_test(bad_blocks_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Programs run as many processes (MPI): `mpirun -n 2 memsnap record -o ring.%r.mtr --
 * ./mpi_ring N` gives one trace per rank, named by its rank (Open MPI's
 * OMPI_COMM_WORLD_RANK), and each holds its rank's program: the fill loop's stores and the
 * sum loop's loads of N doubles each (8N bytes, whatever the vector width), counted by
 * source line in the trace's own site table. Without -o, the ranks write
 * mpi_ring.RANK.mtr rather than all the same file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h> /* after its prerequisites above */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memsnap/memsnap.h"
#include "memsnap/trace.h"
#include "memsnap_kernels.h"
#include "testutil.h"

#define RING_N 20000

static char *dir;

/* Bytes stored at line `fill` and loaded at line `sum` of mpi_ring.c in dir/name. */
static void loop_bytes(const char *name, int fill, int sum, uint64_t *stored, uint64_t *loaded) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  ms_source *source;
  assert_int_equal(ms_trace_open(path, &source), 0);
  const ms_stream_info *info = ms_source_info(source);
  assert_int_equal(info->exit_status, 0);
  assert_false(info->flags & MS_STREAM_TRUNCATED);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  *stored = *loaded = 0;
  int n;
  while ((n = ms_source_next(source, &batch)) > 0)
    for (size_t i = 0; i < batch.count; i++) {
      const ms_access *a = &batch.accesses[i];
      const ms_site *site = ms_site_table_get(info->sites, a->site);
      if (!site || !site->file || !strstr(site->file, "mpi_ring.c")) continue;
      if (site->line == (uint32_t)fill && a->kind == MS_STORE) *stored += a->size;
      if (site->line == (uint32_t)sum && a->kind == MS_LOAD) *loaded += a->size;
    }
  assert_int_equal(n, 0);
  ms_batch_free(&batch);
  ms_source_destroy(source);
}

/* dir/out holds text (what the last command printed). */
static void assert_out_contains(const char *text) {
  char *out = test_read_in(dir, "out");
  assert_non_null(out);
  if (!strstr(out, text)) fail_msg("'%s' not in:\n%s", text, out);
  free(out);
}

static int mpirun(const char *memsnap_args) {
  /* root in CI containers: Open MPI refuses to run as root unless told */
  return test_run("cd '%s' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                  "'%s' --oversubscribe -n 2 '%s' %s > out 2> err",
                  dir, MEMSNAP_MPIEXEC, test_env("MEMSNAP"), memsnap_args);
}

static void test_one_trace_per_rank(void **state) {
  (void)state;
  char args[4096];
  snprintf(args, sizeof args, "record -q -o ring.%%r.mtr -- '%s' %d", MEMSNAP_KERNEL_MPI_RING,
           RING_N);
  assert_int_equal(mpirun(args), 0);
  char *out = test_read_in(dir, "out");
  assert_non_null(out);
  char expected[64]; /* rank 0 prints the sum over both ranks of rank + i */
  snprintf(expected, sizeof expected, "%.0f\n",
           (double)RING_N * (RING_N - 1) + (double)RING_N /* rank 1's +1 each */);
  assert_string_equal(out, expected);
  free(out);
  int fill = test_program_line("mpi_ring.c", "/* fill */"),
      sum = test_program_line("mpi_ring.c", "/* sum */");
  assert_true(fill > 0 && sum > 0);
  for (int rank = 0; rank < 2; rank++) {
    char name[64];
    snprintf(name, sizeof name, "ring.%d.mtr", rank);
    uint64_t stored, loaded;
    loop_bytes(name, fill, sum, &stored, &loaded);
    assert_int_equal(stored, 8 * RING_N);
    assert_int_equal(loaded, 8 * RING_N);
  }
  char literal[1100];
  snprintf(literal, sizeof literal, "%s/ring.%%r.mtr", dir);
  assert_int_equal(access(literal, F_OK), -1);

  /* the ranks' profiles merged into one, from which each rank replays its own trace
   * exactly; live under mpirun, each profile states its rank */
  for (int rank = 0; rank < 2; rank++)
    assert_int_equal(
        test_memsnap_in(dir, "profile -q --rank %d -o ring.%d.psnap ring.%d.mtr", rank, rank, rank),
        0);
  assert_int_equal(test_memsnap_in(dir, "merge -q -o ring.psnap ring.1.psnap ring.0.psnap"), 0);
  for (int rank = 0; rank < 2; rank++) {
    assert_int_equal(
        test_memsnap_in(dir, "verify --no-cache ring.psnap ring.%d.mtr --rank %d", rank, rank), 0);
    assert_out_contains("exact match: 100.0000%");
  }
  assert_int_equal(test_memsnap_in(dir, "verify --no-cache ring.psnap ring.1.mtr --rank 2"), 2);
  /* every reader picks a rank: info counts rank 1's accesses, as its own trace holds them
   * in the profile's selection; a rank the profile lacks is an error naming it */
  assert_int_equal(test_memsnap_in(dir, "info --rank 1 ring.psnap"), 0);
  assert_int_equal(test_memsnap_in(dir, "sim --hierarchy nehalem --rank 1 ring.psnap"), 0);
  assert_int_equal(test_memsnap_in(dir, "dump --rank 7 ring.psnap"), 1);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "ring.psnap: --rank 7"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "show ring.psnap"), 0);
  assert_out_contains("(threads 0 of ranks 1)");
  /* four ranks' profiles (ranks 2 and 3 those of 0 and 1 again) merged by two processes
   * over MPI: the bytes of the merge in one process */
  for (int rank = 2; rank < 4; rank++)
    assert_int_equal(test_memsnap_in(dir, "profile -q --rank %d -o ring.%d.psnap ring.%d.mtr", rank,
                                     rank, rank - 2),
                     0);
  assert_int_equal(test_memsnap_in(dir, "merge -q -o four.psnap ring.3.psnap ring.1.psnap "
                                        "ring.0.psnap ring.2.psnap"),
                   0);
  assert_int_equal(mpirun("merge -q -o four-mpi.psnap ring.0.psnap ring.1.psnap ring.2.psnap "
                          "ring.3.psnap"),
                   0);
  assert_int_equal(test_run("cd '%s' && cmp four.psnap four-mpi.psnap", dir), 0);
  /* the same four named by a pattern (ranks 0 to 3: ring.4.psnap does not exist), in one
   * process and over MPI; a pattern without its rank 0 file is an error that names it */
  assert_int_equal(test_memsnap_in(dir, "merge -q -o four-pattern.psnap 'ring.%%r.psnap'"), 0);
  assert_int_equal(mpirun("merge -q -o four-pattern-mpi.psnap ring.%r.psnap"), 0);
  assert_int_equal(test_run("cd '%s' && cmp four.psnap four-pattern.psnap && "
                            "cmp four.psnap four-pattern-mpi.psnap",
                            dir),
                   0);
  assert_int_equal(test_memsnap_in(dir, "merge -q -o none.psnap 'gone.%%r.psnap'"), 1);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "gone.%r.psnap: no file of rank 0 (gone.0.psnap)"));
  free(err);
  assert_int_equal(test_run("cd '%s' && ! test -e none.psnap", dir), 0);
  /* a rank missing among them (ring.4.psnap, while ring.5.psnap exists): an error naming it */
  assert_int_equal(test_run("cd '%s' && cp ring.1.psnap ring.5.psnap", dir), 0);
  assert_int_equal(test_memsnap_in(dir, "merge -q -o gap.psnap 'ring.%%r.psnap'"), 1);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "no file of rank 4 (ring.4.psnap), but ring.5.psnap exists"));
  free(err);
  assert_int_equal(test_run("cd '%s' && ! test -e gap.psnap && rm ring.5.psnap", dir), 0);
  snprintf(args, sizeof args, "profile -q -o live.%%r.psnap -- '%s' 100", MEMSNAP_KERNEL_MPI_RING);
  assert_int_equal(mpirun(args), 0);
  assert_int_equal(test_run("cd '%s' && grep -qx 'rank 0' live.0.psnap && "
                            "grep -qx 'rank 1' live.1.psnap",
                            dir),
                   0);

  /* no -o: each rank its own default name */
  snprintf(args, sizeof args, "record -q -- '%s' 100", MEMSNAP_KERNEL_MPI_RING);
  assert_int_equal(mpirun(args), 0);
  assert_int_equal(test_run("cd '%s' && test -s mpi_ring.0.mtr && test -s mpi_ring.1.mtr && "
                            "! test -e mpi_ring.mtr",
                            dir),
                   0);
}

/* %r outside an MPI launcher, and unknown patterns, are usage errors naming the option. */
static void test_output_patterns(void **state) {
  (void)state;
  assert_int_equal(test_memsnap_in(dir, "record -q -o t.%%r.mtr -- '%s'", MEMSNAP_KERNEL_EXIT3), 2);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "-o t.%r.mtr: %r needs an MPI rank"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "record -q -o t.%%q.mtr -- '%s'", MEMSNAP_KERNEL_EXIT3), 2);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "unknown pattern %q"));
  free(err);
  assert_int_equal(test_run("cd '%s' && PMI_RANK=7 '%s' record -q -o 't.%%r.%%%%.mtr' -- '%s' "
                            "> out 2> err; test $? = 3 && test -s 't.7.%%.mtr'",
                            dir, test_env("MEMSNAP"), MEMSNAP_KERNEL_EXIT3),
                   0);
  assert_int_equal(test_run("cd '%s' && SLURM_PROCID=5 '%s' profile -q -o 'p.%%r.psnap' -- '%s' "
                            "> out 2> err; test $? = 3 && test -s p.5.psnap",
                            dir, test_env("MEMSNAP"), MEMSNAP_KERNEL_EXIT3),
                   0);
  /* one file for every rank of a job: refused before anything runs, not overwritten */
  assert_int_equal(test_run("cd '%s' && OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=1 '%s' "
                            "profile -q -o one.psnap -- '%s' > out 2> err; test $? = 2 && "
                            "! test -e one.psnap && grep -q 'would all write this one file' err",
                            dir, test_env("MEMSNAP"), MEMSNAP_KERNEL_EXIT3),
                   0);
}

TEST_SCRATCH_GROUP(dir)

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_trace_per_rank),
      cmocka_unit_test(test_output_patterns),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

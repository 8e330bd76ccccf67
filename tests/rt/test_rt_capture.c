/* Compiler-instrumented capture end to end: kernels built by memsnap-cc, recorded through
 * MEMSNAP_OUT or `memsnap record --via=rt`, checked against what each kernel is known to
 * do: the stores each thread makes (rows of known addresses, in order), the store that
 * crashes, the exit status, the arithmetic of interval sampling, and source lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <json-c/json.h>

#include "memsnap/objects.h"
#include "rt_util.h"
#include "testutil.h"

static char *dir;

TEST_SCRATCH_GROUP(dir)

/* Runs a kernel with MEMSNAP_OUT=dir/out.mtr (plus `env`), stdout to dir/out. */
static int run_kernel(const char *env, const char *kernel, const char *args) {
  char path[1024];
  return test_run("cd '%s' && rm -f out.mtr && MEMSNAP_OUT=out.mtr %s '%s' %s > out 2> err", dir,
                  env, rt_kernel(kernel, path, sizeof path), args);
}

static void load_in_dir(const char *name, rt_trace *trace) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  rt_trace_load(path, trace);
}

/* Checks the stores into rows[threads][max_n] (base printed by the kernel): each row
 * filled 0..n-1 in order by a single thread of the trace, each by a different one. */
static void check_rows(const rt_trace *trace, uint64_t base, int rows, long max_n, long n) {
  uint64_t end = base + (uint64_t)rows * (uint64_t)max_n * 8;
  int owner_of_row[16];
  long next_index[16];
  for (int r = 0; r < rows; r++)
    owner_of_row[r] = -1, next_index[r] = 0;
  for (size_t i = 0; i < trace->count; i++) {
    const ms_access *a = &trace->accesses[i];
    if (a->kind != MS_STORE || a->address < base || a->address >= end) continue;
    assert_int_equal(a->size, 8);
    int row = (int)((a->address - base) / ((uint64_t)max_n * 8));
    long index = (long)((a->address - base) % ((uint64_t)max_n * 8) / 8);
    if (owner_of_row[row] < 0) owner_of_row[row] = a->thread;
    assert_int_equal(owner_of_row[row], a->thread); /* the right thread id */
    assert_int_equal(index, next_index[row]);       /* in order, none missing */
    next_index[row]++;
  }
  for (int r = 0; r < rows; r++) {
    assert_int_equal(next_index[r], n);
    assert_true((uint32_t)owner_of_row[r] < rt_trace_info(trace)->thread_count);
    for (int s = 0; s < r; s++)
      assert_int_not_equal(owner_of_row[r], owner_of_row[s]);
  }
}

static uint64_t printed_address(const char *word) {
  char *out = test_read_in(dir, "out");
  assert_non_null(out);
  char *at = strstr(out, word);
  assert_non_null(at);
  uint64_t address = strtoull(at + strlen(word) + 1, NULL, 16);
  free(out);
  return address;
}

static void test_pthreads(void **state) {
  (void)state;
  assert_int_equal(run_kernel("", "threads_order", "20000"), 0);
  rt_trace trace;
  load_in_dir("out.mtr", &trace);
  const ms_stream_info *info = rt_trace_info(&trace);
  assert_false(info->flags & MS_STREAM_TRUNCATED);
  assert_int_equal(info->exit_status, 0);
  assert_string_equal(info->capture, "rt");
  assert_true(info->thread_count >= 5); /* main and 4 workers */
  check_rows(&trace, printed_address("rows"), 4, 100000, 20000);
  rt_trace_free(&trace);
}

static void test_openmp(void **state) {
  (void)state;
  assert_int_equal(run_kernel("OMP_WAIT_POLICY=passive", "omp_order", "20000"), 0);
  rt_trace trace;
  load_in_dir("out.mtr", &trace);
  assert_false(rt_trace_info(&trace)->flags & MS_STREAM_TRUNCATED);
  assert_true(rt_trace_info(&trace)->thread_count >= 4);
  check_rows(&trace, printed_address("rows"), 4, 100000, 20000);
  rt_trace_free(&trace);
}

/* Counts the 8-byte stores into [base, base + n * 8) and checks they come in index order. */
static long stores_in(const rt_trace *trace, uint64_t base, long n, int *thread) {
  long count = 0;
  for (size_t i = 0; i < trace->count; i++) {
    const ms_access *a = &trace->accesses[i];
    if (a->kind != MS_STORE || a->address < base || a->address >= base + (uint64_t)n * 8) continue;
    assert_int_equal(a->address, base + (uint64_t)count * 8);
    if (thread) *thread = a->thread;
    count++;
  }
  return count;
}

static void test_segfault_leaves_truncated_trace(void **state) {
  (void)state;
  assert_int_equal(run_kernel("", "segv", "10000"), 128 + 11);
  rt_trace trace;
  load_in_dir("out.mtr", &trace);
  const ms_stream_info *info = rt_trace_info(&trace);
  assert_true(info->flags & MS_STREAM_TRUNCATED);
  assert_int_equal(info->exit_status, 128 + 11);
  /* 10000 stores into `touched`, then the store through NULL that faults, recorded last */
  long stores = 0;
  for (size_t i = 0; i < trace.count; i++)
    stores += trace.accesses[i].kind == MS_STORE && trace.accesses[i].size == 8;
  assert_int_equal(stores, 10001);
  assert_int_equal(trace.accesses[trace.count - 1].address, 0);
  assert_int_equal(trace.accesses[trace.count - 1].kind, MS_STORE);
  rt_trace_free(&trace);
}

/* Killed as soon as the first sweep is announced, 20 times: the signal often lands while
 * the program copies its buffer into the channel, and must wait for that copy instead of
 * losing it (a handler that gave up there lost every record of the unsubmitted slot: 8 of
 * 100 such runs left an empty trace). */
static void test_sigterm_leaves_truncated_trace(void **state) {
  (void)state;
  char kernel[1024];
  rt_kernel("spin", kernel, sizeof kernel);
  for (int run = 0; run < 20; run++) {
    int rc = test_run(
        "cd '%s' && rm -f out.mtr out && { MEMSNAP_OUT=out.mtr '%s' 30 > out & pid=$!; i=0; "
        "while ! grep -qs spinning out && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); "
        "done; kill -TERM $pid; wait $pid; echo $? > status; }",
        dir, kernel);
    assert_int_equal(rc, 0);
    char *status = test_read_in(dir, "status");
    assert_non_null(status);
    assert_int_equal(atoi(status), 128 + 15);
    free(status);
    rt_trace trace;
    load_in_dir("out.mtr", &trace);
    assert_true(rt_trace_info(&trace)->flags & MS_STREAM_TRUNCATED);
    assert_int_equal(rt_trace_info(&trace)->exit_status, 128 + 15);
    if (trace.count < 2 * 4096) print_error("run %d: %zu accesses\n", run, trace.count);
    assert_true(trace.count >= 2 * 4096); /* the first sweep, announced before the kill */
    rt_trace_free(&trace);
  }
}

/* A program that closes the descriptors it did not open closes the runtime's channel: its
 * accesses are lost from there on, and memsnap says so rather than leave an unexplained
 * empty trace (the Valgrind path keeps its channel out of the program's reach). */
static void test_closed_channel_is_reported(void **state) {
  (void)state;
  char kernel[1024];
  rt_kernel("close_fds", kernel, sizeof kernel);
  assert_int_equal(test_memsnap_in(dir, "record -q --via=rt -o closed.mtr -- '%s' 5000", kernel),
                   0);
  char *err = test_read_in(dir, "err");
  assert_non_null(err);
  assert_non_null(strstr(err, "close_fds stopped arriving before it ended"));
  assert_non_null(strstr(err, "capture channel"));
  free(err);
  rt_trace trace;
  load_in_dir("closed.mtr", &trace);
  assert_true(rt_trace_info(&trace)->flags & MS_STREAM_TRUNCATED);
  assert_int_equal(rt_trace_info(&trace)->exit_status, 0);
  rt_trace_free(&trace);
  /* the program's own file on the channel's numbers: the runtime leaves it alone (it
   * wrote its notices into it before, and closed it at exit) */
  assert_int_equal(test_run("cd '%s' && : > mine", dir), 0);
  assert_int_equal(
      test_memsnap_in(dir, "record -q --via=rt -o reused.mtr -- '%s' 5000 mine", kernel), 0);
  char *mine = test_read_in(dir, "mine");
  assert_non_null(mine);
  assert_string_equal(mine, "");
  free(mine);
  err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "stopped arriving before it ended"));
  free(err);
  /* through Valgrind, the same program is whole: its 5000 stores are in the trace */
  assert_int_equal(test_memsnap_in(dir, "record -q --via=valgrind -o vg.mtr -- '%s' 5000", kernel),
                   0);
  load_in_dir("vg.mtr", &trace);
  assert_false(rt_trace_info(&trace)->flags & MS_STREAM_TRUNCATED);
  long stores = 0;
  for (size_t i = 0; i < trace.count; i++)
    stores += trace.accesses[i].kind == MS_STORE &&
              strcmp(rt_trace_function(&trace, &trace.accesses[i]), "main") == 0 &&
              trace.accesses[i].size == 8;
  assert_true(stores >= 5000);
  rt_trace_free(&trace);
}

static void test_exit_from_a_thread(void **state) {
  (void)state;
  assert_int_equal(run_kernel("", "exit_thread", "5000"), 5);
  rt_trace trace;
  load_in_dir("out.mtr", &trace);
  const ms_stream_info *info = rt_trace_info(&trace);
  assert_false(info->flags & MS_STREAM_TRUNCATED);
  assert_int_equal(info->exit_status, 5);
  int thread = -1;
  assert_int_equal(stores_in(&trace, printed_address("cells"), 5000, &thread), 5000);
  assert_int_not_equal(thread, 0); /* the second thread's, flushed by exit() */
  rt_trace_free(&trace);
}

/* exit() from a signal handler, perhaps in the middle of the runtime's own flush: the
 * program still exits (no deadlock) and leaves a valid trace; complete with status 7, or
 * marked truncated when the handler interrupted a flush. Five runs, timers of 50-250 ms. */
static void test_exit_from_a_signal_handler(void **state) {
  (void)state;
  for (int run = 1; run <= 5; run++) {
    char args[32];
    snprintf(args, sizeof args, "%d", 50 * run);
    assert_int_equal(run_kernel("timeout -s KILL 30", "exit_in_handler", args), 7);
    rt_trace trace;
    load_in_dir("out.mtr", &trace);
    const ms_stream_info *info = rt_trace_info(&trace);
    if (!(info->flags & MS_STREAM_TRUNCATED)) assert_int_equal(info->exit_status, 7);
    assert_true(trace.count > 0);
    rt_trace_free(&trace);
  }
}

static void test_fork_child_writes_its_own_trace(void **state) {
  (void)state;
  assert_int_equal(run_kernel("", "fork_child", "3000"), 0);
  char *out = test_read_in(dir, "out");
  assert_non_null(out);
  unsigned long long before, child, after;
  long pid;
  assert_int_equal(sscanf(out, "arrays %llx %llx %llx child %ld", &before, &child, &after, &pid),
                   4);
  free(out);
  rt_trace parent, forked;
  load_in_dir("out.mtr", &parent);
  char name[64];
  snprintf(name, sizeof name, "out.mtr.%ld", pid);
  load_in_dir(name, &forked);
  assert_int_equal(stores_in(&parent, before, 3000, NULL), 3000);
  assert_int_equal(stores_in(&parent, after, 3000, NULL), 3000);
  assert_int_equal(stores_in(&parent, child, 3000, NULL), 0);
  assert_int_equal(stores_in(&forked, child, 3000, NULL), 3000);
  assert_int_equal(stores_in(&forked, before, 3000, NULL), 0);
  assert_int_equal(stores_in(&forked, after, 3000, NULL), 0);
  assert_false(rt_trace_info(&forked)->flags & MS_STREAM_TRUNCATED);
  rt_trace_free(&parent);
  rt_trace_free(&forked);
}

/* `memsnap record` picks the runtime by itself, --via=rt forces it; both give the trace
 * that MEMSNAP_OUT gives (a single-threaded kernel is deterministic). */
static void test_record_via_rt(void **state) {
  (void)state;
  char kernel[1024];
  rt_kernel("stream_add", kernel, sizeof kernel);
  assert_int_equal(run_kernel("", "stream_add", "5000"), 0);
  assert_int_equal(test_memsnap_in(dir, "record -q -o auto.mtr -- '%s' 5000", kernel), 0);
  assert_int_equal(test_memsnap_in(dir, "record -q --via=rt -o rt.mtr -- '%s' 5000", kernel), 0);
  rt_trace direct, automatic, forced;
  load_in_dir("out.mtr", &direct);
  load_in_dir("auto.mtr", &automatic);
  load_in_dir("rt.mtr", &forced);
  assert_string_equal(rt_trace_info(&automatic)->capture, "rt");
  assert_int_equal(automatic.count, direct.count);
  assert_int_equal(forced.count, direct.count);
  for (size_t i = 0; i < direct.count; i++) {
    assert_int_equal(automatic.accesses[i].size, direct.accesses[i].size);
    assert_int_equal(automatic.accesses[i].kind, direct.accesses[i].kind);
  }
  rt_trace_free(&direct);
  rt_trace_free(&automatic);
  rt_trace_free(&forced);

  /* the program's exit status passes through, as under Valgrind */
  rt_kernel("exit3", kernel, sizeof kernel);
  assert_int_equal(test_memsnap_in(dir, "record -q -o exit3.mtr -- '%s'", kernel), 3);
  rt_trace exited;
  load_in_dir("exit3.mtr", &exited);
  assert_int_equal(rt_trace_info(&exited)->exit_status, 3);
  rt_trace_free(&exited);
}

static void test_record_via_rt_needs_the_runtime(void **state) {
  (void)state;
  char kernel[1024];
  test_kernel("exit3", kernel, sizeof kernel); /* built by the plain compiler */
  assert_int_equal(test_memsnap_in(dir, "record --via=rt -o x.mtr -- '%s'", kernel), 1);
  char *err = test_read_in(dir, "err");
  assert_non_null(strstr(err, "no memsnap runtime answered"));
  free(err);
  assert_int_equal(test_memsnap_in(dir, "record --via=gdb -o x.mtr -- '%s'", kernel), 2);
  assert_int_equal(test_memsnap_in(dir, "record --sample 0/5 -o x.mtr -- '%s'", kernel), 2);
}

/* Accesses kept by interval sampling of `total` accesses in one thread. */
static uint64_t sampled(uint64_t total, uint64_t on, uint64_t off) {
  uint64_t periods = total / (on + off), rest = total % (on + off);
  return periods * on + (rest < on ? rest : on);
}

static void test_sampling(void **state) {
  (void)state;
  char kernel[1024];
  rt_kernel("stream_add", kernel, sizeof kernel);
  assert_int_equal(run_kernel("", "stream_add", "20000"), 0);
  rt_trace full;
  load_in_dir("out.mtr", &full);
  uint64_t total = full.count;
  rt_trace_free(&full);

  assert_int_equal(test_memsnap_in(dir, "record -q --sample 1k/3k -o s.mtr -- '%s' 20000", kernel),
                   0);
  assert_int_equal(run_kernel("MEMSNAP_SAMPLE=1k/3k", "stream_add", "20000"), 0);
  const char *names[2] = {"s.mtr", "out.mtr"};
  for (int i = 0; i < 2; i++) {
    rt_trace trace;
    load_in_dir(names[i], &trace);
    const ms_stream_info *info = rt_trace_info(&trace);
    assert_true(info->flags & MS_STREAM_SAMPLED);
    assert_int_equal(info->sample_on, 1000);
    assert_int_equal(info->sample_off, 3000);
    assert_int_equal(trace.count, sampled(total, 1000, 3000));
    rt_trace_free(&trace);
  }
}

/* Accesses in the runtime's long form (addresses from 2^48 on) arrive like the others: in
 * order, between the stores around them, with their size and kind; and interval sampling
 * counts each as one access. */
static void test_long_forms(void **state) {
  (void)state;
  const long n = 20000;
  char args[32];
  snprintf(args, sizeof args, "%ld", n);
  assert_int_equal(run_kernel("", "long_forms", args), 0);
  char *out = test_read_in(dir, "out");
  uint64_t cells = strtoull(out, NULL, 16);
  free(out);
  rt_trace trace;
  load_in_dir("out.mtr", &trace);
  long stores = 0, highs = 0;
  int after_store = 0;
  for (size_t i = 0; i < trace.count; i++) {
    const ms_access *a = &trace.accesses[i];
    if (a->kind == MS_STORE && a->address >= cells && a->address < cells + 4096 * 8) {
      assert_int_equal(a->address, cells + (uint64_t)(stores % 4096) * 8);
      stores++;
      after_store = 1;
    } else if (a->address >= 1ull << 48) {
      assert_int_equal(a->address, 0xffff000000000000ull + 8 * (uint64_t)highs);
      assert_int_equal(a->size, 8);
      assert_int_equal(a->kind, MS_LOAD);
      assert_int_equal(a->thread, 0);
      assert_true(after_store); /* right after its store: nothing lost or reordered */
      after_store = 0;
      highs++;
    }
  }
  assert_int_equal(stores, n);
  assert_int_equal(highs, n);
  uint64_t total = trace.count;
  rt_trace_free(&trace);
  assert_int_equal(run_kernel("MEMSNAP_SAMPLE=3/5", "long_forms", args), 0);
  load_in_dir("out.mtr", &trace);
  assert_int_equal(trace.count, sampled(total, 3, 5));
  rt_trace_free(&trace);
}

/* Sites resolve to the kernel's source lines: stream_add.c line 8 is the loop body. */
static void test_sites_name_source_lines(void **state) {
  (void)state;
  assert_int_equal(run_kernel("", "stream_add", "2000"), 0);
  rt_trace trace;
  load_in_dir("out.mtr", &trace);
  size_t in_kernel = 0;
  for (size_t i = 0; i < trace.count; i++) {
    if (strcmp(rt_trace_function(&trace, &trace.accesses[i]), "stream_add") != 0) continue;
    const ms_site *site = ms_site_table_get(rt_trace_info(&trace)->sites, trace.accesses[i].site);
    assert_non_null(site->file);
    assert_non_null(strstr(site->file, "stream_add.c"));
    assert_int_equal(site->line, 8);
    in_kernel++;
  }
  assert_true(in_kernel >= 3 * 2000 / 2); /* a[i] = b[i] + c[i], perhaps 2 per vector */
  rt_trace_free(&trace);
  assert_int_equal(test_memsnap_in(dir, "info out.mtr"), 0);
  char *info = test_read_in(dir, "out");
  assert_non_null(strstr(info, "capture:       rt"));
  free(info);
}

/* memsnap-cc's plain -g gives debug information that Valgrind 3.19 reads: a program of two
 * files (tests/rt/project), built without -gdwarf-4, is recorded through Valgrind, and the
 * histogram's accesses resolve to histogram.c line 5 (before, DWARF 5: Valgrind gave up
 * before the program ran). An explicit -gdwarf-5 of the caller's is kept. */
static void test_default_debug_info_is_read_by_valgrind(void **state) {
  (void)state;
  assert_int_equal(test_run("cd '%s' && '%s' -O2 -g -o histo '%s/main.c' '%s/histogram.c' "
                            "-I'%s' && readelf --debug-dump=info histo > dwarf",
                            dir, MEMSNAP_CC, MEMSNAP_RT_PROJECT, MEMSNAP_RT_PROJECT,
                            MEMSNAP_RT_PROJECT),
                   0);
  char *dwarf = test_read_in(dir, "dwarf");
  assert_non_null(dwarf);
  assert_non_null(strstr(dwarf, "Version:       4"));
  assert_null(strstr(dwarf, "Version:       5"));
  free(dwarf);
  assert_int_equal(test_run("cd '%s' && '%s' -O2 -g -gdwarf-5 -c -o five.o '%s/histogram.c' "
                            "-I'%s' && readelf --debug-dump=info five.o > dwarf",
                            dir, MEMSNAP_CC, MEMSNAP_RT_PROJECT, MEMSNAP_RT_PROJECT),
                   0);
  dwarf = test_read_in(dir, "dwarf");
  assert_non_null(dwarf);
  assert_non_null(strstr(dwarf, "Version:       5"));
  free(dwarf);
  assert_int_equal(test_memsnap_in(dir, "record -q --via=valgrind -o vg.mtr -- ./histo 3000"), 0);
  rt_trace trace;
  load_in_dir("vg.mtr", &trace);
  long in_histogram = 0;
  for (size_t i = 0; i < trace.count; i++) {
    if (strcmp(rt_trace_function(&trace, &trace.accesses[i]), "histogram") != 0) continue;
    const ms_site *site = ms_site_table_get(rt_trace_info(&trace)->sites, trace.accesses[i].site);
    assert_non_null(site->file);
    assert_non_null(strstr(site->file, "histogram.c"));
    in_histogram += site->line == 5;
  }
  assert_true(in_histogram >= 3 * 3000); /* data[i], and bins[] loaded and stored */
  rt_trace_free(&trace);
}

static json_object *report_in_out(void) {
  char *text = test_read_in(dir, "out");
  assert_non_null(text);
  assert_non_null(strchr(text, '{'));
  json_object *report = json_tokener_parse(strchr(text, '{'));
  assert_non_null(report);
  free(text);
  return report;
}

static int64_t level1_accesses(json_object *report) {
  json_object *hierarchies, *levels, *accesses;
  assert_true(json_object_object_get_ex(report, "hierarchies", &hierarchies));
  assert_true(
      json_object_object_get_ex(json_object_array_get_idx(hierarchies, 0), "levels", &levels));
  assert_true(
      json_object_object_get_ex(json_object_array_get_idx(levels, 0), "accesses", &accesses));
  return json_object_get_int64(accesses);
}

/* `memsnap sim -- PROG` observes an instrumented program through its runtime. */
static void test_sim_live(void **state) {
  (void)state;
  char kernel[1024];
  rt_kernel("matmul", kernel, sizeof kernel);
  assert_int_equal(run_kernel("", "matmul", "30"), 0);
  assert_int_equal(test_memsnap_in(dir, "sim --json -H 32k/64/8 out.mtr"), 0);
  json_object *from_file = report_in_out();
  /* -o -: the report on standard output, after the kernel's own line of output (without
   * it, the report of a live program goes to standard error) */
  assert_int_equal(test_memsnap_in(dir, "sim --json -H 32k/64/8 -o - -- '%s' 30", kernel), 0);
  json_object *live = report_in_out();
  assert_int_equal(level1_accesses(from_file), level1_accesses(live));
  json_object_put(from_file);
  json_object_put(live);
}

/* The callbacks preserve every register (memsnap-cc declares them no_caller_saved_registers,
 * so the caller keeps its values in registers across them): a kernel with 8 double and 8
 * integer accumulators live across its callbacks prints what the same source prints built
 * without instrumentation, when it records everything (the slow path, which saves the
 * vector state with XSAVE, runs every 4 Ki accesses), samples (OFF budgets, phase changes)
 * or records nothing. Also built with -mavx2 (YMM registers), run where the CPU has AVX2. */
static void test_registers_preserved(void **state) {
  (void)state;
  assert_int_equal(test_run("cd '%s' && '%s' 30000 > expected", dir, MEMSNAP_RT_REGISTERS_PLAIN),
                   0);
  char *expected = test_read_in(dir, "expected");
  assert_non_null(expected);
  assert_true(strlen(expected) > 100); /* 8 lines of two numbers */
  /* memsnap-cc's default mode (inline records, when its plugin was built), then callbacks */
  const char *kernels[] = {"registers", "registers_avx2", "registers_callbacks",
                           "registers_avx2_callbacks"};
  const char *envs[] = {"", "MEMSNAP_SAMPLE=1k/3k", "MEMSNAP_OUT="};
  for (int k = 0; k < 4; k++) {
    __builtin_cpu_init();
    if (k % 2 == 1 && !__builtin_cpu_supports("avx2")) continue;
    for (int e = 0; e < 3; e++) {
      assert_int_equal(run_kernel(envs[e], kernels[k], "30000"), 0);
      char *out = test_read_in(dir, "out");
      assert_non_null(out);
      assert_string_equal(out, expected);
      free(out);
    }
    /* and the recording holds the loop's loads: 4 passes x 2 arrays x 30000 */
    rt_trace trace;
    assert_int_equal(run_kernel("", kernels[k], "30000"), 0);
    load_in_dir("out.mtr", &trace);
    assert_true(trace.count >= 4 * 2 * 30000);
    rt_trace_free(&trace);
  }
  free(expected);
}

/* Data objects (MEMSNAP_OBJECTS=1, `memsnap record --objects --via=rt`): two_objects
 * allocates a[N] and b[N] doubles at two lines and loads a N times, b 2 N times. */
static json_object *object_row(json_object *rows, int line) {
  for (size_t i = 0; i < json_object_array_length(rows); i++) {
    json_object *row = json_object_array_get_idx(rows, i), *at, *file, *number;
    if (json_object_object_get_ex(row, "allocated_at", &at) &&
        json_object_object_get_ex(at, "file", &file) && file &&
        strstr(json_object_get_string(file), "two_objects.c") &&
        json_object_object_get_ex(at, "line", &number) && json_object_get_int(number) == line)
      return row;
  }
  fail_msg("no object allocated at two_objects.c:%d", line);
  return NULL;
}

static void test_objects(void **state) {
  (void)state;
  const long n = 3000;
  char args[32], kernel[1024];
  snprintf(args, sizeof args, "%ld", n);
  rt_kernel("two_objects", kernel, sizeof kernel);
  int a_line = test_program_line("../rt/two_objects.c", "a's allocation");
  int b_line = test_program_line("../rt/two_objects.c", "b's allocation");
  assert_true(a_line > 0 && b_line > 0);

  /* MEMSNAP_OUT with MEMSNAP_OBJECTS=1: both blocks, their sizes, lines and frees */
  assert_int_equal(run_kernel("MEMSNAP_OBJECTS=1", "two_objects", args), 0);
  uint64_t addresses[2] = {printed_address("objA"), printed_address("objB")};
  rt_trace trace;
  load_in_dir("out.mtr", &trace);
  const ms_stream_info *info = rt_trace_info(&trace);
  assert_non_null(info->objects);
  int allocated[2] = {0, 0}, freed[2] = {0, 0};
  uint64_t count = ms_object_table_count(info->objects);
  for (uint64_t i = 0; i < count; i++) {
    const ms_object_event *e = ms_object_table_get(info->objects, i);
    for (int k = 0; k < 2; k++) {
      if (e->address != addresses[k] || e->kind != MS_OBJECT_HEAP) continue;
      if (e->freed) {
        assert_int_equal(allocated[k], 1);
        freed[k]++;
        continue;
      }
      allocated[k]++;
      assert_int_equal(e->size, (uint64_t)n * 8);
      const ms_site *site = ms_site_table_get(info->sites, e->site);
      assert_non_null(site);
      assert_non_null(site->file);
      assert_non_null(strstr(site->file, "two_objects.c"));
      assert_int_equal(site->line, k == 0 ? a_line : b_line);
      assert_true(e->index <= trace.count);
    }
  }
  assert_int_equal(allocated[0], 1);
  assert_int_equal(allocated[1], 1);
  assert_int_equal(freed[0], 1);
  assert_int_equal(freed[1], 1);
  size_t with_objects = trace.count;
  rt_trace_free(&trace);

  /* without objects asked for: no object block, and the same accesses */
  assert_int_equal(run_kernel("", "two_objects", args), 0);
  load_in_dir("out.mtr", &trace);
  assert_null(rt_trace_info(&trace)->objects);
  assert_int_equal(trace.count, with_objects);
  rt_trace_free(&trace);
  assert_int_equal(test_memsnap_in(dir, "record -q --via=rt -o plain.mtr -- '%s' %s", kernel, args),
                   0);
  assert_int_equal(test_memsnap_in(dir, "info --json plain.mtr"), 0);
  char *out = test_read_in(dir, "out");
  assert_null(strstr(out, "\"objects\""));
  free(out);

  /* memsnap record --objects --via=rt, then annotate --by object: a[] has N loads, b[] 2 N
   * (the loop bounds), each at its allocating line */
  assert_int_equal(
      test_memsnap_in(dir, "record -q --objects --via=rt -o o.mtr -- '%s' %s", kernel, args), 0);
  assert_int_equal(
      test_memsnap_in(dir, "annotate -H nehalem --by object --all --json -o o.json o.mtr"), 0);
  char path[1024];
  snprintf(path, sizeof path, "%s/o.json", dir);
  json_object *annotation = json_object_from_file(path);
  assert_non_null(annotation);
  json_object *rows = NULL;
  assert_true(json_object_object_get_ex(annotation, "objects", &rows));
  json_object *a = object_row(rows, a_line), *b = object_row(rows, b_line), *field;
  assert_true(json_object_object_get_ex(a, "accesses", &field));
  assert_int_equal(json_object_get_int64(field), n);
  assert_true(json_object_object_get_ex(b, "accesses", &field));
  assert_int_equal(json_object_get_int64(field), 2 * n);
  assert_true(json_object_object_get_ex(a, "bytes", &field));
  assert_int_equal(json_object_get_int64(field), n * 8);
  json_object_put(annotation);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pthreads),
      cmocka_unit_test(test_openmp),
      cmocka_unit_test(test_segfault_leaves_truncated_trace),
      cmocka_unit_test(test_sigterm_leaves_truncated_trace),
      cmocka_unit_test(test_exit_from_a_thread),
      cmocka_unit_test(test_exit_from_a_signal_handler),
      cmocka_unit_test(test_fork_child_writes_its_own_trace),
      cmocka_unit_test(test_closed_channel_is_reported),
      cmocka_unit_test(test_record_via_rt),
      cmocka_unit_test(test_record_via_rt_needs_the_runtime),
      cmocka_unit_test(test_sampling),
      cmocka_unit_test(test_long_forms),
      cmocka_unit_test(test_sites_name_source_lines),
      cmocka_unit_test(test_default_debug_info_is_read_by_valgrind),
      cmocka_unit_test(test_sim_live),
      cmocka_unit_test(test_registers_preserved),
      cmocka_unit_test(test_objects),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* memsnap-cc as CC of ordinary projects: build tests/rt/project with CC=memsnap-cc through
 * CMake and through make's implicit rules, and from an installed copy; then record the
 * program: every byte the histogram reads is in the trace
 * (n loads of 1 byte by histogram(), n read-modify-writes of its bins as load + store). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rt_util.h"
#include "testutil.h"

static void test_cmake_project(void **state) {
  (void)state;
  char *dir = test_tempdir();
  assert_int_equal(test_run("cd '%s' && CC='%s' cmake -S '%s' -B build -DCMAKE_BUILD_TYPE=Release "
                            "> configure.log 2>&1 && cmake --build build > build.log 2>&1",
                            dir, MEMSNAP_CC, MEMSNAP_RT_PROJECT),
                   0);
  assert_int_equal(test_run("cd '%s' && MEMSNAP_OUT=h.mtr build/histo 3000 > out", dir), 0);
  char path[1024];
  snprintf(path, sizeof path, "%s/h.mtr", dir);
  rt_trace trace;
  rt_trace_load(path, &trace);
  long byte_loads = 0, bin_loads = 0, bin_stores = 0;
  for (size_t i = 0; i < trace.count; i++) {
    const ms_access *a = &trace.accesses[i];
    if (strcmp(rt_trace_function(&trace, a), "histogram") != 0) continue;
    if (a->kind == MS_LOAD && a->size == 1) byte_loads++;
    if (a->kind == MS_LOAD && a->size == 8) bin_loads++;
    if (a->kind == MS_STORE && a->size == 8) bin_stores++;
  }
  assert_int_equal(byte_loads, 3000);
  assert_int_equal(bin_loads, 3000);
  assert_int_equal(bin_stores, 3000);
  rt_trace_free(&trace);
  test_rmdir(dir);
}

/* `CC=memsnap-cc make` with make's implicit rules. */
static void test_make_project(void **state) {
  (void)state;
  char *dir = test_tempdir();
  assert_int_equal(test_run("cd '%s' && make -s -f '%s/Makefile' VPATH='%s' CC='%s' "
                            "CFLAGS='-O2 -g -I%s' > build.log 2>&1",
                            dir, MEMSNAP_RT_PROJECT, MEMSNAP_RT_PROJECT, MEMSNAP_CC,
                            MEMSNAP_RT_PROJECT),
                   0);
  assert_int_equal(test_run("cd '%s' && MEMSNAP_OUT=h.mtr ./histo 700 > out", dir), 0);
  char path[1024];
  snprintf(path, sizeof path, "%s/h.mtr", dir);
  rt_trace trace;
  rt_trace_load(path, &trace);
  long byte_loads = 0;
  for (size_t i = 0; i < trace.count; i++)
    byte_loads += strcmp(rt_trace_function(&trace, &trace.accesses[i]), "histogram") == 0 &&
                  trace.accesses[i].kind == MS_LOAD && trace.accesses[i].size == 1;
  assert_int_equal(byte_loads, 700);
  rt_trace_free(&trace);
  test_rmdir(dir);
}

/* After `cmake --install`, the installed memsnap-cc and memsnap-c++ find the installed
 * runtime, and MEMSNAP_OUT works with the installed memsnap as the writer. */
static void test_installed(void **state) {
  (void)state;
  char *dir = test_tempdir();
  assert_int_equal(test_run("cmake --install '%s' --prefix '%s/inst' > install.log 2>&1",
                            test_env("MEMSNAP_BUILD_DIR"), dir),
                   0);
  assert_int_equal(test_run("cd '%s' && inst/bin/memsnap-cc -O2 -g -o histo '%s/main.c' "
                            "'%s/histogram.c' -I'%s' && inst/bin/memsnap-c++ --version > /dev/null",
                            dir, MEMSNAP_RT_PROJECT, MEMSNAP_RT_PROJECT, MEMSNAP_RT_PROJECT),
                   0);
  assert_int_equal(test_run("cd '%s' && MEMSNAP_BIN=inst/bin/memsnap MEMSNAP_OUT=h.mtr ./histo 500 "
                            "> out && inst/bin/memsnap info h.mtr > info",
                            dir),
                   0);
  char path[1024];
  snprintf(path, sizeof path, "%s/info", dir);
  char *info = test_read_file(path);
  assert_non_null(info);
  assert_non_null(strstr(info, "capture:       rt"));
  free(info);
  test_rmdir(dir);
}

/* Bytes of one kind in one function, and its accesses wider than 16 bytes. */
static long function_bytes(const rt_trace *trace, const char *function, ms_access_kind kind,
                           long *wide) {
  long bytes = 0;
  for (size_t i = 0; i < trace->count; i++) {
    const ms_access *a = &trace->accesses[i];
    if (a->kind != kind || strcmp(rt_trace_function(trace, a), function) != 0) continue;
    bytes += a->size;
    *wide += a->size > 16;
  }
  return bytes;
}

/* Vectorized loops: SanitizerCoverage has no callback for 32- or 64-byte accesses, so
 * memsnap-cc keeps vectors at 16 bytes. stream_add(n) at -O3 with AVX2 and with AVX-512
 * (as -march=native gives on such a CPU) reads 2 x 8n bytes and writes 8n in stream_add,
 * and main writes 2 x 8n initializing b and c: every one of those bytes is in the trace
 * (before, none of stream_add's at -march=native). */
static void test_wide_vectors(void **state) {
  (void)state;
  static const char *const flags[] = {"-mavx2", "-mavx512f", "-march=native"};
  const int supported[] = {__builtin_cpu_supports("avx2"), __builtin_cpu_supports("avx512f"), 1};
  static const char *const feature[] = {"AVX2", "AVX-512"};
  const long n = 3000;
  char *dir = test_tempdir();
  int built = 0;
  for (int f = 0; f < 3; f++) {
    if (!supported[f]) {
      print_message("this CPU has no %s: %s not run\n", feature[f], flags[f]);
      continue;
    }
    assert_int_equal(test_run("cd '%s' && '%s' -O3 -g %s -o sa '%s/../../kernels/stream_add.c' "
                              "&& MEMSNAP_OUT=sa.mtr ./sa %ld > out",
                              dir, MEMSNAP_CC, flags[f], MEMSNAP_RT_PROJECT, n),
                     0);
    char path[1024];
    snprintf(path, sizeof path, "%s/sa.mtr", dir);
    rt_trace trace;
    rt_trace_load(path, &trace);
    long wide = 0;
    assert_int_equal(function_bytes(&trace, "stream_add", MS_LOAD, &wide), 2 * 8 * n);
    assert_int_equal(function_bytes(&trace, "stream_add", MS_STORE, &wide), 8 * n);
    assert_int_equal(function_bytes(&trace, "main", MS_STORE, &wide), 2 * 8 * n);
    assert_int_equal(wide, 0);
    rt_trace_free(&trace);
    built++;
  }
  assert_true(built >= 1); /* -march=native always runs */
  test_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cmake_project), cmocka_unit_test(test_make_project),
      cmocka_unit_test(test_installed), cmocka_unit_test(test_wide_vectors)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

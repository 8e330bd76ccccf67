#include "rt_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

void rt_trace_load(const char *path, rt_trace *trace) {
  trace->source = NULL;
  int rc = ms_mtr_open(path, &trace->source);
  if (rc < 0) fprintf(stderr, "%s: %s\n", path, ms_error_message());
  assert_int_equal(rc, 0);
  size_t capacity = 1 << 16;
  trace->accesses = malloc(capacity * sizeof *trace->accesses);
  trace->count = 0;
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  for (;;) {
    int n = ms_source_next(trace->source, &batch);
    assert_true(n >= 0);
    if (n == 0) break;
    if (trace->count + (size_t)n > capacity) {
      while (trace->count + (size_t)n > capacity)
        capacity *= 2;
      trace->accesses = realloc(trace->accesses, capacity * sizeof *trace->accesses);
      assert_non_null(trace->accesses);
    }
    for (int i = 0; i < n; i++)
      trace->accesses[trace->count++] = batch.accesses[i];
  }
  ms_batch_free(&batch);
}

void rt_trace_free(rt_trace *trace) {
  free(trace->accesses);
  ms_source_destroy(trace->source);
}

const ms_stream_info *rt_trace_info(const rt_trace *trace) { return ms_source_info(trace->source); }

const char *rt_trace_function(const rt_trace *trace, const ms_access *access) {
  const ms_site *site = ms_site_table_get(rt_trace_info(trace)->sites, access->site);
  return site && site->function ? site->function : "";
}

const char *rt_kernel(const char *name, char *buf, size_t size) {
  snprintf(buf, size, "%s/%s", MEMSNAP_RT_KERNELS, name);
  return buf;
}

/* Shared by the rt tests: whole traces in memory, kernel paths, running a kernel. */
#ifndef MEMSNAP_TEST_RT_UTIL_H
#define MEMSNAP_TEST_RT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"
#include "memsnap/trace.h"

typedef struct rt_trace {
  ms_source *source; /* kept open: its info (sites, flags) describes the trace */
  ms_access *accesses;
  size_t count;
} rt_trace;

/* Reads every access of a .mtr file (cmocka assertions on failure). */
void rt_trace_load(const char *path, rt_trace *trace);
void rt_trace_free(rt_trace *trace);
const ms_stream_info *rt_trace_info(const rt_trace *trace);
/* Function name of an access's site, "" if unknown. */
const char *rt_trace_function(const rt_trace *trace, const ms_access *access);

/* MEMSNAP_RT_KERNELS/name into buf. */
const char *rt_kernel(const char *name, char *buf, size_t size);

#endif

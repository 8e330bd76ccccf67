/* vgpreload_memsnapobj: the allocation functions of libc, wrapped (not replaced: glibc's own
 * malloc still runs, and its accesses stay in the trace), each telling the memsnap tool
 * through a client request what it allocated or freed. Valgrind preloads this library into
 * every program run under the tool's second name, memsnapobj (data objects on:
 * VALGRIND_LIB/vgpreload_memsnapobj-PLATFORM.so); the tool does not instrument its code, so
 * the wrappers add no accesses of their own.
 *
 * Built without libc (like Valgrind's own preload libraries): only valgrind.h's macros. */
#include <stddef.h>

#include "pub_tool_basics.h"
#include "pub_tool_redir.h"
#include "valgrind.h"

#include "../protocol.h"

/* the caller's return address goes along: the tool finds the allocating call's site by it
 * without unwinding the stack, once it has seen the call */
#define ALLOC(p, n)                                                                                \
  VALGRIND_DO_CLIENT_REQUEST_STMT(MS_REQ_ALLOC, (p), (n), __builtin_return_address(0), 0, 0)
#define FREE(p) VALGRIND_DO_CLIENT_REQUEST_STMT(MS_REQ_FREE, (p), 0, 0, 0, 0)

#define WRAP(name) I_WRAP_SONAME_FNNAME_ZU(VG_Z_LIBC_SONAME, name)

void *WRAP(malloc)(size_t n);
void *WRAP(malloc)(size_t n) {
  OrigFn fn;
  void *r;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_W_W(r, fn, n);
  if (r) ALLOC(r, n);
  return r;
}

void *WRAP(calloc)(size_t n, size_t size);
void *WRAP(calloc)(size_t n, size_t size) {
  OrigFn fn;
  void *r;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_W_WW(r, fn, n, size);
  if (r) ALLOC(r, n * size);
  return r;
}

void *WRAP(realloc)(void *p, size_t n);
void *WRAP(realloc)(void *p, size_t n) {
  OrigFn fn;
  void *r;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_W_WW(r, fn, p, n);
  if (r) { /* moved or resized: the old block ends, a new one begins */
    if (p) FREE(p);
    ALLOC(r, n);
  } else if (p && n == 0) {
    FREE(p);
  }
  return r;
}

void *WRAP(reallocarray)(void *p, size_t n, size_t size);
void *WRAP(reallocarray)(void *p, size_t n, size_t size) {
  OrigFn fn;
  void *r;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_W_WWW(r, fn, p, n, size);
  if (r) {
    if (p) FREE(p);
    ALLOC(r, n * size);
  }
  return r;
}

void WRAP(free)(void *p);
void WRAP(free)(void *p) {
  OrigFn fn;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_v_W(fn, p);
  if (p) FREE(p);
}

void *WRAP(memalign)(size_t alignment, size_t n);
void *WRAP(memalign)(size_t alignment, size_t n) {
  OrigFn fn;
  void *r;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_W_WW(r, fn, alignment, n);
  if (r) ALLOC(r, n);
  return r;
}

void *WRAP(aligned_alloc)(size_t alignment, size_t n);
void *WRAP(aligned_alloc)(size_t alignment, size_t n) {
  OrigFn fn;
  void *r;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_W_WW(r, fn, alignment, n);
  if (r) ALLOC(r, n);
  return r;
}

int WRAP(posix_memalign)(void **out, size_t alignment, size_t n);
int WRAP(posix_memalign)(void **out, size_t alignment, size_t n) {
  OrigFn fn;
  int r;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_W_WWW(r, fn, out, alignment, n);
  if (r == 0 && *out) ALLOC(*out, n);
  return r;
}

void *WRAP(valloc)(size_t n);
void *WRAP(valloc)(size_t n) {
  OrigFn fn;
  void *r;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_W_W(r, fn, n);
  if (r) ALLOC(r, n);
  return r;
}

void *WRAP(pvalloc)(size_t n);
void *WRAP(pvalloc)(size_t n) {
  OrigFn fn;
  void *r;
  VALGRIND_GET_ORIG_FN(fn);
  CALL_FN_W_W(r, fn, n);
  if (r) ALLOC(r, n);
  return r;
}

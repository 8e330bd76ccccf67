/* memsnap error codes.
 *
 * Library functions return 0 (MS_OK) or a negative ms_status; they never print or exit.
 * The detail of the most recent failure on the calling thread (which file, which offset,
 * which option) is kept in a thread-local buffer, like dlerror(): ms_error_message().
 */
#ifndef MEMSNAP_ERROR_H
#define MEMSNAP_ERROR_H

#include <stdarg.h>

#include "memsnap/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ms_status {
  MS_OK = 0,
  MS_ERR_IO = -1,          /* open/read/write failed (errno in the message) */
  MS_ERR_FORMAT = -2,      /* malformed or corrupt input; message names file and offset */
  MS_ERR_NOMEM = -3,       /* allocation failed */
  MS_ERR_ARG = -4,         /* bad argument or option; message names it */
  MS_ERR_UNSUPPORTED = -5, /* valid but not handled (e.g. a newer format version) */
  MS_ERR_CHILD = -6,       /* the observed program or the capture tool failed to start */
  MS_ERR_TRUNCATED = -7,   /* input ends before it should; message names file and offset */
} ms_status;

/* A short constant name for a status ("format error", ...). */
MS_API const char *ms_status_name(int status);

/* Records a detailed message for the calling thread and returns `status`, so that
 * failing paths read `return ms_error_set(MS_ERR_FORMAT, "%s: offset %llu: bad magic", ...)`. */
MS_API int ms_error_set(int status, const char *format, ...) __attribute__((format(printf, 2, 3)));
MS_API int ms_error_setv(int status, const char *format, va_list args);
#ifdef __clang_analyzer__
/* clang-tidy analyzes one file at a time and cannot see that ms_error_set returns its
 * first argument (a negative ms_status on every failing path); without this it explores
 * "error set but status 0" paths that cannot happen. Compiled code never sees this macro. */
#define ms_error_set(status, ...) (ms_error_set((status), __VA_ARGS__), (status))
#endif

/* The calling thread's last detailed message, or the status name if none was set. */
MS_API const char *ms_error_message(void);
MS_API void ms_error_clear(void);

#ifdef __cplusplus
}
#endif

#endif

/* Thread-local error detail (see memsnap/error.h). */
#include "memsnap/error.h"

#include <stdio.h>

#undef ms_error_set /* the analysis-only macro of error.h; this file defines the function */

static _Thread_local char last_message[512];

const char *ms_status_name(int status) {
  switch (status) {
  case MS_OK: return "success";
  case MS_ERR_IO: return "input/output error";
  case MS_ERR_FORMAT: return "format error";
  case MS_ERR_NOMEM: return "out of memory";
  case MS_ERR_ARG: return "invalid argument";
  case MS_ERR_UNSUPPORTED: return "unsupported";
  case MS_ERR_CHILD: return "observed program failed";
  case MS_ERR_TRUNCATED: return "truncated input";
  default: return "unknown error";
  }
}

int ms_error_setv(int status, const char *format, va_list args) {
  vsnprintf(last_message, sizeof last_message, format, args);
  return status;
}

int ms_error_set(int status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  ms_error_setv(status, format, args);
  va_end(args);
  return status;
}

const char *ms_error_message(void) { return last_message[0] ? last_message : "unknown error"; }

void ms_error_clear(void) { last_message[0] = '\0'; }

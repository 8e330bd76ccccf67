/* The line reader of the .psnap parsers (both versions): the text a line at a time, skipping
 * blank and comment lines, and the words, numbers and quoted strings of a line, with errors
 * that name file:line:column. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "profile_internal.h"

void profile_read_error_message(const reader *r, const char *format, ...) {
  char message[256];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  ms_error_set(MS_ERR_FORMAT, "%s:%u:%u: %s", r->name, r->number, (unsigned)(r->p - r->line) + 1,
               message);
}

/* Next line that is not blank or a comment; 0 at the end. */
int profile_next_line(reader *r) {
  while (r->next < r->text_end) {
    r->line = r->next;
    const char *newline = memchr(r->line, '\n', (size_t)(r->text_end - r->line));
    r->end = newline ? newline : r->text_end;
    r->next = newline ? newline + 1 : r->text_end;
    r->number++;
    r->p = r->line;
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t'))
      r->p++;
    if (r->p < r->end && *r->p != '#') return 1;
  }
  r->line = r->p = r->end = r->text_end;
  return 0;
}

int profile_key_is(reader *r, const char *key) {
  size_t n = strlen(key);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, key, n) != 0) return 0;
  if (r->p + n < r->end && r->p[n] != ' ') return 0;
  r->p += n;
  while (r->p < r->end && *r->p == ' ')
    r->p++;
  return 1;
}

/* Reads the word at r->p (up to a space or the end of the line) into `buf`, empty if it
 * does not fit; returns where the word starts, for error columns. */
const char *profile_read_word(reader *r, char *buf, size_t size) {
  const char *start = r->p;
  while (r->p < r->end && *r->p != ' ')
    r->p++;
  size_t length = (size_t)(r->p - start);
  buf[0] = 0;
  if (length < size) memcpy(buf, start, length), buf[length] = 0;
  return start;
}

int profile_read_unsigned(reader *r, int base, uint64_t *value) {
  const char *start = r->p;
  if (base == 16) {
    if (r->end - r->p < 3 || r->p[0] != '0' || r->p[1] != 'x')
      return read_error(r, "expected a hexadecimal number 0x...");
    r->p += 2;
  }
  uint64_t v = 0;
  int digits = 0;
  for (; r->p < r->end; r->p++, digits++) {
    int d;
    char c = *r->p;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (base == 16 && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')
      d = (c | 0x20) - 'a' + 10;
    else
      break;
    if (__builtin_mul_overflow(v, (uint64_t)base, &v) ||
        __builtin_add_overflow(v, (uint64_t)d, &v)) {
      r->p = start;
      return read_error(r, "number overflows 64 bits");
    }
  }
  if (!digits) return read_error(r, "expected a number");
  *value = v;
  while (r->p < r->end && *r->p == ' ')
    r->p++;
  return 0;
}

int profile_read_end(reader *r) {
  if (r->p != r->end) return read_error(r, "unexpected text at the end of the line");
  return 0;
}

int profile_read_number_line(reader *r, int base, uint64_t *value) {
  int rc = profile_read_unsigned(r, base, value);
  return rc < 0 ? rc : profile_read_end(r);
}

/* A quoted string at r->p (\n, \t and \X escapes) into a malloc'd *out; r->p goes past it. */
int profile_scan_quoted(reader *r, char **out) {
  if (r->p >= r->end || *r->p != '"') return read_error(r, "expected a quoted string");
  char *text = malloc((size_t)(r->end - r->p) + 1), *q = text;
  if (!text) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  for (r->p++; r->p < r->end && *r->p != '"'; r->p++) {
    if (*r->p == '\\' && r->p + 1 < r->end) {
      r->p++;
      *q++ = *r->p == 'n' ? '\n' : *r->p == 't' ? '\t' : *r->p;
    } else
      *q++ = *r->p;
  }
  *q = 0;
  if (r->p >= r->end) {
    free(text);
    return read_error(r, "unterminated string");
  }
  r->p++;
  *out = text;
  return 0;
}

/* A quoted string that ends the line. */
int profile_read_quoted(reader *r, char **out) {
  char *text = NULL;
  int rc = profile_scan_quoted(r, &text);
  if (rc < 0) return rc;
  rc = profile_read_end(r);
  if (rc < 0)
    free(text);
  else
    *out = text;
  return rc;
}

char *profile_copy_rest(reader *r) {
  size_t n = (size_t)(r->end - r->p);
  char *text = malloc(n + 1);
  if (text) memcpy(text, r->p, n), text[n] = 0;
  r->p = r->end;
  return text;
}

int profile_read_set(reader *r, uint64_t largest, uint32_t *first, uint32_t *step,
                     uint32_t *members) {
  uint64_t a, b = 0, s = 1;
  const char *start = r->p;
  int rc = profile_read_unsigned(r, 10, &a);
  if (rc < 0) return rc;
  int range = r->p + 2 <= r->end && r->p[-1] != ' ' && r->p[0] == '.' && r->p[1] == '.';
  if (range) {
    r->p += 2;
    if ((rc = profile_read_unsigned(r, 10, &b)) < 0) return rc;
    if (r->p < r->end && *r->p == ':' && r->p[-1] != ' ') {
      r->p++;
      if ((rc = profile_read_unsigned(r, 10, &s)) < 0) return rc;
    }
  }
  if (a > largest || b > largest) {
    r->p = start;
    return read_error(r, "number too large (at most %" PRIu64 ")", largest);
  }
  *first = (uint32_t)a;
  *step = 1;
  *members = 1;
  if (range) {
    if (b <= a || s == 0 || s > UINT32_MAX || (b - a) % s != 0) {
      r->p = start;
      return read_error(r, "a set is A..B or A..B:STEP, A below B, B - A a multiple of STEP");
    }
    if ((b - a) / s + 1 > UINT32_MAX) return read_error(r, "set too large");
    *step = (uint32_t)s;
    *members = (uint32_t)((b - a) / s + 1);
  }
  return 0;
}

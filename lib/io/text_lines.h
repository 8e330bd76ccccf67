/* Line-by-line reading of text traces (Lackey, din) in constant memory, plus the small
 * hand-rolled number parsers they share. A 1 MiB buffer is refilled with fread and lines
 * are found with memchr: no per-line allocation, no stdio per line. */
#ifndef MEMSNAP_IO_TEXT_LINES_H
#define MEMSNAP_IO_TEXT_LINES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memsnap/output.h"

#define TEXT_LINE_BUFFER_BYTES (1u << 20)

typedef struct text_lines {
  FILE *file;
  char *path;
  char *buffer;
  size_t filled, position;
  size_t last_position; /* where the line last returned starts (for text_lines_unread) */
  uint64_t line_number; /* of the line last returned, from 1 */
  int at_eof;
} text_lines;

int text_lines_open(text_lines *lines, const char *path);
/* Returns 1 with the next line (without its newline, not NUL-terminated), 0 at the end,
 * or a negative status. */
int text_lines_next(text_lines *lines, const char **line, size_t *length);
/* Gives back the line last returned, so the next call returns it again. */
void text_lines_unread(text_lines *lines);
void text_lines_close(text_lines *lines);

/* "PATH:LINE: malformed KIND line: 'TEXT'" (TEXT cut to 60 characters); MS_ERR_FORMAT. */
int text_lines_malformed(const text_lines *lines, const char *kind, const char *line,
                         size_t length);

/* Parses hex digits at *p (at most 16, no prefix) up to end; advances *p. Returns 0, or -1 if
 * there is no digit or more than 16. */
static inline int parse_hex(const char **p, const char *end, uint64_t *out) {
  const char *q = *p;
  uint64_t v = 0;
  int digits = 0;
  for (; q < end; q++, digits++) {
    unsigned c = (unsigned char)*q, d;
    if (c - '0' < 10)
      d = c - '0';
    else if ((c | 0x20) - 'a' < 6)
      d = (c | 0x20) - 'a' + 10;
    else
      break;
    v = v << 4 | d;
  }
  if (digits == 0 || digits > 16) return -1;
  *p = q;
  *out = v;
  return 0;
}

/* Parses a decimal of at most 9 digits; same contract as parse_hex. */
static inline int parse_decimal(const char **p, const char *end, uint32_t *out) {
  const char *q = *p;
  uint32_t v = 0;
  int digits = 0;
  for (; q < end && (unsigned)(*q - '0') < 10; q++, digits++)
    v = v * 10 + (uint32_t)(*q - '0');
  if (digits == 0 || digits > 9) return -1;
  *p = q;
  *out = v;
  return 0;
}

/* The name of a writer's target for messages ("standard output" for "-"). */
static inline const char *output_name(const ms_output *out) {
  return out->path ? out->path : "standard output";
}

static inline const char *skip_blanks(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
    p++;
  return p;
}

#endif

/* Line reader for text traces (see text_lines.h). */
#include "text_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/input.h"

int text_lines_open(text_lines *lines, const char *path) {
  memset(lines, 0, sizeof *lines);
  lines->path = strdup(ms_input_name(path));
  lines->buffer = malloc(TEXT_LINE_BUFFER_BYTES);
  if (!lines->path || !lines->buffer) {
    text_lines_close(lines);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for a trace reader");
  }
  int rc = ms_input_open(path, &lines->file); /* a stream: its first bytes, kept, then on */
  if (rc < 0) text_lines_close(lines);
  return rc;
}

int text_lines_next(text_lines *lines, const char **line, size_t *length) {
  for (;;) {
    char *start = lines->buffer + lines->position;
    size_t available = lines->filled - lines->position;
    char *newline = memchr(start, '\n', available);
    if (newline || (lines->at_eof && available)) {
      *line = start;
      lines->last_position = lines->position;
      *length = newline ? (size_t)(newline - start) : available;
      lines->position += *length + (newline != NULL);
      lines->line_number++;
      return 1;
    }
    if (lines->at_eof) return 0;
    if (available == TEXT_LINE_BUFFER_BYTES)
      return ms_error_set(MS_ERR_FORMAT, "%s:%llu: line longer than %u bytes", lines->path,
                          (unsigned long long)lines->line_number + 1, TEXT_LINE_BUFFER_BYTES);
    memmove(lines->buffer, start, available);
    lines->filled = available;
    lines->position = 0;
    size_t got =
        fread(lines->buffer + available, 1, TEXT_LINE_BUFFER_BYTES - available, lines->file);
    lines->filled += got;
    if (got == 0) {
      if (ferror(lines->file))
        return ms_error_set(MS_ERR_IO, "%s: read failed: %s", lines->path, strerror(errno));
      lines->at_eof = 1;
    }
  }
}

void text_lines_unread(text_lines *lines) {
  lines->position = lines->last_position;
  lines->line_number--;
}

void text_lines_close(text_lines *lines) {
  if (lines->file) fclose(lines->file);
  free(lines->path);
  free(lines->buffer);
  memset(lines, 0, sizeof *lines);
}

int text_lines_malformed(const text_lines *lines, const char *kind, const char *line,
                         size_t length) {
  int shown = length > 60 ? 60 : (int)length;
  return ms_error_set(MS_ERR_FORMAT, "%s:%llu: malformed %s line: '%.*s%s'", lines->path,
                      (unsigned long long)lines->line_number, kind, shown, line,
                      length > 60 ? "..." : "");
}

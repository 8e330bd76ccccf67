/* Trace formats: detection and dispatch (see memsnap/trace.h).
 *
 * Detection looks at the first 4 KiB: the .mtr magic; else the first line that is not
 * blank, a Valgrind "==pid==" message or a '#' comment: "I  hex,n" or " L|S|M hex,n" is
 * Lackey, "digit blank hex..." is din. Only when the content says nothing (an empty or
 * unreadable file) does the extension decide. The look goes through ms_input_peek, so that
 * a stream (standard input, a pipe, a FIFO) keeps those bytes for its reader.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memsnap/error.h"
#include "memsnap/input.h"
#include "memsnap/trace.h"
#include "mtr_internal.h"
#include "text_lines.h"

ms_trace_format ms_trace_format_from_extension(const char *path) {
  const char *dot = strrchr(path, '.');
  if (!dot || strchr(dot, '/')) return MS_FORMAT_UNKNOWN;
  if (strcasecmp(dot, ".mtr") == 0) return MS_FORMAT_MTR;
  if (strcasecmp(dot, ".lackey") == 0) return MS_FORMAT_LACKEY;
  if (strcasecmp(dot, ".din") == 0) return MS_FORMAT_DIN;
  return MS_FORMAT_UNKNOWN;
}

const char *ms_trace_format_name(ms_trace_format format) {
  switch (format) {
  case MS_FORMAT_MTR: return "mtr";
  case MS_FORMAT_LACKEY: return "lackey";
  case MS_FORMAT_DIN: return "din";
  default: return "unknown";
  }
}

static int is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* The format of one text line, or UNKNOWN; *skip is set for lines that say nothing. */
static ms_trace_format classify_line(const char *line, const char *end, int *skip) {
  const char *p = skip_blanks(line, end);
  *skip = p == end || *p == '#' || (end - line >= 2 && line[0] == '=' && line[1] == '=');
  if (*skip) return MS_FORMAT_UNKNOWN;
  if (end - line >= 4 &&
      ((line[0] == 'I' && line[1] == ' ') ||
       (line[0] == ' ' && line[1] && strchr("LSM", line[1]) && line[2] == ' '))) {
    const char *q = skip_blanks(line + 2, end);
    uint64_t address;
    if (parse_hex(&q, end, &address) == 0 && q < end && *q == ',') return MS_FORMAT_LACKEY;
  }
  if (*p >= '0' && *p <= '4' && p + 2 < end && (p[1] == ' ' || p[1] == '\t')) {
    const char *q = skip_blanks(p + 1, end);
    if (q < end && is_hex_digit(*q)) return MS_FORMAT_DIN;
  }
  return MS_FORMAT_UNKNOWN;
}

ms_trace_format ms_trace_detect(const char *path) {
  char head[4096];
  size_t n = 0;
  if (ms_input_peek(path, 0, head, sizeof head, &n) < 0) n = 0;
  if (n >= MTR_MAGIC_BYTES && memcmp(head, MTR_MAGIC, MTR_MAGIC_BYTES) == 0) return MS_FORMAT_MTR;
  for (const char *line = head, *end = head + n; line < end;) {
    const char *newline = memchr(line, '\n', (size_t)(end - line));
    if (!newline && n == sizeof head) break; /* a cut line proves nothing */
    const char *line_end = newline ? newline : end;
    int skip;
    ms_trace_format format = classify_line(line, line_end, &skip);
    if (!skip) {
      if (format != MS_FORMAT_UNKNOWN) return format;
      break;
    }
    line = line_end + 1;
  }
  return ms_trace_format_from_extension(path);
}

int ms_trace_open(const char *path, ms_source **out) {
  *out = NULL;
  switch (ms_trace_detect(path)) {
  case MS_FORMAT_MTR: return ms_mtr_open(path, out);
  case MS_FORMAT_LACKEY: return ms_lackey_open(path, out);
  case MS_FORMAT_DIN: return ms_din_open(path, out);
  default: break;
  }
  char head[32] = "";
  size_t n;
  int rc = ms_input_peek(path, 0, head, sizeof head - 1, &n);
  if (rc < 0) return rc;
  head[n] = '\0';
  const char *name = ms_input_name(path);
  if (n == 0) return ms_error_set(MS_ERR_FORMAT, "%s: empty (no trace in it)", name);
  if (strncmp(head, "memsnap signature ", 18) == 0)
    return ms_error_set(MS_ERR_FORMAT,
                        "%s: a memory signature holds no accesses (`memsnap synth` makes a "
                        "trace seed of it)",
                        name);
  if (n >= 4 && !memcmp(head, "\x28\xb5\x2f\xfd", 4))
    return ms_error_set(MS_ERR_FORMAT,
                        "%s: zstd-compressed data, not a compressed .psnap profile (memsnap "
                        "reads compressed profiles only: decompress traces first, e.g. zstd "
                        "-dc FILE | memsnap COMMAND -)",
                        name);
  return ms_error_set(MS_ERR_FORMAT,
                      "%s: offset 0: not a trace memsnap reads (.mtr, trace seeds, .psnap "
                      "profiles, Lackey or din)",
                      name);
}

int ms_trace_sink_new(const char *path, ms_trace_format format, ms_sink **out) {
  *out = NULL;
  switch (format) {
  case MS_FORMAT_MTR: return ms_mtr_sink_new(path, out);
  case MS_FORMAT_DIN: return ms_din_sink_new(path, out);
  case MS_FORMAT_LACKEY:
    return ms_error_set(MS_ERR_UNSUPPORTED,
                        "%s: memsnap reads Lackey traces but does not "
                        "write them (write .mtr or .din)",
                        path);
  default:
    return ms_error_set(MS_ERR_ARG, "%s: unknown output format (use .mtr or .din, or --to)", path);
  }
}

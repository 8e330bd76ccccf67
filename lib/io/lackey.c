/* Valgrind Lackey --trace-mem=yes reader.
 *
 * Lackey prints "I  %08lx,%lu" for each instruction and " L|S|M %08lx,%lu" for each data
 * access, in program order, from all threads serialized without a thread id. Every data
 * access gets as its site the instruction line before it (its pc goes into the site table,
 * object and location unknown), so per-instruction analyses work on Lackey traces too. Lines
 * starting with "==" are Valgrind's messages; "== Command: PROG ARGS" names the program.
 * Sizes above 255 bytes (rare: fxsave, ...) are saturated to 255, the largest an access
 * record holds. Threads are not distinguishable: every access is thread 0.
 */
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/trace.h"
#include "text_lines.h"

typedef struct lackey_reader {
  ms_source source;
  text_lines lines;
  uint64_t site_pc;  /* pc of the last instruction line */
  uint32_t site;     /* its site, MS_SITE_NONE before the first */
  int site_resolved; /* site matches site_pc */
  int seen_instruction;
} lackey_reader;

/* "==123== Command: prog a b" -> program and arguments (split at spaces, as Valgrind
 * joined them). */
static int parse_command(lackey_reader *r, const char *line, size_t length) {
  static const char marker[] = "== Command: ";
  const char *end = line + length;
  const char *found = NULL;
  for (const char *p = line + 2; p + sizeof marker - 1 <= end; p++)
    if (memcmp(p, marker, sizeof marker - 1) == 0) {
      found = p + sizeof marker - 1;
      break;
    }
  if (!found || r->source.info.program) return MS_OK;
  char *text = strndup(found, (size_t)(end - found));
  char **argv = calloc((size_t)(end - found) / 2 + 2, sizeof *argv);
  int rc = MS_OK, argc = 0;
  if (!text || !argv) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  for (char *save = NULL, *word = text ? strtok_r(text, " \r", &save) : NULL; word && rc == 0;
       word = strtok_r(NULL, " \r", &save))
    argv[argc++] = word;
  if (rc == 0 && argc > 0) rc = ms_stream_info_set_program(&r->source.info, argv[0], argc, argv);
  free(argv);
  free(text);
  return rc;
}

/* Reads Valgrind's opening messages, so that the program is known before the first batch
 * (a writer's begin() records it). */
static int read_preamble(lackey_reader *r) {
  const char *line;
  size_t length;
  int rc;
  while ((rc = text_lines_next(&r->lines, &line, &length)) > 0) {
    if (length < 2 || line[0] != '=' || line[1] != '=') {
      text_lines_unread(&r->lines);
      return MS_OK;
    }
    if ((rc = parse_command(r, line, length)) < 0) return rc;
  }
  return rc;
}

static int lackey_next(ms_source *source, ms_batch *batch) {
  lackey_reader *r = (lackey_reader *)source;
  batch->count = 0;
  const char *line;
  size_t length;
  int rc = 0;
  while (batch->count < batch->capacity && (rc = text_lines_next(&r->lines, &line, &length)) > 0) {
    const char *end = line + length, *p = line;
    if (length == 0 || (length >= 2 && line[0] == '=' && line[1] == '=')) {
      if (length && (rc = parse_command(r, line, length)) < 0) return rc;
      continue;
    }
    int kind;
    if (length >= 3 && line[0] == 'I' && line[1] == ' ')
      kind = -1;
    else if (length >= 3 && line[0] == ' ' && line[2] == ' ' && line[1] == 'L')
      kind = MS_LOAD;
    else if (length >= 3 && line[0] == ' ' && line[2] == ' ' && line[1] == 'S')
      kind = MS_STORE;
    else if (length >= 3 && line[0] == ' ' && line[2] == ' ' && line[1] == 'M')
      kind = MS_MODIFY;
    else
      return text_lines_malformed(&r->lines, "lackey", line, length);
    p = skip_blanks(p + 2, end);
    uint64_t address;
    uint32_t size;
    if (parse_hex(&p, end, &address) < 0 || p == end || *p++ != ',' ||
        parse_decimal(&p, end, &size) < 0 || skip_blanks(p, end) != end || size == 0)
      return text_lines_malformed(&r->lines, "lackey", line, length);
    if (kind < 0) {
      if (address != r->site_pc || !r->seen_instruction) {
        r->site_pc = address;
        r->site_resolved = 0;
        r->seen_instruction = 1;
      }
      continue;
    }
    if (!r->site_resolved) {
      int64_t id = ms_site_table_find(r->source.info.sites, r->site_pc);
      if (id < 0) id = ms_site_table_add(r->source.info.sites, r->site_pc, NULL, NULL, NULL, 0);
      if (id < 0) return (int)id;
      r->site = (uint32_t)id;
      r->site_resolved = 1;
    }
    batch->accesses[batch->count++] = (ms_access){.address = address,
                                                  .site = r->site,
                                                  .thread = 0,
                                                  .size = (uint8_t)(size > 255 ? 255 : size),
                                                  .kind = (uint8_t)kind};
  }
  return rc < 0 ? rc : (int)batch->count;
}

static void lackey_destroy(ms_source *source) {
  lackey_reader *r = (lackey_reader *)source;
  text_lines_close(&r->lines);
  ms_stream_info_clear(&r->source.info);
  free(r);
}

static const ms_source_ops lackey_ops = {lackey_next, NULL, lackey_destroy};

int ms_lackey_open(const char *path, ms_source **out) {
  *out = NULL;
  lackey_reader *r = calloc(1, sizeof *r);
  if (!r) return ms_error_set(MS_ERR_NOMEM, "out of memory for a Lackey reader");
  r->source.ops = &lackey_ops;
  r->site = MS_SITE_NONE;
  r->site_resolved = 1; /* no instruction seen yet: accesses have no site */
  ms_stream_info *info = &r->source.info;
  info->exit_status = -1;
  info->thread_count = 1;
  info->sites = ms_site_table_new();
  info->capture = strdup("lackey");
  if (!info->sites || !info->capture) {
    lackey_destroy(&r->source);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for a Lackey reader");
  }
  int rc = text_lines_open(&r->lines, path);
  if (rc == 0) rc = read_preamble(r);
  if (rc < 0) {
    lackey_destroy(&r->source);
    return rc;
  }
  *out = &r->source;
  return MS_OK;
}

/* The .psnap text format: writing and parsing (docs/formats.md, "The .psnap profile").
 *
 * Version 2 (written): a header of `key value` lines, then one line per site
 * (`s24 store 8 x100000 @0x4af0010 +8^99999 at stream_add.c:16 pc=0x1090e9 in main`,
 * defaults left out: thread 0, the class the pattern suggests, files relative to a
 * `source-dir` header line), indented continuation lines for lossy and lossless sites,
 * then one line per thread with its order. Version 1 (one `key value` line per field of
 * a site, blocks per site and thread) is still read. The writer emits every field in a
 * fixed order, so text -> parse -> text gives identical bytes. The parser accepts any
 * blanks before a key, names file:line:column on every error, and checks what replay
 * relies on: site numbers dense and in order, every site of an order known and of that
 * thread, each site's count equal to its uses in the order.
 * Exact addresses of --lossless sites: zigzag varint deltas, zstd, base64, one line.
 * Compressed profiles: the whole text through zstd (told by the zstd magic), decompressed
 * as a stream into at most MS_PSNAP_MAX_TEXT bytes: the frame header's size is not trusted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "memsnap/error.h"
#include "memsnap/input.h"
#include "memsnap/output.h"
#include "memsnap/psnap.h"

#define PSNAP_MAGIC "psnap 2"
#define PSNAP_MAGIC_1 "psnap 1" /* still read */

void ms_psnap_profile_free(ms_psnap_profile *profile) {
  for (uint32_t i = 0; i < profile->site_count; i++) {
    ms_psnap_expr_free(&profile->sites[i].pattern);
    free(profile->sites[i].addresses);
    free(profile->sites[i].histogram);
  }
  free(profile->sites);
  for (uint32_t t = 0; t < profile->thread_count; t++) {
    ms_psnap_thread_order *order = &profile->threads[t];
    ms_psnap_expr_free(&order->order);
    free(order->transition_from);
    free(order->transition_to);
    free(order->transition_times);
    free(order->transition_period);
  }
  free(profile->threads);
  free(profile->selection);
  ms_stream_info_clear(&profile->info);
  memset(profile, 0, sizeof *profile);
}

static int ensure_histogram(ms_psnap_site *site) {
  if (!site->histogram && !(site->histogram = calloc(MS_PSNAP_SEGMENTS, sizeof *site->histogram)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  return 0;
}

/* ---- writing ---- */

static void write_quoted(FILE *out, const char *text) {
  fputc('"', out);
  for (const char *p = text; *p; p++) {
    if (*p == '"' || *p == '\\')
      fputc('\\', out), fputc(*p, out);
    else if (*p == '\n')
      fputs("\\n", out);
    else if (*p == '\t')
      fputs("\\t", out);
    else
      fputc(*p, out);
  }
  fputc('"', out);
}

static const char base64_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int write_addresses(FILE *out, const uint64_t *addresses, uint64_t count) {
  size_t raw_capacity = (size_t)count * 10 + 16, raw_size = 0;
  uint8_t *raw = malloc(raw_capacity);
  if (!raw) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  uint64_t previous = 0;
  for (uint64_t i = 0; i < count; i++) {
    int64_t delta = (int64_t)(addresses[i] - previous);
    uint64_t zigzag = ((uint64_t)delta << 1) ^ (0 - ((uint64_t)delta >> 63));
    previous = addresses[i];
    do {
      raw[raw_size++] = (uint8_t)((zigzag & 0x7f) | (zigzag > 0x7f ? 0x80 : 0));
      zigzag >>= 7;
    } while (zigzag);
  }
  size_t bound = ZSTD_compressBound(raw_size);
  uint8_t *packed = malloc(bound);
  if (!packed) {
    free(raw);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  size_t packed_size = ZSTD_compress(packed, bound, raw, raw_size, 19);
  free(raw);
  if (ZSTD_isError(packed_size)) {
    free(packed);
    return ms_error_set(MS_ERR_NOMEM, "zstd: %s", ZSTD_getErrorName(packed_size));
  }
  fputs("  addresses zstd ", out);
  for (size_t i = 0; i < packed_size; i += 3) {
    uint32_t v = (uint32_t)packed[i] << 16;
    if (i + 1 < packed_size) v |= (uint32_t)packed[i + 1] << 8;
    if (i + 2 < packed_size) v |= packed[i + 2];
    char chunk[4] = {base64_digits[v >> 18], base64_digits[(v >> 12) & 63],
                     i + 1 < packed_size ? base64_digits[(v >> 6) & 63] : '=',
                     i + 2 < packed_size ? base64_digits[v & 63] : '='};
    fwrite(chunk, 1, 4, out);
  }
  fputc('\n', out);
  free(packed);
  return 0;
}

/* The class a site's storage and pattern suggest; written only when the site's differs:
 * a single stride (or none) is constant, any other exact pattern a simple repeat, a site
 * without a pattern undesignated. */
static ms_stride_class default_class(const ms_psnap_site *site) {
  const ms_psnap_expr *e = &site->pattern;
  if (site->lossy || site->addresses) return MS_STRIDE_UNDESIGNATED;
  if (!e->finished || e->nodes == NULL) return MS_STRIDE_CONSTANT;
  const ms_psnap_node *root = &e->nodes[e->root];
  if (root->count == 0) return MS_STRIDE_CONSTANT;
  if (root->count == 1 && e->nodes[e->children[root->first]].count == 0) return MS_STRIDE_CONSTANT;
  return MS_STRIDE_SIMPLE_REPEAT;
}

/* 1 if `file` lies in directory dir[0, length) at one '/' and can be written relative to
 * it: the parser's DIR/FILE then gives the path back. */
static int under_dir(const char *file, const char *dir, size_t length) {
  return !strncmp(file, dir, length) && file[length] == '/' && file[length + 1] != '/' &&
         file[length + 1] != '\0';
}

/* The `source-dir`: of the directories of the sites' source files, the one whose
 * shortening saves the most bytes (length of the directory in `*dir`, 0 if none). Only
 * when every file is absolute: the parser joins relative names to it. */
static size_t source_dir(const ms_psnap_profile *profile, const char **dir) {
  const char *best = NULL, *previous = NULL;
  size_t best_length = 0;
  uint64_t best_saved = 0;
  for (uint32_t i = 0; i < profile->site_count; i++) {
    const ms_site *where = ms_site_table_get(profile->info.sites, profile->sites[i].trace_site);
    if (!where || !where->file) continue;
    if (where->file[0] != '/') return 0;
    if (previous && !strcmp(previous, where->file)) continue; /* sites of one file in a row */
    previous = where->file;
    size_t length = (size_t)(strrchr(where->file, '/') - where->file);
    if (length < 2 || (best && length == best_length && !strncmp(best, where->file, length)))
      continue;
    uint64_t saved = 0;
    for (uint32_t j = 0; j < profile->site_count; j++) {
      const ms_site *other = ms_site_table_get(profile->info.sites, profile->sites[j].trace_site);
      if (other && other->file && under_dir(other->file, where->file, length)) saved += length + 1;
    }
    if (saved > best_saved) best = where->file, best_length = length, best_saved = saved;
  }
  *dir = best;
  return best ? best_length : 0;
}

/* A file as one token of a site line: quoted if it holds a blank, quote or backslash. */
static void write_file(FILE *out, const char *file) {
  if (file[0] == '"' || strpbrk(file, " \t\"\\\n"))
    write_quoted(out, file);
  else
    fputs(file, out);
}

/* One line per site (docs/formats.md): sN KIND SIZE xCOUNT [tTHREAD] @FIRST STORAGE
 * [class=C] [at FILE:LINE] [pc=PC] [in FUNCTION]; lossy and lossless sites continue on
 * indented lines. */
static int write_site(const ms_psnap_profile *profile, uint32_t id, const char *dir,
                      size_t dir_length, FILE *out) {
  const ms_psnap_site *site = &profile->sites[id];
  const ms_site *where = ms_site_table_get(profile->info.sites, site->trace_site);
  fprintf(out, "s%" PRIu32 " %s %u x%" PRIu64, id, ms_access_kind_name((ms_access_kind)site->kind),
          site->size, site->count);
  if (site->thread) fprintf(out, " t%u", site->thread);
  fprintf(out, " @0x%" PRIx64, site->first_address);
  int rc = 0;
  if (site->addresses)
    fputs(" lossless", out);
  else if (site->lossy)
    fprintf(out, " lossy range 0x%" PRIx64 " 0x%" PRIx64 " align %" PRIu64, site->low, site->high,
            site->alignment);
  else if (site->pattern.total) {
    fputc(' ', out);
    rc = ms_psnap_expr_print(&site->pattern, MS_PSNAP_STRIDES, out);
  }
  if (site->cls != default_class(site)) fprintf(out, " class=%s", ms_stride_class_name(site->cls));
  if (where && where->file) {
    fputs(" at ", out);
    write_file(out, dir_length && under_dir(where->file, dir, dir_length)
                        ? where->file + dir_length + 1
                        : where->file);
    fprintf(out, ":%" PRIu32, where->line);
  }
  if (where && where->pc) fprintf(out, " pc=0x%" PRIx64, where->pc);
  if (where && where->function && where->function[0]) fprintf(out, " in %s", where->function);
  fputc('\n', out);
  if (rc < 0) return rc;
  if (site->addresses) return write_addresses(out, site->addresses, site->count);
  if (site->lossy)
    for (int g = 0; g < MS_PSNAP_SEGMENTS; g++) {
      fputs("  histogram", out);
      for (int b = 0; b < MS_PSNAP_HISTOGRAM_BINS; b++)
        fprintf(out, " %" PRIu64, site->histogram[g][b]);
      fputc('\n', out);
    }
  if (site->lossy && site->stride_count) {
    uint64_t kept = 0;
    fputs("  strides", out);
    for (uint32_t i = 0; i < site->stride_count; i++) {
      fprintf(out, " %+" PRId64 ":%" PRIu64, site->top_stride[i], site->top_stride_times[i]);
      kept += site->top_stride_times[i];
    }
    fprintf(out, " other %" PRIu64 "\n", site->count - 1 - kept);
  }
  if (site->lossy && site->reuse_accesses) {
    static const char *const sizes[] = {"32:", "64:", "128:"};
    fprintf(out, "  reuse %s%" PRIu64, site->reuse_at_jumps ? "jumps " : "", site->reuse_accesses);
    for (int size = 0; size < MS_PSNAP_REUSE_SIZES; size++) {
      fprintf(out, " %s", sizes[size]);
      for (int b = 0; b < MS_PSNAP_REUSE_BINS; b++)
        fprintf(out, " %" PRIu64, site->reuse[size][b]);
    }
    fputc('\n', out);
  }
  if (site->lossy && site->tied)
    fprintf(out, "  tie s%u %+" PRId64 "\n", site->tie_site, site->tie_delta);
  return 0;
}

int ms_psnap_profile_write(const ms_psnap_profile *profile, FILE *out) {
  const ms_stream_info *info = &profile->info;
  fputs(PSNAP_MAGIC "\n# site: sN kind size xcount [tthread] @first strides (+8^9: 9 times +8)"
                    " [at file:line] [pc=] [in function]\n",
        out);
  if (info->program) {
    fputs("program ", out);
    write_quoted(out, info->program);
    fputc('\n', out);
  }
  for (int i = 0; i < info->argc; i++) {
    fputs("argument ", out);
    write_quoted(out, info->argv[i]);
    fputc('\n', out);
  }
  if (info->arch) fprintf(out, "arch %s\n", info->arch);
  if (info->capture) fprintf(out, "capture %s\n", info->capture);
  if (info->flags & MS_STREAM_SAMPLED)
    fprintf(out, "sampling on %" PRIu64 " off %" PRIu64 "\n", info->sample_on, info->sample_off);
  const char *selection = profile->selection ? profile->selection : "all";
  if (info->program && !strncmp(selection, "executable ", 11) &&
      !strcmp(selection + 11, info->program))
    fputs("selection executable\n", out); /* the program's own */
  else if (strcmp(selection, "all") != 0)
    fprintf(out, "selection %s\n", selection);
  if (profile->has_excluded) fprintf(out, "excluded %" PRIu64 "\n", profile->excluded);
  fprintf(out, "accesses %" PRIu64 "\nsites %" PRIu32 "\nthreads %" PRIu32 "\n",
          profile->access_count, profile->site_count, profile->thread_count);
  const char *dir = NULL;
  size_t dir_length = source_dir(profile, &dir);
  if (dir_length) fprintf(out, "source-dir %.*s\n", (int)dir_length, dir);
  for (uint32_t i = 0; i < profile->site_count; i++) {
    int rc = write_site(profile, i, dir, dir_length, out);
    if (rc < 0) return rc;
  }
  for (uint32_t t = 0; t < profile->thread_count; t++) {
    const ms_psnap_thread_order *order = &profile->threads[t];
    fprintf(out, "thread %" PRIu32 " accesses %" PRIu64 " order", t, order->accesses);
    if (!order->lossy) {
      if (order->order.total) fputc(' ', out);
      int rc = ms_psnap_expr_print(&order->order, MS_PSNAP_SITES, out);
      if (rc < 0) return rc;
      fputc('\n', out);
      continue;
    }
    fprintf(out, " lossy start s%" PRIu32, order->first_site);
    if (order->period_length) fprintf(out, " period %" PRIu64, order->period_length);
    fputc('\n', out);
    for (uint32_t k = 0; k < order->transition_count; k++) {
      if (order->period_length && order->transition_period &&
          (k == 0 || order->transition_period[k] != order->transition_period[k - 1]))
        fprintf(out, "  period %" PRIu32 "\n", order->transition_period[k]);
      fprintf(out, "  path s%" PRIu32 " s%" PRIu32 " %" PRIu64 "\n", order->transition_from[k],
              order->transition_to[k], order->transition_times[k]);
    }
  }
  return ferror(out) ? ms_error_set(MS_ERR_IO, "write failed: %m") : 0;
}

int ms_psnap_profile_write_compressed(const ms_psnap_profile *profile, FILE *out) {
  char *text = NULL;
  size_t size = 0;
  FILE *memory = open_memstream(&text, &size);
  if (!memory) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  int rc = ms_psnap_profile_write(profile, memory);
  if (fclose(memory) != 0 && rc == 0) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  size_t bound = ZSTD_compressBound(size);
  char *packed = rc == 0 ? malloc(bound) : NULL;
  if (rc == 0 && !packed) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (rc == 0) {
    /* level 19: a profile is kilobytes, compressing it takes milliseconds */
    size_t packed_size = ZSTD_compress(packed, bound, text, size, 19);
    if (ZSTD_isError(packed_size))
      rc = ms_error_set(MS_ERR_NOMEM, "zstd: %s", ZSTD_getErrorName(packed_size));
    else if (fwrite(packed, 1, packed_size, out) != packed_size)
      rc = ms_error_set(MS_ERR_IO, "write failed: %m");
  }
  free(packed);
  free(text);
  return rc;
}

int ms_psnap_profile_save(const ms_psnap_profile *profile, const char *path) {
  size_t n = strlen(path);
  return ms_psnap_profile_save_as(profile, path, n > 4 && !strcmp(path + n - 4, ".zst"));
}

int ms_psnap_profile_save_as(const ms_psnap_profile *profile, const char *path, int compress) {
  ms_output output;
  int rc = ms_output_open(&output, path);
  if (rc < 0) return rc;
  rc = compress ? ms_psnap_profile_write_compressed(profile, output.file)
                : ms_psnap_profile_write(profile, output.file);
  if (rc < 0) {
    ms_output_abort(&output);
    return rc;
  }
  return ms_output_commit(&output);
}

/* ---- parsing ---- */

typedef struct reader {
  const char *name;
  const char *line, *end, *p; /* current line [line, end), position p */
  unsigned number;
  const char *next, *text_end;
  int version;      /* 1 or 2 */
  char *source_dir; /* version 2: the directory of relative source files, or NULL */
} reader;

static void read_error_message(const reader *r, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void read_error_message(const reader *r, const char *format, ...) {
  char message[256];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  ms_error_set(MS_ERR_FORMAT, "%s:%u:%u: %s", r->name, r->number, (unsigned)(r->p - r->line) + 1,
               message);
}
/* The status is outside the variadic function, where clang-tidy's analyzer (which does not
 * follow variadic calls) sees that every failing read returns a negative status. */
#define read_error(r, ...) (read_error_message((r), __VA_ARGS__), MS_ERR_FORMAT)

/* Next line that is not blank or a comment; 0 at the end. */
static int next_line(reader *r) {
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

static int key_is(reader *r, const char *key) {
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
static const char *read_word(reader *r, char *buf, size_t size) {
  const char *start = r->p;
  while (r->p < r->end && *r->p != ' ')
    r->p++;
  size_t length = (size_t)(r->p - start);
  buf[0] = 0;
  if (length < size) memcpy(buf, start, length), buf[length] = 0;
  return start;
}

static int read_unsigned(reader *r, int base, uint64_t *value) {
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

static int read_end(reader *r) {
  if (r->p != r->end) return read_error(r, "unexpected text at the end of the line");
  return 0;
}

static int read_number_line(reader *r, int base, uint64_t *value) {
  int rc = read_unsigned(r, base, value);
  return rc < 0 ? rc : read_end(r);
}

/* A quoted string at r->p (\n, \t and \X escapes) into a malloc'd *out; r->p goes past it. */
static int scan_quoted(reader *r, char **out) {
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
static int read_quoted(reader *r, char **out) {
  char *text;
  int rc = scan_quoted(r, &text);
  if (rc < 0) return rc;
  rc = read_end(r);
  if (rc < 0)
    free(text);
  else
    *out = text;
  return rc;
}

static char *copy_rest(reader *r) {
  size_t n = (size_t)(r->end - r->p);
  char *text = malloc(n + 1);
  if (text) memcpy(text, r->p, n), text[n] = 0;
  r->p = r->end;
  return text;
}

static int decode_base64(reader *r, uint8_t **out, size_t *size) {
  size_t n = (size_t)(r->end - r->p);
  if (n % 4) return read_error(r, "base64 text of a length not a multiple of 4");
  uint8_t *bytes = malloc(n / 4 * 3 + 1);
  if (!bytes) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < n; i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (int j = 0; j < 4; j++) {
      char c = r->p[i + j];
      const char *d = c && c != '=' ? strchr(base64_digits, c) : NULL;
      if (c == '=' && i + 4 == n && j >= 2) {
        pad++;
        v <<= 6;
        continue;
      }
      if (!d || pad) {
        r->p += i + j;
        free(bytes);
        return read_error(r, "bad base64 character");
      }
      v = v << 6 | (uint32_t)(d - base64_digits);
    }
    bytes[k++] = (uint8_t)(v >> 16);
    if (pad < 2) bytes[k++] = (uint8_t)(v >> 8);
    if (pad < 1) bytes[k++] = (uint8_t)v;
  }
  r->p = r->end;
  *out = bytes;
  *size = k;
  return 0;
}

static int read_addresses(reader *r, ms_psnap_site *site) {
  if (!key_is(r, "zstd")) return read_error(r, "expected 'zstd' and the compressed addresses");
  uint8_t *packed = NULL;
  size_t packed_size = 0;
  const char *start = r->p;
  int rc = decode_base64(r, &packed, &packed_size);
  if (rc < 0) return rc;
  unsigned long long raw_size = ZSTD_getFrameContentSize(packed, packed_size);
  if (raw_size == ZSTD_CONTENTSIZE_ERROR || raw_size == ZSTD_CONTENTSIZE_UNKNOWN ||
      raw_size > (unsigned long long)site->count * 10 + 16 || raw_size < site->count ||
      raw_size > (1ull << 28)) {
    free(packed);
    r->p = start;
    return read_error(r, "compressed addresses are corrupt");
  }
  uint8_t *raw = malloc(raw_size + 1);
  site->addresses = malloc((site->count ? site->count : 1) * sizeof *site->addresses);
  if (!raw || !site->addresses) {
    free(packed), free(raw);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  size_t got = ZSTD_decompress(raw, raw_size, packed, packed_size);
  free(packed);
  uint64_t previous = 0, i = 0;
  size_t k = 0;
  if (!ZSTD_isError(got) && got == raw_size) {
    for (; i < site->count && k < got; i++) {
      uint64_t zigzag = 0;
      int shift = 0;
      while (k < got && shift < 64) {
        uint8_t byte = raw[k++];
        zigzag |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
        if (!(byte & 0x80)) break;
      }
      previous += (zigzag >> 1) ^ (0 - (zigzag & 1));
      site->addresses[i] = previous;
    }
  }
  free(raw);
  if (i != site->count || k != got || (i && site->addresses[0] != site->first_address)) {
    r->p = start;
    return read_error(r, "compressed addresses do not match the site's count and first address");
  }
  return 0;
}

static int add_location(ms_psnap_profile *profile, const char *function, const char *file,
                        uint32_t line, uint64_t pc) {
  int64_t id = ms_site_table_add(profile->info.sites, pc, NULL, function, file, line);
  return id < 0 ? (int)id : 0;
}

static int read_site(reader *r, ms_psnap_profile *profile, uint32_t id) {
  ms_psnap_site *site = &profile->sites[id];
  char *function = NULL, *file = NULL;
  uint64_t line = 0, pc = 0, value;
  int rc = 0, have_count = 0, have_first = 0, stored = -1, have_pattern = 0, histograms = 0;
  site->cls = MS_STRIDE_UNDESIGNATED;
  ms_psnap_expr_init(&site->pattern);
  site->size = 0;
  while (rc == 0 && next_line(r)) {
    if (r->p == r->line) break; /* an unindented line starts the next block */
    if (key_is(r, "function")) {
      free(function);
      if (!(function = copy_rest(r))) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
    } else if (key_is(r, "line")) {
      const char *colon = NULL;
      for (const char *q = r->p; q < r->end; q++)
        if (*q == ':') colon = q;
      if (!colon)
        rc = read_error(r, "expected FILE:LINE");
      else {
        free(file);
        file = strndup(r->p, (size_t)(colon - r->p));
        r->p = colon + 1;
        rc = read_number_line(r, 10, &line);
        if (rc == 0 && line > UINT32_MAX) rc = read_error(r, "line number too large");
      }
    } else if (key_is(r, "pc"))
      rc = read_number_line(r, 16, &pc);
    else if (key_is(r, "thread")) {
      if ((rc = read_number_line(r, 10, &value)) == 0 && value > UINT16_MAX)
        rc = read_error(r, "thread number too large");
      site->thread = (uint16_t)value;
    } else if (key_is(r, "kind")) {
      char *kind = copy_rest(r);
      int k = kind ? ms_access_kind_parse(kind) : -1;
      free(kind);
      if (k < 0) r->p = r->line, rc = read_error(r, "kind is load, store or modify");
      site->kind = (uint8_t)k;
    } else if (key_is(r, "size")) {
      if ((rc = read_number_line(r, 10, &value)) == 0 && (value == 0 || value > 255))
        rc = read_error(r, "size is 1 to 255 bytes");
      site->size = (uint8_t)value;
    } else if (key_is(r, "count")) {
      rc = read_number_line(r, 10, &site->count);
      have_count = 1;
    } else if (key_is(r, "first")) {
      rc = read_number_line(r, 16, &site->first_address);
      have_first = 1;
    } else if (key_is(r, "class")) {
      char *name = copy_rest(r);
      int cls = name ? ms_stride_class_parse(name) : -1;
      free(name);
      if (cls < 0) r->p = r->line, rc = read_error(r, "unknown class");
      site->cls = (ms_stride_class)cls;
    } else if (key_is(r, "stored")) {
      if (key_is(r, "exact"))
        stored = 0;
      else if (key_is(r, "lossy"))
        stored = 1, site->lossy = 1;
      else if (key_is(r, "lossless"))
        stored = 2;
      else
        rc = read_error(r, "stored is exact, lossy or lossless");
      if (rc == 0) rc = read_end(r);
    } else if (key_is(r, "pattern")) {
      ms_psnap_expr_free(&site->pattern);
      rc = ms_psnap_expr_parse(&site->pattern, r->p, (size_t)(r->end - r->p), MS_PSNAP_STRIDES,
                               r->name, r->number, (unsigned)(r->p - r->line) + 1);
      have_pattern = rc == 0;
    } else if (key_is(r, "range")) {
      if ((rc = read_unsigned(r, 16, &site->low)) == 0) rc = read_number_line(r, 16, &site->high);
    } else if (key_is(r, "alignment")) {
      if ((rc = read_number_line(r, 10, &site->alignment)) == 0 && site->alignment == 0)
        rc = read_error(r, "alignment is at least 1");
    } else if (key_is(r, "histogram")) {
      if (histograms == MS_PSNAP_SEGMENTS)
        rc = read_error(r, "more than %d histogram lines", MS_PSNAP_SEGMENTS);
      if (rc == 0) rc = ensure_histogram(site);
      for (int b = 0; rc == 0 && b < MS_PSNAP_HISTOGRAM_BINS; b++)
        rc = read_unsigned(r, 10, &site->histogram[histograms][b]);
      histograms++;
      if (rc == 0) rc = read_end(r);
    } else if (key_is(r, "addresses")) {
      if (!have_count || !have_first)
        rc = read_error(r, "addresses before count and first");
      else
        rc = read_addresses(r, site);
    } else
      rc = read_error(r, "unknown key in a site block");
  }
  if (rc == 0) {
    if (!have_count || !have_first || !site->size || stored < 0)
      rc = read_error(r, "site %u lacks one of thread, kind, size, count, first, stored", id);
    else if (stored == 0 && !have_pattern)
      rc = read_error(r, "exact site %u has no pattern", id);
    else if (stored == 1 &&
             (site->alignment == 0 || site->high < site->low || histograms != MS_PSNAP_SEGMENTS))
      rc = read_error(r, "lossy site %u needs range (low <= high), alignment and %d histograms", id,
                      MS_PSNAP_SEGMENTS);
    else if (stored == 2 && !site->addresses)
      rc = read_error(r, "lossless site %u has no addresses", id);
    else if (stored != 0 && !have_pattern)
      rc = ms_psnap_expr_finish(&site->pattern, NULL, 0);
  }
  if (rc == 0) {
    site->trace_site = id;
    rc = add_location(profile, function, file, (uint32_t)line, pc);
  }
  free(function);
  free(file);
  return rc;
}

static int read_transition(reader *r, ms_psnap_thread_order *order, uint32_t *capacity) {
  uint64_t from = 0, to = 0, times = 0;
  if (r->p >= r->end || *r->p != 's') return read_error(r, "expected a site such as s3");
  r->p++;
  int rc = read_unsigned(r, 10, &from);
  if (rc == 0 && (r->p >= r->end || *r->p != 's')) rc = read_error(r, "expected a site such as s3");
  if (rc == 0) r->p++, rc = read_unsigned(r, 10, &to);
  if (rc == 0) rc = read_number_line(r, 10, &times);
  if (rc < 0) return rc;
  if (from > UINT32_MAX || to > UINT32_MAX) return read_error(r, "site number too large");
  if (order->transition_count == *capacity) {
    *capacity = *capacity ? *capacity * 2 : 64;
    uint32_t *f = realloc(order->transition_from, *capacity * sizeof *f);
    if (f) order->transition_from = f;
    uint32_t *t = realloc(order->transition_to, *capacity * sizeof *t);
    if (t) order->transition_to = t;
    uint64_t *n = realloc(order->transition_times, *capacity * sizeof *n);
    if (n) order->transition_times = n;
    if (!f || !t || !n) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  order->transition_from[order->transition_count] = (uint32_t)from;
  order->transition_to[order->transition_count] = (uint32_t)to;
  order->transition_times[order->transition_count++] = times;
  return 0;
}

static int check_order(reader *r, ms_psnap_profile *profile, uint32_t t, unsigned order_line);

static int read_thread(reader *r, ms_psnap_profile *profile, uint32_t t) {
  ms_psnap_thread_order *order = &profile->threads[t];
  int rc = 0, have_order = 0;
  uint32_t capacity = 0;
  unsigned order_line = r->number;
  ms_psnap_expr_init(&order->order);
  while (rc == 0 && next_line(r)) {
    if (r->p == r->line) break;
    if (key_is(r, "accesses"))
      rc = read_number_line(r, 10, &order->accesses);
    else if (key_is(r, "order")) {
      order_line = r->number;
      ms_psnap_expr_free(&order->order);
      order->lossy = 0;
      if (key_is(r, "lossy")) {
        order->lossy = 1;
        rc = read_end(r);
      } else
        rc = ms_psnap_expr_parse(&order->order, r->p, (size_t)(r->end - r->p), MS_PSNAP_SITES,
                                 r->name, r->number, (unsigned)(r->p - r->line) + 1);
      have_order = rc == 0;
    } else if (key_is(r, "start") && r->p < r->end && *r->p == 's') {
      uint64_t first;
      r->p++;
      if ((rc = read_number_line(r, 10, &first)) == 0) order->first_site = (uint32_t)first;
    } else if (key_is(r, "path"))
      rc = read_transition(r, order, &capacity);
    else
      rc = read_error(r, "unknown key in a thread block");
  }
  if (rc < 0) return rc;
  if (!have_order) return read_error(r, "thread %u has no order", t);
  return check_order(r, profile, t, order_line);
}

/* What replay relies on: every site of thread t's order exists, belongs to the thread,
 * and is used `count` times; the order holds the accesses it declares. */
static int check_order(reader *r, ms_psnap_profile *profile, uint32_t t, unsigned order_line) {
  ms_psnap_thread_order *order = &profile->threads[t];
  int rc = 0;
  if (order->lossy && ms_psnap_expr_finish(&order->order, NULL, 0) < 0) return MS_ERR_NOMEM;
  /* Every site of the order exists, belongs to this thread, and is used `count` times. */
  uint64_t *uses = calloc(profile->site_count + 1, sizeof *uses);
  if (!uses) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (!order->lossy) {
    rc = ms_psnap_expr_index_values(&order->order, profile->site_count);
    if (rc == 0) {
      const ms_psnap_expr *e = &order->order;
      for (uint32_t k = e->count_start[e->root]; k < e->count_start[e->root + 1]; k++)
        uses[e->count_value[k]] = e->count_times[k];
    }
  } else {
    for (uint32_t k = 0; rc == 0 && k < order->transition_count; k++) {
      if (order->transition_to[k] >= profile->site_count ||
          order->transition_from[k] >= profile->site_count)
        rc = ms_error_set(MS_ERR_FORMAT, "site s%u is not in the profile",
                          order->transition_to[k] >= profile->site_count
                              ? order->transition_to[k]
                              : order->transition_from[k]);
      else
        uses[order->transition_to[k]] += order->transition_times[k];
    }
    /* each period holds the paths into its own accesses (the first access has none) */
    for (uint32_t k = 0; rc == 0 && order->transition_period && k < order->transition_count;) {
      uint32_t period = order->transition_period[k];
      uint64_t held = 0;
      for (; k < order->transition_count && order->transition_period[k] == period; k++)
        if (__builtin_add_overflow(held, order->transition_times[k], &held)) held = UINT64_MAX;
      uint64_t low = (uint64_t)period * order->period_length, high = low + order->period_length;
      if (low == 0) low = 1;
      if (high > order->accesses) high = order->accesses;
      if (held != high - low)
        rc = ms_error_set(MS_ERR_FORMAT,
                          "period %u holds %" PRIu64 " paths, its accesses need %" PRIu64, period,
                          held, high - low);
    }
    if (rc == 0 && order->first_site >= profile->site_count)
      rc = ms_error_set(MS_ERR_FORMAT, "site s%u is not in the profile", order->first_site);
    else if (rc == 0 && order->accesses)
      uses[order->first_site]++;
  }
  uint64_t total = 0;
  for (uint32_t s = 0; rc == 0 && s < profile->site_count; s++) {
    const ms_psnap_site *site = &profile->sites[s];
    uint64_t expected = site->thread == t ? site->count : 0;
    if (uses[s] != expected)
      rc = ms_error_set(MS_ERR_FORMAT,
                        "the order of thread %u uses site s%u %" PRIu64
                        " times, its count is %" PRIu64,
                        t, s, uses[s], expected);
    total += uses[s];
  }
  if (rc == 0 && total != order->accesses)
    rc = ms_error_set(MS_ERR_FORMAT,
                      "thread %u: %" PRIu64 " accesses in the order, %" PRIu64 " declared", t,
                      total, order->accesses);
  free(uses);
  if (rc < 0) {
    char message[512];
    snprintf(message, sizeof message, "%s", ms_error_message());
    return ms_error_set(MS_ERR_FORMAT, "%s:%u: %s", r->name, order_line,
                        strncmp(message, r->name, strlen(r->name)) ? message
                                                                   : message + strlen(r->name) + 1);
  }
  return 0;
}

/* ---- version 2: one line per site ---- */

/* The source file of `at FILE:LINE`, joined to source-dir when relative. */
static int read_at(reader *r, char **file, uint64_t *line) {
  char *name = NULL;
  if (r->p < r->end && *r->p == '"') {
    int rc = scan_quoted(r, &name);
    if (rc < 0) return rc;
    if (r->p >= r->end || *r->p != ':') {
      free(name);
      return read_error(r, "expected ':LINE' after the file");
    }
  } else {
    if (r->p >= r->end) return read_error(r, "expected FILE:LINE");
    const char *token_end = memchr(r->p, ' ', (size_t)(r->end - r->p));
    if (!token_end) token_end = r->end;
    const char *colon = NULL;
    for (const char *q = r->p; q < token_end; q++)
      if (*q == ':') colon = q;
    if (!colon) return read_error(r, "expected FILE:LINE");
    if (!(name = strndup(r->p, (size_t)(colon - r->p))))
      return ms_error_set(MS_ERR_NOMEM, "out of memory");
    r->p = colon;
  }
  r->p++; /* the colon */
  int rc = read_unsigned(r, 10, line);
  if (rc == 0 && *line > UINT32_MAX) rc = read_error(r, "line number too large");
  if (rc == 0 && r->source_dir && name[0] != '/') {
    char *joined = malloc(strlen(r->source_dir) + strlen(name) + 2);
    if (!joined)
      rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
    else {
      sprintf(joined, "%s/%s", r->source_dir, name);
      free(name);
      name = joined;
    }
  }
  if (rc < 0) {
    free(name);
    return rc;
  }
  *file = name;
  return 0;
}

/* `strides S:N ... other N` of a lossy site: its frequent strides (signed) and how many
 * strides each stands for; the counts and `other` add up to the site's count - 1. */
static int read_strides(reader *r, ms_psnap_site *site) {
  uint64_t kept = 0, other;
  while (!key_is(r, "other")) {
    if (r->p == r->end) return read_error(r, "expected 'other N' at the end of the strides");
    if (site->stride_count == MS_PSNAP_TOP_STRIDES)
      return read_error(r, "more than %d strides", MS_PSNAP_TOP_STRIDES);
    char sign = *r->p;
    if (sign != '+' && sign != '-')
      return read_error(r, "expected a stride with its sign (+8, -64)");
    r->p++;
    uint64_t magnitude, times;
    int rc = read_unsigned(r, 10, &magnitude);
    if (rc < 0) return rc;
    if (magnitude > (sign == '-' ? (uint64_t)1 << 63 : INT64_MAX))
      return read_error(r, "stride out of the 64-bit range");
    if (r->p == r->end || *r->p != ':') return read_error(r, "expected ':' and a count");
    r->p++;
    if ((rc = read_unsigned(r, 10, &times)) < 0) return rc;
    if (times == 0) return read_error(r, "a stride counted 0 times");
    if (__builtin_add_overflow(kept, times, &kept)) return read_error(r, "counts overflow");
    site->top_stride[site->stride_count] =
        sign == '-' ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    site->top_stride_times[site->stride_count++] = times;
  }
  int rc = read_unsigned(r, 10, &other);
  if (rc == 0) rc = read_end(r);
  if (rc == 0 &&
      (site->count == 0 || __builtin_add_overflow(kept, other, &kept) || kept != site->count - 1))
    rc = read_error(r,
                    "the strides' counts and other add up to %" PRIu64 ", not the site's %" PRIu64
                    " strides (count - 1)",
                    kept, site->count ? site->count - 1 : 0);
  return rc;
}

/* `reuse [jumps] A 32: N0 ... N11 64: ... 128: ...` of a lossy site: A accesses measured
 * (its jumps only, with `jumps`); of them, Nb to a block of that size last touched 2^b to
 * 2^(b+1) - 1 accesses before (not counted again at a larger size). */
static int read_reuse(reader *r, ms_psnap_site *site) {
  static const char *const sizes[] = {"32:", "64:", "128:"};
  uint64_t accesses, sum = 0;
  site->reuse_at_jumps = key_is(r, "jumps");
  int rc = read_unsigned(r, 10, &accesses);
  if (rc < 0) return rc;
  if (accesses == 0) return read_error(r, "reuse: 0 accesses measured");
  for (int size = 0; size < MS_PSNAP_REUSE_SIZES; size++) {
    if (!key_is(r, sizes[size])) return read_error(r, "reuse: expected '%s'", sizes[size]);
    for (int b = 0; b < MS_PSNAP_REUSE_BINS; b++) {
      if ((rc = read_unsigned(r, 10, &site->reuse[size][b])) < 0) return rc;
      if (__builtin_add_overflow(sum, site->reuse[size][b], &sum))
        return read_error(r, "counts overflow");
    }
  }
  if (sum > accesses)
    return read_error(r, "reuse: %" PRIu64 " reuses of %" PRIu64 " accesses", sum, accesses);
  site->reuse_accesses = accesses;
  return read_end(r);
}

/* `tie sN +D` of a lossy site: the site it follows and the distance from its address
 * (checked against the other sites once all are read). */
static int read_tie(reader *r, ms_psnap_site *site) {
  uint64_t anchor, magnitude;
  if (r->p >= r->end || *r->p != 's') return read_error(r, "expected the tied site, sN");
  r->p++;
  int rc = read_unsigned(r, 10, &anchor);
  if (rc < 0) return rc;
  if (anchor > UINT32_MAX) return read_error(r, "tied site number too large");
  while (r->p < r->end && *r->p == ' ')
    r->p++;
  char sign = r->p < r->end ? *r->p : 0;
  if (sign != '+' && sign != '-') return read_error(r, "expected a distance with its sign (+8)");
  r->p++;
  if ((rc = read_unsigned(r, 10, &magnitude)) < 0) return rc;
  if (magnitude > (sign == '-' ? (uint64_t)1 << 63 : INT64_MAX))
    return read_error(r, "distance out of the 64-bit range");
  site->tied = 1;
  site->tie_site = (uint32_t)anchor;
  site->tie_delta = sign == '-' ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
  return read_end(r);
}

/* sN KIND SIZE xCOUNT [tTHREAD] @FIRST STORAGE [class=C] [at FILE:LINE] [pc=PC]
 * [in FUNCTION], then indented histogram or addresses lines. r is at the site line. */
static int read_site_line(reader *r, ms_psnap_profile *profile, uint32_t id) {
  ms_psnap_site *site = &profile->sites[id];
  char *function = NULL, *file = NULL;
  uint64_t line = 0, pc = 0, value = 0;
  int rc = 0, stored = 0, histograms = 0, strides = 0, explicit_class = -1;
  ms_psnap_expr_init(&site->pattern);
  if (r->p >= r->end || *r->p != 's')
    return read_error(r, "expected 's%u' (the header declares %u sites)", id, profile->site_count);
  r->p++;
  if ((rc = read_unsigned(r, 10, &value)) < 0) return rc;
  if (value != id) {
    r->p = r->line;
    return read_error(r, "expected site s%u here, found s%" PRIu64, id, value);
  }
  char kind_name[16];
  const char *word = read_word(r, kind_name, sizeof kind_name);
  int k = ms_access_kind_parse(kind_name);
  if (k < 0) {
    r->p = word;
    return read_error(r, "kind is load, store or modify");
  }
  site->kind = (uint8_t)k;
  while (r->p < r->end && *r->p == ' ')
    r->p++;
  if ((rc = read_unsigned(r, 10, &value)) < 0) return rc;
  if (value == 0 || value > 255) return read_error(r, "size is 1 to 255 bytes");
  site->size = (uint8_t)value;
  if (r->p >= r->end || *r->p != 'x') return read_error(r, "expected xCOUNT");
  r->p++;
  if ((rc = read_unsigned(r, 10, &site->count)) < 0) return rc;
  if (r->p < r->end && *r->p == 't') {
    r->p++;
    if ((rc = read_unsigned(r, 10, &value)) < 0) return rc;
    if (value > UINT16_MAX) return read_error(r, "thread number too large");
    site->thread = (uint16_t)value;
  }
  if (r->p >= r->end || *r->p != '@') return read_error(r, "expected @FIRST-ADDRESS");
  r->p++;
  if ((rc = read_unsigned(r, 16, &site->first_address)) < 0) return rc;
  if (key_is(r, "lossless"))
    stored = 2;
  else if (key_is(r, "lossy")) {
    stored = 1, site->lossy = 1;
    if (!key_is(r, "range")) return read_error(r, "expected 'range LOW HIGH'");
    if ((rc = read_unsigned(r, 16, &site->low)) < 0 || (rc = read_unsigned(r, 16, &site->high)) < 0)
      return rc;
    if (site->high < site->low) return read_error(r, "range: low is above high");
    if (!key_is(r, "align")) return read_error(r, "expected 'align N'");
    if ((rc = read_unsigned(r, 10, &site->alignment)) < 0) return rc;
    if (site->alignment == 0) return read_error(r, "alignment is at least 1");
  }
  /* An exact site's strides: signs, digits, parentheses, ^, steps' {,} and blanks, up to a
   * word. */
  const char *pattern = r->p;
  if (stored == 0)
    while (r->p < r->end && (strchr("+-()^ {},", *r->p) || (*r->p >= '0' && *r->p <= '9')))
      r->p++;
  const char *pattern_end = r->p;
  while (pattern_end > pattern && pattern_end[-1] == ' ')
    pattern_end--;
  rc = ms_psnap_expr_parse(&site->pattern, pattern, (size_t)(pattern_end - pattern),
                           MS_PSNAP_STRIDES, r->name, r->number, (unsigned)(pattern - r->line) + 1);
  if (rc < 0) return rc;
  if (r->p + 6 <= r->end && !memcmp(r->p, "class=", 6)) {
    r->p += 6;
    char name[32];
    const char *name_start = read_word(r, name, sizeof name);
    if ((explicit_class = ms_stride_class_parse(name)) < 0) {
      r->p = name_start;
      return read_error(r, "unknown class");
    }
    while (r->p < r->end && *r->p == ' ')
      r->p++;
  }
  if (key_is(r, "at") && (rc = read_at(r, &file, &line)) < 0) return rc;
  if (r->p + 3 <= r->end && !memcmp(r->p, "pc=", 3)) {
    r->p += 3;
    if ((rc = read_unsigned(r, 16, &pc)) < 0) goto out;
  }
  if (key_is(r, "in")) {
    if (r->p < r->end && !(function = copy_rest(r))) {
      rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
      goto out;
    }
  }
  if ((rc = read_end(r)) < 0) goto out;
  /* indented continuation lines */
  while (rc == 0 && next_line(r)) {
    if (r->p == r->line) break;
    if (stored == 1 && !strides && !site->reuse_accesses && !site->tied && key_is(r, "histogram")) {
      if (histograms == MS_PSNAP_SEGMENTS)
        rc = read_error(r, "more than %d histogram lines", MS_PSNAP_SEGMENTS);
      if (rc == 0) rc = ensure_histogram(site);
      for (int b = 0; rc == 0 && b < MS_PSNAP_HISTOGRAM_BINS; b++)
        rc = read_unsigned(r, 10, &site->histogram[histograms][b]);
      histograms++;
      if (rc == 0) rc = read_end(r);
    } else if (stored == 1 && histograms == MS_PSNAP_SEGMENTS && !strides &&
               !site->reuse_accesses && !site->tied && key_is(r, "strides")) {
      strides = 1;
      rc = read_strides(r, site);
    } else if (stored == 1 && histograms == MS_PSNAP_SEGMENTS && !site->reuse_accesses &&
               !site->tied && key_is(r, "reuse")) {
      rc = read_reuse(r, site);
    } else if (stored == 1 && histograms == MS_PSNAP_SEGMENTS && !site->tied && key_is(r, "tie")) {
      rc = read_tie(r, site);
    } else if (stored == 2 && !site->addresses && key_is(r, "addresses"))
      rc = read_addresses(r, site);
    else
      rc = read_error(r, stored == 1
                             ? (site->tied             ? "nothing follows the tie line"
                                : site->reuse_accesses ? "only a tie line follows the reuse line"
                                : strides ? "only reuse and tie lines follow the strides line"
                                : histograms == MS_PSNAP_SEGMENTS
                                    ? "expected a strides line or the next site"
                                    : "expected a histogram line")
                         : stored == 2 ? "expected one addresses line"
                                       : "an exact site has no indented lines");
  }
  if (rc == 0 && stored == 1 && histograms != MS_PSNAP_SEGMENTS)
    rc = read_error(r, "lossy site %u needs %d histogram lines", id, MS_PSNAP_SEGMENTS);
  if (rc == 0 && stored == 2 && !site->addresses)
    rc = read_error(r, "lossless site %u has no addresses line", id);
  if (rc == 0) {
    site->cls = explicit_class >= 0 ? (ms_stride_class)explicit_class : default_class(site);
    site->trace_site = id;
    rc = add_location(profile, function, file, (uint32_t)line, pc);
  }
out:
  free(function);
  free(file);
  return rc;
}

/* thread N accesses A order EXPR | order lossy start sK, then indented path lines. */
static int read_thread_line(reader *r, ms_psnap_profile *profile, uint32_t t) {
  ms_psnap_thread_order *order = &profile->threads[t];
  uint32_t capacity = 0;
  unsigned order_line = r->number;
  uint64_t value;
  int rc;
  ms_psnap_expr_init(&order->order);
  if (!key_is(r, "thread")) return read_error(r, "expected 'thread %u'", t);
  if ((rc = read_unsigned(r, 10, &value)) < 0) return rc;
  if (value != t) {
    r->p = r->line;
    return read_error(r, "expected thread %u here, found %" PRIu64, t, value);
  }
  if (!key_is(r, "accesses")) return read_error(r, "expected 'accesses N'");
  if ((rc = read_unsigned(r, 10, &order->accesses)) < 0) return rc;
  if (!key_is(r, "order")) return read_error(r, "expected 'order'");
  if (key_is(r, "lossy")) {
    order->lossy = 1;
    if (!key_is(r, "start") || r->p >= r->end || *r->p != 's')
      return read_error(r, "expected 'start sN'");
    r->p++;
    if ((rc = read_unsigned(r, 10, &value)) < 0) return rc;
    if (value > UINT32_MAX) return read_error(r, "site number too large");
    order->first_site = (uint32_t)value;
    if (key_is(r, "period")) {
      if ((rc = read_unsigned(r, 10, &order->period_length)) < 0) return rc;
      if (order->period_length == 0) return read_error(r, "period: 0 accesses");
    }
    if ((rc = read_end(r)) < 0) return rc;
  } else if ((rc = ms_psnap_expr_parse(&order->order, r->p, (size_t)(r->end - r->p), MS_PSNAP_SITES,
                                       r->name, r->number, (unsigned)(r->p - r->line) + 1)) < 0)
    return rc;
  uint64_t period = 0;
  int period_seen = 0;
  while (rc == 0 && next_line(r)) {
    if (r->p == r->line) break;
    if (order->lossy && order->period_length && key_is(r, "period")) {
      uint64_t next;
      if ((rc = read_number_line(r, 10, &next)) < 0) break;
      if ((period_seen && next <= period) || next > UINT32_MAX ||
          next > (order->accesses ? (order->accesses - 1) / order->period_length : 0))
        rc = read_error(r, "period %" PRIu64 " out of order or past the thread's accesses", next);
      period = next, period_seen = 1;
    } else if (order->lossy && key_is(r, "path")) {
      rc = read_transition(r, order, &capacity);
      if (rc == 0 && order->period_length) {
        uint32_t k = order->transition_count - 1;
        uint32_t *p = realloc(order->transition_period, capacity * sizeof *p);
        if (!p) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
        else (order->transition_period = p)[k] = (uint32_t)period;
      }
    } else
      rc = read_error(r, order->lossy ? (order->period_length ? "expected a path or period line"
                                                              : "expected a path line")
                                      : "unexpected indented line");
  }
  if (rc < 0) return rc;
  return check_order(r, profile, t, order_line);
}

static int read_header(reader *r, ms_psnap_profile *profile) {
  ms_stream_info *info = &profile->info;
  uint64_t value;
  int rc = 0, have_sites = 0, have_threads = 0, own_executable = 0;
  unsigned selection_line = 0;
  while (rc == 0 && next_line(r)) {
    if (key_is(r, "site") || key_is(r, "thread") ||
        (r->version == 2 && r->p + 1 < r->end && r->p[0] == 's' && r->p[1] >= '0' &&
         r->p[1] <= '9')) {
      r->p = r->line;
      break;
    }
    if (r->version == 2 && key_is(r, "source-dir")) {
      free(r->source_dir);
      if (!(r->source_dir = copy_rest(r))) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
      continue;
    }
    if (r->version == 2 && r->end - r->p == 20 &&
        !memcmp(r->p, "selection executable", 20)) { /* the program's own executable */
      own_executable = 1;
      selection_line = r->number;
      r->p = r->end;
      continue;
    }
    if (key_is(r, "program")) {
      free(info->program);
      info->program = NULL;
      rc = read_quoted(r, &info->program);
    } else if (key_is(r, "argument")) {
      char **argv = realloc(info->argv, ((size_t)info->argc + 2) * sizeof *argv);
      if (!argv) return ms_error_set(MS_ERR_NOMEM, "out of memory");
      info->argv = argv;
      argv[info->argc + 1] = NULL;
      if ((rc = read_quoted(r, &argv[info->argc])) == 0) info->argc++;
    } else if (key_is(r, "arch")) {
      free(info->arch);
      if (!(info->arch = copy_rest(r))) rc = MS_ERR_NOMEM;
    } else if (key_is(r, "capture")) {
      free(info->capture);
      if (!(info->capture = copy_rest(r))) rc = MS_ERR_NOMEM;
    } else if (key_is(r, "sampling")) {
      if (key_is(r, "none"))
        rc = read_end(r);
      else if (key_is(r, "on") && (rc = read_unsigned(r, 10, &info->sample_on)) == 0) {
        info->flags |= MS_STREAM_SAMPLED;
        rc = key_is(r, "off") ? read_number_line(r, 10, &info->sample_off)
                              : read_error(r, "expected 'off N'");
      } else if (rc == 0)
        rc = read_error(r, "sampling is none or on N off M");
    } else if (key_is(r, "selection")) {
      free(profile->selection);
      ms_psnap_filter *filter = NULL;
      if (!(profile->selection = copy_rest(r)))
        rc = MS_ERR_NOMEM;
      else if (ms_psnap_filter_new(profile->selection, &filter) < 0)
        rc = read_error(r, "selection is all, executable PATH, or function F / line FILE:LINE");
      ms_psnap_filter_free(filter);
    } else if (key_is(r, "excluded")) {
      rc = read_number_line(r, 10, &profile->excluded);
      profile->has_excluded = 1;
    } else if (key_is(r, "accesses"))
      rc = read_number_line(r, 10, &profile->access_count);
    else if (key_is(r, "sites")) {
      if ((rc = read_number_line(r, 10, &value)) == 0 && value > (1u << 24))
        rc = read_error(r, "too many sites");
      profile->site_count = (uint32_t)value;
      have_sites = 1;
    } else if (key_is(r, "threads")) {
      if ((rc = read_number_line(r, 10, &value)) == 0 && value > UINT16_MAX + 1u)
        rc = read_error(r, "too many threads");
      profile->thread_count = (uint32_t)value;
      have_threads = 1;
    } else
      rc = read_error(r, "unknown key in the header");
  }
  if (rc == 0 && (!have_sites || !have_threads))
    rc = read_error(r, "the header lacks 'sites' or 'threads'");
  if (rc == 0 && own_executable) {
    if (!info->program)
      return ms_error_set(MS_ERR_FORMAT, "%s:%u: 'selection executable' without a program line",
                          r->name, selection_line);
    free(profile->selection);
    if (!(profile->selection = malloc(strlen(info->program) + 12)))
      return ms_error_set(MS_ERR_NOMEM, "out of memory");
    strcat(strcpy(profile->selection, "executable "), info->program);
  }
  if (rc == 0 && !profile->selection && !(profile->selection = strdup("all")))
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  return rc;
}

static int parse_text(const char *text, size_t size, const char *name, ms_psnap_profile *out) {
  memset(out, 0, sizeof *out);
  reader r = {.name = name, .next = text, .text_end = text + size};
  r.line = r.p = r.end = text;
  size_t magic = strlen(PSNAP_MAGIC);
  if (size >= magic && (size == magic || text[magic] == '\n') && !memcmp(text, PSNAP_MAGIC, magic))
    r.version = 2;
  else if (size >= magic && (size == magic || text[magic] == '\n') &&
           !memcmp(text, PSNAP_MAGIC_1, magic))
    r.version = 1;
  else
    return ms_error_set(MS_ERR_FORMAT,
                        "%s:1:1: not a memsnap profile (expected '%s', or '%s' of older profiles)",
                        name, PSNAP_MAGIC, PSNAP_MAGIC_1);
  if (memchr(text, 0, size)) return ms_error_set(MS_ERR_FORMAT, "%s: contains a NUL byte", name);
  next_line(&r);
  out->info.sites = ms_site_table_new();
  if (!out->info.sites) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  out->info.exit_status = -1;
  int rc = read_header(&r, out);
  if (rc == 0) {
    /* sites grow as their blocks are read: the header's count alone allocates nothing */
    out->sites = calloc(1, sizeof *out->sites);
    out->threads = calloc(out->thread_count ? out->thread_count : 1, sizeof *out->threads);
    if (!out->sites || !out->threads) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  uint32_t sites_read = 0, capacity = 1;
  for (uint32_t i = 0; rc == 0 && i < out->site_count; i++) {
    uint64_t id;
    if (i == capacity) {
      ms_psnap_site *bigger = realloc(out->sites, 2 * (size_t)capacity * sizeof *bigger);
      if (!bigger) {
        rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
        break;
      }
      memset(bigger + capacity, 0, capacity * sizeof *bigger);
      out->sites = bigger;
      capacity *= 2;
    }
    if (r.version == 2) {
      if (r.p >= r.end)
        rc = read_error(&r, "expected 's%u' (the header declares %u sites)", i, out->site_count);
      else
        rc = read_site_line(&r, out, i);
    } else if (!(r.p < r.end && key_is(&r, "site")))
      rc = read_error(&r, "expected 'site %u' (the header declares %u sites)", i, out->site_count);
    else if ((rc = read_number_line(&r, 10, &id)) == 0 && id != i)
      r.p = r.line, rc = read_error(&r, "expected site %u here, found %" PRIu64, i, id);
    if (rc == 0 && r.version == 1) rc = read_site(&r, out, i);
    sites_read = i + 1;
    if (rc == 0 && out->sites[i].thread >= out->thread_count)
      rc = ms_error_set(MS_ERR_FORMAT, "%s:%u: site %u: thread %u but %u threads", name, r.number,
                        i, out->sites[i].thread, out->thread_count);
  }
  for (uint32_t i = 0; rc == 0 && i < out->site_count; i++) {
    const ms_psnap_site *site = &out->sites[i];
    if (!site->tied) continue;
    const ms_psnap_site *anchor =
        site->tie_site < out->site_count ? &out->sites[site->tie_site] : NULL;
    if (!anchor || site->tie_site == i || !anchor->lossy || anchor->tied ||
        anchor->thread != site->thread)
      rc = ms_error_set(MS_ERR_FORMAT,
                        "%s: site s%u: tied to s%u, which is not another lossy, untied site of "
                        "its thread",
                        name, i, site->tie_site);
  }
  uint64_t total = 0;
  for (uint32_t t = 0; rc == 0 && t < out->thread_count; t++) {
    uint64_t id;
    if (r.version == 2 && r.p < r.end)
      rc = read_thread_line(&r, out, t);
    else if (!(r.p < r.end && key_is(&r, "thread")))
      rc = read_error(&r, "expected 'thread %u' (the header declares %u threads)", t,
                      out->thread_count);
    else if ((rc = read_number_line(&r, 10, &id)) == 0 && id != t)
      r.p = r.line, rc = read_error(&r, "expected thread %u here, found %" PRIu64, t, id);
    if (rc == 0 && r.version == 1) rc = read_thread(&r, out, t);
    if (rc == 0) total += out->threads[t].accesses;
  }
  if (rc == 0 && r.p < r.end) rc = read_error(&r, "unexpected text after the last thread");
  if (rc == 0 && total != out->access_count)
    rc = ms_error_set(MS_ERR_FORMAT, "%s: header says %" PRIu64 " accesses, threads hold %" PRIu64,
                      name, out->access_count, total);
  if (rc == 0) {
    out->info.thread_count = out->thread_count;
    out->info.access_count = out->access_count;
  }
  free(r.source_dir);
  if (rc < 0) {
    if (!out->sites)
      out->site_count = 0;
    else
      out->site_count = sites_read;
    if (!out->threads) out->thread_count = 0;
    ms_psnap_profile_free(out);
  }
  return rc;
}

static int is_zstd(const void *data, size_t size) {
  static const uint8_t magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
  return size >= 4 && memcmp(data, magic, 4) == 0;
}

/* Decompresses zstd frames (any number, streamed: the frame header's size is not
 * trusted) into a malloc'ed buffer of at most `limit` bytes. */
static int decompress(const void *data, size_t size, const char *name, size_t limit, char **text,
                      size_t *text_size) {
  if (limit == 0 || limit >= SIZE_MAX / 2) /* the buffer doubles up to limit + 1 bytes */
    return ms_error_set(MS_ERR_ARG, "%s: decompression limit %zu out of range", name, limit);
  ZSTD_DStream *stream = ZSTD_createDStream();
  size_t capacity = size * 4 < (1u << 16) ? 1u << 16 : size * 4;
  if (capacity > limit + 1) capacity = limit + 1;
  char *buffer = malloc(capacity);
  if (!stream || !buffer) {
    ZSTD_freeDStream(stream);
    free(buffer);
    return ms_error_set(MS_ERR_NOMEM, "%s: out of memory", name);
  }
  ZSTD_inBuffer in = {data, size, 0};
  ZSTD_outBuffer out = {buffer, capacity, 0};
  size_t left = 1;
  int rc = 0;
  while (rc == 0 && (in.pos < in.size || out.pos == out.size)) {
    if (out.pos == out.size) {
      if (capacity > limit) { /* capacity == out.size, which zstd reads but never writes */
        rc = ms_error_set(MS_ERR_FORMAT,
                          "%s: decompresses to more than %zu MiB, the limit of a profile", name,
                          limit >> 20);
        break;
      }
      size_t bigger_size = capacity * 2 > limit + 1 ? limit + 1 : capacity * 2;
      char *bigger = realloc(buffer, bigger_size);
      if (!bigger) {
        rc = ms_error_set(MS_ERR_NOMEM, "%s: out of memory", name);
        break;
      }
      buffer = bigger;
      out.dst = buffer;
      out.size = capacity = bigger_size;
    }
    size_t before_in = in.pos, before_out = out.pos;
    left = ZSTD_decompressStream(stream, &out, &in);
    if (ZSTD_isError(left))
      rc = ms_error_set(MS_ERR_FORMAT, "%s: offset %zu: corrupt zstd data: %s", name, in.pos,
                        ZSTD_getErrorName(left));
    else if (in.pos == before_in && out.pos == before_out && out.pos < out.size)
      break; /* no progress: the input ends inside a frame */
  }
  ZSTD_freeDStream(stream);
  if (rc == 0 && left != 0)
    rc = ms_error_set(MS_ERR_FORMAT, "%s: offset %zu: truncated zstd data", name, in.pos);
  if (rc < 0) {
    free(buffer);
    return rc;
  }
  *text = buffer;
  *text_size = out.pos;
  return 0;
}

int ms_psnap_profile_parse(const char *text, size_t size, const char *name, ms_psnap_profile *out) {
  if (!is_zstd(text, size)) return parse_text(text, size, name, out);
  memset(out, 0, sizeof *out);
  char *plain = NULL;
  size_t plain_size = 0;
  int rc = decompress(text, size, name, MS_PSNAP_MAX_TEXT, &plain, &plain_size);
  if (rc < 0) return rc;
  rc = parse_text(plain, plain_size, name, out);
  free(plain);
  return rc;
}

int ms_psnap_profile_load(const char *path, ms_psnap_profile *out) {
  memset(out, 0, sizeof *out);
  const char *name = ms_input_name(path);
  FILE *file;
  int rc = ms_input_open_seekable(path, &file); /* a stream: copied once, so loaded again */
  if (rc < 0) return rc;
  size_t capacity = 1 << 16, size = 0;
  char *text = malloc(capacity);
  while (text) {
    size += fread(text + size, 1, capacity - size, file);
    if (size < capacity) break;
    char *bigger = realloc(text, capacity * 2);
    if (!bigger) free(text);
    text = bigger;
    capacity *= 2;
  }
  int failed = ferror(file);
  fclose(file);
  if (!text) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory", name);
  if (failed) {
    free(text);
    return ms_error_set(MS_ERR_IO, "%s: read failed", name);
  }
  rc = ms_psnap_profile_parse(text, size, name, out);
  free(text);
  return rc;
}

static int is_magic(const char *head, size_t n) {
  return n >= 8 && (!memcmp(head, PSNAP_MAGIC "\n", 8) || !memcmp(head, PSNAP_MAGIC_1 "\n", 8));
}

/* Compressed bytes read to find the first ones of the text: a zstd frame header (at most
 * 18 bytes) and its first block (at most 128 KiB compressed) give them, whatever the
 * profile's size. */
#define DETECT_MAX_COMPRESSED ((size_t)256 << 10)

int ms_psnap_detect(const char *path) {
  unsigned char head[8];
  size_t n;
  if (ms_input_peek(path, 0, head, sizeof head, &n) < 0) return 0;
  if (!is_zstd(head, n)) return is_magic((const char *)head, n);
  /* compressed: the first bytes of the text, streamed through zstd */
  char text[8];
  ZSTD_DStream *stream = ZSTD_createDStream();
  unsigned char *piece = malloc(16384);
  ZSTD_outBuffer out = {text, sizeof text, 0};
  uint64_t offset = 0;
  while (stream && piece && out.pos < out.size && offset < DETECT_MAX_COMPRESSED) {
    size_t got;
    if (ms_input_peek(path, offset, piece, 16384, &got) < 0 || got == 0) break;
    ZSTD_inBuffer in = {piece, got, 0};
    size_t left = 1;
    while (in.pos < in.size && out.pos < out.size && !ZSTD_isError(left))
      left = ZSTD_decompressStream(stream, &out, &in);
    if (ZSTD_isError(left) || got < 16384) break;
    offset += got;
  }
  ZSTD_freeDStream(stream);
  free(piece);
  return is_magic(text, out.pos);
}

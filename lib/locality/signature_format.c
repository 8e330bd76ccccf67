/* The .sig text format (docs/formats.md, after Appendix A of
 * chameleon-weinberg-dissertation-2008.txt) and its JSON twin.
 *
 * The writer is canonical: counts are printed with %.17g (exact for doubles, integers
 * print as integers), rates with %.6g as in the Appendix; a rate is always recomputed
 * from its counts, so text -> parse -> text is byte-identical. The parser is strict about
 * order and counts (17 reuse bins per level, levels = log2(width / word), one section per
 * bin) and checks that every printed rate and "Avg" agrees with its counts; blank lines
 * are ignored. Every error names the input and the line.
 *
 * Version 2 (written always; version 1 still read) adds the header line "Widths : no |
 * exact | shards RATE" and, in the whole-program bin only, the section TEMPORAL LOCALITY
 * BY WIDTH: one block of 17 HitRate lines per narrower width, increasing (present iff
 * Widths is not no).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/input.h"
#include "memsnap/output.h"
#include "memsnap/signature.h"

#define SIG_MAGIC "memsnap signature 2" /* written; "memsnap signature 1" is read too */
#define SIG_MAGIC_V1 "memsnap signature 1"
#define SIG_WIDTHS_SECTION "TEMPORAL LOCALITY BY WIDTH (Reuse Distance CDF of narrower lines):"
#define SIG_LOCATION_MAX 4000 /* bytes of a site's location kept in the text */

/* The shortest %g text of `value` that reads back exactly (0.1, not 0.10000000000000001):
 * still canonical, since the writer always picks the same text for the same double. */
static const char *shortest_text(double value, char text[32]) {
  for (int digits = 1; digits < 17; digits++) {
    snprintf(text, 32, "%.*g", digits, value);
    if (strtod(text, NULL) == value) return text;
  }
  snprintf(text, 32, "%.17g", value);
  return text;
}

static int log2_of(uint64_t value) {
  int shift = 0;
  while (shift < 63 && (1ull << shift) < value)
    shift++;
  return shift;
}

/* ---- text writer ---- */

static void write_ratio(FILE *out, double yes, double trials) {
  if (trials > 0)
    fprintf(out, "%.6g (%.17g/%.17g)\n", yes / trials, yes, trials);
  else
    fprintf(out, "NA (%.17g/%.17g)\n", yes, trials);
}

/* A text field and the end of its line, as a reader takes it back: "?" when empty,
 * control characters as '?', at most SIG_LOCATION_MAX bytes (long C++ names). */
static void write_field(FILE *out, const char *text) {
  if (!text || !*text) text = "?";
  for (size_t i = 0; i < SIG_LOCATION_MAX && text[i]; i++)
    fputc((unsigned char)text[i] < 0x20 ? '?' : text[i], out);
  fputc('\n', out);
}

static void write_bin_name(FILE *out, const ms_signature_bin *bin) {
  if (bin->site == MS_SIGNATURE_ALL)
    fprintf(out, "Bin: all\n");
  else if (bin->site == MS_SITE_NONE)
    fprintf(out, "Bin: none\n");
  else
    fprintf(out, "Bin: %" PRIu32 "\n", bin->site);
}

static void write_bin(FILE *out, const ms_signature *signature, const ms_signature_bin *bin) {
  write_bin_name(out, bin);
  if (bin->site != MS_SIGNATURE_ALL && bin->site != MS_SITE_NONE) {
    fprintf(out, "Site : 0x%" PRIx64 " ", bin->pc);
    write_field(out, bin->location);
  }
  fprintf(out, "Executions : %.17g\nModeled : %.17g\nReferences : %.17g\n", bin->executions,
          bin->modeled, bin->references);
  fprintf(out, "TEMPORAL LOCALITY (Reuse Distance CDF):\n");
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    fprintf(out, "HitRate(2^%d) = ", k);
    write_ratio(out, bin->hits[k], bin->references);
  }
  fprintf(out, "SPATIAL LOCALITY (Probability of Set Reuse):\n");
  int word_shift = log2_of(signature->word);
  for (int level = 0; level < signature->levels; level++) {
    double yes = 0, trials = 0;
    fprintf(out, "P(2^%d):\n", word_shift + level);
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      fprintf(out, "  Reuse(2^%d) = ", k);
      write_ratio(out, bin->yes[level][k], bin->trials[level][k]);
      yes += bin->yes[level][k];
      trials += bin->trials[level][k];
    }
    fprintf(out, "  Avg = ");
    write_ratio(out, yes, trials);
  }
  if (bin->site == MS_SIGNATURE_ALL && signature->widths > 0) {
    fprintf(out, SIG_WIDTHS_SECTION "\n");
    for (int level = 0; level < signature->levels; level++) {
      fprintf(out, "Width %" PRIu32 " : References %.17g\n", signature->word << level,
              signature->width_references[level]);
      for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
        fprintf(out, "  HitRate(2^%d) = ", k);
        write_ratio(out, signature->width_hits[level][k], signature->width_references[level]);
      }
    }
  }
}

int ms_signature_write_text(FILE *out, const ms_signature *signature) {
  fprintf(out, SIG_MAGIC "\n");
  fprintf(out, "Program : ");
  write_field(out, signature->program);
  fprintf(out, "Accesses Seen : %" PRIu64 "\n", signature->accesses_seen);
  fprintf(out, "Accesses Simulated : %" PRIu64 "\n", signature->accesses_modeled);
  if (signature->sample_off)
    fprintf(out, "Sample rate : %.6g (%" PRIu64 "/%" PRIu64 ")\n",
            (double)signature->sample_on /
                ((double)signature->sample_on + (double)signature->sample_off),
            signature->sample_on, signature->sample_off);
  else
    fprintf(out, "Sample rate : 1\n");
  fprintf(out, "Line Length (bytes) : %" PRIu32 "\n", signature->width);
  fprintf(out, "Size of Word (bytes) : %" PRIu32 "\n", signature->word);
  fprintf(out, "Using access sizes : no\n");
  if (signature->per_site)
    fprintf(out, "Per site : yes (cap %" PRIu64 ")\n", signature->site_cap);
  else
    fprintf(out, "Per site : no\n");
  fprintf(out, "Bins : %d\n", signature->bin_count);
  char rate[32];
  if (signature->widths <= 0)
    fprintf(out, "Widths : no\n");
  else if (signature->widths >= 1)
    fprintf(out, "Widths : exact\n");
  else
    fprintf(out, "Widths : shards %s\n", shortest_text(signature->widths, rate));
  for (int i = 0; i < signature->bin_count; i++) {
    fprintf(out, "\n");
    write_bin(out, signature, &signature->bins[i]);
  }
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the signature") : MS_OK;
}

int ms_signature_save(const ms_signature *signature, const char *path) {
  ms_output output;
  int rc = ms_output_open(&output, path);
  if (rc < 0) return rc;
  rc = ms_signature_write_text(output.file, signature);
  if (rc < 0) {
    ms_output_abort(&output);
    return ms_error_set(rc, "%s: cannot write the signature", path);
  }
  return ms_output_commit(&output);
}

/* ---- JSON ---- */

static json_object *json_count(double value) {
  if (value == floor(value) && fabs(value) < 9007199254740992.0)
    return json_object_new_int64((int64_t)value);
  return json_object_new_double(value);
}

static json_object *json_ratio(double yes, double trials, const char *yes_name,
                               const char *rate_name) {
  json_object *object = json_object_new_object();
  json_object_object_add(object, yes_name, json_count(yes));
  json_object_object_add(object, "trials", json_count(trials));
  json_object_object_add(object, rate_name,
                         trials > 0 ? json_object_new_double(yes / trials) : NULL);
  return object;
}

static json_object *json_bin(const ms_signature *signature, const ms_signature_bin *bin) {
  json_object *object = json_object_new_object();
  if (bin->site == MS_SIGNATURE_ALL)
    json_object_object_add(object, "site", json_object_new_string("all"));
  else if (bin->site == MS_SITE_NONE)
    json_object_object_add(object, "site", json_object_new_string("none"));
  else {
    json_object_object_add(object, "site", json_object_new_int64(bin->site));
    json_object_object_add(object, "pc", json_object_new_uint64(bin->pc));
    json_object_object_add(object, "location",
                           bin->location ? json_object_new_string(bin->location) : NULL);
  }
  json_object_object_add(object, "executions", json_count(bin->executions));
  json_object_object_add(object, "modeled", json_count(bin->modeled));
  json_object_object_add(object, "references", json_count(bin->references));
  json_object *cdf = json_object_new_array();
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    json_object *point = json_object_new_object();
    json_object_object_add(point, "depth", json_object_new_int64(1ll << k));
    json_object_object_add(point, "hits", json_count(bin->hits[k]));
    json_object_object_add(
        point, "hit_rate",
        bin->references > 0 ? json_object_new_double(bin->hits[k] / bin->references) : NULL);
    json_object_array_add(cdf, point);
  }
  json_object_object_add(object, "reuse_cdf", cdf);
  json_object *alphas = json_object_new_array();
  for (int level = 0; level < signature->levels; level++) {
    json_object *alpha = json_object_new_object();
    uint64_t subset = (uint64_t)signature->word << level;
    json_object_object_add(alpha, "subset", json_object_new_int64((int64_t)subset));
    json_object_object_add(alpha, "superset", json_object_new_int64((int64_t)subset * 2));
    json_object *bins = json_object_new_array();
    double yes = 0, trials = 0;
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      json_object *reuse = json_ratio(bin->yes[level][k], bin->trials[level][k], "yes", "alpha");
      json_object_object_add(reuse, "reuse", json_object_new_int64(1ll << k));
      json_object_array_add(bins, reuse);
      yes += bin->yes[level][k];
      trials += bin->trials[level][k];
    }
    json_object_object_add(alpha, "avg", json_ratio(yes, trials, "yes", "alpha"));
    json_object_object_add(alpha, "by_reuse", bins);
    json_object_array_add(alphas, alpha);
  }
  json_object_object_add(object, "alpha", alphas);
  return object;
}

/* The narrower widths' CDFs: null, or the method, rate and one row per width. */
static json_object *json_widths(const ms_signature *signature) {
  if (signature->widths <= 0) return NULL;
  json_object *object = json_object_new_object();
  int exact = signature->widths >= 1;
  json_object_object_add(object, "method", json_object_new_string(exact ? "exact" : "shards"));
  json_object_object_add(object, "rate", json_object_new_double(signature->widths));
  json_object *rows = json_object_new_array();
  for (int level = 0; level < signature->levels; level++) {
    json_object *row = json_object_new_object();
    double references = signature->width_references[level];
    json_object_object_add(row, "width", json_object_new_int64((int64_t)signature->word << level));
    json_object_object_add(row, "references", json_count(references));
    json_object *hits = json_object_new_array(), *rates = json_object_new_array();
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      double count = signature->width_hits[level][k];
      json_object_array_add(hits, json_count(count));
      json_object_array_add(rates,
                            references > 0 ? json_object_new_double(count / references) : NULL);
    }
    json_object_object_add(row, "hits", hits);
    json_object_object_add(row, "hit_rates", rates);
    json_object_array_add(rows, row);
  }
  json_object_object_add(object, "rows", rows);
  return object;
}

int ms_signature_write_json(FILE *out, const ms_signature *signature) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "format", json_object_new_string("memsnap signature"));
  json_object_object_add(root, "version", json_object_new_int(2));
  json_object_object_add(root, "program",
                         signature->program ? json_object_new_string(signature->program) : NULL);
  json_object_object_add(root, "accesses_seen", json_object_new_uint64(signature->accesses_seen));
  json_object_object_add(root, "accesses_simulated",
                         json_object_new_uint64(signature->accesses_modeled));
  json_object_object_add(root, "sample_on", json_object_new_uint64(signature->sample_on));
  json_object_object_add(root, "sample_off", json_object_new_uint64(signature->sample_off));
  json_object_object_add(root, "line_length", json_object_new_int64(signature->width));
  json_object_object_add(root, "word_size", json_object_new_int64(signature->word));
  json_object_object_add(root, "per_site", json_object_new_boolean(signature->per_site));
  json_object_object_add(root, "site_cap", json_object_new_uint64(signature->site_cap));
  json_object_object_add(root, "widths", json_widths(signature));
  /* One bin at a time: a tree of every site's bins (150 objects each) cost seconds in
   * json-c's allocator for the 5000 sites of a small dynamically linked program. */
  const char *head =
      json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  fprintf(out, "%.*s,\"bins\":[", (int)strlen(head) - 1, head);
  json_object_put(root);
  for (int i = 0; i < signature->bin_count; i++) {
    json_object *bin = json_bin(signature, &signature->bins[i]);
    fprintf(out, "%s%s\n", i ? "," : "",
            json_object_to_json_string_ext(bin, JSON_C_TO_STRING_PLAIN |
                                                    JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(bin);
  }
  fprintf(out, "]}\n");
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the signature") : MS_OK;
}

/* ---- parser ---- */

typedef struct cursor {
  int version; /* 1 or 2 */
  const char *text, *end;
  const char *line; /* current line (not NUL-terminated) */
  size_t length;
  uint64_t number;
  const char *name;
  char buf[SIG_LOCATION_MAX + 64]; /* the current line, NUL-terminated */
} cursor;

static void fail_message(cursor *c, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void fail_message(cursor *c, const char *format, ...) {
  char message[256];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  ms_error_set(MS_ERR_FORMAT, "%s:%" PRIu64 ": %s", c->name, c->number, message);
}
/* The status is outside the variadic function, where clang-tidy's analyzer (which does not
 * follow variadic calls) sees that every failing parse returns a negative status. */
#define fail(c, ...) (fail_message((c), __VA_ARGS__), MS_ERR_FORMAT)

/* Next non-blank line into c->buf; 0 at the end. */
static int next_line(cursor *c) {
  while (c->text < c->end) {
    const char *start = c->text;
    const char *newline = memchr(start, '\n', (size_t)(c->end - start));
    const char *stop = newline ? newline : c->end;
    c->text = newline ? newline + 1 : c->end;
    c->number++;
    size_t length = (size_t)(stop - start);
    if (length && start[length - 1] == '\r') length--;
    size_t blank = 0;
    while (blank < length && isspace((unsigned char)start[blank]))
      blank++;
    if (blank == length) continue;
    if (memchr(start, '\0', length)) return fail(c, "NUL byte in a line");
    if (length >= sizeof c->buf) return fail(c, "line too long");
    memcpy(c->buf, start, length);
    c->buf[length] = '\0';
    c->line = start;
    c->length = length;
    return 1;
  }
  c->number++;
  return 0;
}

/* The next line must start with `prefix`; returns what follows it in *rest. */
static int expect(cursor *c, const char *prefix, const char **rest) {
  *rest = "";
  int rc = next_line(c);
  if (rc < 0) return rc;
  if (rc == 0) return fail(c, "missing '%s' (the input ends)", prefix);
  size_t n = strlen(prefix);
  const char *at = c->buf;
  while (*at == ' ')
    at++;
  if (strncmp(at, prefix, n) != 0) return fail(c, "expected '%s', found '%.60s'", prefix, c->buf);
  *rest = at + n;
  return MS_OK;
}

static int parse_u64(cursor *c, const char *text, uint64_t *out, const char **end) {
  if (!isdigit((unsigned char)*text)) return fail(c, "bad number '%.40s'", text);
  errno = 0;
  char *stop;
  unsigned long long value = strtoull(text, &stop, 10);
  if (errno) return fail(c, "number out of range '%.40s'", text);
  *out = value;
  if (end)
    *end = stop;
  else if (*stop)
    return fail(c, "bad number '%.40s'", text);
  return MS_OK;
}

/* A count: a finite non-negative decimal; *end after it. */
static int parse_count(cursor *c, const char *text, double *out, const char **end) {
  if (!isdigit((unsigned char)*text)) return fail(c, "bad number '%.40s'", text);
  errno = 0;
  char *stop;
  double value = strtod(text, &stop);
  if (errno || !isfinite(value) || value < 0) return fail(c, "bad number '%.40s'", text);
  *out = value;
  *end = stop;
  return MS_OK;
}

static int rate_agrees(double printed, double exact) {
  return fabs(printed - exact) <= 1e-5 * fabs(exact) + 1e-12; /* %.6g: <= 5e-6 relative */
}

/* "RATE (YES/TRIALS)" or "NA (YES/TRIALS)" */
static int parse_ratio(cursor *c, const char *text, double *yes, double *trials) {
  double rate = -1;
  const char *p = text;
  if (strncmp(p, "NA ", 3) == 0) {
    p += 3;
  } else {
    char *stop;
    errno = 0;
    rate = strtod(p, &stop);
    if (stop == p || errno || !isfinite(rate) || *stop != ' ')
      return fail(c, "bad number '%.40s'", text);
    p = stop + 1;
  }
  if (*p++ != '(') return fail(c, "expected '(yes/trials)' after the rate");
  int rc = parse_count(c, p, yes, &p);
  if (rc < 0) return rc;
  if (*p++ != '/') return fail(c, "expected '/' between the counts");
  rc = parse_count(c, p, trials, &p);
  if (rc < 0) return rc;
  if (strcmp(p, ")") != 0) return fail(c, "expected ')' after the counts");
  if (*yes > *trials) return fail(c, "count %.17g exceeds its total %.17g", *yes, *trials);
  if (*trials == 0 ? rate != -1 : (rate < 0 || !rate_agrees(rate, *yes / *trials)))
    return fail(c, "rate disagrees with its counts (%.17g/%.17g)", *yes, *trials);
  return MS_OK;
}

static int parse_bin_count(cursor *c, const char *key, double *out) {
  const char *rest, *end;
  int rc = expect(c, key, &rest);
  if (rc < 0) return rc;
  rc = parse_count(c, rest, out, &end);
  if (rc == 0 && *end) return fail(c, "bad number '%.40s'", rest);
  return rc;
}

/* "Widths : no", "Widths : exact" or "Widths : shards RATE" (RATE in (0, 1)). */
static int parse_widths_header(cursor *c, ms_signature *s) {
  const char *rest;
  int rc = expect(c, "Widths : ", &rest);
  if (rc < 0) return rc;
  if (strcmp(rest, "no") == 0) {
    s->widths = 0;
  } else if (strcmp(rest, "exact") == 0) {
    s->widths = 1;
  } else if (strncmp(rest, "shards ", 7) == 0 && isdigit((unsigned char)rest[7])) {
    char *stop;
    errno = 0;
    s->widths = strtod(rest + 7, &stop);
    if (errno || *stop || !(s->widths > 0 && s->widths < 1))
      return fail(c, "bad 'Widths' SHARDS rate '%.40s' (in (0, 1))", rest + 7);
  } else {
    return fail(c, "bad 'Widths' value '%.40s' (no, exact or shards RATE)", rest);
  }
  return MS_OK;
}

static int parse_header(cursor *c, ms_signature *s) {
  const char *rest;
  int rc = next_line(c);
  if (rc > 0 && strcmp(c->buf, SIG_MAGIC_V1) == 0)
    c->version = 1;
  else if (rc > 0 && strcmp(c->buf, SIG_MAGIC) == 0)
    c->version = 2;
  else
    return rc < 0 ? rc
                  : fail(c, "not a memsnap signature (first line '" SIG_MAGIC_V1 "' or '" SIG_MAGIC
                            "')");
  if ((rc = expect(c, "Program : ", &rest)) < 0) return rc;
  if (strcmp(rest, "?") != 0 && !(s->program = strdup(rest)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  if ((rc = expect(c, "Accesses Seen : ", &rest)) < 0 ||
      (rc = parse_u64(c, rest, &s->accesses_seen, NULL)) < 0)
    return rc;
  if ((rc = expect(c, "Accesses Simulated : ", &rest)) < 0 ||
      (rc = parse_u64(c, rest, &s->accesses_modeled, NULL)) < 0)
    return rc;
  if ((rc = expect(c, "Sample rate : ", &rest)) < 0) return rc;
  if (strcmp(rest, "1") != 0) {
    const char *p = strchr(rest, '(');
    if (!p || (rc = parse_u64(c, p + 1, &s->sample_on, &p)) < 0)
      return rc < 0 ? rc : fail(c, "bad sample rate");
    if (*p != '/' || (rc = parse_u64(c, p + 1, &s->sample_off, &p)) < 0 || strcmp(p, ")") != 0 ||
        s->sample_on == 0 || s->sample_off == 0)
      return rc < 0 ? rc : fail(c, "bad sample rate '%.40s'", rest);
  }
  uint64_t width, word;
  if ((rc = expect(c, "Line Length (bytes) : ", &rest)) < 0 ||
      (rc = parse_u64(c, rest, &width, NULL)) < 0)
    return rc;
  if ((rc = expect(c, "Size of Word (bytes) : ", &rest)) < 0 ||
      (rc = parse_u64(c, rest, &word, NULL)) < 0)
    return rc;
  if (width > (1u << 30) || word == 0 || (width & (width - 1)) || (word & (word - 1)) ||
      word >= width || log2_of(width) - log2_of(word) > MS_SIGNATURE_MAX_LEVELS)
    return fail(c,
                "line length %" PRIu64 " and word size %" PRIu64
                " must be powers of two, word < line, line/word <= 2^%d",
                width, word, MS_SIGNATURE_MAX_LEVELS);
  s->width = (uint32_t)width;
  s->word = (uint32_t)word;
  s->levels = log2_of(width) - log2_of(word);
  if ((rc = expect(c, "Using access sizes : no", &rest)) < 0) return rc;
  if ((rc = expect(c, "Per site : ", &rest)) < 0) return rc;
  if (strncmp(rest, "yes (cap ", 9) == 0) {
    const char *p;
    s->per_site = 1;
    if ((rc = parse_u64(c, rest + 9, &s->site_cap, &p)) < 0) return rc;
    if (strcmp(p, ")") != 0) return fail(c, "bad 'Per site' value");
  } else if (strcmp(rest, "no") != 0)
    return fail(c, "bad 'Per site' value '%.40s'", rest);
  uint64_t bins;
  if ((rc = expect(c, "Bins : ", &rest)) < 0 || (rc = parse_u64(c, rest, &bins, NULL)) < 0)
    return rc;
  if (bins < 1 || (!s->per_site && bins != 1))
    return fail(c, "bad bin count %" PRIu64 " (1 without per-site bins)", bins);
  /* Every bin takes more than 256 bytes of text: a count the input cannot hold is refused
   * before anything is allocated for it. */
  if (bins > (uint64_t)(c->end - c->text) / 256 + 1)
    return fail(c, "%" PRIu64 " bins announced, more than the rest of the input holds", bins);
  s->bins = calloc(bins, sizeof *s->bins);
  if (!s->bins) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  s->bin_count = (int)bins;
  return c->version >= 2 ? parse_widths_header(c, s) : MS_OK;
}

static int parse_bin_name(cursor *c, const ms_signature *s, int index, ms_signature_bin *bin) {
  const char *rest;
  int rc = expect(c, "Bin: ", &rest);
  if (rc < 0) return rc;
  if (index == 0) {
    if (strcmp(rest, "all") != 0) return fail(c, "the first bin must be 'Bin: all'");
    bin->site = MS_SIGNATURE_ALL;
    return MS_OK;
  }
  if (strcmp(rest, "none") == 0) {
    bin->site = MS_SITE_NONE;
    return MS_OK;
  }
  uint64_t site;
  if ((rc = parse_u64(c, rest, &site, NULL)) < 0) return rc;
  if (site >= MS_SIGNATURE_ALL) return fail(c, "site id %" PRIu64 " out of range", site);
  if (index > 1 && s->bins[index - 1].site != MS_SITE_NONE && s->bins[index - 1].site >= site)
    return fail(c, "site bins must be in increasing order of site id");
  bin->site = (uint32_t)site;
  if ((rc = expect(c, "Site : 0x", &rest)) < 0) return rc;
  char *stop;
  errno = 0;
  bin->pc = strtoull(rest, &stop, 16);
  if (stop == rest || errno || *stop != ' ' || !isxdigit((unsigned char)*rest))
    return fail(c, "bad site address '%.40s'", rest);
  if (strcmp(stop + 1, "?") != 0 && !(bin->location = strdup(stop + 1)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  return MS_OK;
}

/* Whether the next non-blank line is `line`, the cursor left where it was. */
static int next_line_is(cursor *c, const char *line) {
  cursor saved = *c;
  int rc = next_line(c);
  int found = rc > 0 && strcmp(c->buf, line) == 0;
  *c = saved;
  return found;
}

/* The TEMPORAL LOCALITY BY WIDTH section of the whole-program bin: one block per level. */
static int parse_widths(cursor *c, ms_signature *s) {
  const char *rest;
  int rc = expect(c, SIG_WIDTHS_SECTION, &rest);
  if (rc < 0) return rc;
  for (int level = 0; level < s->levels; level++) {
    uint64_t width;
    const char *end;
    if ((rc = expect(c, "Width ", &rest)) < 0 || (rc = parse_u64(c, rest, &width, &end)) < 0)
      return rc;
    if (width != (uint64_t)s->word << level)
      return fail(c, "width %" PRIu64 " out of order: expected Width %" PRIu64, width,
                  (uint64_t)s->word << level);
    static const char separator[] = " : References ";
    if (strncmp(end, separator, sizeof separator - 1) != 0)
      return fail(c, "expected 'Width %" PRIu64 " : References N'", width);
    double *references = &s->width_references[level];
    if ((rc = parse_count(c, end + sizeof separator - 1, references, &end)) < 0) return rc;
    if (*end) return fail(c, "bad number '%.40s'", rest);
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      char key[32];
      double total;
      double *hits = s->width_hits[level];
      snprintf(key, sizeof key, "HitRate(2^%d) = ", k);
      if ((rc = expect(c, key, &rest)) < 0) return rc;
      if ((rc = parse_ratio(c, rest, &hits[k], &total)) < 0) return rc;
      if (total != *references)
        return fail(c, "total %.17g differs from References %.17g", total, *references);
      if (k > 0 && hits[k] < hits[k - 1]) return fail(c, "hit counts must not decrease with depth");
    }
  }
  return MS_OK;
}

static int parse_bin(cursor *c, ms_signature *s, int index, ms_signature_bin *bin) {
  const char *rest;
  int rc = parse_bin_name(c, s, index, bin);
  if (rc < 0) return rc;
  if (index > 0 && bin->site == MS_SITE_NONE && index != s->bin_count - 1)
    return fail(c, "'Bin: none' must be the last bin");
  if ((rc = parse_bin_count(c, "Executions : ", &bin->executions)) < 0 ||
      (rc = parse_bin_count(c, "Modeled : ", &bin->modeled)) < 0 ||
      (rc = parse_bin_count(c, "References : ", &bin->references)) < 0)
    return rc;
  if ((rc = expect(c, "TEMPORAL LOCALITY (Reuse Distance CDF):", &rest)) < 0) return rc;
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    char key[32];
    double references;
    snprintf(key, sizeof key, "HitRate(2^%d) = ", k);
    if ((rc = expect(c, key, &rest)) < 0) return rc;
    if ((rc = parse_ratio(c, rest, &bin->hits[k], &references)) < 0) return rc;
    if (references != bin->references)
      return fail(c, "total %.17g differs from References %.17g", references, bin->references);
    if (k > 0 && bin->hits[k] < bin->hits[k - 1])
      return fail(c, "hit counts must not decrease with depth");
  }
  if ((rc = expect(c, "SPATIAL LOCALITY (Probability of Set Reuse):", &rest)) < 0) return rc;
  int word_shift = log2_of(s->word);
  for (int level = 0; level < s->levels; level++) {
    char key[32];
    double yes = 0, trials = 0, avg_yes, avg_trials;
    snprintf(key, sizeof key, "P(2^%d):", word_shift + level);
    if ((rc = expect(c, key, &rest)) < 0) return rc;
    if (*rest) return fail(c, "unexpected text after '%s'", key);
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      snprintf(key, sizeof key, "Reuse(2^%d) = ", k);
      if ((rc = expect(c, key, &rest)) < 0) return rc;
      if ((rc = parse_ratio(c, rest, &bin->yes[level][k], &bin->trials[level][k])) < 0) return rc;
      yes += bin->yes[level][k];
      trials += bin->trials[level][k];
    }
    if ((rc = expect(c, "Avg = ", &rest)) < 0) return rc;
    if ((rc = parse_ratio(c, rest, &avg_yes, &avg_trials)) < 0) return rc;
    if (!rate_agrees(avg_yes, yes) || !rate_agrees(avg_trials, trials))
      return fail(c, "Avg counts differ from the sum of the reuse bins");
  }
  if (index == 0 && s->widths > 0) return parse_widths(c, s);
  if (next_line_is(c, SIG_WIDTHS_SECTION)) {
    next_line(c); /* the error names the section's line */
    return fail(c, c->version < 2 ? "a version 1 signature has no section by width"
                   : index > 0    ? "only the whole-program bin has a section by width"
                                  : "a section by width, but the header says 'Widths : no'");
  }
  return MS_OK;
}

int ms_signature_parse(const char *text, size_t length, const char *name, ms_signature **out) {
  *out = NULL;
  cursor c = {.text = text, .end = text + length, .name = name ? name : "signature"};
  ms_signature *s = calloc(1, sizeof *s);
  if (!s) return ms_error_set(MS_ERR_NOMEM, "out of memory for a signature");
  int rc = parse_header(&c, s);
  for (int i = 0; rc == MS_OK && i < s->bin_count; i++)
    rc = parse_bin(&c, s, i, &s->bins[i]);
  if (rc == MS_OK) {
    int more = next_line(&c);
    if (more < 0) rc = more;
    if (more > 0) rc = fail(&c, "unexpected text after the last bin: '%.40s'", c.buf);
  }
  if (rc < 0) {
    ms_signature_free(s);
    return rc;
  }
  *out = s;
  return MS_OK;
}

int ms_signature_load(const char *path, ms_signature **out) {
  *out = NULL;
  FILE *file; /* "-", a pipe or a FIFO too (memsnap/input.h) */
  int rc = ms_input_open_seekable(path, &file);
  if (rc < 0) return rc;
  size_t capacity = 1 << 16, length = 0;
  char *text = malloc(capacity);
  while (text) {
    size_t n = fread(text + length, 1, capacity - length, file);
    length += n;
    if (length < capacity) break;
    char *grown = capacity < ((size_t)1 << 34) ? realloc(text, capacity * 2) : NULL;
    if (!grown) {
      free(text);
      text = NULL;
      break;
    }
    text = grown;
    capacity *= 2;
  }
  int error = ferror(file);
  fclose(file);
  if (!text) return ms_error_set(MS_ERR_NOMEM, "%s: out of memory", path);
  if (error) {
    free(text);
    return ms_error_set(MS_ERR_IO, "%s: read error", path);
  }
  rc = ms_signature_parse(text, length, ms_input_name(path), out);
  free(text);
  return rc;
}

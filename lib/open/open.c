/* What an input holds, and any input opened as a source (see memsnap/open.h). */
#include "memsnap/open.h"

#include <string.h>
#include <strings.h>

#include "memsnap/error.h"
#include "memsnap/input.h"
#include "memsnap/psnap.h"
#include "memsnap/synth.h"
#include "memsnap/trace.h"

static const char signature_line[] = "memsnap signature ";
static const unsigned char zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};

static int has_extension(const char *path, const char *extension) {
  const char *dot = strrchr(path, '.');
  return dot && !strchr(dot, '/') && strcasecmp(dot, extension) == 0;
}

/* An .mtr is a seed when its metadata says so; one whose metadata cannot be read is left
 * to its reader, which says what is wrong. */
static ms_input_kind mtr_kind(const char *path) {
  ms_mtr_stat stat;
  ms_stream_info info = {0};
  ms_seed_info seed;
  int seeded =
      ms_mtr_stat_file(path, &stat, &info) == MS_OK && ms_seed_info_parse(&info, path, &seed) == 1;
  ms_stream_info_clear(&info);
  ms_error_clear();
  return seeded ? MS_INPUT_SEED : MS_INPUT_MTR;
}

int ms_input_kind_of(const char *path, ms_input_kind *kind) {
  char head[sizeof signature_line - 1];
  size_t n;
  *kind = MS_INPUT_UNKNOWN;
  int rc = ms_input_peek(path, 0, head, sizeof head, &n);
  if (rc < 0) return rc;
  if (n == sizeof head && memcmp(head, signature_line, sizeof head) == 0) {
    *kind = MS_INPUT_SIGNATURE;
  } else if (ms_psnap_detect(path)) {
    *kind = MS_INPUT_PSNAP;
  } else if (n >= sizeof zstd_magic && memcmp(head, zstd_magic, sizeof zstd_magic) == 0) {
    *kind = MS_INPUT_ZSTD;
  } else {
    /* the content first, the extension (.mtr, .lackey, .din) when it says nothing */
    switch (ms_trace_detect(path)) {
    case MS_FORMAT_MTR: *kind = mtr_kind(path); break;
    case MS_FORMAT_LACKEY: *kind = MS_INPUT_LACKEY; break;
    case MS_FORMAT_DIN: *kind = MS_INPUT_DIN; break;
    default:
      *kind = has_extension(path, ".sig") ? MS_INPUT_SIGNATURE
              : n == 0                    ? MS_INPUT_EMPTY
                                          : MS_INPUT_UNKNOWN;
      break;
    }
  }
  return 0;
}

const char *ms_input_kind_name(ms_input_kind kind) {
  switch (kind) {
  case MS_INPUT_EMPTY: return "empty";
  case MS_INPUT_MTR: return "mtr trace";
  case MS_INPUT_SEED: return "trace seed";
  case MS_INPUT_LACKEY: return "lackey trace";
  case MS_INPUT_DIN: return "din trace";
  case MS_INPUT_PSNAP: return "psnap profile";
  case MS_INPUT_SIGNATURE: return "memory signature";
  case MS_INPUT_ZSTD: return "zstd data";
  default: return "unknown";
  }
}

int ms_input_kind_has_accesses(ms_input_kind kind) {
  return kind == MS_INPUT_MTR || kind == MS_INPUT_SEED || kind == MS_INPUT_LACKEY ||
         kind == MS_INPUT_DIN || kind == MS_INPUT_PSNAP;
}

static int open_expanded_seed(const char *path, const ms_open_options *o, ms_source **out) {
  ms_mtr_stat stat;
  ms_stream_info info = {0};
  ms_seed_info seed = {0};
  int rc = ms_mtr_stat_file(path, &stat, &info);
  if (rc == MS_OK) rc = ms_seed_info_parse(&info, path, &seed);
  ms_stream_info_clear(&info);
  if (rc == 0)
    rc = ms_error_set(MS_ERR_ARG, "%s: --footprint/--length expand trace seeds only", path);
  if (rc < 0) return rc;
  uint64_t footprint = o->seed_footprint ? o->seed_footprint : seed.footprint;
  return ms_seed_source_open(path, ms_seed_replications(&seed, footprint), o->seed_length, out);
}

int ms_open(const char *path, int program_argc, char *const *program_argv,
            const ms_open_options *options, ms_source **out) {
  static const ms_open_options defaults;
  const ms_open_options *o = options ? options : &defaults;
  *out = NULL;
  if (program_argc > 0 && (o->pick_rank || o->pick_thread))
    return ms_error_set(MS_ERR_ARG,
                        "%s: --rank and --thread pick in a profile; a live program is"
                        " observed whole",
                        program_argv[0]);
  if (program_argc > 0) return ms_capture_open(&o->capture, program_argc, program_argv, out);
  if (!path) return ms_error_set(MS_ERR_ARG, "no input: give a trace file or -- PROGRAM ARGS");
  ms_input_kind kind;
  /* an input that cannot be read is left to the trace readers, whose message says why */
  if (ms_input_kind_of(path, &kind) < 0) kind = MS_INPUT_UNKNOWN;
  if (kind == MS_INPUT_PSNAP)
    return ms_psnap_open_picked(path, o->pick_rank ? (int64_t)o->rank : -1,
                                o->pick_thread ? (int64_t)o->thread : -1, out);
  if (o->pick_rank || o->pick_thread)
    return ms_error_set(MS_ERR_ARG, "%s: --rank and --thread pick in a profile, this is a %s", path,
                        ms_input_kind_name(kind));
  if (o->expand_seeds) return open_expanded_seed(path, o, out);
  return ms_trace_open(path, out);
}

int ms_input_count(const char *path, ms_input_counts *counts, ms_stream_info *info) {
  return ms_input_count_with(path, NULL, counts, info);
}

int ms_input_count_with(const char *path, const ms_open_options *options, ms_input_counts *counts,
                        ms_stream_info *info) {
  memset(counts, 0, sizeof *counts);
  ms_source *source;
  int rc = ms_open(path, 0, NULL, options, &source);
  if (rc < 0) return rc;
  ms_batch batch;
  rc = ms_batch_init(&batch, 0);
  uint32_t threads = 0;
  while (rc == 0) {
    int n = ms_source_next(source, &batch);
    if (n <= 0) {
      rc = n;
      break;
    }
    for (size_t i = 0; i < batch.count; i++) {
      counts->by_kind[batch.accesses[i].kind % MS_ACCESS_KIND_COUNT]++;
      if (batch.accesses[i].thread >= threads) threads = batch.accesses[i].thread + 1u;
    }
    counts->accesses += batch.count;
  }
  ms_batch_free(&batch);
  if (rc == 0) {
    *info = source->info; /* the description moves to the caller */
    memset(&source->info, 0, sizeof source->info);
    if (threads > info->thread_count) info->thread_count = threads;
  }
  ms_source_destroy(source);
  return rc;
}

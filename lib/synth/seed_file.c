/* Seed files and their expansion (docs/formats.md, "Trace seeds").
 *
 * A seed is an ordinary .mtr trace (version 1, unchanged) whose header says capture kind
 * "seed" and whose arguments, after argv[0] = "memsnap-seed", are `key=value` strings: the
 * metadata of section 4.1 of chameleon-weinberg-dissertation-2008.txt (length, word size,
 * working-set size, minimum replications, the signature) plus memsnap's own (width,
 * unique, footprint, errors). Its records are loads of `word` bytes at
 * block * width + word index * word, no site, thread 0.
 * Expansion (sections 4.1, 5.3): replication r adds r * working_set to every address, so
 * replications are disjoint; after the last replication the first one starts again. The
 * seed is re-read from its file (ms_source_seek to 0), so memory stays constant.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/synth.h"
#include "memsnap/trace.h"

/* An in-memory seed as a source (to feed the .mtr writer). */
typedef struct seed_memory_source {
  ms_source base;
  const ms_seed *seed;
  uint64_t next;
} seed_memory_source;

static int memory_next(ms_source *source, ms_batch *batch) {
  seed_memory_source *s = (seed_memory_source *)source;
  size_t n = 0;
  for (; n < batch->capacity && s->next < s->seed->length; n++, s->next++) {
    ms_access *a = &batch->accesses[n];
    memset(a, 0, sizeof *a);
    a->address = (uint64_t)s->seed->blocks[s->next] * s->seed->width +
                 (uint64_t)s->seed->words[s->next] * s->seed->word;
    a->size = (uint8_t)(s->seed->word < 255 ? s->seed->word : 255);
    a->kind = MS_LOAD;
    a->site = MS_SITE_NONE;
  }
  batch->count = n;
  return (int)n;
}

static void memory_destroy(ms_source *source) { ms_stream_info_clear(&source->info); }

static const ms_source_ops memory_ops = {memory_next, NULL, memory_destroy};

#define SEED_KEYS 14

int ms_seed_save(const ms_seed *seed, const char *path) {
  char values[SEED_KEYS - 1][96];
  char *argv[SEED_KEYS + 1];
  int argc = 0;
  argv[argc++] = "memsnap-seed";
  snprintf(values[0], sizeof values[0], "seed-version=1");
  snprintf(values[1], sizeof values[1], "length=%" PRIu64, seed->length);
  snprintf(values[2], sizeof values[2], "width=%u", seed->width);
  snprintf(values[3], sizeof values[3], "word=%u", seed->word);
  snprintf(values[4], sizeof values[4], "working-set=%" PRIu64, seed->working_set);
  snprintf(values[5], sizeof values[5], "unique-blocks=%" PRIu64, seed->unique_blocks);
  snprintf(values[6], sizeof values[6], "min-replications=%" PRIu64, seed->min_replications);
  snprintf(values[7], sizeof values[7], "unique=%d", seed->unique);
  snprintf(values[8], sizeof values[8], "footprint=%" PRIu64, seed->footprint);
  snprintf(values[9], sizeof values[9], "iterations=%d", seed->iterations);
  snprintf(values[10], sizeof values[10], "cdf-mean-error=%.6f", seed->mean_error);
  snprintf(values[11], sizeof values[11], "cdf-max-error=%.6f", seed->max_error);
  snprintf(values[12], sizeof values[12], "alpha-error=%.6f", seed->alpha_error);
  for (int i = 0; i < SEED_KEYS - 1; i++)
    argv[argc++] = values[i];
  size_t text_length = strlen(seed->signature_text);
  char *signature = malloc(text_length + sizeof "signature=");
  if (!signature) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  memcpy(signature, "signature=", sizeof "signature=" - 1);
  memcpy(signature + sizeof "signature=" - 1, seed->signature_text, text_length + 1);
  argv[argc++] = signature;

  seed_memory_source source = {{&memory_ops, {0}}, seed, 0};
  source.base.info.exit_status = -1;
  source.base.info.thread_count = 1;
  source.base.info.access_count = seed->length;
  int rc = ms_stream_info_set_program(&source.base.info, "memsnap-seed", argc, argv);
  free(signature);
  source.base.info.capture = strdup("seed");
  source.base.info.sites = ms_site_table_new();
  if (rc == MS_OK && (!source.base.info.capture || !source.base.info.sites))
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  ms_sink *sink = NULL;
  if (rc == MS_OK) rc = ms_mtr_sink_new(path, &sink);
  if (rc == MS_OK) rc = ms_pipeline_run(&source.base, &sink, 1, 0);
  ms_sink_destroy(sink);
  memory_destroy(&source.base);
  return rc;
}

static int parse_u64(const char *text, uint64_t *value) {
  char *end;
  if (!*text || *text == '-') return -1;
  *value = strtoull(text, &end, 10);
  return *end ? -1 : 0;
}

int ms_seed_info_parse(const ms_stream_info *info, const char *name, ms_seed_info *out) {
  memset(out, 0, sizeof *out);
  if (!info->capture || strcmp(info->capture, "seed") != 0) return 0;
  struct {
    const char *key;
    uint64_t *value;
    int seen;
  } keys[] = {{"length", &out->length, 0},
              {"working-set", &out->working_set, 0},
              {"min-replications", &out->min_replications, 0},
              {"footprint", &out->footprint, 0},
              {"unique-blocks", &out->unique_blocks, 0}};
  uint64_t width = 0, word = 0, unique = 2;
  for (int i = 1; i < info->argc; i++) {
    const char *arg = info->argv[i];
    const char *eq = strchr(arg, '=');
    if (!eq) return ms_error_set(MS_ERR_FORMAT, "%s: seed metadata %d is not key=value", name, i);
    size_t key_length = (size_t)(eq - arg);
    uint64_t *target = NULL;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
      if (strlen(keys[k].key) == key_length && !strncmp(arg, keys[k].key, key_length)) {
        target = keys[k].value;
        keys[k].seen = 1;
      }
    if (!target && !strncmp(arg, "width=", 6)) target = &width;
    if (!target && !strncmp(arg, "word=", 5)) target = &word;
    if (!target && !strncmp(arg, "unique=", 7)) target = &unique;
    if (target && parse_u64(eq + 1, target) < 0)
      return ms_error_set(MS_ERR_FORMAT, "%s: seed metadata '%.40s' is not a number", name, arg);
  }
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
    if (!keys[k].seen)
      return ms_error_set(MS_ERR_FORMAT, "%s: seed metadata lacks %s", name, keys[k].key);
  if (out->length == 0)
    return ms_error_set(MS_ERR_FORMAT, "%s: seed metadata says length 0: a seed of no references",
                        name);
  if (word == 0 || width == 0 || (word & (word - 1)) || (width & (width - 1)) || word >= width ||
      width > (1u << 20) || unique > 1 || out->working_set == 0 ||
      out->unique_blocks > UINT32_MAX || out->length > UINT32_MAX ||
      out->working_set != out->unique_blocks * width || out->min_replications == 0)
    return ms_error_set(MS_ERR_FORMAT,
                        "%s: inconsistent seed metadata (width %" PRIu64 ", word %" PRIu64
                        ", working set %" PRIu64 ")",
                        name, width, word, out->working_set);
  out->width = (uint32_t)width;
  out->word = (uint32_t)word;
  out->unique = (int)unique;
  return 1;
}

uint64_t ms_seed_replications(const ms_seed_info *info, uint64_t footprint) {
  uint64_t replications = (footprint + info->working_set - 1) / info->working_set;
  return replications < info->min_replications ? info->min_replications : replications;
}

typedef struct expansion_source {
  ms_source base;
  ms_source *seed;
  uint64_t working_set, seed_length;
  uint64_t replications, replication, total, emitted;
  uint64_t in_pass; /* records read in the current pass over the seed */
  char *name;
} expansion_source;

static int expansion_next(ms_source *source, ms_batch *batch) {
  expansion_source *e = (expansion_source *)source;
  batch->count = 0;
  if (e->emitted >= e->total) return 0;
  size_t capacity = batch->capacity;
  if (e->total - e->emitted < capacity) batch->capacity = (size_t)(e->total - e->emitted);
  int n = ms_source_next(e->seed, batch);
  if (n == 0) {
    if (e->in_pass != e->seed_length) {
      batch->capacity = capacity;
      return ms_error_set(MS_ERR_FORMAT, "%s: the seed has %llu records, its metadata says %llu",
                          e->name, (unsigned long long)e->in_pass,
                          (unsigned long long)e->seed_length);
    }
    e->in_pass = 0;
    int rc = ms_source_seek(e->seed, 0);
    e->replication = (e->replication + 1) % e->replications;
    n = rc < 0 ? rc : ms_source_next(e->seed, batch);
    if (n == 0) n = ms_error_set(MS_ERR_FORMAT, "seed: the seed has no accesses");
  }
  batch->capacity = capacity;
  if (n < 0) return n;
  uint64_t offset = e->replication * e->working_set;
  for (int i = 0; i < n; i++)
    batch->accesses[i].address += offset;
  e->emitted += (uint64_t)n;
  e->in_pass += (uint64_t)n;
  return n;
}

static void expansion_destroy(ms_source *source) {
  expansion_source *e = (expansion_source *)source;
  ms_source_destroy(e->seed);
  ms_stream_info_clear(&source->info);
  free(e->name);
  free(e);
}

static const ms_source_ops expansion_ops = {expansion_next, NULL, expansion_destroy};

int ms_seed_source_open(const char *path, uint64_t replications, uint64_t length, ms_source **out) {
  *out = NULL;
  ms_source *seed = NULL;
  ms_seed_info info;
  int rc = ms_mtr_open(path, &seed);
  if (rc < 0) return rc;
  rc = ms_seed_info_parse(ms_source_info(seed), path, &info);
  if (rc == 0)
    rc = ms_error_set(MS_ERR_ARG, "%s: not a trace seed (memsnap synth writes them)", path);
  expansion_source *e = rc == 1 ? calloc(1, sizeof *e) : NULL;
  if (rc == 1 && !e) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (rc != 1) { /* negative: ms_seed_info_parse returns 1, 0 (refused above) or < 0 */
    ms_source_destroy(seed);
    return rc;
  }
  if (replications == 0) replications = 1;
  e->base.ops = &expansion_ops;
  e->name = strdup(path);
  e->seed = seed;
  e->working_set = info.working_set;
  e->seed_length = info.length;
  e->replications = replications;
  e->total = length ? length : replications * info.length;
  const ms_stream_info *inner = ms_source_info(seed);
  e->base.info.exit_status = -1;
  e->base.info.thread_count = 1;
  e->base.info.access_count = e->total;
  rc = ms_stream_info_set_program(&e->base.info, inner->program, inner->argc, inner->argv);
  e->base.info.capture = strdup("seed");
  e->base.info.sites = ms_site_table_new();
  if (rc == MS_OK && (!e->base.info.capture || !e->base.info.sites || !e->name))
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (rc < 0) {
    expansion_destroy(&e->base);
    return rc;
  }
  *out = &e->base;
  return MS_OK;
}

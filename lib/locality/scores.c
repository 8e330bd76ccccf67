/* Spatial and temporal locality scores: see scores.h for the definitions.
 *
 * Temporal: word reuse distances come from the same engine as the cache surface
 * (reuse_stack.c) with thresholds 2^0..2^L, so the zone of a reference is its bin i and
 * weighs (L - i) / L. Spatial: a ring of the first words of the last `lookback` accesses,
 * scanned for the smallest non-zero distance (32 compares per access by default).
 * Per-site sums grow with the largest site id seen.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/scores.h"
#include "reuse_stack.h"

struct ms_scores_builder {
  ms_scores_config config;
  int word_shift;
  reuse_stack stack;
  double weight[26]; /* by zone */
  uint64_t *ring;    /* first words of the last accesses */
  int ring_used, ring_next;
  ms_locality_score whole, unsited;
  ms_locality_score *sites;
  uint32_t site_capacity;
};

void ms_scores_config_default(ms_scores_config *config) {
  config->word = 8;
  config->lookback = 32;
  config->log2_window = 16;
}

int ms_scores_config_check(const ms_scores_config *c) {
  if (c->word == 0 || (c->word & (c->word - 1)) || c->word > 4096)
    return ms_error_set(MS_ERR_ARG, "scores: word %u is not a power of two in 1..4096", c->word);
  if (c->lookback < 1 || c->lookback > MS_SCORES_MAX_LOOKBACK)
    return ms_error_set(MS_ERR_ARG, "scores: lookback %d is not in 1..%d", c->lookback,
                        MS_SCORES_MAX_LOOKBACK);
  if (c->log2_window < 1 || c->log2_window > 20)
    return ms_error_set(MS_ERR_ARG, "scores: log2 of the temporal window %d is not in 1..20",
                        c->log2_window);
  return MS_OK;
}

int ms_scores_builder_new(const ms_scores_config *config, ms_scores_builder **out) {
  *out = NULL;
  int rc = ms_scores_config_check(config);
  if (rc < 0) return rc;
  ms_scores_builder *b = calloc(1, sizeof *b);
  if (!b) return ms_error_set(MS_ERR_NOMEM, "out of memory for locality scores");
  b->config = *config;
  while ((1u << b->word_shift) < config->word)
    b->word_shift++;
  const int L = config->log2_window;
  uint64_t thresholds[25];
  for (int i = 0; i <= L; i++) {
    thresholds[i] = 1ull << i; /* zone i: 2^(i-1) <= distance < 2^i, i.e. r in (2^(i-1), 2^i] */
    b->weight[i] = (double)(L - i) / L;
  }
  b->weight[L + 1] = 0.0; /* deeper than N, or a first reference */
  b->ring = calloc((size_t)config->lookback, sizeof *b->ring);
  if (!b->ring || (rc = reuse_stack_init(&b->stack, thresholds, L + 1)) < 0) {
    free(b->ring);
    free(b);
    return rc < 0 ? rc : ms_error_set(MS_ERR_NOMEM, "out of memory for locality scores");
  }
  b->whole.site = b->unsited.site = MS_SITE_NONE;
  *out = b;
  return MS_OK;
}

void ms_scores_builder_free(ms_scores_builder *b) {
  if (!b) return;
  reuse_stack_free(&b->stack);
  free(b->ring);
  free(b->sites);
  free(b);
}

static ms_locality_score *site_score(ms_scores_builder *b, uint32_t site) {
  if (site == MS_SITE_NONE) return &b->unsited;
  if (site >= b->site_capacity) {
    uint32_t capacity = b->site_capacity ? b->site_capacity : 256;
    while (capacity <= site)
      capacity *= 2;
    ms_locality_score *grown = realloc(b->sites, capacity * sizeof *grown);
    if (!grown) return NULL;
    memset(grown + b->site_capacity, 0, (capacity - b->site_capacity) * sizeof *grown);
    for (uint32_t s = b->site_capacity; s < capacity; s++)
      grown[s].site = s;
    b->sites = grown;
    b->site_capacity = capacity;
  }
  return &b->sites[site];
}

/* 1/s for the smallest non-zero distance s from `word` to the words of the window. */
static inline double spatial_weight(const ms_scores_builder *b, uint64_t word) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < b->ring_used; i++) {
    uint64_t other = b->ring[i];
    uint64_t distance = word > other ? word - other : other - word;
    if (distance && distance < best) best = distance;
  }
  return best == UINT64_MAX ? 0.0 : 1.0 / (double)best;
}

int ms_scores_builder_add(ms_scores_builder *b, const ms_batch *batch) {
  const int shift = b->word_shift;
  for (size_t n = 0; n < batch->count; n++) {
    const ms_access *a = &batch->accesses[n];
    ms_locality_score *score = site_score(b, a->site);
    if (!score) return ms_error_set(MS_ERR_NOMEM, "out of memory for %u sites", a->site);
    uint64_t first = a->address >> shift;
    uint64_t last = (a->address + (a->size ? a->size - 1u : 0u)) >> shift;
    if (last < first) last = first; /* wraps at the top of the address space */
    double spatial = spatial_weight(b, first);
    b->ring[b->ring_next] = first;
    b->ring_next = (b->ring_next + 1) % b->config.lookback;
    if (b->ring_used < b->config.lookback) b->ring_used++;
    double temporal = 0.0;
    for (uint64_t word = first;; word++) {
      int zone = reuse_stack_reference(&b->stack, word);
      if (zone < 0) return zone;
      temporal += b->weight[zone];
      if (word == last) break;
    }
    uint64_t references = last - first + 1;
    score->accesses++;
    score->references += references;
    score->spatial_sum += spatial;
    score->temporal_sum += temporal;
    b->whole.accesses++;
    b->whole.references += references;
    b->whole.spatial_sum += spatial;
    b->whole.temporal_sum += temporal;
  }
  return MS_OK;
}

static void finish(ms_locality_score *s, const ms_locality_score *whole) {
  s->spatial = s->accesses ? s->spatial_sum / (double)s->accesses : 0.0;
  s->temporal = s->references ? s->temporal_sum / (double)s->references : 0.0;
  s->spatial_share = whole->accesses ? s->spatial_sum / (double)whole->accesses : 0.0;
  s->temporal_share = whole->references ? s->temporal_sum / (double)whole->references : 0.0;
}

static int by_contribution(const void *pa, const void *pb) {
  const ms_locality_score *a = pa, *b = pb;
  double ca = a->spatial_share + a->temporal_share, cb = b->spatial_share + b->temporal_share;
  if (ca != cb) return ca > cb ? -1 : 1;
  if (a->accesses != b->accesses) return a->accesses > b->accesses ? -1 : 1;
  return a->site < b->site ? -1 : a->site > b->site;
}

int ms_scores_builder_result(const ms_scores_builder *b, ms_scores *out) {
  memset(out, 0, sizeof *out);
  out->config = b->config;
  out->whole = b->whole;
  finish(&out->whole, &b->whole);
  int count = b->unsited.accesses ? 1 : 0;
  for (uint32_t s = 0; s < b->site_capacity; s++)
    count += b->sites[s].accesses ? 1 : 0;
  out->sites = calloc(count ? (size_t)count : 1, sizeof *out->sites);
  if (!out->sites) return ms_error_set(MS_ERR_NOMEM, "out of memory for locality scores");
  for (uint32_t s = 0; s < b->site_capacity; s++)
    if (b->sites[s].accesses) out->sites[out->site_count++] = b->sites[s];
  if (b->unsited.accesses) out->sites[out->site_count++] = b->unsited;
  for (int i = 0; i < out->site_count; i++)
    finish(&out->sites[i], &b->whole);
  qsort(out->sites, (size_t)out->site_count, sizeof *out->sites, by_contribution);
  return MS_OK;
}

void ms_scores_clear(ms_scores *scores) {
  free(scores->sites);
  memset(scores, 0, sizeof *scores);
}

/* ---- reports ---- */

static const char *where(const ms_locality_score *s, const ms_site_table *sites, char *buf,
                         size_t size) {
  const ms_site *site = sites && s->site != MS_SITE_NONE ? ms_site_table_get(sites, s->site) : NULL;
  if (site) return ms_site_describe(site, buf, size);
  snprintf(buf, size, s->site == MS_SITE_NONE ? "(no site)" : "site %u", s->site);
  return buf;
}

int ms_scores_write_table(FILE *out, const ms_scores *scores, const ms_site_table *sites, int top) {
  const ms_locality_score *w = &scores->whole;
  fprintf(out,
          "locality scores (words of %u bytes; spatial: 1/stride over a lookback of %d accesses;"
          " temporal: reuse distances in bins 2^i up to 2^%d words)\n",
          scores->config.word, scores->config.lookback, scores->config.log2_window);
  fprintf(out,
          "whole run: spatial %.4f  temporal %.4f  (%" PRIu64 " accesses, %" PRIu64
          " word references)\n\n",
          w->spatial, w->temporal, w->accesses, w->references);
  int count = top < 0 || top > scores->site_count ? scores->site_count : top;
  fprintf(out, "%4s %12s %7s %8s %8s %9s %9s  %s\n", "rank", "accesses", "share", "spatial",
          "temporal", "contrib-s", "contrib-t", "site");
  for (int i = 0; i < count; i++) {
    const ms_locality_score *s = &scores->sites[i];
    char buf[512];
    fprintf(out, "%4d %12" PRIu64 " %6.2f%% %8.4f %8.4f %9.4f %9.4f  %s\n", i + 1, s->accesses,
            w->accesses ? 100.0 * (double)s->accesses / (double)w->accesses : 0.0, s->spatial,
            s->temporal, s->spatial_share, s->temporal_share, where(s, sites, buf, sizeof buf));
  }
  if (count < scores->site_count)
    fprintf(out, "(%d more sites; --top N to list more)\n", scores->site_count - count);
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the scores report") : MS_OK;
}

static json_object *json_score(const ms_locality_score *s, const ms_site_table *sites) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "accesses", json_object_new_uint64(s->accesses));
  json_object_object_add(o, "references", json_object_new_uint64(s->references));
  json_object_object_add(o, "spatial", json_object_new_double(s->spatial));
  json_object_object_add(o, "temporal", json_object_new_double(s->temporal));
  json_object_object_add(o, "spatial_contribution", json_object_new_double(s->spatial_share));
  json_object_object_add(o, "temporal_contribution", json_object_new_double(s->temporal_share));
  if (s->site != MS_SITE_NONE) {
    json_object_object_add(o, "site", json_object_new_uint64(s->site));
    const ms_site *site = sites ? ms_site_table_get(sites, s->site) : NULL;
    if (site) {
      char buf[512], pc[32];
      snprintf(pc, sizeof pc, "0x%" PRIx64, site->pc);
      json_object_object_add(o, "pc", json_object_new_string(pc));
      json_object_object_add(o, "location",
                             json_object_new_string(ms_site_describe(site, buf, sizeof buf)));
      if (site->function)
        json_object_object_add(o, "function", json_object_new_string(site->function));
      if (site->file) json_object_object_add(o, "file", json_object_new_string(site->file));
      if (site->line) json_object_object_add(o, "line", json_object_new_uint64(site->line));
    }
  }
  return o;
}

int ms_scores_write_json(FILE *out, const ms_scores *scores, const ms_site_table *sites, int top) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "word", json_object_new_uint64(scores->config.word));
  json_object_object_add(root, "lookback", json_object_new_int(scores->config.lookback));
  json_object_object_add(root, "log2_window", json_object_new_int(scores->config.log2_window));
  json_object_object_add(root, "whole", json_score(&scores->whole, NULL));
  json_object *array = json_object_new_array();
  int count = top < 0 || top > scores->site_count ? scores->site_count : top;
  for (int i = 0; i < count; i++)
    json_object_array_add(array, json_score(&scores->sites[i], sites));
  json_object_object_add(root, "sites", array);
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root,
                                         JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the scores report") : MS_OK;
}

/* ---- the sink ---- */

typedef struct scores_sink {
  ms_sink base;
  ms_scores_builder *builder;
} scores_sink;

static int scores_sink_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  (void)info;
  return ms_scores_builder_add(((scores_sink *)sink)->builder, batch);
}

static void scores_sink_destroy(ms_sink *sink) { free(sink); }

static const ms_sink_ops scores_sink_ops = {NULL, scores_sink_consume, NULL, scores_sink_destroy};

int ms_scores_sink_new(ms_scores_builder *builder, ms_sink **out) {
  scores_sink *sink = calloc(1, sizeof *sink);
  if (!sink) return ms_error_set(MS_ERR_NOMEM, "out of memory for a scores sink");
  sink->base.ops = &scores_sink_ops;
  sink->builder = builder;
  *out = &sink->base;
  return MS_OK;
}

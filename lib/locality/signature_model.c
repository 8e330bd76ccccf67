/* The memory-signature model (memsnap/signature.h; dissertation
 * chameleon-weinberg-dissertation-2008.txt, sections 2.2.3, 3.1, 3.2, 3.3.2).
 *
 * Files: this one holds the API (configuration, creation, the entry points add, warm, track
 * and forget, the result, the sinks); signature_stack.h and signature_stack.c the LRU stack
 * that gives a reference's stack position (the window of the most recent lines, the marked
 * times, the line table of records and their trees of halves); signature_loop.c the loops
 * that feed the accesses to it. signature_model_internal.h holds the model's fields.
 *
 * Model and assumptions:
 * - References are lines of the maximal width (an access spanning two lines is two
 *   references, as in `memsnap sim`); within its line a reference stands for the word of
 *   its first byte. All threads share one model (one LRU stack, one tree per line).
 * - Stack positions, the line table and the trees of halves: see signature_stack.h; the
 *   whole-program counting and its loop: see signature_loop.c.
 * - Per-site binning (section 3.3.2): the stack's state is shared; only the counts go to
 *   the bin of the access's site. With a cap, a site's accesses past the cap are counted
 *   as executions but not sent to the model.
 * - Interval sampling: the skipped accesses update the trees only (ms_signature_model_track:
 *   find the record, set the path's bits and the last word; no stack position, nothing
 *   counted), so that a node's history survives the gaps; see docs/formats.md (Accuracy).
 * - The narrower widths (config.widths > 0): a cache surface builder (lib/locality/surface.c)
 *   of widths word..width/2 and depths 2^0..2^16 is fed every batch given to
 *   ms_signature_model_add (one test per batch when off), not the tracked or warming
 *   accesses: with interval sampling its rows count the modeled intervals' accesses, its LRU
 *   state carried across the gaps as if the skipped accesses were absent (with per-site
 *   caps, every access given, capped ones included). ms_signature_model_forget folds its
 *   counts into width_done and starts a new builder (surface.c has no reset).
 */
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/signature.h"
#include "memsnap/surface.h"
#include "signature_internal.h"
#include "signature_model_internal.h"
#include "signature_stack.h"
#include "surface_internal.h"

void ms_signature_config_default(ms_signature_config *config) {
  config->width = 512;
  config->word = 4;
  config->per_site = 0;
  config->site_cap = 0;
  config->widths = 0;
}

static int log2_exact(uint64_t value) {
  int shift = 0;
  if (value == 0 || (value & (value - 1))) return -1;
  while ((1ull << shift) != value)
    shift++;
  return shift;
}

/* The surface builder of the narrower widths: word << n for n < levels, depths 2^0..2^16,
 * exact (rate 1) or SHARDS at `rate`. */
static int width_builder_new(uint32_t word, int levels, double rate, ms_surface_builder **out) {
  ms_surface_config config;
  ms_surface_config_default(&config);
  config.width_count = levels;
  for (int n = 0; n < levels; n++)
    config.widths[n] = word << n;
  config.depth_count = MS_SIGNATURE_DEPTHS;
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
    config.depths[k] = 1ull << k;
  config.sample_rate = rate;
  int rc = ms_surface_builder_new(&config, out);
  if (rc < 0) {
    char reason[256];
    snprintf(reason, sizeof reason, "%s", ms_error_message());
    return ms_error_set(rc, "signature: the narrower widths: %s", reason);
  }
  return MS_OK;
}

/* Adds the narrower widths' counts of `builder` to references and hits: exact, the
 * surface's own counts (hits at depth 2^k: its histogram's bins 0..k); SHARDS, the line
 * references (counted exactly even when sampling) times the estimated hit rates. */
static void width_counts(const ms_surface_builder *builder, int levels, double *references,
                         double (*hits)[MS_SIGNATURE_DEPTHS]) {
  ms_surface surface;
  ms_surface_builder_result(builder, &surface);
  for (int n = 0; n < levels; n++) {
    if (surface.sample_rate >= 1.0) {
      uint64_t below = 0;
      references[n] += (double)surface.references[n];
      for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
        below += surface.histogram[n][k];
        hits[n][k] += (double)below;
      }
    } else {
      double lines = (double)surface_builder_line_references(builder, n);
      references[n] += lines;
      for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
        hits[n][k] += surface.hit_rate[n][k] * lines;
    }
  }
}

int ms_signature_model_new(const ms_signature_config *config, ms_signature_model **out) {
  *out = NULL;
  int line_shift = log2_exact(config->width), word_shift = log2_exact(config->word);
  if (line_shift < 0 || word_shift < 0 || word_shift >= line_shift)
    return ms_error_set(MS_ERR_ARG,
                        "signature: width %u and word %u must be powers of two, word < width",
                        config->width, config->word);
  if (line_shift - word_shift > MS_SIGNATURE_MAX_LEVELS || line_shift > 30)
    return ms_error_set(MS_ERR_ARG, "signature: width / word may be at most 2^%d (width <= 1 GiB)",
                        MS_SIGNATURE_MAX_LEVELS);
  if (!(config->widths == 0 || config->widths == 1 || (config->widths > 0 && config->widths < 1)))
    return ms_error_set(MS_ERR_ARG,
                        "signature: widths %g must be 0 (none), 1 (exact) or a "
                        "SHARDS rate in (0, 1)",
                        config->widths);
  ms_signature_model *model = calloc(1, sizeof *model);
  if (!model) return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature model");
  model->config = *config;
  if (config->widths > 0) {
    int rc = width_builder_new(model->config.word, line_shift - word_shift, config->widths,
                               &model->width_builder);
    if (rc < 0) {
      free(model);
      return rc;
    }
  }
  model->levels = line_shift - word_shift;
  model->line_shift = (unsigned)line_shift;
  model->word_shift = (unsigned)word_shift;
  model->tree_words = (((size_t)1 << model->levels) + 63) / 64; /* nodes 1..2^levels-1 */
  model->record_words = 1;
  while (model->record_words < RECORD_TREE + 2 * model->tree_words)
    model->record_words *= 2;
  if (model->levels <= 7) {
    model->paths = calloc((size_t)1 << model->levels, sizeof *model->paths);
    if (!model->paths) {
      free(model);
      return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature model");
    }
    for (uint32_t word = 0; word < (1u << model->levels); word++)
      for (int depth = 0; depth < model->levels; depth++) {
        uint32_t node = (1u << depth) | (word >> (model->levels - depth));
        uint64_t half = (word >> (model->levels - depth - 1)) & 1;
        model->paths[word][node >> 6] |= 1ull << (node & 63);
        model->paths[word][2 + (node >> 6)] |= half << (node & 63);
      }
    model->walks = calloc(MS_SIGNATURE_DEPTHS, sizeof *model->walks);
    if (!model->walks) {
      ms_signature_model_free(model);
      return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature model");
    }
  }
  memset(model->window_line, 0xff, sizeof model->window_line); /* UINT64_MAX: no line */
  model->table_mask = 4095;
  model->table_shift = 64 - 12;
  model->table = sig_table_new(model->table_mask + 1, model->record_words);
  model->time_bits = calloc(TIME_WORDS, sizeof *model->time_bits);
  model->word_fenwick = calloc(TIME_WORDS + 1, sizeof *model->word_fenwick);
  model->time_state = calloc(TIME_SLOTS, sizeof *model->time_state);
  model->scratch = malloc(KEEP_LINES * sizeof *model->scratch);
  if (!model->table || !model->time_bits || !model->word_fenwick || !model->time_state ||
      !model->scratch) {
    ms_signature_model_free(model);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature model");
  }
  *out = model;
  return MS_OK;
}

void ms_signature_model_free(ms_signature_model *model) {
  if (!model) return;
  free(model->table);
  free(model->paths);
  free(model->walks);
  free(model->time_bits);
  free(model->word_fenwick);
  free(model->time_state);
  for (uint32_t i = 0; i < model->site_capacity; i++)
    free(model->sites[i]);
  free(model->sites);
  free(model->no_site);
  free(model->scratch);
  ms_surface_builder_free(model->width_builder);
  free(model);
}

void ms_signature_model_forget(ms_signature_model *model) {
  memset(model->table, 0, (model->table_mask + 1) * model->record_words * sizeof *model->table);
  model->table_used = 0;
  memset(model->time_bits, 0, TIME_WORDS * sizeof *model->time_bits);
  memset(model->word_fenwick, 0, (TIME_WORDS + 1) * sizeof *model->word_fenwick);
  model->now = 0;
  model->marked = 0;
  model->window_count = 0;
  memset(model->window_line, 0xff, sizeof model->window_line); /* UINT64_MAX: no line */
  if (model->width_builder) { /* a new builder, the retired one's counts kept */
    width_counts(model->width_builder, model->levels, model->width_done_references,
                 model->width_done_hits);
    ms_surface_builder_free(model->width_builder);
    model->width_builder = NULL;
    model->width_status = width_builder_new(model->config.word, model->levels, model->config.widths,
                                            &model->width_builder);
  }
}

/* The narrower widths' builder sees the batch in place (an ms_batch pointing at it). */
static int add_widths(ms_signature_model *model, const ms_access *accesses, size_t count) {
  if (!model->width_builder)
    return ms_error_set(model->width_status, "signature: no builder for the narrower widths");
  ms_batch batch = {(ms_access *)accesses, count, count};
  return ms_surface_builder_add(model->width_builder, &batch);
}

int ms_signature_model_add(ms_signature_model *model, const ms_access *accesses, size_t count) {
  if (__builtin_expect(model->config.widths > 0, 0) && !model->warming) {
    int rc = add_widths(model, accesses, count);
    if (rc < 0) return rc;
  }
  return sig_loop_add(model, accesses, count);
}

int ms_signature_model_warm(ms_signature_model *model, const ms_access *accesses, size_t count) {
  model->warming = 1;
  int rc = ms_signature_model_add(model, accesses, count);
  model->warming = 0;
  return rc;
}

int ms_signature_model_track(ms_signature_model *model, const ms_access *accesses, size_t count) {
  return sig_loop_track(model, accesses, count);
}

/* ---- result ---- */

static void counts_to_bin(const sig_counts *counts, int levels, double weight,
                          ms_signature_bin *bin) {
  double hits = 0;
  bin->executions += (double)counts->executions;
  bin->modeled += (double)counts->modeled;
  bin->references += weight * (double)counts->references;
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    hits += (double)counts->positions[k];
    bin->hits[k] += weight * hits;
  }
  for (int level = 0; level < levels; level++)
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      bin->yes[level][k] += weight * (double)counts->yes[level][k];
      bin->trials[level][k] += weight * (double)counts->trials[level][k];
    }
}

/* Adds the walk histograms to the yes/trials counts of `counts`. */
static void fold_histograms(const ms_signature_model *model, sig_counts *counts) {
  if (!model->walks) return;
  int levels = model->levels;
  for (int bin = 0; bin < MS_SIGNATURE_DEPTHS; bin++)
    for (uint32_t key = 2; key < (2u << levels); key++) { /* key 1: nothing visited */
      uint64_t walks = model->walks[bin][key];
      int visits = 31 - __builtin_clz(key);
      for (int depth = 0; depth < visits; depth++) {
        counts->trials[levels - 1 - depth][bin] += walks;
        if (key >> depth & 1) counts->yes[levels - 1 - depth][bin] += walks;
      }
    }
}

int ms_signature_model_result(const ms_signature_model *model, const ms_stream_info *info,
                              uint64_t accesses_seen, ms_signature **out) {
  *out = NULL;
  ms_signature *signature = calloc(1, sizeof *signature);
  if (!signature) return ms_error_set(MS_ERR_NOMEM, "out of memory for a signature");
  signature->width = model->config.width;
  signature->word = model->config.word;
  signature->levels = model->levels;
  signature->per_site = model->config.per_site;
  signature->site_cap = model->config.per_site ? model->config.site_cap : 0;
  signature->accesses_modeled = model->added;
  signature->accesses_seen = accesses_seen ? accesses_seen : model->given;
  if (info && (info->flags & MS_STREAM_SAMPLED)) {
    signature->sample_on = info->sample_on;
    signature->sample_off = info->sample_off;
  }
  if (info && info->program) {
    signature->program = strdup(info->program);
    if (!signature->program) goto nomem;
  }
  uint32_t site_bins = model->no_site != NULL;
  for (uint32_t i = 0; i < model->site_capacity; i++)
    site_bins += model->sites[i] != NULL;
  signature->bins = calloc((size_t)site_bins + 1, sizeof *signature->bins);
  if (!signature->bins) goto nomem;
  signature->bin_count = (int)site_bins + 1;
  ms_signature_bin *all = &signature->bins[0];
  all->site = MS_SIGNATURE_ALL;
  if (!model->config.per_site) {
    sig_counts total = model->total;
    fold_histograms(model, &total);
    counts_to_bin(&total, model->levels, 1.0, all);
    all->executions = (double)signature->accesses_seen;
    all->modeled = (double)model->added;
  } else {
    int next = 1;
    for (uint32_t i = 0; i <= model->site_capacity; i++) {
      const sig_counts *counts = i < model->site_capacity ? model->sites[i] : model->no_site;
      if (!counts) continue;
      ms_signature_bin *bin = &signature->bins[next++];
      bin->site = i < model->site_capacity ? i : MS_SITE_NONE;
      counts_to_bin(counts, model->levels, 1.0, bin);
      double weight = counts->modeled ? (double)counts->executions / (double)counts->modeled : 0;
      counts_to_bin(counts, model->levels, weight, all);
      const ms_site *site =
          info && bin->site != MS_SITE_NONE ? ms_site_table_get(info->sites, bin->site) : NULL;
      if (site) {
        char buf[512];
        bin->pc = site->pc;
        if (site->function || site->file) {
          bin->location = strdup(ms_site_describe(site, buf, sizeof buf));
          if (!bin->location) goto nomem;
        }
      }
    }
    all->executions = (double)signature->accesses_seen;
  }
  if (model->config.widths > 0) {
    if (!model->width_builder) {
      ms_signature_free(signature);
      return ms_error_set(model->width_status, "signature: no builder for the narrower widths");
    }
    signature->widths = model->config.widths;
    memcpy(signature->width_references, model->width_done_references,
           sizeof signature->width_references);
    memcpy(signature->width_hits, model->width_done_hits, sizeof signature->width_hits);
    width_counts(model->width_builder, model->levels, signature->width_references,
                 signature->width_hits);
  }
  *out = signature;
  return MS_OK;
nomem:
  ms_signature_free(signature);
  return ms_error_set(MS_ERR_NOMEM, "out of memory for a signature");
}

void ms_signature_free(ms_signature *signature) {
  if (!signature) return;
  for (int i = 0; i < signature->bin_count; i++)
    free(signature->bins[i].location);
  free(signature->bins);
  free(signature->program);
  free(signature);
}

double ms_signature_hit_rate(const ms_signature_bin *bin, int depth_index) {
  if (depth_index < 0 || depth_index >= MS_SIGNATURE_DEPTHS || bin->references <= 0) return -1;
  return bin->hits[depth_index] / bin->references;
}

double ms_signature_alpha(const ms_signature_bin *bin, int level, int reuse_bin) {
  if (level < 0 || level >= MS_SIGNATURE_MAX_LEVELS || reuse_bin >= MS_SIGNATURE_DEPTHS) return -1;
  double yes = 0, trials = 0;
  for (int k = reuse_bin < 0 ? 0 : reuse_bin;
       k <= (reuse_bin < 0 ? MS_SIGNATURE_DEPTHS - 1 : reuse_bin); k++) {
    yes += bin->yes[level][k];
    trials += bin->trials[level][k];
  }
  return trials > 0 ? yes / trials : -1;
}

const sig_counts *sig_model_counts(const ms_signature_model *model) { return &model->total; }

void sig_model_set_portable(ms_signature_model *model, int portable) { model->portable = portable; }

/* ---- sink ---- */

typedef struct signature_sink {
  ms_sink base;
  ms_signature_model *model;
  int warm;
} signature_sink;

static int signature_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  signature_sink *s = (signature_sink *)sink;
  (void)info;
  return s->warm ? ms_signature_model_warm(s->model, batch->accesses, batch->count)
                 : ms_signature_model_add(s->model, batch->accesses, batch->count);
}

static void signature_destroy(ms_sink *sink) { free(sink); }

static const ms_sink_ops signature_ops = {NULL, signature_consume, NULL, signature_destroy};

static int new_sink(ms_signature_model *model, int warm, ms_sink **out) {
  signature_sink *sink = calloc(1, sizeof *sink);
  *out = NULL;
  if (!sink) return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature sink");
  sink->base.ops = &signature_ops;
  sink->model = model;
  sink->warm = warm;
  *out = &sink->base;
  return MS_OK;
}

/* The skipped accesses of interval sampling, `gap` per period: the first gap - warm of each
 * are tracked (trees only), the last `warm` warm the whole state. */
typedef struct gap_sink {
  ms_sink base;
  ms_signature_model *model;
  uint64_t gap, warm, position;
} gap_sink;

static int gap_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  gap_sink *s = (gap_sink *)sink;
  (void)info;
  size_t done = 0;
  while (done < batch->count) {
    size_t left = batch->count - done;
    uint64_t track_end = s->gap - s->warm;
    int warm = s->position >= track_end;
    uint64_t run = (warm ? s->gap : track_end) - s->position;
    size_t take = run < left ? (size_t)run : left;
    int rc = warm ? ms_signature_model_warm(s->model, batch->accesses + done, take)
                  : ms_signature_model_track(s->model, batch->accesses + done, take);
    if (rc < 0) return rc;
    done += take;
    s->position += take;
    if (s->position == s->gap) s->position = 0;
  }
  return MS_OK;
}

static const ms_sink_ops gap_ops = {NULL, gap_consume, NULL, signature_destroy};

int ms_signature_gap_sink_new(ms_signature_model *model, uint64_t gap, uint64_t warm,
                              ms_sink **out) {
  *out = NULL;
  if (gap == 0 || warm > gap)
    return ms_error_set(MS_ERR_ARG, "signature: a warm-up of %llu in gaps of %llu accesses",
                        (unsigned long long)warm, (unsigned long long)gap);
  gap_sink *sink = calloc(1, sizeof *sink);
  if (!sink) return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature sink");
  sink->base.ops = &gap_ops;
  sink->model = model;
  sink->gap = gap;
  sink->warm = warm;
  *out = &sink->base;
  return MS_OK;
}

int ms_signature_sink_new(ms_signature_model *model, ms_sink **out) {
  return new_sink(model, 0, out);
}

int ms_signature_warm_sink_new(ms_signature_model *model, ms_sink **out) {
  return new_sink(model, 1, out);
}

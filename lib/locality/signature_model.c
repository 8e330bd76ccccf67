/* The memory-signature model (memsnap/signature.h; dissertation
 * chameleon-weinberg-dissertation-2008.txt, sections 2.2.3, 3.1, 3.2, 3.3.2).
 *
 * Model and assumptions:
 * - References are lines of the maximal width (an access spanning two lines is two
 *   references, as in `memsnap sim`); within its line a reference stands for the word of
 *   its first byte. All threads share one model (one LRU stack, one tree per line).
 * - Stack positions come from a Fenwick tree over logical times: every line holds the time
 *   of its last reference, the tree marks the times that are some line's last, and the
 *   position of a reference is 1 + the number of marks after its line's time. Only
 *   positions up to 2^16 matter (larger ones miss in every depth and fall in the last
 *   reuse bin), so when the times run out the tree is rebuilt with the 2^16 most recent
 *   lines and the older ones are marked "far": the tree stays small (TIME_SLOTS) and the
 *   work per reference is O(log TIME_SLOTS).
 * - A reference to the most recently used line has position 1 and needs no update of
 *   the Fenwick tree (its time stays the largest): on the kernels of tests/programs this
 *   skips the tree for 80-98% of references at 512-byte lines.
 * - Each line keeps its tree of halves as two bit arrays in heap order (root 1, children
 *   2i and 2i+1): nodes visited, and the half chosen on the last visit.
 * - Per-site binning (section 3.3.2): the state above is shared; only the counts go to
 *   the bin of the access's site. With a cap, a site's accesses past the cap are counted
 *   as executions but not sent to the model.
 */
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/signature.h"
#include "signature_internal.h"

#define TIME_SLOTS (1u << 18) /* Fenwick tree size; rebuilt when exhausted */
#define KEEP_LINES (1u << 16) /* lines kept in the tree at a rebuild: positions <= 2^16 */
#define TIME_FAR 0u           /* line not among the 2^16 most recent (or forgotten) */
#define NO_STATE UINT32_MAX

typedef struct line_state {
  uint64_t line;
  uint32_t time; /* 1..TIME_SLOTS, or TIME_FAR */
} line_state;

struct ms_signature_model {
  ms_signature_config config;
  int levels;
  unsigned line_shift, word_shift;
  size_t tree_words; /* uint64_t per bit array per line */

  /* line -> state index, open addressing with linear probing; key 0 means empty */
  uint64_t *keys;
  uint32_t *values;
  size_t table_mask, table_used;

  line_state *states;
  uint64_t *trees; /* per state: visited bits then choice bits, tree_words each */
  size_t state_count, state_capacity;

  uint32_t *fenwick;    /* 1-based, TIME_SLOTS entries */
  uint32_t *time_state; /* time -> state index */
  uint32_t now;         /* last time used */
  uint32_t marked;      /* lines with a time */
  uint32_t mru;         /* state of the most recent reference, or NO_STATE */

  sig_counts total;   /* whole program when not per site */
  sig_counts discard; /* counts of warm-up references, never reported */
  int warming;
  sig_counts **sites; /* per site (per_site), by site id */
  uint32_t site_capacity;
  sig_counts *no_site; /* per site: accesses without a site */
  uint32_t *scratch;   /* KEEP_LINES states, for rebuild_times */
  uint64_t added;
};

void ms_signature_config_default(ms_signature_config *config) {
  config->width = 512;
  config->word = 4;
  config->per_site = 0;
  config->site_cap = 0;
}

static int log2_exact(uint64_t value) {
  int shift = 0;
  if (value == 0 || (value & (value - 1))) return -1;
  while ((1ull << shift) != value)
    shift++;
  return shift;
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
  ms_signature_model *model = calloc(1, sizeof *model);
  if (!model) return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature model");
  model->config = *config;
  model->levels = line_shift - word_shift;
  model->line_shift = (unsigned)line_shift;
  model->word_shift = (unsigned)word_shift;
  model->tree_words = ((size_t)1 << model->levels) / 64 + 1;
  model->table_mask = 4095;
  model->keys = calloc(model->table_mask + 1, sizeof *model->keys);
  model->values = calloc(model->table_mask + 1, sizeof *model->values);
  model->fenwick = calloc(TIME_SLOTS + 1, sizeof *model->fenwick);
  model->time_state = calloc(TIME_SLOTS + 1, sizeof *model->time_state);
  model->scratch = malloc(KEEP_LINES * sizeof *model->scratch);
  model->mru = NO_STATE;
  if (!model->keys || !model->values || !model->fenwick || !model->time_state || !model->scratch) {
    ms_signature_model_free(model);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature model");
  }
  *out = model;
  return MS_OK;
}

void ms_signature_model_free(ms_signature_model *model) {
  if (!model) return;
  free(model->keys);
  free(model->values);
  free(model->states);
  free(model->trees);
  free(model->fenwick);
  free(model->time_state);
  for (uint32_t i = 0; i < model->site_capacity; i++)
    free(model->sites[i]);
  free(model->sites);
  free(model->no_site);
  free(model->scratch);
  free(model);
}

void ms_signature_model_forget(ms_signature_model *model) {
  memset(model->keys, 0, (model->table_mask + 1) * sizeof *model->keys);
  model->table_used = 0;
  model->state_count = 0;
  memset(model->fenwick, 0, (TIME_SLOTS + 1) * sizeof *model->fenwick);
  model->now = 0;
  model->marked = 0;
  model->mru = NO_STATE;
}

/* ---- Fenwick tree over times ---- */

static inline void fenwick_add(uint32_t *tree, uint32_t at, int32_t delta) {
  for (; at <= TIME_SLOTS; at += at & (~at + 1))
    tree[at] += (uint32_t)delta;
}

static inline uint32_t fenwick_prefix(const uint32_t *tree, uint32_t at) {
  uint32_t sum = 0;
  for (; at > 0; at &= at - 1)
    sum += tree[at];
  return sum;
}

/* Times exhausted: the KEEP_LINES most recent lines get times 1..kept in order, the others
 * become far; the tree is rebuilt in linear time. */
static void rebuild_times(ms_signature_model *model) {
  uint32_t kept = 0;
  for (uint32_t time = model->now; time > 0; time--) {
    uint32_t state = model->time_state[time];
    if (model->states[state].time != time) continue; /* not the line's last time */
    if (kept < KEEP_LINES)
      model->scratch[kept++] = state;
    else
      model->states[state].time = TIME_FAR;
  }
  memset(model->fenwick, 0, (TIME_SLOTS + 1) * sizeof *model->fenwick);
  for (uint32_t time = 1; time <= kept; time++) {
    uint32_t state = model->scratch[kept - time];
    model->states[state].time = time;
    model->time_state[time] = state;
  }
  /* Linear construction: every node passes its sum to its parent, up to the last slot. */
  for (uint32_t time = 1; time <= TIME_SLOTS; time++) {
    model->fenwick[time] += time <= kept;
    uint32_t parent = time + (time & (~time + 1));
    if (parent <= TIME_SLOTS) model->fenwick[parent] += model->fenwick[time];
  }
  model->now = kept;
  model->marked = kept;
}

/* ---- line table ---- */

static inline size_t hash_line(uint64_t line) {
  line ^= line >> 31;
  line *= 0x9e3779b97f4a7c15ull;
  return (size_t)(line >> 20);
}

static int grow_table(ms_signature_model *model) {
  size_t capacity = (model->table_mask + 1) * 2;
  uint64_t *keys = calloc(capacity, sizeof *keys);
  uint32_t *values = malloc(capacity * sizeof *values);
  if (!keys || !values) {
    free(keys);
    free(values);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature's line table");
  }
  size_t mask = capacity - 1;
  for (size_t i = 0; i <= model->table_mask; i++) {
    if (!model->keys[i]) continue;
    size_t at = hash_line(model->keys[i]) & mask;
    while (keys[at])
      at = (at + 1) & mask;
    keys[at] = model->keys[i];
    values[at] = model->values[i];
  }
  free(model->keys);
  free(model->values);
  model->keys = keys;
  model->values = values;
  model->table_mask = mask;
  return MS_OK;
}

static int new_state(ms_signature_model *model, uint64_t line, uint32_t *out) {
  if (model->state_count == model->state_capacity) {
    size_t capacity = model->state_capacity ? model->state_capacity * 2 : 4096;
    if (capacity > UINT32_MAX - 1)
      return ms_error_set(MS_ERR_NOMEM, "signature: too many distinct lines");
    line_state *states = realloc(model->states, capacity * sizeof *states);
    if (!states) return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature's lines");
    model->states = states;
    uint64_t *trees = realloc(model->trees, capacity * 2 * model->tree_words * sizeof *trees);
    if (!trees) return ms_error_set(MS_ERR_NOMEM, "out of memory for the signature's trees");
    model->trees = trees;
    model->state_capacity = capacity;
  }
  uint32_t index = (uint32_t)model->state_count++;
  model->states[index] = (line_state){line, TIME_FAR};
  memset(model->trees + (size_t)index * 2 * model->tree_words, 0,
         2 * model->tree_words * sizeof *model->trees);
  *out = index;
  return MS_OK;
}

/* State of `line`, created if new (*cold = 1 then). */
static inline int find_line(ms_signature_model *model, uint64_t line, uint32_t *state, int *cold) {
  *state = NO_STATE;
  uint64_t key = line + 1;
  size_t at = hash_line(key) & model->table_mask;
  while (model->keys[at]) {
    if (model->keys[at] == key) {
      *state = model->values[at];
      *cold = 0;
      return MS_OK;
    }
    at = (at + 1) & model->table_mask;
  }
  *cold = 1;
  int rc = new_state(model, line, state);
  if (rc < 0) return rc;
  model->keys[at] = key;
  model->values[at] = *state;
  if (++model->table_used * 2 > model->table_mask + 1) return grow_table(model);
  return MS_OK;
}

/* ---- counts ---- */

static sig_counts *site_counts(ms_signature_model *model, uint32_t site) {
  if (site == MS_SITE_NONE) {
    if (!model->no_site) model->no_site = calloc(1, sizeof(sig_counts));
    return model->no_site;
  }
  if (site >= model->site_capacity) {
    uint32_t capacity = model->site_capacity ? model->site_capacity : 64;
    while (capacity <= site)
      capacity *= 2;
    sig_counts **sites = realloc(model->sites, (size_t)capacity * sizeof *sites);
    if (!sites) return NULL;
    memset(sites + model->site_capacity, 0,
           (size_t)(capacity - model->site_capacity) * sizeof *sites);
    model->sites = sites;
    model->site_capacity = capacity;
  }
  if (!model->sites[site]) model->sites[site] = calloc(1, sizeof(sig_counts));
  return model->sites[site];
}

static inline int reuse_bin(uint32_t position) {
  if (position <= 1) return 0;
  int bin = 32 - __builtin_clz(position - 1); /* 2^(bin-1) < position <= 2^bin */
  return bin < MS_SIGNATURE_DEPTHS ? bin : MS_SIGNATURE_DEPTHS - 1;
}

/* Walks the tree of halves of `state` to `word`, counting trials and yeses in `bin`. */
static inline void walk_tree(ms_signature_model *model, uint32_t state, uint32_t word, int bin,
                             sig_counts *counts) {
  uint64_t *visited = model->trees + (size_t)state * 2 * model->tree_words;
  uint64_t *choice = visited + model->tree_words;
  int levels = model->levels;
  for (int depth = 0; depth < levels; depth++) {
    uint32_t node = (1u << depth) | (word >> (levels - depth));
    uint64_t half = (word >> (levels - depth - 1)) & 1;
    uint64_t bit = 1ull << (node & 63);
    size_t at = node >> 6;
    int level = levels - 1 - depth;
    if (visited[at] & bit) {
      counts->trials[level][bin]++;
      counts->yes[level][bin] += ((choice[at] & bit) != 0) == half;
    }
    visited[at] |= bit;
    choice[at] = half ? choice[at] | bit : choice[at] & ~bit;
  }
}

/* One reference to `line` at word `word`. */
static inline int reference(ms_signature_model *model, uint64_t line, uint32_t word,
                            sig_counts *counts) {
  uint32_t state = NO_STATE;
  int cold = 0;
  counts->references++;
  if (model->mru != NO_STATE && model->states[model->mru].line == line) {
    counts->positions[0]++;
    walk_tree(model, model->mru, word, 0, counts);
    return MS_OK;
  }
  if (model->now == TIME_SLOTS) rebuild_times(model); /* before this line's time changes */
  int rc = find_line(model, line, &state, &cold);
  if (rc < 0) return rc;
  line_state *ls = &model->states[state];
  if (!cold) {
    int bin;
    if (ls->time != TIME_FAR) {
      uint32_t position = model->marked - fenwick_prefix(model->fenwick, ls->time) + 1;
      bin = reuse_bin(position);
      counts->positions[position > (1u << 16) ? MS_SIGNATURE_DEPTHS : bin]++;
      fenwick_add(model->fenwick, ls->time, -1);
      model->marked--;
    } else {
      bin = MS_SIGNATURE_DEPTHS - 1;
      counts->positions[MS_SIGNATURE_DEPTHS]++;
    }
    walk_tree(model, state, word, bin, counts);
  } else {
    counts->cold++;
    walk_tree(model, state, word, 0, counts); /* first visit: marks only, counts nothing */
  }
  ls->time = ++model->now;
  model->time_state[ls->time] = state;
  fenwick_add(model->fenwick, ls->time, 1);
  model->marked++;
  model->mru = state;
  return MS_OK;
}

int ms_signature_model_add(ms_signature_model *model, const ms_access *accesses, size_t count) {
  unsigned line_shift = model->line_shift, word_shift = model->word_shift;
  uint64_t line_mask = ((uint64_t)1 << line_shift) - 1;
  sig_counts *counts = model->warming ? &model->discard : &model->total;
  for (size_t i = 0; i < count; i++) {
    const ms_access *access = &accesses[i];
    if (model->config.per_site && !model->warming) {
      counts = site_counts(model, access->site);
      if (!counts) return ms_error_set(MS_ERR_NOMEM, "out of memory for per-site signatures");
      counts->executions++;
      if (model->config.site_cap && counts->modeled >= model->config.site_cap) continue;
    }
    counts->modeled++;
    model->added += !model->warming;
    uint64_t first = access->address >> line_shift;
    uint64_t last = (access->address + (access->size ? access->size - 1u : 0u)) >> line_shift;
    uint32_t word = (uint32_t)((access->address & line_mask) >> word_shift);
    for (uint64_t line = first;; line++) {
      int rc = reference(model, line, word, counts);
      if (rc < 0) return rc;
      if (line == last) break;
      word = 0;
    }
  }
  return MS_OK;
}

int ms_signature_model_warm(ms_signature_model *model, const ms_access *accesses, size_t count) {
  model->warming = 1;
  int rc = ms_signature_model_add(model, accesses, count);
  model->warming = 0;
  return rc;
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
  signature->accesses_seen = accesses_seen ? accesses_seen : model->added;
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
    counts_to_bin(&model->total, model->levels, 1.0, all);
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

int ms_signature_sink_new(ms_signature_model *model, ms_sink **out) {
  return new_sink(model, 0, out);
}

int ms_signature_warm_sink_new(ms_signature_model *model, ms_sink **out) {
  return new_sink(model, 1, out);
}

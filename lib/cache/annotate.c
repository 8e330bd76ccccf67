/* Accesses and misses per function and per source line (memsnap/annotate.h): a hierarchy
 * simulated with the per-site misses of the simulator, the sites' first-level accesses
 * counted beside it, both added up by key once the stream has ended. */
#include "memsnap/annotate.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "../core/grow.h"
#include "../core/object_map.h"
#include "memsnap/error.h"
#include "memsnap/sites.h"

/* A site's lookup cached, and the first-level accesses counted in it since (added to its
 * object's count when the span is replaced: cg's accesses go to another object than the
 * access before them 19 times in 20, and a count per object per access was a third of
 * relabelling's instructions). */
typedef struct site_span {
  object_map_span span;
  uint64_t lines;
} site_span;

struct ms_annotator {
  ms_sink sink;
  ms_annotate_config config;
  ms_hierarchy_set *set;
  int line_shift; /* log2 of the first level's line size */
  uint64_t *site_accesses;
  uint64_t site_capacity;
  uint64_t unsited_accesses;
  const ms_site_table *sites;
  const ms_object_table *objects;
  ms_annotation annotation;
  int finished;
  /* by objects: the live objects, the next event to apply, the accesses consumed, and the
   * batch with its sites replaced by objects */
  object_map *map;
  uint64_t next_event, position;
  ms_batch relabeled;
  /* The object map's lookups cached (object_map_find_span): the span found last at each
   * site, and the one found last at all. A site's accesses mostly fall in the object its
   * last one fell in (two_arrays: a loop over three arrays, where the map's large objects
   * found lately took a third of annotating by object in mispredicted branches), and an
   * access in the object of the one before it (bintree: a node's key, then its child). */
  site_span *spans; /* by site + 1: 0 for accesses without a site */
  uint64_t span_capacity, last;
};

void ms_annotate_config_default(ms_annotate_config *config, const ms_hierarchy_config *hierarchy) {
  *config = (ms_annotate_config){.hierarchy = *hierarchy,
                                 .sort_level = -1,
                                 .functions = 10,
                                 .lines = 20,
                                 .context = 2,
                                 .source = 1};
}

static int grow_sites(ms_annotator *a, uint64_t site) {
  uint64_t *grown = ms_grow_zeroed(a->site_accesses, &a->site_capacity, sizeof *grown, site, 1024);
  if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for the annotation's sites");
  a->site_accesses = grown;
  return 0;
}

/* An access's first-level accesses as the model counts them: every line it spans
 * (memsnap, lines of 2^shift bytes), or one per reference (Cachegrind). */
static inline uint64_t access_lines(const ms_access *access, int cachegrind, int shift) {
  uint64_t last = access->address + (access->size ? access->size - 1u : 0u);
  return cachegrind ? 1 : (last >> shift) - (access->address >> shift) + 1;
}

/* Adds the batch's first-level accesses to their sites' counts (access_lines). */
static int count_accesses(ms_annotator *a, const ms_batch *batch) {
  const int cachegrind = a->config.hierarchy.model == MS_CACHE_MODEL_CACHEGRIND;
  const int shift = a->line_shift;
  uint64_t *counts = a->site_accesses, capacity = a->site_capacity;
  for (size_t i = 0; i < batch->count; i++) {
    const ms_access *access = &batch->accesses[i];
    uint64_t lines = access_lines(access, cachegrind, shift);
    uint32_t site = access->site;
    if (__builtin_expect(site >= capacity, 0)) {
      if (site == MS_SITE_NONE) {
        a->unsited_accesses += lines;
        continue;
      }
      int rc = grow_sites(a, site);
      if (rc < 0) return rc;
      counts = a->site_accesses, capacity = a->site_capacity;
    }
    counts[site] += lines;
  }
  return 0;
}

static int grow_spans(ms_annotator *a, uint64_t slot) {
  site_span *grown = ms_grow_zeroed(a->spans, &a->span_capacity, sizeof *grown, slot, 1024);
  if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for the annotation's sites");
  a->spans = grown;
  return 0;
}

/* Adds the lines counted in a span to its object's count. */
static int flush_span(ms_annotator *a, site_span *at) {
  uint32_t id = at->span.id;
  if (!at->lines) return 0;
  if (id == OBJECT_MAP_NONE) {
    a->unsited_accesses += at->lines;
  } else {
    if (id >= a->site_capacity) {
      int rc = grow_sites(a, id);
      if (rc < 0) return rc;
    }
    a->site_accesses[id] += at->lines;
  }
  at->lines = 0;
  return 0;
}

static int flush_spans(ms_annotator *a) {
  for (uint64_t i = 0; i < a->span_capacity; i++) {
    int rc = flush_span(a, &a->spans[i]);
    if (rc < 0) return rc;
  }
  return 0;
}

/* The batch with each access's site replaced by the live object holding its address
 * (MS_SITE_NONE outside every object), the object events applied as the accesses reach
 * them. */
static int relabel(ms_annotator *a, const ms_stream_info *info, const ms_batch *batch,
                   const ms_batch **out) {
  if (a->relabeled.capacity < batch->count) {
    ms_access *grown = realloc(a->relabeled.accesses, batch->count * sizeof *grown);
    if (!grown) return ms_error_set(MS_ERR_NOMEM, "out of memory for the annotation");
    a->relabeled.accesses = grown;
    a->relabeled.capacity = batch->count;
  }
  const ms_object_table *table = info->objects;
  uint64_t events = ms_object_table_count(table);
  if (table) a->objects = table;
  /* the access index of the next event to apply (UINT64_MAX: none yet) */
  uint64_t next =
      a->next_event < events ? ms_object_table_get(table, a->next_event)->index : UINT64_MAX;
  ms_access *out_accesses = a->relabeled.accesses;
  const int cachegrind = a->config.hierarchy.model == MS_CACHE_MODEL_CACHEGRIND;
  const int shift = a->line_shift;
  const uint64_t *stamps = object_map_stamps(a->map);
  site_span *spans = a->spans, *last = &spans[a->last];
  uint64_t span_capacity = a->span_capacity;
  /* an access's first-level accesses (access_lines) without a branch: 1 + the lines it
   * spans past its first, none for Cachegrind's model */
  const uint64_t past_first = cachegrind ? 0 : UINT64_MAX;
  /* the index in the batch of the next event's access */
  uint64_t stop = next > a->position ? next - a->position : 0;
  for (size_t i = 0; i < batch->count; i++) {
    while (__builtin_expect(i >= stop, 0)) {
      if (a->next_event >= UINT32_MAX)
        return ms_error_set(MS_ERR_UNSUPPORTED, "annotate: more than 2^32 object events");
      int rc = object_map_apply(a->map, ms_object_table_get(table, a->next_event),
                                (uint32_t)a->next_event);
      if (rc < 0) return rc;
      a->next_event++;
      next = a->next_event < events ? ms_object_table_get(table, a->next_event)->index : UINT64_MAX;
      stop = next > a->position ? next - a->position : 0;
    }
    /* the object, and its count of first-level accesses, in one pass (count_accesses) */
    const ms_access *access = &batch->accesses[i];
    uint64_t address = access->address;
    uint32_t site = access->site;
    uint32_t slot = site + 1; /* MS_SITE_NONE: 0 */
    if (__builtin_expect(slot >= span_capacity, 0)) {
      uint64_t last_slot = (uint64_t)(last - spans);
      int rc = grow_spans(a, slot);
      if (rc < 0) return rc;
      spans = a->spans, span_capacity = a->span_capacity, last = &spans[last_slot];
    }
    site_span *at = &spans[slot];
    const object_map_span *s = &at->span, *l = &last->span;
    if (address - s->lo < s->hi - s->lo && s->stamp == stamps[s->which]) {
    } else {
      int rc = flush_span(a, at);
      if (rc < 0) return rc;
      if (address - l->lo < l->hi - l->lo && l->stamp == stamps[l->which]) {
        at->span = *l;
      } else {
        object_map_find_span(a->map, address, &at->span);
        last = at;
      }
    }
    uint32_t id = at->span.id;
    out_accesses[i] = *access;
    out_accesses[i].site = id;
    uint64_t last_byte = address + access->size - (access->size != 0);
    uint64_t lines = 1 + (((last_byte >> shift) - (address >> shift)) & past_first);
    at->lines += lines;
  }
  a->last = (uint64_t)(last - spans);
  a->relabeled.count = batch->count;
  a->position += batch->count;
  *out = &a->relabeled;
  return 0;
}

static int annotator_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  ms_annotator *a = (ms_annotator *)sink;
  int rc;
  if (a->map && (rc = relabel(a, info, batch, &batch)) < 0) return rc;
  rc = ms_hierarchy_set_access_batch(a->set, batch);
  if (rc < 0) return rc;
  return a->map ? 0 : count_accesses(a, batch);
}

static int annotator_end(ms_sink *sink, const ms_stream_info *info) {
  ms_annotator *a = (ms_annotator *)sink;
  if (info->objects) a->objects = info->objects;
  int rc = flush_spans(a);
  return rc < 0 ? rc : ms_hierarchy_set_flush(a->set);
}

static void annotator_sink_destroy(ms_sink *sink) { (void)sink; /* the annotator's */ }

static const ms_sink_ops annotator_sink_ops = {.begin = NULL,
                                               .consume = annotator_consume,
                                               .end = annotator_end,
                                               .destroy = annotator_sink_destroy};

int ms_annotator_new(const ms_annotate_config *config, ms_annotator **out) {
  *out = NULL;
  if (config->sort_level < -1 || config->sort_level >= config->hierarchy.level_count)
    return ms_error_set(MS_ERR_ARG, "annotate: level %d of a hierarchy of %d levels",
                        config->sort_level + 1, config->hierarchy.level_count);
  ms_annotator *a = calloc(1, sizeof *a);
  if (!a) return ms_error_set(MS_ERR_NOMEM, "out of memory for an annotation");
  a->sink.ops = &annotator_sink_ops;
  a->config = *config;
  int rc = ms_hierarchy_set_new(&config->hierarchy, 1, &a->set);
  if (rc < 0) {
    free(a);
    return rc;
  }
  if (config->by != MS_ANNOTATE_CODE && (!(a->map = object_map_new()) || grow_spans(a, 0) < 0)) {
    ms_annotator_free(a);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for an annotation");
  }
  uint32_t line = config->hierarchy.levels[0].line_size;
  while ((1u << a->line_shift) < line)
    a->line_shift++;
  *out = a;
  return 0;
}

void ms_annotator_free(ms_annotator *a) {
  if (!a) return;
  ms_hierarchy_set_free(a->set);
  free(a->site_accesses);
  free(a->annotation.functions);
  free(a->annotation.lines);
  free(a->annotation.objects);
  object_map_free(a->map);
  free(a->relabeled.accesses);
  free(a->spans);
  free(a);
}

ms_sink *ms_annotator_sink(ms_annotator *a) { return &a->sink; }

/* ---- adding up ---- */

static int compare_text(const char *x, const char *y) {
  if (x == y) return 0;
  if (!x || !y) return x ? 1 : -1;
  return strcmp(x, y);
}

typedef struct keyed_site {
  uint32_t site;
  const ms_site *where;
} keyed_site;

static int by_function(const void *l, const void *r) {
  const ms_site *x = ((const keyed_site *)l)->where, *y = ((const keyed_site *)r)->where;
  int c = compare_text(x->object, y->object);
  return c ? c : compare_text(x->function, y->function);
}

/* a site with a source line by its file and line; one without, alone (after them) */
static int by_line(const void *l, const void *r) {
  const keyed_site *a = l, *b = r;
  int ka = a->where->file && a->where->line, kb = b->where->file && b->where->line;
  if (ka != kb) return ka ? -1 : 1;
  if (ka) {
    int c = strcmp(a->where->file, b->where->file);
    if (c) return c;
    if (a->where->line != b->where->line) return a->where->line < b->where->line ? -1 : 1;
    return 0;
  }
  return a->site < b->site ? -1 : a->site > b->site;
}

static int by_misses(const void *l, const void *r, void *level) {
  const ms_annotation_row *a = l, *b = r;
  int at = *(const int *)level;
  uint64_t ma = a->misses[at], mb = b->misses[at];
  if (ma != mb) return ma > mb ? -1 : 1;
  if (a->accesses != b->accesses) return a->accesses > b->accesses ? -1 : 1;
  int c = compare_text(a->file, b->file);
  if (c) return c;
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  c = compare_text(a->object, b->object);
  if (c) return c;
  c = compare_text(a->function, b->function);
  return c ? c : (a->pc > b->pc) - (a->pc < b->pc);
}

static void add_site(ms_annotation_row *row, const ms_annotator *a, uint32_t site,
                     const uint64_t *const *misses, const uint32_t *miss_sites) {
  row->accesses += site < a->site_capacity ? a->site_accesses[site] : 0;
  for (int l = 0; l < a->annotation.level_count; l++)
    row->misses[l] += site < miss_sites[l] ? misses[l][site] : 0;
}

/* Rows of `sites` grouped by `same` (sorted by it first): *rows, *count. */
static int group_rows(const ms_annotator *a, keyed_site *sites, uint64_t n,
                      int (*same)(const void *, const void *), int line_rows,
                      const uint64_t *const *misses, const uint32_t *miss_sites,
                      ms_annotation_row **rows, uint64_t *count) {
  qsort(sites, n, sizeof *sites, same);
  *rows = calloc(n ? n : 1, sizeof **rows);
  if (!*rows) return ms_error_set(MS_ERR_NOMEM, "out of memory for the annotation's rows");
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (i == 0 || same(&sites[i - 1], &sites[i]) != 0) {
      const ms_site *w = sites[i].where;
      (*rows)[k++] =
          (ms_annotation_row){.object = w->object,
                              .function = w->function,
                              .file = line_rows && w->line ? w->file : NULL,
                              .line = line_rows && w->file ? w->line : 0,
                              .pc = line_rows && !(w->file && w->line) ? w->pc : 0,
                              .site = line_rows && !(w->file && w->line) ? sites[i].site : 0};
    }
    add_site(&(*rows)[k - 1], a, sites[i].site, misses, miss_sites);
  }
  *count = k;
  int level = a->annotation.sort_level;
  qsort_r(*rows, k, sizeof **rows, by_misses, &level);
  return 0;
}

/* ---- data objects ---- */

typedef struct keyed_object {
  uint32_t id;
  const ms_object_event *event;
} keyed_object;

/* statics by symbol and file, the others by allocating site and kind */
static int by_allocation(const void *l, const void *r) {
  const ms_object_event *x = ((const keyed_object *)l)->event,
                        *y = ((const keyed_object *)r)->event;
  int sx = x->kind == MS_OBJECT_STATIC, sy = y->kind == MS_OBJECT_STATIC;
  if (sx != sy) return sx ? 1 : -1;
  if (sx) {
    int c = compare_text(x->name, y->name);
    return c ? c : compare_text(x->object, y->object);
  }
  if (x->site != y->site) return x->site < y->site ? -1 : 1;
  return (x->kind > y->kind) - (x->kind < y->kind);
}

static int by_id(const void *l, const void *r) {
  uint32_t x = ((const keyed_object *)l)->id, y = ((const keyed_object *)r)->id;
  return (x > y) - (x < y);
}

static int object_rows(ms_annotator *a, const ms_site_table *sites, const uint64_t *const *misses,
                       const uint32_t *miss_sites) {
  ms_annotation *n = &a->annotation;
  uint64_t events = ms_object_table_count(a->objects), used = 0;
  n->has_objects = a->objects != NULL;
  keyed_object *keyed = calloc(events ? events : 1, sizeof *keyed);
  if (!keyed) return ms_error_set(MS_ERR_NOMEM, "out of memory for the annotation");
  int each = a->config.by == MS_ANNOTATE_OBJECTS;
  for (uint64_t i = 0; i < events && i < UINT32_MAX; i++) {
    const ms_object_event *e = ms_object_table_get(a->objects, i);
    if (e->freed) continue;
    if (each) { /* each object that was touched */
      int touched = i < a->site_capacity && a->site_accesses[i];
      for (int l = 0; !touched && l < n->level_count; l++)
        touched = i < miss_sites[l] && misses[l][i];
      if (!touched) continue;
    }
    keyed[used++] = (keyed_object){(uint32_t)i, e};
  }
  int (*same)(const void *, const void *) = each ? by_id : by_allocation;
  qsort(keyed, used, sizeof *keyed, same);
  n->objects = calloc(used ? used : 1, sizeof *n->objects);
  if (!n->objects) {
    free(keyed);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the annotation's rows");
  }
  uint32_t table_count = sites ? ms_site_table_count(sites) : 0;
  uint64_t k = 0;
  for (uint64_t i = 0; i < used; i++) {
    const ms_object_event *e = keyed[i].event;
    if (i == 0 || same(&keyed[i - 1], &keyed[i]) != 0) {
      const ms_site *where = e->site != MS_SITE_NONE && e->site < table_count
                                 ? ms_site_table_get(sites, e->site)
                                 : NULL;
      n->objects[k++] = (ms_annotation_row){.object = where ? where->object : e->object,
                                            .function = where ? where->function : NULL,
                                            .file = where ? where->file : NULL,
                                            .line = where ? where->line : 0,
                                            .pc = where ? where->pc : 0,
                                            .site = e->site,
                                            .kind = e->kind,
                                            .name = e->name,
                                            .address = e->address};
    }
    ms_annotation_row *row = &n->objects[k - 1];
    row->objects++;
    row->bytes += e->size;
    add_site(row, a, keyed[i].id, misses, miss_sites);
  }
  free(keyed);
  n->object_count = k;
  int level = n->sort_level;
  qsort_r(n->objects, k, sizeof *n->objects, by_misses, &level);
  return 0;
}

int ms_annotator_finish(ms_annotator *a, const ms_site_table *sites, const ms_annotation **out) {
  *out = NULL;
  if (a->finished) {
    *out = &a->annotation;
    return 0;
  }
  int rc = flush_spans(a);
  if (rc == 0) rc = ms_hierarchy_set_flush(a->set);
  if (rc < 0) return rc;
  ms_annotation *n = &a->annotation;
  n->hierarchy = ms_hierarchy_set_get(a->set, 0);
  n->level_count = a->config.hierarchy.level_count;
  n->sort_level = a->config.sort_level < 0 ? n->level_count - 1 : a->config.sort_level;
  const uint64_t *misses[MS_HIERARCHY_MAX_LEVELS];
  uint32_t miss_sites[MS_HIERARCHY_MAX_LEVELS];
  uint64_t site_count = a->site_capacity;
  for (int l = 0; l < n->level_count; l++) {
    ms_cache_stats stats;
    ms_hierarchy_level_stats(n->hierarchy, l, &stats);
    if (l == 0) n->total.accesses = stats.total.accesses;
    n->total.misses[l] = stats.total.misses;
    n->unattributed.misses[l] = stats.unsited_misses;
    misses[l] = stats.site_misses;
    miss_sites[l] = stats.site_misses ? stats.site_count : 0;
    if (miss_sites[l] > site_count) site_count = miss_sites[l];
  }
  n->unattributed.accesses = a->unsited_accesses;
  if (a->config.by != MS_ANNOTATE_CODE) {
    rc = object_rows(a, sites, misses, miss_sites);
    if (rc < 0) return rc;
    a->sites = sites;
    a->finished = 1;
    *out = n;
    return 0;
  }
  uint32_t table_count = sites ? ms_site_table_count(sites) : 0;
  keyed_site *keyed = calloc(site_count ? site_count : 1, sizeof *keyed);
  ms_site *unknown = calloc(site_count ? site_count : 1, sizeof *unknown);
  if (!keyed || !unknown) {
    free(keyed);
    free(unknown);
    return ms_error_set(MS_ERR_NOMEM, "out of memory for the annotation");
  }
  uint64_t used = 0;
  for (uint64_t s = 0; s < site_count; s++) {
    int touched = s < a->site_capacity && a->site_accesses[s];
    for (int l = 0; !touched && l < n->level_count; l++)
      touched = s < miss_sites[l] && misses[l][s];
    if (!touched) continue;
    const ms_site *where = s < table_count ? ms_site_table_get(sites, (uint32_t)s) : NULL;
    if (!where) where = &unknown[s]; /* a site the table does not describe: its number */
    keyed[used++] = (keyed_site){(uint32_t)s, where};
  }
  rc = group_rows(a, keyed, used, by_function, 0, misses, miss_sites, &n->functions,
                  &n->function_count);
  if (rc == 0)
    rc = group_rows(a, keyed, used, by_line, 1, misses, miss_sites, &n->lines, &n->line_count);
  free(keyed);
  free(unknown);
  if (rc < 0) return rc;
  a->sites = sites;
  a->finished = 1;
  *out = n;
  return 0;
}

/* ---- reports ---- */

static uint64_t listed(int limit, uint64_t count) {
  return limit < 0 || (uint64_t)limit > count ? count : (uint64_t)limit;
}

static void text_numbers(FILE *out, const ms_annotation *n, const ms_annotation_row *row) {
  fprintf(out, "%14" PRIu64, row->accesses);
  for (int l = 0; l < n->level_count; l++)
    fprintf(out, " %12" PRIu64, row->misses[l]);
  uint64_t all = n->total.misses[n->sort_level];
  fprintf(out, " %6.2f%%  ", all ? 100.0 * (double)row->misses[n->sort_level] / (double)all : 0.0);
}

static void text_header(FILE *out, const ms_annotation *n, const char *what) {
  fprintf(out, "%14s", "accesses");
  for (int l = 0; l < n->level_count; l++)
    fprintf(out, "    L%d misses", l + 1);
  fprintf(out, " %7s%s%s\n", "share", *what ? "  " : "", what);
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static void describe_function(char *buf, size_t size, const ms_annotation_row *row) {
  snprintf(buf, size, "%s%s%s%s", row->function ? row->function : "???", row->object ? " (" : "",
           row->object ? base_name(row->object) : "", row->object ? ")" : "");
}

static void describe_line(char *buf, size_t size, const ms_annotation_row *row) {
  if (row->file)
    snprintf(buf, size, "%s:%" PRIu32 "  %s", row->file, row->line,
             row->function ? row->function : "???");
  else if (row->object)
    snprintf(buf, size, "%s %s (pc 0x%" PRIx64 ", no line)", base_name(row->object),
             row->function ? row->function : "???", row->pc);
  else
    snprintf(buf, size, "site %" PRIu32 " (pc 0x%" PRIx64 ", no line)", row->site, row->pc);
}

/* The source file of `file`: its own path, else under a source folder (the path as
 * given, then its base name). NULL if none opens. */
static FILE *open_source(const ms_annotate_config *config, const char *file, char *found,
                         size_t size) {
  FILE *f = fopen(file, "r");
  if (f) {
    snprintf(found, size, "%s", file);
    return f;
  }
  for (int d = 0; d < config->source_dir_count; d++)
    for (int base = 0; base < 2; base++) {
      snprintf(found, size, "%s/%s", config->source_dirs[d], base ? base_name(file) : file);
      if ((f = fopen(found, "r"))) return f;
    }
  return NULL;
}

/* Lines of `file` shown: the listed rows' lines and `context` around them. */
static void text_source(FILE *out, const ms_annotator *a, const char *file, uint64_t rows) {
  const ms_annotation *n = &a->annotation;
  char found[4096];
  FILE *f = open_source(&a->config, file, found, sizeof found);
  if (!f) {
    fprintf(out, "\n-- source %s: not found (give its folder with --source-dir)\n", file);
    return;
  }
  uint32_t highest = 0;
  for (uint64_t i = 0; i < n->line_count; i++)
    if (n->lines[i].file && !strcmp(n->lines[i].file, file) && n->lines[i].line > highest)
      highest = n->lines[i].line;
  /* the rows of this file by line number, and which lines to show */
  const ms_annotation_row **at = calloc((size_t)highest + 1, sizeof *at);
  unsigned char *show = calloc((size_t)highest + 1 + (size_t)a->config.context, 1);
  if (!at || !show) {
    free(at);
    free(show);
    fclose(f);
    return;
  }
  for (uint64_t i = 0; i < n->line_count; i++) {
    const ms_annotation_row *row = &n->lines[i];
    if (!row->file || strcmp(row->file, file)) continue;
    at[row->line] = row;
    if (i >= rows) continue;
    int64_t from = (int64_t)row->line - a->config.context,
            to = (int64_t)row->line + a->config.context;
    for (int64_t k = from < 1 ? 1 : from; k <= to; k++)
      show[k] = 1;
  }
  fprintf(out, "\n-- source %s\n", found);
  text_header(out, n, "line  text");
  char text[4096];
  uint32_t number = 0, shown_last = 0;
  while (fgets(text, sizeof text, f)) {
    size_t len = strlen(text);
    int whole = len > 0 && text[len - 1] == '\n';
    if (whole) text[--len] = '\0';
    number++;
    if (number <= highest + (uint32_t)a->config.context && show[number]) {
      if (shown_last && number != shown_last + 1) fputs("   ...\n", out);
      if (number <= highest && at[number]) {
        text_numbers(out, n, at[number]);
      } else {
        fprintf(out, "%14s", ".");
        for (int l = 0; l < n->level_count; l++)
          fprintf(out, " %12s", ".");
        fprintf(out, " %7s  ", "");
      }
      fprintf(out, "%5" PRIu32 "  %s\n", number, text);
      shown_last = number;
    }
    while (!whole && fgets(text, sizeof text, f)) { /* the rest of a long line */
      len = strlen(text);
      if (len > 0 && text[len - 1] == '\n') break;
    }
    if (number > highest + (uint32_t)a->config.context) break;
  }
  if (number < highest)
    fprintf(out, "   (the file has %" PRIu32 " lines: not the one compiled?)\n", number);
  free(at);
  free(show);
  fclose(f);
}

static const char *kind_name(uint8_t kind) {
  return kind == MS_OBJECT_STATIC ? "static" : kind == MS_OBJECT_MAP ? "mmap" : "heap";
}

static void describe_object(char *buf, size_t size, const ms_annotation_row *row, int each) {
  char where[4096];
  if (row->file)
    snprintf(where, sizeof where, "%s:%" PRIu32 " %s", row->file, row->line,
             row->function ? row->function : "???");
  else if (row->function || row->object)
    snprintf(where, sizeof where, "%s (%s, pc 0x%" PRIx64 ")",
             row->function ? row->function : "???", row->object ? base_name(row->object) : "?",
             row->pc);
  else
    snprintf(where, sizeof where, "an unknown call");
  if (row->kind == MS_OBJECT_STATIC)
    snprintf(buf, size, "static %s (%s), %" PRIu64 " bytes", row->name ? row->name : "???",
             row->object ? base_name(row->object) : "?", row->bytes);
  else if (each)
    snprintf(buf, size, "%s 0x%" PRIx64 ", %" PRIu64 " bytes, allocated at %s",
             kind_name(row->kind), row->address, row->bytes, where);
  else
    snprintf(buf, size, "%s, %" PRIu64 " object%s, %" PRIu64 " bytes, allocated at %s",
             kind_name(row->kind), row->objects, row->objects == 1 ? "" : "s", row->bytes, where);
}

static int write_objects_text(FILE *out, const ms_annotator *a) {
  const ms_annotation *n = &a->annotation;
  if (!n->has_objects) {
    fputs("\nno data objects: the input records none (a trace recorded without `memsnap record\n"
          "--objects`, a profile, a Lackey or din trace); record it with --objects to see them\n",
          out);
    return 0;
  }
  uint64_t rows = listed(a->config.lines, n->object_count);
  int each = a->config.by == MS_ANNOTATE_OBJECTS;
  char what[8192];
  fprintf(out, "\n%s (%" PRIu64 " of %" PRIu64 ")\n",
          each ? "data objects" : "data objects by allocating call", rows, n->object_count);
  text_header(out, n, "object");
  for (uint64_t i = 0; i < rows; i++) {
    text_numbers(out, n, &n->objects[i]);
    describe_object(what, sizeof what, &n->objects[i], each);
    fprintf(out, "%s\n", what);
  }
  return 0;
}

int ms_annotation_write_text(FILE *out, const ms_annotator *a) {
  if (!a->finished) return ms_error_set(MS_ERR_ARG, "annotate: the stream has not ended");
  const ms_annotation *n = &a->annotation;
  char spec[256], what[4352];
  fprintf(out, "hierarchy %s: %s (%s model); rows ordered by L%d misses\n",
          ms_hierarchy_config_of(n->hierarchy)->name,
          ms_hierarchy_config_describe(ms_hierarchy_config_of(n->hierarchy), spec, sizeof spec),
          ms_cache_model_name(ms_hierarchy_config_of(n->hierarchy)->model), n->sort_level + 1);
  text_header(out, n, "");
  text_numbers(out, n, &n->total);
  fputs("total\n", out);
  if (n->unattributed.accesses) {
    text_numbers(out, n, &n->unattributed);
    fputs(a->config.by == MS_ANNOTATE_CODE
              ? "accesses without a site\n"
              : "outside every data object (stack, untracked memory)\n",
          out);
  }
  if (a->config.by != MS_ANNOTATE_CODE) {
    write_objects_text(out, a);
    return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the annotation") : 0;
  }
  uint64_t functions = listed(a->config.functions, n->function_count);
  fprintf(out, "\nfunctions (%" PRIu64 " of %" PRIu64 ")\n", functions, n->function_count);
  text_header(out, n, "function (object)");
  for (uint64_t i = 0; i < functions; i++) {
    text_numbers(out, n, &n->functions[i]);
    describe_function(what, sizeof what, &n->functions[i]);
    fprintf(out, "%s\n", what);
  }
  uint64_t lines = listed(a->config.lines, n->line_count);
  fprintf(out, "\nlines (%" PRIu64 " of %" PRIu64 ")\n", lines, n->line_count);
  text_header(out, n, "file:line  function");
  for (uint64_t i = 0; i < lines; i++) {
    text_numbers(out, n, &n->lines[i]);
    describe_line(what, sizeof what, &n->lines[i]);
    fprintf(out, "%s\n", what);
  }
  /* the listed lines' files, each once, in the order of their hottest line */
  for (uint64_t i = 0; a->config.source && i < lines; i++) {
    const char *file = n->lines[i].file;
    if (!file || n->lines[i].misses[n->sort_level] == 0) continue;
    int seen = 0;
    for (uint64_t j = 0; j < i && !seen; j++)
      seen =
          n->lines[j].file && n->lines[j].misses[n->sort_level] && !strcmp(n->lines[j].file, file);
    if (!seen) text_source(out, a, file, lines);
  }
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the annotation") : 0;
}

/* kind: 0 a total, 1 a function, 2 a line */
static json_object *json_row(const ms_annotation *n, const ms_annotation_row *row, int kind) {
  json_object *o = json_object_new_object();
  int line_row = kind == 2;
  if (kind && row->object) json_object_object_add(o, "object", json_object_new_string(row->object));
  if (kind)
    json_object_object_add(o, "function",
                           row->function ? json_object_new_string(row->function) : NULL);
  if (line_row) {
    json_object_object_add(o, "file", row->file ? json_object_new_string(row->file) : NULL);
    json_object_object_add(o, "line", json_object_new_uint64(row->line));
    if (!row->file) {
      char pc[32];
      snprintf(pc, sizeof pc, "0x%" PRIx64, row->pc);
      json_object_object_add(o, "pc", json_object_new_string(pc));
      json_object_object_add(o, "site", json_object_new_uint64(row->site));
    }
  }
  json_object_object_add(o, "accesses", json_object_new_uint64(row->accesses));
  json_object *misses = json_object_new_array();
  for (int l = 0; l < n->level_count; l++)
    json_object_array_add(misses, json_object_new_uint64(row->misses[l]));
  json_object_object_add(o, "misses", misses);
  return o;
}

int ms_annotation_write_json(FILE *out, const ms_annotator *a) {
  if (!a->finished) return ms_error_set(MS_ERR_ARG, "annotate: the stream has not ended");
  const ms_annotation *n = &a->annotation;
  char spec[256];
  json_object *root = json_object_new_object();
  json_object *h = json_object_new_object();
  json_object_object_add(h, "name",
                         json_object_new_string(ms_hierarchy_config_of(n->hierarchy)->name));
  json_object_object_add(h, "spec",
                         json_object_new_string(ms_hierarchy_config_describe(
                             ms_hierarchy_config_of(n->hierarchy), spec, sizeof spec)));
  json_object_object_add(
      h, "model",
      json_object_new_string(ms_cache_model_name(ms_hierarchy_config_of(n->hierarchy)->model)));
  json_object_object_add(root, "hierarchy", h);
  json_object_object_add(root, "sort_level", json_object_new_int(n->sort_level + 1));
  json_object_object_add(root, "total", json_row(n, &n->total, 0));
  json_object_object_add(root, "unattributed", json_row(n, &n->unattributed, 0));
  json_object_object_add(root, "by",
                         json_object_new_string(a->config.by == MS_ANNOTATE_CODE ? "code"
                                                : a->config.by == MS_ANNOTATE_OBJECTS
                                                    ? "object"
                                                    : "allocation"));
  if (a->config.by != MS_ANNOTATE_CODE) {
    json_object_object_add(root, "has_objects", json_object_new_boolean(n->has_objects));
    json_object_object_add(root, "object_count", json_object_new_uint64(n->object_count));
    json_object *objects = json_object_new_array();
    for (uint64_t i = 0; i < listed(a->config.lines, n->object_count); i++) {
      const ms_annotation_row *row = &n->objects[i];
      json_object *o = json_row(n, row, 0);
      json_object_object_add(o, "kind", json_object_new_string(kind_name(row->kind)));
      if (row->name) json_object_object_add(o, "name", json_object_new_string(row->name));
      if (a->config.by == MS_ANNOTATE_OBJECTS) {
        char address[32];
        snprintf(address, sizeof address, "0x%" PRIx64, row->address);
        json_object_object_add(o, "address", json_object_new_string(address));
      }
      json_object_object_add(o, "objects", json_object_new_uint64(row->objects));
      json_object_object_add(o, "bytes", json_object_new_uint64(row->bytes));
      if (row->kind != MS_OBJECT_STATIC) {
        json_object *at = json_object_new_object();
        if (row->object) json_object_object_add(at, "object", json_object_new_string(row->object));
        json_object_object_add(at, "function",
                               row->function ? json_object_new_string(row->function) : NULL);
        json_object_object_add(at, "file", row->file ? json_object_new_string(row->file) : NULL);
        json_object_object_add(at, "line", json_object_new_uint64(row->line));
        char pc[32];
        snprintf(pc, sizeof pc, "0x%" PRIx64, row->pc);
        json_object_object_add(at, "pc", json_object_new_string(pc));
        json_object_object_add(o, "allocated_at", at);
      } else if (row->object) {
        json_object_object_add(o, "object", json_object_new_string(row->object));
      }
      json_object_array_add(objects, o);
    }
    json_object_object_add(root, "objects", objects);
  }
  json_object_object_add(root, "function_count", json_object_new_uint64(n->function_count));
  json_object_object_add(root, "line_count", json_object_new_uint64(n->line_count));
  json_object *functions = json_object_new_array();
  for (uint64_t i = 0; i < listed(a->config.functions, n->function_count); i++)
    json_object_array_add(functions, json_row(n, &n->functions[i], 1));
  json_object_object_add(root, "functions", functions);
  json_object *lines = json_object_new_array();
  for (uint64_t i = 0; i < listed(a->config.lines, n->line_count); i++)
    json_object_array_add(lines, json_row(n, &n->lines[i], 2));
  json_object_object_add(root, "lines", lines);
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root,
                                         JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the annotation") : 0;
}

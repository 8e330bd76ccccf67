/* Reports of a simulation (text and JSON) and the sink that feeds a hierarchy set.
 *
 * Per hierarchy and level: accesses, hits, misses and hit rate, split by kind (load, store,
 * modify, each counted as the model counts them, see memsnap/cache.h) and by thread, the
 * writebacks, and the `top` sites with most misses, described through the site table.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"
#include "memsnap/error.h"

typedef struct ranked_site {
  uint32_t site;
  uint64_t misses;
} ranked_site;

/* The `top` sites with most misses (ties: lower id first), in `ranked`; returns how many. */
static int top_sites(const ms_cache_stats *stats, int top, ranked_site *ranked) {
  int count = 0;
  if (top <= 0) return 0;
  for (uint32_t site = 0; site < stats->site_count; site++) {
    uint64_t misses = stats->site_misses[site];
    if (misses == 0 || (count == top && misses <= ranked[count - 1].misses)) continue;
    int at = count < top ? count++ : top - 1;
    while (at > 0 && ranked[at - 1].misses < misses) {
      ranked[at] = ranked[at - 1];
      at--;
    }
    ranked[at] = (ranked_site){site, misses};
  }
  return count;
}

static const char *write_policy_name(ms_cache_write_policy policy) {
  return policy == MS_CACHE_WRITE_THROUGH ? "write-through" : "write-back";
}

static void text_counts(FILE *out, const char *label, ms_cache_counts counts) {
  fprintf(out, "  %-10s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %8.3f%%", label, counts.accesses,
          counts.accesses - counts.misses, counts.misses, 100.0 * ms_cache_hit_rate(counts));
}

static void text_level(FILE *out, const ms_hierarchy *hierarchy, int index,
                       const ms_site_table *sites, int top, ranked_site *ranked) {
  const ms_cache_level_config *level = &hierarchy->config.levels[index];
  ms_cache_stats stats;
  ms_hierarchy_level_stats(hierarchy, index, &stats);
  char label[32];
  snprintf(label, sizeof label, "L%d", index + 1);
  text_counts(out, label, stats.total);
  fprintf(out, " %12" PRIu64 "   %" PRIu64 "/%" PRIu32 "/%" PRIu32 " %s, %" PRIu64 " sets\n",
          stats.writebacks, level->size, level->line_size, level->associativity,
          ms_cache_policy_name(hierarchy->levels[index]->policy),
          hierarchy->levels[index]->set_count);
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++) {
    snprintf(label, sizeof label, "  %s", ms_access_kind_name((ms_access_kind)k));
    text_counts(out, label, stats.kinds[k]);
    fputc('\n', out);
  }
  if (stats.thread_count > 1)
    for (uint32_t t = 0; t < stats.thread_count; t++) {
      ms_cache_counts sum = {0, 0};
      for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++) {
        sum.accesses += stats.thread_kinds[t * MS_ACCESS_KIND_COUNT + k].accesses;
        sum.misses += stats.thread_kinds[t * MS_ACCESS_KIND_COUNT + k].misses;
      }
      snprintf(label, sizeof label, "  thread %" PRIu32, t);
      text_counts(out, label, sum);
      fputc('\n', out);
    }
  int count = top_sites(&stats, top, ranked);
  for (int i = 0; i < count; i++) {
    char where[512];
    const ms_site *site = sites ? ms_site_table_get(sites, ranked[i].site) : NULL;
    if (site) ms_site_describe(site, where, sizeof where);
    else snprintf(where, sizeof where, "site %" PRIu32, ranked[i].site);
    fprintf(out, "    %14" PRIu64 " misses %6.2f%%  %s\n", ranked[i].misses,
            stats.total.misses ? 100.0 * (double)ranked[i].misses / (double)stats.total.misses : 0.0,
            where);
  }
}

/* Both reports: simulate what is still buffered, clamp `top`, and allocate its ranking. */
static int report_begin(const ms_hierarchy_set *set, int *top, ranked_site **ranked) {
  int rc = cache_set_flush_for_reading(set);
  if (rc < 0) return rc;
  if (*top < 0) *top = 0;
  *ranked = malloc((size_t)(*top ? *top : 1) * sizeof **ranked);
  return *ranked ? MS_OK : ms_error_set(MS_ERR_NOMEM, "out of memory for a cache report");
}

int ms_cache_report_text(FILE *out, const ms_hierarchy_set *set, const ms_site_table *sites,
                         int top) {
  ranked_site *ranked;
  int rc = report_begin(set, &top, &ranked);
  if (rc < 0) return rc;
  for (int h = 0; h < set->count; h++) {
    const ms_hierarchy *hierarchy = &set->hierarchies[h];
    char spec[256];
    fprintf(out, "%s%s: %s (%s, %s model)\n", h ? "\n" : "", hierarchy->config.name,
            ms_hierarchy_config_describe(&hierarchy->config, spec, sizeof spec),
            write_policy_name(hierarchy->config.write_policy),
            ms_cache_model_name(hierarchy->config.model));
    fprintf(out, "  %-10s %14s %14s %14s %9s %12s\n", "level", "accesses", "hits", "misses",
            "hit rate", "writebacks");
    for (int l = 0; l < hierarchy->config.level_count; l++)
      text_level(out, hierarchy, l, sites, top, ranked);
  }
  free(ranked);
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the cache report") : MS_OK;
}

static json_object *json_counts(ms_cache_counts counts) {
  json_object *object = json_object_new_object();
  json_object_object_add(object, "accesses", json_object_new_uint64(counts.accesses));
  json_object_object_add(object, "hits", json_object_new_uint64(counts.accesses - counts.misses));
  json_object_object_add(object, "misses", json_object_new_uint64(counts.misses));
  json_object_object_add(object, "hit_rate", json_object_new_double(ms_cache_hit_rate(counts)));
  return object;
}

static json_object *json_level(const ms_hierarchy *hierarchy, int index,
                               const ms_site_table *sites, int top, ranked_site *ranked) {
  const ms_cache_level_config *config = &hierarchy->config.levels[index];
  ms_cache_stats stats;
  ms_hierarchy_level_stats(hierarchy, index, &stats);
  json_object *level = json_counts(stats.total);
  json_object_object_add(level, "level", json_object_new_int(index + 1));
  json_object_object_add(level, "size", json_object_new_uint64(config->size));
  json_object_object_add(level, "line_size", json_object_new_uint64(config->line_size));
  json_object_object_add(level, "associativity", json_object_new_uint64(config->associativity));
  json_object_object_add(level, "sets", json_object_new_uint64(hierarchy->levels[index]->set_count));
  json_object_object_add(level, "policy",
                         json_object_new_string(ms_cache_policy_name(hierarchy->levels[index]->policy)));
  json_object_object_add(level, "writebacks", json_object_new_uint64(stats.writebacks));
  json_object *kinds = json_object_new_object();
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++)
    json_object_object_add(kinds, ms_access_kind_name((ms_access_kind)k), json_counts(stats.kinds[k]));
  json_object_object_add(level, "kinds", kinds);
  json_object *threads = json_object_new_array();
  for (uint32_t t = 0; t < stats.thread_count; t++) {
    ms_cache_counts sum = {0, 0};
    for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++) {
      sum.accesses += stats.thread_kinds[t * MS_ACCESS_KIND_COUNT + k].accesses;
      sum.misses += stats.thread_kinds[t * MS_ACCESS_KIND_COUNT + k].misses;
    }
    json_object *thread = json_counts(sum);
    json_object_object_add(thread, "thread", json_object_new_uint64(t));
    json_object_array_add(threads, thread);
  }
  json_object_object_add(level, "threads", threads);
  json_object *top_array = json_object_new_array();
  int count = top_sites(&stats, top, ranked);
  for (int i = 0; i < count; i++) {
    json_object *entry = json_object_new_object();
    json_object_object_add(entry, "site", json_object_new_uint64(ranked[i].site));
    json_object_object_add(entry, "misses", json_object_new_uint64(ranked[i].misses));
    const ms_site *site = sites ? ms_site_table_get(sites, ranked[i].site) : NULL;
    if (site) {
      char where[512];
      char pc[32];
      snprintf(pc, sizeof pc, "0x%" PRIx64, site->pc);
      json_object_object_add(entry, "pc", json_object_new_string(pc));
      json_object_object_add(entry, "location",
                             json_object_new_string(ms_site_describe(site, where, sizeof where)));
      if (site->file) json_object_object_add(entry, "file", json_object_new_string(site->file));
      if (site->line) json_object_object_add(entry, "line", json_object_new_uint64(site->line));
    }
    json_object_array_add(top_array, entry);
  }
  json_object_object_add(level, "top_sites", top_array);
  return level;
}

int ms_cache_report_json(FILE *out, const ms_hierarchy_set *set, const ms_site_table *sites,
                         int top) {
  ranked_site *ranked;
  int rc = report_begin(set, &top, &ranked);
  if (rc < 0) return rc;
  json_object *root = json_object_new_object();
  json_object *array = json_object_new_array();
  for (int h = 0; h < set->count; h++) {
    const ms_hierarchy *hierarchy = &set->hierarchies[h];
    char spec[256];
    json_object *object = json_object_new_object();
    json_object_object_add(object, "name", json_object_new_string(hierarchy->config.name));
    json_object_object_add(object, "spec", json_object_new_string(ms_hierarchy_config_describe(
                                               &hierarchy->config, spec, sizeof spec)));
    json_object_object_add(object, "write_policy",
                           json_object_new_string(write_policy_name(hierarchy->config.write_policy)));
    json_object_object_add(object, "model",
                           json_object_new_string(ms_cache_model_name(hierarchy->config.model)));
    json_object_object_add(object, "seed", json_object_new_uint64(hierarchy->config.seed));
    json_object *levels = json_object_new_array();
    for (int l = 0; l < hierarchy->config.level_count; l++)
      json_object_array_add(levels, json_level(hierarchy, l, sites, top, ranked));
    json_object_object_add(object, "levels", levels);
    json_object_array_add(array, object);
  }
  json_object_object_add(root, "hierarchies", array);
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
  free(ranked);
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the cache report") : MS_OK;
}

/* ---- the sink ---- */

typedef struct cache_sink {
  ms_sink base;
  ms_hierarchy_set *set;
} cache_sink;

static int sink_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  (void)info;
  return ms_hierarchy_set_access_batch(((cache_sink *)sink)->set, batch);
}

static int sink_end(ms_sink *sink, const ms_stream_info *info) {
  (void)info;
  return ms_hierarchy_set_flush(((cache_sink *)sink)->set);
}

static void sink_destroy(ms_sink *sink) { free(sink); }

static const ms_sink_ops cache_sink_ops = {
    .begin = NULL, .consume = sink_consume, .end = sink_end, .destroy = sink_destroy};

int ms_cache_sink_new(ms_hierarchy_set *set, ms_sink **out) {
  cache_sink *sink = calloc(1, sizeof *sink);
  *out = NULL;
  if (!sink) return ms_error_set(MS_ERR_NOMEM, "out of memory for a cache sink");
  sink->base.ops = &cache_sink_ops;
  sink->set = set;
  *out = &sink->base;
  return MS_OK;
}

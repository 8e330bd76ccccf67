/* The 46 evaluation hierarchies and hit-rate differences (see memsnap/evaluation.h). */
#include "memsnap/evaluation.h"

#include <math.h>

int ms_evaluation_configs(ms_hierarchy_config configs[MS_EVALUATION_COUNT]) {
  for (int h = 0; h < MS_EVALUATION_COUNT; h++) {
    int rc = ms_hierarchy_parse(ms_hierarchy_catalog_get(h)->name, &configs[h]);
    if (rc < 0) return rc;
  }
  return 0;
}

int ms_evaluation_set_new(ms_hierarchy_set **out) {
  ms_hierarchy_config configs[MS_EVALUATION_COUNT];
  *out = NULL;
  int rc = ms_evaluation_configs(configs);
  return rc < 0 ? rc : ms_hierarchy_set_new(configs, MS_EVALUATION_COUNT, out);
}

void ms_evaluation_hit_rates(const ms_hierarchy_set *set, ms_evaluation_rates *out) {
  for (int h = 0; h < MS_EVALUATION_COUNT; h++) {
    const ms_hierarchy *hierarchy = ms_hierarchy_set_get(set, h);
    const ms_hierarchy_config *config = ms_hierarchy_config_of(hierarchy);
    out->levels[h] = config->level_count;
    for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++) {
      ms_cache_stats stats;
      if (l < config->level_count) ms_hierarchy_level_stats(hierarchy, l, &stats);
      out->hit_rate[h][l] = l < config->level_count ? ms_cache_hit_rate(stats.total) : 0.0;
    }
  }
}

void ms_evaluation_differences(const ms_evaluation_rates *a, const ms_evaluation_rates *b,
                               ms_rate_difference levels[MS_HIERARCHY_MAX_LEVELS]) {
  for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++) {
    double sum = 0, max = 0;
    int with = 0;
    for (int h = 0; h < MS_EVALUATION_COUNT; h++) {
      if (l >= a->levels[h] || l >= b->levels[h]) continue;
      double d = fabs(a->hit_rate[h][l] - b->hit_rate[h][l]);
      sum += d;
      max = d > max ? d : max;
      with++;
    }
    levels[l] = (ms_rate_difference){with, with ? sum / with : 0.0, max};
  }
}

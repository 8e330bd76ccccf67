/* The evaluation hierarchies and hit-rate differences: see evaluation.h. */
#include "evaluation.h"

#include <math.h>

#include "cli.h"

int evaluation_configs(const char *command, ms_hierarchy_config configs[EVALUATION_COUNT]) {
  for (int h = 0; h < EVALUATION_COUNT; h++)
    if (ms_hierarchy_parse(ms_hierarchy_catalog_get(h)->name, &configs[h]) < 0) {
      cli_fail(command);
      return -1;
    }
  return 0;
}

void evaluation_hit_rates(const ms_hierarchy_set *set, evaluation_rates rates) {
  for (int h = 0; h < EVALUATION_COUNT; h++) {
    const ms_hierarchy *hierarchy = ms_hierarchy_set_get(set, h);
    const ms_hierarchy_config *config = ms_hierarchy_config_of(hierarchy);
    for (int l = 0; l < config->level_count; l++) {
      ms_cache_stats stats;
      ms_hierarchy_level_stats(hierarchy, l, &stats);
      rates[h][l] = ms_cache_hit_rate(stats.total);
    }
  }
}

void evaluation_differences(const ms_hierarchy_config configs[EVALUATION_COUNT], evaluation_rates a,
                            evaluation_rates b, evaluation_level levels[MS_HIERARCHY_MAX_LEVELS]) {
  for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++) {
    double sum = 0, max = 0;
    int with = 0;
    for (int h = 0; h < EVALUATION_COUNT; h++) {
      if (l >= configs[h].level_count) continue;
      double d = fabs(a[h][l] - b[h][l]);
      sum += d;
      max = d > max ? d : max;
      with++;
    }
    levels[l].hierarchies = with;
    levels[l].mean = with ? sum / with : 0.0;
    levels[l].max = max;
  }
}

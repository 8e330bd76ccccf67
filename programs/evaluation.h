/* The 46 evaluation hierarchies of the catalog (hpcmo-01..46) simulated together, and the
 * comparison of two sets of their hit rates: shared by `memsnap verify` (a profile against
 * its trace) and `memsnap compare` (two sources). */
#ifndef MEMSNAP_EVALUATION_H
#define MEMSNAP_EVALUATION_H

#include "memsnap/cache.h"

#define EVALUATION_COUNT MS_HIERARCHY_CATALOG_EVALUATION

typedef double evaluation_rates[EVALUATION_COUNT][MS_HIERARCHY_MAX_LEVELS];

/* The configurations of the 46 hierarchies, as `memsnap sim --hierarchy NAME` builds them
 * (LRU, write-back, memsnap model). Prints the error and returns -1 on failure. */
int evaluation_configs(const char *command, ms_hierarchy_config configs[EVALUATION_COUNT]);

/* The total hit rate of every level of every hierarchy of `set` (46 hierarchies in the
 * order of evaluation_configs); levels a hierarchy lacks are left as they are. */
void evaluation_hit_rates(const ms_hierarchy_set *set, evaluation_rates rates);

/* Absolute differences of hit rates on one level (fractions, 0..1) over the hierarchies
 * that have it. */
typedef struct evaluation_level {
  int hierarchies; /* 0: no hierarchy has this level */
  double mean, max;
} evaluation_level;
void evaluation_differences(const ms_hierarchy_config configs[EVALUATION_COUNT], evaluation_rates a,
                            evaluation_rates b, evaluation_level levels[MS_HIERARCHY_MAX_LEVELS]);

#endif

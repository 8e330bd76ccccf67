/* Two sources side by side on the 46 evaluation hierarchies and on cache surfaces (see
 * memsnap/evaluation.h). */
#include <math.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/evaluation.h"

ms_rate_difference ms_surface_rate_difference(const ms_surface *a, const ms_surface *b,
                                              uint32_t width) {
  return ms_surface_rate_difference_from(a, b, width, 0);
}

ms_rate_difference ms_surface_rate_difference_from(const ms_surface *a, const ms_surface *b,
                                                   uint32_t width, uint64_t min_depth) {
  ms_rate_difference d = {0, 0.0, 0.0};
  double sum = 0;
  for (int i = 0; i < a->width_count; i++) {
    if (width && a->widths[i] != width) continue;
    int j = ms_surface_width_index(b, a->widths[i]);
    if (j < 0) continue;
    for (int k = 0; k < a->depth_count; k++) {
      int m = ms_surface_depth_index(b, a->depths[k]);
      if (m < 0 || a->depths[k] < min_depth) continue;
      double diff = fabs(a->hit_rate[i][k] - b->hit_rate[j][m]);
      sum += diff;
      d.max = diff > d.max ? diff : d.max;
      d.count++;
    }
  }
  d.mean = d.count ? sum / d.count : 0.0;
  return d;
}

int ms_surface_difference(const ms_surface *a, const ms_surface *b, double *mean_abs_diff,
                          int *points) {
  ms_rate_difference d = ms_surface_rate_difference(a, b, 0);
  if (points) *points = d.count;
  if (d.count == 0)
    return ms_error_set(MS_ERR_ARG, "the two surfaces share no (width, depth) point");
  *mean_abs_diff = d.mean;
  return MS_OK;
}

int ms_comparison_observe(ms_comparison *comparison, int side, ms_source *source,
                          const ms_surface_config *grid) {
  if (side < 0 || side > 1) return ms_error_set(MS_ERR_ARG, "comparison side %d (0 or 1)", side);
  ms_comparison_side *s = &comparison->sides[side];
  ms_hierarchy_set *set = NULL;
  ms_surface_builder *builder = NULL;
  ms_sink *sinks[2] = {NULL, NULL};
  int rc = ms_evaluation_set_new(&set);
  if (rc == 0) rc = ms_cache_sink_new(set, &sinks[0]);
  if (rc == 0) rc = ms_surface_builder_new(grid, &builder);
  if (rc == 0) rc = ms_surface_sink_new(builder, &sinks[1]);
  if (rc == 0) rc = ms_pipeline_run(source, sinks, 2, 0);
  if (rc == 0) rc = ms_hierarchy_set_flush(set);
  if (rc == 0) {
    ms_evaluation_hit_rates(set, &s->rates);
    ms_surface_builder_result(builder, &s->surface);
    s->accesses = s->surface.accesses;
  }
  ms_sink_destroy(sinks[0]);
  ms_sink_destroy(sinks[1]);
  ms_hierarchy_set_free(set);
  ms_surface_builder_free(builder);
  return rc;
}

void ms_comparison_finish(ms_comparison *comparison) {
  const ms_comparison_side *a = &comparison->sides[0], *b = &comparison->sides[1];
  ms_evaluation_differences(&a->rates, &b->rates, comparison->levels);
  comparison->surface = ms_surface_rate_difference(&a->surface, &b->surface, 0);
  comparison->surface_512 = ms_surface_rate_difference(&a->surface, &b->surface, 512);
}

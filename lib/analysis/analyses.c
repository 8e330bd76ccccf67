/* memsnap's analyses behind the analysis frame (memsnap/analysis.h): the cache simulator,
 * the cache surface, the locality scores, the memory signature and the PSnAP profile
 * builder; typed constructors and creation by name. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "memsnap/error.h"
#include "memsnap/evaluation.h"
#include "memsnap/number.h"
#include "memsnap/sample.h"

static int unsupported(const ms_analysis *a, ms_report_format format) {
  return ms_error_set(MS_ERR_UNSUPPORTED, "%s: no %s report", a->name,
                      format == MS_REPORT_JSON  ? "JSON"
                      : format == MS_REPORT_CSV ? "CSV"
                                                : "text");
}

static int out_of_memory(void) { return ms_error_set(MS_ERR_NOMEM, "out of memory"); }

/* ---- sim ---- */

typedef struct sim_analysis {
  ms_analysis base;
  ms_hierarchy_set *set;
  int top;
} sim_analysis;

static int sim_finish(ms_analysis *a, const ms_stream_info *info) {
  (void)info;
  return ms_hierarchy_set_flush(((sim_analysis *)a)->set);
}

static const void *sim_result(const ms_analysis *a) { return ((const sim_analysis *)a)->set; }

static int sim_write(const ms_analysis *a, const ms_stream_info *info, FILE *out,
                     ms_report_format format) {
  const sim_analysis *s = (const sim_analysis *)a;
  if (format == MS_REPORT_TEXT) return ms_cache_report_text(out, s->set, info->sites, s->top);
  if (format == MS_REPORT_JSON) return ms_cache_report_json(out, s->set, info->sites, s->top);
  return unsupported(a, format);
}

static void sim_destroy(ms_analysis *a) {
  ms_hierarchy_set_free(((sim_analysis *)a)->set);
  free(a);
}

static const analysis_ops sim_ops = {sim_finish, sim_result, sim_write, sim_destroy};

int ms_sim_analysis_new(const ms_hierarchy_config *configs, int count, int top, ms_analysis **out) {
  *out = NULL;
  sim_analysis *s = calloc(1, sizeof *s);
  if (!s) return out_of_memory();
  s->top = top;
  ms_sink *sink = NULL;
  int rc = ms_hierarchy_set_new(configs, count, &s->set);
  if (rc == 0) rc = ms_cache_sink_new(s->set, &sink);
  if (rc == 0) rc = analysis_init(&s->base, "sim", &sim_ops, sink, (ms_analysis_sampling){0, 0});
  if (rc < 0) {
    if (!s->base.ops) ms_sink_destroy(sink);
    s->base.ops = &sim_ops;
    ms_analysis_free(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

int analysis_sim_create(const analysis_option *options, int count, ms_analysis **out) {
  ms_hierarchy_config *configs = calloc((size_t)count * MS_EVALUATION_COUNT + 1, sizeof *configs);
  int n = 0, top = 10, rc = configs ? 0 : out_of_memory();
  char text[256];
  for (int i = 0; rc == 0 && i < count; i++) {
    const analysis_option *o = &options[i];
    uint64_t value = 0;
    if (analysis_option_is(o, "hierarchy") && o->value) {
      analysis_option_text(o, text, sizeof text);
      if (!strcmp(text, "evaluation")) {
        rc = ms_evaluation_configs(configs + n);
        n += MS_EVALUATION_COUNT;
      } else if (ms_hierarchy_parse(text, &configs[n]) == 0) {
        n++;
      } else {
        rc = analysis_option_error("sim", o, ms_error_message());
      }
    } else if (analysis_option_is(o, "top") && o->value) {
      if (ms_parse_number_text(analysis_option_text(o, text, sizeof text), MS_NUMBER_COUNT,
                               &value) != 0 ||
          value > 1000000)
        rc = analysis_option_error("sim", o, "a count of sites");
      top = (int)value;
    } else {
      rc = analysis_option_error("sim", o, "is not one of hierarchy=H, top=N");
    }
  }
  if (rc == 0 && n == 0)
    rc = ms_error_set(MS_ERR_ARG, "sim: no hierarchy (hierarchy=NAME or SPEC)");
  if (rc == 0) rc = ms_sim_analysis_new(configs, n, top, out);
  free(configs);
  return rc;
}

/* ---- annotate ---- */

typedef struct annotate_analysis {
  ms_analysis base;
  ms_annotator *annotator;
  const ms_annotation *annotation;
} annotate_analysis;

static int annotate_finish(ms_analysis *a, const ms_stream_info *info) {
  annotate_analysis *s = (annotate_analysis *)a;
  return ms_annotator_finish(s->annotator, info->sites, &s->annotation);
}

static const void *annotate_result(const ms_analysis *a) {
  return ((const annotate_analysis *)a)->annotation;
}

static int annotate_write(const ms_analysis *a, const ms_stream_info *info, FILE *out,
                          ms_report_format format) {
  (void)info;
  const annotate_analysis *s = (const annotate_analysis *)a;
  if (format == MS_REPORT_TEXT) return ms_annotation_write_text(out, s->annotator);
  if (format == MS_REPORT_JSON) return ms_annotation_write_json(out, s->annotator);
  return unsupported(a, format);
}

static void annotate_destroy(ms_analysis *a) {
  ms_annotator_free(((annotate_analysis *)a)->annotator);
  free(a);
}

static const analysis_ops annotate_ops = {annotate_finish, annotate_result, annotate_write,
                                          annotate_destroy};

int ms_annotate_analysis_new(const ms_annotate_config *config, ms_analysis **out) {
  *out = NULL;
  annotate_analysis *s = calloc(1, sizeof *s);
  if (!s) return out_of_memory();
  int rc = ms_annotator_new(config, &s->annotator);
  if (rc == 0)
    rc = analysis_init(&s->base, "annotate", &annotate_ops, ms_annotator_sink(s->annotator),
                       (ms_analysis_sampling){0, 0});
  if (rc < 0) {
    s->base.ops = &annotate_ops;
    ms_analysis_free(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

int analysis_annotate_create(const analysis_option *options, int count, ms_analysis **out) {
  ms_hierarchy_config hierarchy;
  int have = 0, rc = 0;
  int64_t level = -1, functions = 10, lines = 20;
  char text[256];
  for (int i = 0; rc == 0 && i < count; i++) {
    const analysis_option *o = &options[i];
    uint64_t value = 0;
    int64_t *number = analysis_option_is(o, "level")       ? &level
                      : analysis_option_is(o, "functions") ? &functions
                      : analysis_option_is(o, "lines")     ? &lines
                                                           : NULL;
    if (analysis_option_is(o, "hierarchy") && o->value && !have) {
      if (ms_hierarchy_parse(analysis_option_text(o, text, sizeof text), &hierarchy) == 0)
        have = 1;
      else
        rc = analysis_option_error("annotate", o, ms_error_message());
    } else if (number && o->value) {
      if (ms_parse_number_text(analysis_option_text(o, text, sizeof text), MS_NUMBER_COUNT,
                               &value) != 0 ||
          value > 1000000 || (number == &level && value == 0))
        rc =
            analysis_option_error("annotate", o, number == &level ? "a level, 1 first" : "a count");
      *number = number == &level ? (int64_t)value - 1 : (int64_t)value;
    } else {
      rc = analysis_option_error("annotate", o,
                                 "is not one of hierarchy=H (one), level=N, functions=N, lines=N");
    }
  }
  if (rc == 0 && !have)
    rc = ms_error_set(MS_ERR_ARG, "annotate: no hierarchy (hierarchy=NAME or SPEC)");
  if (rc < 0) return rc;
  ms_annotate_config config;
  ms_annotate_config_default(&config, &hierarchy);
  config.sort_level = (int)level;
  config.functions = (int)functions;
  config.lines = (int)lines;
  config.source = 0; /* a report by name names lines, without their text */
  return ms_annotate_analysis_new(&config, out);
}

/* ---- surface ---- */

typedef struct surface_analysis {
  ms_analysis base;
  ms_surface_builder *builder;
  ms_surface surface;
} surface_analysis;

static int surface_finish(ms_analysis *a, const ms_stream_info *info) {
  (void)info;
  surface_analysis *s = (surface_analysis *)a;
  ms_surface_builder_result(s->builder, &s->surface);
  return 0;
}

static const void *surface_result(const ms_analysis *a) {
  return &((const surface_analysis *)a)->surface;
}

static int surface_write(const ms_analysis *a, const ms_stream_info *info, FILE *out,
                         ms_report_format format) {
  (void)info;
  const ms_surface *surface = &((const surface_analysis *)a)->surface;
  switch (format) {
  case MS_REPORT_TEXT: return ms_surface_write_table(out, surface);
  case MS_REPORT_JSON: return ms_surface_write_json(out, surface);
  case MS_REPORT_CSV: return ms_surface_write_csv(out, surface);
  }
  return unsupported(a, format);
}

static void surface_destroy(ms_analysis *a) {
  ms_surface_builder_free(((surface_analysis *)a)->builder);
  free(a);
}

static const analysis_ops surface_ops = {surface_finish, surface_result, surface_write,
                                         surface_destroy};

int ms_surface_analysis_new(const ms_surface_config *config, ms_analysis_sampling sampling,
                            ms_analysis **out) {
  *out = NULL;
  surface_analysis *s = calloc(1, sizeof *s); /* the surface's tables: about 40 KB */
  if (!s) return out_of_memory();
  ms_sink *sink = NULL;
  int rc = ms_surface_builder_new(config, &s->builder);
  if (rc == 0) rc = ms_surface_sink_new(s->builder, &sink);
  if (rc == 0) rc = analysis_init(&s->base, "surface", &surface_ops, sink, sampling);
  if (rc < 0) {
    if (!s->base.ops) ms_sink_destroy(sink);
    s->base.ops = &surface_ops;
    ms_analysis_free(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

/* sample=ON/OFF, shared by the analyses that take it; 1 if `o` was it, <0 if bad. */
static int sampling_option(const char *name, const analysis_option *o,
                           ms_analysis_sampling *sampling) {
  char text[128];
  if (!analysis_option_is(o, "sample") || !o->value) return 0;
  if (ms_parse_sampling(analysis_option_text(o, text, sizeof text), &sampling->on,
                        &sampling->off) != 0)
    return analysis_option_error(name, o, "ON/OFF accesses, e.g. 1M/9M");
  return 1;
}

int analysis_surface_create(const analysis_option *options, int count, ms_analysis **out) {
  ms_surface_config config;
  ms_surface_config_default(&config);
  ms_analysis_sampling sampling = {0, 0};
  uint64_t values[MS_SURFACE_MAX_DEPTHS];
  char text[512];
  int rc = 0, n;
  for (int i = 0; rc == 0 && i < count; i++) {
    const analysis_option *o = &options[i];
    if ((rc = sampling_option("surface", o, &sampling)) != 0) {
      rc = rc < 0 ? rc : 0;
    } else if (analysis_option_is(o, "widths") && o->value) {
      rc = ms_surface_parse_grid(analysis_option_text(o, text, sizeof text), "surface widths",
                                 values, MS_SURFACE_MAX_WIDTHS, &n);
      config.width_count = n;
      for (int k = 0; rc == 0 && k < n; k++)
        config.widths[k] = values[k] > UINT32_MAX ? 0 : (uint32_t)values[k];
    } else if (analysis_option_is(o, "depths") && o->value) {
      rc = ms_surface_parse_grid(analysis_option_text(o, text, sizeof text), "surface depths",
                                 values, MS_SURFACE_MAX_DEPTHS, &n);
      config.depth_count = n;
      if (rc == 0) memcpy(config.depths, values, (size_t)n * sizeof *values);
    } else if (analysis_option_is(o, "shards") && o->value) {
      char *end;
      config.sample_rate = strtod(analysis_option_text(o, text, sizeof text), &end);
      if (*end || end == text || !(config.sample_rate > 0.0) || !(config.sample_rate < 1.0))
        rc = analysis_option_error("surface", o, "a rate in (0, 1), e.g. 0.01");
    } else {
      rc = analysis_option_error("surface", o,
                                 "is not one of widths=W, depths=D, shards=RATE, sample=ON/OFF");
    }
  }
  if (rc == 0) rc = ms_surface_config_check(&config);
  return rc < 0 ? rc : ms_surface_analysis_new(&config, sampling, out);
}

/* ---- scores ---- */

typedef struct scores_analysis {
  ms_analysis base;
  ms_scores_builder *builder;
  ms_scores scores;
  int top;
} scores_analysis;

static int scores_finish(ms_analysis *a, const ms_stream_info *info) {
  (void)info;
  scores_analysis *s = (scores_analysis *)a;
  return ms_scores_builder_result(s->builder, &s->scores);
}

static const void *scores_result(const ms_analysis *a) {
  return &((const scores_analysis *)a)->scores;
}

static int scores_write(const ms_analysis *a, const ms_stream_info *info, FILE *out,
                        ms_report_format format) {
  const scores_analysis *s = (const scores_analysis *)a;
  if (format == MS_REPORT_TEXT) return ms_scores_write_table(out, &s->scores, info->sites, s->top);
  if (format == MS_REPORT_JSON) return ms_scores_write_json(out, &s->scores, info->sites, s->top);
  return unsupported(a, format);
}

static void scores_destroy(ms_analysis *a) {
  scores_analysis *s = (scores_analysis *)a;
  ms_scores_clear(&s->scores);
  ms_scores_builder_free(s->builder);
  free(s);
}

static const analysis_ops scores_ops = {scores_finish, scores_result, scores_write, scores_destroy};

int ms_scores_analysis_new(const ms_scores_config *config, int top, ms_analysis_sampling sampling,
                           ms_analysis **out) {
  *out = NULL;
  scores_analysis *s = calloc(1, sizeof *s);
  if (!s) return out_of_memory();
  s->top = top;
  ms_sink *sink = NULL;
  int rc = ms_scores_builder_new(config, &s->builder);
  if (rc == 0) rc = ms_scores_sink_new(s->builder, &sink);
  if (rc == 0) rc = analysis_init(&s->base, "scores", &scores_ops, sink, sampling);
  if (rc < 0) {
    if (!s->base.ops) ms_sink_destroy(sink);
    s->base.ops = &scores_ops;
    ms_analysis_free(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

int analysis_scores_create(const analysis_option *options, int count, ms_analysis **out) {
  ms_scores_config config;
  ms_scores_config_default(&config);
  ms_analysis_sampling sampling = {0, 0};
  int top = 20, rc = 0;
  char text[128];
  for (int i = 0; rc == 0 && i < count; i++) {
    const analysis_option *o = &options[i];
    uint64_t n = 0;
    int number = o->value && ms_parse_number_text(analysis_option_text(o, text, sizeof text),
                                                  MS_NUMBER_COUNT, &n) == 0;
    if ((rc = sampling_option("scores", o, &sampling)) != 0) {
      rc = rc < 0 ? rc : 0;
    } else if (analysis_option_is(o, "word")) {
      if (!number || n > 4096) rc = analysis_option_error("scores", o, "bytes, a power of two");
      config.word = (uint32_t)n;
    } else if (analysis_option_is(o, "lookback")) {
      if (!number || n > MS_SCORES_MAX_LOOKBACK)
        rc = analysis_option_error("scores", o, "accesses");
      config.lookback = (int)n;
    } else if (analysis_option_is(o, "window-log2")) {
      if (!number || n > 20) rc = analysis_option_error("scores", o, "1..20");
      config.log2_window = (int)n;
    } else if (analysis_option_is(o, "top")) {
      if (!number || n > 1000000) rc = analysis_option_error("scores", o, "a count of sites");
      top = (int)n;
    } else {
      rc = analysis_option_error(
          "scores", o, "is not one of word=B, lookback=N, window-log2=L, top=N, sample=ON/OFF");
    }
  }
  if (rc == 0) rc = ms_scores_config_check(&config);
  return rc < 0 ? rc : ms_scores_analysis_new(&config, top, sampling, out);
}

/* ---- signature ---- */

typedef struct signature_analysis {
  ms_analysis base;
  ms_signature_model *model;
  ms_signature_sampling sampling;
  ms_sink *warm; /* the gaps' sink of interval sampling, or NULL */
  ms_signature *signature;
} signature_analysis;

/* cold sampling: every interval starts cold, as the dissertation's tracer (section 3.3.1) */
static int forget_history(void *context, uint64_t interval) {
  (void)interval;
  ms_signature_model_forget(context);
  return 0;
}

static int signature_finish(ms_analysis *a, const ms_stream_info *info) {
  signature_analysis *s = (signature_analysis *)a;
  uint64_t seen = 0;
  ms_stream_info sampled = *info;
  if (a->sampler) {
    ms_sample_sink_counts(a->sampler, &seen, NULL);
    sampled.flags |= MS_STREAM_SAMPLED;
    sampled.sample_on = s->sampling.on;
    sampled.sample_off = s->sampling.off;
  }
  return ms_signature_model_result(s->model, &sampled, seen, &s->signature);
}

static const void *signature_result(const ms_analysis *a) {
  return ((const signature_analysis *)a)->signature;
}

static int signature_write(const ms_analysis *a, const ms_stream_info *info, FILE *out,
                           ms_report_format format) {
  (void)info;
  const ms_signature *signature = ((const signature_analysis *)a)->signature;
  if (format == MS_REPORT_TEXT) return ms_signature_write_text(out, signature);
  if (format == MS_REPORT_JSON) return ms_signature_write_json(out, signature);
  return unsupported(a, format);
}

static void signature_destroy(ms_analysis *a) {
  signature_analysis *s = (signature_analysis *)a;
  ms_sink_destroy(s->warm);
  ms_signature_free(s->signature);
  ms_signature_model_free(s->model);
  free(s);
}

static const analysis_ops signature_ops = {signature_finish, signature_result, signature_write,
                                           signature_destroy};

int ms_signature_analysis_new(const ms_signature_config *config,
                              const ms_signature_sampling *sampling, ms_analysis **out) {
  *out = NULL;
  signature_analysis *s = calloc(1, sizeof *s);
  if (!s) return out_of_memory();
  if (sampling) s->sampling = *sampling;
  ms_sink *sink = NULL;
  int rc = ms_signature_model_new(config, &s->model);
  if (rc == 0) rc = ms_signature_sink_new(s->model, &sink);
  if (rc == 0)
    rc = analysis_init(&s->base, "signature", &signature_ops, sink, (ms_analysis_sampling){0, 0});
  else
    ms_sink_destroy(sink);
  s->base.ops = &signature_ops;
  const ms_signature_sampling *o = &s->sampling;
  if (rc == 0 && o->off > 0) {
    rc = ms_sample_sink_new(sink, o->on, o->off, o->cold ? forget_history : NULL, s->model,
                            &s->base.sampler);
    if (rc == 0) s->base.first = s->base.sampler;
    /* Without cold starts the trees follow the skipped accesses too (section 3.3.1: only
     * the temporal history may start cold; see ms_signature_model_track). */
    if (rc == 0 && !o->cold) {
      rc = ms_signature_gap_sink_new(s->model, o->off, o->warmup, &s->warm);
      if (rc == 0) rc = ms_sample_sink_set_warmup(s->base.sampler, s->warm, o->off);
    }
    if (rc == 0 && o->cold && o->warmup) {
      rc = ms_signature_warm_sink_new(s->model, &s->warm);
      if (rc == 0) rc = ms_sample_sink_set_warmup(s->base.sampler, s->warm, o->warmup);
    }
  }
  if (rc < 0) {
    ms_analysis_free(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

int analysis_signature_create(const analysis_option *options, int count, ms_analysis **out) {
  ms_signature_config config;
  ms_signature_config_default(&config);
  ms_analysis_sampling sampling = {0, 0};
  char text[128];
  int rc = 0;
  for (int i = 0; rc == 0 && i < count; i++) {
    const analysis_option *o = &options[i];
    uint64_t n = 0;
    int number = o->value && ms_parse_number_text(analysis_option_text(o, text, sizeof text),
                                                  MS_NUMBER_COUNT, &n) == 0;
    if ((rc = sampling_option("signature", o, &sampling)) != 0) {
      rc = rc < 0 ? rc : 0;
    } else if (analysis_option_is(o, "width")) {
      if (!number || n > UINT32_MAX) rc = analysis_option_error("signature", o, "bytes");
      config.width = (uint32_t)n;
    } else if (analysis_option_is(o, "word")) {
      if (!number || n > UINT32_MAX) rc = analysis_option_error("signature", o, "bytes");
      config.word = (uint32_t)n;
    } else if (analysis_option_is(o, "per-site") && !o->value) {
      config.per_site = 1;
    } else if (analysis_option_is(o, "site-cap")) {
      if (!number) rc = analysis_option_error("signature", o, "a count of sites");
      config.site_cap = n;
    } else {
      rc = analysis_option_error(
          "signature", o, "is not one of width=W, word=B, per-site, site-cap=N, sample=ON/OFF");
    }
  }
  if (rc == 0 && config.word >= config.width)
    rc = ms_error_set(MS_ERR_ARG, "signature: word %u must be smaller than width %u", config.word,
                      config.width);
  ms_signature_sampling s = {sampling.on, sampling.off, 0, 0};
  return rc < 0 ? rc : ms_signature_analysis_new(&config, &s, out);
}

/* ---- profile ---- */

typedef struct profile_analysis {
  ms_analysis base;
  ms_psnap_profile profile;
} profile_analysis;

static int profile_finish(ms_analysis *a, const ms_stream_info *info) {
  (void)info;
  return ms_psnap_builder_take(a->inner, &((profile_analysis *)a)->profile);
}

static const void *profile_result(const ms_analysis *a) {
  return &((const profile_analysis *)a)->profile;
}

static int profile_write(const ms_analysis *a, const ms_stream_info *info, FILE *out,
                         ms_report_format format) {
  (void)info;
  if (format == MS_REPORT_TEXT)
    return ms_psnap_profile_write(&((const profile_analysis *)a)->profile, out);
  return unsupported(a, format);
}

static void profile_destroy(ms_analysis *a) {
  ms_psnap_profile_free(&((profile_analysis *)a)->profile);
  free(a);
}

static const analysis_ops profile_ops = {profile_finish, profile_result, profile_write,
                                         profile_destroy};

int ms_profile_analysis_new(const ms_psnap_options *options, ms_analysis **out) {
  *out = NULL;
  profile_analysis *p = calloc(1, sizeof *p);
  if (!p) return out_of_memory();
  ms_sink *sink = NULL;
  int rc = ms_psnap_builder_new(options, &sink);
  if (rc == 0)
    rc = analysis_init(&p->base, "profile", &profile_ops, sink, (ms_analysis_sampling){0, 0});
  if (rc < 0) {
    p->base.ops = &profile_ops;
    ms_analysis_free(&p->base);
    return rc;
  }
  *out = &p->base;
  return 0;
}

int analysis_profile_create(const analysis_option *options, int count, ms_analysis **out) {
  ms_psnap_options settings;
  ms_psnap_options_default(&settings);
  int fidelity = 1, rc = 0;
  char text[32];
  for (int i = 0; rc == 0 && i < count; i++) {
    const analysis_option *o = &options[i];
    if (analysis_option_is(o, "lossless") && !o->value) {
      settings.lossless = 1;
    } else if (analysis_option_is(o, "fidelity") && o->value) {
      analysis_option_text(o, text, sizeof text);
      fidelity = !strcmp(text, "low")      ? 0
                 : !strcmp(text, "normal") ? 1
                 : !strcmp(text, "high")   ? 2
                                           : -1;
      if (fidelity < 0) rc = analysis_option_error("profile", o, "low, normal or high");
    } else {
      rc = analysis_option_error("profile", o, "is not one of fidelity=F, lossless");
    }
  }
  if (rc < 0) return rc;
  ms_psnap_options_preset(&settings, fidelity);
  return ms_profile_analysis_new(&settings, out);
}

/* The frame every analysis shares (memsnap/analysis.h): a sink whose batches go to the
 * analysis's own chain of sinks (an optional interval-sampling wrapper, then its builder),
 * and the hooks that compute, hand out and write the result. */
#ifndef MEMSNAP_ANALYSIS_INTERNAL_H
#define MEMSNAP_ANALYSIS_INTERNAL_H

#include "memsnap/analysis.h"

typedef struct analysis_ops {
  /* After the stream's end has reached the chain: compute the result. */
  int (*finish)(ms_analysis *analysis, const ms_stream_info *info);
  const void *(*result)(const ms_analysis *analysis);
  int (*write)(const ms_analysis *analysis, const ms_stream_info *info, FILE *out,
               ms_report_format format);
  void (*destroy)(ms_analysis *analysis); /* the analysis's own parts; not the frame */
} analysis_ops;

struct ms_analysis {
  ms_sink sink; /* what ms_analysis_sink hands out */
  const analysis_ops *ops;
  const char *name;
  ms_sink *first;   /* where batches go: sampler, or the builder's sink */
  ms_sink *inner;   /* the builder's sink (owned) */
  ms_sink *sampler; /* interval sampling in front of inner, or NULL (owned) */
  int finished;
};

/* Sets up the frame around `inner` (taken over, also on failure), with interval sampling
 * when sampling.on > 0. */
int analysis_init(ms_analysis *analysis, const char *name, const analysis_ops *ops, ms_sink *inner,
                  ms_analysis_sampling sampling);

/* Option texts: "key=value" words after the name. */
typedef struct analysis_option {
  const char *key;
  size_t key_length;
  const char *value; /* NULL for a bare key ("lossless") */
  size_t value_length;
} analysis_option;
/* The value as a NUL-terminated string in buf (cut to size). */
const char *analysis_option_text(const analysis_option *option, char *buf, size_t size);
int analysis_option_is(const analysis_option *option, const char *key);
/* MS_ERR_ARG "ANALYSIS: bad KEY 'VALUE' (why)". */
int analysis_option_error(const char *name, const analysis_option *option, const char *why);

/* The analyses by name (analyses.c): each parses its options and creates itself. */
int analysis_sim_create(const analysis_option *options, int count, ms_analysis **out);
int analysis_annotate_create(const analysis_option *options, int count, ms_analysis **out);
int analysis_surface_create(const analysis_option *options, int count, ms_analysis **out);
int analysis_scores_create(const analysis_option *options, int count, ms_analysis **out);
int analysis_signature_create(const analysis_option *options, int count, ms_analysis **out);
int analysis_profile_create(const analysis_option *options, int count, ms_analysis **out);

#endif

/* Analyses: each of memsnap's analyses of a stream behind one interface.
 *
 * An analysis is a sink (feed it a stream with ms_pipeline_run, alone or beside others in
 * the same pass) that, once the stream has ended, holds a result: the result itself
 * (ms_analysis_result, typed per analysis, below) and its report, written as text or JSON
 * the way the memsnap command of the same name writes it. Analyses are created by name
 * with an option text, as `memsnap record --analysis` and programs linking the library do,
 * or by the typed constructors below, as the commands do.
 *
 *   name        result (ms_analysis_result)   options (key=value, separated by blanks)
 *   sim         const ms_hierarchy_set *      hierarchy=H (repeatable; a catalog name, or
 *                                             size/line/ways[,...]), top=N (sites listed)
 *   annotate    const ms_annotation *         hierarchy=H (one), level=N (1 first; the
 *                                             misses that order the rows, default the
 *                                             last), functions=N lines=N (rows listed)
 *   surface     const ms_surface *            widths=W depths=D (LO:HI or A,B,C),
 *                                             shards=RATE, sample=ON/OFF
 *   scores      const ms_scores *             word=B lookback=N window-log2=L top=N
 *                                             sample=ON/OFF
 *   signature   const ms_signature *          width=W word=B per-site site-cap=N
 *                                             sample=ON/OFF
 *   profile     const ms_psnap_profile *      fidelity=low|normal|high lossless
 *
 * Counts take the suffixes of memsnap/number.h (4k, 1Mi).
 *
 * Every report starts by saying what was observed (ms_observed): the program and its
 * arguments, the input read, the exit status or the signal that killed the program, and
 * whether the stream is complete.
 */
#ifndef MEMSNAP_ANALYSIS_H
#define MEMSNAP_ANALYSIS_H

#include "memsnap/api.h"
#include <stdint.h>
#include <stdio.h>

#include "memsnap/annotate.h"
#include "memsnap/cache.h"
#include "memsnap/psnap.h"
#include "memsnap/scores.h"
#include "memsnap/signature.h"
#include "memsnap/stream.h"
#include "memsnap/surface.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- what a stream was observed from ---- */

typedef struct ms_observed {
  char *program;   /* the program and its arguments, NULL if unknown */
  char *input;     /* the input read (memsnap/input.h's name), NULL for a live program */
  int exit_status; /* -1 unknown */
  int signal;      /* the signal that killed the program, 0 if none */
  int truncated;   /* 1 a prefix of the run, 0 complete, -1 not known (a .sig) */
} ms_observed;

/* What `info` says of the stream read from `input` (NULL: a live program). */
MS_API int ms_observed_take(ms_observed *observed, const ms_stream_info *info, const char *input);
MS_API void ms_observed_free(ms_observed *observed);
/* "observed: PROGRAM ARGS (from FILE): exit status N | killed by SIGNAME (signal N);
 * complete | truncated: ... | whether it is complete is not known\n" */
MS_API void ms_observed_write_text(FILE *out, const ms_observed *observed);
/* The JSON object `object_text` (NULL: an empty one) with the fields "program", "input"
 * (files only), "exit_status", "signal" and "truncated" first, pretty-printed, and a
 * newline. MS_ERR_ARG if object_text is not a JSON object. */
MS_API int ms_observed_write_json(FILE *out, const ms_observed *observed, const char *object_text);

/* ---- analyses ---- */

typedef enum ms_report_format {
  MS_REPORT_TEXT = 0,
  MS_REPORT_JSON,
  MS_REPORT_CSV, /* surface only: one row per point, no observed line (data for programs) */
} ms_report_format;

typedef struct ms_analysis ms_analysis;

/* The analysis named by the first word of `spec`, with the options that follow ("sim
 * hierarchy=nehalem top=5"). MS_ERR_ARG naming the unknown name or option. */
MS_API int ms_analysis_new(const char *spec, ms_analysis **out);
MS_API void ms_analysis_free(ms_analysis *analysis);
MS_API const char *ms_analysis_name(const ms_analysis *analysis);
/* The sink to feed (owned by the analysis). */
MS_API ms_sink *ms_analysis_sink(ms_analysis *analysis);
/* The result once the stream has ended (its type per analysis above), NULL before. */
MS_API const void *ms_analysis_result(const ms_analysis *analysis);
/* The result alone, as the command of the same name writes it. `info` is the stream's
 * (its site table names the sites); MS_ERR_UNSUPPORTED for a format the analysis lacks. */
MS_API int ms_analysis_write(const ms_analysis *analysis, const ms_stream_info *info, FILE *out,
                             ms_report_format format);
/* The report: what was observed, then the result (JSON: one object with both; CSV: the
 * result alone). `input` is the file read, NULL for a live program. */
MS_API int ms_analysis_report(const ms_analysis *analysis, const ms_stream_info *info,
                              const char *input, FILE *out, ms_report_format format);

/* The analyses that ms_analysis_new knows, in order. */
typedef struct ms_analysis_entry {
  const char *name;
  const char *summary; /* one line */
  const char *options; /* "key=value ..." with their meaning, one line */
} ms_analysis_entry;
MS_API int ms_analysis_catalog_count(void);
MS_API const ms_analysis_entry *ms_analysis_catalog_get(int index); /* NULL if out of range */

/* ---- typed constructors ---- */

/* Interval sampling before an analysis (memsnap/sample.h): keep `on` accesses, drop `off`;
 * on = 0: every access. */
typedef struct ms_analysis_sampling {
  uint64_t on, off;
} ms_analysis_sampling;

/* The hierarchies configs[0..count), simulated together; the report lists the `top` sites
 * with most misses per level. */
MS_API int ms_sim_analysis_new(const ms_hierarchy_config *configs, int count, int top,
                               ms_analysis **out);
/* Misses per function and source line (memsnap/annotate.h); config->source_dirs must
 * outlive the analysis. */
MS_API int ms_annotate_analysis_new(const ms_annotate_config *config, ms_analysis **out);
MS_API int ms_surface_analysis_new(const ms_surface_config *config, ms_analysis_sampling sampling,
                                   ms_analysis **out);
/* The report lists the `top` sites (all if negative). */
MS_API int ms_scores_analysis_new(const ms_scores_config *config, int top,
                                  ms_analysis_sampling sampling, ms_analysis **out);

/* The signature's interval sampling as the dissertation's tracer does it (section 3.3.1):
 * cold starts every interval cold; otherwise the skipped accesses keep the line trees
 * current and the last `warmup` of each gap warm the model. */
typedef struct ms_signature_sampling {
  uint64_t on, off;
  int cold;
  uint64_t warmup;
} ms_signature_sampling;
MS_API int ms_signature_analysis_new(const ms_signature_config *config,
                                     const ms_signature_sampling *sampling, ms_analysis **out);
/* The profile's report is the .psnap text (ms_psnap_profile_write). */
MS_API int ms_profile_analysis_new(const ms_psnap_options *options, ms_analysis **out);

#ifdef __cplusplus
}
#endif

#endif

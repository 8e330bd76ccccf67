/* Memory signatures (dissertation chameleon-weinberg-dissertation-2008.txt, sections 2.2.3,
 * 3.2, 4.3 and Appendix A): the reuse-distance CDF of a stream at the maximal line width
 * (512 bytes by default) for LRU depths 2^0..2^16, and the spatial locality values
 * alpha(2^n, 2^(n+1)) for every halving of that width down to the word size (4 bytes by
 * default), each broken down by reuse-distance bin with its yes/no counts.
 *
 * Definitions (the contract; docs/formats.md gives the text format):
 * - A reference is one access to one line of the maximal width: an access spanning two
 *   lines is two references, as `memsnap sim` counts it. Within its line a reference
 *   stands for the word holding its first byte.
 * - The stack position R of a reference is 1 + the number of distinct lines referenced
 *   since the previous reference to its line (infinite for the first). HitRate(2^k) is the
 *   fraction of references with R <= 2^k: the hit rate of a fully-associative LRU cache
 *   of 2^k lines of the maximal width.
 * - Reuse bin k (0..16) holds references with R == 1 (k == 0) or 2^(k-1) < R <= 2^k;
 *   bin 16 also holds R > 2^16 (but not first references, which count nowhere).
 * - Every line keeps a binary tree of halves: the root is the line, the leaves its words.
 *   A reference walks from the root to its word's leaf; at every node visited before, it
 *   counts a trial for that node's level (and the reference's reuse bin), and a yes if it
 *   goes down the same half as on the previous visit to that node. Level n holds
 *   alpha(2^n, 2^(n+1)): nodes of 2^(n+1) bytes choosing halves of 2^n bytes.
 *
 * The model keeps state for every line seen (a hash map line -> last time and tree bits)
 * and reuse distances in a Fenwick tree over times; see lib/locality/signature_model.c.
 */
#ifndef MEMSNAP_SIGNATURE_H
#define MEMSNAP_SIGNATURE_H

#include <stdint.h>
#include <stdio.h>

#include "memsnap/api.h"
#include "memsnap/stream.h"
#include "memsnap/surface.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_SIGNATURE_DEPTHS 17            /* depths and reuse bins 2^0..2^16 */
#define MS_SIGNATURE_MAX_LEVELS 12        /* alpha levels: width / word <= 2^12 */
#define MS_SIGNATURE_ALL (UINT32_MAX - 1) /* bin of the whole program (MS_SITE_NONE: no site) */

typedef struct ms_signature_config {
  uint32_t width;    /* maximal line width in bytes: a power of two (default 512) */
  uint32_t word;     /* word size in bytes: a power of two < width (default 4) */
  int per_site;      /* also bin the results per site (section 3.3.2) */
  uint64_t site_cap; /* per-site: accesses of a site sent to the model at most (0: no cap) */
  double widths;     /* reuse CDFs of the narrower widths too (ms_signature.widths): 0 no,
                        1 exact, in (0, 1) SHARDS sampling of lines at that rate */
} ms_signature_config;

/* One signature: the whole program, or the results binned for one site. Counts are
 * doubles because a whole-program signature derived from capped per-site bins weights
 * them (exact integers otherwise, up to 2^53). */
typedef struct ms_signature_bin {
  uint32_t site;     /* site id, or MS_SIGNATURE_ALL */
  uint64_t pc;       /* the site's instruction address (0 for the whole program) */
  char *location;    /* "function (file:line)" or NULL */
  double executions; /* accesses of the site in the stream (whole program: accesses seen) */
  double modeled;    /* accesses of the site sent to the model */
  double references; /* references counted (denominator of the hit rates) */
  double hits[MS_SIGNATURE_DEPTHS]; /* references with R <= 2^k */
  double yes[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  double trials[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
} ms_signature_bin;

typedef struct ms_signature {
  char *program;                  /* observed program, or NULL */
  uint64_t accesses_seen;         /* accesses in the stream */
  uint64_t accesses_modeled;      /* accesses sent to the model (after sampling) */
  uint64_t sample_on, sample_off; /* interval sampling, 0/0 if none */
  uint32_t width, word;
  int levels; /* log2(width / word) */
  int per_site;
  uint64_t site_cap;
  int bin_count; /* bins[0] is the whole program; then one per site if per_site */
  ms_signature_bin *bins;
  /* Reuse CDFs of the narrower widths (format 2, section TEMPORAL LOCALITY BY WIDTH), whole
   * program only: level n (0..levels-1) is width word << n, its references and hits
   * counted as `memsnap surface` counts them (one reference per line an access spans, an
   * immediate repeat a hit at every depth), over the modeled accesses. The maximal width
   * is bins[0]'s CDF. widths = 0: absent; 1: exact; in (0, 1): estimated by SHARDS
   * sampling at that rate (counts then scaled, possibly fractional). */
  double widths;
  double width_references[MS_SIGNATURE_MAX_LEVELS];
  double width_hits[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
} ms_signature;

/* The model: feed it accesses, read a signature. */
typedef struct ms_signature_model ms_signature_model;

/* Fills config with the defaults (512, 4, no per-site, no cap). */
MS_API void ms_signature_config_default(ms_signature_config *config);
MS_API int ms_signature_model_new(const ms_signature_config *config, ms_signature_model **out);
MS_API void ms_signature_model_free(ms_signature_model *model);
/* Sends accesses through the model (whatever their number; no per-access call needed);
 * with config.widths, also through the narrower widths' surface builder (they alone: not
 * the warm-up or tracked accesses below). */
MS_API int ms_signature_model_add(ms_signature_model *model, const ms_access *accesses,
                                  size_t count);
/* Forgets every line's history (LRU order and trees), keeping the counts: the start of a
 * sampling interval (section 3.3.1). The narrower widths start cold too (a new builder;
 * if it cannot be allocated, the next ms_signature_model_add or _result fails). */
MS_API void ms_signature_model_forget(ms_signature_model *model);
/* The signature of everything added so far. `info` (may be NULL) gives the program, the
 * sampling and the sites' locations; `accesses_seen` is the stream's total (0: the
 * number added). */
MS_API int ms_signature_model_result(const ms_signature_model *model, const ms_stream_info *info,
                                     uint64_t accesses_seen, ms_signature **out);
/* Updates the model's state (LRU order, trees) with accesses without counting them: the
 * warm-up before a sampling interval. */
MS_API int ms_signature_model_warm(ms_signature_model *model, const ms_access *accesses,
                                   size_t count);
/* Updates only the trees of halves (not the LRU order, nothing counted): the accesses
 * skipped by interval sampling, so that a line's spatial history survives the gaps. */
MS_API int ms_signature_model_track(ms_signature_model *model, const ms_access *accesses,
                                    size_t count);
/* A sink that feeds the model, and one that warms it (the model is not owned). */
MS_API int ms_signature_sink_new(ms_signature_model *model, ms_sink **out);
MS_API int ms_signature_warm_sink_new(ms_signature_model *model, ms_sink **out);

/* A sink for the skipped accesses of interval sampling, `gap` (the OFF count) per period:
 * in each gap the first gap - warm are tracked (ms_signature_model_track), the last `warm`
 * warm the model (ms_signature_model_warm). Set it as the sampling sink's warm-up of `gap`. */
MS_API int ms_signature_gap_sink_new(ms_signature_model *model, uint64_t gap, uint64_t warm,
                                     ms_sink **out);

MS_API void ms_signature_free(ms_signature *signature);

/* HitRate(2^depth_index) of a bin, or -1 if it has no references. */
MS_API double ms_signature_hit_rate(const ms_signature_bin *bin, int depth_index);
/* alpha of `level` (0: the word level) in reuse bin `reuse_bin`, or over all bins when
 * reuse_bin < 0 (the "Avg" value); -1 if there were no trials (NA). */
MS_API double ms_signature_alpha(const ms_signature_bin *bin, int level, int reuse_bin);

/* Text format of docs/formats.md (Appendix A of the dissertation, with the counts), and
 * JSON with the same numbers. */
MS_API int ms_signature_write_text(FILE *out, const ms_signature *signature);
MS_API int ms_signature_write_json(FILE *out, const ms_signature *signature);
/* Writes the text format atomically to `path` ("-": standard output). */
MS_API int ms_signature_save(const ms_signature *signature, const char *path);

/* Parses the text format; errors name `name` and the line. */
MS_API int ms_signature_parse(const char *text, size_t length, const char *name,
                              ms_signature **out);
MS_API int ms_signature_load(const char *path, ms_signature **out);

/* The cache surface derived from one bin of a signature as the dissertation derives it
 * (sections 4.1, 4.3 and 6.1): a synthetic stream of lines is drawn from the reuse CDF
 * (every reference at the stack position the CDF gives it), each reference is given a
 * word by walking its line's tree of halves with the alpha of its level and reuse bin,
 * and the stream is measured on fully-associative LRU caches of every width. Widths run
 * from the word size up to the maximal width (width_count = levels + 1), depths 2^0..2^16.
 * At the maximal width the result equals the signature's CDF; smaller widths carry the
 * approximation error of the model (docs/formats.md gives measured figures).
 * Deterministic: the same signature always gives the same surface. */
typedef struct ms_signature_surface {
  int width_count;
  uint32_t widths[MS_SIGNATURE_MAX_LEVELS + 1]; /* ascending */
  double hit_rate[MS_SIGNATURE_MAX_LEVELS + 1][MS_SIGNATURE_DEPTHS];
} ms_signature_surface;

MS_API int ms_signature_derive_surface(const ms_signature *signature, int bin_index,
                                       ms_signature_surface *out);

/* The whole-program surface of a signature as an ms_surface (what `memsnap surface SIG`
 * reports): the derived hit rates at depths 2^0..2^16, the widest widths kept when the
 * signature has more levels than a surface holds; with the narrower widths' CDFs
 * (signature->widths > 0) their measured reference counts too. */
MS_API int ms_signature_to_surface(const ms_signature *signature, ms_surface *out);

#ifdef __cplusplus
}
#endif

#endif

/* Cache surface builder: per width, reuse distances binned by the depths (reuse_stack.c:
 * time marks with lazy depth boundaries, the dissertation's LRU markers placed in time),
 * fed every line each access spans (memsnap's cache accounting, see surface.h).
 *
 * Cost of the exact surface (bench/run-locality.sh, 8 widths x 17 depths): was 42-116x
 * one simulator pass, now 28-46x (matmul, random_gather, gather), not the 8x aimed at. The
 * simulator's 32 KB cache stays in L1; here each width keeps up to 65536 lines in a hash
 * table of 2 MB (8-byte slots, load <= 0.25 after the last doubling) plus a 2 MB ring of
 * the blocks by time, and a reference that is not a repeat reads one random slot, plus one
 * more when a line is dropped. What took the time down (reuse_stack.c, reuse_stack.h, each
 * with its figures): the slot prefetches, which GCC 12 had deleted (half the time of
 * gather and random_gather), the boundaries' counts updated 4 at a time (matmul -18%),
 * the batch loop with the reference inlined (-6%), the 8-byte slots (random_gather -17%).
 * What bounds it: not only memory. With the deepest depth at 256 (every table in L1),
 * the 8 widths still took 1.41 s on random_gather, 1.15 s on matmul and 0.73 s on gather,
 * against 1.84 / 1.02 / 0.84 s at 65536 (CPU time, the same session): about 20 ns of
 * hashing, probing, mark counting and branches per line reference and width. 8x one
 * simulator pass is one L1-resident set lookup's time per width and access. One structure
 * shared by the widths for the lines' times (2 lookups per access instead of 8, dropped
 * lines left stale) was built and measured: 15% on matmul, where 65% of the time was then
 * the marks and boundaries themselves (docs/locality.md, not kept). The sampled pass's
 * speed-up over the exact pass fell with the faster exact pass, from 21-54x to 14x
 * (matmul), 19x (random_gather), 21x (gather); its AVX-512 version (add_sampled_avx512)
 * brought it back to 20.5x / 28.2x / 29.9x (bench_surface run interleaved with the AVX2
 * pass's 14.5x / 20.0x / 21.6x: sampled 0.0683 -> 0.0483 s, 0.0830 -> 0.0566 s, 0.0377 ->
 * 0.0269 s). Where its 0.048 s on matmul go (perf): 43% the
 * per-access loop (6.9M accesses, 1.2M of them sampling some line), 50% feeding the
 * stacks (sample_pending 32%, reuse_stack's reference 18%: 1.2M near references, 0.6M
 * sampled); the near stack's scan took about 8 ms of it (skipped in a test build: 0.057
 * -> 0.050 s, one version earlier).
 *
 * Sampling (SHARDS, Waldspurger et al. 2015, fixed rate with the -adj correction): a line
 * of a width is observed iff a hash of (line, width) falls below rate * 2^24, so each
 * sampled line is seen at all its references. Among sampled lines, reuse distances shrink
 * by the rate: a reference hits depth D iff its sampled distance is below D * rate (the
 * bucket of floor(D * rate) counted in part, see plan_zones).
 * Hashing each width's lines (rather than one region for all widths) keeps the number of
 * sampled lines large at every width: with 512-byte regions a 2 MB footprint gave 40
 * sampled regions at rate 0.01 and a mean error of 0.08 on matmul.
 *
 * Near sample (shallow depths): a depth D is resolved in units of 1 / rate lines, and at
 * D x rate of a few units the sampled distance of a reference is a count of 2 to 6 lines
 * that the hash puts one or two off. Where the exact surface jumps there, the estimate is
 * smeared over the neighbouring depths. So the depths with D x rate < NEAR_UNITS (8: at
 * rate 0.01, depths up to 512) are estimated from a nested sample at NEAR_FACTOR x rate
 * (2: hash below 2 x rate x 2^24, a superset of the sampled lines), each with its own -adj
 * correction; its LRU stack holds at most 17 lines (move to front). The surface
 * reports the near depths and rate (table header, JSON depth_sample_rates), and where the
 * two estimates meet the hit rates are kept non-decreasing in depth (LRU inclusion).
 * Where the error was, matmul 150 at rate 0.01 (error x 1000 of the exact 8 x 17 surface):
 * widths 4 and 8 at depths 512 and 256 (+209, +218: their hit rate jumps by 0.49 at
 * distances 576-640 and 288-320) and widths 16-256 at depth 256 (-45 to -138: a jump at
 * 170-250), the same within 0.0008 for seeds 1-8, so a bias of the resolution, not noise;
 * the widths of few sampled lines (512: ~10 lines) were not it (0.001 there). Measured on
 * matmul 150 (mean absolute error at depths >= 256, mean of 3 seeds):
 *   fixed rate 0.01: 0.0129; 0.02: 0.0067; 0.04: 0.0022 (CPU time 1.4x, 2.9x)
 *   a per-width minimum of 256 / 512 / 1024 sampled lines: 0.0100 / 0.0088 / 0.0072
 *     (widths 64-512 at rates up to 0.18 / 0.37 / 0.74, and widths 4-8 still 0.025)
 *   near sample at 2x: 0.0068; at 4x: 0.0024
 * The near sample at 4x took 1.7-2.5x the CPU time of the plain sampled pass (its probe
 * picks a line in about a third of the accesses), too much for the 20x target; at 2x,
 * 1.0-1.6x in interleaved best-of-3 runs on the loaded machine (bench/run-locality.sh,
 * docs/locality.md). Other kernels at rate 0.01, mean of seeds 1-3, depths >= 256 (all
 * depths), before -> with the near sample: gather 0.0020 (0.0364) -> 0.0018 (0.0369),
 * random_gather 0.0019 (0.0022) -> 0.0017 (0.0018), stream_add 0.0008 (0.0632) -> 0.0007
 * (0.0613), stencil2d 0.0005 (0.0869) -> 0.0003 (0.0842), linked_list 0.0022 (0.0262) ->
 * 0.0019 (0.0228). The bound is not universal: on the synthetic ijk matmul of
 * test_surface.c, n = 72 / 96 / 128 give 0.013 / 0.014 / 0.018 (0.016 / 0.016 / 0.023
 * before), their jumps lying close to a grid depth.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/cpu.h"
#include "../core/jobs.h"
#include "memsnap/error.h"
#include "memsnap/number.h"
#include "memsnap/surface.h"
#include "reuse_stack.h"
#include "surface_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SURFACE_AVX2 1 /* the sampled pass has an AVX2 version, chosen at run time */
#endif

/* How the depths map to the zones of a stack. Hits at depth k: the references of zones <=
 * low_zone[k] (none if -1), plus `fraction` of those of the zones (low_zone[k],
 * high_zone[k]]; exact: low = high, fraction 0. */
typedef struct zone_plan {
  int low_zone[MS_SURFACE_MAX_DEPTHS], high_zone[MS_SURFACE_MAX_DEPTHS];
  double fraction[MS_SURFACE_MAX_DEPTHS];
  int zone_count; /* thresholds of the stacks + 1 */
} zone_plan;

/* The near sample's LRU stack: at most NEAR_CAPACITY lines, most recent first, so a
 * line's index is its reuse distance (move to front). Its thresholds are below
 * NEAR_UNITS x NEAR_FACTOR + 2, and a scan of that many words in L1 measured cheaper than
 * reuse_stack's hash table and time marks: with a near sample at 4x the rate (thresholds up
 * to 40), matmul 150 at rate 0.01 took 0.19 s with reuse_stack and 0.12 s with this (CPU
 * time, best of 3). */
#define NEAR_CAPACITY 24

typedef struct near_stack {
  uint64_t lines[NEAR_CAPACITY];
  int count;
} near_stack;

/* Threads for the exact surface: the widths are independent streams, so each batch's
 * widths are shared out among the builder's thread and the pool's workers (lib/core/jobs.h;
 * widths 4 and 8 cost about twice the others, and each thread takes the next width not yet
 * taken); the batch is done when all are. Per batch, not per access: a batch of 4096
 * accesses is 0.4-1 ms of work for 8 widths, against microseconds of wake-up. */
struct ms_surface_builder {
  ms_surface_config config;
  int width_shift[MS_SURFACE_MAX_WIDTHS];
  reuse_stack stacks[MS_SURFACE_MAX_WIDTHS];
  zone_plan plan; /* of the depths from base_first on */
  int base_first;
  uint64_t zone_refs[MS_SURFACE_MAX_WIDTHS][2 * MS_SURFACE_MAX_DEPTHS + 1];
  /* The near sample (sampling only, see the opening comment): the lines whose hash is below
   * near_limit, a superset of the sampled lines, for the first near_count depths; near_count
   * 0: none. */
  int near_count;
  double near_rate;
  uint64_t near_limit;
  near_stack near_stacks[MS_SURFACE_MAX_WIDTHS];
  int near_capacity;                       /* the deepest threshold: lines kept */
  uint8_t near_zone_of[NEAR_CAPACITY + 1]; /* zone of each distance below near_capacity */
  zone_plan near_plan;
  uint64_t near_refs[MS_SURFACE_MAX_WIDTHS][2 * MS_SURFACE_MAX_DEPTHS + 1];
  uint64_t lines[MS_SURFACE_MAX_WIDTHS]; /* line references, sampled or not */
  /* Immediate re-references (the line of the previous reference of the width), counted
   * exactly even when sampling: they hit every depth and change no LRU state. */
  uint64_t repeats[MS_SURFACE_MAX_WIDTHS];
  uint64_t last_line[MS_SURFACE_MAX_WIDTHS];
  int has_last_line[MS_SURFACE_MAX_WIDTHS];
  jobs *pool;                 /* exact surfaces on more than one thread */
  const ms_batch *pool_batch; /* the batch the pool's jobs take */
  uint64_t accesses;
  uint64_t sample_limit; /* observe a line iff its 24-bit hash < sample_limit (2^24: all) */
  uint64_t probe_limit;  /* the larger of sample_limit and near_limit: the passes' test */
  /* the sampled pass: the last byte of the previous access (repeats at every width) */
  uint64_t previous_last;
  int has_previous;
  surface_pass pass;
  uint64_t salt[MS_SURFACE_MAX_WIDTHS];
  int64_t lane_shift[8], lane_salt[8]; /* widths as vector lanes (vector passes, <= 8 widths) */
};

void ms_surface_config_default(ms_surface_config *config) {
  memset(config, 0, sizeof *config);
  config->width_count = 8;
  for (int i = 0; i < 8; i++)
    config->widths[i] = 4u << i;
  config->depth_count = 17;
  for (int i = 0; i < 17; i++)
    config->depths[i] = 1ull << i;
  config->sample_rate = 1.0;
  config->seed = 1;
}

int ms_surface_config_check(const ms_surface_config *config) {
  if (config->width_count < 1 || config->width_count > MS_SURFACE_MAX_WIDTHS)
    return ms_error_set(MS_ERR_ARG, "surface: 1 to %d widths, not %d", MS_SURFACE_MAX_WIDTHS,
                        config->width_count);
  if (config->depth_count < 1 || config->depth_count > MS_SURFACE_MAX_DEPTHS)
    return ms_error_set(MS_ERR_ARG, "surface: 1 to %d depths, not %d", MS_SURFACE_MAX_DEPTHS,
                        config->depth_count);
  for (int i = 0; i < config->width_count; i++) {
    uint32_t w = config->widths[i];
    if (w == 0 || (w & (w - 1)) || w > (1u << 20))
      return ms_error_set(MS_ERR_ARG, "surface: width %u is not a power of two in 1..2^20", w);
    if (i > 0 && w <= config->widths[i - 1])
      return ms_error_set(MS_ERR_ARG, "surface: widths must ascend (%u after %u)", w,
                          config->widths[i - 1]);
  }
  for (int i = 0; i < config->depth_count; i++) {
    uint64_t d = config->depths[i];
    if (d == 0 || d > MS_SURFACE_MAX_DEPTH)
      return ms_error_set(MS_ERR_ARG, "surface: depth %" PRIu64 " is not in 1..%u", d,
                          MS_SURFACE_MAX_DEPTH);
    if (i > 0 && d <= config->depths[i - 1])
      return ms_error_set(MS_ERR_ARG, "surface: depths must ascend (%" PRIu64 " after %" PRIu64 ")",
                          d, config->depths[i - 1]);
  }
  if (config->threads < 0) return ms_error_set(MS_ERR_ARG, "surface: %d threads", config->threads);
  if (!(config->sample_rate > 0.0 && config->sample_rate <= 1.0))
    return ms_error_set(MS_ERR_ARG, "surface: sampling rate %g is not in (0, 1]",
                        config->sample_rate);
  return MS_OK;
}

static int parse_number(const char *text, const char *end, uint64_t *value) {
  return ms_parse_number(text, (size_t)(end - text), MS_NUMBER_PLAIN, value);
}

int ms_surface_parse_grid(const char *text, const char *what, uint64_t *values, int max,
                          int *count) {
  const char *colon = strchr(text, ':');
  *count = 0;
  if (colon) {
    uint64_t lo, hi;
    if (parse_number(text, colon, &lo) < 0 ||
        parse_number(colon + 1, colon + strlen(colon), &hi) < 0 || lo == 0 || hi < lo ||
        (lo & (lo - 1)) || (hi & (hi - 1)))
      return ms_error_set(MS_ERR_ARG, "bad %s '%s' (LO:HI with powers of two, LO <= HI)", what,
                          text);
    for (uint64_t v = lo; v <= hi; v *= 2) {
      if (*count == max)
        return ms_error_set(MS_ERR_ARG, "bad %s '%s': more than %d values", what, text, max);
      values[(*count)++] = v;
    }
    return MS_OK;
  }
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    uint64_t v;
    if (parse_number(p, end, &v) < 0 || v == 0 || (*count && v <= values[*count - 1]))
      return ms_error_set(MS_ERR_ARG, "bad %s '%s' (ascending numbers A,B,C or LO:HI)", what, text);
    if (*count == max)
      return ms_error_set(MS_ERR_ARG, "bad %s '%s': more than %d values", what, text, max);
    values[(*count)++] = v;
    if (!comma) return MS_OK;
    p = comma + 1;
  }
}

/* The thresholds of a stack for the first `count` depths at `rate` (1: exact) and how the
 * depths map to its zones. Returns the number of thresholds.
 * Sampled: a sampled distance s stands for s / rate, so depth D counts the references
 * with s < floor(D * rate) and, for the fraction D * rate - floor(D * rate), those with
 * s == floor(D * rate) (uniform within the bucket: rounding D * rate up instead biased
 * depth 256 at rate 0.01 toward depth 300; matmul at rate 0.01: mean error 0.013
 * instead of 0.025 at depths >= 256). */
static int plan_zones(const uint64_t *depths, int count, double rate, zone_plan *plan,
                      uint64_t *thresholds) {
  uint64_t low[MS_SURFACE_MAX_DEPTHS];
  int m = 0;
  for (int k = 0; k < count; k++) {
    double scaled = (double)depths[k] * rate;
    low[k] = rate < 1.0 ? (uint64_t)floor(scaled) : depths[k];
    plan->fraction[k] = rate < 1.0 ? scaled - (double)low[k] : 0.0;
    /* Below one sampled distance unit (D < 1 / rate) the bucket s == 0 also holds the
     * immediate reuses of a line among few others: counting all of it measured closer
     * (gather: mean error 0.03 against 0.15 over all depths). */
    if (rate < 1.0 && low[k] == 0) plan->fraction[k] = 1.0;
    uint64_t candidates[2] = {low[k], low[k] + 1};
    for (int c = 0; c < (rate < 1.0 ? 2 : 1); c++) {
      uint64_t t = candidates[c];
      if (t == 0 || (m > 0 && t <= thresholds[m - 1])) continue; /* ascending already */
      thresholds[m++] = t;
    }
  }
  for (int k = 0; k < count; k++) {
    plan->low_zone[k] = plan->high_zone[k] = -1;
    for (int j = 0; j < m; j++) {
      if (thresholds[j] == low[k]) plan->low_zone[k] = j;
      if (thresholds[j] == (rate < 1.0 ? low[k] + 1 : low[k])) plan->high_zone[k] = j;
    }
  }
  plan->zone_count = m + 1;
  return m;
}

/* The near sample: depths whose scaled depth D x rate is below NEAR_UNITS sampled lines
 * are estimated from the lines sampled at NEAR_FACTOR x rate (see the opening comment). */
#define NEAR_FACTOR 2
#define NEAR_UNITS 8
_Static_assert(NEAR_UNITS *NEAR_FACTOR + 2 <= NEAR_CAPACITY, "the near stack's thresholds fit");

/* References `line` in the near stack: its zone (near_plan.zone_count - 1 if deeper than
 * every threshold or new). One pass finds the line and moves the lines before it down. */
static inline int near_reference(ms_surface_builder *b, near_stack *stack, uint64_t line) {
  uint64_t carry = line;
  for (int d = 0; d < stack->count; d++) {
    uint64_t here = stack->lines[d];
    stack->lines[d] = carry;
    if (here == line) return b->near_zone_of[d];
    carry = here;
  }
  if (stack->count < b->near_capacity) stack->lines[stack->count++] = carry;
  return b->near_plan.zone_count - 1;
}

/* Whether this CPU and build have `pass` for the builder's grid (vector passes: <= 8 widths). */
static int pass_supported(const ms_surface_builder *b, surface_pass pass) {
  if (pass == SURFACE_PASS_SCALAR) return 1;
  if (b->config.width_count > 8) return 0;
#ifdef SURFACE_AVX2
  if (pass == SURFACE_PASS_AVX2) return (cpu_features() & CPU_AVX2) != 0;
  if (pass == SURFACE_PASS_AVX512) return (cpu_features() & CPU_AVX512) != 0;
#endif
  return 0;
}

int surface_builder_set_pass(ms_surface_builder *builder, surface_pass pass) {
  if (!pass_supported(builder, pass))
    return ms_error_set(MS_ERR_ARG, "surface: sampled pass %d not available here", (int)pass);
  builder->pass = pass;
  return MS_OK;
}

int ms_surface_builder_new(const ms_surface_config *config, ms_surface_builder **out) {
  *out = NULL;
  int rc = ms_surface_config_check(config);
  if (rc < 0) return rc;
  ms_surface_builder *b = calloc(1, sizeof *b);
  if (!b) return ms_error_set(MS_ERR_NOMEM, "out of memory for a surface");
  b->config = *config;
  uint64_t thresholds[2 * MS_SURFACE_MAX_DEPTHS], near_thresholds[2 * MS_SURFACE_MAX_DEPTHS];
  int near_m = 0;
  if (config->sample_rate * NEAR_FACTOR < 1.0) {
    while (b->near_count < config->depth_count &&
           (double)config->depths[b->near_count] * config->sample_rate < NEAR_UNITS)
      b->near_count++;
    b->near_rate = config->sample_rate * NEAR_FACTOR;
    if (b->near_count > 0) {
      near_m =
          plan_zones(config->depths, b->near_count, b->near_rate, &b->near_plan, near_thresholds);
      b->near_capacity = (int)near_thresholds[near_m - 1]; /* < NEAR_UNITS x NEAR_FACTOR + 2 */
      for (int d = 0, zone = 0; d <= b->near_capacity; d++) {
        while (zone < near_m && near_thresholds[zone] <= (uint64_t)d)
          zone++;
        b->near_zone_of[d] = (uint8_t)zone;
      }
    }
  }
  /* the sample's stacks only bound the depths the near sample leaves them (at least the
   * deepest, for the references and histogram): fewer boundaries to move on a hit */
  b->base_first = b->near_count < config->depth_count ? b->near_count : config->depth_count - 1;
  int m = plan_zones(config->depths + b->base_first, config->depth_count - b->base_first,
                     config->sample_rate, &b->plan, thresholds);
  for (int i = 0; i < config->width_count; i++) {
    int shift = 0;
    while ((1u << shift) < config->widths[i])
      shift++;
    b->width_shift[i] = shift;
    uint64_t salt = (config->seed + (uint64_t)i + 1) * 0xBF58476D1CE4E5B9ull;
    b->salt[i] = salt ^ (salt >> 31);
    rc = reuse_stack_init(&b->stacks[i], thresholds, m);
    if (rc < 0) {
      for (int j = 0; j < i; j++)
        reuse_stack_free(&b->stacks[j]);
      free(b);
      return rc;
    }
    /* sampled lines share the top bits of their sample_hash(): not that multiplier */
    if (config->sample_rate < 1.0) b->stacks[i].hash_multiplier = REUSE_HASH_OTHER;
  }
  for (int i = 0; i < 8; i++) {
    b->lane_shift[i] = i < config->width_count ? b->width_shift[i] : 63;
    b->lane_salt[i] = i < config->width_count ? (int64_t)b->salt[i] : 0;
  }
  b->pass = pass_supported(b, SURFACE_PASS_AVX512) ? SURFACE_PASS_AVX512
            : pass_supported(b, SURFACE_PASS_AVX2) ? SURFACE_PASS_AVX2
                                                   : SURFACE_PASS_SCALAR;
  b->sample_limit =
      config->sample_rate < 1.0 ? (uint64_t)(config->sample_rate * (double)(1u << 24)) : (1u << 24);
  b->near_limit = b->near_count > 0 ? (uint64_t)(b->near_rate * (double)(1u << 24)) : 0;
  b->probe_limit = b->near_limit > b->sample_limit ? b->near_limit : b->sample_limit;
  if (config->sample_rate >= 1.0)
    b->pool = jobs_new(jobs_threads(config->threads, config->width_count));
  *out = b;
  return MS_OK;
}

void ms_surface_builder_free(ms_surface_builder *builder) {
  if (!builder) return;
  jobs_free(builder->pool);
  for (int i = 0; i < builder->config.width_count; i++)
    reuse_stack_free(&builder->stacks[i]);
  free(builder);
}

/* One width over a whole batch: the widths are independent streams, so a batch is fed to
 * each in turn, with its state in locals and one width's table hot in cache at a time.
 * Measured against the access-by-access loop over the 8 widths (bench_surface, matmul
 * 150, 6.9M accesses, two interleaved runs on a loaded machine): exact 17.6 s / 7.0 s ->
 * 5.0 s / 5.4 s, SHARDS at 0.01 1.09 s / 0.73 s -> 0.49 s / 0.47 s. The first line of
 * the stream is set apart so that the loop tests no flag (SHARDS on gather, 12M accesses:
 * 1.85 s / 1.38 s -> 1.59 s / 1.11 s, interleaved runs). */
static int add_width(ms_surface_builder *b, int i, const ms_batch *batch) {
  const int shift = b->width_shift[i];
  if (!b->has_last_line[i] && batch->count > 0) {
    /* the first line of the stream: no previous line to repeat */
    b->last_line[i] = ~(batch->accesses[0].address >> shift);
    b->has_last_line[i] = 1;
  }
  reuse_feed feed = {b->last_line[i], b->repeats[i], b->lines[i], b->zone_refs[i]};
  int rc =
      reuse_stack_reference_accesses(&b->stacks[i], batch->accesses, batch->count, shift, &feed);
  if (rc < 0) return rc;
  b->last_line[i] = feed.last_line;
  b->repeats[i] = feed.repeats;
  b->lines[i] = feed.lines;
  return MS_OK;
}

static int width_job(void *context, int i) {
  ms_surface_builder *b = context;
  return add_width(b, i, b->pool_batch);
}

/* SHARDS sampling hash of a line of width i: Fibonacci hashing of the line plus a per-width
 * salt, top 24 bits. Its multiplicative structure spreads runs of consecutive lines evenly
 * (low discrepancy): a 32-bit avalanche hash (lowbias32) instead raised the mean error at
 * depths >= 256 from 0.0129 / 0.0016 / 0.0017 to 0.0226 / 0.0072 / 0.0086 on matmul /
 * gather / random_gather (bench/run-locality.sh traces). */
#define SAMPLE_MULTIPLIER 0x9E3779B97F4A7C15ull

static inline uint64_t sample_hash(uint64_t line, uint64_t salt) {
  return ((line + salt) * SAMPLE_MULTIPLIER) >> 40;
}

/* A line whose hash is below probe_limit: into the near sample (when there is one), and into
 * the sample itself if below sample_limit (the near sample holds every sampled line). */
static inline int sample_line(ms_surface_builder *b, int i, uint64_t line) {
  if (b->near_count > 0) {
    b->near_refs[i][near_reference(b, &b->near_stacks[i], line)]++;
    if (sample_hash(line, b->salt[i]) >= b->sample_limit) return MS_OK;
  }
  int zone = reuse_stack_reference(&b->stacks[i], line);
  if (zone < 0) return zone;
  b->zone_refs[i][zone]++;
  return MS_OK;
}

/* The lines of one access at width i, one by one (accesses that span more than two lines
 * of a width, and the scalar pass). The first line is a repeat iff it is the last line of
 * the previous access; the next ones never are. */
static inline int sample_access_width(ms_surface_builder *b, int i, uint64_t first, uint64_t last,
                                      uint64_t previous) {
  const int shift = b->width_shift[i];
  const uint64_t salt = b->salt[i];
  const uint64_t limit = b->probe_limit;
  uint64_t line = first >> shift, end = last >> shift;
  b->lines[i] += end - line + 1;
  if (line == previous >> shift)
    b->repeats[i]++;
  else if (__builtin_expect(sample_hash(line, salt) < limit, 0) && sample_line(b, i, line) < 0)
    return MS_ERR_NOMEM;
  while (__builtin_expect(line != end, 0)) {
    line++;
    if (__builtin_expect(sample_hash(line, salt) < limit, 0) && sample_line(b, i, line) < 0)
      return MS_ERR_NOMEM;
  }
  return MS_OK;
}

static inline uint64_t access_last(const ms_access *a) {
  uint64_t last = a->address + (a->size ? a->size : 1) - 1;
  return last < a->address ? UINT64_MAX : last; /* an access at the top of the address space */
}

/* The sampled pass, all widths of an access together (the widths share the decoding). */
static int add_sampled_scalar(ms_surface_builder *b, const ms_batch *batch) {
  const int widths = b->config.width_count;
  uint64_t previous = b->previous_last;
  for (size_t n = 0; n < batch->count; n++) {
    uint64_t first = batch->accesses[n].address, last = access_last(&batch->accesses[n]);
    if (!b->has_previous) { /* the first line of the stream repeats nothing */
      previous = ~first;
      b->has_previous = 1;
    }
    for (int i = 0; i < widths; i++)
      if (sample_access_width(b, i, first, last, previous) < 0) return MS_ERR_NOMEM;
    previous = last;
  }
  b->previous_last = previous;
  return MS_OK;
}

#ifdef SURFACE_AVX2

/* The product (line + salt) x SAMPLE_MULTIPLIER of sample_hash() for 4 lines at once, its
 * low 64 bits from three 32 x 32-bit products (AVX2 has no 64-bit multiply). The product of
 * the next line is this one plus the multiplier. */
__attribute__((target("avx2"))) static inline __m256i sample_product_lanes(__m256i line,
                                                                           __m256i salt) {
  const __m256i low = _mm256_set1_epi64x((long long)(SAMPLE_MULTIPLIER & 0xFFFFFFFFu));
  const __m256i high = _mm256_set1_epi64x((long long)(SAMPLE_MULTIPLIER >> 32));
  __m256i x = _mm256_add_epi64(line, salt);
  __m256i cross =
      _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), low), _mm256_mul_epu32(x, high));
  return _mm256_add_epi64(_mm256_mul_epu32(x, low), _mm256_slli_epi64(cross, 32));
}

/* The sampled pass with AVX2, 8 widths in two vectors of 4 lanes (unused lanes have shift
 * 63 and never sample): shifts, repeat tests, line counts and hashes of the first and
 * last line of every width in ~40 vector instructions, then the rare sampled lines one by
 * one. An access spanning more than two lines of some width takes the scalar path. */
__attribute__((target("avx2"))) static int add_sampled_avx2(ms_surface_builder *b,
                                                            const ms_batch *batch) {
  const int widths = b->config.width_count;
  const __m256i shift0 = _mm256_loadu_si256((const __m256i *)&b->lane_shift[0]);
  const __m256i shift1 = _mm256_loadu_si256((const __m256i *)&b->lane_shift[4]);
  const __m256i salt0 = _mm256_loadu_si256((const __m256i *)&b->lane_salt[0]);
  const __m256i salt1 = _mm256_loadu_si256((const __m256i *)&b->lane_salt[4]);
  const __m256i limit = _mm256_set1_epi64x((long long)b->probe_limit);
  const __m256i one = _mm256_set1_epi64x(1), zero = _mm256_setzero_si256();
  const __m256i multiplier = _mm256_set1_epi64x((long long)SAMPLE_MULTIPLIER);
  __m256i span0 = _mm256_setzero_si256(), span1 = span0, repeat0 = span0, repeat1 = span0;
  uint64_t previous = b->previous_last, vector_accesses = 0;
  size_t n = 0;
  if (!b->has_previous && batch->count > 0) {
    previous = ~batch->accesses[0].address;
    b->has_previous = 1;
  }
  /* the last lines of the previous access, per width */
  __m256i previous0 = _mm256_srlv_epi64(_mm256_set1_epi64x((long long)previous), shift0);
  __m256i previous1 = _mm256_srlv_epi64(_mm256_set1_epi64x((long long)previous), shift1);
  for (; n < batch->count; n++) {
    const uint64_t first = batch->accesses[n].address, last = access_last(&batch->accesses[n]);
    const __m256i f = _mm256_set1_epi64x((long long)first), l = _mm256_set1_epi64x((long long)last);
    __m256i line0 = _mm256_srlv_epi64(f, shift0), line1 = _mm256_srlv_epi64(f, shift1);
    __m256i end0 = _mm256_srlv_epi64(l, shift0), end1 = _mm256_srlv_epi64(l, shift1);
    __m256i d0 = _mm256_sub_epi64(end0, line0), d1 = _mm256_sub_epi64(end1, line1);
    if (__builtin_expect(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_or_si256(
                             _mm256_cmpgt_epi64(d0, one), _mm256_cmpgt_epi64(d1, one)))),
                         0)) {
      for (int i = 0; i < widths; i++) /* more than two lines: one by one */
        if (sample_access_width(b, i, first, last, previous) < 0) return MS_ERR_NOMEM;
      previous = last;
      previous0 = end0;
      previous1 = end1;
      continue;
    }
    span0 = _mm256_add_epi64(span0, d0);
    span1 = _mm256_add_epi64(span1, d1);
    __m256i rep0 = _mm256_cmpeq_epi64(line0, previous0);
    __m256i rep1 = _mm256_cmpeq_epi64(line1, previous1);
    repeat0 = _mm256_sub_epi64(repeat0, rep0);
    repeat1 = _mm256_sub_epi64(repeat1, rep1);
    /* first line: sampled and not a repeat; last line: sampled and not the first */
    __m256i product0 = sample_product_lanes(line0, salt0);
    __m256i product1 = sample_product_lanes(line1, salt1);
    __m256i want0 =
        _mm256_andnot_si256(rep0, _mm256_cmpgt_epi64(limit, _mm256_srli_epi64(product0, 40)));
    __m256i want1 =
        _mm256_andnot_si256(rep1, _mm256_cmpgt_epi64(limit, _mm256_srli_epi64(product1, 40)));
    __m256i second0 = _mm256_andnot_si256(
        _mm256_cmpeq_epi64(d0, zero),
        _mm256_cmpgt_epi64(limit, _mm256_srli_epi64(_mm256_add_epi64(product0, multiplier), 40)));
    __m256i second1 = _mm256_andnot_si256(
        _mm256_cmpeq_epi64(d1, zero),
        _mm256_cmpgt_epi64(limit, _mm256_srli_epi64(_mm256_add_epi64(product1, multiplier), 40)));
    const unsigned used = (1u << widths) - 1;
    unsigned firsts = used & ((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(want0)) |
                              (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(want1)) << 4);
    unsigned seconds = used & ((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(second0)) |
                               (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(second1)) << 4);
    for (unsigned any = firsts | seconds; __builtin_expect(any != 0, 0); any &= any - 1) {
      int i = __builtin_ctz(any);
      if ((firsts >> i) & 1 && sample_line(b, i, first >> b->width_shift[i]) < 0)
        return MS_ERR_NOMEM;
      if ((seconds >> i) & 1 && sample_line(b, i, last >> b->width_shift[i]) < 0)
        return MS_ERR_NOMEM;
    }
    previous0 = end0;
    previous1 = end1;
    previous = last;
    vector_accesses++;
  }
  uint64_t span[8], repeat[8];
  _mm256_storeu_si256((__m256i *)&span[0], span0);
  _mm256_storeu_si256((__m256i *)&span[4], span1);
  _mm256_storeu_si256((__m256i *)&repeat[0], repeat0);
  _mm256_storeu_si256((__m256i *)&repeat[4], repeat1);
  for (int i = 0; i < widths; i++) {
    b->lines[i] += span[i] + vector_accesses;
    b->repeats[i] += repeat[i];
  }
  b->previous_last = previous;
  return MS_OK;
}

/* The accesses of an AVX-512 chunk that sample some line, in order, one entry each: access
 * index << 16 | the widths whose last line is sampled << 8 | those whose first line is.
 * Each width's lines reach its stacks in stream order (first line before last). */
static int sample_pending(ms_surface_builder *b, const ms_access *accesses, const uint64_t *pending,
                          size_t count) {
  for (size_t k = 0; k < count; k++) {
    const ms_access *a = &accesses[pending[k] >> 16];
    const unsigned firsts = pending[k] & 0xFF, seconds = (pending[k] >> 8) & 0xFF;
    for (unsigned any = firsts | seconds; any; any &= any - 1) {
      const int i = __builtin_ctz(any);
      if ((firsts >> i) & 1 && sample_line(b, i, a->address >> b->width_shift[i]) < 0)
        return MS_ERR_NOMEM;
      if ((seconds >> i) & 1 && sample_line(b, i, access_last(a) >> b->width_shift[i]) < 0)
        return MS_ERR_NOMEM;
    }
  }
  return MS_OK;
}

/* Accesses per chunk of the AVX-512 pass: its pending entries (at most one per access) take
 * 32 KB of stack. */
#define SAMPLED_CHUNK 4096

/* The sampled pass with AVX-512 (F and DQ), the 8 widths as the 8 lanes of one vector:
 * the AVX2 pass's work with a native 64-bit multiply, unsigned compares of the product
 * against probe_limit << 40 (no shift) and mask registers for the lane tests. The sampled
 * lines are not taken on the spot: every access stores its two lane masks to a list, kept
 * iff not both empty, and the list is fed to the stacks after each chunk of accesses, so
 * the loop has no branch on whether an access sampled something (matmul: one access in
 * six, at random). Sampled pass alone, CPU time, best of 7, interleaved (matmul, gather,
 * random_gather): branch per access 0.0625 / 0.0331 / 0.0738 s; a list of (access, width)
 * entries by compress and store, chunks of 128 accesses 0.0567 / 0.0328 / 0.0715 s; this
 * list, chunks of 256 0.0514 / 0.0300 / 0.0636 s (vpcompressq is slow on this Zen 4), of
 * 1024 0.0489 / 0.0276 / 0.0583 s, of 4096 (a whole batch) 0.0477 / 0.0269 / 0.0571 s. */
__attribute__((target("avx512f,avx512dq"))) static int add_sampled_avx512(ms_surface_builder *b,
                                                                          const ms_batch *batch) {
  const int widths = b->config.width_count;
  const __mmask8 used = (__mmask8)((1u << widths) - 1);
  const __m512i shift = _mm512_loadu_si512(b->lane_shift);
  const __m512i salt = _mm512_loadu_si512(b->lane_salt);
  /* product >> 40 < probe_limit iff product < probe_limit << 40 (probe_limit < 2^24) */
  const __m512i limit = _mm512_set1_epi64((long long)(b->probe_limit << 40));
  const __m512i one = _mm512_set1_epi64(1);
  const __m512i multiplier = _mm512_set1_epi64((long long)SAMPLE_MULTIPLIER);
  __m512i span = _mm512_setzero_si512(), repeat = span;
  uint64_t previous = b->previous_last, vector_accesses = 0;
  uint64_t pending[SAMPLED_CHUNK];
  if (!b->has_previous && batch->count > 0) {
    previous = ~batch->accesses[0].address;
    b->has_previous = 1;
  }
  /* the last lines of the previous access, per width */
  __m512i previous_lines = _mm512_srlv_epi64(_mm512_set1_epi64((long long)previous), shift);
  for (size_t start = 0; start < batch->count; start += SAMPLED_CHUNK) {
    const size_t stop = batch->count - start < SAMPLED_CHUNK ? batch->count : start + SAMPLED_CHUNK;
    size_t count = 0;
    for (size_t n = start; n < stop; n++) {
      const uint64_t first = batch->accesses[n].address, last = access_last(&batch->accesses[n]);
      const __m512i line = _mm512_srlv_epi64(_mm512_set1_epi64((long long)first), shift);
      const __m512i end = _mm512_srlv_epi64(_mm512_set1_epi64((long long)last), shift);
      const __m512i lines_after = _mm512_sub_epi64(end, line);
      if (__builtin_expect(_mm512_cmpgt_epu64_mask(lines_after, one) != 0, 0)) {
        /* more than two lines: the pending lines first, then this one's one by one */
        if (sample_pending(b, batch->accesses, pending, count) < 0) return MS_ERR_NOMEM;
        count = 0;
        for (int i = 0; i < widths; i++)
          if (sample_access_width(b, i, first, last, previous) < 0) return MS_ERR_NOMEM;
        previous = last;
        previous_lines = end;
        continue;
      }
      span = _mm512_add_epi64(span, lines_after);
      const __mmask8 repeats = _mm512_cmpeq_epi64_mask(line, previous_lines);
      repeat = _mm512_mask_add_epi64(repeat, repeats, repeat, one);
      /* first line: sampled and not a repeat; last line: sampled and not the first */
      const __m512i product = _mm512_mullo_epi64(_mm512_add_epi64(line, salt), multiplier);
      const __mmask8 firsts = _mm512_mask_cmplt_epu64_mask(used & ~repeats, product, limit);
      const __mmask8 seconds =
          _mm512_mask_cmplt_epu64_mask(used & _mm512_test_epi64_mask(lines_after, lines_after),
                                       _mm512_add_epi64(product, multiplier), limit);
      const uint64_t masks = (uint64_t)seconds << 8 | firsts;
      pending[count] = (uint64_t)n << 16 | masks;
      count += masks != 0;
      previous_lines = end;
      previous = last;
      vector_accesses++;
    }
    if (sample_pending(b, batch->accesses, pending, count) < 0) return MS_ERR_NOMEM;
  }
  uint64_t spans[8], repeat_counts[8];
  _mm512_storeu_si512(spans, span);
  _mm512_storeu_si512(repeat_counts, repeat);
  for (int i = 0; i < widths; i++) {
    b->lines[i] += spans[i] + vector_accesses;
    b->repeats[i] += repeat_counts[i];
  }
  b->previous_last = previous;
  return MS_OK;
}
#endif

int ms_surface_builder_add(ms_surface_builder *b, const ms_batch *batch) {
  int rc;
  if (b->sample_limit == (1u << 24)) { /* exact: each width a job (in turn without a pool) */
    b->pool_batch = batch;
    rc = jobs_run(b->pool, b->config.width_count, width_job, b);
  } else {
#ifdef SURFACE_AVX2
    rc = b->pass == SURFACE_PASS_AVX512 ? add_sampled_avx512(b, batch)
         : b->pass == SURFACE_PASS_AVX2 ? add_sampled_avx2(b, batch)
                                        : add_sampled_scalar(b, batch);
#else
    rc = add_sampled_scalar(b, batch);
#endif
  }
  if (rc < 0) return rc;
  b->accesses += batch->count;
  return MS_OK;
}

uint64_t surface_builder_line_references(const ms_surface_builder *builder, int width_index) {
  return builder->lines[width_index];
}

/* The estimates of one sample of width i at `rate` (1: exact), in sampled units (x rate):
 * `repeats` (counted exactly, every depth hits), the references the -adj correction
 * expects (`total`, repeats included), its `adjust`ment and the modeled references. */
typedef struct sample_totals {
  double repeats, total, adjust;
  uint64_t modeled;
} sample_totals;

static sample_totals totals_of(const ms_surface_builder *b, int i, double rate,
                               const uint64_t *refs, int zone_count) {
  sample_totals t;
  const uint64_t repeats = b->repeats[i];
  t.modeled = 0; /* references that reached the LRU model */
  for (int z = 0; z < zone_count; z++)
    t.modeled += refs[z];
  /* SHARDS-adj: the sampled references fall short of (or exceed) rate x the references
   * that could be sampled by chance; the difference goes to the shortest distances.
   * Counts are in sampled units (x rate) when sampling. Exact: adjust = 0. */
  t.repeats = rate < 1.0 ? (double)repeats * rate : (double)repeats;
  double expected = rate < 1.0 ? (double)(b->lines[i] - repeats) * rate : (double)t.modeled;
  t.adjust = expected - (double)t.modeled;
  t.total = t.repeats + expected;
  return t;
}

/* The modeled references below depth k, interpolated within the bucket of D x rate. */
static double estimate_below(const zone_plan *plan, const uint64_t *refs, int k) {
  uint64_t below_low = 0, below_high = 0;
  for (int z = 0; z <= plan->high_zone[k]; z++) {
    if (z <= plan->low_zone[k]) below_low += refs[z];
    below_high += refs[z];
  }
  return (double)below_low + plan->fraction[k] * (double)(below_high - below_low);
}

void ms_surface_builder_result(const ms_surface_builder *b, ms_surface *out) {
  memset(out, 0, sizeof *out);
  const ms_surface_config *c = &b->config;
  out->width_count = c->width_count;
  out->depth_count = c->depth_count;
  memcpy(out->widths, c->widths, sizeof out->widths);
  memcpy(out->depths, c->depths, sizeof out->depths);
  out->accesses = b->accesses;
  out->sample_rate = c->sample_rate;
  out->near_depth_count = b->near_count;
  out->near_rate = b->near_count > 0 ? b->near_rate : 0.0;
  for (int i = 0; i < c->width_count; i++) {
    const double rate = c->sample_rate;
    sample_totals base = totals_of(b, i, rate, b->zone_refs[i], b->plan.zone_count);
    sample_totals near = {0, 0, 0, 0};
    if (b->near_count > 0)
      near = totals_of(b, i, b->near_rate, b->near_refs[i], b->near_plan.zone_count);
    out->references[i] = rate < 1.0 ? base.modeled : base.modeled + b->repeats[i];
    uint64_t previous_hits = 0;
    for (int k = 0; k < c->depth_count; k++) {
      const int is_near = k < b->near_count;
      const sample_totals *t = is_near ? &near : &base;
      double estimate = is_near ? estimate_below(&b->near_plan, b->near_refs[i], k)
                                : estimate_below(&b->plan, b->zone_refs[i], k - b->base_first);
      double hits = t->repeats + estimate + t->adjust;
      double hit_rate = t->total > 0 ? hits / t->total : 0.0;
      hit_rate = hit_rate < 0 ? 0 : hit_rate > 1 ? 1 : hit_rate;
      /* where the near sample hands over to the sample, the two estimates may cross:
       * a deeper LRU cache never hits less (inclusion), so keep the rates monotone */
      if (rate < 1.0 && k > 0 && hit_rate < out->hit_rate[i][k - 1])
        hit_rate = out->hit_rate[i][k - 1];
      out->hit_rate[i][k] = hit_rate;
      /* histogram in units of the sample (the near sample's counts scaled to them) */
      double below =
          is_near ? (near.repeats + estimate) * (rate / b->near_rate) : base.repeats + estimate;
      uint64_t rounded = (uint64_t)llround(below);
      if (rounded < previous_hits) rounded = previous_hits;
      out->histogram[i][k] = rounded - previous_hits;
      previous_hits = rounded;
    }
    uint64_t all = (uint64_t)llround(base.repeats + (double)base.modeled);
    if (all < previous_hits) all = previous_hits;
    out->histogram[i][c->depth_count] = all - previous_hits;
  }
}

int ms_surface_width_index(const ms_surface *surface, uint64_t width) {
  for (int i = 0; i < surface->width_count; i++)
    if (surface->widths[i] == width) return i;
  return -1;
}

int ms_surface_depth_index(const ms_surface *surface, uint64_t depth) {
  for (int k = 0; k < surface->depth_count; k++)
    if (surface->depths[k] == depth) return k;
  return -1;
}

/* ---- reports ---- */

int ms_surface_write_table(FILE *out, const ms_surface *s) {
  fprintf(out, "cache surface: hit rates of fully-associative LRU caches (%" PRIu64 " accesses",
          s->accesses);
  if (s->sample_rate < 1.0) fprintf(out, ", sampled at rate %g", s->sample_rate);
  if (s->near_depth_count > 0)
    fprintf(out, "; depths %" PRIu64 "..%" PRIu64 " at rate %g", s->depths[0],
            s->depths[s->near_depth_count - 1], s->near_rate);
  fprintf(out, ")\nrows: width in bytes; columns: depth in lines (cache size = width x depth)\n");
  fprintf(out, "%7s", "width");
  for (int k = 0; k < s->depth_count; k++)
    fprintf(out, " %6" PRIu64, s->depths[k]);
  fprintf(out, " %12s\n", "references");
  for (int i = 0; i < s->width_count; i++) {
    fprintf(out, "%7u", s->widths[i]);
    for (int k = 0; k < s->depth_count; k++)
      fprintf(out, " %6.4f", s->hit_rate[i][k]);
    fprintf(out, " %12" PRIu64 "\n", s->references[i]);
  }
  fprintf(out,
          "\nreuse-distance histogram (references per width with distance in [previous depth,"
          " depth); last column: deeper or first reference)\n%7s",
          "width");
  for (int k = 0; k < s->depth_count; k++)
    fprintf(out, " <%-9" PRIu64, s->depths[k]);
  fprintf(out, " %10s\n", "beyond");
  for (int i = 0; i < s->width_count; i++) {
    fprintf(out, "%7u", s->widths[i]);
    for (int k = 0; k <= s->depth_count; k++)
      fprintf(out, " %10" PRIu64, s->histogram[i][k]);
    fprintf(out, "\n");
  }
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the surface report") : MS_OK;
}

int ms_surface_write_csv(FILE *out, const ms_surface *s) {
  fprintf(out, "width,depth,size,hit_rate,references\n");
  for (int i = 0; i < s->width_count; i++)
    for (int k = 0; k < s->depth_count; k++)
      fprintf(out, "%u,%" PRIu64 ",%" PRIu64 ",%.9f,%" PRIu64 "\n", s->widths[i], s->depths[k],
              (uint64_t)s->widths[i] * s->depths[k], s->hit_rate[i][k], s->references[i]);
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the surface report") : MS_OK;
}

int ms_surface_write_json(FILE *out, const ms_surface *s) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "accesses", json_object_new_uint64(s->accesses));
  json_object_object_add(root, "sample_rate", json_object_new_double(s->sample_rate));
  json_object *depths = json_object_new_array();
  for (int k = 0; k < s->depth_count; k++)
    json_object_array_add(depths, json_object_new_uint64(s->depths[k]));
  json_object_object_add(root, "depths", depths);
  if (s->sample_rate < 1.0) { /* the rate each depth's hit rates were estimated at */
    json_object *rates = json_object_new_array();
    for (int k = 0; k < s->depth_count; k++)
      json_object_array_add(
          rates, json_object_new_double(k < s->near_depth_count ? s->near_rate : s->sample_rate));
    json_object_object_add(root, "depth_sample_rates", rates);
  }
  json_object *widths = json_object_new_array();
  for (int i = 0; i < s->width_count; i++) {
    json_object *w = json_object_new_object();
    json_object_object_add(w, "width", json_object_new_uint64(s->widths[i]));
    json_object_object_add(w, "references", json_object_new_uint64(s->references[i]));
    json_object *rates = json_object_new_array();
    json_object *histogram = json_object_new_array();
    for (int k = 0; k < s->depth_count; k++)
      json_object_array_add(rates, json_object_new_double(s->hit_rate[i][k]));
    for (int k = 0; k <= s->depth_count; k++)
      json_object_array_add(histogram, json_object_new_uint64(s->histogram[i][k]));
    json_object_object_add(w, "hit_rates", rates);
    json_object_object_add(w, "reuse_histogram", histogram);
    json_object_array_add(widths, w);
  }
  json_object_object_add(root, "widths", widths);
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root,
                                         JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
  return ferror(out) ? ms_error_set(MS_ERR_IO, "cannot write the surface report") : MS_OK;
}

/* ---- the sink ---- */

typedef struct surface_sink {
  ms_sink base;
  ms_surface_builder *builder;
} surface_sink;

static int surface_sink_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  (void)info;
  return ms_surface_builder_add(((surface_sink *)sink)->builder, batch);
}

static void surface_sink_destroy(ms_sink *sink) { free(sink); }

static const ms_sink_ops surface_sink_ops = {NULL, surface_sink_consume, NULL,
                                             surface_sink_destroy};

int ms_surface_sink_new(ms_surface_builder *builder, ms_sink **out) {
  surface_sink *sink = calloc(1, sizeof *sink);
  if (!sink) return ms_error_set(MS_ERR_NOMEM, "out of memory for a surface sink");
  sink->base.ops = &surface_sink_ops;
  sink->builder = builder;
  *out = &sink->base;
  return MS_OK;
}

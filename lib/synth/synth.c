/* Seed generation driver (memsnap/synth.h): checks that a signature can be matched, runs
 * the block phase (synth_blocks.c) and the word phase (synth_words.c), and fills the seed
 * metadata of section 4.1 of chameleon-weinberg-dissertation-2008.txt. Also the
 * hand-written signatures of section 6.3.
 * Assumptions: alpha of a (level, reuse bin) with no trials falls back to the level's
 * average, then to 1 (a block never revisited needs no decision).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "synth_internal.h"

void ms_synth_config_default(ms_synth_config *config) {
  memset(config, 0, sizeof *config);
  config->seed = 1;
  config->min_length = 200000;
  config->max_length = 1000000;
  config->check_interval = 10000;
  config->max_mean_error = 0.001;
  config->max_max_error = 0.001;
  config->max_width_error = 0.002;
  config->max_iterations = 5;
  config->min_improvement = 0.0005;
  config->spatial_iterations = 5;
}

static int check_config(const ms_synth_config *c) {
  if (c->min_length == 0 || c->max_length < c->min_length || c->max_length > (1ull << 28))
    return ms_error_set(MS_ERR_ARG, "synth: lengths must satisfy 0 < min <= max <= 2^28");
  if (c->check_interval == 0) return ms_error_set(MS_ERR_ARG, "synth: check interval is 0");
  if (c->max_iterations < 1 || c->spatial_iterations < 1)
    return ms_error_set(MS_ERR_ARG, "synth: iterations must be at least 1");
  if (!(c->max_mean_error >= 0) || !(c->max_max_error >= 0) || !(c->min_improvement >= 0) ||
      !(c->max_width_error >= 0))
    return ms_error_set(MS_ERR_ARG, "synth: error bounds must be >= 0");
  return MS_OK;
}

/* P(the other half was visited | a reference switched halves) at each level and bin: the
 * trials one level down come from the keeps (their half is always visited) and from the
 * switches that landed on a visited half, so revisit = (trials[l-1] - yes[l]) / (trials[l]
 * - yes[l]). The word level has no level below: it takes the value of level 1. Without
 * switches the level's value over all bins is used, else 1. */
static void revisits(const ms_signature_bin *bin, int levels,
                     double revisit[][MS_SIGNATURE_DEPTHS]) {
  for (int level = levels - 1; level >= 1; level--) {
    double below = 0, switches = 0;
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      below += bin->trials[level - 1][k] - bin->yes[level][k];
      switches += bin->trials[level][k] - bin->yes[level][k];
    }
    double average = switches > 0 ? below / switches : 1;
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      double s = bin->trials[level][k] - bin->yes[level][k];
      double r = s > 0 ? (bin->trials[level - 1][k] - bin->yes[level][k]) / s : average;
      revisit[level][k] = r < 0 ? 0 : r > 1 ? 1 : r;
    }
  }
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
    revisit[0][k] = levels > 1 ? revisit[1][k] : 1;
}

/* The share of each stack class (k = 0..16: position 1 or in (2^(k-1), 2^k]; 17: deeper or
 * first) at each narrower width, from the signature's width rows; 0 if it has none. */
static int width_targets(const ms_signature *signature, double target[][MS_SIGNATURE_DEPTHS + 1]) {
  if (!(signature->widths > 0)) return 0;
  for (int level = 0; level < signature->levels; level++) {
    double references = signature->width_references[level], previous = 0;
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      double rate = references > 0 ? signature->width_hits[level][k] / references : 0;
      if (rate < previous) rate = previous;
      if (rate > 1) rate = 1;
      target[level][k] = rate - previous;
      previous = rate;
    }
    target[level][MS_SIGNATURE_DEPTHS] = 1 - previous;
  }
  return 1;
}

/* The target CDF and alphas of a bin, or MS_ERR_ARG with the reason no seed can match. */
static int read_targets(const ms_signature *signature, int bin_index, double cdf[],
                        double alpha[][MS_SIGNATURE_DEPTHS],
                        double revisit[][MS_SIGNATURE_DEPTHS]) {
  if (bin_index < 0 || bin_index >= signature->bin_count)
    return ms_error_set(MS_ERR_ARG, "synth: the signature has no bin %d", bin_index);
  if (signature->levels < 1 || signature->levels > MS_SIGNATURE_MAX_LEVELS)
    return ms_error_set(MS_ERR_ARG, "synth: unsupported width/word (%u/%u)", signature->width,
                        signature->word);
  const ms_signature_bin *bin = &signature->bins[bin_index];
  if (!(bin->references > 0))
    return ms_error_set(MS_ERR_ARG, "synth: the signature has no references to imitate");
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    cdf[k] = bin->hits[k] / bin->references;
    if (!(cdf[k] >= 0 && cdf[k] <= 1))
      return ms_error_set(MS_ERR_ARG, "synth: HitRate(2^%d) = %g is not a rate in [0, 1]", k,
                          cdf[k]);
    if (k > 0 && cdf[k] < cdf[k - 1])
      return ms_error_set(MS_ERR_ARG,
                          "synth: the reuse CDF decreases (HitRate(2^%d) = %g < HitRate(2^%d) "
                          "= %g): no trace has such hit rates",
                          k, cdf[k], k - 1, cdf[k - 1]);
  }
  for (int level = 0; level < signature->levels; level++) {
    double average = ms_signature_alpha(bin, level, -1);
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      double a = bin->trials[level][k] > 0 ? bin->yes[level][k] / bin->trials[level][k]
                 : average >= 0            ? average
                                           : 1.0;
      if (!(a >= 0 && a <= 1))
        return ms_error_set(MS_ERR_ARG,
                            "synth: alpha at level %d, reuse bin %d is %g (not in "
                            "[0, 1])",
                            level, k, a);
      alpha[level][k] = a;
    }
  }
  revisits(bin, signature->levels, revisit);
  return MS_OK;
}

static int signature_text(const ms_signature *signature, char **out) {
  size_t size = 0;
  FILE *memory = open_memstream(out, &size);
  if (!memory) return ms_error_set(MS_ERR_NOMEM, "synth: out of memory");
  int rc = ms_signature_write_text(memory, signature);
  if (fclose(memory) != 0 && rc == MS_OK) rc = ms_error_set(MS_ERR_NOMEM, "synth: out of memory");
  return rc;
}

int ms_synth_generate(const ms_signature *signature, int bin_index, const ms_synth_config *config,
                      ms_seed **out) {
  *out = NULL;
  double target[MS_SIGNATURE_DEPTHS];
  double alpha[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS] = {{0}};
  double revisit[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS] = {{0}};
  int rc = check_config(config);
  if (rc == MS_OK) rc = read_targets(signature, bin_index, target, alpha, revisit);
  if (rc < 0) return rc;
  uint32_t words_per_block = signature->width / signature->word;
  if (config->unique && words_per_block > (1u << 15))
    return ms_error_set(MS_ERR_ARG, "synth: unique mode needs at most 2^15 words per block");
  ms_seed *seed = calloc(1, sizeof *seed);
  if (!seed) return ms_error_set(MS_ERR_NOMEM, "synth: out of memory");
  seed->width = signature->width;
  seed->word = signature->word;
  seed->unique = config->unique;
  memcpy(seed->target_cdf, target, sizeof target);
  uint8_t *bins = NULL;
  double width_target[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS + 1];
  int have_widths = bin_index == 0 && width_targets(signature, width_target);
  synth_word_model *words = NULL;
  /* blocks the word model may see: the list's, plus in unique mode a new physical block
   * every words_per_block references to a virtual one */
  uint64_t model_blocks =
      MS_SYNTH_LIST_BLOCKS + (config->unique ? config->max_length / words_per_block + 1 : 0);
  if (have_widths)
    rc = synth_word_model_new(
        (const double(*)[MS_SIGNATURE_DEPTHS])alpha, (const double(*)[MS_SIGNATURE_DEPTHS])revisit,
        (const double(*)[MS_SIGNATURE_DEPTHS + 1]) width_target, signature->levels, model_blocks,
        config->max_length, config->seed, config->unique, &words);
  if (rc == MS_OK) rc = synth_blocks(target, config, words_per_block, words, seed, &bins);
  synth_word_model_free(words);
  if (rc == MS_OK)
    rc = synth_words((const double(*)[MS_SIGNATURE_DEPTHS])alpha,
                     (const double(*)[MS_SIGNATURE_DEPTHS])revisit,
                     have_widths ? (const double(*)[MS_SIGNATURE_DEPTHS + 1]) width_target : NULL,
                     signature->levels, config, bins, seed);
  free(bins);
  if (rc == MS_OK) rc = signature_text(signature, &seed->signature_text);
  if (rc < 0) {
    ms_seed_free(seed);
    return rc;
  }
  uint64_t deepest = 1u << (MS_SIGNATURE_DEPTHS - 1);
  seed->working_set = seed->unique_blocks * seed->width;
  seed->min_replications = (deepest + seed->unique_blocks - 1) / seed->unique_blocks + 1;
  *out = seed;
  return MS_OK;
}

void ms_seed_free(ms_seed *seed) {
  if (!seed) return;
  free(seed->blocks);
  free(seed->words);
  free(seed->signature_text);
  free(seed);
}

int ms_synth_hand_signature(const char *pattern, uint32_t width, uint32_t word,
                            ms_signature **out) {
  *out = NULL;
  double value;
  if (!strcmp(pattern, "random"))
    value = 0;
  else if (!strcmp(pattern, "stride"))
    value = 1;
  else
    return ms_error_set(MS_ERR_ARG, "unknown hand signature '%s' (random or stride)", pattern);
  int levels = 0;
  while (levels <= MS_SIGNATURE_MAX_LEVELS && (word << levels) < width)
    levels++;
  if (word == 0 || (word & (word - 1)) || (word << levels) != width ||
      levels > MS_SIGNATURE_MAX_LEVELS || levels < 1)
    return ms_error_set(MS_ERR_ARG,
                        "hand signature: width %u and word %u must be powers of "
                        "two with word < width <= word * 2^%d",
                        width, word, MS_SIGNATURE_MAX_LEVELS);
  ms_signature *s = calloc(1, sizeof *s);
  ms_signature_bin *bin = s ? calloc(1, sizeof *bin) : NULL;
  char *name = bin ? strdup(pattern) : NULL;
  if (!name) {
    free(bin);
    free(s);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  const double count = 1000000; /* nominal counts: the rates are what matters */
  s->program = name;
  s->width = width;
  s->word = word;
  s->levels = levels;
  s->bin_count = 1;
  s->bins = bin;
  s->accesses_seen = s->accesses_modeled = (uint64_t)count;
  bin->site = MS_SIGNATURE_ALL;
  bin->executions = bin->modeled = bin->references = count;
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    bin->hits[k] = value * count;
    for (int level = 0; level < levels; level++) {
      bin->trials[level][k] = count;
      bin->yes[level][k] = value * count;
    }
  }
  *out = s;
  return MS_OK;
}

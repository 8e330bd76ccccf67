/* A cache surface derived from a memory signature (memsnap/signature.h), the way
 * chameleon-weinberg-dissertation-2008.txt derives one (sections 4.1, 4.3, 6.1): generate
 * a synthetic stream that has the signature, then measure it.
 *
 * Model and assumptions:
 * - Lines: a list of 2^16 + 1 distinct lines in LRU order ("marginally longer than the
 *   largest cache is deep"). Reference i draws a reuse bin from the CDF and a stack
 *   position uniformly inside the bin (positions beyond 2^16, first references included,
 *   take the least recent line: a miss at every depth), takes the line at that position
 *   and moves it to the front. Draws use a two-dimensional low-discrepancy sequence
 *   (R2: additive recurrences of the plastic number), so the generated CDF matches the
 *   signature's to O(1/N) without random noise.
 * - Words: each line keeps a tree of halves as the tracer does. At a node visited before,
 *   the reference goes down the same half with probability alpha(level, reuse bin)
 *   (the bin's own value when it has trials, else the level's average, else 1); decisions
 *   per (level, bin) follow an error-diffusion accumulator, so the yes fraction equals
 *   alpha exactly. An unvisited node goes to its lower half.
 * - Warm-up: every list line is referenced once (least recent first) before measuring, so
 *   the measuring caches start in the generator's LRU order (the dissertation's
 *   cold-start error is removed for the maximal width).
 * - Measurement: the stream is fed to the signature model at every width from the word
 *   size to the maximal width; the warm-up is subtracted. The maximal width's row is the
 *   signature's own CDF (the synthetic stream reproduces it up to O(1/N)).
 * - A signature with the narrower widths' CDFs (signature->widths, whole program only): the
 *   whole-program surface is read from them (hits / references; the maximal width from the
 *   CDF) and nothing is generated; site bins are derived as above.
 * Approximation: alpha per reuse bin does not say which lines interleave with which, so
 * smaller widths are estimates; docs/formats.md gives the errors measured on the test
 * kernels against surfaces measured on the traces.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/signature.h"
#include "signature_internal.h"

#define LIST_LINES ((1u << 16) + 1)
#define SYNTHETIC_REFERENCES (1u << 19)
#define GENERATOR_BATCH 4096

typedef struct generator {
  const ms_signature *signature;
  const ms_signature_bin *bin;
  double cdf[MS_SIGNATURE_DEPTHS]; /* P(R <= 2^k) */
  double alpha[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  double carry[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  uint32_t *fenwick; /* over times 1..slots: 1 where some line's last reference is */
  uint32_t slots, now;
  uint32_t *line_time;       /* line -> time */
  uint32_t *time_line;       /* time -> line */
  uint8_t *visited, *choice; /* per line, (1 << levels) bits each, heap order */
  size_t tree_bytes;
  int top_bit; /* highest power of two <= slots */
} generator;

static void fenwick_add(generator *g, uint32_t at, int32_t delta) {
  for (; at <= g->slots; at += at & (~at + 1))
    g->fenwick[at] += (uint32_t)delta;
}

/* Smallest time t with prefix(t) == rank (1-based rank among marked times). */
static uint32_t fenwick_find(const generator *g, uint32_t rank) {
  uint32_t at = 0;
  for (uint32_t step = (uint32_t)g->top_bit; step; step >>= 1)
    if (at + step <= g->slots && g->fenwick[at + step] < rank) {
      at += step;
      rank -= g->fenwick[at];
    }
  return at + 1;
}

static double pick_alpha(const ms_signature_bin *bin, int level, int k) {
  if (bin->trials[level][k] > 0) return bin->yes[level][k] / bin->trials[level][k];
  double a = ms_signature_alpha(bin, level, -1);
  return a >= 0 ? a : 1.0;
}

static int generator_init(generator *g, const ms_signature *signature, int bin_index) {
  memset(g, 0, sizeof *g);
  g->signature = signature;
  g->bin = &signature->bins[bin_index];
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    g->cdf[k] = g->bin->references > 0 ? g->bin->hits[k] / g->bin->references : 0;
    for (int level = 0; level < signature->levels; level++)
      g->alpha[level][k] = pick_alpha(g->bin, level, k);
  }
  g->slots = LIST_LINES + SYNTHETIC_REFERENCES;
  g->top_bit = 1;
  while ((uint32_t)g->top_bit * 2 <= g->slots)
    g->top_bit *= 2;
  g->tree_bytes = ((size_t)1 << signature->levels) / 8 + 1;
  g->fenwick = calloc((size_t)g->slots + 1, sizeof *g->fenwick);
  g->line_time = calloc(LIST_LINES, sizeof *g->line_time);
  g->time_line = calloc((size_t)g->slots + 1, sizeof *g->time_line);
  g->visited = calloc(LIST_LINES, g->tree_bytes);
  g->choice = calloc(LIST_LINES, g->tree_bytes);
  if (!g->fenwick || !g->line_time || !g->time_line || !g->visited || !g->choice)
    return ms_error_set(MS_ERR_NOMEM, "out of memory for a derived surface");
  return MS_OK;
}

static void generator_free(generator *g) {
  free(g->fenwick);
  free(g->line_time);
  free(g->time_line);
  free(g->visited);
  free(g->choice);
}

/* Word of `line` chosen by walking its tree with the alphas of reuse bin `k`. */
static uint32_t choose_word(generator *g, uint32_t line, int k) {
  int levels = g->signature->levels;
  uint8_t *visited = g->visited + (size_t)line * g->tree_bytes;
  uint8_t *choice = g->choice + (size_t)line * g->tree_bytes;
  uint32_t node = 1;
  for (int depth = 0; depth < levels; depth++) {
    int level = levels - 1 - depth;
    uint8_t bit = (uint8_t)(1u << (node & 7));
    size_t at = node >> 3;
    uint32_t half = 0;
    if (visited[at] & bit) {
      uint32_t last = (choice[at] & bit) != 0;
      double *carry = &g->carry[level][k];
      *carry += g->alpha[level][k];
      if (*carry >= 1.0 - 1e-12) {
        *carry -= 1.0;
        half = last;
      } else {
        half = !last;
      }
    }
    visited[at] |= bit;
    choice[at] = half ? (uint8_t)(choice[at] | bit) : (uint8_t)(choice[at] & ~bit);
    node = node * 2 + half;
  }
  return node - (1u << levels);
}

/* Moves `line` to the front of the LRU list. */
static void touch(generator *g, uint32_t line) {
  if (g->line_time[line]) fenwick_add(g, g->line_time[line], -1);
  g->line_time[line] = ++g->now;
  g->time_line[g->now] = line;
  fenwick_add(g, g->now, 1);
}

static ms_access make_access(const generator *g, uint32_t line, uint32_t word) {
  ms_access access = {0};
  access.address = (uint64_t)line * g->signature->width + (uint64_t)word * g->signature->word;
  access.size = (uint8_t)(g->signature->word < 255 ? g->signature->word : 255);
  access.site = MS_SITE_NONE;
  return access;
}

/* The i-th synthetic reference (after the warm-up). */
static ms_access next_reference(generator *g, uint64_t i) {
  double u = fmod(0.5 + (double)i * 0.7548776662466927, 1.0);
  double v = fmod(0.5 + (double)i * 0.5698402909980532, 1.0);
  int k = 0;
  while (k < MS_SIGNATURE_DEPTHS && u >= g->cdf[k])
    k++;
  uint32_t position;
  if (k == MS_SIGNATURE_DEPTHS) {
    position = LIST_LINES;
    k = MS_SIGNATURE_DEPTHS - 1;
  } else if (k == 0) {
    position = 1;
  } else {
    uint32_t half = 1u << (k - 1); /* the bin is (half, 2 * half] */
    position = half + 1 + (uint32_t)(v * half);
    if (position > 2 * half) position = 2 * half;
  }
  uint32_t line = g->time_line[fenwick_find(g, LIST_LINES - position + 1)];
  touch(g, line);
  return make_access(g, line, choose_word(g, line, k));
}

int ms_signature_derive_surface(const ms_signature *signature, int bin_index,
                                ms_signature_surface *out) {
  memset(out, 0, sizeof *out);
  if (!signature || bin_index < 0 || bin_index >= signature->bin_count || signature->levels < 1 ||
      signature->levels > MS_SIGNATURE_MAX_LEVELS)
    return ms_error_set(MS_ERR_ARG, "derive surface: no such signature bin %d", bin_index);
  int widths = signature->levels + 1;
  if (bin_index == 0 && signature->widths > 0) {
    const ms_signature_bin *all = &signature->bins[0];
    out->width_count = widths;
    for (int w = 0; w < widths; w++) {
      int widest = w == widths - 1;
      double references = widest ? all->references : signature->width_references[w];
      out->widths[w] = signature->word << w;
      for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
        double hits = widest ? all->hits[k] : signature->width_hits[w][k];
        out->hit_rate[w][k] = references > 0 ? hits / references : 0;
      }
    }
    return MS_OK;
  }
  ms_signature_model *models[MS_SIGNATURE_MAX_LEVELS + 1] = {0};
  uint64_t warm_hits[MS_SIGNATURE_MAX_LEVELS + 1][MS_SIGNATURE_DEPTHS] = {{0}};
  uint64_t warm_references[MS_SIGNATURE_MAX_LEVELS + 1] = {0};
  ms_access *batch = malloc(GENERATOR_BATCH * sizeof *batch);
  generator g;
  int rc = generator_init(&g, signature, bin_index);
  if (rc == MS_OK && !batch) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  for (int w = 0; rc == MS_OK && w < widths - 1; w++) {
    ms_signature_config config = {signature->word << (w + 1), signature->word, 0, 0, 0};
    rc = ms_signature_model_new(&config, &models[w]);
  }
  /* Warm-up: every line once, least recent first. */
  for (uint32_t done = 0; rc == MS_OK && done < LIST_LINES;) {
    size_t n = 0;
    for (; n < GENERATOR_BATCH && done < LIST_LINES; n++, done++) {
      uint32_t line = LIST_LINES - 1 - done;
      touch(&g, line);
      batch[n] = make_access(&g, line, choose_word(&g, line, 0));
    }
    for (int w = 0; rc == MS_OK && w < widths - 1; w++)
      rc = ms_signature_model_add(models[w], batch, n);
  }
  for (int w = 0; rc == MS_OK && w < widths - 1; w++) {
    const sig_counts *counts = sig_model_counts(models[w]);
    uint64_t hits = 0;
    warm_references[w] = counts->references;
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
      warm_hits[w][k] = hits += counts->positions[k];
  }
  for (uint64_t i = 0; rc == MS_OK && i < SYNTHETIC_REFERENCES;) {
    size_t n = 0;
    for (; n < GENERATOR_BATCH && i < SYNTHETIC_REFERENCES; n++, i++)
      batch[n] = next_reference(&g, i);
    for (int w = 0; rc == MS_OK && w < widths - 1; w++)
      rc = ms_signature_model_add(models[w], batch, n);
  }
  if (rc == MS_OK) {
    out->width_count = widths;
    for (int w = 0; w < widths; w++) {
      out->widths[w] = signature->word << w;
      if (w == widths - 1) {
        for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
          out->hit_rate[w][k] = g.cdf[k];
        continue;
      }
      const sig_counts *counts = sig_model_counts(models[w]);
      double references = (double)(counts->references - warm_references[w]);
      uint64_t hits = 0;
      for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
        hits += counts->positions[k];
        out->hit_rate[w][k] = references > 0 ? (double)(hits - warm_hits[w][k]) / references : 0;
      }
    }
  }
  for (int w = 0; w < widths - 1; w++)
    ms_signature_model_free(models[w]);
  generator_free(&g);
  free(batch);
  return rc;
}

int ms_signature_to_surface(const ms_signature *signature, ms_surface *out) {
  ms_signature_surface derived;
  int rc = ms_signature_derive_surface(signature, 0, &derived);
  if (rc < 0) return rc;
  memset(out, 0, sizeof *out);
  out->width_count =
      derived.width_count < MS_SURFACE_MAX_WIDTHS ? derived.width_count : MS_SURFACE_MAX_WIDTHS;
  out->depth_count = MS_SIGNATURE_DEPTHS;
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
    out->depths[k] = 1ull << k;
  /* the widest widths when the signature has more levels than a surface holds */
  int skip = derived.width_count - out->width_count;
  for (int i = 0; i < out->width_count; i++) {
    out->widths[i] = derived.widths[i + skip];
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
      out->hit_rate[i][k] = derived.hit_rate[i + skip][k];
  }
  /* with the narrower widths' CDFs the rows are measured counts: their references too */
  for (int i = 0; signature->widths > 0 && i < out->width_count; i++) {
    int level = i + skip;
    double references = level < signature->levels ? signature->width_references[level]
                                                  : signature->bins[0].references;
    out->references[i] = (uint64_t)llround(references);
  }
  out->accesses = signature->accesses_seen;
  out->sample_rate = 1.0;
  return 0;
}

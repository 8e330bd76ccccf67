/* `memsnap show FILE.sig`: a readable summary of a memory signature (memsnap/signature.h):
 * the run, the reuse CDF as hit rates of fully-associative LRU caches, the alpha values
 * by reuse bin, the narrower widths' hit rates when the signature has them, and with
 * per-site bins the sites that execute most. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "memsnap/signature.h"
#include "show.h"

#define SHOW_TOP_SITES 10

static void show_header(const ms_signature *s) {
  printf("memory signature of %s\n", s->program ? s->program : "(unknown program)");
  printf("  accesses: %" PRIu64 " seen, %" PRIu64 " modeled", s->accesses_seen,
         s->accesses_modeled);
  if (s->sample_off)
    printf(" (interval sampling %" PRIu64 " on / %" PRIu64 " off: %.3g%%)", s->sample_on,
           s->sample_off,
           100.0 * (double)s->sample_on / ((double)s->sample_on + (double)s->sample_off));
  printf("\n  lines of %" PRIu32 " bytes, words of %" PRIu32 " bytes", s->width, s->word);
  if (s->per_site) {
    printf("; %d site bins", s->bin_count - 1);
    if (s->site_cap) printf(", at most %" PRIu64 " accesses modeled per site", s->site_cap);
  }
  printf("\n");
}

static void show_cdf(const ms_signature *s, const ms_signature_bin *bin) {
  printf("\nreuse CDF: hit rate of a fully-associative LRU cache of %" PRIu32
         "-byte lines (%.17g references)\n",
         s->width, bin->references);
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    double bytes = (double)s->width * (double)(1u << k);
    const char *unit = bytes >= 1048576 ? "MiB" : "KiB";
    double size = bytes >= 1048576 ? bytes / 1048576 : bytes / 1024;
    double rate = ms_signature_hit_rate(bin, k);
    printf("  depth %6u (%7.4g %s): ", 1u << k, size, unit);
    if (rate < 0)
      printf("NA\n");
    else
      printf("%.4f\n", rate);
  }
}

static void show_alpha(const ms_signature *s, const ms_signature_bin *bin) {
  printf("\nspatial locality alpha(S, 2S): P(consecutive uses of a 2S-byte set reuse the same "
         "S-byte half)\n  by reuse bin 2^0..2^16, '-' where nothing was observed\n");
  for (int level = s->levels - 1; level >= 0; level--) {
    uint64_t subset = (uint64_t)s->word << level;
    double avg = ms_signature_alpha(bin, level, -1);
    char label[48];
    snprintf(label, sizeof label, "alpha(%" PRIu64 ",%" PRIu64 ")", subset, subset * 2);
    printf("  %-16s avg ", label);
    if (avg < 0)
      printf("  -  ");
    else
      printf("%.3f", avg);
    printf(" |");
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      double a = ms_signature_alpha(bin, level, k);
      if (a < 0)
        printf("   -");
      else
        printf(" %3.0f", 100 * a);
    }
    printf("\n");
  }
  printf("  (per-bin values in percent)\n");
}

/* The narrower widths' rows and the maximal width's CDF as `memsnap surface --format table`
 * lays them out: widths as rows, depths 2^0..2^16 as columns. */
static void show_widths(const ms_signature *s, const ms_signature_bin *bin) {
  if (s->widths >= 1)
    printf("\nhit rates by width (exact)");
  else
    printf("\nhit rates by width (narrower widths by SHARDS at rate %g)", s->widths);
  printf(": rows width in bytes, columns depth in lines\n");
  printf("%7s", "width");
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++)
    printf(" %6u", 1u << k);
  printf(" %12s\n", "references");
  for (int level = 0; level <= s->levels; level++) {
    int widest = level == s->levels;
    double references = widest ? bin->references : s->width_references[level];
    printf("%7" PRIu32, s->word << level);
    for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
      double hits = widest ? bin->hits[k] : s->width_hits[level][k];
      if (references > 0)
        printf(" %6.4f", hits / references);
      else
        printf(" %6s", "NA");
    }
    printf(" %12.17g\n", references);
  }
}

static int by_executions(const void *a, const void *b) {
  const ms_signature_bin *x = a, *y = b;
  return x->executions < y->executions ? 1 : x->executions > y->executions ? -1 : 0;
}

static void show_sites(const ms_signature *s) {
  int count = s->bin_count - 1;
  ms_signature_bin *sorted = malloc((size_t)count * sizeof *sorted);
  if (!sorted) return;
  for (int i = 0; i < count; i++)
    sorted[i] = s->bins[i + 1];
  qsort(sorted, (size_t)count, sizeof *sorted, by_executions);
  printf("\nsites executing most (of %d): executions, modeled, hit rate at depths 2^0 and 2^6, "
         "alpha(%" PRIu32 ",%" PRIu32 ")\n",
         count, s->width / 2, s->width);
  for (int i = 0; i < count && i < SHOW_TOP_SITES; i++) {
    const ms_signature_bin *bin = &sorted[i];
    if (bin->site == MS_SITE_NONE)
      printf("  %-6s %-12s %-32s", "-", "", "(accesses without a site)");
    else
      printf("  %-6" PRIu32 " 0x%-10" PRIx64 " %-32s", bin->site, bin->pc,
             bin->location ? bin->location : "?");
    double alpha = ms_signature_alpha(bin, s->levels - 1, -1);
    printf(" %12.17g %12.17g  %.3f %.3f  ", bin->executions, bin->modeled,
           ms_signature_hit_rate(bin, 0), ms_signature_hit_rate(bin, 6));
    if (alpha < 0)
      printf("-\n");
    else
      printf("%.3f\n", alpha);
  }
  free(sorted);
}

int show_signature(const char *command, const char *path, int json) {
  ms_signature *signature;
  if (ms_signature_load(path, &signature) < 0) return cli_fail(command);
  int rc;
  if (json) {
    rc = ms_signature_write_json(stdout, signature);
  } else {
    show_header(signature);
    show_cdf(signature, &signature->bins[0]);
    show_alpha(signature, &signature->bins[0]);
    if (signature->widths > 0) show_widths(signature, &signature->bins[0]);
    if (signature->per_site && signature->bin_count > 1) show_sites(signature);
    rc = 0;
  }
  ms_signature_free(signature);
  if (rc < 0 || fflush(stdout) != 0) return cli_fail(command);
  return 0;
}

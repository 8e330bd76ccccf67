/* memsnap show PROFILE.psnap [--site N | --function F | --line FILE:LINE] [--all]
 *
 * A profile (text or zstd-compressed) for a person: the header, then its sites by weight
 * (accesses), one line each: site, share of accesses, count, kind and size, class, storage, where
 * in the source, and the pattern (cut at 60 characters in the list; whole with a selection, which
 * also shows the site's full block and the order of its thread).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/input.h"
#include "memsnap/psnap.h"

static void usage(FILE *to) {
  fprintf(
      to,
      "usage: memsnap show PROFILE.psnap [--site N | --function F | --line FILE:LINE] [--json]\n"
      "  -s, --site N          show site N in full\n"
      "  -f, --function NAME   show the sites of a function in full\n"
      "  -l, --line FILE:LINE  show the sites of a source line in full\n"
      "  -a, --all             list every site (default: the 40 heaviest)\n"
      "  --json                the profile as JSON: every site (or those selected)\n");
}

/* 1 if the file starts with the zstd magic (the profile was read through zstd). */
static int compressed(const char *path) {
  unsigned char head[4] = {0};
  size_t n; /* a look that leaves standard input or a pipe for the profile's reader */
  if (ms_input_peek(path, 0, head, 4, &n) < 0) return 0;
  return n == 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd;
}

static const ms_psnap_profile *sorting;
static int by_weight(const void *a, const void *b) {
  uint64_t x = sorting->sites[*(const uint32_t *)a].count;
  uint64_t y = sorting->sites[*(const uint32_t *)b].count;
  return x < y   ? 1
         : x > y ? -1
                 : (*(const uint32_t *)a > *(const uint32_t *)b) -
                       (*(const uint32_t *)a < *(const uint32_t *)b);
}

static const char *storage(const ms_psnap_site *site) {
  return site->addresses ? "lossless" : site->lossy ? "lossy" : "exact";
}

/* The share of a lossy site's measured accesses (or jumps) that reused one of its lines. */
static double reused_share(const ms_psnap_site *site) {
  uint64_t reused = 0;
  for (int size = 0; size < MS_PSNAP_REUSE_SIZES; size++)
    for (int b = 0; b < MS_PSNAP_REUSE_BINS; b++)
      reused += site->reuse[size][b];
  return site->reuse_accesses ? 100.0 * (double)reused / (double)site->reuse_accesses : 0;
}

/* Of a lossy site's accesses measured for shared odds, the share whose line the thread
 * touched within 2^10 accesses before; its new lines. */
static double shared_share(const ms_psnap_site *site) {
  uint64_t near = 0;
  for (int b = 0; b <= 10 && b < MS_PSNAP_SHARED_BINS; b++)
    near += site->shared[b];
  return site->shared_accesses ? 100.0 * (double)near / (double)site->shared_accesses : 0;
}

static void show_site(const ms_psnap_profile *p, uint32_t s, int full) {
  const ms_psnap_site *site = &p->sites[s];
  const ms_site *where = ms_site_table_get(p->info.sites, site->trace_site);
  char place[512];
  ms_site_describe(where, place, sizeof place);
  double share = p->access_count ? 100.0 * (double)site->count / (double)p->access_count : 0.0;
  char *pattern = ms_expr_string(&site->pattern, MS_EXPR_STRIDES);
  if (!full) {
    printf("s%-5u %6.2f%% %12" PRIu64 " %-6s %2u  %-18s %-8s %s\n", s, share, site->count,
           ms_access_kind_name((ms_access_kind)site->kind), site->size,
           ms_stride_class_name(site->cls), storage(site), place);
    if (pattern && *pattern)
      printf("%7s first 0x%" PRIx64 " pattern %.60s%s\n", "", site->first_address, pattern,
             strlen(pattern) > 60 ? "..." : "");
    else if (site->lossy)
      printf("%7s first 0x%" PRIx64 " range 0x%" PRIx64 "-0x%" PRIx64 " alignment %" PRIu64 "\n",
             "", site->first_address, site->low, site->high, site->alignment);
    if (site->lossy && site->tied)
      printf("%7s tied to s%u %+" PRId64 "\n", "", site->tie_site, site->tie_delta);
    if (site->lossy && site->reuse_accesses)
      printf("%7s reuses its lines: %.1f%% within 4095 of its accesses%s\n", "", reused_share(site),
             site->reuse_at_jumps ? " (at its jumps)" : "");
    if (site->lossy && (site->shared_accesses || ms_psnap_site_new_lines(site)))
      printf("%7s shares lines: %.1f%% touched by its thread within 1023 accesses; %" PRIu64
             " new lines\n",
             "", shared_share(site), ms_psnap_site_new_lines(site));
  } else {
    printf("site s%u: %s\n  thread %u, %s of %u bytes, %" PRIu64 " accesses (%.2f%%)\n"
           "  class %s, %s\n  first address 0x%" PRIx64 "\n",
           s, place, site->thread, ms_access_kind_name((ms_access_kind)site->kind), site->size,
           site->count, share, ms_stride_class_name(site->cls), storage(site), site->first_address);
    if (site->lossy) {
      printf("  addresses in 0x%" PRIx64 "-0x%" PRIx64 ", multiples of %" PRIu64
             " from the first\n",
             site->low, site->high, site->alignment);
      if (site->stride_count && site->count > 1) {
        uint64_t kept = 0;
        printf("  strides");
        for (uint32_t i = 0; i < site->stride_count; i++) {
          printf("%s %+" PRId64 " %.1f%%", i ? "," : "", site->top_stride[i],
                 100.0 * (double)site->top_stride_times[i] / (double)(site->count - 1));
          kept += site->top_stride_times[i];
        }
        printf(", jumps %.1f%%\n",
               100.0 * (double)(site->count - 1 - kept) / (double)(site->count - 1));
      } else {
        printf("  no frequent stride: every address drawn from the histogram\n");
      }
      if (site->tied)
        printf("  tied to s%u: its last address %+" PRId64 " (90%% or more of the accesses)\n",
               site->tie_site, site->tie_delta);
      if (site->reuse_accesses)
        printf("  reuse odds: %.1f%% of %s touched a line it had touched in its last 4095 "
               "accesses; replay goes back to its own recent addresses with those odds%s\n",
               reused_share(site), site->reuse_at_jumps ? "its jumps" : "its accesses",
               site->reuse_at_jumps ? " when its walk jumps" : "");
      if (site->shared_accesses || ms_psnap_site_new_lines(site))
        printf("  shared lines: %.1f%% of its accesses touched a line its thread had touched "
               "within 1023 accesses; %" PRIu64 " lines new to the program (%" PRIu64
               " right after the one before); replay takes lines of its thread that far back, "
               "and new lines at that pace, before its own model\n",
               shared_share(site), ms_psnap_site_new_lines(site), site->new_next);
    } else
      printf("  pattern %s\n", pattern ? pattern : "");
  }
  free(pattern);
}

/* A set of threads or ranks as the profile writes it: 3, 1..15, 0..62:2. */
static void set_text(char *buf, size_t size, uint32_t first, uint32_t step, uint32_t members) {
  if (members > 1)
    snprintf(buf, size, step == 1 ? "%u..%u" : "%u..%u:%u", first,
             (unsigned)(first + (uint64_t)step * (members - 1)), step);
  else
    snprintf(buf, size, "%u", first);
}

int show_profile(int argc, char **argv) {
  static const struct option options[] = {{"site", required_argument, NULL, 's'},
                                          {"function", required_argument, NULL, 'f'},
                                          {"line", required_argument, NULL, 'l'},
                                          {"all", no_argument, NULL, 'a'},
                                          {"json", no_argument, NULL, 'j'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char *site_text = NULL, *function = NULL, *line = NULL;
  int all = 0, json = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":s:f:l:ah", options, NULL)) != -1) {
    switch (c) {
    case 's': site_text = optarg; break;
    case 'f': function = optarg; break;
    case 'l': line = optarg; break;
    case 'a': all = 1; break;
    case 'j': json = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count != 1 || inputs.program_argc) {
    cli_error(argv[0], "give one profile (.psnap)");
    return 2;
  }
  ms_psnap_profile p;
  if (ms_psnap_profile_load(inputs.paths[0], &p) < 0) return cli_fail(argv[0]);
  /* a merged profile is shown as its blocks, unless a rank or thread is picked */
  if ((cli_rank >= 0 || cli_thread >= 0) && ms_psnap_profile_pick(&p, cli_rank, cli_thread) < 0) {
    cli_error(argv[0], "%s: %s", inputs.paths[0], ms_error_message());
    ms_psnap_profile_free(&p);
    return 2;
  }
  uint8_t *mask = calloc(p.site_count + 1, 1);
  uint32_t *order = malloc((p.site_count + 1) * sizeof *order);
  int status = 0;
  if (!mask || !order) {
    cli_error(argv[0], "out of memory");
    status = 1;
    goto done;
  }
  int selecting = site_text || function || line;
  if (site_text) {
    char *end;
    unsigned long n = strtoul(site_text + (site_text[0] == 's'), &end, 10);
    if (*end || n >= p.site_count) {
      cli_error(argv[0], "--site: no site %s in %s (%u sites)", site_text, inputs.paths[0],
                p.site_count);
      status = 2;
      goto done;
    }
    mask[n] = 1;
  }
  if ((function || line) && ms_psnap_select(&p, function, line, mask) == 0) {
    cli_error(argv[0], "no site of %s in %s", function ? function : line, inputs.paths[0]);
    status = 1;
    goto done;
  }
  if (json) {
    if (ms_psnap_profile_write_json(&p, selecting ? mask : NULL, stdout) < 0) status = 1;
    goto done;
  }
  printf("profile %s%s\n", inputs.paths[0],
         compressed(inputs.paths[0]) ? " (zstd-compressed)" : "");
  if (p.info.argc) {
    printf("program");
    for (int i = 0; i < p.info.argc; i++)
      printf(" %s", p.info.argv[i]);
    printf("\n");
  }
  ms_psnap_lossy_summary lossy;
  ms_psnap_profile_lossy(&p, &lossy);
  printf("%" PRIu64 " accesses, %u sites (%u lossy", p.access_count, p.site_count, lossy.sites);
  if (lossy.sites)
    printf(": %.1f%% of the accesses",
           100.0 * (double)lossy.accesses / (double)(p.access_count ? p.access_count : 1));
  if (p.blocks)
    printf("), %u threads of ranks in %u blocks (order lossy in %u), selection %s",
           p.info.thread_count, p.thread_count, lossy.threads, p.selection ? p.selection : "all");
  else
    printf("), %u threads (order lossy in %u), selection %s", p.thread_count, lossy.threads,
           p.selection ? p.selection : "all");
  if (p.has_excluded) {
    uint64_t stream = p.access_count + p.excluded;
    printf(" (%" PRIu64 " accesses of the stream left out, %.1f%%)", p.excluded,
           stream ? 100.0 * (double)p.excluded / (double)stream : 0.0);
  }
  printf("\n\n");
  for (uint32_t s = 0; s < p.site_count; s++)
    order[s] = s;
  sorting = &p;
  qsort(order, p.site_count, sizeof *order, by_weight);
  if (!selecting)
    printf("site     share        count kind size class              stored   where\n");
  uint32_t shown = 0;
  for (uint32_t k = 0; k < p.site_count; k++) {
    uint32_t s = order[k];
    if (selecting && !mask[s]) continue;
    if (!selecting && !all && shown == 40) {
      printf("... %u more sites (--all lists them)\n", p.site_count - shown);
      break;
    }
    show_site(&p, s, selecting);
    shown++;
  }
  for (uint32_t t = 0; t < p.thread_count; t++) {
    const ms_psnap_thread_order *o = &p.threads[t];
    char label[160];
    if (p.blocks) {
      /* the block's threads and ranks, as in the file */
      char threads[40], ranks[40];
      set_text(threads, sizeof threads, o->thread, o->thread_step, o->thread_members);
      set_text(ranks, sizeof ranks, o->rank, o->rank_step, o->rank_members);
      snprintf(label, sizeof label, "block %u (threads %s of ranks %s)", t, threads, ranks);
    } else
      snprintf(label, sizeof label, "thread %u", t);
    if (o->lossy) {
      printf("\n%s: %" PRIu64 " accesses, order lossy (%u path counts", label, o->accesses,
             o->transition_count);
      if (o->period_length) printf(" in periods of %" PRIu64 " accesses", o->period_length);
      printf(")\n");
      continue;
    }
    char *text = ms_expr_string(&o->order, MS_EXPR_SITES);
    if (!text) continue;
    size_t cut = selecting ? strlen(text) : 200;
    printf("\n%s: %" PRIu64 " accesses, order %.*s%s\n", label, o->accesses, (int)cut, text,
           strlen(text) > cut ? "..." : "");
    free(text);
  }
done:
  free(mask);
  free(order);
  ms_psnap_profile_free(&p);
  return status;
}

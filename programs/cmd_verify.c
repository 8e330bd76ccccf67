/* memsnap verify PROFILE.psnap (TRACE | -- PROGRAM ARGS) [--no-cache] [--sites N]
 *
 * Measures a profile against the stream it came from. The trace is filtered by the
 * profile's selection (its `selection` line: all, the program's executable, or functions
 * and lines; lib/psnap/select.c); per thread, each access is compared with
 * the profile's replay of that thread (address, size and kind): the exact-match rate
 * overall and per site, and the first divergence with its site and index. Then the
 * hit rates of the trace and of the whole replay (what `memsnap sim PROFILE` simulates)
 * on the 46 evaluation hierarchies of the catalog: mean and max absolute difference per
 * level, in percentage points.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "evaluation.h"
#include "memsnap/cache.h"
#include "memsnap/psnap.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap verify PROFILE.psnap (TRACE | -- PROGRAM ARGS) [--no-cache]\n"
              "  --no-cache   skip the hit-rate comparison on the 46 hierarchies\n"
              "  --sites N    list the N sites with the lowest match rate (default 10)\n");
}

typedef struct thread_replay {
  ms_source *source;
  ms_batch batch;
  size_t next;
  uint64_t index;
} thread_replay;

typedef struct verify_state {
  ms_psnap_profile *profile;
  thread_replay *threads;
  uint64_t *site_total, *site_exact;
  uint64_t compared, exact, extra, index, left_out;
  int diverged;
  char divergence[768];
  ms_psnap_filter *filter; /* the profile's selection, applied to the trace */
} verify_state;

static const ms_access *next_replayed(thread_replay *t) {
  if (t->next == t->batch.count) {
    int n = ms_source_next(t->source, &t->batch);
    if (n <= 0) return NULL;
    t->next = 0;
  }
  return &t->batch.accesses[t->next++];
}

static void describe_site(const ms_psnap_profile *p, uint32_t s, char *buf, size_t size) {
  ms_site_describe(ms_site_table_get(p->info.sites, p->sites[s].trace_site), buf, size);
}

static void compare(verify_state *v, const ms_access *a) {
  ms_psnap_profile *p = v->profile;
  uint64_t index = v->index++;
  if (a->thread >= p->thread_count) {
    v->extra++;
    return;
  }
  thread_replay *t = &v->threads[a->thread];
  const ms_access *r = next_replayed(t);
  uint64_t thread_index = t->index++;
  v->compared++;
  if (!r) {
    v->extra++;
    return;
  }
  int same = r->address == a->address && r->size == a->size && r->kind == a->kind;
  uint32_t s = r->site < p->site_count ? r->site : 0;
  v->site_total[s]++;
  v->site_exact[s] += same;
  v->exact += same;
  if (!same && !v->diverged) {
    char where[512];
    describe_site(p, s, where, sizeof where);
    snprintf(v->divergence, sizeof v->divergence,
             "access %" PRIu64 " (thread %u, its access %" PRIu64 ", the %" PRIu64
             "th of site s%u %s): trace %s 0x%" PRIx64 " %u, profile %s 0x%" PRIx64 " %u",
             index, a->thread, thread_index, v->site_total[s] - 1, s, where,
             ms_access_kind_name((ms_access_kind)a->kind), a->address, a->size,
             ms_access_kind_name((ms_access_kind)r->kind), r->address, r->size);
    v->diverged = 1;
  }
}

int cmd_verify(int argc, char **argv) {
  static const struct option options[] = {{"no-cache", no_argument, NULL, 'N'},
                                          {"sites", required_argument, NULL, 'S'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  int no_cache = 0, c;
  uint64_t list_sites = 10;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
    switch (c) {
    case 'N': no_cache = 1; break;
    case 'S':
      if (cli_parse_count(optarg, &list_sites) < 0) {
        cli_error(argv[0], "--sites: expected a count, got '%s'", optarg);
        return 2;
      }
      break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count < 1 || inputs.count > 2 || (inputs.count == 2) == (inputs.program_argc > 0)) {
    cli_error(argv[0], "give a profile and its trace (or -- PROGRAM ARGS)");
    return 2;
  }
  ms_psnap_profile profile, copy;
  if (ms_psnap_profile_load(inputs.paths[0], &profile) < 0) return cli_fail(argv[0]);
  int status = 1, count = MS_HIERARCHY_CATALOG_EVALUATION;
  verify_state v = {.profile = &profile};
  ms_source *trace = NULL, *whole = NULL;
  ms_hierarchy_set *sets[2] = {NULL, NULL};
  ms_hierarchy_config *configs = calloc((size_t)count, sizeof *configs);
  evaluation_rates *rates = calloc(2, sizeof *rates);
  v.threads = calloc(profile.thread_count + 1, sizeof *v.threads);
  v.site_total = calloc(profile.site_count + 1, sizeof *v.site_total);
  v.site_exact = calloc(profile.site_count + 1, sizeof *v.site_exact);
  ms_batch batch = {0};
  if (!configs || !rates || !v.threads || !v.site_total || !v.site_exact ||
      ms_batch_init(&batch, 0) < 0) {
    cli_error(argv[0], "out of memory");
    goto done;
  }
  if (ms_psnap_filter_new(profile.selection, &v.filter) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  for (uint32_t t = 0; t < profile.thread_count; t++) {
    uint8_t *mask = calloc(profile.site_count + 1, 1);
    for (uint32_t s = 0; mask && s < profile.site_count; s++)
      mask[s] = profile.sites[s].thread == t;
    ms_psnap_replay_options o = {.site_mask = mask};
    int rc = ms_psnap_profile_load(inputs.paths[0], &copy);
    if (rc == 0) rc = ms_psnap_replay_open(&copy, &o, &v.threads[t].source);
    free(mask);
    if (rc < 0 || ms_batch_init(&v.threads[t].batch, 0) < 0) {
      cli_fail(argv[0]);
      goto done;
    }
  }
  if (!no_cache) {
    if (evaluation_configs(argv[0], configs) < 0) goto done;
    if (ms_hierarchy_set_new(configs, count, &sets[0]) < 0 ||
        ms_hierarchy_set_new(configs, count, &sets[1]) < 0) {
      cli_fail(argv[0]);
      goto done;
    }
  }
  trace = cli_open_source(argv[0], inputs.count == 2 ? inputs.paths[1] : NULL, inputs.program_argc,
                          inputs.program_argv);
  if (!trace) goto done;
  ms_batch kept = {0};
  if (ms_batch_init(&kept, 0) < 0) goto done;
  int n;
  while ((n = ms_source_next(trace, &batch)) > 0) {
    kept.count = 0;
    for (size_t i = 0; i < batch.count; i++) {
      const ms_access *a = &batch.accesses[i];
      int keep = ms_psnap_filter_keeps(v.filter, ms_source_info(trace)->sites, a->site);
      if (keep < 0) n = -1;
      if (keep <= 0) {
        v.left_out += keep == 0;
        continue;
      }
      compare(&v, a);
      kept.accesses[kept.count++] = *a;
    }
    if (n < 0) break;
    if (sets[0] && kept.count && ms_hierarchy_set_access_batch(sets[0], &kept) < 0) n = -1;
    if (n < 0) break;
  }
  ms_batch_free(&kept);
  if (n < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  uint64_t missing = 0;
  for (uint32_t t = 0; t < profile.thread_count; t++)
    while (next_replayed(&v.threads[t]))
      missing++;
  if (sets[1]) {
    if (ms_psnap_profile_load(inputs.paths[0], &copy) < 0 ||
        ms_psnap_replay_open(&copy, NULL, &whole) < 0) {
      cli_fail(argv[0]);
      goto done;
    }
    while ((n = ms_source_next(whole, &batch)) > 0)
      if (ms_hierarchy_set_access_batch(sets[1], &batch) < 0) break;
    if (n != 0 || ms_hierarchy_set_flush(sets[0]) < 0 || ms_hierarchy_set_flush(sets[1]) < 0) {
      cli_fail(argv[0]);
      goto done;
    }
  }
  uint64_t total = v.compared + missing;
  printf("profile %s: %" PRIu64 " accesses; trace: %" PRIu64 " accesses selected, %" PRIu64
         " left out (selection %s)\n",
         inputs.paths[0], profile.access_count, v.compared, v.left_out,
         profile.selection ? profile.selection : "all");
  printf("exact match: %.4f%% (%" PRIu64 " of %" PRIu64 ")\n",
         total ? 100.0 * (double)v.exact / (double)total : 100.0, v.exact, total);
  if (v.diverged)
    printf("first divergence: %s\n", v.divergence);
  else if (v.extra || missing)
    printf("first divergence: the streams differ in length (%" PRIu64 " more in the trace, %" PRIu64
           " more in the profile)\n",
           v.extra, missing);
  else
    printf("first divergence: none\n");
  /* per site: the least exact first */
  uint64_t listed = 0;
  printf("sites (lowest match rate first):\n");
  for (int pass = 0; pass < 2 && listed < list_sites; pass++)
    for (uint32_t s = 0; s < profile.site_count && listed < list_sites; s++) {
      int exact = v.site_exact[s] == v.site_total[s];
      if (exact != pass) continue;
      char where[512];
      describe_site(&profile, s, where, sizeof where);
      printf("  s%-5u %8.4f%% of %10" PRIu64 "  %-6s %s\n", s,
             v.site_total[s] ? 100.0 * (double)v.site_exact[s] / (double)v.site_total[s] : 100.0,
             v.site_total[s], profile.sites[s].lossy ? "lossy" : "exact", where);
      listed++;
    }
  if (sets[0]) {
    evaluation_hit_rates(sets[0], rates[0]);
    evaluation_hit_rates(sets[1], rates[1]);
    evaluation_level levels[MS_HIERARCHY_MAX_LEVELS];
    evaluation_differences(configs, rates[0], rates[1], levels);
    printf("hit rates on the %d evaluation hierarchies (absolute difference, percentage points):\n",
           count);
    for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++)
      if (levels[l].hierarchies)
        printf("  L%d mean %.3f max %.3f (%d hierarchies)\n", l + 1, levels[l].mean * 100.0,
               levels[l].max * 100.0, levels[l].hierarchies);
  }
  status = 0;
done:
  for (uint32_t t = 0; v.threads && t < profile.thread_count; t++) {
    ms_source_destroy(v.threads[t].source);
    ms_batch_free(&v.threads[t].batch);
  }
  if (trace) ms_source_destroy(trace);
  if (whole) ms_source_destroy(whole);
  ms_hierarchy_set_free(sets[0]);
  ms_hierarchy_set_free(sets[1]);
  ms_batch_free(&batch);
  free(configs);
  free(rates);
  ms_psnap_filter_free(v.filter);
  free(v.threads);
  free(v.site_total);
  free(v.site_exact);
  ms_psnap_profile_free(&profile);
  return status;
}

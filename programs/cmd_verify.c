/* memsnap verify PROFILE.psnap (TRACE | -- PROGRAM ARGS) [--no-cache] [--sites N]
 *
 * Measures a profile against the stream it came from. The trace is filtered by the
 * profile's selection (its `selection` line: all, the program's executable, or functions
 * and lines; lib/psnap/select.c); per thread, each access is compared with
 * the profile's replay of that thread (address, size and kind): the exact-match rate
 * overall and per site, and the first divergence with its site and index. Each site's own
 * accesses are also compared with its pattern alone, order aside (the k-th access of the
 * site in the trace with the k-th address of its pattern): where the order is lossy (a
 * walk over path counts) the streams part at once while every exact site may still be
 * exact, and this says so. Sites are matched by instruction address, thread, kind and
 * size, so that a live run whose site numbers differ is still compared. Then the
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
#include "report.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap verify PROFILE.psnap (TRACE | -- PROGRAM ARGS) [--no-cache]\n"
              "  --no-cache         skip the hit-rate comparison on the 46 hierarchies\n"
              "  --sites N          list the N sites with the lowest match rate (default 10)\n"
              "  -o, --output FILE  write the report to FILE (default: standard output; standard\n"
              "                     error for -- PROGRAM, whose standard output is its own)\n");
}

typedef struct thread_replay {
  ms_source *source;
  ms_batch batch;
  size_t next;
  uint64_t index;
} thread_replay;

/* A profile site's own sequence: exact sites step through their pattern, lossless ones read
 * their addresses; lossy sites (drawn from a histogram) are not compared this way. */
typedef struct site_sequence {
  ms_psnap_cursor strides;
  int ready;
  uint64_t next_address, position, stride_left;
  int64_t stride;
  uint64_t total, exact;
} site_sequence;

/* (pc, thread, kind, size) -> profile site, open addressing; key 0 is empty. */
typedef struct site_key {
  uint64_t pc, rest; /* rest: thread << 16 | kind << 8 | size, plus 1 << 40 when used */
  uint32_t site;
} site_key;

typedef struct verify_state {
  ms_psnap_profile *profile;
  thread_replay *threads;
  uint64_t *site_total, *site_exact;
  site_sequence *sequences;
  site_key *keys;
  uint32_t key_mask;
  uint64_t own_compared, own_exact, own_unmatched;
  uint64_t compared, exact, extra, index, left_out;
  int diverged;
  char divergence[1536];
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

static const char *ordinal_suffix(uint64_t n) {
  if (n % 100 >= 11 && n % 100 <= 13) return "th";
  return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

static uint64_t key_hash(uint64_t pc, uint64_t rest) {
  uint64_t x = pc * 0x9e3779b97f4a7c15ULL ^ rest * 0xbf58476d1ce4e5b9ULL;
  return x ^ x >> 29;
}

static uint64_t key_rest(uint32_t thread, unsigned kind, unsigned size) {
  return (uint64_t)1 << 40 | (uint64_t)thread << 16 | (uint64_t)kind << 8 | size;
}

static int build_site_keys(verify_state *v) {
  const ms_psnap_profile *p = v->profile;
  uint32_t capacity = 16;
  while (capacity < 2 * (uint64_t)p->site_count + 2)
    capacity *= 2;
  v->keys = calloc(capacity, sizeof *v->keys);
  v->sequences = calloc(p->site_count + 1, sizeof *v->sequences);
  if (!v->keys || !v->sequences) return -1;
  v->key_mask = capacity - 1;
  for (uint32_t s = 0; s < p->site_count; s++) {
    const ms_psnap_site *site = &p->sites[s];
    const ms_site *where = ms_site_table_get(p->info.sites, site->trace_site);
    uint64_t pc = where ? where->pc : 0, rest = key_rest(site->thread, site->kind, site->size);
    uint64_t j = key_hash(pc, rest) & v->key_mask;
    while (v->keys[j].rest && !(v->keys[j].pc == pc && v->keys[j].rest == rest))
      j = (j + 1) & v->key_mask;
    v->keys[j] = (site_key){pc, rest, s};
    if (!site->lossy || site->addresses) {
      site_sequence *q = &v->sequences[s];
      if (!site->addresses && ms_psnap_cursor_init(&q->strides, &site->pattern, 1) < 0) return -1;
      q->ready = 1;
      q->next_address = site->first_address;
    }
  }
  return 0;
}

/* The profile site of trace access a, or UINT32_MAX. */
static uint32_t profile_site_of(verify_state *v, const ms_site_table *trace_sites,
                                const ms_access *a) {
  const ms_site *where = ms_site_table_get(trace_sites, a->site);
  uint64_t pc = where ? where->pc : 0, rest = key_rest(a->thread, a->kind, a->size);
  for (uint64_t j = key_hash(pc, rest) & v->key_mask; v->keys[j].rest; j = (j + 1) & v->key_mask)
    if (v->keys[j].pc == pc && v->keys[j].rest == rest) return v->keys[j].site;
  return UINT32_MAX;
}

/* The trace access a against the next address of its site's own sequence. */
static void compare_own(verify_state *v, const ms_site_table *trace_sites, const ms_access *a) {
  uint32_t s = profile_site_of(v, trace_sites, a);
  if (s == UINT32_MAX) {
    v->own_unmatched++;
    return;
  }
  site_sequence *q = &v->sequences[s];
  if (!q->ready) return; /* lossy */
  const ms_psnap_site *site = &v->profile->sites[s];
  uint64_t expected;
  if (site->addresses) {
    expected = q->position < site->count ? site->addresses[q->position] : 0;
  } else {
    expected = q->next_address;
    if (q->stride_left == 0)
      q->stride_left = ms_psnap_cursor_run(&q->strides, UINT64_MAX, &q->stride);
    q->next_address += (uint64_t)q->stride;
    q->stride_left--;
  }
  int same = q->position < site->count && expected == a->address;
  q->position++;
  q->total++;
  q->exact += same;
  v->own_compared++;
  v->own_exact += same;
}

static void compare(verify_state *v, const ms_site_table *trace_sites, const ms_access *a) {
  ms_psnap_profile *p = v->profile;
  uint64_t index = v->index++;
  compare_own(v, trace_sites, a);
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
    char mine[512], theirs[64] = "";
    describe_site(p, s, mine, sizeof mine);
    uint32_t ts = profile_site_of(v, trace_sites, a);
    if (ts == UINT32_MAX)
      snprintf(theirs, sizeof theirs, "a site not in the profile");
    else
      snprintf(theirs, sizeof theirs, "site s%u", ts);
    snprintf(v->divergence, sizeof v->divergence,
             "access %" PRIu64 " (thread %u, its access %" PRIu64 "): trace %s 0x%" PRIx64
             " %u of %s, profile %s 0x%" PRIx64 " %u, the %" PRIu64 "%s access of site s%u %s",
             index, a->thread, thread_index, ms_access_kind_name((ms_access_kind)a->kind),
             a->address, a->size, theirs, ms_access_kind_name((ms_access_kind)r->kind), r->address,
             r->size, v->site_total[s], ordinal_suffix(v->site_total[s]), s, mine);
    v->diverged = 1;
  }
}

int cmd_verify(int argc, char **argv) {
  static const struct option options[] = {{"no-cache", no_argument, NULL, 'N'},
                                          {"sites", required_argument, NULL, 'S'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  int no_cache = 0, c;
  const char *output = NULL;
  uint64_t list_sites = 10;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) != -1) {
    switch (c) {
    case 'N': no_cache = 1; break;
    case 'o': output = optarg; break;
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
  report_observed observed = {0};
  ms_output report;
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
  if (build_site_keys(&v) < 0) {
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
                          inputs.program_argv, NULL);
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
      compare(&v, ms_source_info(trace)->sites, a);
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
  if (report_observe(argv[0], &observed, ms_source_info(trace),
                     inputs.program_argc ? NULL : inputs.paths[1]) < 0 ||
      report_open(argv[0], &report, output, inputs.program_argc > 0) < 0)
    goto done;
  FILE *out = report.file;
  report_write_observed(out, &observed);
  fprintf(out,
          "profile %s: %" PRIu64 " accesses; trace: %" PRIu64 " accesses selected, %" PRIu64
          " left out (selection %s)\n",
          inputs.paths[0], profile.access_count, v.compared, v.left_out,
          profile.selection ? profile.selection : "all");
  fprintf(out, "exact match: %.4f%% (%" PRIu64 " of %" PRIu64 ")\n",
          total ? 100.0 * (double)v.exact / (double)total : 100.0, v.exact, total);
  if (v.diverged)
    fprintf(out, "first divergence: %s\n", v.divergence);
  else if (v.extra || missing)
    fprintf(out,
            "first divergence: the streams differ in length (%" PRIu64
            " more in the trace, %" PRIu64 " more in the profile)\n",
            v.extra, missing);
  else
    fprintf(out, "first divergence: none\n");
  /* each site's own accesses, order aside */
  uint32_t exact_sites = 0, whole_sites = 0;
  for (uint32_t s = 0; s < profile.site_count; s++)
    if (v.sequences[s].ready && v.sequences[s].total) {
      exact_sites++;
      whole_sites += v.sequences[s].exact == v.sequences[s].total &&
                     v.sequences[s].total == profile.sites[s].count;
    }
  fprintf(out,
          "exact match per site (each site's own accesses, order aside): %.4f%% (%" PRIu64
          " of %" PRIu64 " accesses of exact sites); %u of %u exact sites match entirely\n",
          v.own_compared ? 100.0 * (double)v.own_exact / (double)v.own_compared : 100.0,
          v.own_exact, v.own_compared, whole_sites, exact_sites);
  if (v.own_unmatched)
    fprintf(out,
            "  %" PRIu64
            " trace accesses from sites the profile does not have (instruction address,"
            " thread, kind and size)\n",
            v.own_unmatched);
  for (uint32_t t = 0; t < profile.thread_count; t++)
    if (profile.threads[t].lossy)
      fprintf(out,
              "  thread %u: the profile's order is lossy (path counts), so the streams part in"
              " program order\n",
              t);
  /* per site: the least exact first */
  uint64_t listed = 0;
  fprintf(out, "sites (lowest match rate first; in order, then own accesses):\n");
  for (int pass = 0; pass < 2 && listed < list_sites; pass++)
    for (uint32_t s = 0; s < profile.site_count && listed < list_sites; s++) {
      int exact = v.site_exact[s] == v.site_total[s];
      if (exact != pass) continue;
      char where[512], own[32] = "     -   ";
      describe_site(&profile, s, where, sizeof where);
      if (v.sequences[s].ready)
        snprintf(own, sizeof own, "%8.4f%%",
                 v.sequences[s].total
                     ? 100.0 * (double)v.sequences[s].exact / (double)v.sequences[s].total
                     : 100.0);
      fprintf(out, "  s%-5u %8.4f%% %s of %10" PRIu64 "  %-6s %s\n", s,
              v.site_total[s] ? 100.0 * (double)v.site_exact[s] / (double)v.site_total[s] : 100.0,
              own, v.site_total[s], profile.sites[s].lossy ? "lossy" : "exact", where);
      listed++;
    }
  if (sets[0]) {
    evaluation_hit_rates(sets[0], rates[0]);
    evaluation_hit_rates(sets[1], rates[1]);
    evaluation_level levels[MS_HIERARCHY_MAX_LEVELS];
    evaluation_differences(configs, rates[0], rates[1], levels);
    fprintf(
        out,
        "hit rates on the %d evaluation hierarchies (absolute difference, percentage points):\n",
        count);
    for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++)
      if (levels[l].hierarchies)
        fprintf(out, "  L%d mean %.3f max %.3f (%d hierarchies)\n", l + 1, levels[l].mean * 100.0,
                levels[l].max * 100.0, levels[l].hierarchies);
  }
  if (report_finish(argv[0], &report, 0) < 0) goto done;
  status = cli_program_status(trace);
done:
  report_observed_free(&observed);
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
  for (uint32_t s = 0; v.sequences && s < profile.site_count; s++)
    if (v.sequences[s].ready && !profile.sites[s].addresses)
      ms_psnap_cursor_free(&v.sequences[s].strides);
  free(v.sequences);
  free(v.keys);
  ms_psnap_profile_free(&profile);
  return status;
}

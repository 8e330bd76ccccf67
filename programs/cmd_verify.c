/* memsnap verify PROFILE.psnap (TRACE | -- PROGRAM ARGS) [--no-cache] [--whole] [--sites N]
 * [--json]
 *
 * A profile measured against the stream it came from by ms_psnap_verify (memsnap/verify.h):
 * exact matches in program order and per site, the first divergence, and the hit rates on
 * the 46 evaluation hierarchies. This file opens the inputs and prints the result.
 */
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memsnap/cache.h"
#include "memsnap/evaluation.h"
#include "memsnap/verify.h"
#include "report.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap verify PROFILE.psnap (TRACE | -- PROGRAM ARGS) [--no-cache]\n"
              "  --no-cache         skip the hit-rate comparison on the 46 hierarchies\n"
              "  --whole            compare the hit rates of the whole run: the accesses the\n"
              "                     profile's selection left out (libc, the loader) from the\n"
              "                     trace on both sides, the replay in the selection's place\n"
              "  --sites N          list the N sites with the lowest match rate (default 10)\n"
              "  --json             the report as a JSON object\n"
              "  -o, --output FILE  write the report to FILE (default: standard output; standard\n"
              "                     error for -- PROGRAM, whose standard output is its own)\n");
}

static double percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 100.0;
}

/* The sites listed: the least exact in program order first, at most `limit`. */
/* The hierarchy whose level l differs most between the trace and the replay (-1: none). */
static int largest_difference(const ms_verify_result *r, int l) {
  int worst = -1;
  double largest = -1.0;
  for (int h = 0; h < MS_EVALUATION_COUNT; h++) {
    if (r->trace_rates.levels[h] <= l || r->replay_rates.levels[h] <= l) continue;
    double d = r->trace_rates.hit_rate[h][l] - r->replay_rates.hit_rate[h][l];
    if (d < 0) d = -d;
    if (d > largest) largest = d, worst = h;
  }
  return worst;
}

static uint32_t listed_sites(const ms_verify_result *r, uint64_t limit, uint32_t *order) {
  uint32_t listed = 0;
  for (int pass = 0; pass < 2 && listed < limit; pass++)
    for (uint32_t s = 0; s < r->profile.site_count && listed < limit; s++)
      if ((r->sites[s].exact == r->sites[s].total) == pass) order[listed++] = s;
  return listed;
}

static void write_text(FILE *out, const char *profile_path, const ms_verify_result *r,
                       uint64_t list_sites) {
  const ms_psnap_profile *profile = &r->profile;
  fprintf(out,
          "profile %s: %" PRIu64 " accesses; trace: %" PRIu64 " accesses selected, %" PRIu64
          " left out (selection %s)\n",
          profile_path, profile->access_count, r->compared, r->left_out,
          profile->selection ? profile->selection : "all");
  fprintf(out, "exact match: %.4f%% (%" PRIu64 " of %" PRIu64 ")\n", percent(r->exact, r->total),
          r->exact, r->total);
  if (r->diverged)
    fprintf(out, "first divergence: %s\n", r->divergence);
  else if (r->extra || r->missing)
    fprintf(out,
            "first divergence: the streams differ in length (%" PRIu64
            " more in the trace, %" PRIu64 " more in the profile)\n",
            r->extra, r->missing);
  else
    fprintf(out, "first divergence: none\n");
  fprintf(out,
          "exact match per site (each site's own accesses, order aside): %.4f%% (%" PRIu64
          " of %" PRIu64 " accesses of exact sites); %u of %u exact sites match entirely\n",
          percent(r->own_exact, r->own_compared), r->own_exact, r->own_compared, r->whole_sites,
          r->exact_sites);
  if (r->own_unmatched)
    fprintf(out,
            "  %" PRIu64
            " trace accesses from sites the profile does not have (instruction address,"
            " thread, kind and size)\n",
            r->own_unmatched);
  for (uint32_t t = 0; t < profile->thread_count; t++)
    if (profile->threads[t].lossy)
      fprintf(out,
              "  thread %u: the profile's order is lossy (path counts), so the streams part in"
              " program order\n",
              t);
  fprintf(out, "sites (lowest match rate first; in order, then own accesses):\n");
  uint32_t *order = malloc((profile->site_count + 1) * sizeof *order);
  uint32_t listed = order ? listed_sites(r, list_sites, order) : 0;
  for (uint32_t i = 0; i < listed; i++) {
    uint32_t s = order[i];
    const ms_verify_site *site = &r->sites[s];
    char where[512], own[32] = "     -   ";
    ms_verify_describe_site(r, s, where, sizeof where);
    if (site->own) snprintf(own, sizeof own, "%8.4f%%", percent(site->own_exact, site->own_total));
    fprintf(out, "  s%-5u %8.4f%% %s of %10" PRIu64 "  %-6s %s\n", s,
            percent(site->exact, site->total), own, site->total,
            profile->sites[s].lossy ? "lossy" : "exact", where);
  }
  free(order);
  if (r->has_rates) {
    fprintf(out,
            "hit rates on the %d evaluation hierarchies (absolute difference, percentage points"
            "%s):\n",
            MS_EVALUATION_COUNT,
            r->whole ? "; whole run: the accesses left out from the trace on both sides" : "");
    for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++) {
      if (!r->levels[l].count) continue;
      fprintf(out, "  L%d mean %.3f max %.3f (%d hierarchies", l + 1, r->levels[l].mean * 100.0,
              r->levels[l].max * 100.0, r->levels[l].count);
      /* where the largest difference is: a level that sees few accesses (an L2 behind a
       * 99.9% L1) moves far on a few misses */
      int h = largest_difference(r, l);
      if (h >= 0)
        fprintf(out, "; largest on %s: trace %.2f%%, replay %.2f%%",
                ms_hierarchy_catalog_get(h)->name, r->trace_rates.hit_rate[h][l] * 100.0,
                r->replay_rates.hit_rate[h][l] * 100.0);
      fprintf(out, ")\n");
    }
  }
}

static json_object *json_u64(uint64_t value) { return json_object_new_int64((int64_t)value); }

static void write_json(FILE *out, const char *profile_path, const ms_verify_result *r,
                       uint64_t list_sites, const report_observed *observed) {
  const ms_psnap_profile *profile = &r->profile;
  json_object *root = json_object_new_object();
  report_add_observed_json(root, observed);
  json_object_object_add(root, "profile", json_object_new_string(profile_path));
  json_object_object_add(root, "profile_accesses", json_u64(profile->access_count));
  json_object_object_add(root, "selection",
                         json_object_new_string(profile->selection ? profile->selection : "all"));
  json_object_object_add(root, "selected", json_u64(r->compared));
  json_object_object_add(root, "left_out", json_u64(r->left_out));
  json_object_object_add(root, "whole_run", json_object_new_boolean(r->whole));
  json_object *exact = json_object_new_object();
  json_object_object_add(exact, "percent", json_object_new_double(percent(r->exact, r->total)));
  json_object_object_add(exact, "exact", json_u64(r->exact));
  json_object_object_add(exact, "total", json_u64(r->total));
  json_object_object_add(root, "exact_match", exact);
  json_object_object_add(root, "first_divergence",
                         r->diverged ? json_object_new_string(r->divergence) : NULL);
  json_object_object_add(root, "more_in_trace", json_u64(r->extra));
  json_object_object_add(root, "more_in_profile", json_u64(r->missing));
  json_object *own = json_object_new_object();
  json_object_object_add(own, "percent",
                         json_object_new_double(percent(r->own_exact, r->own_compared)));
  json_object_object_add(own, "exact", json_u64(r->own_exact));
  json_object_object_add(own, "compared", json_u64(r->own_compared));
  json_object_object_add(own, "unmatched", json_u64(r->own_unmatched));
  json_object_object_add(own, "exact_sites", json_object_new_int64(r->exact_sites));
  json_object_object_add(own, "sites_matching_entirely", json_object_new_int64(r->whole_sites));
  json_object_object_add(root, "per_site_own", own);
  json_object *lossy = json_object_new_array();
  for (uint32_t t = 0; t < profile->thread_count; t++)
    if (profile->threads[t].lossy) json_object_array_add(lossy, json_object_new_int64(t));
  json_object_object_add(root, "threads_with_lossy_order", lossy);
  json_object *sites = json_object_new_array();
  uint32_t *order = malloc((profile->site_count + 1) * sizeof *order);
  uint32_t listed = order ? listed_sites(r, list_sites, order) : 0;
  for (uint32_t i = 0; i < listed; i++) {
    uint32_t s = order[i];
    const ms_verify_site *site = &r->sites[s];
    char where[512];
    ms_verify_describe_site(r, s, where, sizeof where);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "site", json_object_new_int64(s));
    json_object_object_add(o, "where", json_object_new_string(where));
    json_object_object_add(o, "lossy", json_object_new_boolean(profile->sites[s].lossy));
    json_object_object_add(o, "accesses", json_u64(site->total));
    json_object_object_add(o, "exact", json_u64(site->exact));
    json_object_object_add(o, "percent", json_object_new_double(percent(site->exact, site->total)));
    if (site->own) {
      json_object_object_add(o, "own_accesses", json_u64(site->own_total));
      json_object_object_add(o, "own_exact", json_u64(site->own_exact));
    }
    json_object_array_add(sites, o);
  }
  free(order);
  json_object_object_add(root, "sites", sites);
  if (r->has_rates) {
    json_object *levels = json_object_new_array();
    for (int l = 0; l < MS_HIERARCHY_MAX_LEVELS; l++) {
      if (!r->levels[l].count) continue;
      json_object *o = json_object_new_object();
      json_object_object_add(o, "level", json_object_new_int(l + 1));
      json_object_object_add(o, "hierarchies", json_object_new_int(r->levels[l].count));
      json_object_object_add(o, "mean_points", json_object_new_double(r->levels[l].mean * 100.0));
      json_object_object_add(o, "max_points", json_object_new_double(r->levels[l].max * 100.0));
      int h = largest_difference(r, l);
      if (h >= 0) {
        json_object_object_add(o, "max_hierarchy",
                               json_object_new_string(ms_hierarchy_catalog_get(h)->name));
        json_object_object_add(o, "max_trace_percent",
                               json_object_new_double(r->trace_rates.hit_rate[h][l] * 100.0));
        json_object_object_add(o, "max_replay_percent",
                               json_object_new_double(r->replay_rates.hit_rate[h][l] * 100.0));
      }
      json_object_array_add(levels, o);
    }
    json_object_object_add(root, "hit_rate_differences", levels);
  }
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(root,
                                         JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
}

int cmd_verify(int argc, char **argv) {
  static const struct option options[] = {{"no-cache", no_argument, NULL, 'N'},
                                          {"sites", required_argument, NULL, 'S'},
                                          {"whole", no_argument, NULL, 'W'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"json", no_argument, NULL, 'j'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  ms_verify_options verify_options = {0};
  int json = 0, c;
  const char *output = NULL;
  uint64_t list_sites = 10;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) != -1) {
    switch (c) {
    case 'N': verify_options.no_cache = 1; break;
    case 'W': verify_options.whole = 1; break;
    case 'o': output = optarg; break;
    case 'j': json = 1; break;
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
  /* the profile first: a bad one is reported before a program is started for nothing */
  ms_psnap_profile check;
  if (ms_psnap_profile_load(inputs.paths[0], &check) < 0) return cli_fail(argv[0]);
  int picked = ms_psnap_profile_pick(&check, cli_rank, cli_thread);
  ms_psnap_profile_free(&check);
  if (picked < 0) {
    cli_error(argv[0], "%s: %s", inputs.paths[0], ms_error_message());
    return 2;
  }
  verify_options.pick_rank = cli_rank >= 0,
  verify_options.rank = (uint32_t)(cli_rank >= 0 ? cli_rank : 0);
  verify_options.pick_thread = cli_thread >= 0;
  verify_options.thread = (uint32_t)(cli_thread >= 0 ? cli_thread : 0);
  ms_open_options trace_options;
  cli_open_options_init(&trace_options);
  trace_options.pick_rank = trace_options.pick_thread = 0; /* they pick in the profile */
  int status = 1;
  ms_verify_result result = {0};
  report_observed observed = {0};
  ms_output report;
  ms_source *trace = cli_open_source(argv[0], inputs.count == 2 ? inputs.paths[1] : NULL,
                                     inputs.program_argc, inputs.program_argv, &trace_options);
  if (!trace) goto done;
  if (ms_psnap_verify(inputs.paths[0], trace, &verify_options, &result) < 0) {
    cli_fail(argv[0]);
    goto done;
  }
  if (report_observe(argv[0], &observed, ms_source_info(trace),
                     inputs.program_argc ? NULL : inputs.paths[1]) < 0 ||
      report_open(argv[0], &report, output, inputs.program_argc > 0) < 0)
    goto done;
  if (json) {
    write_json(report.file, inputs.paths[0], &result, list_sites, &observed);
  } else {
    report_write_observed(report.file, &observed);
    write_text(report.file, inputs.paths[0], &result, list_sites);
  }
  if (report_finish(argv[0], &report, 0) < 0) goto done;
  status = cli_program_status(trace);
done:
  report_observed_free(&observed);
  ms_verify_result_free(&result);
  if (trace) ms_source_destroy(trace);
  return status;
}

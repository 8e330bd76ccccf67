/* A profile as JSON (ms_psnap_profile_write_json): the summary and every site, for
 * programs that read what `memsnap show` says. The .psnap text stays the format; this is a
 * report of it. */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"
#include "memsnap/sites.h"

static json_object *u64(uint64_t value) { return json_object_new_int64((int64_t)value); }

static json_object *hex(uint64_t value) {
  char text[24];
  snprintf(text, sizeof text, "0x%" PRIx64, value);
  return json_object_new_string(text);
}

/* The expression's text, or null when it cannot be written (out of memory). */
static json_object *expression(const ms_expr *expr, ms_expr_kind kind) {
  char *text = ms_expr_string(expr, kind);
  json_object *o = text ? json_object_new_string(text) : NULL;
  free(text);
  return o;
}

/* {"first": F, "step": S, "count": N}: a set of threads or ranks */
static json_object *set_json(uint32_t first, uint32_t step, uint32_t members) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "first", json_object_new_int64(first));
  json_object_object_add(o, "step", json_object_new_int64(members > 1 ? step : 1));
  json_object_object_add(o, "count", json_object_new_int64(members ? members : 1));
  return o;
}

static json_object *site_json(const ms_psnap_profile *p, uint32_t s) {
  const ms_psnap_site *site = &p->sites[s];
  const ms_site *where = ms_site_table_get(p->info.sites, site->trace_site);
  char place[512];
  ms_site_describe(where, place, sizeof place);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "site", json_object_new_int64(s));
  json_object_object_add(o, "where", json_object_new_string(place));
  json_object_object_add(o, "thread", json_object_new_int(site->thread));
  if (p->blocks) {
    json_object_object_add(o, "threads",
                           set_json(site->thread, site->thread_step, site->thread_members));
    json_object_object_add(o, "ranks", set_json(site->rank, site->rank_step, site->rank_members));
    json_object_object_add(o, "per_thread", json_object_new_int64(site->per_thread));
    json_object_object_add(o, "per_rank", json_object_new_int64(site->per_rank));
  }
  json_object_object_add(o, "kind",
                         json_object_new_string(ms_access_kind_name((ms_access_kind)site->kind)));
  json_object_object_add(o, "size", json_object_new_int(site->size));
  json_object_object_add(o, "accesses", u64(site->count));
  json_object_object_add(o, "class", json_object_new_string(ms_stride_class_name(site->cls)));
  json_object_object_add(o, "storage",
                         json_object_new_string(site->addresses ? "lossless"
                                                : site->lossy   ? "lossy"
                                                                : "exact"));
  json_object_object_add(o, "first_address", hex(site->first_address));
  if (!site->lossy) {
    json_object_object_add(o, "pattern", expression(&site->pattern, MS_EXPR_STRIDES));
    return o;
  }
  json_object_object_add(o, "low", hex(site->low));
  json_object_object_add(o, "high", hex(site->high));
  json_object_object_add(o, "alignment", u64(site->alignment));
  json_object *strides = json_object_new_array();
  for (uint32_t i = 0; i < site->stride_count; i++) {
    json_object *stride = json_object_new_object();
    json_object_object_add(stride, "stride", json_object_new_int64(site->top_stride[i]));
    json_object_object_add(stride, "times", u64(site->top_stride_times[i]));
    json_object_array_add(strides, stride);
  }
  json_object_object_add(o, "strides", strides);
  if (site->tied) {
    json_object *tie = json_object_new_object();
    json_object_object_add(tie, "site", json_object_new_int64(site->tie_site));
    json_object_object_add(tie, "delta", json_object_new_int64(site->tie_delta));
    json_object_object_add(o, "tie", tie);
  }
  if (site->reuse_accesses) {
    uint64_t reused = 0;
    for (int size = 0; size < MS_PSNAP_REUSE_SIZES; size++)
      for (int b = 0; b < MS_PSNAP_REUSE_BINS; b++)
        reused += site->reuse[size][b];
    json_object *reuse = json_object_new_object();
    json_object_object_add(reuse, "measured", u64(site->reuse_accesses));
    json_object_object_add(reuse, "reused", u64(reused));
    json_object_object_add(reuse, "at_jumps", json_object_new_boolean(site->reuse_at_jumps));
    json_object_object_add(o, "reuse", reuse);
  }
  uint64_t lines = ms_psnap_site_new_lines(site), shared = 0;
  for (int b = 0; b < MS_PSNAP_SHARED_BINS; b++)
    shared += site->shared[b];
  if (site->shared_accesses || lines) {
    json_object *touches = json_object_new_object();
    json_object_object_add(touches, "measured", u64(site->shared_accesses));
    json_object_object_add(touches, "shared", u64(shared));
    json_object_object_add(touches, "new_lines", u64(lines));
    json_object_object_add(touches, "new_lines_next", u64(site->new_next));
    json_object_object_add(touches, "all", site->lines ? u64(site->lines) : NULL);
    json_object_object_add(o, "lines", touches);
  }
  return o;
}

int ms_psnap_profile_write_json(const ms_psnap_profile *p, const uint8_t *mask, FILE *out) {
  json_object *root = json_object_new_object();
  json_object *program = json_object_new_array();
  for (int i = 0; i < p->info.argc; i++)
    json_object_array_add(program, json_object_new_string(p->info.argv[i]));
  json_object_object_add(root, "program", program);
  json_object_object_add(root, "accesses", u64(p->access_count));
  json_object_object_add(root, "selection",
                         json_object_new_string(p->selection ? p->selection : "all"));
  json_object_object_add(root, "left_out", p->has_excluded ? u64(p->excluded) : NULL);
  ms_psnap_lossy_summary lossy;
  ms_psnap_profile_lossy(p, &lossy);
  json_object *summary = json_object_new_object();
  json_object_object_add(summary, "sites", json_object_new_int64(lossy.sites));
  json_object_object_add(summary, "accesses", u64(lossy.accesses));
  json_object_object_add(summary, "threads", json_object_new_int64(lossy.threads));
  json_object_object_add(root, "lossy", summary);
  json_object *sites = json_object_new_array();
  for (uint32_t s = 0; s < p->site_count; s++)
    if (!mask || mask[s]) json_object_array_add(sites, site_json(p, s));
  json_object_object_add(root, "sites", sites);
  json_object *threads = json_object_new_array();
  for (uint32_t t = 0; t < p->thread_count; t++) {
    const ms_psnap_thread_order *order = &p->threads[t];
    json_object *o = json_object_new_object();
    if (p->blocks) {
      /* a block: its threads and ranks, each with these accesses */
      json_object_object_add(o, "block", json_object_new_int64(t));
      json_object_object_add(o, "threads",
                             set_json(order->thread, order->thread_step, order->thread_members));
      json_object_object_add(o, "ranks",
                             set_json(order->rank, order->rank_step, order->rank_members));
    } else
      json_object_object_add(o, "thread", json_object_new_int64(t));
    json_object_object_add(o, "accesses", u64(order->accesses));
    json_object_object_add(o, "order_lossy", json_object_new_boolean(order->lossy));
    if (order->lossy) {
      json_object_object_add(o, "path_counts", json_object_new_int64(order->transition_count));
      json_object_object_add(o, "period", u64(order->period_length));
    } else {
      json_object_object_add(o, "order", expression(&order->order, MS_EXPR_SITES));
    }
    json_object_array_add(threads, o);
  }
  json_object_object_add(root, "threads", threads);
  int rc = fprintf(out, "%s\n",
                   json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE)) < 0
               ? ms_error_set(MS_ERR_IO, "cannot write the profile's JSON")
               : 0;
  json_object_put(root);
  return rc;
}

/* Memory skeletons from PSnAP profiles: loops, not tables (model in memsnap/skeleton.h).
 *
 * The generated program replays the profile as lib/psnap/replay.c does, threads one after
 * the other. Each exact site's stride pattern becomes an iterator: a function that keeps
 * its loop counters (one per nesting level of the pattern) and its place in static
 * storage and hands out the pattern's runs (a stride and how often it repeats) one at a
 * time, cyclically, as a coroutine (a switch that jumps back into its loops). The
 * site's address and current run live in locals of its thread's function, so that a
 * regular kernel's accesses cost registers and the iterator is called once per run. Sites
 * with equal patterns in lockstep in the order share one cursor, each at its distance from
 * it (stencil2d's five reads: 3 registers instead of 15, whose spills were 1.4 accesses of
 * the skeleton's own per data access); a site of one stride keeps only its address. Each
 * thread's order becomes nested loops over the sites' accesses; a lossy order (path
 * counts) a walk that draws each next site among its transitions left, with a xorshift
 * generator. Lossy sites draw addresses from their histograms (or step by their frequent
 * strides), lossless sites read their addresses from a table.
 *
 * Addresses are relative to regions: the sites' address ranges, joined when they overlap
 * or lie within REGION_GAP of each other. The regions are laid out one after the other in
 * one reservation, REGION_GAP apart at least, each at its low address modulo 2 MiB, so that
 * every address keeps its place within its 2 MiB chunk (the sets of every cache whose way
 * is at most 2 MiB).
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"
#include "memsnap/sites.h"
#include "memsnap/skeleton.h"

#define REGION_GAP ((uint64_t)1 << 20) /* ranges closer than this share a region */
#define CHUNK ((uint64_t)1 << 21)      /* offsets kept modulo 2 MiB */
#define RESERVATION_MAX ((uint64_t)1 << 46)
#define COLD_RATIO 64 /* sites with 1/64 of the busiest site's accesses: static state */

/* ---- Scaling ---- */

/* Copies node `id` of `from` (its written tree) into `to`, the repeat of an outermost
 * repetition (`outer`) times `scale`, rounded, at least 1. A group cut to one iteration
 * passes on what is left of the scale (scale * repeat) to its children, which are then
 * outermost too: stencil2d's `(... (s6..s11)^3364 ...)^8` at 0.01 is one sweep of 269
 * points, not one whole sweep (1/8 of the run). Nodes with steps keep their repeats. */
static int64_t copy_scaled(ms_expr *to, const ms_expr *from, uint32_t id, double scale,
                           bool outer) {
  ms_expr_node node = from->nodes[id];
  ms_expr_steps steps = ms_expr_node_steps(from, id);
  bool stepped = steps.value_step || steps.repeat_step;
  uint64_t repeat = node.repeat;
  bool inner_outer = false;
  double inner_scale = 1;
  if (outer && !stepped) {
    double scaled = floor((double)repeat * scale + 0.5);
    repeat = scaled < 1 ? 1 : scaled >= (double)repeat ? repeat : (uint64_t)scaled;
    inner_outer = repeat == 1;
    inner_scale = scale * (double)node.repeat;
  }
  int64_t made;
  if (node.count == 0)
    made = ms_expr_leaf(to, node.value, repeat);
  else {
    uint32_t *ids = malloc(node.count * sizeof *ids);
    if (!ids) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    for (uint32_t j = 0; j < node.count; j++) {
      int64_t child =
          copy_scaled(to, from, from->children[node.first + j], inner_scale, inner_outer);
      if (child < 0) {
        free(ids);
        return child;
      }
      ids[j] = (uint32_t)child;
    }
    made = ms_expr_group(to, ids, node.count, repeat);
    free(ids);
  }
  if (made >= 0 && stepped) {
    int rc = ms_expr_set_steps_level(to, (uint32_t)made, steps.value_step, steps.repeat_step,
                                     steps.level);
    if (rc < 0) return rc;
  }
  return made;
}

int ms_skeleton_scale_order(const ms_expr *order, double scale, ms_expr *out) {
  ms_expr_init(out);
  if (!(scale > 0 && scale <= 1))
    return ms_error_set(MS_ERR_ARG, "--scale: a fraction in (0, 1], not %g", scale);
  const ms_expr_node root = order->nodes[order->text_root];
  uint32_t *ids = malloc((root.count ? root.count : 1) * sizeof *ids);
  if (!ids) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  int rc = 0;
  for (uint32_t j = 0; j < root.count && rc == 0; j++) {
    int64_t child = copy_scaled(out, order, order->children[root.first + j], scale, true);
    if (child < 0)
      rc = (int)child;
    else
      ids[j] = (uint32_t)child;
  }
  if (rc == 0) rc = ms_expr_finish(out, ids, root.count);
  free(ids);
  if (rc < 0) ms_expr_free(out);
  return rc;
}

/* ---- Regions ---- */

typedef struct region {
  uint64_t low, high; /* of the application's addresses, inclusive */
  uint64_t offset;    /* of `low` in the reservation */
} region;

typedef struct writer {
  const ms_psnap_profile *profile;
  FILE *out;
  double scale;
  uint64_t *low, *high; /* per site, its range */
  uint32_t *region_of;  /* per site */
  region *regions;
  uint32_t region_count;
  uint64_t reservation; /* bytes */
  /* per site: the site whose cursor (address, run, iterator) it uses, its address's
   * distance from that cursor, and whether its access steps the cursor */
  uint32_t *cursor;
  int64_t *distance;
  uint8_t *steps;
  int64_t *fixed; /* per site: its one stride when its pattern has no other */
  uint8_t *is_fixed;
  ms_skeleton_profile_summary summary;
} writer;

/* The lowest and highest address of an exact site's `count` accesses: the ends of each
 * run of one stride. */
static int exact_range(const ms_psnap_site *site, uint64_t *low, uint64_t *high) {
  uint64_t address = site->first_address;
  *low = *high = address;
  if (site->count < 2 || site->pattern.total == 0) return 0;
  ms_expr_cursor cursor;
  int rc = ms_expr_cursor_init(&cursor, &site->pattern, 1);
  if (rc < 0) return rc;
  for (uint64_t left = site->count - 1; left;) {
    int64_t stride;
    uint64_t n = ms_expr_cursor_run(&cursor, left, &stride);
    if (!n) break;
    address += n * (uint64_t)stride;
    if (address < *low) *low = address;
    if (address > *high) *high = address;
    left -= n;
  }
  ms_expr_cursor_free(&cursor);
  return 0;
}

static int site_range(const ms_psnap_site *site, uint64_t *low, uint64_t *high) {
  if (site->addresses) {
    *low = *high = site->first_address;
    for (uint64_t i = 0; i < site->count; i++) {
      if (site->addresses[i] < *low) *low = site->addresses[i];
      if (site->addresses[i] > *high) *high = site->addresses[i];
    }
    return 0;
  }
  if (site->lossy) {
    *low = site->low < site->first_address ? site->low : site->first_address;
    *high = site->high > site->first_address ? site->high : site->first_address;
    return 0;
  }
  return exact_range(site, low, high);
}

static const uint64_t *sort_low; /* qsort's key: sites by the low end of their range */
static int by_low(const void *a, const void *b) {
  uint64_t x = sort_low[*(const uint32_t *)a], y = sort_low[*(const uint32_t *)b];
  return x < y ? -1 : x > y;
}

/* Sites' ranges joined into regions, laid out in the reservation. */
static int make_regions(writer *w) {
  const ms_psnap_profile *p = w->profile;
  uint32_t n = p->site_count;
  w->low = malloc(n * sizeof *w->low);
  w->high = malloc(n * sizeof *w->high);
  w->region_of = malloc(n * sizeof *w->region_of);
  w->regions = malloc(n * sizeof *w->regions);
  uint32_t *order = malloc(n * sizeof *order);
  if (!w->low || !w->high || !w->region_of || !w->regions || !order) {
    free(order);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  for (uint32_t s = 0; s < n; s++) {
    int rc = site_range(&p->sites[s], &w->low[s], &w->high[s]);
    if (rc < 0) {
      free(order);
      return rc;
    }
    order[s] = s;
  }
  sort_low = w->low;
  qsort(order, n, sizeof *order, by_low);
  for (uint32_t k = 0; k < n; k++) {
    uint32_t s = order[k];
    region *last = w->region_count ? &w->regions[w->region_count - 1] : NULL;
    if (last && w->low[s] <= last->high + REGION_GAP && last->high + REGION_GAP > last->high) {
      if (w->high[s] > last->high) last->high = w->high[s];
    } else
      w->regions[w->region_count++] = (region){w->low[s], w->high[s], 0};
    w->region_of[s] = w->region_count - 1;
  }
  free(order);
  uint64_t end = 0; /* of the previous region in the reservation */
  for (uint32_t r = 0; r < w->region_count; r++) {
    region *g = &w->regions[r];
    uint64_t chunk = r ? (end + REGION_GAP + CHUNK - 1) / CHUNK * CHUNK : 0;
    g->offset = chunk + g->low % CHUNK;
    uint64_t size = g->high - g->low + 1;
    if (!size || size > RESERVATION_MAX || g->offset + size > RESERVATION_MAX)
      return ms_error_set(MS_ERR_ARG,
                          "the sites' regions span more than %" PRIu64 " GiB: no reservation",
                          RESERVATION_MAX >> 30);
    end = g->offset + size;
  }
  w->reservation = (end + CHUNK - 1) / CHUNK * CHUNK;
  return 0;
}

/* Where an application address of site s is in the reservation. */
static uint64_t reserved(const writer *w, uint32_t s, uint64_t address) {
  const region *g = &w->regions[w->region_of[s]];
  return g->offset + (address - g->low);
}

/* ---- Cursors ---- */

/* Whether node `id` of a pattern, and every node below it, has one stride and no steps
 * (*seen once a leaf has set *stride). */
static bool one_stride(const ms_expr *e, uint32_t id, bool *seen, int64_t *stride) {
  ms_expr_steps steps = ms_expr_node_steps(e, id);
  if (steps.value_step || steps.repeat_step) return false;
  ms_expr_node node = e->nodes[id];
  if (node.count == 0) {
    if (*seen && node.value != *stride) return false;
    *seen = true, *stride = node.value;
    return true;
  }
  for (uint32_t j = 0; j < node.count; j++)
    if (!one_stride(e, e->children[node.first + j], seen, stride)) return false;
  return true;
}

/* Where a site is written in an order: per occurrence, the group around it (numbered in
 * text order, each written copy apart) and its place among the group's children. */
typedef struct placement {
  uint32_t *group, *place;
  uint32_t count, capacity;
  bool alone; /* written elsewhere than as a leaf of repeat 1 without steps: no sharing */
} placement;

typedef struct sharing {
  const ms_expr *order;
  uint32_t thread;
  placement *at;  /* per site */
  char **text;    /* per site, its pattern as text, made on demand */
  uint32_t group; /* groups numbered so far */
  bool dynamic;   /* a leaf steps its site: every site of the thread may be accessed */
} sharing;

static int place_sites(const writer *w, sharing *g, uint32_t id) {
  const ms_expr *e = g->order;
  const ms_expr_node node = e->nodes[id];
  uint32_t group = g->group++;
  for (uint32_t j = 0; j < node.count; j++) {
    uint32_t child = e->children[node.first + j];
    const ms_expr_node leaf = e->nodes[child];
    ms_expr_steps steps = ms_expr_node_steps(e, child);
    if (leaf.count) {
      int rc = place_sites(w, g, child);
      if (rc < 0) return rc;
      continue;
    }
    if (steps.value_step) g->dynamic = true;
    if (leaf.value < 0 || (uint64_t)leaf.value >= w->profile->site_count) continue;
    placement *p = &g->at[leaf.value];
    if (leaf.repeat != 1 || steps.value_step || steps.repeat_step ||
        (p->count && p->group[p->count - 1] == group))
      p->alone = true;
    if (p->alone) continue;
    if (p->count == p->capacity) {
      uint32_t capacity = p->capacity ? 2 * p->capacity : 4;
      uint32_t *groups = realloc(p->group, capacity * sizeof *groups);
      if (groups) p->group = groups;
      uint32_t *places = realloc(p->place, capacity * sizeof *places);
      if (places) p->place = places;
      if (!groups || !places) return ms_error_set(MS_ERR_NOMEM, "out of memory");
      p->capacity = capacity;
    }
    p->group[p->count] = group, p->place[p->count++] = j;
  }
  return 0;
}

static bool same_strides(const writer *w, sharing *g, uint32_t a, uint32_t b) {
  if (w->is_fixed[a] || w->is_fixed[b])
    return w->is_fixed[a] && w->is_fixed[b] && w->fixed[a] == w->fixed[b];
  const ms_psnap_site *x = &w->profile->sites[a], *y = &w->profile->sites[b];
  if (x->count != y->count || x->pattern.total != y->pattern.total) return false;
  if (!g->text[a]) g->text[a] = ms_expr_string(&x->pattern, MS_EXPR_STRIDES);
  if (!g->text[b]) g->text[b] = ms_expr_string(&y->pattern, MS_EXPR_STRIDES);
  return g->text[a] && g->text[b] && !strcmp(g->text[a], g->text[b]);
}

/* Whether site s may share a cursor: an exact site of the thread, of several accesses,
 * written only as leaves of repeat 1 without steps, once per group at most. */
static bool may_share(const writer *w, const sharing *g, uint32_t s) {
  const ms_psnap_site *site = &w->profile->sites[s];
  return !g->at[s].alone && g->at[s].count && site->thread == g->thread && !site->lossy &&
         !site->addresses && site->pattern.total > 0 && w->cursor[s] == s && w->steps[s];
}

/* Sites a and b written in the same groups, b after `last` in each. */
static bool lockstep(const sharing *g, uint32_t last, uint32_t b) {
  const placement *x = &g->at[last], *y = &g->at[b];
  if (x->count != y->count) return false;
  for (uint32_t i = 0; i < x->count; i++)
    if (x->group[i] != y->group[i] || x->place[i] >= y->place[i]) return false;
  return true;
}

/* Sites with equal patterns written in the same groups of the order, once in each, in
 * the same order, share the cursor of the first: each body of those groups accesses each
 * of them once, so their k-th accesses are in the same body and lie at their first
 * addresses' distance from each other; the cursor steps after the last of them. */
static void share_cursors(writer *w, sharing *g, uint32_t id) {
  const ms_expr *e = g->order;
  const ms_expr_node node = e->nodes[id];
  uint32_t group = g->group++;
  for (uint32_t j = 0; j < node.count; j++) {
    const ms_expr_node leaf = e->nodes[e->children[node.first + j]];
    if (leaf.count || leaf.value < 0 || (uint64_t)leaf.value >= w->profile->site_count) continue;
    uint32_t a = (uint32_t)leaf.value, last = a;
    if (!may_share(w, g, a) || g->at[a].group[0] != group) continue;
    for (uint32_t k = j + 1; k < node.count; k++) {
      const ms_expr_node other = e->nodes[e->children[node.first + k]];
      if (other.count || other.value < 0 || (uint64_t)other.value >= w->profile->site_count)
        continue;
      uint32_t b = (uint32_t)other.value;
      if (b == a || !may_share(w, g, b) || !lockstep(g, last, b) || !same_strides(w, g, a, b))
        continue;
      w->cursor[b] = a, w->steps[b] = 0, w->steps[a] = 0, last = b;
      w->distance[b] = (int64_t)(reserved(w, b, w->profile->sites[b].first_address) -
                                 reserved(w, a, w->profile->sites[a].first_address));
    }
    w->steps[last] = 1;
  }
  for (uint32_t j = 0; j < node.count; j++)
    if (e->nodes[e->children[node.first + j]].count)
      share_cursors(w, g, e->children[node.first + j]);
}

/* Each site's cursor: its own, or one it shares (exact orders without stepping sites). */
static int make_cursors(writer *w) {
  const ms_psnap_profile *p = w->profile;
  uint32_t n = p->site_count;
  w->cursor = malloc(n * sizeof *w->cursor);
  w->distance = calloc(n, sizeof *w->distance);
  w->steps = malloc(n);
  w->fixed = calloc(n, sizeof *w->fixed);
  w->is_fixed = calloc(n, 1);
  placement *at = calloc(n, sizeof *at);
  char **text = calloc(n, sizeof *text);
  int rc = 0;
  if (!w->cursor || !w->distance || !w->steps || !w->fixed || !w->is_fixed || !at || !text)
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  for (uint32_t s = 0; s < n && rc == 0; s++) {
    const ms_psnap_site *site = &p->sites[s];
    w->cursor[s] = s, w->steps[s] = 1;
    bool seen = false;
    if (!site->lossy && !site->addresses)
      w->is_fixed[s] = !site->pattern.total ||
                       one_stride(&site->pattern, site->pattern.text_root, &seen, &w->fixed[s]);
  }
  for (uint32_t t = 0; t < p->thread_count && rc == 0; t++) {
    const ms_psnap_thread_order *order = &p->threads[t];
    if (order->lossy) continue;
    sharing g = {.order = &order->order, .thread = t, .at = at, .text = text};
    for (uint32_t s = 0; s < n; s++)
      at[s].count = 0, at[s].alone = false;
    rc = place_sites(w, &g, order->order.text_root);
    if (rc < 0 || g.dynamic) continue;
    g.group = 0;
    share_cursors(w, &g, order->order.text_root);
  }
  for (uint32_t s = 0; at && text && s < n; s++)
    free(text[s]), free(at[s].group), free(at[s].place);
  free(text), free(at);
  for (uint32_t s = 0; s < n && rc == 0; s++)
    w->summary.iterators +=
        w->cursor[s] == s && !p->sites[s].lossy && !p->sites[s].addresses && !w->is_fixed[s];
  return rc;
}

/* ---- Writing C ---- */

static void write_comment_text(FILE *out, const char *text) {
  for (; *text; text++)
    if (*text == '*' && text[1] == '/')
      fputs("* /", out), text++;
    else
      fputc(*text == '\n' ? ' ' : *text, out);
}

static void write_int(FILE *out, int64_t value) {
  if (value == INT64_MIN)
    fputs("(-INT64_C(9223372036854775807) - 1)", out);
  else
    fprintf(out, "INT64_C(%" PRId64 ")", value);
}

/* `base + counter * step` in unsigned arithmetic (wrapping back into range). */
static void write_stepped(FILE *out, uint64_t base, int64_t step, const char *counter) {
  fprintf(out, "UINT64_C(%" PRIu64 ")", base);
  if (step > 0) fprintf(out, " + %s * UINT64_C(%" PRIu64 ")", counter, (uint64_t)step);
  if (step < 0) fprintf(out, " - %s * UINT64_C(%" PRIu64 ")", counter, -(uint64_t)step);
}

/* The site's kind, size, count and where it is in the program. */
static void write_site_place(const writer *w, uint32_t s, FILE *out) {
  const ms_psnap_site *site = &w->profile->sites[s];
  const ms_site *where = ms_site_table_get(w->profile->info.sites, site->trace_site);
  fprintf(out, "s%u: %s of %u bytes, %" PRIu64 " accesses", s,
          ms_access_kind_name((ms_access_kind)site->kind), site->size, site->count);
  if (where && where->function) {
    fputs(" in ", out);
    write_comment_text(out, where->function);
  }
  if (where && where->file) {
    const char *slash = strrchr(where->file, '/');
    fputs(" at ", out);
    write_comment_text(out, slash ? slash + 1 : where->file);
    fprintf(out, ":%u", where->line);
  }
}

/* One node of a site's pattern as loops of the coroutine; `depth` groups around it. */
static void write_pattern_node(writer *w, uint32_t s, const ms_expr *e, uint32_t id, uint32_t depth,
                               uint32_t *label, int indent) {
  FILE *out = w->out;
  ms_expr_node node = e->nodes[id];
  ms_expr_steps steps = ms_expr_node_steps(e, id);
  char counter[48] = "";
  if (steps.value_step || steps.repeat_step)
    snprintf(counter, sizeof counter, "site%u.i[%u]", s, depth - (steps.level ? steps.level : 1));
  if (node.count == 0) {
    fprintf(out, "%*ssite%u.resume = %u;\n%*sreturn (skeleton_leaf){", indent, "", s, ++*label,
            indent, "");
    if (steps.value_step) {
      fputs("(int64_t)(", out);
      write_stepped(out, (uint64_t)node.value, steps.value_step, counter);
      fputs(")", out);
    } else
      write_int(out, node.value);
    fputs(", ", out);
    write_stepped(out, node.repeat, steps.repeat_step, counter);
    fprintf(out, "};\n%*sr%u:;\n", indent > 2 ? indent - 2 : 0, "", *label);
    return;
  }
  fprintf(out, "%*sfor (site%u.i[%u] = 0; site%u.i[%u] < ", indent, "", s, depth, s, depth);
  write_stepped(out, node.repeat, steps.repeat_step, counter);
  fprintf(out, "; site%u.i[%u]++) {\n", s, depth);
  for (uint32_t j = 0; j < node.count; j++)
    write_pattern_node(w, s, e, e->children[node.first + j], depth + 1, label, indent + 2);
  fprintf(out, "%*s}\n", indent, "");
}

/* Deepest nesting of groups below the root of a written tree. */
static uint32_t written_depth(const ms_expr *e, uint32_t id) {
  uint32_t deepest = 0;
  for (uint32_t j = 0; j < e->nodes[id].count; j++) {
    uint32_t d = written_depth(e, e->children[e->nodes[id].first + j]);
    if (d > deepest) deepest = d;
  }
  return e->nodes[id].count ? deepest + 1 : 0;
}

/* Leaves of a written tree, each as often as it is written. */
static uint32_t leaf_occurrences(const ms_expr *e, uint32_t id) {
  if (!e->nodes[id].count) return 1;
  uint32_t leaves = 0;
  for (uint32_t j = 0; j < e->nodes[id].count; j++)
    leaves += leaf_occurrences(e, e->children[e->nodes[id].first + j]);
  return leaves;
}

/* The opening of an exact site's comment: its place, then its strides (left open). */
static void write_site_comment(writer *w, uint32_t s) {
  FILE *out = w->out;
  const ms_expr *e = &w->profile->sites[s].pattern;
  fputs("/* ", out);
  write_site_place(w, s, out);
  if (e->total) {
    fputs(";\n * strides ", out);
    char *text = ms_expr_string(e, MS_EXPR_STRIDES);
    if (text) write_comment_text(out, text);
    free(text);
  }
}

/* An exact site's iterator: its runs, cyclically. */
static void write_exact_site(writer *w, uint32_t s) {
  FILE *out = w->out;
  const ms_psnap_site *site = &w->profile->sites[s];
  const ms_expr *e = &site->pattern;
  write_site_comment(w, s);
  fputs(" */\n", out);
  if (!e->total) {
    fprintf(out,
            "static skeleton_leaf site%u_next(void) { return (skeleton_leaf){0, UINT64_MAX}; }\n\n",
            s);
    return;
  }
  uint32_t depth = written_depth(e, e->text_root);
  fprintf(out, "static struct {\n  unsigned resume;\n  uint64_t i[%u];\n} site%u;\n",
          depth > 1 ? depth - 1 : 1, s);
  fprintf(out, "static skeleton_leaf site%u_next(void) {\n  switch (site%u.resume) {\n", s, s);
  uint32_t labels = leaf_occurrences(e, e->text_root);
  for (uint32_t k = 1; k <= labels; k++)
    fprintf(out, "  case %u: goto r%u;\n", k, k);
  fputs("  }\n  for (;;) {\n", out);
  uint32_t label = 0;
  const ms_expr_node root = e->nodes[e->text_root];
  for (uint32_t j = 0; j < root.count; j++)
    write_pattern_node(w, s, e, e->children[root.first + j], 0, &label, 4);
  fputs("  }\n}\n\n", out);
}

/* An exact site without an iterator of its own: one stride, or another site's cursor. */
static void write_cursor_note(writer *w, uint32_t s) {
  FILE *out = w->out;
  write_site_comment(w, s);
  uint32_t c = w->cursor[s];
  if (c != s)
    fprintf(out, ";\n * at %+" PRId64 " bytes from s%u's address, stepped with it */\n\n",
            w->distance[s], c);
  else
    fprintf(out, ";\n * one stride: its address steps by %" PRId64 " */\n\n", w->fixed[s]);
}

/* A lossy or lossless site: its model as data for skeleton_lossy_next. */
static void write_drawn_site(writer *w, uint32_t s) {
  FILE *out = w->out;
  const ms_psnap_site *site = &w->profile->sites[s];
  fputs("/* ", out);
  write_site_place(w, s, out);
  if (site->addresses) {
    fputs(";\n * lossless: its addresses, cyclically */\n", out);
    fprintf(out, "static const uint64_t site%u_addresses[] = {", s);
    for (uint64_t i = 0; i < site->count; i++)
      fprintf(out, "%s0x%" PRIx64 ",", i % 6 ? " " : "\n    ", reserved(w, s, site->addresses[i]));
    fprintf(out,
            "\n};\nstatic skeleton_drawn site%u = {.table = site%u_addresses, .count = %" PRIu64
            "};\n\n",
            s, s, site->count);
    return;
  }
  fprintf(out, ";\n * lossy: range 0x%" PRIx64 "-0x%" PRIx64 ", alignment %" PRIu64, site->low,
          site->high, site->alignment);
  if (site->tied) fprintf(out, ", tied to s%u %+" PRId64, site->tie_site, site->tie_delta);
  fputs(" */\n", out);
  if (site->histogram) {
    fprintf(out, "static const uint64_t site%u_histogram[8][32] = {", s);
    for (int g = 0; g < MS_PSNAP_SEGMENTS; g++) {
      fputs("\n    {", out);
      for (int b = 0; b < MS_PSNAP_HISTOGRAM_BINS; b++)
        fprintf(out, "%s%" PRIu64, b ? ", " : "", site->histogram[g][b]);
      fputs("},", out);
    }
    fputs("\n};\n", out);
  }
  if (site->stride_count) {
    fprintf(out, "static const int64_t site%u_strides[][2] = {", s);
    for (uint32_t i = 0; i < site->stride_count; i++) {
      fputs(" {", out);
      write_int(out, site->top_stride[i]);
      fprintf(out, ", %" PRIu64 "},", site->top_stride_times[i]);
    }
    fputs(" };\n", out);
  }
  fprintf(out,
          "static skeleton_drawn site%u = {.low = 0x%" PRIx64 ", .span = 0x%" PRIx64
          ", .first = 0x%" PRIx64 ", .alignment = %" PRIu64 ", .count = %" PRIu64,
          s, reserved(w, s, w->low[s]), w->high[s] - w->low[s], reserved(w, s, site->first_address),
          site->alignment ? site->alignment : 1, site->count);
  if (site->histogram) fprintf(out, ", .histogram = site%u_histogram", s);
  if (site->stride_count)
    fprintf(out, ", .strides = site%u_strides, .stride_count = %u", s, site->stride_count);
  if (site->tied && site->tie_site < w->profile->site_count &&
      w->profile->sites[site->tie_site].lossy && !w->profile->sites[site->tie_site].addresses) {
    fprintf(out, ", .anchor = &site%u, .tie = ", site->tie_site);
    write_int(out, site->tie_delta);
  }
  fputs("};\n\n", out);
}

static const char *access_macro(const ms_psnap_site *site) {
  bool drawn = site->lossy || site->addresses;
  switch (site->kind) {
  case MS_STORE: return drawn ? "SKELETON_DRAWN_STORE" : "SKELETON_STORE";
  case MS_MODIFY: return drawn ? "SKELETON_DRAWN_MODIFY" : "SKELETON_MODIFY";
  default: return drawn ? "SKELETON_DRAWN_LOAD" : "SKELETON_LOAD";
  }
}

/* The access of site s, one statement: through its own cursor and iterator (the macro
 * steps it), or at a distance from a cursor, then that cursor's step if s steps it. */
static void write_access(const writer *w, uint32_t s, int indent) {
  const ms_psnap_site *site = &w->profile->sites[s];
  const ms_site *where = ms_site_table_get(w->profile->info.sites, site->trace_site);
  uint32_t c = w->cursor[s];
  if (site->lossy || site->addresses || (c == s && !w->is_fixed[s] && w->steps[s]))
    fprintf(w->out, "%*s%s(%u, %u);", indent, "", access_macro(site), s, site->size);
  else {
    fprintf(w->out, "%*s%s_AT(%u, %" PRId64 ", %u);", indent, "", access_macro(site), c,
            w->distance[s], site->size);
    if (w->steps[s] && !w->is_fixed[c])
      fprintf(w->out, " SKELETON_STEP(%u);", c);
    else if (w->steps[s] && w->fixed[c])
      fprintf(w->out, " SKELETON_ADVANCE(%u, %" PRId64 ");", c, w->fixed[c]);
  }
  if (where && where->file) {
    const char *slash = strrchr(where->file, '/');
    fputs(" /* ", w->out);
    write_comment_text(w->out, slash ? slash + 1 : where->file);
    fprintf(w->out, ":%u */", where->line);
  }
  fputc('\n', w->out);
}

/* Every site of thread t, by its number in a switch (lossy orders, stepping site numbers). */
static void write_dispatch(const writer *w, uint32_t t, const char *site, int indent) {
  fprintf(w->out, "%*sswitch (%s) {\n", indent, "", site);
  for (uint32_t s = 0; s < w->profile->site_count; s++)
    if (w->profile->sites[s].thread == t) {
      fprintf(w->out, "%*scase %u:\n", indent, "", s);
      write_access(w, s, indent + 2);
      fprintf(w->out, "%*sbreak;\n", indent + 2, "");
    }
  fprintf(w->out, "%*s}\n", indent, "");
}

/* One node of an order as loops; `depth` groups around it, counters i0, i1, ... */
static void write_order_node(const writer *w, uint32_t t, const ms_expr *e, uint32_t id,
                             uint32_t depth, int indent) {
  FILE *out = w->out;
  ms_expr_node node = e->nodes[id];
  ms_expr_steps steps = ms_expr_node_steps(e, id);
  char counter[24] = "";
  if (steps.value_step || steps.repeat_step)
    snprintf(counter, sizeof counter, "i%u", depth - (steps.level ? steps.level : 1));
  bool loop = node.repeat != 1 || steps.repeat_step;
  if (loop) {
    const char *name = node.count ? "i" : "k";
    fprintf(out, "%*sfor (uint64_t %s%u = 0; %s%u < ", indent, "", name, depth, name, depth);
    write_stepped(out, node.repeat, steps.repeat_step, counter);
    fprintf(out, "; %s%u++) {\n", name, depth);
  } else if (node.count)
    fprintf(out, "%*sfor (uint64_t i%u = 0; i%u < 1; i%u++) {\n", indent, "", depth, depth, depth);
  int inner = indent + (loop || node.count ? 2 : 0);
  if (node.count) {
    for (uint32_t j = 0; j < node.count; j++)
      write_order_node(w, t, e, e->children[node.first + j], depth + 1, inner);
    fprintf(out, "%*s}\n", indent, "");
  } else if (steps.value_step) {
    char site[96];
    snprintf(site, sizeof site, "(uint32_t)(UINT64_C(%" PRIu64 ") + %s * UINT64_C(%" PRIu64 "))",
             (uint64_t)node.value, counter, (uint64_t)steps.value_step);
    write_dispatch(w, t, site, inner);
  } else
    write_access(w, (uint32_t)node.value, inner);
  if (loop && !node.count) fprintf(out, "%*s}\n", indent, "");
}

/* Whether exact site s appears in the (scaled) order or every site of the thread may. */
static void mark_order_sites(const ms_expr *e, uint8_t *used, uint32_t sites, bool *dynamic) {
  for (uint32_t id = 0; id < e->written_nodes; id++) {
    if (e->nodes[id].count) continue;
    if (ms_expr_node_steps(e, id).value_step) *dynamic = true;
    if ((uint64_t)e->nodes[id].value < sites) used[e->nodes[id].value] = 1;
  }
}

static const char walk_code[] = "  uint64_t left = UINT64_C(%" PRIu64 "); /* the walk's steps */\n"
                                "  uint32_t site = %u;\n"
                                "  while (left--) {\n";

static int write_thread(writer *w, uint32_t t, uint8_t *used) {
  FILE *out = w->out;
  const ms_psnap_profile *p = w->profile;
  const ms_psnap_thread_order *order = &p->threads[t];
  ms_expr scaled;
  ms_expr_init(&scaled);
  bool dynamic = order->lossy;
  memset(used, 0, p->site_count);
  uint64_t steps = 0;
  if (!order->lossy) {
    int rc = ms_skeleton_scale_order(&order->order, w->scale, &scaled);
    if (rc < 0) return rc;
    mark_order_sites(&scaled, used, p->site_count, &dynamic);
    w->summary.kept += scaled.total;
  } else {
    w->summary.lossy_threads++;
    steps = (uint64_t)floor((double)order->accesses * w->scale + 0.5);
    if (!steps && order->accesses) steps = 1;
    w->summary.kept += steps;
    /* its transitions by source site, each with its uses left */
    fprintf(out, "static const uint32_t thread%u_start[] = {", t);
    uint32_t *by_source = malloc((order->transition_count + 1) * sizeof *by_source);
    if (!by_source) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    uint32_t k = 0;
    for (uint32_t s = 0; s <= p->site_count; s++) {
      fprintf(out, "%s%u,", s % 16 ? " " : "\n    ", k);
      for (uint32_t e = 0; s < p->site_count && e < order->transition_count; e++)
        if (order->transition_from[e] == s) by_source[k++] = e;
    }
    fprintf(out, "\n};\nstatic const uint32_t thread%u_to[] = {", t);
    for (uint32_t e = 0; e < k; e++)
      fprintf(out, "%s%u,", e % 16 ? " " : "\n    ", order->transition_to[by_source[e]]);
    fprintf(out, "%s\n};\nstatic uint64_t thread%u_left[] = {", k ? "" : " 0", t);
    for (uint32_t e = 0; e < k; e++)
      fprintf(out, "%s%" PRIu64 ",", e % 8 ? " " : "\n    ", order->transition_times[by_source[e]]);
    fprintf(out, "%s\n};\n\n", k ? "" : " 0");
    free(by_source);
  }
  for (uint32_t s = 0; s < p->site_count; s++)
    if (dynamic && p->sites[s].thread == t) used[s] = 1;
  fprintf(out, "/* thread %u: %" PRIu64 " accesses of the profile's %" PRIu64 " */\n", t,
          order->lossy ? steps : scaled.total, order->accesses);
  fprintf(out,
          "__attribute__((noinline)) static unsigned skeleton_thread%u(char *base) {\n"
          "  unsigned sum = 0;\n",
          t);
  /* the sites of the inner loops in registers; a site with far fewer accesses than the
   * busiest (a loop's stack slots, once per sweep) in static storage: stencil2d's 12 such
   * sites as locals made the compiler spill its 6 points, 1.4 accesses of its own per
   * data access */
  uint64_t busiest = 0;
  for (uint32_t s = 0; s < p->site_count; s++)
    if (used[s] && p->sites[s].count > busiest) busiest = p->sites[s].count;
  for (uint32_t s = 0; s < p->site_count; s++)
    if (used[s] && !p->sites[s].lossy && !p->sites[s].addresses && w->cursor[s] == s) {
      const char *storage = p->sites[s].count * COLD_RATIO < busiest ? "static " : "";
      uint64_t at = reserved(w, s, p->sites[s].first_address);
      if (w->is_fixed[s])
        fprintf(out, "  %schar *at%u;\n  at%u = base + 0x%" PRIx64 ";\n", storage, s, s, at);
      else
        fprintf(out,
                "  %schar *at%u;\n  %sint64_t stride%u;\n  %suint64_t left%u;\n"
                "  at%u = base + 0x%" PRIx64 ", stride%u = 0, left%u = 0;\n",
                storage, s, storage, s, storage, s, s, at, s, s);
    }
  for (uint32_t s = 0; s < p->site_count; s++)
    if (used[s] && (p->sites[s].lossy || p->sites[s].addresses))
      fprintf(out, "  site%u.base = base;\n", s);
  if (!order->lossy) {
    const ms_expr_node root = scaled.nodes[scaled.text_root];
    for (uint32_t j = 0; j < root.count; j++)
      write_order_node(w, t, &scaled, scaled.children[root.first + j], 0, 2);
    ms_expr_free(&scaled);
  } else {
    fprintf(out, walk_code, steps, order->first_site);
    write_dispatch(w, t, "site", 4);
    fprintf(
        out,
        "    site = skeleton_walk(thread%u_start, thread%u_to, thread%u_left, %u, site);\n  }\n", t,
        t, t, p->site_count);
  }
  fputs("  return sum;\n}\n\n", out);
  return ferror(out) ? ms_error_set(MS_ERR_IO, "write error") : 0;
}

/* The program's parts that do not depend on the profile. */
static const char program_head[] =
    "#include <stdint.h>\n"
    "#include <stdio.h>\n"
    "#include <sys/mman.h>\n"
    "#include <time.h>\n"
    "\n"
    "/* Accesses through volatile pointers of the site's size (unaligned types: the sites'\n"
    " * addresses keep their alignment, whatever it was): the compiler issues each one, in\n"
    " * order, at its width. Loaded values are summed and printed: a load whose value no\n"
    " * instruction uses is dropped by Valgrind's translation, and a recording would miss it.\n"
    " * 16 and 32 bytes are vector accesses (32: one access with -mavx, else two of 16);\n"
    " * other sizes are issued in pieces of 8, 4, 2 and 1 bytes. A modify (a load and a store\n"
    " * by one instruction) is an add of 0 to memory on x86-64, a load and a store elsewhere. */\n"
    "typedef uint16_t skeleton_u16 __attribute__((aligned(1)));\n"
    "typedef uint32_t skeleton_u32 __attribute__((aligned(1)));\n"
    "typedef uint64_t skeleton_u64 __attribute__((aligned(1)));\n"
    "typedef unsigned char skeleton_v16 __attribute__((vector_size(16), aligned(1)));\n"
    "typedef unsigned char skeleton_v32 __attribute__((vector_size(32), aligned(1)));\n"
    "\n"
    "static inline __attribute__((always_inline, unused)) unsigned skeleton_load(const char *at,\n"
    "                                                                    unsigned size) {\n"
    "  switch (size) {\n"
    "  case 1: return *(volatile const unsigned char *)at;\n"
    "  case 2: return *(volatile const skeleton_u16 *)at;\n"
    "  case 4: return *(volatile const skeleton_u32 *)at;\n"
    "  case 8: return (unsigned)*(volatile const skeleton_u64 *)at;\n"
    "  case 16: return (*(volatile const skeleton_v16 *)at)[0];\n"
    "  case 32: return (*(volatile const skeleton_v32 *)at)[0];\n"
    "  }\n"
    "  unsigned sum = 0;\n"
    "  for (unsigned piece = 8; size; piece /= 2)\n"
    "    for (; size >= piece; size -= piece, at += piece)\n"
    "      sum += skeleton_load(at, piece);\n"
    "  return sum;\n"
    "}\n"
    "\n"
    "static inline __attribute__((always_inline, unused)) void skeleton_store(char *at, unsigned "
    "size) {\n"
    "  switch (size) {\n"
    "  case 1: *(volatile unsigned char *)at = 0; return;\n"
    "  case 2: *(volatile skeleton_u16 *)at = 0; return;\n"
    "  case 4: *(volatile skeleton_u32 *)at = 0; return;\n"
    "  case 8: *(volatile skeleton_u64 *)at = 0; return;\n"
    "  case 16: *(volatile skeleton_v16 *)at = (skeleton_v16){0}; return;\n"
    "  case 32: *(volatile skeleton_v32 *)at = (skeleton_v32){0}; return;\n"
    "  }\n"
    "  for (unsigned piece = 8; size; piece /= 2)\n"
    "    for (; size >= piece; size -= piece, at += piece)\n"
    "      skeleton_store(at, piece);\n"
    "}\n"
    "\n"
    "static inline __attribute__((always_inline, unused)) void skeleton_modify(char *at, unsigned "
    "size) {\n"
    "#if defined(__x86_64__)\n"
    "  switch (size) {\n"
    "  case 1: __asm__ volatile(\"addb $0, %0\" : \"+m\"(*(unsigned char *)at)); return;\n"
    "  case 2: __asm__ volatile(\"addw $0, %0\" : \"+m\"(*(skeleton_u16 *)at)); return;\n"
    "  case 4: __asm__ volatile(\"addl $0, %0\" : \"+m\"(*(skeleton_u32 *)at)); return;\n"
    "  case 8: __asm__ volatile(\"addq $0, %0\" : \"+m\"(*(skeleton_u64 *)at)); return;\n"
    "  }\n"
    "#endif\n"
    "  if (skeleton_load(at, size) != 1) skeleton_store(at, size);\n"
    "}\n"
    "\n"
    "/* A run of a site's stride pattern: `left` strides of `stride` bytes. */\n"
    "typedef struct skeleton_leaf {\n"
    "  int64_t stride;\n"
    "  uint64_t left;\n"
    "} skeleton_leaf;\n"
    "\n"
    "/* An exact site k: its address and run are locals of its thread (at##k, stride##k,\n"
    " * left##k); site##k##_next() gives its next run. */\n"
    "#define SKELETON_STEP(k)                                                             \\\n"
    "  do {                                                                             \\\n"
    "    if (!left##k) {                                                                \\\n"
    "      skeleton_leaf run = site##k##_next();                                        \\\n"
    "      stride##k = run.stride, left##k = run.left;                                  \\\n"
    "    }                                                                              \\\n"
    "    at##k += stride##k, left##k--;                                                 \\\n"
    "  } while (0)\n"
    "#define SKELETON_LOAD(k, size)                                                       \\\n"
    "  do {                                                                             \\\n"
    "    sum += skeleton_load(at##k, size);                                             \\\n"
    "    SKELETON_STEP(k);                                                              \\\n"
    "  } while (0)\n"
    "#define SKELETON_STORE(k, size)                                                      \\\n"
    "  do {                                                                             \\\n"
    "    skeleton_store(at##k, size);                                                   \\\n"
    "    SKELETON_STEP(k);                                                              \\\n"
    "  } while (0)\n"
    "#define SKELETON_MODIFY(k, size)                                                     \\\n"
    "  do {                                                                             \\\n"
    "    skeleton_modify(at##k, size);                                                  \\\n"
    "    SKELETON_STEP(k);                                                              \\\n"
    "  } while (0)\n"
    "/* Sites that share site k's cursor (equal patterns, each accessed once per body of one\n"
    " * loop): an access at a distance d from at##k, the last of them then steps it. A site\n"
    " * of one stride keeps only its address, which advances by that stride. */\n"
    "#define SKELETON_LOAD_AT(k, d, size) sum += skeleton_load(at##k + (d), size)\n"
    "#define SKELETON_STORE_AT(k, d, size) skeleton_store(at##k + (d), size)\n"
    "#define SKELETON_MODIFY_AT(k, d, size) skeleton_modify(at##k + (d), size)\n"
    "#define SKELETON_ADVANCE(k, stride) at##k += (stride)\n"
    "\n";

static const char drawn_code[] =
    "/* Sites without a pattern. Lossy: each address drawn from the histogram of its eighth\n"
    " * of the site's accesses (32 bins over its range, aligned as the site was), or its\n"
    " * previous address plus one of its frequent strides with their odds, or its anchor's\n"
    " * last address plus the distance of the tie; lossless: its addresses from a table. */\n"
    "typedef struct skeleton_drawn {\n"
    "  char *base;                          /* of the reservation */\n"
    "  uint64_t low, span, first, alignment; /* offsets in the reservation, bytes */\n"
    "  uint64_t count, position;\n"
    "  const uint64_t (*histogram)[32];\n"
    "  const int64_t (*strides)[2]; /* stride, times */\n"
    "  unsigned stride_count;\n"
    "  struct skeleton_drawn *anchor;\n"
    "  int64_t tie;\n"
    "  const uint64_t *table; /* lossless */\n"
    "  uint64_t last;         /* offset of its previous address */\n"
    "} skeleton_drawn;\n"
    "\n"
    "static uint64_t skeleton_random_state = UINT64_C(0x9E3779B97F4A7C15);\n"
    "static uint64_t skeleton_random(void) { /* xorshift64 */\n"
    "  uint64_t x = skeleton_random_state;\n"
    "  x ^= x << 13, x ^= x >> 7, x ^= x << 17;\n"
    "  return skeleton_random_state = x;\n"
    "}\n"
    "\n"
    "static uint64_t skeleton_histogram_draw(const skeleton_drawn *d) {\n"
    "  uint64_t segment = d->count ? d->position * 8 / d->count : 0;\n"
    "  if (!d->histogram || d->position == 0) return d->first;\n"
    "  const uint64_t *bins = d->histogram[segment < 8 ? segment : 7];\n"
    "  uint64_t total = 0;\n"
    "  for (int b = 0; b < 32; b++)\n"
    "    total += bins[b];\n"
    "  if (!total) return d->first;\n"
    "  uint64_t pick = skeleton_random() % total, width = d->span / 32 + 1;\n"
    "  int bin = 0;\n"
    "  while (bin < 31 && pick >= bins[bin])\n"
    "    pick -= bins[bin++];\n"
    "  uint64_t at = d->low + (uint64_t)bin * width + skeleton_random() % width;\n"
    "  if (at > d->low + d->span) at = d->low + d->span;\n"
    "  /* first + k * alignment, in the range */\n"
    "  uint64_t k = at >= d->first ? (at - d->first) / d->alignment\n"
    "                              : (d->first - at + d->alignment - 1) / d->alignment;\n"
    "  at = at >= d->first ? d->first + k * d->alignment : d->first - k * d->alignment;\n"
    "  return at < d->low || at > d->low + d->span ? d->first : at;\n"
    "}\n"
    "\n"
    "static char *skeleton_drawn_next(skeleton_drawn *d) {\n"
    "  uint64_t at;\n"
    "  if (d->table)\n"
    "    at = d->table[d->position % d->count];\n"
    "  else if (d->anchor && d->anchor->position)\n"
    "    at = d->anchor->last + (uint64_t)d->tie;\n"
    "  else {\n"
    "    at = d->stride_count && d->position ? d->last : skeleton_histogram_draw(d);\n"
    "    if (d->stride_count && d->position && d->count > 1) {\n"
    "      uint64_t pick = skeleton_random() % (d->count - 1);\n"
    "      unsigned i = 0;\n"
    "      while (i < d->stride_count && pick >= (uint64_t)d->strides[i][1])\n"
    "        pick -= (uint64_t)d->strides[i++][1];\n"
    "      uint64_t step = at + (i < d->stride_count ? (uint64_t)d->strides[i][0] : 0);\n"
    "      at = i < d->stride_count && step >= d->low && step <= d->low + d->span\n"
    "               ? step\n"
    "               : skeleton_histogram_draw(d);\n"
    "    }\n"
    "  }\n"
    "  d->position++;\n"
    "  d->last = at;\n"
    "  return d->base + at;\n"
    "}\n"
    "#define SKELETON_DRAWN_LOAD(k, size) sum += skeleton_load(skeleton_drawn_next(&site##k), "
    "size)\n"
    "#define SKELETON_DRAWN_STORE(k, size) skeleton_store(skeleton_drawn_next(&site##k), size)\n"
    "#define SKELETON_DRAWN_MODIFY(k, size) skeleton_modify(skeleton_drawn_next(&site##k), size)\n"
    "\n";

static const char walk_function[] =
    "/* A lossy order's next site: one of the transitions from `site` with uses left, drawn by\n"
    " * their uses; when it has none, the first transition with uses left. */\n"
    "static uint32_t skeleton_walk(const uint32_t *start, const uint32_t *to, uint64_t *left,\n"
    "                              uint32_t sites, uint32_t site) {\n"
    "  uint64_t total = 0;\n"
    "  for (uint32_t e = start[site]; e < start[site + 1]; e++)\n"
    "    total += left[e];\n"
    "  if (total) {\n"
    "    uint64_t pick = skeleton_random() % total;\n"
    "    for (uint32_t e = start[site];; e++) {\n"
    "      if (pick < left[e]) {\n"
    "        left[e]--;\n"
    "        return to[e];\n"
    "      }\n"
    "      pick -= left[e];\n"
    "    }\n"
    "  }\n"
    "  for (uint32_t e = 0; e < start[sites]; e++)\n"
    "    if (left[e]) {\n"
    "      left[e]--;\n"
    "      return to[e];\n"
    "    }\n"
    "  return site;\n"
    "}\n"
    "\n";

static const char program_main[] =
    "int main(void) {\n"
    "  /* one reservation of the regions, aligned to 2 MiB so that addresses keep their place\n"
    "   * in their 2 MiB chunk; only the pages touched cost memory */\n"
    "  size_t size = (size_t)SKELETON_RESERVATION;\n"
    "  char *area = mmap(NULL, size + ((size_t)1 << 21), PROT_READ | PROT_WRITE,\n"
    "                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);\n"
    "  if (area == MAP_FAILED) {\n"
    "    perror(\"skeleton: mmap\");\n"
    "    return 1;\n"
    "  }\n"
    "  char *base = (char *)(((uintptr_t)area + ((uintptr_t)1 << 21) - 1) & ~(((uintptr_t)1 << 21) "
    "- 1));\n"
    "  struct timespec t0, t1;\n"
    "  clock_gettime(CLOCK_MONOTONIC, &t0);\n"
    "  unsigned sum = skeleton_run(base);\n"
    "  clock_gettime(CLOCK_MONOTONIC, &t1);\n"
    "  fprintf(stderr, \"skeleton: %.6f s, data %p-%p, sum %u\\n\",\n"
    "          (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),\n"
    "          (void *)base, (void *)(base + size), sum);\n"
    "  munmap(area, size + ((size_t)1 << 21));\n"
    "  return 0;\n"
    "}\n";

static void write_header(writer *w) {
  FILE *out = w->out;
  const ms_psnap_profile *p = w->profile;
  fputs("/* Memory skeleton of ", out);
  if (p->info.argc > 0)
    for (int i = 0; i < p->info.argc; i++) {
      if (i) fputc(' ', out);
      write_comment_text(out, p->info.argv[i]);
    }
  else
    write_comment_text(out, p->info.program ? p->info.program : "(unknown program)");
  fprintf(out, ", made by memsnap skeleton from its PSnAP profile (selection: ");
  write_comment_text(out, p->selection ? p->selection : "all");
  fprintf(out,
          ").\n * %u sites (%u lossy or lossless), %u threads run one after the other, %" PRIu64
          " of the profile's %" PRIu64 " accesses (scale %g);\n * %u regions:",
          w->summary.sites, w->summary.lossy_sites, w->summary.threads, w->summary.kept,
          w->summary.accesses, w->scale, w->region_count);
  for (uint32_t r = 0; r < w->region_count; r++)
    fprintf(out, "%s 0x%" PRIx64 "-0x%" PRIx64 " at +0x%" PRIx64, r ? "," : "", w->regions[r].low,
            w->regions[r].high, w->regions[r].offset);
  fprintf(out, ".\n * Build: cc -O2 -o skel this.c; run: ./skel (prints its time on stderr). */\n");
  fputs(program_head, out);
}

static uint64_t scaled_total(const writer *w) {
  uint64_t kept = 0;
  for (uint32_t t = 0; t < w->profile->thread_count; t++) {
    const ms_psnap_thread_order *order = &w->profile->threads[t];
    if (order->lossy) {
      uint64_t steps = (uint64_t)floor((double)order->accesses * w->scale + 0.5);
      kept += steps || !order->accesses ? steps : 1;
    } else {
      ms_expr scaled;
      if (ms_skeleton_scale_order(&order->order, w->scale, &scaled) == 0) kept += scaled.total;
      ms_expr_free(&scaled);
    }
  }
  return kept;
}

static int write_program(writer *w) {
  const ms_psnap_profile *p = w->profile;
  int rc = make_regions(w);
  if (rc == 0) rc = make_cursors(w);
  if (rc < 0) return rc;
  w->summary.regions = w->region_count;
  w->summary.reservation = w->reservation;
  bool drawn = false, walk = false;
  for (uint32_t s = 0; s < p->site_count; s++)
    drawn |= p->sites[s].lossy || p->sites[s].addresses;
  for (uint32_t t = 0; t < p->thread_count; t++)
    walk |= p->threads[t].lossy != 0;
  w->summary.kept = scaled_total(w);
  write_header(w);
  fprintf(w->out, "#define SKELETON_RESERVATION UINT64_C(0x%" PRIx64 ")\n\n", w->reservation);
  if (drawn || walk) fputs(drawn_code, w->out);
  if (walk) fputs(walk_function, w->out);
  for (uint32_t s = 0; s < p->site_count; s++) /* ties may name a later site */
    if (p->sites[s].lossy || p->sites[s].addresses)
      fprintf(w->out, "static skeleton_drawn site%u;\n%s", s, s + 1 == p->site_count ? "\n" : "");
  for (uint32_t s = 0; s < p->site_count; s++) {
    if (p->sites[s].lossy || p->sites[s].addresses)
      write_drawn_site(w, s);
    else if (w->cursor[s] != s || w->is_fixed[s])
      write_cursor_note(w, s);
    else
      write_exact_site(w, s);
  }
  uint8_t *used = malloc(p->site_count);
  if (!used) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  w->summary.kept = 0;
  for (uint32_t t = 0; t < p->thread_count && rc == 0; t++)
    rc = write_thread(w, t, used);
  free(used);
  if (rc < 0) return rc;
  fputs("/* The threads one after the other, as memsnap replay does. */\n"
        "static unsigned skeleton_run(char *base) {\n  unsigned sum = 0;\n",
        w->out);
  for (uint32_t t = 0; t < p->thread_count; t++)
    fprintf(w->out, "  sum += skeleton_thread%u(base);\n", t);
  fputs("  return sum;\n}\n\n", w->out);
  fputs(program_main, w->out);
  return ferror(w->out) ? ms_error_set(MS_ERR_IO, "write error") : 0;
}

int ms_skeleton_write_profile_c(const ms_psnap_profile *profile, double scale, FILE *out,
                                ms_skeleton_profile_summary *summary) {
  if (!(scale > 0 && scale <= 1))
    return ms_error_set(MS_ERR_ARG, "--scale: a fraction in (0, 1], not %g", scale);
  if (profile->blocks)
    return ms_error_set(MS_ERR_ARG, "a profile in block form: pick a rank first");
  if (!profile->site_count || !profile->thread_count)
    return ms_error_set(MS_ERR_ARG, "the profile has no sites: nothing to make a skeleton of");
  writer w = {.profile = profile, .out = out, .scale = scale};
  w.summary.sites = profile->site_count;
  w.summary.threads = profile->thread_count;
  w.summary.accesses = profile->access_count;
  for (uint32_t s = 0; s < profile->site_count; s++)
    w.summary.lossy_sites += profile->sites[s].lossy || profile->sites[s].addresses;
  int rc = write_program(&w);
  free(w.low), free(w.high), free(w.region_of), free(w.regions);
  free(w.cursor), free(w.distance), free(w.steps), free(w.fixed), free(w.is_fixed);
  if (rc == 0 && summary) *summary = w.summary;
  return rc;
}

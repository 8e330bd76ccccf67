/* The .psnap parser (docs/formats.md, "The .psnap profile"): version 2's site and thread
 * lines, the header, and what both versions share: the lossy orders' paths, the checks of
 * the orders, the whole text (version 1's blocks: profile_legacy.c).
 *
 * The parser accepts any blanks before a key, names file:line:column on every error, and
 * checks what replay relies on: site numbers dense and in order, every site of an order
 * known and of that thread, each site's count equal to its uses in the order.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"
#include "profile_internal.h"

/* 1 if sets (first, step, members) a and b are the same (members 0 and 1: one). */
static int same_set(uint32_t a_first, uint32_t a_step, uint32_t a_members, uint32_t b_first,
                    uint32_t b_step, uint32_t b_members) {
  uint32_t a = a_members ? a_members : 1, b = b_members ? b_members : 1;
  return a_first == b_first && a == b && (a == 1 || a_step == b_step);
}

int profile_site_in_order(const ms_psnap_profile *profile, const ms_psnap_site *site, uint32_t t) {
  if (!profile->blocks) return site->thread == t;
  const ms_psnap_thread_order *o = &profile->threads[t];
  return same_set(site->thread, site->thread_step, site->thread_members, o->thread, o->thread_step,
                  o->thread_members) &&
         same_set(site->rank, site->rank_step, site->rank_members, o->rank, o->rank_step,
                  o->rank_members);
}

int profile_sites_together(const ms_psnap_site *a, const ms_psnap_site *b) {
  return same_set(a->thread, a->thread_step, a->thread_members, b->thread, b->thread_step,
                  b->thread_members) &&
         same_set(a->rank, a->rank_step, a->rank_members, b->rank, b->rank_step, b->rank_members);
}

int profile_add_location(ms_psnap_profile *profile, const char *function, const char *file,
                         uint32_t line, uint64_t pc) {
  int64_t id = ms_site_table_add(profile->info.sites, pc, NULL, function, file, line);
  return id < 0 ? (int)id : 0;
}

int profile_read_transition(reader *r, ms_psnap_thread_order *order, uint32_t *capacity) {
  uint64_t from = 0, to = 0, times = 0;
  if (r->p >= r->end || *r->p != 's') return read_error(r, "expected a site such as s3");
  r->p++;
  int rc = profile_read_unsigned(r, 10, &from);
  if (rc == 0 && (r->p >= r->end || *r->p != 's')) rc = read_error(r, "expected a site such as s3");
  if (rc == 0) r->p++, rc = profile_read_unsigned(r, 10, &to);
  if (rc == 0) rc = profile_read_number_line(r, 10, &times);
  if (rc < 0) return rc;
  if (from > UINT32_MAX || to > UINT32_MAX) return read_error(r, "site number too large");
  if (order->transition_count == *capacity) {
    *capacity = *capacity ? *capacity * 2 : 64;
    uint32_t *f = realloc(order->transition_from, *capacity * sizeof *f);
    if (f) order->transition_from = f;
    uint32_t *t = realloc(order->transition_to, *capacity * sizeof *t);
    if (t) order->transition_to = t;
    uint64_t *n = realloc(order->transition_times, *capacity * sizeof *n);
    if (n) order->transition_times = n;
    if (!f || !t || !n) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  order->transition_from[order->transition_count] = (uint32_t)from;
  order->transition_to[order->transition_count] = (uint32_t)to;
  order->transition_times[order->transition_count++] = times;
  return 0;
}

/* What replay relies on: every site of thread t's order exists, belongs to the thread,
 * and is used `count` times; the order holds the accesses it declares. */
int profile_check_order(reader *r, ms_psnap_profile *profile, uint32_t t, unsigned order_line) {
  ms_psnap_thread_order *order = &profile->threads[t];
  int rc = 0;
  if (order->lossy && ms_expr_finish(&order->order, NULL, 0) < 0) return MS_ERR_NOMEM;
  /* Every site of the order exists, belongs to this thread, and is used `count` times. */
  uint64_t *uses = calloc(profile->site_count + 1, sizeof *uses);
  if (!uses) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (!order->lossy) {
    rc = ms_expr_index_values(&order->order, profile->site_count);
    if (rc == 0) {
      const ms_expr *e = &order->order;
      for (uint32_t k = e->count_start[e->root]; k < e->count_start[e->root + 1]; k++)
        uses[e->count_value[k]] = e->count_times[k];
    }
  } else {
    for (uint32_t k = 0; rc == 0 && k < order->transition_count; k++) {
      if (order->transition_to[k] >= profile->site_count ||
          order->transition_from[k] >= profile->site_count)
        rc = ms_error_set(MS_ERR_FORMAT, "site s%u is not in the profile",
                          order->transition_to[k] >= profile->site_count
                              ? order->transition_to[k]
                              : order->transition_from[k]);
      else
        uses[order->transition_to[k]] += order->transition_times[k];
    }
    /* each period holds the paths into its own accesses (the first access has none) */
    for (uint32_t k = 0; rc == 0 && order->transition_period && k < order->transition_count;) {
      uint32_t period = order->transition_period[k];
      uint64_t held = 0;
      for (; k < order->transition_count && order->transition_period[k] == period; k++)
        if (__builtin_add_overflow(held, order->transition_times[k], &held)) held = UINT64_MAX;
      uint64_t low = (uint64_t)period * order->period_length, high = low + order->period_length;
      if (low == 0) low = 1;
      if (high > order->accesses) high = order->accesses;
      if (held != high - low)
        rc = ms_error_set(MS_ERR_FORMAT,
                          "period %u holds %" PRIu64 " paths, its accesses need %" PRIu64, period,
                          held, high - low);
    }
    if (rc == 0 && order->first_site >= profile->site_count)
      rc = ms_error_set(MS_ERR_FORMAT, "site s%u is not in the profile", order->first_site);
    else if (rc == 0 && order->accesses)
      uses[order->first_site]++;
  }
  uint64_t total = 0;
  for (uint32_t s = 0; rc == 0 && s < profile->site_count; s++) {
    const ms_psnap_site *site = &profile->sites[s];
    int mine = profile_site_in_order(profile, site, t);
    uint64_t expected = mine ? site->count : 0;
    if (mine && site->moves > order->move_count) {
      rc = ms_error_set(MS_ERR_FORMAT, "site s%u moves by table %u, block %u has %u", s,
                        site->moves, t, order->move_count);
      break;
    }
    if (uses[s] != expected)
      rc = ms_error_set(MS_ERR_FORMAT,
                        "the order of %s %u uses site s%u %" PRIu64 " times, its count is %" PRIu64,
                        profile->blocks ? "block" : "thread", t, s, uses[s], expected);
    total += uses[s];
  }
  if (rc == 0 && total != order->accesses)
    rc = ms_error_set(MS_ERR_FORMAT,
                      "%s %u: %" PRIu64 " accesses in the order, %" PRIu64 " declared",
                      profile->blocks ? "block" : "thread", t, total, order->accesses);
  free(uses);
  if (rc < 0) {
    char message[512];
    snprintf(message, sizeof message, "%s", ms_error_message());
    return ms_error_set(MS_ERR_FORMAT, "%s:%u: %s", r->name, order_line,
                        strncmp(message, r->name, strlen(r->name)) ? message
                                                                   : message + strlen(r->name) + 1);
  }
  return 0;
}

/* ---- version 2: one line per site ---- */

/* The source file of `at FILE:LINE`, joined to source-dir when relative. */
static int read_at(reader *r, char **file, uint64_t *line) {
  char *name = NULL;
  if (r->p < r->end && *r->p == '"') {
    int rc = profile_scan_quoted(r, &name);
    if (rc < 0) return rc;
    if (r->p >= r->end || *r->p != ':') {
      free(name);
      return read_error(r, "expected ':LINE' after the file");
    }
  } else {
    if (r->p >= r->end) return read_error(r, "expected FILE:LINE");
    const char *token_end = memchr(r->p, ' ', (size_t)(r->end - r->p));
    if (!token_end) token_end = r->end;
    const char *colon = NULL;
    for (const char *q = r->p; q < token_end; q++)
      if (*q == ':') colon = q;
    if (!colon) return read_error(r, "expected FILE:LINE");
    if (!(name = strndup(r->p, (size_t)(colon - r->p))))
      return ms_error_set(MS_ERR_NOMEM, "out of memory");
    r->p = colon;
  }
  r->p++; /* the colon */
  int rc = profile_read_unsigned(r, 10, line);
  if (rc == 0 && *line > UINT32_MAX) rc = read_error(r, "line number too large");
  if (rc == 0 && r->source_dir && name[0] != '/') {
    char *joined = malloc(strlen(r->source_dir) + strlen(name) + 2);
    if (!joined)
      rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
    else {
      sprintf(joined, "%s/%s", r->source_dir, name);
      free(name);
      name = joined;
    }
  }
  if (rc < 0) {
    free(name);
    return rc;
  }
  *file = name;
  return 0;
}

/* `strides S:N ... other N` of a lossy site: its frequent strides (signed) and how many
 * strides each stands for; the counts and `other` add up to the site's count - 1. */
static int read_strides(reader *r, ms_psnap_site *site) {
  uint64_t kept = 0, other;
  while (!profile_key_is(r, "other")) {
    if (r->p == r->end) return read_error(r, "expected 'other N' at the end of the strides");
    if (site->stride_count == MS_PSNAP_TOP_STRIDES)
      return read_error(r, "more than %d strides", MS_PSNAP_TOP_STRIDES);
    char sign = *r->p;
    if (sign != '+' && sign != '-')
      return read_error(r, "expected a stride with its sign (+8, -64)");
    r->p++;
    uint64_t magnitude, times;
    int rc = profile_read_unsigned(r, 10, &magnitude);
    if (rc < 0) return rc;
    if (magnitude > (sign == '-' ? (uint64_t)1 << 63 : INT64_MAX))
      return read_error(r, "stride out of the 64-bit range");
    if (r->p == r->end || *r->p != ':') return read_error(r, "expected ':' and a count");
    r->p++;
    if ((rc = profile_read_unsigned(r, 10, &times)) < 0) return rc;
    if (times == 0) return read_error(r, "a stride counted 0 times");
    if (__builtin_add_overflow(kept, times, &kept)) return read_error(r, "counts overflow");
    site->top_stride[site->stride_count] =
        sign == '-' ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    site->top_stride_times[site->stride_count++] = times;
  }
  int rc = profile_read_unsigned(r, 10, &other);
  if (rc == 0) rc = profile_read_end(r);
  if (rc == 0 &&
      (site->count == 0 || __builtin_add_overflow(kept, other, &kept) || kept != site->count - 1))
    rc = read_error(r,
                    "the strides' counts and other add up to %" PRIu64 ", not the site's %" PRIu64
                    " strides (count - 1)",
                    kept, site->count ? site->count - 1 : 0);
  return rc;
}

/* `reuse [jumps] A 32: N0 ... N11 64: ... 128: ...` of a lossy site: A accesses measured
 * (its jumps only, with `jumps`); of them, Nb to a block of that size last touched 2^b to
 * 2^(b+1) - 1 accesses before (not counted again at a larger size). */
static int read_reuse(reader *r, ms_psnap_site *site) {
  static const char *const sizes[] = {"32:", "64:", "128:"};
  uint64_t accesses, sum = 0;
  site->reuse_at_jumps = profile_key_is(r, "jumps");
  int rc = profile_read_unsigned(r, 10, &accesses);
  if (rc < 0) return rc;
  if (accesses == 0) return read_error(r, "reuse: 0 accesses measured");
  for (int size = 0; size < MS_PSNAP_REUSE_SIZES; size++) {
    if (!profile_key_is(r, sizes[size])) return read_error(r, "reuse: expected '%s'", sizes[size]);
    for (int b = 0; b < MS_PSNAP_REUSE_BINS; b++) {
      if ((rc = profile_read_unsigned(r, 10, &site->reuse[size][b])) < 0) return rc;
      if (__builtin_add_overflow(sum, site->reuse[size][b], &sum))
        return read_error(r, "counts overflow");
    }
  }
  if (sum > accesses)
    return read_error(r, "reuse: %" PRIu64 " reuses of %" PRIu64 " accesses", sum, accesses);
  site->reuse_accesses = accesses;
  return profile_read_end(r);
}

/* `first-touch L0 ... L7 next N` of a lossy site: the lines it touched first in each
 * eighth of its accesses; N of them the line after its previous first touch. */
static int read_first_touch(reader *r, ms_psnap_site *site) {
  uint64_t lines = 0;
  for (int g = 0; g < MS_PSNAP_SEGMENTS; g++) {
    int rc = profile_read_unsigned(r, 10, &site->new_lines[g]);
    if (rc < 0) return rc;
    if (__builtin_add_overflow(lines, site->new_lines[g], &lines))
      return read_error(r, "counts overflow");
  }
  if (lines == 0) return read_error(r, "first-touch: no new lines");
  if (!profile_key_is(r, "next")) return read_error(r, "first-touch: expected 'next'");
  int rc = profile_read_unsigned(r, 10, &site->new_next);
  if (rc < 0) return rc;
  if (site->new_next > lines)
    return read_error(r, "first-touch: %" PRIu64 " next of %" PRIu64 " new lines", site->new_next,
                      lines);
  if (lines > site->count)
    return read_error(r, "first-touch: %" PRIu64 " new lines of %" PRIu64 " accesses", lines,
                      site->count);
  return profile_read_end(r);
}

/* `shared A N0 ... N18 same S0 ... S18` of a lossy site: A accesses measured (first
 * touches aside); Nb of them touched a line that an access of the thread had last touched
 * 2^b to 2^(b+1) - 1 accesses before; Sb of those the 32-byte half touched last. */
static int read_shared(reader *r, ms_psnap_site *site) {
  uint64_t accesses, sum = 0;
  int rc = profile_read_unsigned(r, 10, &accesses);
  if (rc < 0) return rc;
  if (accesses == 0) return read_error(r, "shared: 0 accesses measured");
  if (accesses > site->count)
    return read_error(r, "shared: %" PRIu64 " accesses of %" PRIu64, accesses, site->count);
  for (int b = 0; b < MS_PSNAP_SHARED_BINS; b++) {
    if ((rc = profile_read_unsigned(r, 10, &site->shared[b])) < 0) return rc;
    if (__builtin_add_overflow(sum, site->shared[b], &sum)) return read_error(r, "counts overflow");
  }
  if (sum > accesses)
    return read_error(r, "shared: %" PRIu64 " reuses of %" PRIu64 " accesses", sum, accesses);
  if (!profile_key_is(r, "same")) return read_error(r, "shared: expected 'same'");
  for (int b = 0; b < MS_PSNAP_SHARED_BINS; b++) {
    if ((rc = profile_read_unsigned(r, 10, &site->shared_same[b])) < 0) return rc;
    if (site->shared_same[b] > site->shared[b])
      return read_error(r, "shared: %" PRIu64 " of %" PRIu64 " reuses to the same half",
                        site->shared_same[b], site->shared[b]);
  }
  site->shared_accesses = accesses;
  return profile_read_end(r);
}

/* `tie sN +D` of a lossy site: the site it follows and the distance from its address
 * (checked against the other sites once all are read). */
/* `lines N` of a lossy site: the 64-byte lines it touched, 1 to its count. */
static int read_lines(reader *r, ms_psnap_site *site) {
  int rc = profile_read_unsigned(r, 10, &site->lines);
  if (rc < 0) return rc;
  if (site->lines == 0 || site->lines > site->count)
    return read_error(r, "lines: %" PRIu64 " lines of %" PRIu64 " accesses", site->lines,
                      site->count);
  return profile_read_end(r);
}

static int read_tie(reader *r, ms_psnap_site *site) {
  uint64_t anchor, magnitude;
  if (r->p >= r->end || *r->p != 's') return read_error(r, "expected the tied site, sN");
  r->p++;
  int rc = profile_read_unsigned(r, 10, &anchor);
  if (rc < 0) return rc;
  if (anchor > UINT32_MAX) return read_error(r, "tied site number too large");
  while (r->p < r->end && *r->p == ' ')
    r->p++;
  char sign = r->p < r->end ? *r->p : 0;
  if (sign != '+' && sign != '-') return read_error(r, "expected a distance with its sign (+8)");
  r->p++;
  if ((rc = profile_read_unsigned(r, 10, &magnitude)) < 0) return rc;
  if (magnitude > (sign == '-' ? (uint64_t)1 << 63 : INT64_MAX))
    return read_error(r, "distance out of the 64-bit range");
  site->tied = 1;
  site->tie_site = (uint32_t)anchor;
  site->tie_delta = sign == '-' ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
  return profile_read_end(r);
}

/* sN KIND SIZE xCOUNT [tTHREAD] @FIRST STORAGE [class=C] [at FILE:LINE] [pc=PC]
 * [in FUNCTION], then indented histogram or addresses lines. r is at the site line. */
static int read_site_line(reader *r, ms_psnap_profile *profile, uint32_t id) {
  ms_psnap_site *site = &profile->sites[id];
  char *function = NULL, *file = NULL;
  uint64_t line = 0, pc = 0, value = 0;
  int rc = 0, stored = 0, histograms = 0, strides = 0, touches = 0, explicit_class = -1;
  ms_expr_init(&site->pattern);
  if (r->p >= r->end || *r->p != 's')
    return read_error(r, "expected 's%u' (the header declares %u sites)", id, profile->site_count);
  r->p++;
  if ((rc = profile_read_unsigned(r, 10, &value)) < 0) return rc;
  if (value != id) {
    r->p = r->line;
    return read_error(r, "expected site s%u here, found s%" PRIu64, id, value);
  }
  char kind_name[16];
  const char *word = profile_read_word(r, kind_name, sizeof kind_name);
  int k = ms_access_kind_parse(kind_name);
  if (k < 0) {
    r->p = word;
    return read_error(r, "kind is load, store or modify");
  }
  site->kind = (uint8_t)k;
  while (r->p < r->end && *r->p == ' ')
    r->p++;
  if ((rc = profile_read_unsigned(r, 10, &value)) < 0) return rc;
  if (value == 0 || value > 255) return read_error(r, "size is 1 to 255 bytes");
  site->size = (uint8_t)value;
  if (r->p >= r->end || *r->p != 'x') return read_error(r, "expected xCOUNT");
  r->p++;
  if ((rc = profile_read_unsigned(r, 10, &site->count)) < 0) return rc;
  if (r->p < r->end && *r->p == 't') {
    r->p++;
    uint32_t first;
    if ((rc = profile_read_set(r, UINT16_MAX, &first, &site->thread_step, &site->thread_members)) <
        0)
      return rc;
    site->thread = (uint16_t)first;
  }
  if (r->p < r->end && *r->p == 'r') {
    if (!profile->blocks) return read_error(r, "a set of ranks in a profile not in block form");
    r->p++;
    if ((rc = profile_read_set(r, UINT32_MAX, &site->rank, &site->rank_step, &site->rank_members)) <
        0)
      return rc;
  }
  if (site->thread_members > 1 && !profile->blocks)
    return read_error(r, "a set of threads in a profile not in block form");
  if (r->p >= r->end || *r->p != '@') return read_error(r, "expected @FIRST-ADDRESS");
  r->p++;
  if ((rc = profile_read_unsigned(r, 16, &site->first_address)) < 0) return rc;
  /* @BASE+SLOPE*t+SLOPE*r: the slopes follow the base without a blank */
  for (int axis = 0; axis < 2 && r->p + 1 < r->end && (*r->p == '+' || *r->p == '-') &&
                     r->p[-1] != ' ' && r->p[1] != 'm';
       axis++) {
    char sign = *r->p++;
    uint64_t magnitude;
    if ((rc = profile_read_unsigned(r, 16, &magnitude)) < 0) return rc;
    if (magnitude > (sign == '-' ? (uint64_t)1 << 63 : INT64_MAX))
      return read_error(r, "slope out of the 64-bit range");
    int64_t slope = sign == '-' ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    if (r->p + 2 > r->end || r->p[0] != '*' || (r->p[1] != 't' && r->p[1] != 'r'))
      return read_error(r, "expected *t or *r after the slope");
    int on_rank = r->p[1] == 'r';
    if ((on_rank ? site->rank_members : site->thread_members) < 2)
      return read_error(r, "a slope needs a set of several %s", on_rank ? "ranks" : "threads");
    if (on_rank ? site->per_rank != 0 : (axis > 0 || site->per_thread != 0))
      return read_error(r, "one slope per thread and per rank, in this order");
    if (slope == 0) return read_error(r, "a slope of 0 is not written");
    *(on_rank ? &site->per_rank : &site->per_thread) = slope;
    r->p += 2;
    while (r->p < r->end && *r->p == ' ')
      r->p++;
  }
  if (r->p + 2 < r->end && r->p[0] == '+' && r->p[1] == 'm' && r->p[-1] != ' ') {
    r->p += 2;
    if ((rc = profile_read_unsigned(r, 10, &value)) < 0) return rc;
    if (value == 0 || value > UINT32_MAX)
      return read_error(r, "+mK: K is a table of moves, from 1");
    if (!profile->blocks) return read_error(r, "moves in a profile not in block form");
    site->moves = (uint32_t)value;
  }
  site->first_address +=
      (uint64_t)site->per_thread * site->thread + (uint64_t)site->per_rank * site->rank;
  if (profile_key_is(r, "lossless"))
    stored = 2;
  else if (profile_key_is(r, "lossy")) {
    stored = 1, site->lossy = 1;
    if (!profile_key_is(r, "range")) return read_error(r, "expected 'range LOW HIGH'");
    if ((rc = profile_read_unsigned(r, 16, &site->low)) < 0 ||
        (rc = profile_read_unsigned(r, 16, &site->high)) < 0)
      return rc;
    if (site->high < site->low) return read_error(r, "range: low is above high");
    if (!profile_key_is(r, "align")) return read_error(r, "expected 'align N'");
    if ((rc = profile_read_unsigned(r, 10, &site->alignment)) < 0) return rc;
    if (site->alignment == 0) return read_error(r, "alignment is at least 1");
  }
  /* An exact site's strides: signs, digits, parentheses, ^, steps' {,@} and blanks, up to a
   * word. */
  const char *pattern = r->p;
  if (stored == 0)
    while (r->p < r->end && (strchr("+-()^ {},@", *r->p) || (*r->p >= '0' && *r->p <= '9')))
      r->p++;
  const char *pattern_end = r->p;
  while (pattern_end > pattern && pattern_end[-1] == ' ')
    pattern_end--;
  rc = ms_expr_parse(&site->pattern, pattern, (size_t)(pattern_end - pattern), MS_EXPR_STRIDES,
                     r->name, r->number, (unsigned)(pattern - r->line) + 1);
  if (rc < 0) return rc;
  if (r->p + 6 <= r->end && !memcmp(r->p, "class=", 6)) {
    r->p += 6;
    char name[32];
    const char *name_start = profile_read_word(r, name, sizeof name);
    if ((explicit_class = ms_stride_class_parse(name)) < 0) {
      r->p = name_start;
      return read_error(r, "unknown class");
    }
    while (r->p < r->end && *r->p == ' ')
      r->p++;
  }
  if (profile_key_is(r, "at") && (rc = read_at(r, &file, &line)) < 0) return rc;
  if (r->p + 3 <= r->end && !memcmp(r->p, "pc=", 3)) {
    r->p += 3;
    if ((rc = profile_read_unsigned(r, 16, &pc)) < 0) goto out;
  }
  if (profile_key_is(r, "in")) {
    if (r->p < r->end && !(function = profile_copy_rest(r))) {
      rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
      goto out;
    }
  }
  if ((rc = profile_read_end(r)) < 0) goto out;
  /* indented continuation lines */
  while (rc == 0 && profile_next_line(r)) {
    if (r->p == r->line) break;
    if (stored == 1 && !strides && !site->reuse_accesses && !site->tied &&
        profile_key_is(r, "histogram")) {
      if (histograms == MS_PSNAP_SEGMENTS)
        rc = read_error(r, "more than %d histogram lines", MS_PSNAP_SEGMENTS);
      if (rc == 0) rc = profile_ensure_histogram(site);
      for (int b = 0; rc == 0 && b < MS_PSNAP_HISTOGRAM_BINS; b++)
        rc = profile_read_unsigned(r, 10, &site->histogram[histograms][b]);
      histograms++;
      if (rc == 0) rc = profile_read_end(r);
    } else if (stored == 1 && histograms == MS_PSNAP_SEGMENTS && !strides &&
               !site->reuse_accesses && !site->tied && !touches && profile_key_is(r, "strides")) {
      strides = 1;
      rc = read_strides(r, site);
    } else if (stored == 1 && histograms == MS_PSNAP_SEGMENTS && !site->reuse_accesses &&
               !site->tied && !touches && profile_key_is(r, "reuse")) {
      rc = read_reuse(r, site);
    } else if (stored == 1 && histograms == MS_PSNAP_SEGMENTS && !site->tied && !touches &&
               !site->shared_accesses && !site->lines && profile_key_is(r, "first-touch")) {
      touches = 1;
      rc = read_first_touch(r, site);
    } else if (stored == 1 && histograms == MS_PSNAP_SEGMENTS && !site->tied &&
               !site->shared_accesses && !site->lines && profile_key_is(r, "shared")) {
      touches = 1;
      rc = read_shared(r, site);
    } else if (stored == 1 && histograms == MS_PSNAP_SEGMENTS && !site->tied && !site->lines &&
               profile_key_is(r, "lines")) {
      touches = 1;
      rc = read_lines(r, site);
    } else if (stored == 1 && histograms == MS_PSNAP_SEGMENTS && !site->tied &&
               profile_key_is(r, "tie")) {
      rc = read_tie(r, site);
    } else if (stored == 2 && !site->addresses && profile_key_is(r, "addresses"))
      rc = profile_read_addresses(r, site);
    else
      rc = read_error(
          r,
          stored == 1
              ? (site->tied              ? "nothing follows the tie line"
                 : site->lines           ? "only a tie line follows the lines line"
                 : site->shared_accesses ? "only lines and tie lines follow the shared line"
                 : touches               ? "only shared and tie lines follow the first-touch line"
                 : site->reuse_accesses
                     ? "only first-touch, shared and tie lines follow the reuse line"
                 : strides ? "only reuse, first-touch, shared and tie lines follow the strides line"
                 : histograms == MS_PSNAP_SEGMENTS ? "expected a strides line or the next site"
                                                   : "expected a histogram line")
          : stored == 2 ? "expected one addresses line"
                        : "an exact site has no indented lines");
  }
  if (rc == 0 && stored == 1 && histograms != MS_PSNAP_SEGMENTS)
    rc = read_error(r, "lossy site %u needs %d histogram lines", id, MS_PSNAP_SEGMENTS);
  if (rc == 0 && stored == 2 && !site->addresses)
    rc = read_error(r, "lossless site %u has no addresses line", id);
  if (rc == 0) {
    site->cls = explicit_class >= 0 ? (ms_stride_class)explicit_class : profile_default_class(site);
    site->trace_site = id;
    rc = profile_add_location(profile, function, file, (uint32_t)line, pc);
  }
out:
  free(function);
  free(file);
  return rc;
}

/* `moves M0 M1 ...` of a block: one more table, a signed hexadecimal move (or 0) for each
 * member, the first 0. */
static int read_moves(reader *r, ms_psnap_thread_order *order) {
  uint64_t members = (uint64_t)(order->thread_members ? order->thread_members : 1) *
                     (order->rank_members ? order->rank_members : 1);
  if (members > (1u << 24) || order->move_count >= (1u << 16))
    return read_error(r, "moves: too many members or tables");
  int64_t *moves = realloc(order->moves, (order->move_count + 1) * members * sizeof *moves);
  if (!moves) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  order->moves = moves;
  int64_t *row = moves + order->move_count * members;
  for (uint64_t m = 0; m < members; m++) {
    char sign = r->p < r->end ? *r->p : 0;
    uint64_t magnitude;
    int rc;
    if (sign == '0' && (r->p + 1 == r->end || r->p[1] == ' ')) {
      r->p++;
      while (r->p < r->end && *r->p == ' ')
        r->p++;
      row[m] = 0;
      continue;
    }
    if (sign != '+' && sign != '-')
      return read_error(r, "moves: expected %" PRIu64 " moves (0, +0x.., -0x..), one per member",
                        members);
    r->p++;
    if ((rc = profile_read_unsigned(r, 16, &magnitude)) < 0) return rc;
    if (magnitude == 0 || magnitude > (sign == '-' ? (uint64_t)1 << 63 : INT64_MAX))
      return read_error(r, "moves: a move is 0 or a signed hexadecimal other than 0");
    if (m == 0) return read_error(r, "moves: the first member's move is 0");
    row[m] = sign == '-' ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
  }
  order->move_count++;
  return profile_read_end(r);
}

/* thread N accesses A order EXPR | order lossy start sK, then indented path lines. */
static int read_thread_line(reader *r, ms_psnap_profile *profile, uint32_t t) {
  ms_psnap_thread_order *order = &profile->threads[t];
  uint32_t capacity = 0;
  unsigned order_line = r->number;
  uint64_t value;
  int rc;
  ms_expr_init(&order->order);
  if (profile->blocks) {
    if (!profile_key_is(r, "block")) return read_error(r, "expected 'block tTHREADS rRANKS'");
    if (r->p >= r->end || *r->p != 't') return read_error(r, "expected tTHREADS");
    r->p++;
    if ((rc = profile_read_set(r, UINT16_MAX, &order->thread, &order->thread_step,
                               &order->thread_members)) < 0)
      return rc;
    if (r->p >= r->end || *r->p != 'r') return read_error(r, "expected rRANKS");
    r->p++;
    if ((rc = profile_read_set(r, UINT32_MAX, &order->rank, &order->rank_step,
                               &order->rank_members)) < 0)
      return rc;
  } else {
    if (!profile_key_is(r, "thread")) return read_error(r, "expected 'thread %u'", t);
    if ((rc = profile_read_unsigned(r, 10, &value)) < 0) return rc;
    if (value != t) {
      r->p = r->line;
      return read_error(r, "expected thread %u here, found %" PRIu64, t, value);
    }
    order->thread = t, order->thread_step = 1, order->thread_members = 1;
    order->rank = profile->rank, order->rank_step = 1, order->rank_members = 1;
  }
  if (!profile_key_is(r, "accesses")) return read_error(r, "expected 'accesses N'");
  if ((rc = profile_read_unsigned(r, 10, &order->accesses)) < 0) return rc;
  if (!profile_key_is(r, "order")) return read_error(r, "expected 'order'");
  if (profile_key_is(r, "lossy")) {
    order->lossy = 1;
    if (!profile_key_is(r, "start") || r->p >= r->end || *r->p != 's')
      return read_error(r, "expected 'start sN'");
    r->p++;
    if ((rc = profile_read_unsigned(r, 10, &value)) < 0) return rc;
    if (value > UINT32_MAX) return read_error(r, "site number too large");
    order->first_site = (uint32_t)value;
    if (profile_key_is(r, "period")) {
      if ((rc = profile_read_unsigned(r, 10, &order->period_length)) < 0) return rc;
      if (order->period_length == 0) return read_error(r, "period: 0 accesses");
    }
    if ((rc = profile_read_end(r)) < 0) return rc;
  } else if ((rc = ms_expr_parse(&order->order, r->p, (size_t)(r->end - r->p), MS_EXPR_SITES,
                                 r->name, r->number, (unsigned)(r->p - r->line) + 1)) < 0)
    return rc;
  uint64_t period = 0;
  int period_seen = 0;
  while (rc == 0 && profile_next_line(r)) {
    if (r->p == r->line) break;
    if (order->lossy && order->period_length && profile_key_is(r, "period")) {
      uint64_t next;
      if ((rc = profile_read_number_line(r, 10, &next)) < 0) break;
      if ((period_seen && next <= period) || next > UINT32_MAX ||
          next > (order->accesses ? (order->accesses - 1) / order->period_length : 0))
        rc = read_error(r, "period %" PRIu64 " out of order or past the thread's accesses", next);
      period = next, period_seen = 1;
    } else if (profile->blocks && !order->transition_count && !period_seen &&
               profile_key_is(r, "moves")) {
      rc = read_moves(r, order);
    } else if (order->lossy && profile_key_is(r, "path")) {
      rc = profile_read_transition(r, order, &capacity);
      if (rc == 0 && order->period_length) {
        uint32_t k = order->transition_count - 1;
        uint32_t *p = realloc(order->transition_period, capacity * sizeof *p);
        if (!p)
          rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
        else
          (order->transition_period = p)[k] = (uint32_t)period;
      }
    } else
      rc = read_error(r, order->lossy ? (order->period_length ? "expected a path or period line"
                                                              : "expected a path line")
                                      : "unexpected indented line");
  }
  if (rc < 0) return rc;
  return profile_check_order(r, profile, t, order_line);
}

static int read_header(reader *r, ms_psnap_profile *profile) {
  ms_stream_info *info = &profile->info;
  uint64_t value;
  int rc = 0, have_sites = 0, have_threads = 0, own_executable = 0;
  unsigned selection_line = 0;
  while (rc == 0 && profile_next_line(r)) {
    if (profile_key_is(r, "site") || profile_key_is(r, "thread") ||
        (r->version == 2 && r->p + 1 < r->end && r->p[0] == 's' && r->p[1] >= '0' &&
         r->p[1] <= '9')) {
      r->p = r->line;
      break;
    }
    if (r->version == 2 && profile_key_is(r, "source-dir")) {
      free(r->source_dir);
      if (!(r->source_dir = profile_copy_rest(r))) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
      continue;
    }
    if (r->version == 2 && r->end - r->p == 20 &&
        !memcmp(r->p, "selection executable", 20)) { /* the program's own executable */
      own_executable = 1;
      selection_line = r->number;
      r->p = r->end;
      continue;
    }
    if (profile_key_is(r, "program")) {
      free(info->program);
      info->program = NULL;
      rc = profile_read_quoted(r, &info->program);
    } else if (profile_key_is(r, "argument")) {
      char **argv = realloc(info->argv, ((size_t)info->argc + 2) * sizeof *argv);
      if (!argv) return ms_error_set(MS_ERR_NOMEM, "out of memory");
      info->argv = argv;
      argv[info->argc + 1] = NULL;
      if ((rc = profile_read_quoted(r, &argv[info->argc])) == 0) info->argc++;
    } else if (profile_key_is(r, "arch")) {
      free(info->arch);
      if (!(info->arch = profile_copy_rest(r))) rc = MS_ERR_NOMEM;
    } else if (profile_key_is(r, "capture")) {
      free(info->capture);
      if (!(info->capture = profile_copy_rest(r))) rc = MS_ERR_NOMEM;
    } else if (profile_key_is(r, "sampling")) {
      if (profile_key_is(r, "none"))
        rc = profile_read_end(r);
      else if (profile_key_is(r, "on") &&
               (rc = profile_read_unsigned(r, 10, &info->sample_on)) == 0) {
        info->flags |= MS_STREAM_SAMPLED;
        rc = profile_key_is(r, "off") ? profile_read_number_line(r, 10, &info->sample_off)
                                      : read_error(r, "expected 'off N'");
      } else if (rc == 0)
        rc = read_error(r, "sampling is none or on N off M");
    } else if (profile_key_is(r, "selection")) {
      free(profile->selection);
      ms_psnap_filter *filter = NULL;
      if (!(profile->selection = profile_copy_rest(r)))
        rc = MS_ERR_NOMEM;
      else if (ms_psnap_filter_new(profile->selection, &filter) < 0)
        rc = read_error(r, "selection is all, executable PATH, or function F / line FILE:LINE /"
                           " object NAME words");
      ms_psnap_filter_free(filter);
    } else if (profile_key_is(r, "excluded")) {
      rc = profile_read_number_line(r, 10, &profile->excluded);
      profile->has_excluded = 1;
    } else if (profile_key_is(r, "accesses"))
      rc = profile_read_number_line(r, 10, &profile->access_count);
    else if (r->version == 2 && profile_key_is(r, "rank")) {
      if ((rc = profile_read_number_line(r, 10, &value)) == 0 && value > UINT32_MAX)
        rc = read_error(r, "rank number too large");
      profile->rank = (uint32_t)value;
      profile->has_rank = 1;
    } else if (r->version == 2 && profile_key_is(r, "blocks")) {
      if (have_threads) return read_error(r, "'threads' and 'blocks' in one header");
      if ((rc = profile_read_number_line(r, 10, &value)) == 0 && value > (1u << 24))
        rc = read_error(r, "too many blocks");
      profile->thread_count = (uint32_t)value;
      profile->blocks = 1;
      have_threads = 1;
    } else if (profile_key_is(r, "sites")) {
      if ((rc = profile_read_number_line(r, 10, &value)) == 0 && value > (1u << 24))
        rc = read_error(r, "too many sites");
      profile->site_count = (uint32_t)value;
      have_sites = 1;
    } else if (profile_key_is(r, "threads")) {
      if (profile->blocks) return read_error(r, "'threads' and 'blocks' in one header");
      if ((rc = profile_read_number_line(r, 10, &value)) == 0 && value > UINT16_MAX + 1u)
        rc = read_error(r, "too many threads");
      profile->thread_count = (uint32_t)value;
      have_threads = 1;
    } else
      rc = read_error(r, "unknown key in the header");
  }
  if (rc == 0 && (!have_sites || !have_threads))
    rc = read_error(r, "the header lacks 'sites' or 'threads'");
  if (rc == 0 && profile->blocks && profile->has_rank)
    rc = read_error(r, "a profile in block form has no 'rank' line: its blocks say their ranks");

  if (rc == 0 && own_executable) {
    if (!info->program)
      return ms_error_set(MS_ERR_FORMAT, "%s:%u: 'selection executable' without a program line",
                          r->name, selection_line);
    free(profile->selection);
    if (!(profile->selection = malloc(strlen(info->program) + 12)))
      return ms_error_set(MS_ERR_NOMEM, "out of memory");
    strcat(strcpy(profile->selection, "executable "), info->program);
  }
  if (rc == 0 && !profile->selection && !(profile->selection = strdup("all")))
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  return rc;
}

int profile_parse_text(const char *text, size_t size, const char *name, ms_psnap_profile *out) {
  memset(out, 0, sizeof *out);
  reader r = {.name = name, .next = text, .text_end = text + size};
  r.line = r.p = r.end = text;
  size_t magic = strlen(PSNAP_MAGIC);
  if (size >= magic && (size == magic || text[magic] == '\n') && !memcmp(text, PSNAP_MAGIC, magic))
    r.version = 2;
  else if (size >= magic && (size == magic || text[magic] == '\n') &&
           !memcmp(text, PSNAP_MAGIC_1, magic))
    r.version = 1;
  else
    return ms_error_set(MS_ERR_FORMAT,
                        "%s:1:1: not a memsnap profile (expected '%s', or '%s' of older profiles)",
                        name, PSNAP_MAGIC, PSNAP_MAGIC_1);
  if (memchr(text, 0, size)) return ms_error_set(MS_ERR_FORMAT, "%s: contains a NUL byte", name);
  profile_next_line(&r);
  out->info.sites = ms_site_table_new();
  if (!out->info.sites) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  out->info.exit_status = -1;
  int rc = read_header(&r, out);
  if (rc == 0) {
    /* sites grow as their blocks are read: the header's count alone allocates nothing */
    out->sites = calloc(1, sizeof *out->sites);
    out->threads = calloc(out->thread_count ? out->thread_count : 1, sizeof *out->threads);
    if (!out->sites || !out->threads) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  uint32_t sites_read = 0, capacity = 1;
  for (uint32_t i = 0; rc == 0 && i < out->site_count; i++) {
    uint64_t id;
    if (i == capacity) {
      ms_psnap_site *bigger = realloc(out->sites, 2 * (size_t)capacity * sizeof *bigger);
      if (!bigger) {
        rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
        break;
      }
      memset(bigger + capacity, 0, capacity * sizeof *bigger);
      out->sites = bigger;
      capacity *= 2;
    }
    if (r.version == 2) {
      if (r.p >= r.end)
        rc = read_error(&r, "expected 's%u' (the header declares %u sites)", i, out->site_count);
      else
        rc = read_site_line(&r, out, i);
    } else if (!(r.p < r.end && profile_key_is(&r, "site")))
      rc = read_error(&r, "expected 'site %u' (the header declares %u sites)", i, out->site_count);
    else if ((rc = profile_read_number_line(&r, 10, &id)) == 0 && id != i)
      r.p = r.line, rc = read_error(&r, "expected site %u here, found %" PRIu64, i, id);
    if (rc == 0 && r.version == 1) rc = profile_legacy_site(&r, out, i);
    sites_read = i + 1;
    if (rc == 0 && !out->blocks && out->sites[i].thread >= out->thread_count)
      rc = ms_error_set(MS_ERR_FORMAT, "%s:%u: site %u: thread %u but %u threads", name, r.number,
                        i, out->sites[i].thread, out->thread_count);
  }
  for (uint32_t i = 0; rc == 0 && i < out->site_count; i++) {
    const ms_psnap_site *site = &out->sites[i];
    if (!site->tied) continue;
    const ms_psnap_site *anchor =
        site->tie_site < out->site_count ? &out->sites[site->tie_site] : NULL;
    if (!anchor || site->tie_site == i || !anchor->lossy || anchor->tied ||
        !profile_sites_together(anchor, site))
      rc = ms_error_set(MS_ERR_FORMAT,
                        "%s: site s%u: tied to s%u, which is not another lossy, untied site of "
                        "its thread",
                        name, i, site->tie_site);
  }
  uint64_t total = 0;
  for (uint32_t t = 0; rc == 0 && t < out->thread_count; t++) {
    uint64_t id;
    if (r.version == 2 && r.p < r.end)
      rc = read_thread_line(&r, out, t);
    else if (!(r.p < r.end && profile_key_is(&r, "thread")))
      rc = read_error(&r, "expected 'thread %u' (the header declares %u threads)", t,
                      out->thread_count);
    else if ((rc = profile_read_number_line(&r, 10, &id)) == 0 && id != t)
      r.p = r.line, rc = read_error(&r, "expected thread %u here, found %" PRIu64, t, id);
    if (rc == 0 && r.version == 1) rc = profile_legacy_thread(&r, out, t);
    if (rc == 0) {
      const ms_psnap_thread_order *o = &out->threads[t];
      uint64_t members = (uint64_t)(o->thread_members ? o->thread_members : 1) *
                         (o->rank_members ? o->rank_members : 1),
               held;
      if (__builtin_mul_overflow(o->accesses, members, &held) ||
          __builtin_add_overflow(total, held, &total))
        rc = ms_error_set(MS_ERR_FORMAT, "%s: the blocks' accesses overflow 64 bits", name);
    }
  }
  if (rc == 0 && r.p < r.end) rc = read_error(&r, "unexpected text after the last thread");
  if (rc == 0 && total != out->access_count)
    rc = ms_error_set(MS_ERR_FORMAT, "%s: header says %" PRIu64 " accesses, threads hold %" PRIu64,
                      name, out->access_count, total);
  if (rc == 0) {
    out->info.thread_count = out->thread_count;
    out->info.access_count = out->access_count;
  }
  free(r.source_dir);
  if (rc < 0) {
    if (!out->sites)
      out->site_count = 0;
    else
      out->site_count = sites_read;
    if (!out->threads) out->thread_count = 0;
    ms_psnap_profile_free(out);
  }
  return rc;
}

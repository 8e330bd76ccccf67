/* A profile against its trace: see memsnap/verify.h. */
#include "memsnap/verify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/id_index.h"
#include "memsnap/error.h"
#include "memsnap/sites.h"

typedef struct thread_replay {
  ms_source *source;
  ms_batch batch;
  size_t next;
  uint64_t index;
} thread_replay;

/* A profile site's own sequence: exact sites step through their pattern, lossless ones read
 * their addresses; lossy sites (drawn from a histogram) are not compared this way. */
typedef struct site_sequence {
  ms_expr_cursor strides;
  int ready;
  uint64_t next_address, position, stride_left;
  int64_t stride;
} site_sequence;

/* A profile site's key: its instruction address and rest = thread << 16 | kind << 8 |
 * size. */
typedef struct site_key {
  uint64_t pc, rest;
} site_key;

typedef struct verify_state {
  ms_verify_result *r;
  ms_psnap_profile *profile;
  thread_replay *threads;
  site_sequence *sequences;
  site_key *keys;  /* per profile site */
  id_index by_key; /* site_key -> profile site */
  uint64_t index;
  ms_psnap_filter *filter; /* the profile's selection, applied to the trace */
  int thread;              /* >= 0: only this thread of the trace is compared */
} verify_state;

static const ms_access *next_replayed(thread_replay *t) {
  if (t->next == t->batch.count) {
    int n = ms_source_next(t->source, &t->batch);
    if (n <= 0) return NULL;
    t->next = 0;
  }
  return &t->batch.accesses[t->next++];
}

void ms_verify_describe_site(const ms_verify_result *result, uint32_t site, char *buf,
                             size_t size) {
  const ms_psnap_profile *p = &result->profile;
  ms_site_describe(ms_site_table_get(p->info.sites, p->sites[site].trace_site), buf, size);
}

static const char *ordinal_suffix(uint64_t n) {
  if (n % 100 >= 11 && n % 100 <= 13) return "th";
  return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

static uint64_t key_hash(uint64_t pc, uint64_t rest) {
  return id_index_hash(pc * 0x9e3779b97f4a7c15ULL ^ rest * 0xbf58476d1ce4e5b9ULL);
}

static uint64_t key_rest(uint32_t thread, unsigned kind, unsigned size) {
  return (uint64_t)thread << 16 | (uint64_t)kind << 8 | size;
}

typedef struct key_lookup {
  const verify_state *v;
  site_key key;
} key_lookup;

static int same_key(const void *context, uint32_t site) {
  const key_lookup *l = context;
  return l->v->keys[site].pc == l->key.pc && l->v->keys[site].rest == l->key.rest;
}

static uint64_t hash_of_key(const void *context, uint32_t site) {
  const verify_state *v = context;
  return key_hash(v->keys[site].pc, v->keys[site].rest);
}

static int build_site_keys(verify_state *v) {
  const ms_psnap_profile *p = v->profile;
  v->keys = calloc(p->site_count + 1, sizeof *v->keys);
  v->sequences = calloc(p->site_count + 1, sizeof *v->sequences);
  if (!v->keys || !v->sequences) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  for (uint32_t s = 0; s < p->site_count; s++) {
    const ms_psnap_site *site = &p->sites[s];
    const ms_site *where = ms_site_table_get(p->info.sites, site->trace_site);
    v->keys[s] = (site_key){where ? where->pc : 0, key_rest(site->thread, site->kind, site->size)};
    /* a key held twice (two trace sites of one pc) keeps its first site */
    key_lookup l = {v, v->keys[s]};
    uint64_t hash = key_hash(l.key.pc, l.key.rest);
    int rc = id_index_find(&v->by_key, hash, same_key, &l) < 0
                 ? id_index_add(&v->by_key, hash, s, hash_of_key, v)
                 : 0;
    if (rc < 0) return rc;
    if (!site->lossy || site->addresses) {
      site_sequence *q = &v->sequences[s];
      if (!site->addresses) {
        rc = ms_expr_cursor_init(&q->strides, &site->pattern, 1);
        if (rc < 0) return rc;
      }
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
  key_lookup l = {v, {where ? where->pc : 0, key_rest(a->thread, a->kind, a->size)}};
  int64_t site = id_index_find(&v->by_key, key_hash(l.key.pc, l.key.rest), same_key, &l);
  return site < 0 ? UINT32_MAX : (uint32_t)site;
}

/* The trace access a against the next address of its site's own sequence. */
static void compare_own(verify_state *v, const ms_site_table *trace_sites, const ms_access *a) {
  ms_verify_result *r = v->r;
  uint32_t s = profile_site_of(v, trace_sites, a);
  if (s == UINT32_MAX) {
    r->own_unmatched++;
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
      q->stride_left = ms_expr_cursor_run(&q->strides, UINT64_MAX, &q->stride);
    q->next_address += (uint64_t)q->stride;
    q->stride_left--;
  }
  int same = q->position < site->count && expected == a->address;
  q->position++;
  r->sites[s].own_total++;
  r->sites[s].own_exact += same;
  r->own_compared++;
  r->own_exact += same;
}

/* Compares trace access `a` with its thread's next replayed access; returns that access
 * (NULL when the replay has none). */
static const ms_access *compare(verify_state *v, const ms_site_table *trace_sites,
                                const ms_access *a) {
  ms_verify_result *r = v->r;
  ms_psnap_profile *p = v->profile;
  uint64_t index = v->index++;
  compare_own(v, trace_sites, a);
  if (a->thread >= p->thread_count) {
    r->extra++;
    return NULL;
  }
  thread_replay *t = &v->threads[a->thread];
  const ms_access *replayed = next_replayed(t);
  uint64_t thread_index = t->index++;
  r->compared++;
  if (!replayed) {
    r->extra++;
    return NULL;
  }
  int same =
      replayed->address == a->address && replayed->size == a->size && replayed->kind == a->kind;
  uint32_t s = replayed->site < p->site_count ? replayed->site : 0;
  r->sites[s].total++;
  r->sites[s].exact += same;
  r->exact += same;
  if (!same && !r->diverged) {
    char mine[512], theirs[64] = "";
    ms_verify_describe_site(r, s, mine, sizeof mine);
    uint32_t ts = profile_site_of(v, trace_sites, a);
    if (ts == UINT32_MAX)
      snprintf(theirs, sizeof theirs, "a site not in the profile");
    else
      snprintf(theirs, sizeof theirs, "site s%u", ts);
    snprintf(r->divergence, sizeof r->divergence,
             "access %" PRIu64 " (thread %u, its access %" PRIu64 "): trace %s 0x%" PRIx64
             " %u of %s, profile %s 0x%" PRIx64 " %u, the %" PRIu64 "%s access of site s%u %s",
             index, a->thread, thread_index, ms_access_kind_name((ms_access_kind)a->kind),
             a->address, a->size, theirs, ms_access_kind_name((ms_access_kind)replayed->kind),
             replayed->address, replayed->size, r->sites[s].total,
             ordinal_suffix(r->sites[s].total), s, mine);
    r->diverged = 1;
  }
  return replayed;
}

/* A replay of the profile (all of it, or the sites of `mask`), from its own copy. */
static int open_replay(const char *path, const ms_verify_options *options, const uint8_t *mask,
                       ms_source **out) {
  ms_psnap_profile copy;
  ms_psnap_replay_options o = {.site_mask = mask};
  int rc = ms_psnap_profile_load(path, &copy);
  if (rc == 0)
    rc = ms_psnap_profile_pick(&copy, options->pick_rank ? (int64_t)options->rank : -1,
                               options->pick_thread ? (int64_t)options->thread : -1);
  if (rc < 0) {
    ms_psnap_profile_free(&copy);
    return rc;
  }
  return ms_psnap_replay_open(&copy, mask ? &o : NULL, out);
}

/* The trace, filtered by the selection, against the replays; the selected accesses go to
 * the trace's hierarchies when there are any. With `mixed` (whole run), every trace access
 * goes to `set`, and to `mixed` the left-out ones and, for the selected ones, the replayed
 * accesses they were compared with. */
static int compare_trace(verify_state *v, ms_source *trace, ms_hierarchy_set *set,
                         ms_hierarchy_set *mixed) {
  ms_batch batch = {0}, kept = {0}, replaced = {0};
  int n = ms_batch_init(&batch, 0);
  if (n == 0) n = ms_batch_init(&kept, 0);
  if (n == 0) n = ms_batch_init(&replaced, 0);
  while (n == 0 && (n = ms_source_next(trace, &batch)) > 0) {
    const ms_site_table *sites = ms_source_info(trace)->sites;
    kept.count = 0;
    replaced.count = 0;
    for (size_t i = 0; i < batch.count; i++) {
      const ms_access *a = &batch.accesses[i];
      int keep = ms_psnap_filter_keeps(v->filter, sites, a->site);
      if (keep > 0 && v->thread >= 0 && a->thread != v->thread) keep = 0;
      if (keep < 0) n = keep;
      if (keep <= 0) {
        v->r->left_out += keep == 0;
        if (mixed && keep == 0) {
          kept.accesses[kept.count++] = *a;
          replaced.accesses[replaced.count++] = *a;
        }
        continue;
      }
      const ms_access *replayed = compare(v, sites, a);
      kept.accesses[kept.count++] = *a;
      if (mixed && replayed) replaced.accesses[replaced.count++] = *replayed;
    }
    if (n < 0) break;
    if (set && kept.count) {
      int rc = ms_hierarchy_set_access_batch(set, &kept);
      if (rc < 0) n = rc;
    }
    if (mixed && replaced.count && n >= 0) {
      int rc = ms_hierarchy_set_access_batch(mixed, &replaced);
      if (rc < 0) n = rc;
    }
    if (n > 0) n = 0;
  }
  ms_batch_free(&batch);
  ms_batch_free(&kept);
  ms_batch_free(&replaced);
  return n;
}

int ms_psnap_verify(const char *profile_path, ms_source *trace, const ms_verify_options *options,
                    ms_verify_result *out) {
  static const ms_verify_options defaults;
  const ms_verify_options *o = options ? options : &defaults;
  memset(out, 0, sizeof *out);
  int rc = ms_psnap_profile_load(profile_path, &out->profile);
  if (rc < 0) return rc;
  if ((rc = ms_psnap_profile_pick(&out->profile, o->pick_rank ? (int64_t)o->rank : -1,
                                  o->pick_thread ? (int64_t)o->thread : -1)) < 0) {
    char message[512];
    snprintf(message, sizeof message, "%s", ms_error_message());
    ms_psnap_profile_free(&out->profile);
    return ms_error_set(rc, "%s: %s", profile_path, message);
  }
  ms_psnap_profile *profile = &out->profile;
  verify_state v = {.r = out, .profile = profile, .thread = o->pick_thread ? (int)o->thread : -1};
  ms_hierarchy_set *sets[2] = {NULL, NULL};
  ms_source *whole = NULL;
  ms_batch batch = {0};
  v.threads = calloc(profile->thread_count + 1, sizeof *v.threads);
  out->sites = calloc(profile->site_count + 1, sizeof *out->sites);
  if (!v.threads || !out->sites) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (rc == 0) rc = ms_batch_init(&batch, 0);
  if (rc == 0) rc = build_site_keys(&v);
  if (rc == 0) rc = ms_psnap_filter_new(profile->selection, &v.filter);
  for (uint32_t t = 0; rc == 0 && t < profile->thread_count; t++) {
    uint8_t *mask = calloc(profile->site_count + 1, 1);
    if (!mask) {
      rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
      break;
    }
    for (uint32_t s = 0; s < profile->site_count; s++)
      mask[s] = profile->sites[s].thread == t;
    rc = open_replay(profile_path, o, mask, &v.threads[t].source);
    free(mask);
    if (rc == 0) rc = ms_batch_init(&v.threads[t].batch, 0);
  }
  if (rc == 0 && !o->no_cache) {
    rc = ms_evaluation_set_new(&sets[0]);
    if (rc == 0) rc = ms_evaluation_set_new(&sets[1]);
  }
  if (rc == 0) rc = compare_trace(&v, trace, sets[0], o->whole ? sets[1] : NULL);
  for (uint32_t t = 0; rc == 0 && t < profile->thread_count; t++) {
    const ms_access *a;
    batch.count = 0;
    while (rc == 0 && (a = next_replayed(&v.threads[t]))) { /* beyond the trace */
      out->missing++;
      if (!o->whole || !sets[1]) continue;
      batch.accesses[batch.count++] = *a;
      if (batch.count == batch.capacity) {
        rc = ms_hierarchy_set_access_batch(sets[1], &batch);
        batch.count = 0;
      }
    }
    if (rc == 0 && batch.count) rc = ms_hierarchy_set_access_batch(sets[1], &batch);
    batch.count = 0;
  }
  if (rc == 0 && sets[1]) {
    /* the whole replay, as `memsnap sim PROFILE` simulates it (or, whole, the run with
     * the replay in the selection's place, made above) */
    int n = 0;
    if (!o->whole) rc = open_replay(profile_path, o, NULL, &whole);
    while (rc == 0 && !o->whole && (n = ms_source_next(whole, &batch)) > 0)
      rc = ms_hierarchy_set_access_batch(sets[1], &batch);
    if (rc == 0 && n < 0) rc = n;
    out->whole = o->whole;
    if (rc == 0) rc = ms_hierarchy_set_flush(sets[0]);
    if (rc == 0) rc = ms_hierarchy_set_flush(sets[1]);
    if (rc == 0) {
      ms_evaluation_hit_rates(sets[0], &out->trace_rates);
      ms_evaluation_hit_rates(sets[1], &out->replay_rates);
      ms_evaluation_differences(&out->trace_rates, &out->replay_rates, out->levels);
      out->has_rates = 1;
    }
  }
  if (rc == 0) {
    out->total = out->compared + out->missing;
    for (uint32_t s = 0; s < profile->site_count; s++) {
      ms_verify_site *site = &out->sites[s];
      site->own = v.sequences[s].ready;
      if (site->own && site->own_total) {
        out->exact_sites++;
        out->whole_sites +=
            site->own_exact == site->own_total && site->own_total == profile->sites[s].count;
      }
    }
  }
  for (uint32_t t = 0; v.threads && t < profile->thread_count; t++) {
    ms_source_destroy(v.threads[t].source);
    ms_batch_free(&v.threads[t].batch);
  }
  free(v.threads);
  ms_source_destroy(whole);
  ms_hierarchy_set_free(sets[0]);
  ms_hierarchy_set_free(sets[1]);
  ms_batch_free(&batch);
  ms_psnap_filter_free(v.filter);
  for (uint32_t s = 0; v.sequences && s < profile->site_count; s++)
    if (v.sequences[s].ready && !profile->sites[s].addresses)
      ms_expr_cursor_free(&v.sequences[s].strides);
  free(v.sequences);
  free(v.keys);
  id_index_free(&v.by_key);
  if (rc < 0) ms_verify_result_free(out);
  return rc;
}

void ms_verify_result_free(ms_verify_result *result) {
  ms_psnap_profile_free(&result->profile);
  free(result->sites);
  memset(result, 0, sizeof *result);
}

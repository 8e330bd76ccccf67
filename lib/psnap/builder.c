/* The profile builder: a sink that turns a stream of accesses into a profile, online.
 *
 * Model: a profile site is one (thread, instruction, kind, size); an instruction issuing
 * several sizes or kinds becomes several sites, so each site's accesses are uniform.
 * Per site, while the stream runs: its count, first and last address, its stride history
 * (section II-B of psnap-mills-snavely-carrington.txt), the exact fold of its strides
 * (memsnap/fold.h) up to a cap on the fold's terms, its address range and alignment, a
 * reservoir sample of its addresses (its first 1024, then only once its fold is over the
 * cap: for the histogram of a lossy site), once over the cap its frequent strides and
 * the reuse times of its blocks (reuse_add), the lines it touched (first touches) and,
 * over a table of the thread's latest touch of each line, how long before any access had
 * touched its line (shared odds), the anchor and distance its accesses most
 * often follow (for a tie: the previous access of the thread, or the latest one to the
 * same address) and, with --lossless, every address. Per thread: the fold of its site
 * numbers (the order, over a window of --order-window terms), and once that fold is over
 * its cap, the counts of each site-to-site transition (PSnAP's path counts, section III),
 * the stored prefix's counted at that moment and the fold freed.
 * At the end, per site: the decoded history gives the class; its pattern is kept when
 * it reproduces the exact strides of the fold; else the fold's expression is the pattern;
 * a site whose fold is over its cap is lossy (a matching stride history proves nothing:
 * equal histories are not equal sequences), keeps its reuse odds when replaying its last
 * accesses with them comes closer to the program's reuse than without (make_lossy), and
 * is tied to another lossy site when at least 90% of its accesses were at that site's
 * latest address plus one distance (tie_sites). Sites are finished on a thread pool once
 * the stream has ended (judging lossy models was 28% of profiling bzip2).
 * Cost per access: a site lookup (a one-entry cache, then a direct table per trace site),
 * a history update (the stride matched last, the next one, then a scan of the unique
 * strides) and two fold pushes (O(1) when the fold's prediction holds).
 */
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../core/id_index.h"
#include "../core/jobs.h"
#include "../core/grow.h"
#include "memsnap/error.h"
#include "memsnap/fold.h"
#include "memsnap/psnap.h"
#include "replay_internal.h"

/* Reservoir samples per site for lossy histograms: with 4096, the 8 x 32 histograms of a
 * uniform gather held 16 samples per bin and their noise alone gave 1.06 points of mean
 * L1 hit-rate error on the gather kernel; with 16384 it is 0.67 (65536: 0.66; spmv 0.24;
 * tests/psnap), at a quarter of the memory (sqlite3's 413 lossy sites). The arrays grow
 * with the site's accesses, so small sites stay small. */
#define RESERVOIR 16384
#define SAMPLE_ALWAYS 1024

/* A lossy site's frequent strides: the space-saving counters of Metwally et al. (each
 * count overestimates by at most its `error`), kept from the point where the site's
 * history and fold both gave up; a found stride moves one place forward, so that the
 * frequent ones are met first. */
#define TOP_COUNTERS 32
typedef struct top_strides {
  int64_t stride[TOP_COUNTERS];
  uint64_t count[TOP_COUNTERS], error[TOP_COUNTERS];
  uint32_t used;
  uint64_t tracked; /* strides counted */
} top_strides;

/* An irregular site's recent 128-byte lines: 512 sets of 8, the least recent of a set
 * replaced, so that the lines of its last 4095 accesses are nearly all there (96 KiB
 * per irregular site). Line + 1 (0: empty) and, per 32-byte quarter, the site's access
 * number that touched it last, plus one (0: never); a line's latest touch is the latest
 * of its four (a copy of it cost 16 KiB per site, 8 MB of bzip2's profiling). */
#define REUSE_SETS 512
#define REUSE_WAYS 8
#define REUSE_TIMES 4096     /* reuse times measured: 1 to 4095 */
#define JUDGE_ACCESSES 16384 /* a lossy site's models are judged on its last accesses */
#define REUSE_BETTER 0.01    /* the reuse odds kept when they close the gap by this much */
typedef struct reuse_lines {
  uint64_t line[REUSE_SETS * REUSE_WAYS];
  uint32_t when[REUSE_SETS * REUSE_WAYS][4]; /* modulo 2^32: times under 2^12 */
  /* the site's jumps (accesses not at one of its frequent strides from the previous one):
   * what replay's walk takes its reuse odds for; all its accesses: what the odds are
   * judged by */
  uint64_t accesses, bins[MS_PSNAP_REUSE_SIZES][MS_PSNAP_REUSE_BINS];
  uint64_t all_accesses, all_bins[MS_PSNAP_REUSE_SIZES][MS_PSNAP_REUSE_BINS];
  /* its accesses' times since any access of the thread touched their 64-byte line */
  uint64_t shared_accesses, shared[MS_PSNAP_SHARED_BINS], shared_same[MS_PSNAP_SHARED_BINS];
  int first; /* whether the latest access touched its line first */
} reuse_lines;

/* The 64-byte lines an irregular site has touched, from the point it proved irregular:
 * bitmaps of TOUCH_LINES lines by line / TOUCH_LINES (open addressing, key + 1), so that
 * a site's memory is its footprint / 512 plus a bitmap per region it touched; and per
 * chunk of its accesses (TOUCH_CHUNKS chunks, doubled in length when full), the lines it
 * touched first. */
#define TOUCH_LINES 4096
#define TOUCH_CHUNKS 64
#define TOUCH_CHUNK_FIRST 1024
typedef struct first_touches {
  uint64_t *keys;
  uint64_t (*maps)[TOUCH_LINES / 64];
  uint32_t capacity, used, cached; /* cached: the slot of the last region looked up */
  uint64_t chunk_length;
  /* next: first touches of the line after the previous first touch (last_first, + 1) */
  uint64_t lines[TOUCH_CHUNKS], next, last_first;
  uint64_t distinct; /* lines the site touched, its whole run (seed_lines at its cap, then
                        count_reuse) */
} first_touches;

typedef struct site_state {
  uint64_t key;
  uint32_t trace_site;
  uint16_t thread;
  uint8_t kind, size;
  uint64_t count, first, last, low, high, offsets; /* offsets: OR of address - first */
  ms_stride_history history;
  ms_fold *fold;
  /* The sample's addresses: offsets from `first` (4 bytes) while they all fit in 32 bits,
   * else the addresses (8 bytes; sample_near freed): bzip2's 493 lossy sites kept 60 MB
   * of samples at 16 bytes each (position included). */
  int32_t *sample_near;
  uint64_t *sample;
  float *sample_position; /* the site's access number of each sample: exact below 2^24,
                             within 2^-24 of it above (it only picks one eighth of the run);
                             4 bytes, not 8: sqlite3's 412 lossy sites kept 43 MB of them */
  uint32_t sample_count, sample_capacity;
  uint64_t sampled; /* accesses offered to the sample */
  uint64_t *all;
  size_t all_capacity;
  top_strides *tops;  /* once the history and the fold are over their caps */
  reuse_lines *reuse; /* from the same point on */
  first_touches *touches;
  uint8_t over; /* its fold went over --site-cap (and was freed): lossy */
  /* the most frequent (previous site of the thread, address - its address), by a
   * majority vote; hits: times it held since it became the candidate */
  uint32_t tie_site;
  int64_t tie_delta;
  uint64_t tie_votes, tie_hits, tie_observed; /* observed: accesses voted on */
  int tie_over;             /* the votes are those since the site went over its cap */
  uint32_t transition_slot; /* of its latest transition to another site (a hint) */
} site_state;

typedef struct transition {
  uint64_t key; /* from << 32 | to, plus one so that 0 means empty */
  uint32_t period;
  uint64_t times;
} transition;

/* With --order-periods N > 1, a lossy order's path counts are kept per period of the
 * thread's accesses, so that replay runs each phase of the program in its time:
 * PERIOD_FIRST accesses at first, doubled (adjacent periods merged) whenever the run
 * reaches N periods; a long run ends with between N/2 and N. With every lossy site kept
 * lossless (only the order differs), 512 periods took the mean L2 error over the catalog
 * of sort from 12.7 to 0.09 points, sqlite3 13.1 to 1.9, gzip 1.1 to 0.01 (128: xz 3.6 to
 * 0.25), for profiles up to 1.5x larger. With lossy sites replayed each on its own they
 * raised the L1 error (gzip 1.1 -> 2.8, sqlite3 1.6 -> 3.6): the order's interleaving
 * then showed that the sites did not share their lines. Since lossy sites take lines
 * shared with the thread's other accesses (`shared` odds), 64 periods are the default
 * (512 with --lossless): with both, mean L2 error bzip2 3.1 -> 0.63, sort 15.3 -> 4.5,
 * xz 13.2 -> 7.3, cg 12.5 -> 4.0 (docs/accuracy.md); 512 periods gave about the same for
 * profiles 1.6-3.5x larger. */
#define PERIOD_FIRST 1024

/* The latest access of a thread to an address, by a hash of the address (direct mapped):
 * the address + 1 (0: empty) and its site. */
#define SEEN_SLOTS 4096
#define NONE_SITE UINT32_MAX
typedef struct seen_access {
  uint64_t address;
  uint32_t site;
} seen_access;

/* The latest access of a thread to each 64-byte line, direct mapped by a hash of the line
 * (LINE_SLOTS slots: its 32-byte block + 1, 0 empty, and the thread's access number). */
#define LINE_SLOTS (1u << 18)
typedef struct line_touch {
  uint64_t block, when;
} line_touch;

typedef struct thread_state {
  ms_fold *order;
  seen_access *seen;
  line_touch *lines;
  uint64_t accesses;
  int over;
  int under_floor; /* over because it compressed less than the order floor */
  uint32_t previous;
  uint64_t previous_address;
  uint32_t last_irregular; /* the latest site over its cap (NONE_SITE: none yet) */
  uint32_t first_site;     /* of a lossy order */
  transition *transitions;
  uint32_t transition_count, transition_capacity; /* capacity: power of two */
  uint64_t period_length;                         /* accesses per period of the paths */
} thread_state;

typedef struct builder {
  ms_sink sink;
  ms_psnap_options options;
  site_state *sites;
  uint32_t site_count, site_capacity;
  id_index by_key; /* site key -> site */
  /* per trace site below BY_TRACE_MAX: the profile site + 1 last found for it (the key
   * checked; a hash probe whose every step read a site's key took 8% of profiling sqlite3) */
  uint32_t *by_trace;
  uint64_t by_trace_capacity;
  thread_state *threads;
  uint32_t thread_count;
  ms_psnap_filter *filter; /* from the first batch on */
  uint64_t excluded;
  /* accesses left out per trace site below BY_TRACE_MAX, to name the object the selection
   * left out most (a profile of lmp's executable holds 86 of its 61 M accesses: the work is
   * in liblammps.so.0, and the summary says so) */
  uint64_t *excluded_by_site;
  uint64_t excluded_capacity;
  uint64_t cached_key;
  uint32_t cached_site;
  uint64_t rng;
  ms_psnap_profile result;
  int finished;
  /* builder_end's: the next site to finish, and whether one failed */
  atomic_uint next_finish;
  atomic_int finish_failed;
} builder;

void ms_psnap_options_default(ms_psnap_options *options) {
  memset(options, 0, sizeof *options);
  options->max_strides = 32;
  options->site_cap = 2048;
  options->order_cap = 262144;
  options->order_window = 1024;
  options->order_periods = 64;
  options->order_floor = 16;
}

void ms_psnap_profile_lossy(const ms_psnap_profile *profile, ms_psnap_lossy_summary *out) {
  memset(out, 0, sizeof *out);
  for (uint32_t s = 0; s < profile->site_count; s++)
    if (profile->sites[s].lossy) out->sites++, out->accesses += profile->sites[s].count;
  for (uint32_t t = 0; t < profile->thread_count; t++)
    out->threads += profile->threads[t].lossy != 0;
}

void ms_psnap_options_preset(ms_psnap_options *options, int fidelity) {
  /* Sites of 2048 terms at normal, not 512 (docs/accuracy.md, small sizes, L1 / L2 mean error
   * and .psnap.zst / .mtr, 512 -> 2048): cg 0.39 / 4.00 -> 0.10 / 1.53 and mg exact (its
   * restriction over V-cycles needs a second cycle's terms before it folds), sqlite3 0.99 /
   * 15.4 -> 0.58 / 11.5, sort 0.05 / 3.8 -> 0.04 / 2.6, bzip2 0.28 / 0.68 -> 0.39 / 0.80;
   * profiles up to 1.45x larger (sort 0.105 -> 0.143, bzip2 0.065 -> 0.094), profiling
   * faster and smaller (fewer lossy sites to model: sqlite3 2.3 -> 1.9 s, 204 -> 181 MB).
   * 4096 (high) gained less (sqlite3 L2 9.6, cg 1.8) for profiles 1.1-1.5x larger again. */
  static const uint32_t presets[3][3] = {
      {128, 16384, 64}, {2048, 262144, 1024}, {4096, 1u << 20, 4096}};
  if (fidelity < 0) fidelity = 0;
  if (fidelity > 2) fidelity = 2;
  options->site_cap = presets[fidelity][0];
  options->order_cap = presets[fidelity][1];
  options->order_window = presets[fidelity][2];
  /* high keeps folding an order that compresses little, up to its cap */
  options->order_floor = fidelity == 2 ? 0 : 16;
  /* periods make the order of a lossless profile near exact (PERIOD_FIRST) */
  options->order_periods = options->lossless ? 512 : 64;
}

static int new_fold(uint64_t cap, uint32_t window, ms_fold **out) {
  ms_fold_options options = ms_fold_options_default();
  options.max_nodes = cap;
  if (window) options.window = window;
  return ms_fold_new(&options, out);
}

typedef struct site_lookup {
  const builder *b;
  uint64_t key;
} site_lookup;

static int same_site(const void *context, uint32_t id) {
  const site_lookup *l = context;
  return l->b->sites[id].key == l->key;
}

static uint64_t hash_of_site(const void *context, uint32_t id) {
  return id_index_hash(((const builder *)context)->sites[id].key);
}

static int add_site(builder *b, uint64_t key, const ms_access *a, uint32_t *out) {
  if (b->site_count == b->site_capacity) {
    uint32_t capacity = b->site_capacity ? b->site_capacity * 2 : 64;
    site_state *sites = realloc(b->sites, capacity * sizeof *sites);
    if (!sites) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    b->sites = sites;
    b->site_capacity = capacity;
  }
  site_state *s = &b->sites[b->site_count];
  memset(s, 0, sizeof *s);
  *s = (site_state){.key = key,
                    .trace_site = a->site,
                    .thread = a->thread,
                    .kind = a->kind,
                    .size = a->size,
                    .low = UINT64_MAX};
  int rc = ms_stride_history_init(&s->history, b->options.max_strides);
  if (rc == 0) rc = new_fold(b->options.site_cap, 0, &s->fold);
  if (rc < 0) {
    ms_stride_history_free(&s->history);
    ms_fold_free(s->fold);
    free(s->sample);
    free(s->sample_position);
    return rc;
  }
  rc = id_index_add(&b->by_key, id_index_hash(key), b->site_count, hash_of_site, b);
  if (rc < 0) {
    ms_stride_history_free(&s->history);
    ms_fold_free(s->fold);
    return rc;
  }
  *out = b->site_count++;
  return 0;
}

#define BY_TRACE_MAX (1u << 24)
static int find_site(builder *b, const ms_access *a, uint32_t *out) {
  uint64_t key =
      (uint64_t)a->site << 32 | (uint64_t)a->thread << 16 | (uint64_t)a->kind << 8 | a->size;
  if (key == b->cached_key && b->site_count) {
    *out = b->cached_site;
    return 0;
  }
  uint32_t *direct = NULL;
  if (a->site < BY_TRACE_MAX) {
    if (a->site >= b->by_trace_capacity) {
      uint32_t *more =
          ms_grow_zeroed(b->by_trace, &b->by_trace_capacity, sizeof *more, a->site, 1024);
      if (!more) return ms_error_set(MS_ERR_NOMEM, "out of memory");
      b->by_trace = more;
    }
    direct = &b->by_trace[a->site];
    if (*direct && b->sites[*direct - 1].key == key) {
      *out = b->cached_site = *direct - 1;
      b->cached_key = key;
      return 0;
    }
  }
  site_lookup lookup = {b, key};
  int64_t found = id_index_find(&b->by_key, id_index_hash(key), same_site, &lookup);
  if (found >= 0)
    *out = (uint32_t)found;
  else {
    int rc = add_site(b, key, a, out);
    if (rc < 0) return rc;
  }
  if (direct) *direct = *out + 1;
  b->cached_key = key;
  b->cached_site = *out;
  return 0;
}

/* The selection's text: the --function/--line filter, else the program's executable (its
 * real path when it resolves), else everything. */
static char *selection_text(const builder *b, const ms_stream_info *info) {
  const ms_psnap_options *o = &b->options;
  if (o->function_count || o->line_count || o->object_count) {
    size_t size = 1;
    for (int i = 0; i < o->function_count; i++)
      size += strlen(o->functions[i]) + 10;
    for (int i = 0; i < o->line_count; i++)
      size += strlen(o->lines[i]) + 10;
    for (int i = 0; i < o->object_count; i++)
      size += strlen(o->objects[i]) + 10;
    char *text = calloc(size, 1);
    for (int i = 0; text && i < o->function_count; i++)
      strcat(strcat(strcat(text, i ? " " : ""), "function "), o->functions[i]);
    for (int i = 0; text && i < o->line_count; i++)
      strcat(strcat(strcat(text, *text ? " " : ""), "line "), o->lines[i]);
    for (int i = 0; text && i < o->object_count; i++)
      strcat(strcat(strcat(text, *text ? " " : ""), "object "), o->objects[i]);
    return text;
  }
  if (o->all_objects || !info->program || !*info->program || strchr(info->program, '\n'))
    return strdup("all");
  char real[PATH_MAX];
  const char *path = realpath(info->program, real) ? real : info->program;
  char *text = malloc(strlen(path) + 12);
  if (text) strcat(strcpy(text, "executable "), path);
  return text;
}

/* Whether the accesses of a trace site are kept (the selection, decided at the first
 * batch, when the stream's program is known). */
static int is_selected(builder *b, const ms_stream_info *info, uint32_t trace_site) {
  if (!b->filter) {
    char *text = selection_text(b, info);
    if (!text) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    int rc = ms_psnap_filter_new(text, &b->filter);
    if (rc < 0) {
      free(text);
      return rc;
    }
    b->result.selection = strcmp(text, "all") ? text : (free(text), NULL);
  }
  return ms_psnap_filter_keeps(b->filter, info->sites, trace_site);
}

/* The most recent of n quarters' times from `first` (0: none), modulo 2^32. */
/* The reuse of an access at the site's access number `now` (from 1): how many of its own
 * accesses ago it last touched the access's 64-byte line, in powers of two below
 * REUSE_TIMES, and whether that touch was to the same 32-byte half (size 0) or the other
 * (1); else how long ago the other half of its 128-byte line (2). The line of the catalog's
 * commonest size comes first: counting the 32-byte block's own time first, gzip's byte
 * loads that had touched the other half one access before counted as reuses thousands of
 * accesses back, and their replay missed 42% of the time in a 32 KiB L1 instead of 29%. */
static void reuse_add(reuse_lines *r, uint32_t now, uint64_t address, int jump) {
  uint64_t line = address >> 7;
  uint32_t set = (uint32_t)((line * 0x9e3779b97f4a7c15ULL) >> 40) & (REUSE_SETS - 1);
  uint64_t *lines = &r->line[set * REUSE_WAYS];
  uint32_t(*when)[4] = &r->when[set * REUSE_WAYS];
  uint32_t way = 0;
  while (way < REUSE_WAYS && lines[way] != line + 1)
    way++;
  unsigned quarter = (unsigned)(address >> 5) & 3, half = quarter & 2;
  r->all_accesses++;
  r->accesses += jump != 0;
  if (way < REUSE_WAYS) {
    const uint32_t *w = when[way];
    uint32_t line64 = ms_psnap_latest(w, half, 2), line128 = ms_psnap_latest(w, 0, 4);
    int size = -1;
    uint32_t time = 0;
    if (line64 && now - line64 < REUSE_TIMES)
      size = w[quarter] == line64 ? 0 : 1, time = now - line64;
    else if (line128 && now - line128 < REUSE_TIMES)
      size = 2, time = now - line128;
    if (size >= 0) {
      int bin = 31 - __builtin_clz(time);
      r->all_bins[size][bin]++;
      if (jump) r->bins[size][bin]++;
    }
  } else {
    uint32_t oldest_age = 0;
    for (uint32_t w = 0; w < REUSE_WAYS; w++) {
      uint32_t age = lines[w] ? now - ms_psnap_latest(when[w], 0, 4) : UINT32_MAX;
      if (age >= oldest_age) way = w, oldest_age = age;
    }
    lines[way] = line + 1;
    memset(when[way], 0, sizeof when[way]);
  }
  when[way][quarter] = now;
}

/* Marks the 64-byte line of `address` touched: 1 if it was not before, 0 if it was, or
 * MS_ERR_NOMEM. */
static int touch_line(first_touches *t, uint64_t address) {
  uint64_t line = address >> 6, key = line / TOUCH_LINES + 1;
  uint32_t slot = t->cached;
  if (!t->capacity || t->keys[slot] != key) {
    if (2 * (t->used + 1) > t->capacity) { /* grow: rehash the regions */
      uint32_t capacity = t->capacity ? 2 * t->capacity : 16;
      uint64_t *keys = calloc(capacity, sizeof *keys);
      uint64_t(*maps)[TOUCH_LINES / 64] = malloc(capacity * sizeof *maps);
      if (!keys || !maps) {
        free(keys), free(maps);
        return ms_error_set(MS_ERR_NOMEM, "out of memory");
      }
      for (uint32_t i = 0; i < t->capacity; i++) {
        if (!t->keys[i]) continue;
        uint32_t j = (uint32_t)(id_index_hash(t->keys[i]) & (capacity - 1));
        while (keys[j])
          j = (j + 1) & (capacity - 1);
        keys[j] = t->keys[i];
        memcpy(maps[j], t->maps[i], sizeof *maps);
      }
      free(t->keys), free(t->maps);
      t->keys = keys, t->maps = maps, t->capacity = capacity;
    }
    slot = (uint32_t)(id_index_hash(key) & (t->capacity - 1));
    while (t->keys[slot] && t->keys[slot] != key)
      slot = (slot + 1) & (t->capacity - 1);
    if (!t->keys[slot]) {
      t->keys[slot] = key;
      memset(t->maps[slot], 0, sizeof *t->maps);
      t->used++;
    }
    t->cached = slot;
  }
  uint64_t bit = line % TOUCH_LINES, *word = &t->maps[slot][bit / 64], mask = 1ull << (bit % 64);
  int fresh = !(*word & mask);
  *word |= mask;
  return fresh;
}

/* The site's first-touch counts, made and with room for its access number s->count
 * (adjacent chunks merged as the site's run grows). */
static first_touches *touches_of(site_state *s) {
  if (!s->touches) {
    if (!(s->touches = calloc(1, sizeof *s->touches))) return NULL;
    s->touches->chunk_length = TOUCH_CHUNK_FIRST;
  }
  first_touches *t = s->touches;
  while (s->count / t->chunk_length >= TOUCH_CHUNKS) {
    for (uint32_t c = 0; c < TOUCH_CHUNKS / 2; c++)
      t->lines[c] = t->lines[2 * c] + t->lines[2 * c + 1];
    memset(&t->lines[TOUCH_CHUNKS / 2], 0, sizeof t->lines / 2);
    t->chunk_length *= 2;
  }
  return t;
}

static int count_reuse(site_state *s, uint64_t address, int jump) {
  if (!s->reuse && !(s->reuse = calloc(1, sizeof *s->reuse)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  first_touches *t = touches_of(s);
  if (!t) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  reuse_add(s->reuse, (uint32_t)s->count + 1, address, jump);
  int first = touch_line(t, address);
  if (first < 0) return first;
  t->distinct += (uint64_t)first;
  s->reuse->first = first;
  return 0;
}

/* A first touch of the site that no access of its thread made lately either: a line new
 * to the program, counted in the chunk of the site's access `index`. */
static void count_new_line(first_touches *t, uint64_t index, uint64_t address) {
  t->lines[index / t->chunk_length]++;
  t->next += t->last_first && t->last_first == address >> 6;
  t->last_first = (address >> 6) + 1;
}

static void free_touches(first_touches *t) {
  if (t) free(t->keys), free(t->maps);
  free(t);
}

/* How far a model's reuse is from the program's: the largest difference, over the line
 * sizes s and the times 2^b, of the shares of accesses that touched again a block of at
 * most s bytes within fewer than 2^(b+1) of the site's accesses (what a cache of s-byte
 * lines holding about that many of the site's lines turns into hits). */
static double reuse_gap(const uint64_t (*p)[MS_PSNAP_REUSE_BINS], uint64_t p_accesses,
                        const uint64_t (*q)[MS_PSNAP_REUSE_BINS], uint64_t q_accesses) {
  double gap = 0;
  for (int size = 0; size < MS_PSNAP_REUSE_SIZES; size++)
    for (int b = 0; b < MS_PSNAP_REUSE_BINS; b++) {
      uint64_t pc = 0, qc = 0;
      for (int s2 = 0; s2 <= size; s2++)
        for (int b2 = 0; b2 <= b; b2++)
          pc += p[s2][b2], qc += q[s2][b2];
      double d = (double)pc / (double)p_accesses - (double)qc / (double)q_accesses;
      if (fabs(d) > gap) gap = fabs(d);
    }
  return gap;
}

/* The buffers of model_reuse, one set per thread that finishes sites. */
typedef struct finish_scratch {
  uint64_t *addresses;
  reuse_lines *reuse;
} finish_scratch;

/* The reuse of replay's addresses for lossy site `site` over n accesses near its end. */
static int model_reuse(finish_scratch *scratch, const ms_psnap_site *site,
                       const reuse_lines *program, uint64_t n, double *gap) {
  if (!scratch->addresses && !(scratch->addresses = malloc(JUDGE_ACCESSES * sizeof(uint64_t))))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (!scratch->reuse && !(scratch->reuse = malloc(sizeof *scratch->reuse)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  /* from the start of a block of replay's reuse: stepping from there to the last n
   * accesses took 40% of profiling bzip2 */
  uint64_t from = (site->count - n) / MS_PSNAP_REUSE_BLOCK * MS_PSNAP_REUSE_BLOCK;
  int rc = ms_psnap_lossy_addresses(site, 0, from, n, scratch->addresses);
  if (rc < 0) return rc;
  reuse_lines *r = scratch->reuse;
  memset(r, 0, sizeof *r);
  for (uint64_t i = 0; i < n; i++)
    reuse_add(r, (uint32_t)i + 1, scratch->addresses[i], 1);
  *gap = reuse_gap(program->all_bins, program->all_accesses, r->all_bins, r->all_accesses);
  return 0;
}

/* Counts a stride; *frequent: whether it is one of those make_lossy would keep (at least
 * 0.5% of those counted so far), so that the access is a step of replay's walk, not a
 * jump. */
static int count_stride(site_state *s, int64_t stride, int *frequent) {
  top_strides *t = s->tops;
  if (!t && !(t = s->tops = calloc(1, sizeof *t)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  t->tracked++;
  *frequent = 0;
  for (uint32_t i = 0; i < t->used; i++)
    if (t->stride[i] == stride) {
      t->count[i]++;
      *frequent = (t->count[i] - t->error[i]) * 200 >= t->tracked;
      if (i > 0 && t->count[i] > t->count[i - 1]) { /* one place forward */
        int64_t sv = t->stride[i];
        uint64_t cv = t->count[i], ev = t->error[i];
        t->stride[i] = t->stride[i - 1], t->count[i] = t->count[i - 1],
        t->error[i] = t->error[i - 1];
        t->stride[i - 1] = sv, t->count[i - 1] = cv, t->error[i - 1] = ev;
      }
      return 0;
    }
  uint32_t slot = t->used;
  if (slot < TOP_COUNTERS) {
    t->used++;
    t->count[slot] = 0;
    t->error[slot] = 0;
  } else { /* replace the least counted: the newcomer inherits its count as error */
    slot = 0;
    for (uint32_t i = 1; i < TOP_COUNTERS; i++)
      if (t->count[i] <= t->count[slot]) slot = i;
    t->error[slot] = t->count[slot];
  }
  t->stride[slot] = stride;
  t->count[slot]++;
  return 0;
}

static uint32_t transition_slot(const transition *table, uint32_t capacity, uint64_t key,
                                uint32_t period) {
  uint32_t slot = (uint32_t)id_index_hash(key ^ (uint64_t)period << 48) & (capacity - 1);
  while (table[slot].key && (table[slot].key != key || table[slot].period != period))
    slot = (slot + 1) & (capacity - 1);
  return slot;
}

/* The table at `capacity` (a power of two, at least twice its entries), periods divided
 * by `merge` (1 or 2: adjacent periods merged). */
static int rehash_transitions(thread_state *t, uint32_t capacity, uint32_t merge) {
  transition *table = calloc(capacity, sizeof *table);
  if (!table) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  uint32_t count = 0;
  for (uint32_t i = 0; i < t->transition_capacity; i++) {
    if (!t->transitions[i].key) continue;
    uint32_t period = t->transitions[i].period / merge;
    uint32_t slot = transition_slot(table, capacity, t->transitions[i].key, period);
    if (!table[slot].key) {
      table[slot] = t->transitions[i];
      table[slot].period = period;
      count++;
    } else
      table[slot].times += t->transitions[i].times;
  }
  free(t->transitions);
  t->transitions = table;
  t->transition_capacity = capacity;
  t->transition_count = count;
  return 0;
}

/* Counts the transition into the thread's access number `index` (from 1). */
static int count_transition(builder *b, thread_state *t, uint32_t from, uint32_t to,
                            uint64_t index) {
  if (!t->period_length) t->period_length = b->options.order_periods > 1 ? PERIOD_FIRST : 0;
  while (t->period_length && index / t->period_length >= b->options.order_periods) {
    int rc = t->transition_capacity ? rehash_transitions(t, t->transition_capacity, 2) : 0;
    if (rc < 0) return rc;
    t->period_length *= 2;
  }
  uint32_t period = t->period_length ? (uint32_t)(index / t->period_length) : 0;
  if (2 * (t->transition_count + 1) > t->transition_capacity) {
    int rc = rehash_transitions(t, t->transition_capacity ? t->transition_capacity * 2 : 256, 1);
    if (rc < 0) return rc;
  }
  uint64_t key = ((uint64_t)from << 32 | to) + 1;
  /* the slot of the site's latest transition first (a site is mostly followed by one
   * site): the probes took 11% of profiling sqlite3 */
  uint32_t slot = b->sites[from].transition_slot;
  if (slot >= t->transition_capacity || t->transitions[slot].key != key ||
      t->transitions[slot].period != period) {
    slot = transition_slot(t->transitions, t->transition_capacity, key, period);
    b->sites[from].transition_slot = slot;
  }
  if (!t->transitions[slot].key) {
    t->transitions[slot].key = key;
    t->transitions[slot].period = period;
    t->transition_count++;
  }
  t->transitions[slot].times++;
  return 0;
}

/* One vote of a site's access on its tie candidate (a majority vote: a miss takes a vote
 * back): 1 if the candidate stays, 0 if a new one is to be chosen. */
static int tie_vote(const builder *b, site_state *s, uint64_t address) {
  s->tie_observed++;
  if (!s->tie_votes) return 0;
  if (address == b->sites[s->tie_site].last + (uint64_t)s->tie_delta) {
    s->tie_votes++, s->tie_hits++;
    return 1;
  }
  return --s->tie_votes != 0;
}

/* A vote for site `self`'s tie. The candidate holds when the access is at its anchor's
 * latest address plus its distance, which is what replay gives a tied site; when the
 * votes run out, the next candidate is the site that last touched the same address
 * (`same`, NONE if not remembered), at the distance from where that site is now: sort's
 * store that puts back the byte it had cut off a line thousands of accesses before (+0),
 * an insertion sort's store to column[p] that its load read as column[p - 1] one step
 * before (+4); else the thread's previous access (the next field of the node a key was
 * read from). */
static void observe_tie(builder *b, uint32_t self, uint64_t address, const thread_state *t,
                        uint32_t same) {
  site_state *s = &b->sites[self];
  if (!s->tie_over) { /* the votes of its exact part (observe_follow) end */
    s->tie_over = 1;
    s->tie_votes = s->tie_hits = s->tie_observed = 0;
  }
  if (tie_vote(b, s, address)) return;
  if (same != NONE_SITE && same != self)
    s->tie_site = same, s->tie_delta = (int64_t)(address - b->sites[same].last);
  else if (t->previous != self)
    s->tie_site = t->previous, s->tie_delta = (int64_t)(address - t->previous_address);
  else
    return;
  s->tie_votes = 1, s->tie_hits = 1;
}

/* A site within its cap votes on one candidate only: the latest site over its cap that
 * ran in its thread, at a distance of at most FOLLOW_REACH bytes (the value field of the
 * node that a lossy key load found). */
#define FOLLOW_REACH 4096
/* and only a site of at least FOLLOW_MIN accesses is tied so (bzip2's profile had 291
 * more ties, sites of 2 accesses on the stack, 8% larger and no closer to the program),
 * and one of more than one address: sort's loads of a global variable were tied to lossy
 * sites that touched it 90% of the time, and followed them elsewhere the rest */
#define FOLLOW_MIN 256
static void observe_follow(builder *b, uint32_t self, uint64_t address, const thread_state *t) {
  site_state *s = &b->sites[self];
  if (tie_vote(b, s, address)) return;
  int64_t delta = (int64_t)(address - b->sites[t->last_irregular].last);
  if (delta < -FOLLOW_REACH || delta > FOLLOW_REACH) return;
  s->tie_site = t->last_irregular, s->tie_delta = delta;
  s->tie_votes = 1, s->tie_hits = 1;
}

static int prefix_to_paths(builder *b, thread_state *t) {
  ms_expr order;
  ms_expr_cursor cursor;
  int rc = ms_fold_expr(t->order, &order);
  if (rc == 0) rc = ms_expr_cursor_init(&cursor, &order, 0);
  int64_t value, previous = -1;
  uint64_t index = 0, run;
  while (rc == 0 && (run = ms_expr_cursor_run(&cursor, UINT64_MAX, &value)) > 0)
    for (; rc == 0 && run > 0; run--) {
      if (previous < 0)
        t->first_site = (uint32_t)value;
      else
        rc = count_transition(b, t, (uint32_t)previous, (uint32_t)value, index);
      previous = value;
      index++;
    }
  if (order.finished) ms_expr_cursor_free(&cursor);
  ms_expr_free(&order);
  ms_fold_free(t->order);
  t->order = NULL;
  return rc;
}

/* Whether the thread's order, folded so far, compresses less than the order floor: at least
 * MS_PSNAP_FLOOR_TERMS terms and fewer than order_floor accesses per term (looked at every
 * 1024 accesses). Every lossy order of the workload set went under 16 long before its cap
 * (cg: at most 11.8 accesses per term once past 16384 terms, bzip2 10.1, the others under
 * 3), and folding it on to the cap was wasted work: with the floor, cg, hashtab, bintree,
 * sort and gzip profiled in 0.88, 0.51, 0.84, 0.70 and 0.87 of the time, to the same
 * profiles byte for byte. Its exact orders stay above (isort 63 accesses per term at 25017
 * terms, the others under 2400 terms), and so do loop nests of varying trip counts that
 * repeat a few terms per row of 80 accesses or more (test_psnap_format, about 30 per term).
 * A floor of 32 saved more on cg (0.69 of the time) but gave up on such rows. */
static bool below_floor(const builder *b, const thread_state *t) {
  if (!b->options.order_floor || (t->accesses & 1023) || !t->accesses) return false;
  uint64_t terms = ms_fold_node_count(t->order);
  return terms >= MS_PSNAP_FLOOR_TERMS && t->accesses < (uint64_t)b->options.order_floor * terms;
}

static int add_to_order(builder *b, uint16_t thread, uint32_t site, uint64_t address) {
  if (thread >= b->thread_count) {
    thread_state *threads = realloc(b->threads, (thread + 1u) * sizeof *threads);
    if (!threads) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    memset(threads + b->thread_count, 0, (thread + 1u - b->thread_count) * sizeof *threads);
    b->threads = threads;
    for (uint32_t t = b->thread_count; t <= thread; t++) {
      threads[t].last_irregular = NONE_SITE;
      int rc = new_fold(b->options.order_cap, b->options.order_window, &threads[t].order);
      if (rc < 0) return rc;
      b->thread_count = t + 1;
    }
  }
  thread_state *t = &b->threads[thread];
  int rc = 0;
  if (!t->over && below_floor(b, t))
    t->over = t->under_floor = 1, rc = prefix_to_paths(b, t);
  else if (!t->over) {
    rc = ms_fold_push(t->order, site);
    if (rc == MS_FOLD_OVER_CAP) t->over = 1, rc = prefix_to_paths(b, t);
  }
  if (rc == 0 && t->over) rc = count_transition(b, t, t->previous, site, t->accesses);
  /* every access enters the thread's line table from the thread's start, and an irregular
   * site's access counts the time since its line's latest touch. A table started at the
   * first irregular access missed the lines that regular code touched before: a table
   * filled by a loop, then looked up at random (tests/kernels/sparse_table.c), counted
   * its lookups' lines as first touches, and the replay touched 2757 lines rather than
   * 1500 (L2 8.7 points off, 3.3 with the table from the start). Profiling adi's 8.4 M
   * accesses, which never needed the table, took no longer with it (farm-bench, 9 pairs,
   * 0.73x), and 4 MiB more. */
  if (!t->lines && !(t->lines = calloc(LINE_SLOTS, sizeof *t->lines)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (t->lines) {
    uint64_t line = address >> 6;
    line_touch *touched = &t->lines[id_index_hash(line) & (LINE_SLOTS - 1)];
    reuse_lines *reuse = b->sites[site].reuse;
    const uint64_t limit = 1ull << MS_PSNAP_SHARED_BINS;
    uint64_t time = touched->block && (touched->block - 1) >> 1 == line
                        ? t->accesses - touched->when
                        : UINT64_MAX;
    if (!reuse && time == UINT64_MAX) {
      /* a line new to the thread (not in its line table) before the site went over its
       * cap, when its odds begin: a first touch too. Uncounted, the loader's symbol-table
       * loads, whose first 2049 of 2502 accesses went uncounted, replayed their first
       * touches as re-touches: sqlite3's L1 misses that hit L2 were 3890 in replay against
       * 1250 (hpcmo-14). Lines not touched within 2^19 were counted too at first, as after
       * the cap: xz's L2 error was 1.70 points, 1.66 so. Counting only new lines after the
       * cap too took xz to 1.01, and sort from 4.37 to 6.94: its lines re-touched after
       * 2^19 then replay spread over its run, not in their eighth. */
      first_touches *early = touches_of(&b->sites[site]);
      if (!early) return ms_error_set(MS_ERR_NOMEM, "out of memory");
      count_new_line(early, b->sites[site].count - 1, address);
    }
    if (reuse) {
      /* a line new to the site and not touched lately by the thread is a first touch,
       * replayed apart (one that other sites touched lately is shared: counted so, sort's
       * L2 error was 7.6 points rather than 4) */
      if (reuse->first && time >= limit)
        count_new_line(b->sites[site].touches, b->sites[site].count - 1, address);
      else {
        reuse->shared_accesses++;
        if (time < limit) {
          int bin = 63 - __builtin_clzll(time);
          reuse->shared[bin]++;
          reuse->shared_same[bin] += touched->block - 1 == address >> 5;
        }
      }
    }
    touched->block = (address >> 5) + 1;
    touched->when = t->accesses;
  }
  /* only sites over their cap (with top strides) can be lossy, tied or anchors: only they
   * look up and enter the latest access to an address (a hash per access of every site
   * took 10% of profiling bzip2) */
  if (b->sites[site].tops) {
    if (!t->seen && !(t->seen = calloc(SEEN_SLOTS, sizeof *t->seen)))
      return ms_error_set(MS_ERR_NOMEM, "out of memory");
    seen_access *seen = &t->seen[id_index_hash(address) & (SEEN_SLOTS - 1)];
    if (t->accesses)
      observe_tie(b, site, address, t, seen->address == address + 1 ? seen->site : NONE_SITE);
    seen->address = address + 1;
    seen->site = site;
    t->last_irregular = site;
  } else if (t->last_irregular != NONE_SITE)
    observe_follow(b, site, address, t);
  t->previous = site;
  t->previous_address = address;
  t->accesses++;
  return rc < 0 ? rc : 0;
}

/* A site that goes over its cap: the lines of its accesses so far (its fold's strides from
 * its first address, up to the access being added) enter its touched lines, so that its
 * `lines` count the whole run, not the part after the cap prorated. The prorated count was
 * twice spmv's gather's 625 lines. */
static int seed_lines(site_state *s) {
  first_touches *t = touches_of(s);
  if (!t) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  ms_expr strides;
  ms_expr_cursor cursor;
  int rc = ms_fold_expr(s->fold, &strides);
  if (rc == 0) rc = ms_expr_cursor_init(&cursor, &strides, 0);
  uint64_t address = s->first;
  int fresh = rc == 0 ? touch_line(t, address) : 0;
  if (fresh < 0) rc = fresh;
  t->distinct += fresh > 0;
  int64_t stride;
  uint64_t run;
  while (rc == 0 && (run = ms_expr_cursor_run(&cursor, UINT64_MAX, &stride)) > 0)
    for (; rc == 0 && run > 0; run--) {
      address += (uint64_t)stride;
      if ((fresh = touch_line(t, address)) < 0) rc = fresh;
      t->distinct += fresh > 0;
    }
  if (strides.finished) ms_expr_cursor_free(&cursor);
  ms_expr_free(&strides);
  return rc;
}

static int add_address(builder *b, site_state *s, uint64_t address) {
  if (b->options.lossless) {
    if (s->count == s->all_capacity) {
      size_t capacity = s->all_capacity ? s->all_capacity * 2 : 256;
      uint64_t *all = realloc(s->all, capacity * sizeof *all);
      if (!all) return ms_error_set(MS_ERR_NOMEM, "out of memory");
      s->all = all;
      s->all_capacity = capacity;
    }
    s->all[s->count] = address;
  }
  if (s->count == 0)
    s->first = address;
  else {
    int64_t stride = (int64_t)(address - s->last);
    /* an overflowed history is final (undesignated): no more scans of its 32 strides */
    int rc = s->history.overflowed ? 0 : ms_stride_history_add(&s->history, stride);
    if (rc == 0 && s->fold) {
      rc = ms_fold_push(s->fold, stride);
      if (rc == MS_FOLD_OVER_CAP) rc = 0;
      if (ms_fold_over_cap(s->fold)) { /* its terms are of no use any more */
        s->over = 1;
        if (rc == 0) rc = seed_lines(s);
        ms_fold_free(s->fold);
        s->fold = NULL;
      }
    }
    int frequent = 0;
    if (rc == 0 && (s->tops || s->over)) rc = count_stride(s, stride, &frequent);
    if (rc == 0 && s->tops) rc = count_reuse(s, address, !frequent);
    if (rc < 0) return rc;
  }
  s->last = address;
  s->offsets |= address - s->first;
  if (address < s->low) s->low = address;
  if (address > s->high) s->high = address;
  /* The sample of a site's addresses is for its histograms once it is lossy, which needs
   * its fold over the cap: before that, only its first SAMPLE_ALWAYS accesses are kept
   * (a regular site of millions of accesses held 1 MiB of them: sqlite3's profile took
   * 11x the memory of recording it). */
  if (s->count >= SAMPLE_ALWAYS && !s->over) {
    s->count++;
    return 0;
  }
  uint64_t slot = s->sample_count;
  if (slot == s->sample_capacity && slot < RESERVOIR) {
    uint32_t capacity = s->sample_capacity ? 2 * s->sample_capacity : 16;
    void *addresses;
    if (s->sample) {
      if ((addresses = realloc(s->sample, capacity * sizeof *s->sample))) s->sample = addresses;
    } else if ((addresses = realloc(s->sample_near, capacity * sizeof *s->sample_near)))
      s->sample_near = addresses;
    float *position = realloc(s->sample_position, capacity * sizeof *position);
    if (position) s->sample_position = position;
    if (!addresses || !position) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    s->sample_capacity = capacity;
  }
  if (slot == RESERVOIR) {
    b->rng = b->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    slot = (b->rng >> 33) % (s->sampled + 1);
  } else
    s->sample_count++;
  if (slot < RESERVOIR) {
    int64_t offset = (int64_t)(address - s->first);
    if (!s->sample && offset == (int32_t)offset)
      s->sample_near[slot] = (int32_t)offset;
    else {
      if (!s->sample) { /* widened, once */
        uint64_t *wide = malloc(s->sample_capacity * sizeof *wide);
        if (!wide) return ms_error_set(MS_ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; i < s->sample_count; i++)
          if (i != slot) wide[i] = s->first + (uint64_t)(int64_t)s->sample_near[i];
        free(s->sample_near);
        s->sample_near = NULL;
        s->sample = wide;
      }
      s->sample[slot] = address;
    }
    s->sample_position[slot] = (float)s->count;
  }
  s->sampled++;
  s->count++;
  return 0;
}

static int builder_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  builder *b = (builder *)sink;
  for (size_t i = 0; i < batch->count; i++) {
    const ms_access *a = &batch->accesses[i];
    int keep = is_selected(b, info, a->site);
    if (keep < 0) return keep;
    if (!keep) {
      b->excluded++;
      if (a->site < BY_TRACE_MAX) {
        if (a->site >= b->excluded_capacity) {
          uint64_t *more = ms_grow_zeroed(b->excluded_by_site, &b->excluded_capacity, sizeof *more,
                                          a->site, 1024);
          if (!more) return ms_error_set(MS_ERR_NOMEM, "out of memory");
          b->excluded_by_site = more;
        }
        b->excluded_by_site[a->site]++;
      }
      continue;
    }
    uint32_t site = 0;
    int rc = find_site(b, a, &site);
    if (rc == 0) rc = add_address(b, &b->sites[site], a->address);
    if (rc == 0) rc = add_to_order(b, a->thread, site, a->address);
    if (rc < 0) return rc;
  }
  return 0;
}

/* ---- finishing ---- */

/* The object whose accesses the selection left out most, into p->excluded_object. */
static int most_excluded_object(const builder *b, const ms_stream_info *info, ms_psnap_profile *p) {
  const char **names = NULL;
  uint64_t *counts = NULL;
  uint32_t count = 0, capacity = 0;
  for (uint32_t i = 0; i < b->excluded_capacity; i++) { /* below BY_TRACE_MAX */
    const ms_site *site = b->excluded_by_site[i] ? ms_site_table_get(info->sites, i) : NULL;
    if (!site || !site->object) continue;
    uint32_t k = 0;
    while (k < count && strcmp(names[k], site->object))
      k++;
    if (k == count) {
      if (count == capacity) {
        capacity = capacity ? 2 * capacity : 16;
        const char **more_names = realloc(names, capacity * sizeof *names);
        if (more_names) names = more_names;
        uint64_t *more_counts = more_names ? realloc(counts, capacity * sizeof *counts) : NULL;
        if (more_counts) counts = more_counts;
        if (!more_names || !more_counts) {
          free(names), free(counts);
          return ms_error_set(MS_ERR_NOMEM, "out of memory");
        }
      }
      names[count] = site->object, counts[count++] = 0;
    }
    counts[k] += b->excluded_by_site[i];
  }
  uint32_t best = UINT32_MAX;
  for (uint32_t k = 0; k < count; k++)
    if (best == UINT32_MAX || counts[k] > counts[best]) best = k;
  int rc = 0;
  if (best != UINT32_MAX) {
    if (!(p->excluded_object = strdup(names[best])))
      rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
    else
      p->excluded_object_accesses = counts[best];
  }
  free(names), free(counts);
  return rc;
}

/* Whether the first n elements of a (read cyclically) equal those of b; run by run. */
static int same_prefix(const ms_expr *a, const ms_expr *b, uint64_t n) {
  ms_expr_cursor ca, cb;
  if (ms_expr_cursor_init(&ca, a, 1) < 0) return 0;
  if (ms_expr_cursor_init(&cb, b, 0) < 0) {
    ms_expr_cursor_free(&ca);
    return 0;
  }
  int same = 1;
  while (same && n > 0) {
    int64_t va, vb;
    uint64_t run = ms_expr_cursor_run(&cb, n, &vb);
    if (run == 0) same = 0;
    n -= run;
    while (same && run > 0) {
      uint64_t got = ms_expr_cursor_run(&ca, run, &va);
      same = got > 0 && va == vb;
      run -= got;
    }
  }
  ms_expr_cursor_free(&ca);
  ms_expr_cursor_free(&cb);
  return same;
}

static int make_lossy(const builder *b, finish_scratch *scratch, site_state *s,
                      ms_psnap_site *out) {
  out->lossy = 1;
  if (!(out->histogram = calloc(MS_PSNAP_SEGMENTS, sizeof *out->histogram)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  out->low = s->low;
  out->high = s->high;
  out->alignment = s->offsets ? s->offsets & (~s->offsets + 1) : 1;
  uint64_t width = (s->high - s->low) / MS_PSNAP_HISTOGRAM_BINS + 1;
  uint64_t bins[MS_PSNAP_SEGMENTS][MS_PSNAP_HISTOGRAM_BINS] = {{0}};
  uint64_t per_segment[MS_PSNAP_SEGMENTS] = {0};
  for (uint32_t i = 0; i < s->sample_count; i++) {
    uint64_t segment =
        (uint64_t)((double)s->sample_position[i] * MS_PSNAP_SEGMENTS / (double)s->count);
    if (segment >= MS_PSNAP_SEGMENTS) segment = MS_PSNAP_SEGMENTS - 1; /* rounded up */
    uint64_t address = s->sample ? s->sample[i] : s->first + (uint64_t)(int64_t)s->sample_near[i];
    bins[segment][(address - s->low) / width]++;
    per_segment[segment]++;
  }
  /* the sample's own counts: every reader takes them as weights, and, unlike counts scaled
   * to the accesses of each period, they do not grow with the run once the reservoir is full
   * (gzip's histograms were 8618 bytes of zstd at its small size, 17548 at its large); a
   * period without samples (between the first accesses and the fold's cap) takes the whole
   * sample's histogram */
  uint64_t all[MS_PSNAP_HISTOGRAM_BINS] = {0};
  for (uint64_t g = 0; g < MS_PSNAP_SEGMENTS; g++)
    for (int i = 0; i < MS_PSNAP_HISTOGRAM_BINS; i++)
      all[i] += bins[g][i];
  for (uint64_t g = 0; g < MS_PSNAP_SEGMENTS; g++)
    memcpy(out->histogram[g], per_segment[g] ? bins[g] : all, sizeof out->histogram[g]);
  top_strides *t = s->tops;
  uint64_t strides = s->count ? s->count - 1 : 0, kept = 0;
  for (uint32_t n = 0; t && t->tracked && n < MS_PSNAP_TOP_STRIDES; n++) {
    /* the largest guaranteed count (count - error) not taken yet */
    uint32_t best = TOP_COUNTERS;
    for (uint32_t i = 0; i < t->used; i++)
      if (t->count[i] > t->error[i] &&
          (best == TOP_COUNTERS || t->count[i] - t->error[i] > t->count[best] - t->error[best]))
        best = i;
    /* a stride under 0.5% of those counted is noise, not a habit of the site */
    if (best == TOP_COUNTERS || (t->count[best] - t->error[best]) * 200 < t->tracked) break;
    /* scaled from the strides counted to all of the site's */
    uint64_t times = (uint64_t)((double)(t->count[best] - t->error[best]) / (double)t->tracked *
                                    (double)strides +
                                0.5);
    t->count[best] = t->error[best]; /* taken */
    if (times == 0 || kept + times > strides) break;
    out->top_stride[out->stride_count] = t->stride[best];
    out->top_stride_times[out->stride_count++] = times;
    kept += times;
  }
  reuse_lines *r = s->reuse;
  if (r && r->all_accesses) {
    /* Of the three models (the walk alone; reuse odds of every access, taken before the
     * walk; reuse odds of the jumps, taken when the walk jumps), the one whose replay of
     * the site's last accesses reuses closest to the program, reuse odds only when they
     * close the gap by REUSE_BETTER. A gather over an array the walk's draws cover
     * uniformly keeps none (L1 error 0.67 points; 1.20 with them); a tree walk whose
     * frequent strides come from the order of allocation reuses its top nodes before it
     * walks (bintree 3.6 points, 11.1 at jumps); an insertion sort goes back near its
     * last row at its jumps (cg 4.0 points, 4.6 before it walks). */
    uint64_t n = r->all_accesses < JUDGE_ACCESSES ? r->all_accesses : JUDGE_ACCESSES;
    double gap[3] = {0, INFINITY, INFINITY};
    int rc = model_reuse(scratch, out, r, n, &gap[0]);
    out->reuse_accesses = r->all_accesses;
    memcpy(out->reuse, r->all_bins, sizeof out->reuse);
    if (rc == 0) rc = model_reuse(scratch, out, r, n, &gap[1]);
    if (rc == 0 && out->stride_count && r->accesses) {
      out->reuse_at_jumps = 1;
      out->reuse_accesses = r->accesses;
      memcpy(out->reuse, r->bins, sizeof out->reuse);
      rc = model_reuse(scratch, out, r, n, &gap[2]);
    }
    if (rc < 0) return rc;
    int best = gap[2] < gap[1] ? 2 : 1;
    if (gap[best] + REUSE_BETTER >= gap[0]) best = 0;
    out->reuse_at_jumps = best == 2;
    out->reuse_accesses = best == 0 ? 0 : best == 1 ? r->all_accesses : r->accesses;
    memcpy(out->reuse, best == 2 ? r->bins : r->all_bins, sizeof out->reuse);
    if (best == 0) memset(out->reuse, 0, sizeof out->reuse);
  }
  if (r && r->shared_accesses) {
    out->shared_accesses = r->shared_accesses;
    memcpy(out->shared_same, r->shared_same, sizeof out->shared_same);

    memcpy(out->shared, r->shared, sizeof out->shared);
  }
  first_touches *touches = s->touches;
  for (uint32_t c = 0; touches && c < TOUCH_CHUNKS; c++) {
    /* each chunk in the eighth of the site's accesses that holds its middle */
    uint64_t middle = c * touches->chunk_length + touches->chunk_length / 2;
    uint64_t g = middle >= s->count ? MS_PSNAP_SEGMENTS - 1 : middle * MS_PSNAP_SEGMENTS / s->count;
    out->new_lines[g] += touches->lines[c];
  }
  if (touches) out->new_next = touches->next;
  /* its lines over the whole run (seed_lines, then count_reuse) */
  if (touches && touches->distinct && r && r->all_accesses) out->lines = touches->distinct;
  if (b->options.lossless) {
    out->addresses = s->all;
    s->all = NULL;
  }
  return 0;
}

/* Whether a site held to its tie candidate for at least 90% of the accesses voted on, at
 * least half of its accesses. */
static bool follows(const site_state *s) {
  return s->tie_votes && s->tie_hits * 10 >= s->tie_observed * 9 && s->tie_observed * 2 >= s->count;
}

static int finish_site(const builder *b, finish_scratch *scratch, site_state *s,
                       ms_psnap_site *out) {
  *out = (ms_psnap_site){.trace_site = s->trace_site,
                         .thread = s->thread,
                         .size = s->size,
                         .kind = s->kind,
                         .count = s->count,
                         .first_address = s->first};
  ms_stride_decoding decoding;
  int rc = ms_stride_history_decode(&s->history, &decoding);
  if (rc < 0) return rc;
  out->cls = decoding.cls;
  uint64_t strides = s->count - 1;
  int over = s->over;
  ms_expr folded;
  ms_expr_init(&folded);
  if (!over && (rc = ms_fold_expr(s->fold, &folded)) < 0) {
    ms_stride_decoding_free(&decoding);
    return rc;
  }

  /* A fold over its cap leaves nothing to prove the decoded pattern with: equal stride
   * histories (counts and stride-to-stride transitions) do not make equal sequences. cg's
   * column loads (rows of 40 to 120 entries, +4^(n-1) +8 per row) have the history of
   * (+4^63 +8)^999, which was taken as exact and matched 6% of the site's accesses. */
  int decoded_fits = decoding.cls != MS_STRIDE_UNDESIGNATED && !over &&
                     same_prefix(&decoding.pattern, &folded, strides);
  if (decoded_fits) {
    out->pattern = decoding.pattern;
    ms_expr_free(&folded);
  } else {
    ms_stride_decoding_free(&decoding);
    if (!over)
      out->pattern = folded;
    else {
      ms_expr_free(&folded);
      rc = make_lossy(b, scratch, s, out);
      if (rc == 0) rc = ms_expr_finish(&out->pattern, NULL, 0);
    }
  }
  /* a site within its cap that follows a site over its cap may be tied to it (tie_sites,
   * once every site is finished, knows whether that one is lossy): its lossy model, for
   * the accesses before its anchor runs, is kept until then */
  if (rc == 0 && !over && !b->options.lossless && s->count >= FOLLOW_MIN && s->offsets &&
      follows(s)) {
    ms_psnap_site model = {.count = s->count, .first_address = s->first};
    rc = make_lossy(b, scratch, s, &model);
    out->histogram = model.histogram;
    out->low = model.low, out->high = model.high, out->alignment = model.alignment;
  }
  return rc;
}

static int compare_transitions(const void *a, const void *b) {
  const transition *x = a, *y = b;
  if (x->period != y->period) return x->period < y->period ? -1 : 1;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* The thread's order; a lossy one leaves t->transitions compacted and sorted. */
static int finish_order(thread_state *t, ms_psnap_thread_order *out) {
  memset(out, 0, sizeof *out);
  out->accesses = t->accesses;
  ms_expr_init(&out->order);
  if (!t->over) return ms_fold_expr(t->order, &out->order);
  /* Over the cap: path counts (prefix_to_paths and the ones after it). The transition
   * into the first site counted after the prefix comes from the prefix's last site:
   * count_transition started from t->previous at the overflow point. */
  out->lossy = 1;
  out->first_site = t->first_site;
  int rc = 0;
  out->transition_from = malloc((t->transition_count + 1) * sizeof *out->transition_from);
  out->transition_to = malloc((t->transition_count + 1) * sizeof *out->transition_to);
  out->transition_times = malloc((t->transition_count + 1) * sizeof *out->transition_times);
  out->period_length = t->period_length;
  if (out->period_length)
    out->transition_period = malloc((t->transition_count + 1) * sizeof *out->transition_period);
  if (rc == 0 && (!out->transition_from || !out->transition_to || !out->transition_times ||
                  (out->period_length && !out->transition_period)))
    rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  /* by period, then source, then destination */
  uint32_t n = 0;
  for (uint32_t i = 0; rc == 0 && i < t->transition_capacity; i++)
    if (t->transitions[i].key) t->transitions[n++] = t->transitions[i];
  if (rc == 0) qsort(t->transitions, n, sizeof *t->transitions, compare_transitions);
  for (uint32_t i = 0; rc == 0 && i < n; i++) {
    uint64_t key = t->transitions[i].key - 1;
    uint32_t k = out->transition_count++;
    out->transition_from[k] = (uint32_t)(key >> 32);
    out->transition_to[k] = (uint32_t)key;
    out->transition_times[k] = t->transitions[i].times;
    if (out->transition_period) out->transition_period[k] = t->transitions[i].period;
  }
  if (rc == 0) rc = ms_expr_finish(&out->order, NULL, 0);
  return rc;
}

/* Ties between lossy sites (ms_psnap_site.tied): a site is tied when its candidate held
 * for at least 90% of the accesses voted on (those once the site was over its cap, at
 * least half of them) and names another lossy site; a chain of them ends at
 * a site that wants no tie itself (so that an anchor's addresses depend on its own
 * position only, and replay can still seek). hashtab: a chain's next field after its key (+8);
 * isort: the store of count[k] after its load (+0). */
/* The models of exact sites that were kept for a tie and not used (finish_site). */
static void drop_follow_models(const builder *b, ms_psnap_profile *p) {
  for (uint32_t i = 0; i < b->site_count; i++)
    if (!p->sites[i].lossy && p->sites[i].histogram) {
      free(p->sites[i].histogram);
      p->sites[i].histogram = NULL;
      p->sites[i].low = p->sites[i].high = p->sites[i].alignment = 0;
    }
}

static void tie_sites(builder *b, ms_psnap_profile *p) {
  uint8_t *wants = calloc(b->site_count ? b->site_count : 1, 1);
  if (!wants) { /* ties are a refinement: without memory for them, none */
    drop_follow_models(b, p);
    return;
  }
  for (uint32_t i = 0; i < b->site_count; i++) {
    const site_state *s = &b->sites[i];
    /* a lossy site, or an exact one that follows a lossy site (hashtab's load of the
     * found node's value, 8 bytes after the key that the lossy key load read last: exact,
     * its addresses fell in other lines than the replayed lookups', and the program's L1
     * hits on the node's line became misses) */
    int candidate = p->sites[i].lossy || p->sites[i].histogram;
    wants[i] = candidate && !p->sites[i].addresses && s->tie_site != i &&
               s->tie_site < b->site_count && p->sites[s->tie_site].lossy &&
               !p->sites[s->tie_site].addresses && follows(s);
  }
  /* a cycle of candidates (an insertion sort's load of column[p - 1] follows its store to
   * column[p] one step before, and that store the load) is broken at the site that held
   * least to its candidate, which stays untied and anchors the others */
  for (uint32_t i = 0; i < b->site_count; i++) {
    uint32_t at = i, weakest = i;
    int depth = 0;
    for (; depth < 8 && wants[at]; depth++) {
      at = b->sites[at].tie_site;
      if (at == i) break;
      const site_state *a = &b->sites[at], *w = &b->sites[weakest];
      if ((double)a->tie_hits / (double)a->count < (double)w->tie_hits / (double)w->count)
        weakest = at;
    }
    if (at == i && depth < 8) wants[weakest] = 0;
  }
  /* a chain of ties (a store after the load of the next field after the key) ends at the
   * first site that wants none, the distances added up */
  for (uint32_t i = 0; i < b->site_count; i++) {
    if (!wants[i]) continue;
    uint32_t anchor = b->sites[i].tie_site;
    uint64_t delta = (uint64_t)b->sites[i].tie_delta;
    for (int depth = 0; depth < 8 && wants[anchor] && anchor != i; depth++) {
      delta += (uint64_t)b->sites[anchor].tie_delta;
      anchor = b->sites[anchor].tie_site;
    }
    if (anchor == i || wants[anchor]) continue;
    if (!p->sites[i].lossy) { /* an exact site replaced by its tie */
      ms_expr_free(&p->sites[i].pattern);
      ms_expr_init(&p->sites[i].pattern);
      if (ms_expr_finish(&p->sites[i].pattern, NULL, 0) < 0) continue;
      p->sites[i].lossy = 1;
    }
    p->sites[i].tied = 1;
    p->sites[i].reuse_accesses = 0; /* it follows its anchor's reuse and lines */
    p->sites[i].reuse_at_jumps = 0;
    p->sites[i].shared_accesses = 0;
    memset(p->sites[i].new_lines, 0, sizeof p->sites[i].new_lines);
    p->sites[i].new_next = 0;
    p->sites[i].lines = 0;
    p->sites[i].tie_site = anchor;
    p->sites[i].tie_delta = (int64_t)delta;
  }
  drop_follow_models(b, p);
  free(wants);
}

/* Sites are numbered in order of first appearance in the stream. */
/* Frees what a site kept while the stream ran (its model is in the profile by then). */
static void release_site(site_state *s) {
  ms_stride_history_free(&s->history);
  ms_fold_free(s->fold);
  free(s->sample);
  free(s->sample_near);
  free(s->sample_position);
  free(s->all);
  free(s->tops);
  free(s->reuse);
  free_touches(s->touches);
  s->fold = NULL;
  s->sample = s->all = NULL;
  s->sample_near = NULL;
  s->sample_position = NULL;
  s->tops = NULL;
  s->reuse = NULL;
  s->touches = NULL;
}

static void release_thread(thread_state *t) {
  ms_fold_free(t->order);
  free(t->seen);
  free(t->lines);
  free(t->transitions);
  t->order = NULL;
  t->seen = NULL;
  t->lines = NULL;
  t->transitions = NULL;
}

/* Finishes sites, each the next one not taken, until none is left or one failed: one job
 * per thread, so that the lossy sites' models (model_reuse: 28% of profiling bzip2) are
 * judged in parallel once the program has ended. */
static int finish_job(void *context, int index) {
  (void)index;
  builder *b = context;
  finish_scratch scratch = {0};
  int rc = 0;
  for (;;) {
    uint32_t i = atomic_fetch_add(&b->next_finish, 1);
    if (i >= b->site_count || atomic_load(&b->finish_failed)) break;
    rc = finish_site(b, &scratch, &b->sites[i], &b->result.sites[i]);
    release_site(&b->sites[i]);
    if (rc < 0) {
      atomic_store(&b->finish_failed, 1);
      break;
    }
    /* the released states' pages go back to the system as the profile grows */
#ifdef __GLIBC__
    if (i % 4096 == 4095) malloc_trim(0); /* sqlite3's peak RSS: 182 -> 152 MB */
#endif
  }
  free(scratch.addresses);
  free(scratch.reuse);
  return rc;
}

/* Each site's and thread's state is freed once its part of the profile is made: the
 * profile and the states of sites not yet finished were both held at the peak (sqlite3:
 * 313 MB, of which 32 MB made at the end). */
static int builder_end(ms_sink *sink, const ms_stream_info *info) {
  builder *b = (builder *)sink;
  ms_psnap_profile *p = &b->result;
  p->site_count = b->site_count;
  p->thread_count = b->thread_count;
  p->sites = calloc(b->site_count ? b->site_count : 1, sizeof *p->sites);
  p->threads = calloc(b->thread_count ? b->thread_count : 1, sizeof *p->threads);
  if (!p->sites || !p->threads) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  atomic_store(&b->next_finish, 0);
  atomic_store(&b->finish_failed, 0);
  int workers = jobs_threads(0, 2);
  jobs *pool = jobs_new(workers);
  int rc = jobs_run(pool, workers, finish_job, b);
  jobs_free(pool);
  if (rc == 0) tie_sites(b, p);
  for (uint32_t t = 0; rc == 0 && t < b->thread_count; t++) {
    if ((rc = finish_order(&b->threads[t], &p->threads[t])) < 0) break;
    p->floor_threads += (uint32_t)b->threads[t].under_floor;
    release_thread(&b->threads[t]);
    p->access_count += b->threads[t].accesses;
  }
  if (rc < 0) return rc;
  /* The stream's description and the site table (copied: the source owns its own). */
  ms_stream_info *mine = &p->info;
  memset(mine, 0, sizeof *mine);
  if ((rc = ms_stream_info_set_program(mine, info->program, info->argc, info->argv)) < 0) return rc;
  mine->arch = info->arch ? strdup(info->arch) : NULL;
  mine->capture = info->capture ? strdup(info->capture) : NULL;
  mine->flags = info->flags & MS_STREAM_SAMPLED;
  mine->sample_on = info->sample_on;
  mine->sample_off = info->sample_off;
  mine->exit_status = info->exit_status;
  mine->thread_count = b->thread_count;
  mine->access_count = p->access_count;
  if (!mine->sites && !(mine->sites = ms_site_table_new()))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  for (uint32_t i = 0; i < b->site_count; i++) {
    const ms_site *site = ms_site_table_get(info->sites, b->sites[i].trace_site);
    int64_t id = ms_site_table_add(mine->sites, site ? site->pc : 0, site ? site->object : NULL,
                                   site ? site->function : NULL, site ? site->file : NULL,
                                   site ? site->line : 0);
    if (id < 0) return (int)id;
    p->sites[i].trace_site = (uint32_t)id;
  }
  if (!b->filter && !(p->selection = selection_text(b, info)))
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (p->selection && !strcmp(p->selection, "all")) {
    free(p->selection);
    p->selection = NULL;
  }
  p->excluded = b->excluded;
  p->has_excluded = 1;
  if (b->options.has_rank) p->has_rank = 1, p->rank = b->options.rank;
  if (!b->options.keep_threads) {
    int rc = ms_psnap_merge_threads(p);
    if (rc < 0) return rc;
  }
  rc = most_excluded_object(b, info, p);
  if (rc < 0) return rc;
  b->finished = 1;
  return 0;
}

static void builder_destroy(ms_sink *sink) {
  builder *b = (builder *)sink;
  free(b->excluded_by_site);
  for (uint32_t i = 0; i < b->site_count; i++)
    release_site(&b->sites[i]);
  for (uint32_t t = 0; t < b->thread_count; t++)
    release_thread(&b->threads[t]);
  free(b->sites);
  id_index_free(&b->by_key);
  free(b->by_trace);
  free(b->threads);
  ms_psnap_filter_free(b->filter);
  ms_psnap_profile_free(&b->result);
  free(b);
}

static const ms_sink_ops builder_ops = {
    .consume = builder_consume, .end = builder_end, .destroy = builder_destroy};

int ms_psnap_builder_new(const ms_psnap_options *options, ms_sink **out) {
  *out = NULL;
  builder *b = calloc(1, sizeof *b);
  if (!b) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  b->sink.ops = &builder_ops;
  if (options)
    b->options = *options;
  else
    ms_psnap_options_default(&b->options);
  b->cached_key = UINT64_MAX;
  b->rng = 0x853c49e6748fea9bULL;
  *out = &b->sink;
  return 0;
}

int ms_psnap_builder_take(ms_sink *sink, ms_psnap_profile *out) {
  builder *b = (builder *)sink;
  if (!b->finished) return ms_error_set(MS_ERR_ARG, "the profile is taken after the stream ends");
  *out = b->result;
  memset(&b->result, 0, sizeof b->result);
  return 0;
}

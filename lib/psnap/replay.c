/* Replay: a profile as a source of accesses.
 *
 * Model: threads are replayed one after the other (all of thread 0, then thread 1, ...);
 * within a thread the order expression gives the site of each access, and each site
 * gives its next address: exact sites step through their stride pattern (read
 * cyclically), lossless sites read their stored addresses, lossy sites draw from their
 * histogram with a hash of (site, position) or walk their frequent strides, and with reuse
 * odds go back to their own recent addresses (a ring restarted every REUSE_BLOCK
 * accesses), so that a lossy access depends on its position and at most REUSE_BLOCK
 * accesses before it, and replays identically from any starting point; a tied lossy site takes
 * its anchor's last address plus its distance (the anchor is untied, so this too depends
 * on positions only). Lossy sites with first-touch and shared odds (profiles since
 * 2026-11-28) come first to that model: with the odds of their eighth of the run, a line
 * new to the program (the next one the site has not taken in a bin of its histogram);
 * else, with the shared odds, a line of their range that the thread touched 2^b accesses
 * before (from a ring of the thread's replayed accesses) or a fresh draw; their own model
 * when none is found. Such a replay depends on all of its thread before: seeking replays
 * the thread from its start, and a selection makes the sites it leaves out. A lossy
 * order is a walk over its path counts (each transition used as often as counted; when
 * the current site has none left, the walk resumes from the first transition with some
 * left; with periods, the paths of each period, drawn by their uses left).
 * Selection (a mask of sites) keeps program order among the selected sites. Seeking to
 * access i skips whole iterations of the order arithmetically (per-node counts of each
 * site give every site's position) and then each site's pattern the same way; only a
 * lossy order is walked.
 * Fast path: a flat group of the order (a repeated body of exact sites) whose sites are
 * inside stride runs is linear: k iterations are written at once, the cursors moved on
 * arithmetically (emit_linear). Its records are written from cached tables and then as
 * copies of the records one period earlier plus a step, four records per vector store
 * (copy_forward; AVX-512 or AVX2 picked at run time); whole rows of a loop nest are copied
 * the same way (emit_rows). A long run of one site is a body of one site. Regular kernels
 * then spend about as long writing the records as a consumer that reads each one.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"
#include "replay_internal.h"

#define FLAT_MAX 64 /* most elements per iteration of a flat group */

/* The thread's recent accesses, for the sites with shared odds: the last SHARED_RING
 * addresses, and per 64-byte line (direct mapped by a hash, SHARED_SLOTS) the thread's
 * access number of its latest touch. `now`: the accesses of the thread so far. */
#define SHARED_RING (1u << 19)
#define SHARED_SLOTS (1u << 18)
typedef struct shared_lines {
  uint64_t now;
  uint64_t *ring;
  /* per ring entry, a bit: whether it is still the latest touch of its line that `latest`
   * holds (the shared odds' draws look here first: their probes of ring and latest, two
   * misses each in 4 MiB tables, were 75% of replaying hashtab) */
  uint64_t *live;
  uint32_t *maker; /* per ring entry, the profile site that made it (NO_MAKER: exact) */
  const ms_psnap_site *sites;
  struct {
    uint64_t line, when;
  } * latest;
} shared_lines;

/* The slot of a 64-byte line in `latest`. */
static size_t latest_slot(uint64_t line) {
  return (size_t)((line * 0x9e3779b97f4a7c15ULL) >> 46) & (SHARED_SLOTS - 1);
}

#define NO_MAKER UINT32_MAX
static void live_clear(shared_lines *g, uint64_t when) {
  g->live[when % SHARED_RING / 64] &= ~(1ull << (when % 64));
}

static bool live_at(const shared_lines *g, uint64_t when) {
  return g->live[when % SHARED_RING / 64] >> (when % 64) & 1;
}

static void shared_push(shared_lines *g, uint64_t address, uint32_t maker) {
  uint64_t now = g->now;
  g->maker[now % SHARED_RING] = maker;
  g->ring[now % SHARED_RING] = address;
  live_clear(g, now); /* the entry SHARED_RING before leaves the ring */
  size_t slot = latest_slot(address >> 6);
  if (g->latest[slot].line && now - g->latest[slot].when < SHARED_RING)
    live_clear(g, g->latest[slot].when);
  g->latest[slot].line = (address >> 6) + 1;
  g->latest[slot].when = now;
  g->live[now % SHARED_RING / 64] |= 1ull << (now % 64);
  g->now = now + 1;
}

typedef struct replay_site {
  ms_expr_cursor strides;
  uint64_t next_address;
  uint64_t position; /* accesses of this site emitted (or skipped) so far */
  int64_t stride;
  uint64_t stride_left;
  uint64_t histogram_total[MS_PSNAP_SEGMENTS];
  uint64_t walk_address;     /* lossy sites with strides: the address at position - 1 */
  uint64_t last_address;     /* lossy sites: the address at position - 1 (for ties) */
  uint64_t *ring;            /* lossy sites with reuse: their last REUSE_RING addresses */
  uint64_t *swept;           /* lossy sites with first touches: lines taken, per bin */
  uint64_t first_line;       /* and the line of the latest, + 1 (0: none yet) */
  struct taken_lines *taken; /* and the lines it touched, per bin of its histogram */
  uint64_t *taken_set;       /* those lines + 1, open addressing */
  uint32_t taken_used, taken_slots;
  uint32_t first_taken;       /* of taken_used, its first touches */
  struct recent_line *recent; /* and their 128-byte lines */
} replay_site;

/* The tables of copy_forward for one body, kept while the body's steps and sites stay the
 * same: a table built anew at each call is read back as vectors before its scalar stores
 * reach the cache (matmul 1897 -> 2028, stencil3d 1817 -> 1882 M accesses/s with it,
 * counting consumer). The first period is written from its table of offsets rather than
 * by the scalar loop (matmul 2404 -> 2593 M accesses/s, counting consumer). */
/* The period, at least this many records: the copies read records written that far back,
 * whose stores have left the store queue (64 rather than 32: stream_add 2993 -> 3396,
 * stencil3d 1815 -> 1927 M accesses/s, counting consumer; with the first period from
 * its table, 128 and 256 are slower: matmul 2457 -> 2318 and 2448 -> 2068). */
#define SEED_RECORDS 64
#define PERIOD_MAX (SEED_RECORDS + 4 * FLAT_MAX) /* records */
typedef struct delta_table {
  uint32_t length; /* of the body it was built for; 0: none yet */
  uint64_t step[FLAT_MAX], model[FLAT_MAX];
  uint64_t words[2 * (PERIOD_MAX + 3)]; /* per record of a period: its step */
  uint64_t first[2 * (PERIOD_MAX + 3)]; /* per record of the first period, but the site's
                                           first address: its offset and second word */
} delta_table;

typedef struct replay {
  ms_source source;
  ms_psnap_profile profile;
  replay_site *sites;
  uint8_t *mask;
  uint64_t **weights;        /* per thread, per order node (exact orders) */
  uint64_t *thread_selected; /* per thread: selected accesses */
  uint32_t thread;           /* current thread */
  ms_expr_cursor order;
  int order_ready;
  uint32_t run_site;
  uint64_t run_left;
  uint64_t remaining; /* accesses still to emit (from the count option) */
  /* lossy order walk */
  uint64_t *path_left;    /* per transition, in the order of `by_source` */
  uint32_t *by_source;    /* transitions sorted by their source site */
  uint32_t *source_start; /* per site: its first entry in by_source; site_count + 1 */
  uint32_t *source_next;  /* per site: first entry that may have uses left */
  uint32_t fallback;      /* first entry of by_source that may have uses left */
  uint32_t period;        /* the current period of the paths, its transitions: */
  uint32_t period_first, period_end;
  uint64_t walk_left;
  /* fast path: per node of the current order, its body when it is a flat group */
  int32_t *body_start; /* index in body_sites, -1 if not flat */
  uint32_t *body_length;
  uint32_t *body_sites;
  uint32_t *occurrences; /* per site, scratch (zero between uses) */
  uint32_t walk_site;
  int walk_started;
  delta_table delta;
  shared_lines shared; /* ring NULL: no site has shared odds */
  ms_access *scratch;  /* with shared odds and a selection: the sites left out, made */
  size_t scratch_capacity;
} replay;

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t lossy_address(const ms_psnap_site *site, const replay_site *rs, uint32_t id,
                              uint64_t position) {
  uint64_t segment = site->count ? position * MS_PSNAP_SEGMENTS / site->count : 0;
  if (segment >= MS_PSNAP_SEGMENTS) segment = MS_PSNAP_SEGMENTS - 1;
  if (!site->histogram) return site->first_address;
  const uint64_t *histogram = site->histogram[segment];
  if (position == 0 || rs->histogram_total[segment] == 0) return site->first_address;
  uint64_t r = mix((uint64_t)id << 40 ^ position);
  uint64_t pick = r % rs->histogram_total[segment],
           width = (site->high - site->low) / MS_PSNAP_HISTOGRAM_BINS + 1;
  int bin = 0;
  while (bin < MS_PSNAP_HISTOGRAM_BINS - 1 && pick >= histogram[bin])
    pick -= histogram[bin++];
  uint64_t low = site->low + (uint64_t)bin * width, high = low + width - 1;
  if (high > site->high || high < low) high = site->high;
  /* an address first + k * alignment within [low, high] */
  uint64_t a = site->alignment;
  uint64_t k_low = low > site->first_address ? (low - site->first_address + a - 1) / a : 0;
  uint64_t k_high = high >= site->first_address ? (high - site->first_address) / a : 0;
  uint64_t base = site->first_address;
  if (low < site->first_address) {
    /* below the first address: count alignment steps downwards */
    uint64_t down_max = (site->first_address - low) / a;
    uint64_t down_min = high < site->first_address ? (site->first_address - high + a - 1) / a : 0;
    if (down_max < down_min) return site->first_address;
    uint64_t k = down_min + (r >> 20) % (down_max - down_min + 1);
    return base - k * a;
  }
  if (k_high < k_low) return site->first_address;
  return base + (k_low + (r >> 20) % (k_high - k_low + 1)) * a;
}

/* A lossy site with strides walks: each address is the previous one plus one of its
 * frequent strides, drawn with their weights, or, for the other strides (and when a step
 * would leave the site's range), a jump drawn from the histogram as above. The walk starts
 * afresh from a histogram draw every LOSSY_BLOCK accesses, so that a replay started
 * anywhere (--from) repeats at most that many steps to find where it is. PSnAP draws every
 * address of an irregular site at random, which loses its runs: on gzip's window and hash
 * chain loads, whose strides are mostly a few bytes, that alone made the replay's L1 hit
 * rates several points too low. */
#define LOSSY_BLOCK 64

/* A lossy site with reuse odds takes with those odds the address of one of its own
 * accesses 2^b to 2^(b+1) - 1 before (a line it touched again in the program): before each
 * step of its walk (`reuse`), or only when its walk jumps (`reuse jumps`: every access of
 * a site without strides), else a fresh draw away from its recent lines. The recent
 * addresses restart every REUSE_BLOCK accesses, and so does the walk, so that a replay
 * started anywhere steps at most that many times per site to rebuild them; a reuse that
 * would reach before the block's start is not taken. */
#define REUSE_RING 4096
#define REUSE_BLOCK MS_PSNAP_REUSE_BLOCK
#define RECENT_SETS 512
#define RECENT_WAYS 8

/* The recent 128-byte lines of a site: RECENT_SETS sets of RECENT_WAYS, each the line + 1
 * and its quarters' last positions + 1 (modulo 2^32; 0: none). */
typedef struct recent_line {
  uint64_t line;
  uint32_t when[4];
} recent_line;

static recent_line *recent_find(const replay_site *rs, uint64_t line) {
  uint32_t set = (uint32_t)((line * 0x9e3779b97f4a7c15ULL) >> 40) & (RECENT_SETS - 1);
  recent_line *ways = &rs->recent[set * RECENT_WAYS];
  for (int way = 0; way < RECENT_WAYS; way++)
    if (ways[way].line == line + 1) return &ways[way];
  return NULL;
}

static void touch(replay_site *rs, uint64_t address, uint64_t position) {
  uint64_t line = address >> 7;
  uint32_t now = (uint32_t)position + 1;
  recent_line *entry = recent_find(rs, line);
  if (!entry) {
    uint32_t set = (uint32_t)((line * 0x9e3779b97f4a7c15ULL) >> 40) & (RECENT_SETS - 1);
    recent_line *ways = &rs->recent[set * RECENT_WAYS];
    uint32_t oldest_age = 0;
    for (int way = 0; way < RECENT_WAYS; way++) {
      uint32_t age = ways[way].line ? now - ms_psnap_latest(ways[way].when, 0, 4) : UINT32_MAX;
      if (!entry || age > oldest_age) entry = &ways[way], oldest_age = age;
    }
    entry->line = line + 1;
    memset(entry->when, 0, sizeof entry->when);
  }
  entry->when[(address >> 5) & 3] = now;
}

/* Whether the site touched the 128-byte line of `address` in its last REUSE_RING
 * accesses of this block. */
static bool touched_recently(const replay_site *rs, uint64_t address, uint64_t position) {
  const recent_line *entry = recent_find(rs, address >> 7);
  if (!entry) return false;
  uint32_t last = ms_psnap_latest(entry->when, 0, 4);
  uint64_t age = (uint32_t)((uint32_t)position + 1 - last);
  return last && age < REUSE_RING && age <= position % REUSE_BLOCK;
}

/* 1: a reuse, at *address; 0: the odds chose a reuse but none was found (or a step of the
 * walk); -1: the odds chose a line not touched lately. */
static int reuse_address(const ms_psnap_site *site, const replay_site *rs, uint32_t id,
                         uint64_t position, uint64_t *address) {
  uint64_t r = mix((uint64_t)id << 40 ^ position ^ 0x2545F4914F6CDD1Dull);
  uint64_t pick = r % site->reuse_accesses;
  for (int size = 0; size < MS_PSNAP_REUSE_SIZES; size++)
    for (int b = 0; b < MS_PSNAP_REUSE_BINS; b++) {
      if (pick >= site->reuse[size][b]) {
        pick -= site->reuse[size][b];
        continue;
      }
      if (b == 0 && site->stride_count && !site->reuse_at_jumps) return 0; /* a step */
      /* The measured time is since the line's last touch: a position whose line was
       * touched again later would be a shorter reuse (a tree's root, in the ring many
       * times), so up to 32 positions of the bin are tried for one that was the last. */
      for (int attempt = 0; attempt < 32; attempt++) {
        r = mix(r);
        uint64_t t = ((uint64_t)1 << b) + (r & (((uint64_t)1 << b) - 1));
        if (t > position % REUSE_BLOCK) continue;
        uint64_t q = position - t, a = rs->ring[q % REUSE_RING];
        const recent_line *entry = recent_find(rs, a >> 7);
        if (!entry) continue;
        unsigned quarter = (unsigned)(a >> 5) & 3;
        /* sizes 0 and 1: q last touched its 64-byte line (same half, other half) */
        uint32_t last = size < 2 ? ms_psnap_latest(entry->when, quarter & 2, 2)
                                 : ms_psnap_latest(entry->when, 0, 4);
        if (last != (uint32_t)q + 1) continue;
        /* the same 32-byte block; the other one of its 64-byte line; the other half of
         * its 128-byte line */
        uint64_t target = size == 0 ? a : size == 1 ? a ^ 32 : a ^ 64 ^ ((r >> 40) & 1) << 5;
        if (target < site->low || target > site->high ||
            (target - site->first_address) % site->alignment)
          continue;
        *address = target;
        return 1;
      }
      return 0;
    }
  return -1;
}

/* A draw from the histogram for an access that the reuse odds made fresh: a line the site
 * did not touch in its last REUSE_RING accesses (a few draws at most). Without this a
 * fresh draw over a range that the cache holds much of was a hit: bintree's replay had
 * an L1 hit rate 14 points above the program's on a 32 KiB L1. */
/* First touches: the next line in a bin of the eighth's histogram beyond those the site
 * has taken there (in address order: what matters to a cache is that they are new, and
 * how many). The count per bin is state from the thread's start, which only replay with
 * shared lines has (it seeks by replaying the thread): a profile states first touches
 * only with shared odds. Lines taken at a pace prorated from the counts instead collided
 * (two draws on one line before the pace moved on): gather's replay then had a third
 * fewer first touches early and as many more short reuses. */
/* Whether the thread's replay touched the 64-byte line of `address` within the last 2^18
 * accesses or so (as far as the direct-mapped table remembers). */
static bool touched_lately(const shared_lines *g, uint64_t address) {
  uint64_t line = address >> 6;
  size_t slot = latest_slot(line);
  return g->latest[slot].line == line + 1;
}

static bool swept_address(const ms_psnap_site *site, replay_site *rs, const shared_lines *g,
                          uint32_t id, uint64_t position, uint64_t *address) {
  uint64_t eighth = site->count ? position * MS_PSNAP_SEGMENTS / site->count : 0;
  if (eighth >= MS_PSNAP_SEGMENTS) eighth = MS_PSNAP_SEGMENTS - 1;
  if (!site->histogram || !rs->histogram_total[eighth]) return false;
  uint64_t r = mix((uint64_t)id << 40 ^ position ^ 0x7F4A7C159E3779B9ull);
  const uint64_t *histogram = site->histogram[eighth];
  uint64_t pick = r % rs->histogram_total[eighth];
  int bin = 0;
  while (bin < MS_PSNAP_HISTOGRAM_BINS - 1 && pick >= histogram[bin])
    pick -= histogram[bin++];
  /* the bin's addresses first + k * alignment, in units of one 64-byte line (or of one
   * address, when the alignment is wider) */
  uint64_t width = (site->high - site->low) / MS_PSNAP_HISTOGRAM_BINS + 1;
  uint64_t low = site->low + (uint64_t)bin * width, high = low + width - 1;
  if (high > site->high || high < low) high = site->high;
  uint64_t a = site->alignment ? site->alignment : 1;
  uint64_t base = site->first_address - (site->first_address - site->low) / a * a; /* >= low */
  if (high < base) return false;
  uint64_t k_low = low > base ? (low - base + a - 1) / a : 0, k_high = (high - base) / a;
  if (k_high < k_low) return false;
  uint64_t per_unit = a >= 64 ? 1 : (64 + a - 1) / a;
  /* with an alignment dividing 64, the units are the 64-byte lines themselves */
  uint64_t line_low = (base + k_low * a) >> 6, line_high = (base + k_high * a) >> 6;
  bool by_line = a < 64 && 64 % a == 0;
  uint64_t units = by_line ? line_high - line_low + 1 : (k_high - k_low) / per_unit + 1;
  /* the line after the previous first touch, with the odds of the program's; else the
   * bin's lines in a scrambled order (a multiplication by an odd number modulo a power
   * of two is one-to-one), so that the first touches of a scattering site do not fall on
   * neighbouring lines, which a cache of 128-byte lines would count once */
  uint64_t lines = ms_psnap_site_new_lines(site);
  if (rs->first_line && lines && (r >> 24) % lines < site->new_next) {
    uint64_t from = rs->first_line << 6, to = from + 63; /* line + 1: the next one */
    if (from >= site->low && from <= site->high) {
      if (to > site->high) to = site->high;
      uint64_t k_from = from > base ? (from - base + a - 1) / a : 0, k_to = (to - base) / a;
      if (k_from <= k_to && base + k_from * a <= to && !touched_lately(g, base + k_from * a)) {
        *address = base + (k_from + mix(r) % (k_to - k_from + 1)) * a;
        rs->first_line = (*address >> 6) + 1;
        return true;
      }
    }
  }
  uint64_t span = 1;
  while (span < units)
    span *= 2;
  /* lines the thread touched lately (the next lines of earlier first touches, the walk's
   * steps) are passed over: taken again, they left a sweep's replay a fifth short of the
   * program's new lines (test_psnap_format, first_touches_keep_the_pace) */
  uint64_t unit, k;
  for (int attempt = 0;; attempt++) {
    do
      unit = rs->swept[bin]++ * 0x9E3779B97F4A7C15ull & (span - 1);
    while (unit >= units);
    uint64_t line = by_line ? line_low + unit : (base + (k_low + unit * per_unit) * a) >> 6;
    if (attempt == 8 || !touched_lately(g, line << 6)) break;
  }
  if (by_line) {
    uint64_t from = (line_low + unit) << 6, to = from + 63;
    if (from < base + k_low * a) from = base + k_low * a;
    if (to > base + k_high * a) to = base + k_high * a;
    uint64_t k_from = (from - base + a - 1) / a, k_to = (to - base) / a;
    if (k_to < k_from) return false;
    k = k_from + mix(r) % (k_to - k_from + 1);
  } else {
    k = k_low + unit * per_unit + mix(r) % per_unit;
    if (k > k_high) k = k_high;
  }
  *address = base + k * a;
  rs->first_line = (*address >> 6) + 1;
  return true;
}

/* Whether access `position` is a first touch: the site's new lines of its eighth of the
 * run, spread over the eighth's accesses. */
static bool first_touch(const ms_psnap_site *site, uint32_t id, uint64_t position) {
  uint64_t g = site->count ? position * MS_PSNAP_SEGMENTS / site->count : 0;
  if (g >= MS_PSNAP_SEGMENTS) g = MS_PSNAP_SEGMENTS - 1;
  uint64_t accesses =
      (g + 1) * site->count / MS_PSNAP_SEGMENTS - g * site->count / MS_PSNAP_SEGMENTS;
  return site->new_lines[g] && accesses &&
         mix((uint64_t)id << 40 ^ position ^ 0x3C6EF372FE94F82Bull) % accesses < site->new_lines[g];
}

static uint64_t fresh_address(const ms_psnap_site *site, const replay_site *rs,
                              const shared_lines *g, uint64_t older, uint32_t id,
                              uint64_t position) {
  uint64_t address = lossy_address(site, rs, id, position);
  for (uint64_t attempt = 1; attempt < 8; attempt++) {
    bool recent = rs->recent && touched_recently(rs, address, position);
    if (!recent && g && older) {
      uint64_t line = address >> 6;
      size_t slot = latest_slot(line);
      recent = g->latest[slot].line == line + 1 && g->now - g->latest[slot].when < older;
    }
    if (!recent) break;
    address = lossy_address(site, rs, id, position ^ attempt << 56);
  }
  return address;
}

/* Whether the site has taken the line of `address` (its taken set: first touches and shared
 * lines). */
static bool site_took(const replay_site *rs, uint64_t address) {
  if (!rs->taken_slots) return false;
  uint64_t line = (address >> 6) + 1;
  uint32_t k = (uint32_t)mix(line) & (rs->taken_slots - 1);
  while (rs->taken_set[k] && rs->taken_set[k] != line)
    k = (k + 1) & (rs->taken_slots - 1);
  return rs->taken_set[k] == line;
}

/* Whether `address` would give the site a line beyond the lines the program's touched: its
 * first touches have lines of their own (new to the program, taken apart), its other
 * accesses up to `lines` more. Only `lines` minus the first touches for the others, with
 * `lines` counted exactly, took xz's L2 error (mean / max over the catalog) from 1.56 / 5.62
 * to 1.46 / 4.36 and sqlite3's from 6.47 / 10.79 to 6.19 / 10.17, but bintree's from 1.90 /
 * 8.09 to 2.47 / 11.79 and hashtab's from 1.96 / 14.24 to 2.39 / 15.28: not taken. */
static bool beyond_lines(const ms_psnap_site *site, const replay_site *rs, uint64_t address) {
  return site->lines && rs->taken && rs->taken_used - rs->first_taken >= site->lines &&
         !site_took(rs, address);
}

/* Times drawn in a bin of the shared odds for a line last touched then: the older the
 * bin, the fewer of its accesses are still their line's latest touch (bintree's key load
 * found none in 64 draws for 63% of its 2^17-2^18 odds, and fell back on its own short
 * reuses: L2 hit rates 3.3 points high on average; 1.9 with 256 draws, 1.6 with 1024 at
 * twice the replay time). */
#define SHARED_TRIES 256

/* Shared odds: 1, a line of the site's range that the thread last touched 2^b to
 * 2^(b+1) - 1 accesses before (at *address: that access's address when the site could
 * have made it, else the site's first address in that line); 0, the odds chose such a
 * line but none was found (or there are no shared odds); -1, the odds chose a line no
 * access touched within 2^19. */
static int shared_address(const ms_psnap_site *site, const replay_site *rs, const shared_lines *g,
                          uint32_t id, uint64_t position, uint64_t *address, uint64_t *older) {
  if (!g || !site->shared_accesses) return 0;
  uint64_t r = mix((uint64_t)id << 40 ^ position ^ 0x1B873593CC9E2D51ull);
  uint64_t pick = r % site->shared_accesses;
  int b = 0;
  while (b < MS_PSNAP_SHARED_BINS && pick >= site->shared[b])
    pick -= site->shared[b++];
  if (b == MS_PSNAP_SHARED_BINS) return -1;
  uint64_t a = site->alignment ? site->alignment : 1;
  uint64_t base = site->first_address - (site->first_address - site->low) / a * a;
  uint64_t segment = site->count ? position * MS_PSNAP_SEGMENTS / site->count : 0;
  if (segment >= MS_PSNAP_SEGMENTS) segment = MS_PSNAP_SEGMENTS - 1;
  const uint64_t *histogram = site->histogram ? site->histogram[segment] : NULL;
  uint64_t width = (site->high - site->low) / MS_PSNAP_HISTOGRAM_BINS + 1;
  /* times drawn in the bin (each one in turn when the bin is small) */
  uint64_t span = (uint64_t)1 << b, offset = mix(r) & (span - 1);
  for (uint64_t attempt = 0; attempt < (span < SHARED_TRIES ? span : SHARED_TRIES); attempt++) {
    uint64_t t = span + (span <= 64 ? (offset + attempt) % span : mix(r + attempt) & (span - 1));
    /* live: `latest` holds this access as its line's latest touch */
    if (t > g->now || !live_at(g, g->now - t)) continue;
    uint64_t when = g->now - t, candidate = g->ring[when % SHARED_RING], line = candidate >> 6;
    uint64_t from = line << 6, to = from + 63;
    if (to < site->low || from > site->high) continue;
    /* and in a bin of the histogram that the site touches in this eighth of its run (a
     * range over two arrays, read one after the other, holds lines of the other one) */
    if (histogram) {
      uint64_t at = candidate < site->low    ? site->low
                    : candidate > site->high ? site->high
                                             : candidate;
      if (!histogram[(at - site->low) / width]) continue;
    }
    /* a line last touched by a site tied to this one: the address of this site that the
     * tie stands for (bintree's key load otherwise took the left field's address as its
     * own, and its tied loads then fell in one line with it more often than the
     * program's did) */
    uint32_t maker = g->maker[when % SHARED_RING];
    if (maker != NO_MAKER && g->sites[maker].tied && g->sites[maker].tie_site == id) {
      uint64_t own = candidate - (uint64_t)g->sites[maker].tie_delta;
      if (own >= site->low && own <= site->high && (own - base) % a == 0 &&
          !beyond_lines(site, rs, own)) {
        *address = own;
        return 1;
      }
    }
    /* a line the site never had, once it has had as many as the program's: another draw */
    if (beyond_lines(site, rs, candidate)) continue;
    /* the half touched last, with the program's odds, else the other one (a cache of
     * 32-byte lines tells them apart) */
    bool same = mix(r ^ when) % site->shared[b] < site->shared_same[b];
    if (same && candidate >= site->low && candidate <= site->high && (candidate - base) % a == 0) {
      *address = candidate;
      return 1;
    }
    uint64_t half = (candidate & 32) ^ (same ? 0 : 32);
    for (int whole = 0; whole < 2; whole++) { /* the half, else the whole line */
      uint64_t lo = whole ? from : from + half, hi = whole ? to : from + half + 31;
      if (lo < base) lo = base;
      if (hi > site->high) hi = site->high;
      uint64_t k = lo > base ? (lo - base + a - 1) / a : 0;
      if (lo > hi || base + k * a > hi) continue;
      uint64_t count = (hi - (base + k * a)) / a + 1;
      *address = base + (k + mix(r ^ when ^ 1) % count) * a;
      return 1;
    }
  }
  /* none found (the lines last touched that long ago are rare, most have been touched
   * since): the site's own model, whose fresh draws then take a line nobody touched
   * within 2^b (*older). Fresh draws for all (no walk, no own reuse) took cg's mean L1
   * error from 0.5 to 2.2 points: its insertion sort's walk kept to its rows; own fresh
   * draws without the condition left gather's replay 4.6 points too many L1 hits. */
  *older = span;
  return 0;
}

/* The addresses of a site's first touches in one bin of its histogram, in turn. */
typedef struct taken_lines {
  uint64_t *address;
  uint32_t count, capacity;
} taken_lines;

static uint64_t histogram_bin(const ms_psnap_site *site, uint64_t address) {
  uint64_t width = (site->high - site->low) / MS_PSNAP_HISTOGRAM_BINS + 1;
  uint64_t bin = address < site->low ? 0 : (address - site->low) / width;
  return bin < MS_PSNAP_HISTOGRAM_BINS ? bin : MS_PSNAP_HISTOGRAM_BINS - 1;
}

/* Keeps the address of a line new to the site (out of memory, the line is only left out of
 * later draws). */
static void take_line(const ms_psnap_site *site, replay_site *rs, uint64_t address) {
  uint64_t line = (address >> 6) + 1;
  if (2 * (rs->taken_used + 1) > rs->taken_slots) {
    uint32_t slots = rs->taken_slots ? 2 * rs->taken_slots : 64;
    uint64_t *set = calloc(slots, sizeof *set);
    if (!set) return;
    for (uint32_t i = 0; i < rs->taken_slots; i++) {
      if (!rs->taken_set[i]) continue;
      uint32_t k = (uint32_t)mix(rs->taken_set[i]) & (slots - 1);
      while (set[k])
        k = (k + 1) & (slots - 1);
      set[k] = rs->taken_set[i];
    }
    free(rs->taken_set);
    rs->taken_set = set;
    rs->taken_slots = slots;
  }
  uint32_t k = (uint32_t)mix(line) & (rs->taken_slots - 1);
  while (rs->taken_set[k] && rs->taken_set[k] != line)
    k = (k + 1) & (rs->taken_slots - 1);
  if (rs->taken_set[k]) return;
  taken_lines *t = &rs->taken[histogram_bin(site, address)];
  if (t->count == t->capacity) {
    uint32_t capacity = t->capacity ? 2 * t->capacity : 16;
    uint64_t *more = realloc(t->address, capacity * sizeof *more);
    if (!more) return;
    t->address = more;
    t->capacity = capacity;
  }
  t->address[t->count++] = address;
  rs->taken_set[k] = line;
  rs->taken_used++;
}

/* An access the odds made a touch of a line not touched lately (none within `older`
 * accesses of the thread) that is no first touch: in a bin drawn from the
 * histogram of the site's eighth of the run, one of the lines the site made before there,
 * not touched lately if a few draws find one. With shared odds every line new to the site
 * is counted as a first touch, so such an access touches an old line again; a fresh draw
 * from the histogram made a new one: xz's hash table load then touched 19559 lines in
 * replay rather than the program's 6939, and the replay's L2 hit rates were 7.2 points
 * off. A bin without first touches yet draws afresh. */
static uint64_t old_address(const ms_psnap_site *site, const replay_site *rs, const shared_lines *g,
                            uint64_t older, uint32_t id, uint64_t position) {
  uint64_t address = lossy_address(site, rs, id, position);
  const taken_lines *t = rs->taken ? &rs->taken[histogram_bin(site, address)] : NULL;
  if (!g || !t || !t->count) return fresh_address(site, rs, g, older, id, position);
  uint64_t r = mix((uint64_t)id << 40 ^ position ^ 0x4CF5AD432745937Full);
  for (int attempt = 0; attempt < 32; attempt++, r = mix(r)) {
    address = t->address[r % t->count];
    uint64_t line = address >> 6;
    size_t slot = latest_slot(line);
    if (g->latest[slot].line != line + 1 || (older && g->now - g->latest[slot].when >= older))
      return address;
  }
  /* every draw touched lately (few lines made yet): a fresh draw, which is a miss as the
   * program's was; taking a recent line anyway left gather's L1 hit rates 3.4 points high */
  return fresh_address(site, rs, g, older, id, position);
}

static uint64_t lossy_next(const ms_psnap_site *site, replay_site *rs, const shared_lines *g,
                           uint32_t id, uint64_t position) {
  uint64_t address = 0;
  int jump = 1, reuse = 0, shared = 0;
  uint64_t older = 0;
  /* a first touch; else a line shared with the thread's other accesses, or a fresh draw
   * when the odds say nobody touched it lately; else the site's own reuse odds of every
   * access, or a step of its walk */
  if (rs->swept && first_touch(site, id, position) &&
      swept_address(site, rs, g, id, position, &address)) {
    jump = 0;
    uint32_t before = rs->taken_used;
    take_line(site, rs, address);
    rs->first_taken += rs->taken_used - before;
  } else if ((shared = shared_address(site, rs, g, id, position, &address, &older)) != 0) {
    jump = 0;
    if (shared < 0)
      address = old_address(site, rs, g, (uint64_t)1 << MS_PSNAP_SHARED_BINS, id, position);
    else if (rs->taken)
      take_line(site, rs, address);
  } else {
    if (rs->ring && !site->reuse_at_jumps) reuse = reuse_address(site, rs, id, position, &address);
    if (reuse > 0)
      jump = 0;
    else if (site->stride_count && site->count >= 2 &&
             position % (rs->ring ? REUSE_BLOCK : LOSSY_BLOCK) != 0) {
      uint64_t pick =
          mix((uint64_t)id << 40 ^ position ^ 0x5851F42D4C957F2Dull) % (site->count - 1);
      uint32_t i = 0;
      while (i < site->stride_count && pick >= site->top_stride_times[i])
        pick -= site->top_stride_times[i++];
      uint64_t step =
          rs->walk_address + (uint64_t)(i < site->stride_count ? site->top_stride[i] : 0);
      if (i < site->stride_count && step >= site->low && step <= site->high)
        address = step, jump = 0;
    }
  }
  /* a jump: with the reuse odds of the site's jumps, one of its own recent lines again */
  if (jump &&
      !(rs->ring && site->reuse_at_jumps && reuse_address(site, rs, id, position, &address) > 0))
    address = old_address(site, rs, g, older, id, position);
  /* past the program's count of lines, one of the lines it has (in the address's bin, else
   * the nearest bin that has one: beyond_lines implies one is taken); else the line is its */
  if (beyond_lines(site, rs, address)) {
    uint64_t bin = histogram_bin(site, address),
             r = mix((uint64_t)id << 40 ^ position ^ 0x2545F4914F6CDD1Dull);
    for (uint64_t d = 0; d < MS_PSNAP_HISTOGRAM_BINS; d++) {
      const taken_lines *t = NULL;
      if (bin + d < MS_PSNAP_HISTOGRAM_BINS && rs->taken[bin + d].count)
        t = &rs->taken[bin + d];
      else if (bin >= d && rs->taken[bin - d].count)
        t = &rs->taken[bin - d];
      if (t) {
        address = t->address[r % t->count];
        break;
      }
    }
  } else if (site->lines && rs->taken)
    take_line(site, rs, address);
  rs->walk_address = address;
  if (rs->ring) {
    rs->ring[position % REUSE_RING] = address;
    touch(rs, address, position);
  }
  return address;
}

int ms_psnap_lossy_addresses(const ms_psnap_site *site, uint32_t id, uint64_t from, uint64_t n,
                             uint64_t *out) {
  replay_site rs = {0};
  for (int g = 0; g < MS_PSNAP_SEGMENTS; g++)
    for (int b = 0; site->histogram && b < MS_PSNAP_HISTOGRAM_BINS; b++)
      rs.histogram_total[g] += site->histogram[g][b];
  if (site->reuse_accesses &&
      (!(rs.ring = malloc(REUSE_RING * sizeof *rs.ring)) ||
       !(rs.recent = calloc(RECENT_SETS * RECENT_WAYS, sizeof *rs.recent)))) {
    free(rs.ring);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  uint64_t block = rs.ring ? REUSE_BLOCK : site->stride_count ? LOSSY_BLOCK : 1;
  for (uint64_t p = from - from % block; p < from + n; p++) {
    uint64_t address = lossy_next(site, &rs, NULL, id, p);
    if (p >= from) out[p - from] = address;
  }
  free(rs.ring);
  free(rs.recent);
  return 0;
}

/* Positions site `id` before its access number `position`. */
static void site_seek(replay *r, uint32_t id, uint64_t position) {
  replay_site *rs = &r->sites[id];
  const ms_psnap_site *site = &r->profile.sites[id];
  rs->position = position;
  rs->stride_left = 0;
  /* an untied lossy site's address at position - 1 (its walk's state, its ties' anchor) */
  if (site->lossy && !site->tied && position > 0) {
    uint64_t last = position - 1;
    uint64_t block = rs->ring ? REUSE_BLOCK : site->stride_count ? LOSSY_BLOCK : 1;
    for (uint64_t p = last - last % block; p <= last; p++)
      rs->last_address = lossy_next(site, rs, NULL, id, p);
  }
  if (site->lossy || site->addresses) return;
  rs->next_address =
      site->first_address + (uint64_t)ms_expr_cursor_seek(&rs->strides, position, NULL);
}

static inline uint64_t site_next(replay *r, uint32_t id) {
  replay_site *rs = &r->sites[id];
  const ms_psnap_site *site = &r->profile.sites[id];
  uint64_t position = rs->position++;
  if (site->addresses)
    return position < site->count ? site->addresses[position] : site->addresses[site->count - 1];
  if (site->lossy) {
    /* a tied site follows its anchor's last address; before the anchor has run, or with
     * the anchor left out of the selection, a draw from its histogram (no walk of its own,
     * so that seeking needs none) */
    const replay_site *anchor =
        site->tied && (!r->mask || r->mask[site->tie_site] || r->shared.ring)
            ? &r->sites[site->tie_site]
            : NULL;
    uint64_t address =
        !site->tied ? lossy_next(site, rs, r->shared.ring ? &r->shared : NULL, id, position)
        : anchor && anchor->position ? anchor->last_address + (uint64_t)site->tie_delta
                                     : lossy_address(site, rs, id, position);
    rs->last_address = address;
    return address;
  }
  uint64_t address = rs->next_address;
  if (rs->stride_left == 0)
    rs->stride_left = ms_expr_cursor_run(&rs->strides, UINT64_MAX, &rs->stride);
  rs->next_address += (uint64_t)rs->stride;
  rs->stride_left--;
  return address;
}

static void emit_body_any(ms_access *out, uint64_t *address, const uint64_t *step,
                          const uint64_t *model, uint64_t k, uint32_t length, delta_table *table);

/* Emits up to n accesses of site `id` into out; a run of one stride is a body of one site
 * (transpose's initialization, 20% of its accesses: 3161 -> 3879 M accesses/s, counting
 * consumer); short runs by the plain loop (matmul's one access per row of s34). */
static size_t site_emit(replay *r, uint32_t id, ms_access *out, size_t n) {
  const ms_psnap_site *site = &r->profile.sites[id];
  ms_access model = {
      .site = site->trace_site, .thread = site->thread, .size = site->size, .kind = site->kind};
  replay_site *rs = &r->sites[id];
  if (site->lossy || site->addresses) {
    for (size_t i = 0; i < n; i++) {
      out[i] = model;
      out[i].address = site_next(r, id);
      if (r->shared.ring) shared_push(&r->shared, out[i].address, id);
    }
    return n;
  }
  uint64_t second_word;
  memcpy(&second_word, (const char *)&model + 8, sizeof second_word);
  size_t i = 0;
  while (i < n) {
    if (rs->stride_left == 0)
      rs->stride_left = ms_expr_cursor_run(&rs->strides, UINT64_MAX, &rs->stride);
    uint64_t k = rs->stride_left < n - i ? rs->stride_left : n - i;
    uint64_t address = rs->next_address, stride = (uint64_t)rs->stride;
    if (k > SEED_RECORDS)
      emit_body_any(out + i, &address, &stride, &second_word, k, 1, &r->delta);
    else
      for (uint64_t j = 0; j < k; j++, address += stride) {
        out[i + j] = model;
        out[i + j].address = address;
      }
    i += k;
    rs->next_address += k * stride;
    rs->stride_left -= k;
  }
  rs->position += n;
  for (size_t j = 0; r->shared.ring && j < n; j++)
    shared_push(&r->shared, out[j].address, NO_MAKER);
  return n;
}

/* ---- order ---- */

/* The flat groups of an order (children all leaves, at most FLAT_MAX elements per
 * iteration, every site exact): their bodies, for emit_iterations. */
static int index_flat_groups(replay *r, const ms_expr *e) {
  free(r->body_start), free(r->body_length), free(r->body_sites);
  r->body_start = malloc((e->node_count + 1) * sizeof *r->body_start);
  r->body_length = malloc((e->node_count + 1) * sizeof *r->body_length);
  uint32_t used = 0, capacity = 256;
  r->body_sites = malloc(capacity * sizeof *r->body_sites);
  if (!r->body_start || !r->body_length || !r->body_sites)
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  for (uint32_t i = 0; i < e->node_count; i++) {
    const ms_expr_node *g = &e->nodes[i];
    r->body_start[i] = -1;
    if (g->count == 0 || g->repeat < 2 || e->length[i] > FLAT_MAX) continue;
    int flat = 1;
    for (uint32_t c = 0; c < g->count && flat; c++) {
      const ms_expr_node *leaf = &e->nodes[e->children[g->first + c]];
      const ms_psnap_site *site = leaf->count ? NULL : &r->profile.sites[leaf->value];
      flat = site && !site->lossy && !site->addresses && (!r->mask || r->mask[leaf->value]);
    }
    if (!flat) continue;
    if (used + FLAT_MAX > capacity) {
      capacity *= 2;
      uint32_t *bigger = realloc(r->body_sites, capacity * sizeof *bigger);
      if (!bigger) return ms_error_set(MS_ERR_NOMEM, "out of memory");
      r->body_sites = bigger;
    }
    r->body_start[i] = (int32_t)used;
    for (uint32_t c = 0; c < g->count; c++) {
      const ms_expr_node *leaf = &e->nodes[e->children[g->first + c]];
      for (uint64_t k = 0; k < leaf->repeat; k++)
        r->body_sites[used++] = (uint32_t)leaf->value;
    }
    r->body_length[i] = (uint32_t)e->length[i];
  }
  return 0;
}

/* The paths of period `period` of a lossy order (all of them without periods), sorted by
 * their source site (a counting sort), with their uses left. */
static void load_period(replay *r, const ms_psnap_thread_order *order, uint32_t period) {
  uint32_t first = r->period_end, end = first;
  if (!order->transition_period)
    first = 0, end = order->transition_count;
  else {
    while (first < order->transition_count && order->transition_period[first] < period)
      first++;
    for (end = first; end < order->transition_count && order->transition_period[end] == period;)
      end++;
  }
  r->period = period, r->period_first = first, r->period_end = end;
  uint32_t sites = r->profile.site_count;
  memset(r->source_start, 0, (sites + 1) * sizeof *r->source_start);
  for (uint32_t k = first; k < end; k++)
    r->source_start[order->transition_from[k] + 1]++;
  for (uint32_t s = 0; s < sites; s++)
    r->source_start[s + 1] += r->source_start[s];
  memcpy(r->source_next, r->source_start, sites * sizeof *r->source_next);
  for (uint32_t k = first; k < end; k++)
    r->by_source[r->source_next[order->transition_from[k]]++] = k;
  memcpy(r->source_next, r->source_start, sites * sizeof *r->source_next);
  for (uint32_t e = 0; e < end - first; e++)
    /* by_source is a permutation of first..end-1: the counting sort above writes each slot
     * once (every transition_from < site_count, checked by the profile reader) */
    // NOLINTNEXTLINE(clang-analyzer-core.uninitialized.ArraySubscript)
    r->path_left[e] = order->transition_times[r->by_source[e]];
  r->fallback = 0;
}

static int start_thread(replay *r, uint32_t t) {
  r->thread = t;
  r->run_left = 0;
  if (r->shared.ring) {
    r->shared.now = 0;
    memset(r->shared.latest, 0, SHARED_SLOTS * sizeof *r->shared.latest);
    memset(r->shared.live, 0, SHARED_RING / 8);
  }
  const ms_psnap_thread_order *order = &r->profile.threads[t];
  if (r->order_ready) ms_expr_cursor_free(&r->order);
  r->order_ready = 0;
  if (!order->lossy) {
    int rc = ms_expr_cursor_init(&r->order, &order->order, 0);
    if (rc == 0) rc = index_flat_groups(r, &order->order);
    if (rc < 0) return rc;
    r->order_ready = 1;
    return 0;
  }
  r->period_end = 0;
  load_period(r, order, 0);
  r->walk_left = order->accesses;
  r->walk_started = 0;
  return 0;
}

/* Next step of a lossy order's walk: the site, or -1 at the end. */
static int64_t walk_next(replay *r) {
  const ms_psnap_thread_order *order = &r->profile.threads[r->thread];
  if (r->walk_left == 0) return -1;
  r->walk_left--;
  if (!r->walk_started) {
    r->walk_started = 1;
    return r->walk_site = order->first_site;
  }
  uint64_t index = order->accesses - r->walk_left - 1; /* of the access the step leads to */
  if (order->transition_period && index / order->period_length != r->period)
    load_period(r, order, (uint32_t)(index / order->period_length));
  uint32_t *next = &r->source_next[r->walk_site], end = r->source_start[r->walk_site + 1];
  while (*next < end && !r->path_left[*next])
    ++*next;
  uint32_t e = *next;
  if (order->transition_period && e + 1 < end) {
    /* with periods, a path drawn with the odds of the uses left (a hash of the position:
     * replay from anywhere walks the same): with every site lossless, sort's L2 error over
     * the catalog was 0.09 points rather than 0.12 with the first path first (512
     * periods), xz's 0.25 rather than 0.97 (128), sqlite3's 1.9 rather than 1.7 (512).
     * Without periods the first path first: drawn, gzip's L1 error was 3.1 points rather
     * than 1.1 with its sites lossy. */
    uint64_t total = 0;
    for (uint32_t k = e; k < end; k++)
      total += r->path_left[k];
    uint64_t pick = mix(r->walk_left * 0x9E3779B97F4A7C15ull ^ r->thread) % total;
    for (uint32_t k = e; k < end; k++) {
      if (pick < r->path_left[k]) {
        e = k;
        break;
      }
      pick -= r->path_left[k];
    }
  }
  if (e == end) {
    uint32_t paths = r->period_end - r->period_first;
    while (r->fallback < paths && !r->path_left[r->fallback])
      r->fallback++;
    if (r->fallback == paths) return -1;
    e = r->fallback;
  }
  r->path_left[e]--;
  return r->walk_site = order->transition_to[r->by_source[e]];
}

/* The next run of the order in the current thread: site and length; 0 at the end. */
static int next_run(replay *r) {
  for (;;) {
    if (r->thread >= r->profile.thread_count) return 0;
    const ms_psnap_thread_order *order = &r->profile.threads[r->thread];
    int64_t value;
    if (!order->lossy) {
      uint64_t n = ms_expr_cursor_run(&r->order, UINT64_MAX, &value);
      if (n) {
        r->run_site = (uint32_t)value;
        r->run_left = n;
        return 1;
      }
    } else if ((value = walk_next(r)) >= 0) {
      r->run_site = (uint32_t)value;
      r->run_left = 1;
      return 1;
    }
    if (r->thread + 1 >= r->profile.thread_count) {
      r->thread = r->profile.thread_count;
      return 0;
    }
    int rc = start_thread(r, r->thread + 1);
    if (rc < 0) return rc;
  }
}

/* The fast path. When the order has just finished an iteration of a flat group (its
 * body: sites s1..sL, each exact), and every site of the body is inside a run of one
 * stride long enough, the next k iterations are linear: record j of iteration t has the
 * address base(j) + t * occurrences(site) * stride(site). They are written in one loop
 * without touching the cursors, which are then moved on arithmetically.
 * Measured (bench_replay, summing consumer): stream_add 1M from 42 to 1600 M accesses/s,
 * matmul 150 from 35 to 340 M accesses/s; bench/run-psnap.sh prints the current figures. */
/* Each record written as its two 8-byte words: 25% faster than a copy of a model record
 * followed by the address (stream_add, 409 -> 550 M accesses/s with a summing consumer). */
static inline __attribute__((always_inline)) void emit_body(ms_access *out, uint64_t *address,
                                                            const uint64_t *step,
                                                            const uint64_t *model, uint64_t k,
                                                            uint32_t length) {
  _Static_assert(offsetof(ms_access, address) == 0, "the address is the first word");
  /* unrolled, the addresses of a body of up to 8 sites stay in registers; GCC -O2 kept
   * them in memory, a store-to-load chain per record (replay only, counting consumer:
   * stream_add 1641 -> 2604, stencil3d 1213 -> 1681 M accesses/s) */
  for (uint64_t t = 0; t < k; t++, out += length)
#pragma GCC unroll 8
    for (uint32_t j = 0; j < length; j++) {
      uint64_t words[2] = {address[j], model[j]};
      memcpy(&out[j], words, sizeof words);
      address[j] += step[j];
    }
}

/* Iterations after the first few: each record is the one `period` records earlier plus
 * that record's step times the iterations in a period (second words: plus 0), four
 * records per vector. period is a multiple of 4 records, so that each load reads what
 * exactly one earlier vector store wrote (a load straddling two stores waits for them to
 * reach the cache: stream_add 2361 -> 2970 M accesses/s with a counting consumer), and
 * the vector stores start at a 64-byte boundary, so that none straddles two cache lines
 * (stream_add 3414 -> 4124, matmul 2035 -> 2228 M accesses/s, counting consumer). The
 * AVX-512 clone is 1.4x-1.7x faster than the AVX2 one on Zen 4 (matmul 1454 -> 2073,
 * stream_add 1781 -> 2994 M accesses/s, counting consumer), the AVX2 one faster than
 * the unrolled scalar loop (stream_add 2604). */
typedef uint64_t record_quad __attribute__((vector_size(64))); /* 4 records */
static inline void add_record(ms_access *out, const uint64_t *from, const uint64_t *plus) {
  uint64_t words[2];
  memcpy(words, from, sizeof words);
  words[0] += plus[0];
  memcpy(out, words, sizeof words);
}
static inline void add_quad(ms_access *out, const void *from, const uint64_t *plus) {
  record_quad record, step;
  memcpy(&record, from, sizeof record);
  memcpy(&step, plus, sizeof step);
  record += step;
  memcpy(out, &record, sizeof record);
}
/* The first period: table->first plus the sites' addresses (`address`: one word pair per
 * record, `cycle` records, repeated); then the copies. total >= period. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
copy_forward(ms_access *out, const delta_table *table, const uint64_t *address, size_t cycle,
             size_t period, size_t total) {
  const uint64_t *first = table->first, *delta = table->words;
  size_t i = 0;
  for (; i < period && (uintptr_t)(out + i) % 64 && i < 3; i++)
    add_record(out + i, first + 2 * i, address + 2 * (i % cycle));
  for (size_t a = i % cycle; i + 4 <= period; i += 4) {
    record_quad record;
    memcpy(&record, address + 2 * a, sizeof record);
    add_quad(out + i, &record, first + 2 * i);
    a += 4;
    if (a >= cycle) a -= cycle;
  }
  for (; i < period; i++)
    add_record(out + i, first + 2 * i, address + 2 * (i % cycle));
  size_t phase = 0;
  for (; i < total && (uintptr_t)(out + i) % 64 && phase < 3; i++, phase++)
    add_record(out + i, (const uint64_t *)(out + i - period), delta + 2 * phase);
  for (; i + 4 <= total; i += 4) {
    add_quad(out + i, out + i - period, delta + 2 * phase);
    phase += 4;
    if (phase >= period) phase -= period;
  }
  for (; i < total; i++, phase++)
    add_record(out + i, (const uint64_t *)(out + i - period), delta + 2 * phase);
}

/* Bodies of 1 to 8 sites: loops the compiler unrolls, addresses in registers (matmul 2x). */
static void emit_body_unrolled(ms_access *out, uint64_t *address, const uint64_t *step,
                               const uint64_t *model, uint64_t k, uint32_t length) {
  switch (length) {
  case 1: emit_body(out, address, step, model, k, 1); break;
  case 2: emit_body(out, address, step, model, k, 2); break;
  case 3: emit_body(out, address, step, model, k, 3); break;
  case 4: emit_body(out, address, step, model, k, 4); break;
  case 5: emit_body(out, address, step, model, k, 5); break;
  case 6: emit_body(out, address, step, model, k, 6); break;
  case 7: emit_body(out, address, step, model, k, 7); break;
  case 8: emit_body(out, address, step, model, k, 8); break;
  default: emit_body(out, address, step, model, k, length); break;
  }
}

/* values[j] as the first word of 2-word records repeated over the body's sites until a whole
 * number of 4-record vectors is reached, plus 3 records for a vector starting at any phase;
 * returns that number of records (the cycle of the copies). */
static size_t fill_cycle(uint64_t *words, const uint64_t *values, uint32_t length) {
  size_t cycle = length % 4 == 0 ? length : length % 2 == 0 ? 2 * length : 4 * length;
  for (size_t i = 0, j = 0; i < cycle + 3; i++, j = j + 1 == length ? 0 : j + 1) {
    words[2 * i] = values[j];
    words[2 * i + 1] = 0;
  }
  return cycle;
}

/* k iterations of a body: the first `seed` from the table of their offsets, the rest by
 * copies; a few directly. */
static void emit_body_any(ms_access *out, uint64_t *address, const uint64_t *step,
                          const uint64_t *model, uint64_t k, uint32_t length, delta_table *table) {
  uint64_t seed = 1;
  while (seed * length < SEED_RECORDS || seed * length % 4)
    seed++;
  if (k <= seed) {
    emit_body_unrolled(out, address, step, model, k, length);
    return;
  }
  size_t period = (size_t)(seed * length);
  if (table->length != length || memcmp(table->step, step, length * sizeof *step) != 0 ||
      memcmp(table->model, model, length * sizeof *model) != 0) {
    table->length = length;
    memcpy(table->step, step, length * sizeof *step);
    memcpy(table->model, model, length * sizeof *model);
    for (size_t i = 0, j = 0, t = 0; i < period + 3; i++, j = j + 1 == length ? (t++, 0) : j + 1) {
      table->words[2 * i] = seed * step[j];
      table->words[2 * i + 1] = 0;
      table->first[2 * i] = t * step[j];
      table->first[2 * i + 1] = model[j];
    }
  }
  uint64_t words[2 * (4 * FLAT_MAX + 3)]; /* the addresses, repeated to whole vectors */
  size_t cycle = fill_cycle(words, address, length);
  copy_forward(out, table, words, cycle, period, (size_t)(k * length));
}

/* The flat group at the top of the order when one of its iterations has just ended and
 * more are left: its frame, node, body and length (> 0); 0 when the order is elsewhere. */
static int between_iterations(replay *r, ms_expr_frame **top, const ms_expr_node **group,
                              const uint32_t **body, uint32_t *length) {
  ms_expr_cursor *c = &r->order;
  if (!r->order_ready || c->depth == 0 || c->leaf_left) return 0;
  ms_expr_frame *frame = &c->stack[c->depth - 1];
  const ms_expr_node *g = &c->expr->nodes[frame->node];
  int32_t start = r->body_start[frame->node];
  if (start < 0 || frame->child != g->count || frame->iteration + 1 >= g->repeat) return 0;
  *length = r->body_length[frame->node];
  if (*length == 0) return 0;
  *top = frame;
  *group = g;
  *body = r->body_sites + start;
  return 1;
}

static size_t emit_linear(replay *r, ms_access *out, size_t space) {
  ms_expr_frame *top;
  const ms_expr_node *g;
  const uint32_t *body;
  uint32_t length;
  if (!between_iterations(r, &top, &g, &body, &length)) return 0;
  uint64_t k = g->repeat - top->iteration - 1;
  if (k > space / length) k = space / length;
  for (uint32_t j = 0; j < length; j++)
    r->occurrences[body[j]]++;
  for (uint32_t j = 0; j < length && k; j++) {
    replay_site *rs = &r->sites[body[j]];
    if (rs->stride_left == 0)
      rs->stride_left = ms_expr_cursor_run(&rs->strides, UINT64_MAX, &rs->stride);
    /* m accesses need m - 1 strides of the run: the stride after the last one may be
     * the next run's (the last iteration of a row: stencils 2x faster with it) */
    uint64_t fits = rs->stride_left == UINT64_MAX ? UINT64_MAX
                                                  : (rs->stride_left + 1) / r->occurrences[body[j]];
    if (fits < k) k = fits;
  }
  uint64_t address[FLAT_MAX], step[FLAT_MAX], model[FLAT_MAX]; /* model: the record's 2nd word */
  for (uint32_t j = 0; j < length; j++) {
    uint32_t s = body[j];
    replay_site *rs = &r->sites[s];
    const ms_psnap_site *site = &r->profile.sites[s];
    ms_access record = {
        .site = site->trace_site, .thread = site->thread, .size = site->size, .kind = site->kind};
    memcpy(&model[j], (const char *)&record + 8, 8);
    address[j] = rs->next_address;
    step[j] = r->occurrences[s] * (uint64_t)rs->stride;
    rs->next_address += (uint64_t)rs->stride; /* the site's next occurrence in the body */
  }
  for (uint32_t j = 0; j < length; j++) { /* back to the start, then on by k iterations */
    uint32_t s = body[j];
    replay_site *rs = &r->sites[s];
    if (r->occurrences[s] == 0) continue;
    uint64_t per = r->occurrences[s], emitted = k * per;
    rs->next_address -= per * (uint64_t)rs->stride;
    rs->position += emitted;
    r->occurrences[s] = 0;
    if (emitted <= rs->stride_left) {
      rs->next_address += emitted * (uint64_t)rs->stride;
      rs->stride_left -= emitted;
    } else { /* emitted == stride_left + 1: the run is used up; its successor follows */
      uint64_t last = rs->next_address + (emitted - 1) * (uint64_t)rs->stride;
      rs->stride_left = ms_expr_cursor_run(&rs->strides, UINT64_MAX, &rs->stride);
      rs->next_address = last + (uint64_t)rs->stride;
      rs->stride_left--;
    }
  }
  if (k == 0) return 0;
  emit_body_any(out, address, step, model, k, length, &r->delta);
  top->iteration += k;
  return (size_t)(k * length);
}

/* Rows: records [distance, total) are the records `distance` earlier plus a step that
 * depends on the record's place in a cycle of `cycle` records (a multiple of 4). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
copy_rows(ms_access *out, const uint64_t *delta, size_t cycle, size_t distance, size_t total) {
  size_t i = distance, phase = distance % cycle;
  for (; i < total && (uintptr_t)(out + i) % 64; i++, phase = phase + 1 == cycle ? 0 : phase + 1)
    add_record(out + i, (const uint64_t *)(out + i - distance), delta + 2 * phase);
  for (; i + 4 <= total; i += 4) {
    add_quad(out + i, out + i - distance, delta + 2 * phase);
    phase += 4;
    if (phase >= cycle) phase -= cycle;
  }
  for (; i < total; i++, phase = phase + 1 == cycle ? 0 : phase + 1)
    add_record(out + i, (const uint64_t *)(out + i - distance), delta + 2 * phase);
}

/* Whether site rs has just finished an iteration of a group of its stride pattern with
 * more to come: *row receives the strides of one iteration, *rows the iterations left. */
static int at_row_start(const replay_site *rs, uint64_t *row, uint64_t *rows) {
  const ms_expr_cursor *c = &rs->strides;
  if (rs->stride_left || c->leaf_left || c->depth == 0) return 0;
  const ms_expr_frame *top = &c->stack[c->depth - 1];
  const ms_expr_node *g = &c->expr->nodes[top->node];
  if (top->child != g->count || top->iteration + 1 >= g->repeat) return 0;
  *row = c->expr->length[top->node];
  *rows = g->repeat - top->iteration - 1;
  return 1;
}

/* Rows of a flat group. When each site of the body (each once in it) has just finished an
 * iteration of a group of its stride pattern, all of the same length n (stencil3d: n = 98,
 * (+8^97 +24)^97), the next n iterations of the body are a row, and each further row is
 * the previous one with each site's records moved by the sum of its group's strides. The
 * first row is written by emit_linear, the next ones copied (stencil3d 2236 -> 2551 M
 * accesses/s, counting consumer: the stride cursors step once per batch, not per row; the
 * other kernels, whose rows do not fit twice in a batch or whose groups end with the row,
 * 1-3% slower for the tries, within the noise of one run). Each check is made again after
 * the first row, which may end elsewhere than predicted. */
static size_t emit_rows(replay *r, ms_access *out, size_t space) {
  ms_expr_frame *top;
  const ms_expr_node *g;
  const uint32_t *body;
  uint32_t length;
  if (!between_iterations(r, &top, &g, &body, &length)) return 0;
  uint64_t row, rows, site_row, site_rows;
  if (!at_row_start(&r->sites[body[0]], &row, &rows)) return 0;
  if (row * length < SEED_RECORDS || row * length > space / 2) return 0;
  if (rows > (g->repeat - top->iteration - 1) / row) rows = (g->repeat - top->iteration - 1) / row;
  if (rows > space / (row * length)) rows = space / (row * length);
  for (uint32_t j = 1; j < length && rows >= 2; j++) {
    if (!at_row_start(&r->sites[body[j]], &site_row, &site_rows) || site_row != row) return 0;
    if (site_rows < rows) rows = site_rows;
  }
  if (rows < 2) return 0;
  int distinct = 1;
  for (uint32_t j = 0; j < length; j++)
    distinct &= r->occurrences[body[j]]++ == 0;
  for (uint32_t j = 0; j < length; j++)
    r->occurrences[body[j]] = 0;
  if (!distinct) return 0;
  size_t period = (size_t)(row * length), done = 0;
  while (done < period) {
    size_t n = emit_linear(r, out + done, period - done);
    if (n == 0) return done;
    done += n;
  }
  uint64_t delta[2 * (4 * FLAT_MAX + 3)], sum[FLAT_MAX] = {0}; /* {0}: for clang-tidy */
  for (uint32_t j = 0; j < length; j++) {
    replay_site *rs = &r->sites[body[j]];
    if (!at_row_start(rs, &site_row, &site_rows) || site_row != row || site_rows < rows - 1)
      return done;
    sum[j] = (uint64_t)rs->strides.expr->sum[rs->strides.stack[rs->strides.depth - 1].node];
  }
  size_t cycle = fill_cycle(delta, sum, length);
  copy_rows(out, delta, cycle, period, (size_t)(rows * period));
  for (uint32_t j = 0; j < length; j++) {
    replay_site *rs = &r->sites[body[j]];
    rs->strides.stack[rs->strides.depth - 1].iteration += rows - 1;
    rs->position += (rows - 1) * row;
    rs->next_address += (rows - 1) * sum[j];
  }
  top->iteration += (rows - 1) * row;
  return (size_t)(rows * period);
}

static size_t emit_iterations(replay *r, ms_access *out, size_t space) {
  size_t n = emit_rows(r, out, space);
  return n ? n : emit_linear(r, out, space);
}

/* When the next item of the order is a flat group, enters it as if an iteration
 * "before the first" had just ended (iteration = UINT64_MAX, all children done), so that
 * emit_iterations takes its first iteration too; the cursor's own step then starts
 * iteration 0 if the fast loop cannot. The next item may follow the end of enclosing
 * groups' iterations (matmul's ((s32 s33)^300 s34)^90000): those groups are stepped on
 * first, as the cursor's own step would (matmul 2210 -> 2412 M accesses/s, counting
 * consumer). A flat group that has iterations left is left to the cursor. */
static int enter_flat_group(replay *r) {
  ms_expr_cursor *c = &r->order;
  if (!r->order_ready || c->leaf_left || c->depth == 0) return 0;
  const ms_expr *e = c->expr;
  ms_expr_frame *top = &c->stack[c->depth - 1];
  const ms_expr_node *g = &e->nodes[top->node];
  while (top->child >= g->count) {
    if (top->iteration + 1 < g->repeat) {
      if (r->body_start[top->node] >= 0) return 0;
      top->iteration++;
      top->child = 0;
      break;
    }
    if (c->depth == 1) return 0;
    top = &c->stack[--c->depth - 1];
    g = &e->nodes[top->node];
  }
  uint32_t id = e->children[g->first + top->child];
  if (r->body_start[id] < 0) return 0;
  top->child++;
  c->stack[c->depth++] =
      (ms_expr_frame){.node = id, .child = e->nodes[id].count, .iteration = UINT64_MAX};
  return 1;
}

static int replay_next(ms_source *source, ms_batch *batch) {
  replay *r = (replay *)source;
  size_t n = 0, capacity = batch->capacity;
  if (r->remaining < capacity) capacity = (size_t)r->remaining;
  while (n < capacity) {
    if (r->run_left == 0) {
      size_t fast = emit_iterations(r, batch->accesses + n, capacity - n);
      if (fast) {
        for (size_t j = 0; r->shared.ring && j < fast; j++)
          shared_push(&r->shared, batch->accesses[n + j].address, NO_MAKER);
        n += fast;
        continue;
      }
      if (enter_flat_group(r)) continue;
      int rc = next_run(r);
      if (rc < 0) return rc;
      if (rc == 0) break;
    }
    uint32_t site = r->run_site;
    if (r->mask && !r->mask[site] && r->shared.ring) {
      /* made and left out: the sites kept may share their lines */
      size_t k = r->run_left < r->scratch_capacity ? (size_t)r->run_left : r->scratch_capacity;
      site_emit(r, site, r->scratch, k);
      r->run_left -= k;
      continue;
    }
    if (r->mask && !r->mask[site]) {
      r->sites[site].position += r->run_left;
      r->sites[site].stride_left = 0;
      r->run_left = 0;
      continue;
    }
    size_t k = r->run_left < capacity - n ? (size_t)r->run_left : capacity - n;
    site_emit(r, site, batch->accesses + n, k);
    n += k;
    r->run_left -= k;
  }
  batch->count = n;
  r->remaining -= n;
  return (int)n;
}

/* Positions replay before selected access `index`. */
/* With shared odds a site's addresses depend on every access of its thread before: the
 * thread is replayed from its start and the first `index` selected accesses dropped. */
static int seek_by_replay(replay *r, uint32_t t, uint64_t index) {
  for (uint32_t s = 0; s < r->profile.site_count; s++)
    if (r->profile.sites[s].thread == t) {
      site_seek(r, s, 0);
      r->sites[s].walk_address = r->sites[s].last_address = 0;
      if (r->sites[s].recent)
        memset(r->sites[s].recent, 0, RECENT_SETS * RECENT_WAYS * sizeof *r->sites[s].recent);
      if (r->sites[s].swept)
        memset(r->sites[s].swept, 0, MS_PSNAP_HISTOGRAM_BINS * sizeof *r->sites[s].swept);
      r->sites[s].first_line = 0;
      for (int b = 0; r->sites[s].taken && b < MS_PSNAP_HISTOGRAM_BINS; b++)
        r->sites[s].taken[b].count = 0;
      if (r->sites[s].taken_set)
        memset(r->sites[s].taken_set, 0, r->sites[s].taken_slots * sizeof *r->sites[s].taken_set);
      r->sites[s].taken_used = 0;
      r->sites[s].first_taken = 0;
    }
  ms_batch batch;
  int rc = ms_batch_init(&batch, 0);
  uint64_t remaining = r->remaining;
  while (rc >= 0 && index > 0) {
    r->remaining = index < batch.capacity ? index : batch.capacity;
    rc = replay_next(&r->source, &batch);
    if (rc == 0) break;
    index -= batch.count;
  }
  r->remaining = remaining;
  ms_batch_free(&batch);
  return rc < 0 ? rc : 0;
}

static int replay_seek(ms_source *source, uint64_t index) {
  replay *r = (replay *)source;
  ms_psnap_profile *p = &r->profile;
  uint32_t t = 0;
  while (t < p->thread_count && index >= r->thread_selected[t])
    index -= r->thread_selected[t++];
  if (t == p->thread_count) {
    r->thread = t;
    r->run_left = 0;
    return 0;
  }
  int rc = start_thread(r, t);
  if (rc < 0) return rc;
  if (r->shared.ring) return seek_by_replay(r, t, index);
  const ms_psnap_thread_order *order = &p->threads[t];
  uint64_t *positions = calloc(p->site_count ? p->site_count : 1, sizeof *positions);
  if (!positions) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (!order->lossy) {
    ms_expr_cursor_seek_weighted(&r->order, index, r->weights[t], positions);
  } else {
    /* A lossy order is walked: count each site's uses up to the index-th selected one. */
    uint64_t seen = 0;
    while (seen < index) {
      int64_t site = walk_next(r);
      if (site < 0) break;
      positions[site]++;
      if (!r->mask || r->mask[site]) seen++;
    }
  }
  for (uint32_t s = 0; s < p->site_count; s++)
    if (p->sites[s].thread == t) site_seek(r, s, positions[s]);
  free(positions);
  return 0;
}

static void replay_destroy(ms_source *source) {
  replay *r = (replay *)source;
  for (uint32_t s = 0; r->sites && s < r->profile.site_count; s++) {
    ms_expr_cursor_free(&r->sites[s].strides);
    free(r->sites[s].ring);
    free(r->sites[s].recent);
    free(r->sites[s].swept);
    for (int b = 0; r->sites[s].taken && b < MS_PSNAP_HISTOGRAM_BINS; b++)
      free(r->sites[s].taken[b].address);
    free(r->sites[s].taken);
    free(r->sites[s].taken_set);
  }
  for (uint32_t t = 0; r->weights && t < r->profile.thread_count; t++)
    free(r->weights[t]);
  if (r->order_ready) ms_expr_cursor_free(&r->order);
  free(r->weights);
  free(r->thread_selected);
  free(r->sites);
  free(r->mask);
  free(r->path_left);
  free(r->body_start);
  free(r->body_length);
  free(r->body_sites);
  free(r->occurrences);
  free(r->by_source);
  free(r->source_start);
  free(r->source_next);
  free(r->shared.ring);
  free(r->shared.maker);
  free(r->shared.latest);
  free(r->shared.live);
  free(r->scratch);
  ms_psnap_profile_free(&r->profile);
  ms_stream_info_clear(&r->source.info);
  free(r);
}

static const ms_source_ops replay_ops = {
    .next = replay_next, .seek = replay_seek, .destroy = replay_destroy};

static int replay_prepare(replay *r, const ms_psnap_replay_options *options) {
  ms_psnap_profile *p = &r->profile;
  r->sites = calloc(p->site_count ? p->site_count : 1, sizeof *r->sites);
  r->weights = calloc(p->thread_count ? p->thread_count : 1, sizeof *r->weights);
  r->thread_selected = calloc(p->thread_count ? p->thread_count : 1, sizeof *r->thread_selected);
  r->mask = malloc(p->site_count ? p->site_count : 1);
  uint32_t most_paths = 1;
  for (uint32_t t = 0; t < p->thread_count; t++)
    if (p->threads[t].transition_count > most_paths) most_paths = p->threads[t].transition_count;
  r->path_left = malloc(most_paths * sizeof *r->path_left);
  r->by_source = malloc(most_paths * sizeof *r->by_source);
  r->source_start = malloc((p->site_count + 1) * sizeof *r->source_start);
  r->source_next = malloc((p->site_count + 1) * sizeof *r->source_next);
  r->occurrences = calloc(p->site_count + 1, sizeof *r->occurrences);
  if (!r->sites || !r->weights || !r->thread_selected || !r->mask || !r->path_left ||
      !r->by_source || !r->source_start || !r->source_next || !r->occurrences)
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  for (uint32_t s = 0; s < p->site_count; s++) {
    r->mask[s] = options && options->site_mask ? options->site_mask[s] != 0 : 1;
    int rc = ms_expr_cursor_init(&r->sites[s].strides, &p->sites[s].pattern, 1);
    if (rc < 0) return rc;
    r->sites[s].next_address = p->sites[s].first_address;
    if (p->sites[s].lossy && !p->sites[s].tied && p->sites[s].reuse_accesses &&
        (!(r->sites[s].ring = malloc(REUSE_RING * sizeof *r->sites[s].ring)) ||
         !(r->sites[s].recent = calloc(RECENT_SETS * RECENT_WAYS, sizeof *r->sites[s].recent))))
      return ms_error_set(MS_ERR_NOMEM, "out of memory");
    for (int g = 0; g < MS_PSNAP_SEGMENTS; g++)
      for (int b = 0; b < MS_PSNAP_HISTOGRAM_BINS; b++)
        r->sites[s].histogram_total[g] += p->sites[s].histogram ? p->sites[s].histogram[g][b] : 0;
    if (r->mask[s]) r->thread_selected[p->sites[s].thread] += p->sites[s].count;
  }
  for (uint32_t s = 0; s < p->site_count && !r->shared.ring; s++)
    if (p->sites[s].lossy && !p->sites[s].tied &&
        (p->sites[s].shared_accesses || ms_psnap_site_new_lines(&p->sites[s]))) {
      r->shared.ring = malloc(SHARED_RING * sizeof *r->shared.ring);
      r->shared.maker = malloc(SHARED_RING * sizeof *r->shared.maker);
      r->shared.sites = p->sites;
      r->shared.latest = calloc(SHARED_SLOTS, sizeof *r->shared.latest);
      r->shared.live = calloc(SHARED_RING / 64, sizeof *r->shared.live);
      r->scratch_capacity = MS_BATCH_CAPACITY;
      r->scratch = malloc(r->scratch_capacity * sizeof *r->scratch);
      if (!r->shared.ring || !r->shared.maker || !r->shared.latest || !r->shared.live ||
          !r->scratch)
        return ms_error_set(MS_ERR_NOMEM, "out of memory");
    }
  for (uint32_t s = 0; s < p->site_count && r->shared.ring; s++) {
    if ((ms_psnap_site_new_lines(&p->sites[s]) || p->sites[s].lines) && p->sites[s].lossy &&
        !p->sites[s].tied &&
        (!(r->sites[s].swept = calloc(MS_PSNAP_HISTOGRAM_BINS, sizeof *r->sites[s].swept)) ||
         !(r->sites[s].taken = calloc(MS_PSNAP_HISTOGRAM_BINS, sizeof *r->sites[s].taken))))
      return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  uint64_t total = 0;
  for (uint32_t t = 0; t < p->thread_count; t++) {
    ms_psnap_thread_order *order = &p->threads[t];
    if (!order->lossy) {
      if (!order->order.count_start) {
        int rc = ms_expr_index_values(&order->order, p->site_count);
        if (rc < 0) return rc;
      }
      if (!(r->weights[t] = ms_expr_weights(&order->order, r->mask)))
        return ms_error_set(MS_ERR_NOMEM, "out of memory");
    }
    total += r->thread_selected[t];
  }
  if (!options || !options->site_mask) {
    free(r->mask);
    r->mask = NULL;
  }
  uint64_t from = options ? options->from : 0;
  uint64_t available = from < total ? total - from : 0;
  r->remaining =
      options && options->count && options->count < available ? options->count : available;
  /* The source describes the stream: the profile's description moves to it. */
  r->source.info = p->info;
  memset(&p->info, 0, sizeof p->info);
  r->source.info.access_count = r->remaining;
  if (p->thread_count == 0) {
    r->thread = 0;
    return 0;
  }
  return from ? replay_seek(&r->source, from) : start_thread(r, 0);
}

int ms_psnap_replay_open(ms_psnap_profile *profile, const ms_psnap_replay_options *options,
                         ms_source **out) {
  *out = NULL;
  /* a profile in block form replays its lowest rank, all its threads */
  int picked = profile->blocks ? ms_psnap_profile_pick(profile, -1, -1) : 0;
  replay *r = picked == 0 ? calloc(1, sizeof *r) : NULL;
  if (!r) {
    ms_psnap_profile_free(profile);
    return picked < 0 ? picked : ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  r->source.ops = &replay_ops;
  r->profile = *profile;
  memset(profile, 0, sizeof *profile);
  int rc = replay_prepare(r, options);
  if (rc < 0) {
    replay_destroy(&r->source);
    return rc;
  }
  *out = &r->source;
  return 0;
}

int ms_psnap_open(const char *path, ms_source **out) {
  return ms_psnap_open_picked(path, -1, -1, out);
}

int ms_psnap_open_picked(const char *path, int64_t rank, int64_t thread, ms_source **out) {
  ms_psnap_profile profile;
  *out = NULL;
  int rc = ms_psnap_profile_load(path, &profile);
  if (rc < 0) return rc;
  if ((rc = ms_psnap_profile_pick(&profile, rank, thread)) < 0) {
    char message[512];
    snprintf(message, sizeof message, "%s", ms_error_message());
    ms_psnap_profile_free(&profile);
    return ms_error_set(rc, "%s: %s", path, message);
  }
  return ms_psnap_replay_open(&profile, NULL, out);
}

static int ends_with_path(const char *text, const char *suffix, size_t m) {
  size_t n = strlen(text);
  return n >= m && !strncmp(text + n - m, suffix, m) && (n == m || text[n - m - 1] == '/');
}

int ms_psnap_select(const ms_psnap_profile *profile, const char *function, const char *file_line,
                    uint8_t *mask) {
  int selected = 0;
  const char *colon = file_line ? strrchr(file_line, ':') : NULL;
  for (uint32_t s = 0; s < profile->site_count; s++) {
    const ms_site *where = ms_site_table_get(profile->info.sites, profile->sites[s].trace_site);
    int keep = 0;
    if (where && function && where->function && !strcmp(where->function, function)) keep = 1;
    if (where && colon && where->file && where->line == strtoul(colon + 1, NULL, 10) &&
        ends_with_path(where->file, file_line, (size_t)(colon - file_line)))
      keep = 1;
    if (keep && !mask[s]) mask[s] = 1, selected++;
  }
  return selected;
}

/* PSnAP profiles: per-site stride patterns, the order of sites, replay.
 *
 * A profile (docs/formats.md, "The .psnap profile") describes a stream of accesses by its
 * *sites*: one site per (thread, instruction, kind, size), so that every access of a site
 * has the same thread, kind and size (an instruction issuing two sizes or kinds becomes
 * two profile sites). A site's addresses are its first address followed by its stride
 * pattern, an expression of nested repetitions (memsnap/expr.h) such as `((+16^15 +48)^127 +16^15
 * -36816)`, read cyclically: the pattern is repeated as often as the site's count requires (the
 * paper's reading of a replay pattern; an exact fold has exactly count-1 strides and
 * never wraps). The order of each thread is an expression of the same kind over site
 * numbers, `(s0 s1 s2)^100000`. Sites whose strides do not fit in a pattern of the size
 * cap are *lossy*: their address range, alignment and a histogram of where their
 * addresses fall are kept, and replay draws addresses from it (or, with --lossless, their
 * exact addresses are kept compressed in the profile).
 *
 * Parts: stride histories and their decoding after
 * psnap-mills-snavely-carrington.txt section II-B (ms_stride_history), profiles and their
 * text form (ms_psnap_profile), the profile builder (a sink), replay (a source).
 */
#ifndef MEMSNAP_PSNAP_H
#define MEMSNAP_PSNAP_H

#include <stdint.h>
#include <stdio.h>

#include "memsnap/api.h"
#include "memsnap/expr.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Stride histories (section II-B) -------------------------------------------------- */

typedef enum ms_stride_class {
  MS_STRIDE_CONSTANT = 0,
  MS_STRIDE_SIMPLE_REPEAT,
  MS_STRIDE_SIMPLE_ALTERNATING,
  MS_STRIDE_COMPLEX_REPEAT,
  MS_STRIDE_UNDESIGNATED,
} ms_stride_class;

MS_API const char *ms_stride_class_name(ms_stride_class cls); /* "constant", "simple-repeat", ... */
MS_API int ms_stride_class_parse(const char *name);           /* -1 if unknown */

/* The online record of one site: unique strides in order of first appearance, their
 * counts, and a snapshot of the counts each time a new stride appears (row i, 0-based,
 * is taken when stride i+1 first appears, after counting it). Past `capacity` unique
 * strides the history stops (overflowed) and the site is undesignated. */
typedef struct ms_stride_history {
  int64_t *strides;
  uint64_t *counts;
  uint64_t *rows;            /* rows[i * width + j] */
  uint32_t unique, capacity; /* capacity: most unique strides kept */
  uint32_t width;            /* strides, counts and rows have room for this many (grown up
                                to capacity: most sites have few strides) */
  int overflowed;
  uint32_t hint; /* the index matched last: looked at first, then the next one */
} ms_stride_history;

MS_API int ms_stride_history_init(ms_stride_history *history, uint32_t capacity);
MS_API void ms_stride_history_free(ms_stride_history *history);
/* Cost proportional to the number of unique strides, but for the stride matched last and
 * the next one (a loop nest's strides recur in turn, in the order they first appeared). */
static inline int ms_stride_history_add(ms_stride_history *history, int64_t stride);
MS_API int ms_stride_history_add_new(ms_stride_history *history, int64_t stride);

static inline int ms_stride_history_add(ms_stride_history *history, int64_t stride) {
  uint32_t hint = history->hint;
  if (hint < history->unique && history->strides[hint] == stride) {
    history->counts[hint]++;
    return 0;
  }
  hint = hint + 1 < history->unique ? hint + 1 : 0;
  if (hint < history->unique && history->strides[hint] == stride) {
    history->counts[hint]++;
    history->hint = hint;
    return 0;
  }
  for (uint32_t i = 0; i < history->unique; i++)
    if (history->strides[i] == stride) {
      history->counts[i]++;
      history->hint = i;
      return 0;
    }
  history->hint = history->unique;
  return ms_stride_history_add_new(history, stride);
}

/* The decoding of a history: its class and the pattern expression (strides), following
 * identification and reduction (dominant lines, master line, equations 2-8). For a
 * simple repeat, `reduced` holds the replay pattern row (e.g. 15 255 2047 1) and
 * `repeat` the repeat value; for a complex repeat, one row per dominant line. */
typedef struct ms_stride_decoding {
  ms_stride_class cls;
  ms_expr pattern;          /* empty for undesignated */
  uint32_t pattern_count;   /* dominant patterns (1 for a simple repeat) */
  uint64_t reduced[16][32]; /* replay pattern rows, then the master line (at most 16 x 32) */
  uint64_t repeat;          /* repeat value of the whole */
} ms_stride_decoding;

/* Decodes from rows (row_count rows of `width` values, row i taken when stride i+1
 * appeared) and the final counts. Always succeeds unless out of memory; undesignated
 * when nothing fits. Call ms_stride_decoding_free afterwards. */
MS_API int ms_stride_history_decode_rows(const int64_t *strides, const uint64_t *counts,
                                         uint32_t unique, const uint64_t *rows, uint32_t row_count,
                                         uint32_t width, ms_stride_decoding *out);
MS_API int ms_stride_history_decode(const ms_stride_history *history, ms_stride_decoding *out);
MS_API void ms_stride_decoding_free(ms_stride_decoding *decoding);

/* ---- Profiles ------------------------------------------------------------------------- */

#define MS_PSNAP_HISTOGRAM_BINS 32
#define MS_PSNAP_SEGMENTS 8     /* a lossy site's accesses in 8 periods, one histogram each */
#define MS_PSNAP_TOP_STRIDES 16 /* a lossy site's most frequent strides kept */
#define MS_PSNAP_REUSE_BINS 12  /* a lossy site's reuse times: 1, 2-3, ... 2048-4095 */
#define MS_PSNAP_REUSE_SIZES 3  /* ... of blocks of 32, 64 and 128 bytes */
#define MS_PSNAP_SHARED_BINS 19 /* a lossy site's lines' times since any access: 1 ... 2^19 - 1 */

typedef struct ms_psnap_site {
  uint32_t trace_site; /* id in the profile's site table (function, file:line), or NONE */
  uint16_t thread;
  uint8_t size, kind;
  /* Profiles in block form (merged threads and ranks, ScalaMemTrace's EPRSDs): the site
   * stands for one site in each thread thread, thread + thread_step, ... (thread_members
   * of them; 0 or 1: the one thread) of each rank rank, rank + rank_step, ...
   * (rank_members). Its addresses (first_address, the range and the lossless addresses)
   * are those of its first thread in its first rank, moved by per_thread bytes for each
   * thread number above it and per_rank for each rank number. */
  uint32_t thread_step, thread_members;
  uint32_t rank, rank_step, rank_members;
  int64_t per_thread, per_rank;
  uint32_t moves; /* 0, or k: its addresses also move by table k - 1 of its block's moves */
  uint64_t count; /* accesses */
  uint64_t first_address;
  ms_stride_class cls; /* from the stride history */
  int lossy;           /* addresses drawn from range/histogram */
  ms_expr pattern;     /* strides, read cyclically (exact sites) */
  /* lossy sites */
  uint64_t low, high; /* address range, inclusive */
  uint64_t alignment; /* every address is first_address + k * alignment */
  /* accesses per 1/32 of the range, in each eighth of the site's accesses */
  uint64_t (*histogram)[MS_PSNAP_HISTOGRAM_BINS]; /* MS_PSNAP_SEGMENTS rows; lossy sites
                                                    only (2 KiB each: not for every site) */
  /* its most frequent strides, most frequent first, and how many of its count - 1 strides
   * each stands for (estimated from the strides seen once the site was found irregular);
   * the others, count - 1 minus their sum, are jumps drawn from the histogram. 0 strides:
   * every address from the histogram (PSnAP's random stream). */
  uint32_t stride_count;
  int64_t top_stride[MS_PSNAP_TOP_STRIDES];
  uint64_t top_stride_times[MS_PSNAP_TOP_STRIDES];
  uint64_t *addresses; /* --lossless: every address, count of them */
  /* Its temporal locality: of `reuse_accesses` accesses measured once the site proved
   * irregular, how many touched a 32-byte block the site itself had last touched 2^b to
   * 2^(b+1) - 1 of its accesses before (reuse[0][b]); of the others, how many the other
   * half of such a 64-byte line (reuse[1][b]), and the other half of such a 128-byte line
   * (reuse[2][b]): the reuse a cache of each line size in the catalog sees. The rest:
   * lines of 128 bytes not touched in its last 4095 accesses. Replay takes its addresses
   * from its own recent ones with these odds, before it walks (reuse_at_jumps 0: the odds
   * of all its accesses) or when its walk jumps (1: the odds of its accesses that were
   * not at one of its frequent strides). 0: none kept. */
  uint64_t reuse_accesses;
  uint64_t reuse[MS_PSNAP_REUSE_SIZES][MS_PSNAP_REUSE_BINS];
  int reuse_at_jumps;
  /* A lossy site tied to another lossy site of its thread (itself untied): in the program
   * at least 90% of its accesses were at `tie_site`'s latest address plus
   * `tie_delta` (the next field of the node a key was read from; the store of count[k]
   * after its load). Replay gives it that address whenever tie_site has run. A site whose
   * pattern would be exact is written so when it follows a lossy site that way (the load
   * of the value of the node a lossy lookup found; docs/formats.md). */
  int tied;
  uint32_t tie_site;
  int64_t tie_delta;
  /* Its first touches: how many 64-byte lines it touched for the first time in each eighth
   * of its accesses (counted once the site proved irregular). Replay makes as many
   * accesses of each eighth first touches, each the next line beyond those it has swept
   * so far in a bin of the eighth's histogram, so that a site that moves on through its
   * data misses a large cache as the program did. All 0: not kept. */
  uint64_t new_lines[MS_PSNAP_SEGMENTS];
  uint64_t new_next; /* of those, the ones on the line after its previous first touch:
                        taken so in replay, the others anywhere in their bin */
  /* Lines it shares with the other sites of its thread: of `shared_accesses` accesses
   * measured once the site proved irregular (first touches aside), how many touched a
   * 64-byte line that any access of the thread had last touched 2^b to 2^(b+1) - 1
   * accesses before (shared[b]). Replay takes its line with these odds from the thread's
   * recent accesses within the site's range; the others are fresh draws from its
   * histogram. Its own reuse odds and walk are the fallback when no such line is found.
   * 0: not kept. */
  uint64_t shared_accesses;
  uint64_t shared[MS_PSNAP_SHARED_BINS];
  uint64_t shared_same[MS_PSNAP_SHARED_BINS]; /* of shared[b], those to the 32-byte half
                                                 touched last */
  /* The 64-byte lines it touched over its run (those after it proved irregular, scaled to
   * its whole run). Replay gives it no line beyond as many: a site that reads a few page
   * headers that other sites touched lately (sqlite3's sqlite3BtreePayloadFetch: 37 lines)
   * took any line of its range at that age (852). 0: not kept. */
  uint64_t lines;
} ms_psnap_site;

/* A site's first touches over its whole run (0: no first-touch line). */
static inline uint64_t ms_psnap_site_new_lines(const ms_psnap_site *site) {
  uint64_t lines = 0;
  for (int g = 0; g < MS_PSNAP_SEGMENTS; g++)
    lines += site->new_lines[g];
  return lines;
}

typedef struct ms_psnap_thread_order {
  /* which threads and ranks it describes: in a profile of one process not in block form,
   * thread order t is thread t (members 0 or 1); in block form, every thread and rank of
   * the sets (as the sites', above), each with these accesses in this order, its sites
   * moved to that thread and rank */
  uint32_t thread, thread_step, thread_members;
  uint32_t rank, rank_step, rank_members;
  /* Block form: what addresses do beyond their slopes (the heap of MPI ranks, whose
   * MPI_Init allocates a few bytes more or less in each): move_count tables, each of a
   * move for every member of the block, rank index i and thread index j at
   * [i * thread members + j] (the first 0); a site with moves k adds table k - 1's. */
  uint32_t move_count;
  int64_t *moves;
  uint64_t accesses;
  int lossy;     /* the order exceeded its cap: transitions instead */
  ms_expr order; /* site numbers (exact) */
  /* lossy: for each site, its successors and how often (PSnAP section III path counts) */
  uint32_t transition_count;
  uint32_t *transition_from, *transition_to;
  uint64_t *transition_times;
  uint32_t first_site;
  /* per period of `period_length` accesses (0: one period, the whole thread), the paths
   * into its accesses: transition_period[k] (NULL: all 0), in increasing order */
  uint64_t period_length;
  uint32_t *transition_period;
} ms_psnap_thread_order;

typedef struct ms_psnap_profile {
  ms_stream_info info; /* program, arguments, capture, sampling, site table */
  uint64_t access_count;
  uint32_t site_count;
  ms_psnap_site *sites;
  uint32_t thread_count; /* entries of threads: threads, or blocks in block form */
  ms_psnap_thread_order *threads;
  /* Block form (memsnap merge; memsnap profile of threads that merge): threads[] are
   * blocks of threads and ranks, each site belongs to one block and has its sets. */
  int blocks;
  int has_rank;      /* the profile is of one MPI rank (a `rank` line) */
  uint32_t rank;     /* that rank */
  char *selection;   /* "all", "executable PATH", or the --function/--line/--object filter */
  uint64_t excluded; /* accesses of the stream left out by the selection */
  int has_excluded;  /* the profile states `excluded` (profiles before it do not) */
  /* Set by the builder only (not in the file): the object whose accesses the selection left
   * out most (its path, NULL if none), and how many of them. */
  char *excluded_object;
  uint64_t excluded_object_accesses;
  uint32_t floor_threads; /* threads whose order went lossy under the order floor */
} ms_psnap_profile;

/* A compressed profile decompresses to at most this many bytes of text (256 MiB). */
#define MS_PSNAP_MAX_TEXT ((size_t)256 << 20)

MS_API void ms_psnap_profile_free(ms_psnap_profile *profile);
/* What of a profile is not exact: lossy sites and their accesses, threads whose order is
 * lossy (path counts). */
typedef struct ms_psnap_lossy_summary {
  uint32_t sites, threads;
  uint64_t accesses;
} ms_psnap_lossy_summary;
MS_API void ms_psnap_profile_lossy(const ms_psnap_profile *profile, ms_psnap_lossy_summary *out);
MS_API int ms_psnap_profile_write(const ms_psnap_profile *profile, FILE *out);
/* The profile as a JSON report (what `memsnap show --json` prints): program, accesses,
 * selection, what is lossy, the sites of `mask` (NULL: all) with their patterns or lossy
 * models, and each thread's order. */
MS_API int ms_psnap_profile_write_json(const ms_psnap_profile *profile, const uint8_t *mask,
                                       FILE *out);
/* The same text through zstd (level 19), one frame. */
MS_API int ms_psnap_profile_write_compressed(const ms_psnap_profile *profile, FILE *out);
/* Writes atomically (temporary name, then rename); "-" is standard output. Compressed
 * when the path ends with ".zst" (save) or when `compress` is set (save_as). */
MS_API int ms_psnap_profile_save(const ms_psnap_profile *profile, const char *path);
MS_API int ms_psnap_profile_save_as(const ms_psnap_profile *profile, const char *path,
                                    int compress);
/* Parses text, or zstd-compressed text (told by the zstd magic; at most MS_PSNAP_MAX_TEXT
 * bytes once decompressed); errors name `name`, line and column (or the compressed
 * data's offset). Reads the current version (psnap 2) and version 1. */
MS_API int ms_psnap_profile_parse(const char *text, size_t size, const char *name,
                                  ms_psnap_profile *out);
/* `path` may be "-" (standard input), a pipe or a FIFO (memsnap/input.h). */
MS_API int ms_psnap_profile_load(const char *path, ms_psnap_profile *out);
/* 1 if the file starts like a profile (of either version), compressed or not: of a
 * compressed one, the first bytes of its text are decompressed, reading as much of the
 * file as that takes (its first zstd block, up to 128 KiB). */
MS_API int ms_psnap_detect(const char *path);

/* ---- Threads and ranks merged (scalamemtrace-budanur-mueller-gamblin-2010.txt, 2.2-2.3) ---- */

/* Merges, in place, the threads of a profile of one process whose sites and orders are
 * the same but for addresses affine in the thread number (the workers of an OpenMP loop):
 * the profile is then in block form. Threads are taken in increasing number; a thread
 * joins the last block of threads like it when its number and addresses continue the
 * block's progressions, else it starts a block. Returns the number of blocks, or a
 * negative status; a profile where no two threads merge is left as it was. */
MS_API int ms_psnap_merge_threads(ms_psnap_profile *profile);
/* Merges two profiles of disjoint rank sets, `left`'s ranks all below `right`'s (both
 * taken over, freed): blocks of `right` join a block of `left` with the same sites, order
 * and threads whose rank progression and addresses they continue; the others follow.
 * Profiles of one rank need their `rank` (has_rank). */
MS_API int ms_psnap_merge_pair(ms_psnap_profile *left, ms_psnap_profile *right,
                               ms_psnap_profile *out);
/* Merges `count` profiles (taken over, freed) of distinct ranks, in any order: sorted by
 * rank, then merged pairwise in log2(count) rounds (round k merges the results for ranks
 * [2j * 2^k, (2j + 1) * 2^k) and [(2j + 1) * 2^k, (2j + 2) * 2^k) of the sorted list), so
 * that a merge spread over processes (memsnap merge under mpirun) gives the same bytes. */
MS_API int ms_psnap_merge(ms_psnap_profile *profiles, uint32_t count, ms_psnap_profile *out);
/* The `rank R` of a profile of one rank, read from its header alone (the first 64 KiB of
 * its text): 1 and *rank set, 0 if the header has none (a profile in block form, of no
 * rank, or a header longer than that), or a negative status. */
MS_API int ms_psnap_peek_rank(const char *path, uint32_t *rank);
/* Makes a profile in block form an ordinary profile of one rank: `rank` (-1: the lowest
 * of the profile) and its threads, or only `thread` (-1: all). The rank
 * or thread is not in the profile (MS_ERR_ARG). A profile not in block form is kept whole: its rank
 * (if it states one, else any) must be `rank`, and `thread` keeps that thread's sites. */
MS_API int ms_psnap_profile_pick(ms_psnap_profile *profile, int64_t rank, int64_t thread);

/* ---- Building a profile (a sink) ------------------------------------------------------ */

typedef struct ms_psnap_options {
  uint32_t max_strides;         /* unique strides per history (default 32) */
  uint32_t site_cap;            /* pattern nodes per site before it is lossy (default 2048) */
  uint32_t order_cap;           /* order nodes per thread before it is lossy (default 262144) */
  int lossless;                 /* keep the exact addresses of lossy sites */
  const char *const *functions; /* keep only accesses of sites in these functions */
  int function_count;
  const char *const *lines; /* ... or at these file:line (file matched by its end) */
  int line_count;
  int all_objects;        /* without functions or lines: keep every object (default: only the
                             accesses of the program's own executable, if the stream names it) */
  uint32_t order_window;  /* order terms searched for loops (bodies of up to half of it);
                             a power of two from 2 to MS_FOLD_MAX_WINDOW (default 1024) */
  uint32_t order_periods; /* a lossy order's path counts in at most this many periods of
                             the thread's accesses (default 1: the whole thread at once) */
  int keep_threads; /* no merge of threads that differ only by their addresses (default: merged,
                       ms_psnap_merge_threads) */
  int has_rank;     /* the profile is of MPI rank `rank` (written as its `rank` line) */
  uint32_t rank;
  const char *const *objects; /* ... or of sites in these objects (ms_psnap_object_matches) */
  int object_count;
  /* A thread's order also goes lossy once it holds MS_PSNAP_FLOOR_TERMS terms and fewer than
   * order_floor accesses per term (default 16; 0: only the cap). */
  uint32_t order_floor;
} ms_psnap_options;
#define MS_PSNAP_FLOOR_TERMS 16384

MS_API void ms_psnap_options_default(ms_psnap_options *options);
/* The caps of a fidelity (0 low, 1 normal: the defaults, 2 high) into site_cap, order_cap
 * and order_window, and the order periods that suit options->lossless (512 for lossless
 * sites, 1 otherwise), into order_periods. Measured on the workload set (docs/accuracy.md). */
MS_API void ms_psnap_options_preset(ms_psnap_options *options, int fidelity);
/* A sink that builds a profile; ms_psnap_builder_take hands it over after the stream ends. */
MS_API int ms_psnap_builder_new(const ms_psnap_options *options, ms_sink **out);
MS_API int ms_psnap_builder_take(ms_sink *sink, ms_psnap_profile *out);

/* ---- Selections --------------------------------------------------------------------- */

/* Which accesses of a stream a profile's `selection` describes ("all", "executable PATH",
 * "function F line FILE:LINE ..."), decided per trace site and cached. */
typedef struct ms_psnap_filter ms_psnap_filter;

/* 1 if an object's path matches NAME of a selection's `object NAME`: with a '/', the path's
 * end at a '/' boundary; else the path's base name up to a '.' (liblammps matches
 * /usr/lib/x86_64-linux-gnu/liblammps.so.0, libc matches libc.so.6 and not libcurl.so.4). */
MS_API int ms_psnap_object_matches(const char *object, const char *name);
/* MS_ERR_FORMAT for a selection that is none of these. */
MS_API int ms_psnap_filter_new(const char *selection, ms_psnap_filter **out);
MS_API void ms_psnap_filter_free(ms_psnap_filter *filter);
/* 1 if the accesses of trace site `site` (of `sites`) are kept, 0 if not, or a negative
 * status (out of memory). */
MS_API int ms_psnap_filter_keeps(ms_psnap_filter *filter, const ms_site_table *sites,
                                 uint32_t site);

/* ---- Replay (a source) ---------------------------------------------------------------- */

typedef struct ms_psnap_replay_options {
  const uint8_t *site_mask; /* NULL: all sites; else 1 for the sites to replay */
  uint64_t from;            /* first access (index in the replayed selection) */
  uint64_t count;           /* 0: to the end */
} ms_psnap_replay_options;

/* Replays a profile (taken over by the source, freed with it). Threads are replayed one
 * after the other (thread 0 whole, then thread 1, ...); each thread's accesses are in
 * program order. Seeking skips through repetitions arithmetically. */
MS_API int ms_psnap_replay_open(ms_psnap_profile *profile, const ms_psnap_replay_options *options,
                                ms_source **out);
/* Loads a file and replays all of it (for format detection by the CLI); of a profile in
 * block form, its lowest rank. */
MS_API int ms_psnap_open(const char *path, ms_source **out);
/* The same for `rank` and `thread` (-1: the lowest rank, all threads; ms_psnap_profile_pick). */
MS_API int ms_psnap_open_picked(const char *path, int64_t rank, int64_t thread, ms_source **out);

/* Marks in mask (site_count bytes) the sites whose function is `function`, or whose
 * file ends with `file` and line is `line` (file:line text); returns how many. */
MS_API int ms_psnap_select(const ms_psnap_profile *profile, const char *function,
                           const char *file_line, uint8_t *mask);

#ifdef __cplusplus
}
#endif

#endif

/* Private to the signature model's files (signature_model.c, signature_stack.c,
 * signature_loop.c): the model's fields, the layout of a line's record, and what each file
 * gives the others. The stack's operations are in signature_stack.h. */
#ifndef MEMSNAP_SIGNATURE_MODEL_INTERNAL_H
#define MEMSNAP_SIGNATURE_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/access.h"
#include "memsnap/signature.h"
#include "memsnap/surface.h"
#include "signature_internal.h"

#define TIME_SLOTS (1u << 18) /* times 1..TIME_SLOTS-1; rebuilt when exhausted */
#define TIME_WORDS (TIME_SLOTS / 64)
#define KEEP_LINES (1u << 16) /* lines kept at a rebuild: positions <= 2^16 */
#define TIME_FAR 0u           /* line not among the 2^16 most recent (or forgotten) */
#define WINDOW 8              /* the most recent distinct lines, kept outside the time structure */
_Static_assert(WINDOW == 8, "the window's shifts are written out for 8 entries");
/* Words of times this recent (counting the current one) stay out of the Fenwick tree:
 * marks_after counts them directly and time_unmark only clears their bit. */
#define TREE_LAG 8

/* A line's record, record_words uint64_t: [0] line + 1 (0: an empty slot), [1] time of its
 * last reference (low 32 bits) and 1 + the word of its last reference (high 32 bits, 0:
 * none yet), then the tree's visited bits and choice bits (tree_words each), padded
 * to a power of two: one aligned 64-byte cache line for the default 7 levels. */
enum { RECORD_KEY = 0, RECORD_TIME = 1, RECORD_TREE = 2 };

struct ms_signature_model {
  ms_signature_config config;
  int levels;
  unsigned line_shift, word_shift;
  size_t tree_words;   /* uint64_t per bit array per line */
  size_t record_words; /* uint64_t per record */
  /* levels <= 7 (a tree in two words): per word, the path's nodes and the halves taken on
   * it, as bit masks over the tree: [0..1] nodes, [2..3] halves. */
  uint64_t (*paths)[4];

  /* The line table holds the records themselves (open addressing, linear probing, load
   * <= 1/2; a record's index is its slot), so that a reference to a line outside the
   * window misses the caches once, not twice (table, then record): gather and matmul spent
   * 60% of their time on those two misses. */
  uint64_t *table;
  size_t table_mask, table_used;
  unsigned table_shift; /* 64 - log2(slots): hash_slot */

  /* Times that are some line's last: a bitmap and a Fenwick tree over the population of
   * its 64-bit words (48 KiB together, resident in L1/L2). A plain Fenwick tree over 2^18
   * times (1 MiB) cost 260 ns per reference on matmul 200 (16M accesses, 4.2 s); this
   * layout gives the same counts at a fraction of that (docs/formats.md). */
  uint64_t *time_bits;    /* TIME_WORDS */
  uint32_t *word_fenwick; /* 1-based, TIME_WORDS entries */
  uint32_t *time_state;   /* time -> record index */
  uint32_t now;           /* last time used */
  uint32_t marked;        /* lines with a time */
  /* The WINDOW most recent distinct lines, most recent first, with their records: a
   * reference among them has position index + 1 and needs neither the line table nor the
   * time structure, which hold only the older lines (all older than the window's). On
   * the test kernels 60-99% of references land here (stream_add, stencil2d: nearly all). */
  uint64_t window_line[WINDOW];
  uint32_t window_state[WINDOW];
  uint32_t window_count;

  /* Whole-program walk outcomes (levels <= 7, not per site), folded into the yes/trials
   * counts when a result is asked for: [bin][1 << visits | same-half mask by depth] (the
   * visited nodes of a path are a prefix: a visited node's ancestors were visited; the mask
   * has bits below `visits` only). One increment per reference instead of two per level
   * (14 read-modify-writes of counters that consecutive references chain through memory),
   * and one instead of two (visits, mask) since: matmul 223 -> 221 instructions per access. */
  uint64_t (*walks)[256];
  sig_counts total;   /* whole program when not per site */
  sig_counts discard; /* counts of warm-up references, never reported */
  int warming;
  sig_counts **sites; /* per site (per_site), by site id */
  uint32_t site_capacity;
  sig_counts *no_site; /* per site: accesses without a site */
  uint32_t *scratch;   /* KEEP_LINES records, for rebuild_times */
  uint64_t added;      /* accesses sent through the model (counted) */
  uint64_t given;      /* accesses given to ms_signature_model_add, capped ones included */
  uint64_t slow_refs, last_count; /* the last batch: accesses outside the window, all */
  int portable;                   /* sig_model_set_portable: never the PEXT variant */
  /* The narrower widths' reuse CDFs (config.widths > 0; NULL otherwise), and the counts of
   * the builders that ms_signature_model_forget retired. */
  ms_surface_builder *width_builder;
  double width_done_references[MS_SIGNATURE_MAX_LEVELS];
  double width_done_hits[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  int width_status; /* a new builder failed in ms_signature_model_forget: add reports it */
};

/* signature_loop.c: the body of ms_signature_model_add after the narrower widths (the
 * whole-program loop, or the general loop with per-site counts and warm-up), and of
 * ms_signature_model_track. Each returns 0 or a negative status. */
int sig_loop_add(ms_signature_model *model, const ms_access *accesses, size_t count);
int sig_loop_track(ms_signature_model *model, const ms_access *accesses, size_t count);

#endif

/* Memory skeletons from traces: the slicer, the clusters and the C writer (model and
 * assumptions in memsnap/skeleton.h; the generated program in docs/skeletons.md).
 *
 * The builder keeps no access: each cluster is summarised into runs as soon as it is
 * full, so its memory is the runs (24 bytes each) and the set of 2 MiB chunks touched.
 */
#include "memsnap/skeleton.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/id_index.h"
#include "memsnap/access.h"
#include "memsnap/error.h"

#define CHUNK_BITS 21 /* 2 MiB chunks */
#define LIVE_SLICE_SIZE (1u << 20)

void ms_skeleton_config_default(ms_skeleton_config *config) {
  *config = (ms_skeleton_config){
      .slices = 10, .min_slice_size = 1u << 20, .ratio = 10, .line = 32, .cluster = 256};
}

int ms_skeleton_config_check(const ms_skeleton_config *config) {
  /* bounds that keep slices * ratio and ratio * slice_size within 64 bits */
  if (config->ratio < 1 || config->ratio > MS_SKELETON_RATIO_MAX)
    return ms_error_set(MS_ERR_ARG, "--ratio: 1 to %llu, not %llu",
                        (unsigned long long)MS_SKELETON_RATIO_MAX,
                        (unsigned long long)config->ratio);
  if (config->slice_size > MS_SKELETON_SLICE_MAX || config->min_slice_size > MS_SKELETON_SLICE_MAX)
    return ms_error_set(MS_ERR_ARG, "--slice-size, --min-slice-size: at most %llu accesses",
                        (unsigned long long)MS_SKELETON_SLICE_MAX);
  if (config->line < 8 || config->line > 4096 || (config->line & (config->line - 1)))
    return ms_error_set(MS_ERR_ARG, "--line: a power of two from 8 to 4096 bytes, not %u",
                        config->line);
  if (config->cluster < 1 || config->cluster > 65536)
    return ms_error_set(MS_ERR_ARG, "--cluster: 1 to 65536 accesses, not %u", config->cluster);
  if (config->form != MS_SKELETON_TABLE && config->form != MS_SKELETON_CODE)
    return ms_error_set(MS_ERR_ARG, "--form: table or code");
  if (config->slices > (1u << 20))
    return ms_error_set(MS_ERR_ARG, "--slices: at most %u", 1u << 20);
  return 0;
}

/* One word of the table: a run of lines (`count` lines from `line`, the original line
 * number, by `stride` lines, `per_line` accesses each), or the head of a group of `lanes`
 * lanes walked `iterations` times in lockstep, or one lane (its first address and its
 * stride in bytes). */
typedef enum { RECORD_RUN, RECORD_GROUP, RECORD_LANE } record_kind;
typedef struct record {
  uint8_t kind, store;
  uint16_t count, per_line; /* run */
  int32_t stride;           /* run: lines; lane: bytes */
  uint64_t at;              /* run: line; group: iterations; lane: address */
} record;

/* An access of the current cluster, and a line of it with its accesses. */
typedef struct touch {
  uint64_t line;
  uint32_t accesses;
  uint8_t store;
} touch;

typedef struct raw_access {
  uint64_t address;
  uint8_t store;
} raw_access;

typedef struct skeleton {
  ms_sink sink;
  ms_skeleton_config config;
  bool started, ended;
  uint64_t total;       /* the stream's length, 0 if unknown */
  uint64_t slices;      /* spread over it: config.slices, fewer if they would be short */
  uint64_t slice_size;  /* accesses per slice */
  uint64_t position;    /* accesses of the stream so far */
  uint64_t slice;       /* the slice being filled or waited for */
  uint64_t slice_start; /* its first access */
  raw_access *cluster;  /* config.cluster entries */
  touch *lines;         /* config.cluster entries: a stretch of it by line */
  uint32_t in_cluster;  /* accesses in it */
  uint32_t line_shift;  /* log2(config.line) */
  record *runs;         /* the table's words */
  uint64_t run_count, run_capacity;
  uint64_t groups, grouped; /* lockstep groups, and their accesses */
  uint64_t *slice_ends;     /* per slice: its runs end here */
  uint64_t slice_count, slice_capacity;
  uint64_t in_slice; /* accesses kept in the slice being filled */
  uint64_t clusters, kept;
  uint64_t *chunks; /* chunk + 1, open addressing, at most half full */
  uint64_t chunk_count, chunk_capacity;
} skeleton;

/* Each slice has chunks of its own: a slice begins cold, as after the application's gap
 * of (ratio - 1) slices. Sharing them, a slice found the lines of an earlier one where
 * the application had swept its whole data in between: stencil2d's L2 hit rate on
 * hpcmo-21 was 66% in the skeleton, 0% in the program, and the error moved between 6
 * and 17 points with where the slices fell. */
static uint64_t chunk_key(uint64_t slice, uint64_t address) {
  return (slice & 0xFFFFF) << 40 | address >> CHUNK_BITS;
}

static int chunk_add(skeleton *s, uint64_t chunk) {
  if (2 * (s->chunk_count + 1) > s->chunk_capacity) {
    uint64_t capacity = s->chunk_capacity ? 2 * s->chunk_capacity : 64;
    uint64_t *table = calloc(capacity, sizeof *table);
    if (!table) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < s->chunk_capacity; i++) {
      if (!s->chunks[i]) continue;
      uint64_t k = id_index_hash(s->chunks[i]) & (capacity - 1);
      while (table[k])
        k = (k + 1) & (capacity - 1);
      table[k] = s->chunks[i];
    }
    free(s->chunks);
    s->chunks = table;
    s->chunk_capacity = capacity;
  }
  uint64_t k = id_index_hash(chunk + 1) & (s->chunk_capacity - 1);
  while (s->chunks[k] && s->chunks[k] != chunk + 1)
    k = (k + 1) & (s->chunk_capacity - 1);
  if (!s->chunks[k]) s->chunks[k] = chunk + 1, s->chunk_count++;
  return 0;
}

static int run_add(skeleton *s, const record *r) {
  if (s->run_count == s->run_capacity) {
    uint64_t capacity = s->run_capacity ? 2 * s->run_capacity : 1024;
    record *more = realloc(s->runs, capacity * sizeof *more);
    if (!more) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    s->runs = more;
    s->run_capacity = capacity;
  }
  s->runs[s->run_count++] = *r;
  return 0;
}

static int by_line(const void *a, const void *b) {
  const touch *x = a, *y = b;
  if (x->store != y->store) return x->store < y->store ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

/* Kind, then accesses per line, then line: lines of one stream in one cluster are
 * neighbours with the same count, so they fall into one run. */
static int by_count(const void *a, const void *b) {
  const touch *x = a, *y = b;
  if (x->store != y->store) return x->store < y->store ? -1 : 1;
  if (x->accesses != y->accesses) return x->accesses < y->accesses ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

/* Accesses [from, to) of the cluster as runs of lines: their lines with their accesses (at
 * most MS_SKELETON_RUN_MAX per entry: a line touched more often takes several), sorted
 * by kind, count and line, neighbours of one count joined. */
static int line_runs(skeleton *s, uint32_t from, uint32_t to) {
  uint32_t n = 0;
  for (uint32_t i = from; i < to; i++)
    s->lines[n++] = (touch){s->cluster[i].address >> s->line_shift, 1, s->cluster[i].store};
  qsort(s->lines, n, sizeof *s->lines, by_line);
  uint32_t lines = 0;
  for (uint32_t i = 0; i < n;) {
    uint32_t j = i;
    while (j < n && s->lines[j].line == s->lines[i].line && s->lines[j].store == s->lines[i].store)
      j++;
    for (uint32_t left = j - i; left > 0;) {
      uint32_t take = left < MS_SKELETON_RUN_MAX ? left : MS_SKELETON_RUN_MAX;
      s->lines[lines++] = (touch){s->lines[i].line, take, s->lines[i].store};
      left -= take;
    }
    i = j;
  }
  qsort(s->lines, lines, sizeof *s->lines, by_count);
  for (uint32_t i = 0; i < lines;) {
    record r = {.kind = RECORD_RUN,
                .store = s->lines[i].store,
                .count = 1,
                .per_line = (uint16_t)s->lines[i].accesses,
                .at = s->lines[i].line};
    uint32_t j = i + 1;
    if (j < lines && s->lines[j].store == r.store && s->lines[j].accesses == r.per_line) {
      int64_t stride = (int64_t)(s->lines[j].line - r.at);
      if (stride > 0 && stride <= MS_SKELETON_STRIDE_MAX) {
        r.stride = (int32_t)stride;
        while (j < lines && r.count < MS_SKELETON_RUN_MAX && s->lines[j].store == r.store &&
               s->lines[j].accesses == r.per_line &&
               s->lines[j].line == r.at + (uint64_t)r.count * (uint64_t)stride)
          r.count++, j++;
      }
    }
    int rc = run_add(s, &r);
    if (rc < 0) return rc;
    i += r.count;
  }
  return 0;
}

/* How many iterations of `lanes` lanes in lockstep start at access p of the cluster: each
 * lane's accesses one stride apart (at most MS_SKELETON_LANE_STRIDE bytes) and of one
 * kind. */
static uint32_t lockstep(const raw_access *c, uint32_t n, uint32_t p, uint32_t lanes) {
  if (p + 2 * lanes > n) return 0;
  int64_t stride[MS_SKELETON_LANES_MAX];
  for (uint32_t k = 0; k < lanes; k++) {
    stride[k] = (int64_t)(c[p + lanes + k].address - c[p + k].address);
    if (stride[k] < -MS_SKELETON_LANE_STRIDE || stride[k] > MS_SKELETON_LANE_STRIDE ||
        c[p + lanes + k].store != c[p + k].store)
      return 0;
  }
  /* more lanes than MS_SKELETON_LANES_APART move by one stride (a stencil's points) */
  for (uint32_t k = 1; lanes > MS_SKELETON_LANES_APART && k < lanes; k++)
    if (stride[k] != stride[0]) return 0;
  uint32_t iterations = 2;
  for (; p + (iterations + 1) * lanes <= n && iterations < MS_SKELETON_ITERATIONS_MAX;
       iterations++) {
    const raw_access *next = &c[p + iterations * lanes], *now = next - lanes;
    for (uint32_t k = 0; k < lanes; k++)
      if ((int64_t)(next[k].address - now[k].address) != stride[k] || next[k].store != now[k].store)
        return iterations;
  }
  return iterations;
}

/* The cluster in its order where lanes walk in lockstep (the streams of a loop: a group
 * head and a word per lane, every address exact, so that lines that share a set of a
 * cache meet in it as in the program); what lies between such groups as runs of lines.
 * A group is taken when it covers at least GROUP_MIN_WORDS accesses per table word.
 * Runs of lines alone (the slides' method, the cluster reordered) turned stream_add's
 * b[i], c[i], a[i] into each line's four accesses back to back: on a 2-way L1 where the
 * three arrays share sets, a 75% hit rate against the program's 31%. */
#define GROUP_MIN_WORDS 4
static int close_cluster(skeleton *s) {
  uint32_t n = s->in_cluster, pending = 0;
  const raw_access *c = s->cluster;
  /* the table's walker keeps 4 lanes in registers; more spilled in every iteration
   * (stencil2d's skeleton: 23% of its accesses its own), the code form's offsets are
   * constants */
  uint32_t most_lanes =
      s->config.form == MS_SKELETON_CODE ? MS_SKELETON_LANES_MAX : MS_SKELETON_LANES_APART;
  for (uint32_t p = 0; p < n;) {
    uint32_t best_lanes = 0, best_iterations = 0;
    for (uint32_t lanes = 1; lanes <= most_lanes; lanes++) {
      uint32_t iterations = lockstep(c, n, p, lanes);
      if (iterations * lanes >= GROUP_MIN_WORDS * (lanes + 1) &&
          iterations * lanes * (best_lanes + 1) > best_iterations * best_lanes * (lanes + 1))
        best_lanes = lanes, best_iterations = iterations;
    }
    if (!best_lanes) {
      p++;
      continue;
    }
    int rc = pending < p ? line_runs(s, pending, p) : 0;
    record head = {.kind = RECORD_GROUP, .count = (uint16_t)best_lanes, .at = best_iterations};
    if (rc == 0) rc = run_add(s, &head);
    for (uint32_t k = 0; rc == 0 && k < best_lanes; k++) {
      record lane = {.kind = RECORD_LANE,
                     .store = c[p + k].store,
                     .stride = (int32_t)(c[p + best_lanes + k].address - c[p + k].address),
                     .at = c[p + k].address};
      rc = run_add(s, &lane);
    }
    if (rc < 0) return rc;
    s->groups++;
    s->grouped += best_lanes * best_iterations;
    p += best_lanes * best_iterations;
    pending = p;
  }
  int rc = pending < n ? line_runs(s, pending, n) : 0;
  if (rc < 0) return rc;
  if (n) s->clusters++;
  s->in_cluster = 0;
  return 0;
}

static int close_slice(skeleton *s) {
  int rc = close_cluster(s);
  if (rc < 0) return rc;
  if (s->slice_count == s->slice_capacity) {
    uint64_t capacity = s->slice_capacity ? 2 * s->slice_capacity : 16;
    uint64_t *ends = realloc(s->slice_ends, capacity * sizeof *ends);
    if (!ends) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    s->slice_ends = ends;
    s->slice_capacity = capacity;
  }
  s->slice_ends[s->slice_count++] = s->run_count;
  s->in_slice = 0;
  return 0;
}

/* The first access of slice k: spread evenly over a run of known length, else every
 * ratio * slice_size accesses. */
/* The first access of slice k: within the k-th of `slices` equal parts of a run of known
 * length, at an offset drawn from k (the same for every run), else every ratio *
 * slice_size accesses. A slice at the start of each part fell on the same phase of a
 * program whose sweeps divide its run: stencil2d's four slices all began its four
 * sweeps, so each slice found the rows of the one before it in the cache, where the
 * program had swept 16 MB in between (L2 hit rate 66% on hpcmo-21, the program's 0%). */
static uint64_t slice_start(const skeleton *s, uint64_t k) {
  if (!(s->total && s->slices)) return k * s->config.ratio * s->slice_size;
  uint64_t part = (uint64_t)((unsigned __int128)k * s->total / s->slices);
  uint64_t room = s->total / s->slices - s->slice_size;
  uint64_t h = (k + 1) * 0x9E3779B97F4A7C15ull;
  h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
  return part + (room ? (h ^ (h >> 29)) % (room + 1) : 0);
}

static bool more_slices(const skeleton *s, uint64_t k) {
  return !(s->total && s->slices) || k < s->slices;
}

static int start(skeleton *s, const ms_stream_info *info) {
  s->started = true;
  s->total = info->access_count;
  /* fewer slices rather than slices shorter than min_slice_size (the slides' rule: a
   * slice begins with the cache of what ran before it, and the application's reuses
   * that reach further back become misses; stream_add, 20 M accesses, ratio 10: ten
   * slices of 200 k accesses gave an L2 error of 1.74 points on average over the
   * catalog, two of 1 M 0.23) */
  s->slices = s->config.slices;
  if (s->total && s->slices && !s->config.slice_size && s->config.min_slice_size) {
    uint64_t most = s->total / s->config.ratio / s->config.min_slice_size;
    if (s->slices > (most ? most : 1)) s->slices = most ? most : 1;
  }
  if (s->config.slice_size)
    s->slice_size = s->config.slice_size;
  else if (s->total && s->slices)
    s->slice_size = s->total / (s->slices * s->config.ratio);
  else
    s->slice_size = LIVE_SLICE_SIZE;
  if (!s->slice_size) s->slice_size = 1;
  if (s->total && s->slices && s->slice_size > s->total / s->slices)
    s->slice_size = s->total / s->slices ? s->total / s->slices : 1;
  s->slice_start = slice_start(s, 0);
  return 0;
}

static int skeleton_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  skeleton *s = (skeleton *)sink;
  if (!s->started && start(s, info) < 0) return -1;
  for (size_t i = 0; i < batch->count; i++, s->position++) {
    if (!more_slices(s, s->slice) || s->position < s->slice_start) continue;
    const ms_access *a = &batch->accesses[i];
    int rc = chunk_add(s, chunk_key(s->slice_count, a->address));
    if (rc < 0) return rc;
    s->cluster[s->in_cluster++] = (raw_access){a->address, a->kind != MS_LOAD};
    s->kept++;
    s->in_slice++;
    if (s->in_cluster == s->config.cluster && (rc = close_cluster(s)) < 0) return rc;
    if (s->position + 1 == s->slice_start + s->slice_size) {
      if ((rc = close_slice(s)) < 0) return rc;
      s->slice++;
      s->slice_start = slice_start(s, s->slice);
    }
  }
  return 0;
}

static int skeleton_end(ms_sink *sink, const ms_stream_info *info) {
  skeleton *s = (skeleton *)sink;
  if (!s->started) start(s, info);
  if (s->in_slice && close_slice(s) < 0) return -1;
  s->ended = true;
  return 0;
}

static void skeleton_destroy(ms_sink *sink) {
  skeleton *s = (skeleton *)sink;
  free(s->cluster);
  free(s->lines);
  free(s->runs);
  free(s->slice_ends);
  free(s->chunks);
  free(s);
}

static const ms_sink_ops skeleton_ops = {
    .consume = skeleton_consume, .end = skeleton_end, .destroy = skeleton_destroy};

int ms_skeleton_builder_new(const ms_skeleton_config *config, ms_sink **out) {
  *out = NULL;
  ms_skeleton_config c;
  if (config)
    c = *config;
  else
    ms_skeleton_config_default(&c);
  int rc = ms_skeleton_config_check(&c);
  if (rc < 0) return rc;
  skeleton *s = calloc(1, sizeof *s);
  if (!s || !(s->cluster = calloc(c.cluster, sizeof *s->cluster)) ||
      !(s->lines = calloc(c.cluster, sizeof *s->lines))) {
    if (s) free(s->cluster);
    free(s);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  s->sink.ops = &skeleton_ops;
  s->config = c;
  while ((1u << s->line_shift) < c.line)
    s->line_shift++;
  *out = &s->sink;
  return 0;
}

int ms_skeleton_summarize(ms_sink *builder, ms_skeleton_summary *out) {
  const skeleton *s = (const skeleton *)builder;
  if (!s->ended)
    return ms_error_set(MS_ERR_ARG, "the skeleton is summarised after the stream ends");
  *out = (ms_skeleton_summary){.accesses = s->position,
                               .kept = s->kept,
                               .slices = s->slice_count,
                               .slice_size = s->slice_size,
                               .clusters = s->clusters,
                               .runs = s->run_count,
                               .groups = s->groups,
                               .grouped = s->grouped,
                               .chunks = s->chunk_count};
  return 0;
}

static int compare_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The chunks touched, sorted: a chunk's slot in the reservation is its index here. */
static uint64_t *sorted_chunks(const skeleton *s) {
  uint64_t *list = malloc((s->chunk_count ? s->chunk_count : 1) * sizeof *list), n = 0;
  if (!list) return NULL;
  for (uint64_t i = 0; i < s->chunk_capacity; i++)
    if (s->chunks[i]) list[n++] = s->chunks[i] - 1;
  qsort(list, n, sizeof *list, compare_u64);
  return list;
}

static uint64_t slot_of(const uint64_t *chunks, uint64_t count, uint64_t chunk) {
  uint64_t low = 0, high = count;
  while (low < high) {
    uint64_t middle = low + (high - low) / 2;
    if (chunks[middle] < chunk)
      low = middle + 1;
    else
      high = middle;
  }
  return low;
}

/* An address of slice k's place in the reservation: its chunk's slot, its offset in the
 * chunk. */
static uint64_t reserved(const skeleton *s, const uint64_t *chunks, uint64_t k, uint64_t address) {
  return slot_of(chunks, s->chunk_count, chunk_key(k, address)) << CHUNK_BITS |
         (address & (((uint64_t)1 << CHUNK_BITS) - 1));
}

/* The table word of record r of slice k (memsnap/skeleton.h), its address moved to the
 * reservation. */
static uint64_t run_word(const skeleton *s, const uint64_t *chunks, uint64_t k, const record *r) {
  switch (r->kind) {
  case RECORD_GROUP: return (uint64_t)1 << 63 | (r->at - 1) << 3 | (uint64_t)(r->count - 1);
  case RECORD_LANE:
    return reserved(s, chunks, k, r->at) | (uint64_t)(r->stride & 0xFFFF) << 40 |
           (uint64_t)r->store << 56;
  default:
    return reserved(s, chunks, k, r->at << s->line_shift) >> s->line_shift |
           (uint64_t)(r->stride & 0xFFF) << 34 | (uint64_t)(r->count - 1) << 46 |
           (uint64_t)(r->per_line - 1) << 54 | (uint64_t)r->store << 62;
  }
}

/* The program text around the table (docs/skeletons.md). */
static const char program_head[] = "#define _GNU_SOURCE\n"
                                   "#include <stdint.h>\n"
                                   "#include <stdio.h>\n"
                                   "#include <stdlib.h>\n"
                                   "#include <sys/mman.h>\n"
                                   "#include <time.h>\n"
                                   "\n";

static const char program_body[] =
    "\n"
    "#define SKELETON_ACCESS(at, store)                                                  \\\n"
    "  do {                                                                            \\\n"
    "    if (store)                                                                    \\\n"
    "      *(volatile unsigned char *)(at) = 0;                                        \\\n"
    "    else                                                                          \\\n"
    "      sum += *(volatile const unsigned char *)(at);                               \\\n"
    "  } while (0)\n"
    "#define SKELETON_LANE(k)                                                            \\\n"
    "  char *at##k = base + (size_t)(word[k] & ((UINT64_C(1) << 40) - 1));              \\\n"
    "  const int64_t stride##k = (int64_t)(word[k] << 8) >> 48;                         \\\n"
    "  stores |= (unsigned)(word[k] >> 56 & 1) << k\n"
    "#define SKELETON_STEP(k)                                                            \\\n"
    "  SKELETON_ACCESS(at##k, stores >> k & 1);                                        \\\n"
    "  at##k += stride##k\n"
    "\n"
    "/* Walks the table: a run of lines, each line's accesses back to back (their order\n"
    " * within a cluster is free), or a group of 1 to 4 lanes in lockstep, in the program's\n"
    " * order. One 8-byte table load per word is all the walk reads of its own, with a few\n"
    " * register saves per group (the loops' values fit the registers). The loaded bytes\n"
    " * are summed: a load whose value no instruction uses is dropped by Valgrind's\n"
    " * translation, and recording the skeleton would not see it. */\n"
    "__attribute__((noinline)) static unsigned skeleton_walk(char *base, const uint64_t *word,\n"
    "                                                        const uint64_t *end) {\n"
    "  unsigned sum = 0;\n"
    "  while (word < end) {\n"
    "    uint64_t head = *word++;\n"
    "    if (head >> 63) {\n"
    "      unsigned left = (unsigned)(head >> 3 & 0xFFFF) + 1;\n"
    "      unsigned stores = 0; /* bit k: lane k stores */\n"
    "      switch (head & 7) { /* the lanes - 1 */\n"
    "      case 0:\n"
    "        { SKELETON_LANE(0);\n"
    "          do { SKELETON_STEP(0); } while (--left); }\n"
    "        break;\n"
    "      case 1:\n"
    "        { SKELETON_LANE(0); SKELETON_LANE(1);\n"
    "          do { SKELETON_STEP(0); SKELETON_STEP(1); } while (--left); }\n"
    "        break;\n"
    "      case 2:\n"
    "        { SKELETON_LANE(0); SKELETON_LANE(1); SKELETON_LANE(2);\n"
    "          do { SKELETON_STEP(0); SKELETON_STEP(1); SKELETON_STEP(2); } while (--left); }\n"
    "        break;\n"
    "      case 3:\n"
    "        { SKELETON_LANE(0); SKELETON_LANE(1); SKELETON_LANE(2); SKELETON_LANE(3);\n"
    "          do { SKELETON_STEP(0); SKELETON_STEP(1); SKELETON_STEP(2); SKELETON_STEP(3); } "
    "while (--left); }\n"
    "        break;\n"
    "      }\n"
    "      word += (head & 7) + 1;\n"
    "      continue;\n"
    "    }\n"
    "    char *at = base + (size_t)(head & ((UINT64_C(1) << 34) - 1)) * SKELETON_LINE;\n"
    "    int64_t stride = (int64_t)(head << 18) >> 52; /* bits 34-45, signed */\n"
    "    unsigned lines = (unsigned)(head >> 46 & 255) + 1, per_line = (unsigned)(head >> 54 & "
    "255) + 1;\n"
    "    unsigned store = (unsigned)(head >> 62 & 1);\n"
    "    for (; lines; lines--, at += stride * SKELETON_LINE)\n"
    "      for (unsigned a = per_line; a; a--)\n"
    "        SKELETON_ACCESS(at, store);\n"
    "  }\n"
    "  return sum;\n"
    "}\n"
    "\n";

/* The code form: each run and group is a loop of its own, its numbers in the code. */
static const char code_macros[] =
    "/* The empty asm after each load keeps the compiler from issuing the loads of straight-\n"
    " * line code early and holding their bytes on the stack (GCC -O2 did: 12% more accesses) */\n"
    "#define SKELETON_ACCESS(at, store)                                                  \\\n"
    "  do {                                                                            \\\n"
    "    if (store)                                                                    \\\n"
    "      *(volatile unsigned char *)(at) = 0;                                        \\\n"
    "    else {                                                                        \\\n"
    "      sum += *(volatile const unsigned char *)(at);                               \\\n"
    "      __asm__ volatile(\"\" : \"+r\"(sum));                                        \\\n"
    "    }                                                                             \\\n"
    "  } while (0)\n"
    "/* a run: lines from offset `at`, `stride` bytes apart, `per` accesses each */\n"
    "#define R(at, stride, lines, per, store)                                             \\\n"
    "  do {                                                                            \\\n"
    "    char *p = base + (at);                                                        \\\n"
    "    for (unsigned l = 0; l < (lines); l++, p += (stride))                         \\\n"
    "      for (unsigned a = 0; a < (per); a++)                                        \\\n"
    "        SKELETON_ACCESS(p, store);                                                \\\n"
    "  } while (0)\n"
    "/* a group: n iterations of lanes (offset, stride in bytes, store) in lockstep */\n"
    "#define L(k, at, stride, store) char *p##k = base + (at)\n"
    "#define S(k, stride, store) SKELETON_ACCESS(p##k, store); p##k += (stride)\n"
    "#define G1(n, a0, s0, t0) \\\n"
    "  do { L(0, a0, s0, t0); for (unsigned i = 0; i < (n); i++) { S(0, s0, t0); } } while (0)\n"
    "#define G2(n, a0, s0, t0, a1, s1, t1) \\\n"
    "  do { L(0, a0, s0, t0); L(1, a1, s1, t1); \\\n"
    "       for (unsigned i = 0; i < (n); i++) { S(0, s0, t0); S(1, s1, t1); } } while (0)\n"
    "#define G3(n, a0, s0, t0, a1, s1, t1, a2, s2, t2) \\\n"
    "  do { L(0, a0, s0, t0); L(1, a1, s1, t1); L(2, a2, s2, t2); \\\n"
    "       for (unsigned i = 0; i < (n); i++) { S(0, s0, t0); S(1, s1, t1); S(2, s2, t2); } } "
    "while (0)\n"
    "#define G5(n, s, a0, t0, a1, t1, a2, t2, a3, t3, a4, t4) \\\n"
    "  do { L(0, a0, s, t0); L(1, a1, s, t1); L(2, a2, s, t2); L(3, a3, s, t3); L(4, a4, s, t4); "
    "\\\n"
    "       for (unsigned i = 0; i < (n); i++) { \\\n"
    "         S(0, s, t0); S(1, s, t1); S(2, s, t2); S(3, s, t3); S(4, s, t4); } } while (0)\n"
    "#define G6(n, s, a0, t0, a1, t1, a2, t2, a3, t3, a4, t4, a5, t5) \\\n"
    "  do { L(0, a0, s, t0); L(1, a1, s, t1); L(2, a2, s, t2); L(3, a3, s, t3); L(4, a4, s, t4); "
    "\\\n"
    "       L(5, a5, s, t5); \\\n"
    "       for (unsigned i = 0; i < (n); i++) { \\\n"
    "         S(0, s, t0); S(1, s, t1); S(2, s, t2); S(3, s, t3); S(4, s, t4); S(5, s, t5); } \\\n"
    "  } while (0)\n"
    "#define G7(n, s, a0, t0, a1, t1, a2, t2, a3, t3, a4, t4, a5, t5, a6, t6) \\\n"
    "  do { L(0, a0, s, t0); L(1, a1, s, t1); L(2, a2, s, t2); L(3, a3, s, t3); L(4, a4, s, t4); "
    "\\\n"
    "       L(5, a5, s, t5); L(6, a6, s, t6); \\\n"
    "       for (unsigned i = 0; i < (n); i++) { \\\n"
    "         S(0, s, t0); S(1, s, t1); S(2, s, t2); S(3, s, t3); S(4, s, t4); S(5, s, t5); \\\n"
    "         S(6, s, t6); } } while (0)\n"
    "#define G8(n, s, a0, t0, a1, t1, a2, t2, a3, t3, a4, t4, a5, t5, a6, t6, a7, t7) \\\n"
    "  do { L(0, a0, s, t0); L(1, a1, s, t1); L(2, a2, s, t2); L(3, a3, s, t3); L(4, a4, s, t4); "
    "\\\n"
    "       L(5, a5, s, t5); L(6, a6, s, t6); L(7, a7, s, t7); \\\n"
    "       for (unsigned i = 0; i < (n); i++) { \\\n"
    "         S(0, s, t0); S(1, s, t1); S(2, s, t2); S(3, s, t3); S(4, s, t4); S(5, s, t5); \\\n"
    "         S(6, s, t6); S(7, s, t7); } } while (0)\n"
    "#define G4(n, a0, s0, t0, a1, s1, t1, a2, s2, t2, a3, s3, t3) \\\n"
    "  do { L(0, a0, s0, t0); L(1, a1, s1, t1); L(2, a2, s2, t2); L(3, a3, s3, t3); \\\n"
    "       for (unsigned i = 0; i < (n); i++) { \\\n"
    "         S(0, s0, t0); S(1, s1, t1); S(2, s2, t2); S(3, s3, t3); } } while (0)\n"
    "\n";

#define CODE_PART 256 /* records per function of the code form */

/* The main of both forms: SKELETON_RUN(base) is the walk of the table or the parts. */
static const char program_main[] =
    "int main(void) {\n"
    "  /* one reservation of the chunks, aligned to 2 MiB so that lines keep their sets */\n"
    "  size_t size = (size_t)SKELETON_CHUNKS << 21;\n"
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
    "  unsigned sum = SKELETON_RUN(base);\n"
    "  clock_gettime(CLOCK_MONOTONIC, &t1);\n"
    "  fprintf(stderr, \"skeleton: %.6f s, data %p-%p, sum %u\\n\",\n"
    "          (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),\n"
    "          (void *)base, (void *)(base + size), sum);\n"
    "  munmap(area, size + ((size_t)1 << 21));\n"
    "  return 0;\n"
    "}\n";

static void write_comment_text(FILE *out, const char *text) {
  for (; *text; text++)
    if (*text == '*' && text[1] == '/')
      fputs("* /", out), text++;
    else
      fputc(*text == '\n' ? ' ' : *text, out);
}

static void write_table(const skeleton *s, const uint64_t *chunks, FILE *out) {
  fputs("/* a run of lines: line index (bits 0-33), stride in lines (34-45), lines - 1 (46-53),\n"
        " * accesses per line - 1 (54-61), store (62); a group (bit 63): lanes - 1 (0-2),\n"
        " * iterations - 1 (3-18), then per lane its offset (0-39), stride in bytes (40-55),\n"
        " * store (56) */\n"
        "static const uint64_t skeleton_runs[] = {",
        out);
  for (uint64_t k = 0, r = 0; k < s->slice_count; k++) {
    fprintf(out, "\n    /* slice %" PRIu64 ": the run's accesses from %" PRIu64 " */", k,
            slice_start(s, k));
    for (uint64_t i = 0; r < s->slice_ends[k]; r++, i++)
      fprintf(out, "%s UINT64_C(0x%016" PRIx64 "),", i % 4 ? "" : "\n   ",
              run_word(s, chunks, k, &s->runs[r]));
  }
  fputs("\n};\n", out);
  fputs(program_body, out);
  fputs("#define SKELETON_RUN(base)                                                          \\\n"
        "  skeleton_walk(base, skeleton_runs, skeleton_runs + sizeof skeleton_runs / sizeof "
        "skeleton_runs[0])\n\n",
        out);
}

/* The code form: functions of CODE_PART records, each a loop with its numbers. */
static void write_code(const skeleton *s, const uint64_t *chunks, FILE *out) {
  fputs(code_macros, out);
  uint64_t parts = 0, in_part = 0;
  for (uint64_t k = 0, r = 0; k < s->slice_count; k++) {
    fprintf(out, "/* slice %" PRIu64 ": the run's accesses from %" PRIu64 " */\n", k,
            slice_start(s, k));
    while (r < s->slice_ends[k]) {
      if (!in_part)
        fprintf(out,
                "__attribute__((noinline)) static unsigned part%" PRIu64 "(char *base) {\n"
                "  unsigned sum = 0;\n",
                parts);
      const record *x = &s->runs[r];
      if (x->kind == RECORD_GROUP) {
        fprintf(out, "  G%u(%" PRIu64, x->count, x->at);
        if (x->count > MS_SKELETON_LANES_APART) fprintf(out, ", %d", s->runs[r + 1].stride);
        for (uint16_t lane = 0; lane < x->count; lane++) {
          const record *l = &s->runs[r + 1 + lane];
          if (x->count > MS_SKELETON_LANES_APART)
            fprintf(out, ", %" PRIu64 ", %u", reserved(s, chunks, k, l->at), l->store);
          else
            fprintf(out, ", %" PRIu64 ", %d, %u", reserved(s, chunks, k, l->at), l->stride,
                    l->store);
        }
        fputs(");\n", out);
        r += 1 + x->count;
      } else {
        fprintf(out, "  R(%" PRIu64 ", %" PRId64 ", %u, %u, %u);\n",
                reserved(s, chunks, k, x->at << s->line_shift),
                (int64_t)x->stride * (int64_t)s->config.line, x->count, x->per_line, x->store);
        r++;
      }
      if (++in_part == CODE_PART || r == s->slice_ends[k]) {
        fputs("  return sum;\n}\n", out);
        in_part = 0;
        parts++;
      }
    }
  }
  fputs("static unsigned skeleton_parts(char *base) {\n  unsigned sum = 0;\n", out);
  for (uint64_t part = 0; part < parts; part++)
    fprintf(out, "  sum += part%" PRIu64 "(base);\n", part);
  fputs("  return sum;\n}\n#define SKELETON_RUN(base) skeleton_parts(base)\n\n", out);
}

int ms_skeleton_write_c(ms_sink *builder, const ms_stream_info *info, FILE *out) {
  skeleton *s = (skeleton *)builder;
  if (!s->ended) return ms_error_set(MS_ERR_ARG, "the skeleton is written after the stream ends");
  if (!s->run_count) return ms_error_set(MS_ERR_ARG, "no access to make a skeleton of");
  uint64_t *chunks = sorted_chunks(s);
  if (!chunks) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  if ((s->chunk_count << (CHUNK_BITS - s->line_shift)) >> MS_SKELETON_LINE_BITS) {
    free(chunks);
    return ms_error_set(MS_ERR_ARG, "the slices touch %" PRIu64 " chunks of 2 MiB: too many lines",
                        s->chunk_count);
  }
  fputs("/* Memory skeleton of ", out);
  if (info && info->argc > 0)
    for (int i = 0; i < info->argc; i++) {
      if (i) fputc(' ', out);
      write_comment_text(out, info->argv[i]);
    }
  else
    write_comment_text(out, info && info->program ? info->program : "(unknown program)");
  fprintf(out,
          ", made by memsnap skeleton.\n"
          " * %" PRIu64 " slices of %" PRIu64 " accesses of the run's %" PRIu64 " (ratio %" PRIu64
          "), lines of %u bytes, clusters of %u\n"
          " * accesses: %" PRIu64 " data accesses in %" PRIu64 " runs, %" PRIu64
          " chunks of 2 MiB.\n"
          " * Build: cc -O2 -o skel this.c; run: ./skel (prints its time on stderr). */\n",
          s->slice_count, s->slice_size, s->position, s->config.ratio, s->config.line,
          s->config.cluster, s->kept, s->run_count, s->chunk_count);
  fputs(program_head, out);
  fprintf(out, "#define SKELETON_LINE %u\n#define SKELETON_CHUNKS %" PRIu64 "\n\n", s->config.line,
          s->chunk_count);
  if (s->config.form == MS_SKELETON_CODE)
    write_code(s, chunks, out);
  else
    write_table(s, chunks, out);
  fputs(program_main, out);
  free(chunks);
  return ferror(out) ? ms_error_set(MS_ERR_IO, "write error") : 0;
}

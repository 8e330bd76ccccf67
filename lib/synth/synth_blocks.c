/* Seed generation, block phase (chameleon-weinberg-dissertation-2008.txt, section 4.1).
 *
 * Model: an LRU list of MS_SYNTH_LIST_BLOCKS blocks, all unreferenced at the start. Each
 * reference draws u uniform in [0, 1); the first depth index k with u < aim[k] gives the
 * reuse bin (k = 0: stack position 1; else a position uniform in (2^(k-1), 2^k]); u beyond
 * aim[16] takes the least recent block (a miss at every depth). The chosen block moves to
 * the front. The list is kept as a Fenwick tree over "times" (one mark per block at the
 * time of its latest reference), so finding the block at a position and moving it cost
 * O(log n).
 * Achieved CDF: a reference is a hit at its list position when the block was referenced
 * before (unreferenced blocks are always behind referenced ones, so the position is the
 * true stack position); in unique mode every words_per_block-th reference to a block is a
 * miss too (the block moves to a fresh physical block: section 5.4.2), and the positions
 * are counted over physical blocks (the blocks left behind still count), so the achieved
 * CDF is exactly the one of the seed's physical trace.
 * Unique mode aims at physical positions: a drawn position p is a virtual position, and
 * the dead blocks referenced after the block found there push its physical position past
 * p (in matmul 40 so far that no re-aiming could bring the CDF within 0.02). The draw
 * therefore steps up by that count once and takes the block found there when its
 * physical position lands in the drawn bin. Measured on the test kernels: max CDF error
 * (512-byte width) of unique seeds from 0.011-0.020 to 0.005-0.007 (0.014 matmul_blocked),
 * surface error over the 8 x 17 grid unchanged within 0.005.
 * Aim: checks every check_interval references once min_length is reached; at the length
 * cap, aim[k] *= target[k] / achieved[k] and the trace is regenerated (the best trace is
 * kept). Assumption: the seed is replicated at least min_replications times, so its cold
 * misses stay misses when it is expanded (section 4.1).
 * Width aims (signature with width rows, synth_words.c): the word model runs alongside;
 * BLOCK_CANDIDATES positions are drawn in the reuse bin drawn (so the 512-byte CDF is the
 * same in distribution) and the block whose best word path scores highest is taken (in
 * unique mode, scored by its physical block, numbered as synth_words numbers them). An
 * iteration then also needs the narrower widths within config->max_width_error to stop
 * before the length cap.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "synth_internal.h"

typedef struct lru_list {
  uint32_t *fenwick, *block_time, *time_block;
  uint32_t slots, now, top_bit;
} lru_list;

static int lru_init(lru_list *list, uint64_t max_length) {
  memset(list, 0, sizeof *list);
  list->slots = (uint32_t)(MS_SYNTH_LIST_BLOCKS + max_length);
  list->top_bit = 1;
  while (list->top_bit * 2 <= list->slots)
    list->top_bit *= 2;
  list->fenwick = calloc((size_t)list->slots + 1, sizeof *list->fenwick);
  list->block_time = calloc(MS_SYNTH_LIST_BLOCKS, sizeof *list->block_time);
  list->time_block = calloc((size_t)list->slots + 1, sizeof *list->time_block);
  if (!list->fenwick || !list->block_time || !list->time_block)
    return ms_error_set(MS_ERR_NOMEM, "synth: out of memory for the LRU list");
  return MS_OK;
}

static void lru_free(lru_list *list) {
  free(list->fenwick);
  free(list->block_time);
  free(list->time_block);
}

static void fenwick_add(lru_list *list, uint32_t at, int32_t delta) {
  for (; at <= list->slots; at += at & (~at + 1))
    list->fenwick[at] += (uint32_t)delta;
}

/* Smallest time t with prefix(t) == rank. */
static uint32_t fenwick_find(const lru_list *list, uint32_t rank) {
  uint32_t at = 0;
  for (uint32_t step = list->top_bit; step; step >>= 1)
    if (at + step <= list->slots && list->fenwick[at + step] < rank) {
      at += step;
      rank -= list->fenwick[at];
    }
  return at + 1;
}

static void lru_touch(lru_list *list, uint32_t block) {
  if (list->block_time[block]) fenwick_add(list, list->block_time[block], -1);
  list->block_time[block] = ++list->now;
  list->time_block[list->now] = block;
  fenwick_add(list, list->now, 1);
}

/* Puts every block in the list, block 0 most recent, none referenced. */
static void lru_reset(lru_list *list) {
  memset(list->fenwick, 0, ((size_t)list->slots + 1) * sizeof *list->fenwick);
  memset(list->block_time, 0, MS_SYNTH_LIST_BLOCKS * sizeof *list->block_time);
  list->now = 0;
  for (uint32_t i = 0; i < MS_SYNTH_LIST_BLOCKS; i++)
    lru_touch(list, MS_SYNTH_LIST_BLOCKS - 1 - i);
}

/* Block at stack position `position` (1: most recent). */
static uint32_t lru_at(const lru_list *list, uint32_t position) {
  return list->time_block[fenwick_find(list, MS_SYNTH_LIST_BLOCKS - position + 1)];
}

static void achieved_cdf(const uint64_t hist[], uint64_t n, double cdf[]) {
  uint64_t sum = 0;
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    sum += hist[k];
    cdf[k] = n ? (double)sum / (double)n : 0;
  }
}

static void cdf_errors(const double target[], const double cdf[], double *mean, double *max) {
  *mean = *max = 0;
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    double d = fabs(target[k] - cdf[k]);
    *mean += d / MS_SIGNATURE_DEPTHS;
    if (d > *max) *max = d;
  }
}

typedef struct attempt {
  uint32_t *blocks;
  uint8_t *bins;
  uint64_t length;
  double cdf[MS_SIGNATURE_DEPTHS];
  double mean_error, max_error;
} attempt;

static uint32_t draw_position(double u, const double aim[], uint64_t *random, int *bin) {
  int k = 0;
  while (k < MS_SIGNATURE_DEPTHS && u >= aim[k])
    k++;
  if (k == MS_SIGNATURE_DEPTHS) {
    *bin = MS_SIGNATURE_DEPTHS - 1;
    return MS_SYNTH_LIST_BLOCKS;
  }
  *bin = k;
  if (k == 0) return 1;
  uint32_t low = 1u << (k - 1);
  return low + 1 + (uint32_t)(synth_uniform(random) * low);
}

/* One iteration with `aim`: grows the trace until it meets the bounds or the cap. */
/* Unique mode: the stack positions of the physical blocks. A Fenwick tree over reference
 * times marks the latest reference of every physical block, dead ones (left behind when
 * their virtual block moved) included, so the position of a reference is 1 + the marks
 * after the latest reference to its block. */
typedef struct physical_stack {
  uint32_t *marks;     /* Fenwick tree over times 1..length */
  uint32_t *dead;      /* Fenwick tree over times: latest references of dead blocks */
  uint32_t *last_time; /* per virtual block: time of its latest reference, 0 if none */
  uint32_t length, deaths;
  uint32_t *model_block; /* with a word model: per virtual block, its physical block, */
  uint32_t next;         /* numbered in order of first use as synth_words numbers them */
} physical_stack;

static void tree_add(uint32_t *tree, uint32_t length, uint32_t at, int32_t delta) {
  for (; at <= length; at += at & (~at + 1))
    tree[at] += (uint32_t)delta;
}

static uint32_t tree_prefix(const uint32_t *tree, uint32_t at) {
  uint32_t sum = 0;
  for (; at; at &= at - 1)
    sum += tree[at];
  return sum;
}

static void marks_add(physical_stack *p, uint32_t at, int32_t delta) {
  tree_add(p->marks, p->length, at, delta);
}

static uint32_t marks_prefix(const physical_stack *p, uint32_t at) {
  return tree_prefix(p->marks, at);
}

/* Dead blocks referenced after time `time`: the physical position of a virtual block is
 * its virtual position plus these. */
static uint32_t dead_after(const physical_stack *p, uint32_t time) {
  return p->deaths - tree_prefix(p->dead, time);
}

/* Records reference `time` (1-based) to virtual block `block`; returns its physical stack
 * position, or 0 for a miss (a fresh physical block). */
static uint32_t physical_reference(physical_stack *p, uint32_t block, uint32_t time, int fresh) {
  uint32_t last = p->last_time[block], position = 0;
  if (!fresh) {
    position = 1 + marks_prefix(p, time - 1) - marks_prefix(p, last);
    marks_add(p, last, -1);
  } else if (last) {
    tree_add(p->dead, p->length, last, 1); /* the block left behind stays in the stack */
    p->deaths++;
  }
  marks_add(p, time, 1);
  p->last_time[block] = time;
  return position;
}

static void count_hit(uint64_t hist[], uint32_t position) {
  if (position == 0 || position > (1u << (MS_SIGNATURE_DEPTHS - 1))) return;
  int k = 0;
  while ((1u << k) < position)
    k++;
  hist[k]++;
}

/* Plain seeds with width aims: blocks of the drawn reuse bin offered to the word model.
 * Surface error over 12 test kernels with 4 -> 8 candidates: 0.0001-0.0092 -> 0.0001-0.0089,
 * mean L2 error over the 46 hierarchies lower on 9 of 12; seed generation (1M references)
 * about 4 -> 6.6 s per iteration (CDF bound 0.005 then). */
#define BLOCK_CANDIDATES 8

/* Unique mode: aim at the physical position: the dead blocks above the block at virtual
 * `position` push it down, so step up by their count (once: they are sparse, one block in
 * words_per_block references). */
static uint32_t aim_physical(const lru_list *list, const physical_stack *physical,
                             uint32_t position, int bin, uint32_t block) {
  if (!physical->last_time[block]) return block;
  uint32_t dead = dead_after(physical, physical->last_time[block]);
  if (dead && position > dead) {
    uint32_t up = position - dead, candidate = lru_at(list, up);
    uint32_t at = physical->last_time[candidate]
                      ? up + dead_after(physical, physical->last_time[candidate])
                      : 0;
    if (at > (bin ? 1u << (bin - 1) : 0) && at <= position) return candidate;
  }
  return block;
}

/* The word model's score of a reference to virtual block `block`: in unique mode, of its
 * physical block, or 0 (every half cold, the gains' origin) when it moves to a new one. */
static double model_score(synth_word_model *words, int unique, const physical_stack *physical,
                          const uint32_t *visits, uint32_t words_per_block, uint32_t block) {
  if (!unique) return synth_word_model_score(words, block);
  if (visits[block] % words_per_block == 0) return 0;
  return synth_word_model_score(words, physical->model_block[block]);
}

static void run_attempt(lru_list *list, physical_stack *physical, uint32_t *visits,
                        const double target[], const double aim[], const ms_synth_config *config,
                        uint32_t words_per_block, synth_word_model *words, attempt *a) {
  uint64_t random = config->seed;
  uint64_t hist[MS_SIGNATURE_DEPTHS] = {0};
  lru_reset(list);
  memset(visits, 0, MS_SYNTH_LIST_BLOCKS * sizeof *visits);
  if (config->unique) {
    memset(physical->marks, 0, ((size_t)physical->length + 1) * sizeof *physical->marks);
    memset(physical->dead, 0, ((size_t)physical->length + 1) * sizeof *physical->dead);
    memset(physical->last_time, 0, MS_SYNTH_LIST_BLOCKS * sizeof *physical->last_time);
    physical->deaths = 0;
  }
  a->length = 0;
  if (words) synth_word_model_reset(words);
  physical->next = 0;
  for (uint64_t i = 0; i < config->max_length; i++) {
    int bin;
    uint32_t position = draw_position(synth_uniform(&random), aim, &random, &bin);
    if (position > MS_SYNTH_LIST_BLOCKS) position = MS_SYNTH_LIST_BLOCKS;
    uint32_t block = lru_at(list, position);
    if (config->unique && position < MS_SYNTH_LIST_BLOCKS)
      block = aim_physical(list, physical, position, bin, block);
    if (words) {
      /* with width aims: of a few positions drawn in the same reuse bin, the block whose
       * best word serves the narrower widths' aims most */
      synth_word_model_next(words);
      if (bin >= 2 && position < MS_SYNTH_LIST_BLOCKS) {
        double best = model_score(words, config->unique, physical, visits, words_per_block, block);
        uint32_t low = 1u << (bin - 1);
        for (int c = 1; c < BLOCK_CANDIDATES; c++) {
          uint32_t other = low + 1 + (uint32_t)(synth_uniform(&random) * low);
          uint32_t candidate = lru_at(list, other);
          if (config->unique) candidate = aim_physical(list, physical, other, bin, candidate);
          double score =
              model_score(words, config->unique, physical, visits, words_per_block, candidate);
          if (score > best) {
            best = score;
            block = candidate;
            position = other;
          }
        }
      }
      uint32_t model_block = block;
      if (config->unique) {
        if (visits[block] % words_per_block == 0) physical->model_block[block] = physical->next++;
        model_block = physical->model_block[block];
      }
      synth_word_model_commit(words, model_block, bin);
    }
    if (config->unique)
      count_hit(hist, physical_reference(physical, block, (uint32_t)i + 1,
                                         visits[block] % words_per_block == 0));
    else if (visits[block] > 0)
      count_hit(hist, position);
    visits[block]++;
    lru_touch(list, block);
    a->blocks[i] = block;
    a->bins[i] = (uint8_t)bin;
    a->length = i + 1;
    if (a->length >= config->min_length && a->length % config->check_interval == 0) {
      achieved_cdf(hist, a->length, a->cdf);
      cdf_errors(target, a->cdf, &a->mean_error, &a->max_error);
      if (a->mean_error <= config->max_mean_error && a->max_error <= config->max_max_error &&
          (!words || synth_word_model_error(words) <= config->max_width_error))
        return;
    }
  }
  achieved_cdf(hist, a->length, a->cdf);
  cdf_errors(target, a->cdf, &a->mean_error, &a->max_error);
}

static void reaim(double aim[], const double target[], const double achieved[]) {
  double floor = 0;
  for (int k = 0; k < MS_SIGNATURE_DEPTHS; k++) {
    double next =
        achieved[k] > 0 ? aim[k] * target[k] / achieved[k] : aim[k] + (target[k] - achieved[k]);
    if (next > 1) next = 1;
    if (next < floor) next = floor; /* an aim must stay a CDF */
    aim[k] = floor = next;
  }
}

int synth_blocks(const double target[], const ms_synth_config *config, uint32_t words_per_block,
                 synth_word_model *words, ms_seed *seed, uint8_t **bins) {
  lru_list list;
  physical_stack physical = {0};
  attempt best = {0}, trial = {0};
  uint32_t *visits = calloc(MS_SYNTH_LIST_BLOCKS, sizeof *visits);
  int rc = lru_init(&list, config->max_length);
  if (config->unique) {
    physical.length = (uint32_t)config->max_length;
    physical.marks = calloc((size_t)config->max_length + 1, sizeof *physical.marks);
    physical.dead = calloc((size_t)config->max_length + 1, sizeof *physical.dead);
    physical.last_time = calloc(MS_SYNTH_LIST_BLOCKS, sizeof *physical.last_time);
    physical.model_block = calloc(MS_SYNTH_LIST_BLOCKS, sizeof *physical.model_block);
    if (rc == MS_OK &&
        (!physical.marks || !physical.dead || !physical.last_time || !physical.model_block))
      rc = ms_error_set(MS_ERR_NOMEM, "synth: out of memory");
  }
  best.blocks = malloc(config->max_length * sizeof *best.blocks);
  best.bins = malloc(config->max_length);
  trial.blocks = malloc(config->max_length * sizeof *trial.blocks);
  trial.bins = malloc(config->max_length);
  if (rc == MS_OK && (!visits || !best.blocks || !best.bins || !trial.blocks || !trial.bins))
    rc = ms_error_set(MS_ERR_NOMEM, "synth: out of memory for a seed of %llu references",
                      (unsigned long long)config->max_length);
  double aim[MS_SIGNATURE_DEPTHS];
  memcpy(aim, target, sizeof aim);
  best.max_error = INFINITY;
  int iterations = 0;
  while (rc == MS_OK && iterations < config->max_iterations) {
    run_attempt(&list, &physical, visits, target, aim, config, words_per_block, words, &trial);
    iterations++;
    double current[MS_SIGNATURE_DEPTHS];
    memcpy(current, trial.cdf, sizeof current);
    double improvement = best.max_error - trial.max_error;
    if (trial.max_error < best.max_error) {
      attempt swap = best;
      best = trial;
      trial = swap;
    }
    if (best.mean_error <= config->max_mean_error && best.max_error <= config->max_max_error) break;
    if (iterations > 1 && improvement < config->min_improvement) break;
    reaim(aim, target, current);
  }
  if (rc == MS_OK) {
    seed->blocks = best.blocks;
    seed->length = best.length;
    seed->iterations = iterations;
    memcpy(seed->achieved_cdf, best.cdf, sizeof best.cdf);
    seed->mean_error = best.mean_error;
    seed->max_error = best.max_error;
    *bins = best.bins;
    best.blocks = NULL;
    best.bins = NULL;
  }
  free(best.blocks);
  free(best.bins);
  free(trial.blocks);
  free(trial.bins);
  free(visits);
  free(physical.marks);
  free(physical.dead);
  free(physical.last_time);
  free(physical.model_block);
  lru_free(&list);
  return rc;
}

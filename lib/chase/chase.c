/* Building and running the pointer-chasing array (memsnap/chase.h; model and assumptions
 * there). Only the build touches memory other than the pattern; the run is the kernels of
 * chase_kernels.c. The seed is read once (it holds at most a few million words).
 */
#include <stdlib.h>
#include <string.h>

#include "memsnap/chase.h"
#include "memsnap/error.h"
#include "memsnap/synth.h"
#include "memsnap/trace.h"

/* The seed's word indices (address / word), checked unique within the working set. */
static int read_seed(const char *path, ms_seed_info *info, uint32_t **indices) {
  ms_source *source = NULL;
  ms_batch batch = {0};
  uint8_t *used = NULL;
  *indices = NULL;
  memset(info, 0, sizeof *info);
  int rc = ms_mtr_open(path, &source);
  if (rc == MS_OK) rc = ms_seed_info_parse(ms_source_info(source), path, info);
  if (rc == 0)
    rc = ms_error_set(MS_ERR_ARG, "%s: not a trace seed (memsnap synth writes them)", path);
  if (rc == 1 && !info->unique)
    rc = ms_error_set(MS_ERR_ARG, "%s: not a unique-index seed (memsnap synth --unique)", path);
  if (rc == 1 && info->word != 4)
    rc = ms_error_set(MS_ERR_ARG, "%s: the benchmark runs 4-byte words (seed word %u)", path,
                      info->word);
  uint64_t words = rc == 1 ? info->working_set / 4 : 0;
  if (rc == 1 && (words >= UINT32_MAX || info->length > words))
    rc = ms_error_set(MS_ERR_ARG, "%s: seed too large for the benchmark", path);
  /* ms_seed_info_parse refuses length 0 and min-replications 0 (so words >= length >= 1 and
   * every division of ms_chase_build is by a non-zero count); restated where it is used. */
  if (rc == 1 && (info->length == 0 || info->min_replications == 0))
    rc = ms_error_set(MS_ERR_FORMAT, "%s: seed of no references", path);
  if (rc == 1) {
    *indices = malloc(info->length * sizeof **indices);
    used = calloc(words / 8 + 1, 1);
    rc = *indices && used ? ms_batch_init(&batch, 0) : ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  uint64_t count = 0;
  while (rc == MS_OK) {
    int n = ms_source_next(source, &batch);
    if (n <= 0) {
      rc = n;
      break;
    }
    for (int i = 0; i < n && rc == MS_OK; i++) {
      uint64_t word = batch.accesses[i].address / 4;
      if (word >= words || count >= info->length)
        rc = ms_error_set(MS_ERR_FORMAT, "%s: access %llu outside the seed's working set", path,
                          (unsigned long long)count);
      else if (used[word / 8] & (1u << (word % 8)))
        rc = ms_error_set(MS_ERR_ARG, "%s: word %llu visited twice (access %llu)", path,
                          (unsigned long long)word, (unsigned long long)count);
      else {
        used[word / 8] |= (uint8_t)(1u << (word % 8));
        (*indices)[count++] = (uint32_t)word;
      }
    }
  }
  if (rc == MS_OK && count != info->length)
    rc = ms_error_set(MS_ERR_FORMAT, "%s: %llu accesses, metadata says %llu", path,
                      (unsigned long long)count, (unsigned long long)info->length);
  ms_batch_free(&batch);
  ms_source_destroy(source);
  free(used);
  if (rc != MS_OK) {
    free(*indices);
    *indices = NULL;
  }
  return rc;
}

int ms_chase_build(const char *seed_path, uint64_t footprint, int ilp, ms_chase *out) {
  memset(out, 0, sizeof *out);
  if (ilp < 1 || ilp > MS_CHASE_MAX_ILP)
    return ms_error_set(MS_ERR_ARG, "ILP %d out of range (1..%d)", ilp, MS_CHASE_MAX_ILP);
  ms_seed_info info;
  uint32_t *indices;
  int rc = read_seed(seed_path, &info, &indices);
  if (rc != MS_OK) return rc; /* read_seed returns MS_OK or a negative status */
  uint64_t replications = ms_seed_replications(&info, footprint ? footprint : info.footprint);
  uint64_t words = info.working_set / 4;
  /* replications >= min-replications >= 1 (read_seed): the first test cannot hold */
  if (replications == 0 || replications > (UINT32_MAX - 1) / words) {
    free(indices);
    return ms_error_set(MS_ERR_ARG, "footprint too large (4-byte indices: below 16 GiB)");
  }
  out->elements = replications * words;
  out->footprint = out->elements * 4;
  /* calloc: large blocks come zeroed from the kernel, so the only writes are the chain's
   * (words the seed never visits are never read); they also fault every page the chase
   * will touch in before it is timed. */
  size_t bytes = (size_t)out->footprint + 512;
  out->allocation = calloc(1, bytes);
  if (!out->allocation) {
    free(indices);
    return ms_error_set(MS_ERR_NOMEM, "cannot allocate %zu bytes", bytes);
  }
  out->data = (uint32_t *)(((uintptr_t)out->allocation + 511) & ~(uintptr_t)511);
  out->replications = replications;
  out->sequence = replications * info.length;
  out->ilp = ilp;
  /* S(j) = (j / length) * words + indices[j % length]; element S(j) holds S(j + K). */
  uint64_t length = info.length, ahead_r = (uint64_t)ilp / length, ahead_i = (uint64_t)ilp % length;
  for (uint64_t r = 0; r < replications; r++)
    for (uint64_t i = 0; i < length; i++) {
      uint64_t next_i = i + ahead_i, next_r = r + ahead_r;
      if (next_i >= length) {
        next_i -= length;
        next_r++;
      }
      next_r %= replications;
      out->data[r * words + indices[i]] = (uint32_t)(next_r * words + indices[next_i]);
    }
  for (int c = 0; c < ilp; c++) {
    uint64_t j = (uint64_t)c % out->sequence;
    out->start[c] = (uint32_t)((j / length) * words + indices[j % length]);
  }
  free(indices);
  return MS_OK;
}

uint64_t ms_chase_run(const ms_chase *chase, uint64_t operations) {
  uint32_t pointers[MS_CHASE_MAX_ILP];
  memcpy(pointers, chase->start, sizeof pointers);
  ms_chase_kernels[chase->ilp](chase->data, pointers, operations / (uint64_t)chase->ilp);
  uint64_t result = 0;
  for (int c = 0; c < chase->ilp; c++)
    result = result * 31 + pointers[c];
  return result;
}

void ms_chase_free(ms_chase *chase) {
  free(chase->allocation);
  memset(chase, 0, sizeof *chase);
}

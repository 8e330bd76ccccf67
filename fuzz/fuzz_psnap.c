/* libFuzzer target: the .psnap profile parser on arbitrary bytes, as text or as zstd
 * (told by the magic: seeds of both kinds are in the corpus). A profile that parses
 * must write back to text that parses to the same text (the round trip), must go
 * through compression and back to the same text, and must replay (the first accesses,
 * and from a few starting points) without a crash; its threads merged and one picked
 * back, without a crash. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "memsnap/psnap.h"

static void replay_some(const char *text, size_t size, uint64_t from) {
  ms_psnap_profile profile;
  if (ms_psnap_profile_parse(text, size, "fuzz", &profile) != 0) return;
  ms_psnap_replay_options options = {.from = from, .count = 5000};
  ms_source *source;
  if (ms_psnap_replay_open(&profile, &options, &source) != 0) return;
  ms_batch batch;
  if (ms_batch_init(&batch, 1000) == 0) {
    while (ms_source_next(source, &batch) > 0) {
    }
    ms_batch_free(&batch);
  }
  ms_source_destroy(source);
}

static char *to_text(const ms_psnap_profile *profile, size_t *size, int compress) {
  char *text = NULL;
  FILE *out = open_memstream(&text, size);
  if (!out) abort();
  int rc = compress ? ms_psnap_profile_write_compressed(profile, out)
                    : ms_psnap_profile_write(profile, out);
  if (rc != 0) abort();
  fclose(out);
  return text;
}

/* Whether seeking in the profile costs as much as replaying up to the position: a lossy
 * order is walked, and sites with shared lines or first touches depend on their whole
 * thread, so the thread is replayed from its start. */
static int seeks_by_walking(const ms_psnap_profile *profile) {
  for (uint32_t t = 0; t < profile->thread_count; t++)
    if (profile->threads[t].lossy) return 1;
  for (uint32_t s = 0; s < profile->site_count; s++) {
    const ms_psnap_site *site = &profile->sites[s];
    if (site->lossy && (site->shared_accesses || ms_psnap_site_new_lines(site))) return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ms_psnap_profile profile;
  if (ms_psnap_profile_parse((const char *)data, size, "fuzz", &profile) != 0) return 0;
  size_t text_size = 0, again_size = 0, packed_size = 0, unpacked_size = 0;
  char *text = to_text(&profile, &text_size, 0);
  uint64_t total = profile.access_count;
  /* such a profile claiming 10^12 accesses would take hours to seek to its middle: its
   * seeks are tried near the start only (the position is what costs, not the input) */
  if (seeks_by_walking(&profile) && total > 100000) total = 100000;
  ms_psnap_profile_free(&profile);
  if (ms_psnap_profile_parse(text, text_size, "fuzz-again", &profile) != 0) abort();
  char *again = to_text(&profile, &again_size, 0);
  char *packed = to_text(&profile, &packed_size, 1);
  ms_psnap_profile_free(&profile);
  if (again_size != text_size || memcmp(text, again, text_size) != 0) abort();
  if (ms_psnap_profile_parse(packed, packed_size, "fuzz.zst", &profile) != 0) abort();
  char *unpacked = to_text(&profile, &unpacked_size, 0);
  ms_psnap_profile_free(&profile);
  if (unpacked_size != text_size || memcmp(text, unpacked, text_size) != 0) abort();
  replay_some(text, text_size, 0);
  replay_some(text, text_size, total / 2);
  /* threads merged into blocks, and a rank and thread picked back (memory errors only:
   * the merge's own round trip is tests/psnap/test_psnap_merge.c's) */
  if (ms_psnap_profile_parse(text, text_size, "fuzz-merge", &profile) == 0) {
    if (ms_psnap_merge_threads(&profile) >= 0) ms_psnap_profile_pick(&profile, -1, 1);
    ms_psnap_profile_free(&profile);
  }
  replay_some(packed, packed_size, total > 3 ? total - 3 : 0);
  free(text);
  free(again);
  free(packed);
  free(unpacked);
  return 0;
}

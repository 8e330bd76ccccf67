/* libFuzzer target: the .psnap profile parser on arbitrary bytes. A profile that parses
 * must write back to text that parses to the same text (the round trip), and must replay
 * (the first accesses, and from a few starting points) without a crash. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ms_psnap_profile profile;
  if (ms_psnap_profile_parse((const char *)data, size, "fuzz", &profile) != 0) return 0;
  char *text = NULL, *again = NULL;
  size_t text_size = 0, again_size = 0;
  FILE *out = open_memstream(&text, &text_size);
  if (ms_psnap_profile_write(&profile, out) != 0) abort();
  fclose(out);
  uint64_t total = profile.access_count;
  ms_psnap_profile_free(&profile);
  if (ms_psnap_profile_parse(text, text_size, "fuzz-again", &profile) != 0) abort();
  out = open_memstream(&again, &again_size);
  if (ms_psnap_profile_write(&profile, out) != 0) abort();
  fclose(out);
  if (again_size != text_size || memcmp(text, again, text_size) != 0) abort();
  ms_psnap_profile_free(&profile);
  replay_some(text, text_size, 0);
  replay_some(text, text_size, total / 2);
  replay_some(text, text_size, total > 3 ? total - 3 : 0);
  free(text);
  free(again);
  return 0;
}

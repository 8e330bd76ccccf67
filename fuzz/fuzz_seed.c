/* libFuzzer target: trace seeds (an .mtr with seed metadata, docs/formats.md "Trace
 * seeds") through the expansion source: metadata parsing, replication, repetition. */
#include "fuzz_common.h"
#include "memsnap/synth.h"

static int open_expanded(const char *path, ms_source **out) {
  return ms_seed_source_open(path, 3, 0, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_input_file("fuzz_seed", data, size);
  if (!path) return 0;
  fuzz_drain(path, open_expanded);
  unlink(path);
  return 0;
}

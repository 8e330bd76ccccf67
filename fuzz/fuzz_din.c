/* libFuzzer target: the din reader, and format detection, on arbitrary bytes. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_input_file("fuzz_din", data, size);
  if (!path) return 0;
  fuzz_drain(path, ms_din_open);
  ms_trace_detect(path);
  unlink(path);
  return 0;
}

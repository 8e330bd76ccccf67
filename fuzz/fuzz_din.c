/* libFuzzer target: the din reader on arbitrary bytes. The input goes to a temporary file
 * (readers take paths), is opened, drained; any error is fine, a crash or
 * an out-of-bounds access is not. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "memsnap/memsnap.h"
#include "memsnap/trace.h"

static const char *input_path(void) {
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/fuzz_din.%ld", (long)getpid());
  return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = input_path();
  FILE *file = fopen(path, "wb");
  if (!file) return 0;
  fwrite(data, 1, size, file);
  fclose(file);
  ms_source *source;
  if (ms_din_open(path, &source) == 0) {
    ms_batch batch;
    if (ms_batch_init(&batch, 0) == 0) {
      while (ms_source_next(source, &batch) > 0) {
      }

      ms_batch_free(&batch);
    }
    ms_source_destroy(source);
  }

  ms_trace_detect(path);
  unlink(path);
  return 0;
}

/* Shared by the libFuzzer targets: readers take paths, so each input is written to a
 * per-process temporary file, opened with the reader under test and drained. Any error
 * is fine; a crash, a leak or an out-of-bounds access is not. */
#ifndef MEMSNAP_FUZZ_COMMON_H
#define MEMSNAP_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "memsnap/memsnap.h"
#include "memsnap/trace.h"

/* Writes the input to /tmp/NAME.PID and returns that path, or NULL. */
static inline const char *fuzz_input_file(const char *name, const uint8_t *data, size_t size) {
  static char path[128];
  snprintf(path, sizeof path, "/tmp/%s.%ld", name, (long)getpid());
  FILE *file = fopen(path, "wb");
  if (!file) return NULL;
  fwrite(data, 1, size, file);
  fclose(file);
  return path;
}

/* Opens `path` with `open`, reads every batch, closes. */
static inline void fuzz_drain(const char *path, int (*open)(const char *, ms_source **)) {
  ms_source *source;
  if (open(path, &source) != 0) return;
  ms_batch batch;
  if (ms_batch_init(&batch, 0) == 0) {
    while (ms_source_next(source, &batch) > 0) {
    }
    ms_batch_free(&batch);
  }
  ms_source_destroy(source);
}

#endif

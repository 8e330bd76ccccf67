/* Batches and access kinds (see memsnap/access.h). */
#include "memsnap/access.h"

#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"

int ms_batch_init(ms_batch *batch, size_t capacity) {
  if (capacity == 0) capacity = MS_BATCH_CAPACITY;
  batch->accesses = malloc(capacity * sizeof *batch->accesses);
  batch->count = 0;
  batch->capacity = batch->accesses ? capacity : 0;
  return batch->accesses ? MS_OK : ms_error_set(MS_ERR_NOMEM, "out of memory for a batch");
}

void ms_batch_free(ms_batch *batch) {
  free(batch->accesses);
  batch->accesses = NULL;
  batch->count = batch->capacity = 0;
}

static const char *const kind_names[MS_ACCESS_KIND_COUNT] = {"load", "store", "modify"};

const char *ms_access_kind_name(ms_access_kind kind) {
  return (unsigned)kind < MS_ACCESS_KIND_COUNT ? kind_names[kind] : "unknown";
}

int ms_access_kind_parse(const char *name) {
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++)
    if (strcmp(name, kind_names[k]) == 0) return k;
  return -1;
}

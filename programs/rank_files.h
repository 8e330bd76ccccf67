/* Profiles of the ranks of a run named by a pattern: memsnap merge's inputs (serial and over
 * MPI). `app.%r.psnap` stands for app.0.psnap, app.1.psnap, ... while the files exist: the
 * names of thousands of ranks' files, given one by one, overflow the command line that
 * mpirun hands on (Open MPI 4.1: "Argument list too long" for 2048 names of 66 bytes). */
#ifndef MEMSNAP_RANK_FILES_H
#define MEMSNAP_RANK_FILES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void rank_files_free(char **paths, int count) {
  for (int k = 0; k < count; k++)
    free(paths[k]);
  free(paths);
}

/* The paths of `inputs` (n of them), each one holding %r replaced by its ranks' files, in
 * *paths (all malloc'ed: rank_files_free) and *count. Returns 0, or -1 with `why` filled
 * (out of memory; a pattern without its rank 0 file, or with a rank missing before one that
 * exists: a merge of part of the ranks would say nothing of the others). */
static inline int rank_files(char *const *inputs, int n, char ***paths, int *count, char *why,
                             size_t why_size) {
  int capacity = n > 0 ? n : 1, used = 0;
  char **out = malloc((size_t)capacity * sizeof *out);
  if (!out) return snprintf(why, why_size, "out of memory"), -1;
  for (int i = 0; i < n; i++) {
    const char *at = strstr(inputs[i], "%r");
    for (unsigned long rank = 0;; rank++) {
      size_t size = strlen(inputs[i]) + 24;
      char *path = malloc(size);
      if (!path) goto nomem;
      if (at)
        snprintf(path, size, "%.*s%lu%s", (int)(at - inputs[i]), inputs[i], rank, at + 2);
      else
        memcpy(path, inputs[i], strlen(inputs[i]) + 1);
      if (at && access(path, F_OK) != 0) {
        /* the end of the ranks, unless the next one exists: a file missing among them */
        char *next = malloc(size);
        if (!next) {
          free(path);
          goto nomem;
        }
        snprintf(next, size, "%.*s%lu%s", (int)(at - inputs[i]), inputs[i], rank + 1, at + 2);
        int gap = rank > 0 && access(next, F_OK) == 0;
        if (rank == 0)
          snprintf(why, why_size, "%s: no file of rank 0 (%s)", inputs[i], path);
        else if (gap)
          snprintf(why, why_size, "%s: no file of rank %lu (%s), but %s exists", inputs[i], rank,
                   path, next);
        free(path);
        free(next);
        if (rank == 0 || gap) goto fail;
        break;
      }
      if (used == capacity) {
        char **more = realloc(out, (size_t)capacity * 2 * sizeof *out);
        if (!more) {
          free(path);
          goto nomem;
        }
        out = more, capacity *= 2;
      }
      out[used++] = path;
      if (!at) break;
    }
  }
  *paths = out, *count = used;
  return 0;
nomem:
  snprintf(why, why_size, "out of memory");
fail:
  rank_files_free(out, used);
  return -1;
}

#endif

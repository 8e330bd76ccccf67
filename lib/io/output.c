/* Atomic output files (see memsnap/output.h): temporary "<target>.tmp.<pid>" then rename;
 * targets that are not regular files are written in place. */
#include "memsnap/output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memsnap/error.h"

int ms_output_open(ms_output *out, const char *path) {
  memset(out, 0, sizeof *out);
  if (strcmp(path, "-") == 0) {
    out->file = stdout;
    return MS_OK;
  }
  out->path = strdup(path);
  struct stat st;
  if (out->path && stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    out->file = fopen(path, "wb"); /* a device, FIFO or terminal: in place */
    if (!out->file) {
      int rc = ms_error_set(MS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
      free(out->path);
      memset(out, 0, sizeof *out);
      return rc;
    }
    return MS_OK;
  }
  size_t size = strlen(path) + 32;
  out->temp_path = malloc(size);
  if (!out->path || !out->temp_path) {
    ms_output_abort(out);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  snprintf(out->temp_path, size, "%s.tmp.%ld", path, (long)getpid());
  out->file = fopen(out->temp_path, "wb");
  if (!out->file) {
    int rc = ms_error_set(MS_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    free(out->path);
    free(out->temp_path);
    memset(out, 0, sizeof *out);
    return rc;
  }
  return MS_OK;
}

int ms_output_commit(ms_output *out) {
  if (!out->file) return MS_OK;
  if (!out->temp_path) { /* stdout, or a target written in place */
    int failed = fflush(out->file) != 0;
    if (out->path) failed |= fclose(out->file) != 0;
    out->file = NULL;
    int rc = failed ? ms_error_set(MS_ERR_IO, "%s: %s", out->path ? out->path : "standard output",
                                   strerror(errno))
                    : MS_OK;
    free(out->path);
    out->path = NULL;
    return rc;
  }
  int failed = fflush(out->file) != 0 || fsync(fileno(out->file)) != 0;
  failed |= fclose(out->file) != 0;
  out->file = NULL;
  if (failed || rename(out->temp_path, out->path) != 0) {
    int rc = ms_error_set(MS_ERR_IO, "%s: cannot write: %s", out->path, strerror(errno));
    unlink(out->temp_path);
    ms_output_abort(out);
    return rc;
  }
  free(out->path);
  free(out->temp_path);
  out->path = out->temp_path = NULL;
  return MS_OK;
}

void ms_output_abort(ms_output *out) {
  if (out->file && out->temp_path) {
    fclose(out->file);
    unlink(out->temp_path);
  } else if (out->file && out->path) {
    fclose(out->file); /* in place: what was written stays */
  }
  out->file = NULL;
  free(out->path);
  free(out->temp_path);
  out->path = out->temp_path = NULL;
}

/* Helpers for end-to-end tests: temporary folders, running commands, reading files,
 * and the locations of the build (MEMSNAP_BUILD_DIR) and of the CLI (MEMSNAP). */
#ifndef MEMSNAP_TESTUTIL_H
#define MEMSNAP_TESTUTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static inline const char *test_env(const char *name) {
  const char *value = getenv(name);
  if (!value) {
    fprintf(stderr, "test: environment variable %s is not set (run through ctest)\n", name);
    exit(1);
  }
  return value;
}

/* Path of a kernel built in tests/kernels/. */
static inline const char *test_kernel(const char *name, char *buf, size_t size) {
  snprintf(buf, size, "%s/tests/kernels/%s", test_env("MEMSNAP_BUILD_DIR"), name);
  return buf;
}

static inline char *test_tempdir(void) {
  char *dir = strdup("/tmp/memsnap-test-XXXXXX");
  if (!dir || !mkdtemp(dir)) abort();
  return dir;
}

static inline void test_rmdir(char *dir) {
  char command[512];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  if (system(command) != 0) fprintf(stderr, "test: cannot remove %s\n", dir);
  free(dir);
}

/* Runs a shell command built from a format; returns its exit status (128+signal if killed,
 * -1 if it could not run). */
static inline int test_run(const char *format, ...) __attribute__((format(printf, 1, 2)));
static inline int test_run(const char *format, ...) {
  char command[8192];
  va_list args;
  va_start(args, format);
  vsnprintf(command, sizeof command, format, args);
  va_end(args);
  int status = system(command);
  if (status == -1) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

/* The whole file as a NUL-terminated string (NULL if it cannot be read). */
static inline char *test_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)size + 1);
  if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
    free(text);
    text = NULL;
  }
  if (text) text[size] = '\0';
  fclose(f);
  return text;
}

/* Defines setup() and teardown(), for cmocka_run_group_tests, of a test program whose tests
 * share one scratch directory held in `var` (a static char *): made before the first test
 * (the group fails if it cannot be), removed with its contents after the last. */
#define TEST_SCRATCH_GROUP(var)                                                                    \
  static int setup(void **state) {                                                                 \
    (void)state;                                                                                   \
    var = test_tempdir();                                                                          \
    return var ? 0 : -1;                                                                           \
  }                                                                                                \
  static int teardown(void **state) {                                                              \
    (void)state;                                                                                   \
    test_rmdir(var);                                                                               \
    return 0;                                                                                      \
  }

/* Runs `$MEMSNAP ARGS` (ARGS from a format) in `dir`, with stdout to dir/out and stderr
 * to dir/err; returns its exit status as test_run does. */
static inline int test_memsnap_in(const char *dir, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static inline int test_memsnap_in(const char *dir, const char *format, ...) {
  char args[4096];
  va_list list;
  va_start(list, format);
  vsnprintf(args, sizeof args, format, list);
  va_end(list);
  return test_run("cd '%s' && '%s' %s > out 2> err", dir, test_env("MEMSNAP"), args);
}

/* The 1-based number of the first line of tests/kernels/`source` that contains `text`,
 * 0 if none (the file from MEMSNAP_SOURCE_DIR). */
static inline int test_program_line(const char *source, const char *text) {
  char path[4096], line[512];
  snprintf(path, sizeof path, "%s/tests/kernels/%s", test_env("MEMSNAP_SOURCE_DIR"), source);
  FILE *file = fopen(path, "r");
  if (!file) return 0;
  int number = 0, found = 0;
  while (!found && fgets(line, sizeof line, file)) {
    number++;
    found = strstr(line, text) != NULL;
  }
  fclose(file);
  return found ? number : 0;
}

/* A copy of `text` with the first `from` after `after` (NULL: from the start) replaced by
 * `to`; aborts the test if either is not found. The caller frees it. */
static inline char *test_edited(const char *text, const char *after, const char *from,
                                const char *to) {
  const char *start = after ? strstr(text, after) : text;
  if (start && after) start += strlen(after);
  const char *at = start ? strstr(start, from) : NULL;
  if (!at) {
    fprintf(stderr, "test_edited: '%s' not found after '%s'\n", from, after ? after : "");
    abort();
  }
  size_t head = (size_t)(at - text);
  char *result = malloc(strlen(text) - strlen(from) + strlen(to) + 1);
  if (!result) abort();
  memcpy(result, text, head);
  strcpy(result + head, to);
  strcat(result, at + strlen(from));
  return result;
}

/* Opens a memory stream whose text test_memstream_text returns. The buffer's address is
 * kept on the heap: with `char *text` on the caller's stack, GCC 12 at -O3 took the text
 * for a pointer to that local (-Wdangling-pointer, an error in Release builds). */
typedef struct test_memstream {
  FILE *file;
  char **buffer;
  size_t length;
} test_memstream;

static inline FILE *test_memstream_open(test_memstream *m) {
  m->buffer = calloc(1, sizeof *m->buffer);
  if (!m->buffer) abort();
  m->file = open_memstream(m->buffer, &m->length);
  if (!m->file) abort();
  return m->file;
}

/* Closes the stream; the caller frees the text. */
static inline char *test_memstream_text(test_memstream *m) {
  fclose(m->file);
  char *text = *m->buffer;
  free(m->buffer);
  return text;
}

/* The whole of dir/name (NULL if it cannot be read). */
static inline char *test_read_in(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return test_read_file(path);
}

#endif

/* Outputs (memsnap/output.h): a regular file is replaced atomically; a target that is not a
 * regular file (a FIFO here, /dev/null in practice) is written in place and stays what it
 * is (renaming onto /dev/null as root had replaced the device with a file). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "memsnap/output.h"
#include "testutil.h"

static void *drain(void *path) {
  static char got[64];
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
  got[n] = '\0';
  if (f) fclose(f);
  return got;
}

static void fifo_is_written_in_place(void **state) {
  (void)state;
  char *dir = test_tempdir(), path[512];
  snprintf(path, sizeof path, "%s/fifo", dir);
  assert_int_equal(mkfifo(path, 0600), 0);
  pthread_t reader;
  assert_int_equal(pthread_create(&reader, NULL, drain, path), 0);
  ms_output out;
  assert_int_equal(ms_output_open(&out, path), 0);
  assert_null(out.temp_path);
  fputs("through the fifo\n", out.file);
  assert_int_equal(ms_output_commit(&out), 0);
  void *got;
  assert_int_equal(pthread_join(reader, &got), 0);
  assert_string_equal(got, "through the fifo\n");
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_true(S_ISFIFO(st.st_mode));
  test_rmdir(dir);
}

static void regular_file_is_replaced_whole(void **state) {
  (void)state;
  char *dir = test_tempdir(), path[512];
  snprintf(path, sizeof path, "%s/out.txt", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("old\n", f);
  fclose(f);
  ms_output out;
  assert_int_equal(ms_output_open(&out, path), 0);
  assert_non_null(out.temp_path);
  fputs("new\n", out.file);
  fflush(out.file);
  char *text = test_read_file(path); /* the old contents until the commit */
  assert_string_equal(text, "old\n");
  free(text);
  assert_int_equal(ms_output_commit(&out), 0);
  text = test_read_file(path);
  assert_string_equal(text, "new\n");
  free(text);
  /* an aborted output leaves the target as it was */
  assert_int_equal(ms_output_open(&out, path), 0);
  fputs("never\n", out.file);
  ms_output_abort(&out);
  text = test_read_file(path);
  assert_string_equal(text, "new\n");
  free(text);
  test_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fifo_is_written_in_place),
      cmocka_unit_test(regular_file_is_replaced_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

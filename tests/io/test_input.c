/* Inputs that are streams (memsnap/input.h): what a look at a pipe's first bytes leaves for
 * its reader, a stream read once or kept in a temporary copy, standard input (a pipe, a
 * redirected file, a terminal), and a FIFO whose writer comes late. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h> /* after the headers it needs */

#include "memsnap/error.h"
#include "memsnap/input.h"
#include "memsnap/trace.h"

static char temp_dir[] = "/tmp/memsnap-test-input-XXXXXX";

/* n bytes of a known pattern: byte i is (i * 7 + i / 251) mod 256. */
static unsigned char pattern(size_t i) { return (unsigned char)(i * 7 + i / 251); }

/* A pipe whose writer, a child, writes n pattern bytes after `delay_ms`; returns the read
 * end's path (/proc/self/fd/N: a pipe, as `<(...)` gives) and the child in *child. */
static void pipe_path(char *path, size_t size, size_t n, int delay_ms, pid_t *child) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  *child = fork();
  assert_true(*child >= 0);
  if (*child == 0) {
    close(fds[0]);
    usleep((useconds_t)delay_ms * 1000);
    unsigned char buffer[4096];
    for (size_t done = 0; done < n;) {
      size_t k = n - done < sizeof buffer ? n - done : sizeof buffer;
      for (size_t i = 0; i < k; i++)
        buffer[i] = pattern(done + i);
      if (write(fds[1], buffer, k) != (ssize_t)k) _exit(1);
      done += k;
    }
    _exit(0);
  }
  close(fds[1]);
  snprintf(path, size, "/proc/self/fd/%d", fds[0]);
}

static void check_pattern(const unsigned char *data, size_t from, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (data[i] != pattern(from + i)) fail_msg("byte %zu differs", from + i);
}

static size_t read_to_end(FILE *file, size_t from) {
  unsigned char buffer[8192];
  size_t total = 0, n;
  while ((n = fread(buffer, 1, sizeof buffer, file)) > 0) {
    check_pattern(buffer, from + total, n);
    total += n;
  }
  assert_false(ferror(file));
  return total;
}

static void reap(pid_t child) {
  int status;
  assert_int_equal(waitpid(child, &status, 0), child);
}

/* Looks at any offset of the first bytes leave them all to the reader, which then gets the
 * rest of the stream; a second reader is refused, and so are looks after the first bytes. */
static void test_peek_then_read_once(void **state) {
  (void)state;
  char path[64];
  pid_t child;
  const size_t n = 3 << 20; /* more than a pipe holds: the writer blocks until read */
  pipe_path(path, sizeof path, n, 0, &child);
  assert_int_equal(ms_input_is_stream(path), 1);
  unsigned char head[5000];
  size_t got;
  assert_int_equal(ms_input_peek(path, 0, head, 8, &got), 0);
  assert_int_equal(got, 8);
  check_pattern(head, 0, 8);
  assert_int_equal(ms_input_peek(path, 1000, head, sizeof head, &got), 0);
  assert_int_equal(got, sizeof head);
  check_pattern(head, 1000, sizeof head);
  assert_int_equal(ms_input_peek(path, 0, head, 100, &got), 0); /* again: the same bytes */
  check_pattern(head, 0, 100);
  FILE *file, *second;
  assert_int_equal(ms_input_open(path, &file), 0);
  assert_int_equal(ms_input_open(path, &second), MS_ERR_ARG);
  assert_non_null(strstr(ms_error_message(), "already read"));
  assert_int_equal(ms_input_peek(path, 0, head, 100, &got), 0); /* still in the head */
  assert_true(ms_input_peek(path, n - 10, head, 10, &got) < 0);
  assert_int_equal(read_to_end(file, 0), n);
  assert_int_equal(ms_input_size(path), n);
  fclose(file);
  assert_true(ms_input_open(path, &file) < 0);
  assert_true(ms_input_peek(path, 0, head, 1, &got) < 0);
  reap(child);
}

/* A stream opened as a seekable file is copied once: every later open and look reads the
 * copy, at any offset. */
static void test_seekable_copy(void **state) {
  (void)state;
  char path[64];
  pid_t child;
  const size_t n = 1000000;
  pipe_path(path, sizeof path, n, 0, &child);
  unsigned char head[16];
  size_t got;
  assert_int_equal(ms_input_peek(path, 0, head, sizeof head, &got), 0);
  for (int twice = 0; twice < 2; twice++) {
    FILE *file;
    assert_int_equal(ms_input_open_seekable(path, &file), 0);
    struct stat st;
    assert_int_equal(fstat(fileno(file), &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, n);
    assert_int_equal(pread(fileno(file), head, 16, 999000), 16);
    check_pattern(head, 999000, 16);
    assert_int_equal(read_to_end(file, 0), n);
    fclose(file);
  }
  FILE *file;
  assert_int_equal(ms_input_open(path, &file), 0); /* in order, from the copy */
  assert_int_equal(read_to_end(file, 0), n);
  fclose(file);
  assert_int_equal(ms_input_peek(path, n - 4, head, 16, &got), 0);
  assert_int_equal(got, 4);
  check_pattern(head, n - 4, 4);
  assert_int_equal(ms_input_size(path), n);
  reap(child);
}

/* "-" is standard input: a pipe; a file it is redirected from, read from its start with no
 * copy; a terminal, refused. Regular files are not streams; "-" names no file. */
static void test_standard_input(void **state) {
  (void)state;
  assert_string_equal(ms_input_name("-"), "standard input");
  assert_string_equal(ms_input_name("a.mtr"), "a.mtr");
  assert_int_equal(ms_input_is_stream("-"), 1);
  char file_path[256];
  snprintf(file_path, sizeof file_path, "%s/plain", temp_dir);
  FILE *plain = fopen(file_path, "wb");
  for (size_t i = 0; i < 100000; i++)
    fputc(pattern(i), plain);
  fclose(plain);
  assert_int_equal(ms_input_is_stream(file_path), 0);
  assert_int_equal(ms_input_is_stream(temp_dir), 0);
  assert_int_equal(ms_input_is_stream("/nonexistent/file"), 0);
  int saved = dup(STDIN_FILENO);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) { /* each case in a process of its own: "-" is opened once per process */
    int fd = open(file_path, O_RDONLY);
    dup2(fd, STDIN_FILENO);
    FILE *file;
    unsigned char head[4];
    size_t got;
    if (ms_input_peek("-", 0, head, 4, &got) != 0 || got != 4 || head[3] != pattern(3)) _exit(1);
    if (ms_input_open_seekable("-", &file) != 0) _exit(2);
    struct stat st;
    if (fstat(fileno(file), &st) != 0 || st.st_size != 100000) _exit(3);
    fclose(file);
    if (ms_input_open("-", &file) != 0 || read_to_end(file, 0) != 100000) _exit(4);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  child = fork();
  assert_true(child >= 0);
  if (child == 0) { /* a terminal */
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) _exit(77); /* no ptys */
    int terminal = open(ptsname(master), O_RDWR | O_NOCTTY);
    if (terminal < 0) _exit(77);
    dup2(terminal, STDIN_FILENO);
    unsigned char head[4];
    size_t got;
    if (ms_input_peek("-", 0, head, 4, &got) != MS_ERR_ARG) _exit(1);
    if (!strstr(ms_error_message(), "standard input is a terminal")) _exit(2);
    _exit(0);
  }
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  assert_true(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77);
  close(saved);
}

static int notices;
static char noticed[256];
static void notice(const char *name) {
  notices++;
  snprintf(noticed, sizeof noticed, "%s", name);
}

/* A FIFO: opening waits for its writer; after a second without one, the notice is called
 * (once), and the bytes come when the writer does. A writer already there: no notice. */
static void test_fifo_writer_late_and_early(void **state) {
  (void)state;
  ms_input_set_wait_notice(notice);
  for (int late = 1; late >= 0; late--) {
    char path[256];
    snprintf(path, sizeof path, "%s/fifo%d", temp_dir, late);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(ms_input_is_stream(path), 1);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
      if (late) usleep(1500 * 1000);
      int fd = open(path, O_WRONLY);
      unsigned char bytes[100];
      for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = pattern(i);
      _exit(fd >= 0 && write(fd, bytes, sizeof bytes) == (ssize_t)sizeof bytes ? 0 : 1);
    }
    notices = 0;
    FILE *file;
    assert_int_equal(ms_input_open(path, &file), 0);
    assert_int_equal(read_to_end(file, 0), 100);
    fclose(file);
    assert_int_equal(notices, late);
    if (late) assert_string_equal(noticed, path);
    reap(child);
  }
  ms_input_set_wait_notice(NULL);
}

/* The trace readers on a stream: detection looks, the reader reads from the first byte. */
static void test_trace_readers_on_a_pipe(void **state) {
  (void)state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  const char *din = "# a comment\n0 1000 8\n1 2000 4\n0 3000\n";
  assert_int_equal(write(fds[1], din, strlen(din)), (ssize_t)strlen(din));
  close(fds[1]);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
  assert_int_equal(ms_trace_detect(path), MS_FORMAT_DIN);
  assert_int_equal(ms_trace_detect(path), MS_FORMAT_DIN); /* looking twice changes nothing */
  ms_source *source;
  assert_int_equal(ms_trace_open(path, &source), 0);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  assert_int_equal(ms_source_next(source, &batch), 3);
  assert_int_equal(batch.accesses[0].address, 0x1000);
  assert_int_equal(batch.accesses[2].address, 0x3000);
  assert_int_equal(batch.accesses[2].size, 4);
  assert_int_equal(ms_source_next(source, &batch), 0);
  ms_batch_free(&batch);
  ms_source_destroy(source);
  close(fds[0]);
}

static int setup(void **state) {
  (void)state;
  return mkdtemp(temp_dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char command[300];
  snprintf(command, sizeof command, "rm -rf '%s'", temp_dir);
  return system(command) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_peek_then_read_once),
      cmocka_unit_test(test_seekable_copy),
      cmocka_unit_test(test_standard_input),
      cmocka_unit_test(test_fifo_writer_late_and_early),
      cmocka_unit_test(test_trace_readers_on_a_pipe),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

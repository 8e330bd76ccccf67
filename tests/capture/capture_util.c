/* See capture_util.h. */
#include "capture_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h> /* after its prerequisites above */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memsnap/capture.h"

const char *capture_tool_dir(void) {
  static char dir[4096];
  if (!dir[0]) {
    const char *build = getenv("MEMSNAP_BUILD_DIR");
    assert_non_null(build);
    snprintf(dir, sizeof dir, "%s/lib/capture/valgrind/vglib", build);
  }
  return dir;
}

ms_source *capture_run(char *const *argv, kind_counts *counts, batch_visitor visitor,
                       void *context) {
  int argc = 0;
  while (argv[argc])
    argc++;
  ms_capture_options options = {.tool_dir = capture_tool_dir(), .quiet = 1};
  ms_source *source = NULL;
  int rc = ms_capture_open(&options, argc, argv, &source);
  if (rc < 0) fail_msg("ms_capture_open(%s): %s", argv[0], ms_error_message());
  memset(counts, 0, sizeof *counts);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  for (;;) {
    int n = ms_source_next(source, &batch);
    if (n < 0) fail_msg("capture of %s: %s", argv[0], ms_error_message());
    if (n == 0) break;
    assert_int_equal((size_t)n, batch.count);
    for (size_t i = 0; i < batch.count; i++) {
      const ms_access *a = &batch.accesses[i];
      assert_true(a->kind < MS_ACCESS_KIND_COUNT);
      assert_true(a->size >= 1);
      assert_true(a->site < ms_site_table_count(source->info.sites));
      assert_true(a->thread < source->info.thread_count);
      counts->by_kind[a->kind]++;
    }
    counts->total += batch.count;
    if (visitor && visitor(context, source, &batch)) break;
  }
  ms_batch_free(&batch);
  return source;
}

void lackey_counts(char *const *argv, kind_counts *counts) {
  char log[] = "/tmp/memsnap-lackey-XXXXXX";
  int fd = mkstemp(log);
  assert_true(fd >= 0);
  close(fd);
  int argc = 0;
  while (argv[argc])
    argc++;
  char log_option[64];
  snprintf(log_option, sizeof log_option, "--log-file=%s", log);
  char **args = calloc((size_t)argc + 5, sizeof *args);
  assert_non_null(args);
  int n = 0;
  args[n++] = (char *)"valgrind";
  args[n++] = (char *)"--tool=lackey";
  args[n++] = (char *)"--trace-mem=yes";
  args[n++] = log_option;
  for (int i = 0; i < argc; i++)
    args[n++] = argv[i];
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* the same environment as a capture: the client must run exactly the same path */
    setenv("VALGRIND_LIB", capture_tool_dir(), 1);
    execv(MEMSNAP_VALGRIND, args);
    _exit(127);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  free(args);
  FILE *file = fopen(log, "r");
  assert_non_null(file);
  memset(counts, 0, sizeof *counts);
  char line[256];
  while (fgets(line, sizeof line, file)) {
    if (line[0] != ' ') continue;
    if (line[1] == 'L')
      counts->by_kind[MS_LOAD]++;
    else if (line[1] == 'S')
      counts->by_kind[MS_STORE]++;
    else if (line[1] == 'M')
      counts->by_kind[MS_MODIFY]++;
  }
  fclose(file);
  unlink(log);
  counts->total = counts->by_kind[0] + counts->by_kind[1] + counts->by_kind[2];
  assert_true(counts->total > 0);
}

/* Live capture behaviour: threads, crashes, signals, exit statuses, start failures, and
 * source locations of sites (resolved by libdw). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h> /* after its prerequisites above */

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture_util.h"
#include "memsnap/capture.h"
#include "memsnap_kernels.h"
#include "testutil.h"

static int ends_with(const char *s, const char *suffix) {
  size_t n = s ? strlen(s) : 0, m = strlen(suffix);
  return s && n >= m && strcmp(s + n - m, suffix) == 0;
}

static int site_in_function(const ms_source *source, uint32_t site, const char *function) {
  const ms_site *s = ms_site_table_get(source->info.sites, site);
  return s && s->function && strcmp(s->function, function) == 0;
}

/* (b) threads4: each worker stores 0..N-1 into its own array from `worker`; all four
 * appear as distinct threads, and each one's stores are its array, in order. */
#define THREADS4_N 10000
typedef struct thread_stores {
  uint64_t first[64], next[64], count[64];
  int in_order[64];
} thread_stores;

static void check_threads4(char *const *argv) {
  kind_counts counts;
  ms_source *source = capture_run(argv, &counts, NULL, NULL);
  assert_int_equal(source->info.exit_status, 0);
  assert_true(source->info.thread_count >= 5); /* main + 4 workers */
  ms_source_destroy(source);

  /* second pass: sites are only known to be resolved at the end, so collect raw stores
   * by (site, thread) and classify afterwards */
  thread_stores *stores = calloc(1, sizeof *stores);
  typedef struct {
    uint32_t site;
    uint16_t thread;
    uint64_t address;
  } store;
  size_t capacity = 1 << 16, used = 0;
  store *all = malloc(capacity * sizeof *all);
  assert_non_null(all);
  ms_capture_options options = {.tool_dir = capture_tool_dir(), .quiet = 1};
  int argc = 0;
  while (argv[argc])
    argc++;
  assert_int_equal(ms_capture_open(&options, argc, argv, &source), 0);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  int n;
  while ((n = ms_source_next(source, &batch)) > 0)
    for (size_t i = 0; i < batch.count; i++) {
      const ms_access *a = &batch.accesses[i];
      if (a->kind != MS_STORE || a->size != 8) continue;
      if (used == capacity) all = realloc(all, (capacity *= 2) * sizeof *all);
      all[used++] = (store){a->site, a->thread, a->address};
    }
  assert_int_equal(n, 0);
  ms_batch_free(&batch);
  for (int t = 0; t < 64; t++)
    stores->in_order[t] = 1;
  for (size_t i = 0; i < used; i++) {
    if (!site_in_function(source, all[i].site, "worker")) continue;
    uint16_t t = all[i].thread;
    assert_true(t < 64);
    if (stores->count[t] == 0)
      stores->first[t] = all[i].address;
    else if (all[i].address != stores->next[t])
      stores->in_order[t] = 0;
    stores->next[t] = all[i].address + 8;
    stores->count[t]++;
  }
  int workers = 0;
  for (int t = 0; t < 64; t++) {
    if (stores->count[t] == 0) continue;
    workers++;
    assert_int_equal(stores->count[t], THREADS4_N);
    assert_true(stores->in_order[t]);
    for (int u = 0; u < t; u++) /* distinct arrays */
      if (stores->count[u]) assert_true(stores->first[u] != stores->first[t]);
  }
  assert_int_equal(workers, 4);
  assert_int_equal(stores->count[0], 0); /* main (thread 0) never runs worker */
  free(all);
  free(stores);
  ms_source_destroy(source);
}

static void test_threads4(void **state) {
  (void)state;
  char *argv[] = {(char *)MEMSNAP_KERNEL_THREADS4, NULL};
  check_threads4(argv);
}

/* The same through two wrappers that exec it (sh, then env): the followed image's threads
 * are new threads, but the one that called execve (thread 0, main) */
static void test_threads4_through_exec(void **state) {
  (void)state;
  char script[1024];
  snprintf(script, sizeof script, "exec /usr/bin/env MEMSNAP_TEST=1 %s", MEMSNAP_KERNEL_THREADS4);
  char *argv[] = {(char *)"/bin/sh", (char *)"-c", script, NULL};
  check_threads4(argv);
}

/* (c) a segfault: records up to the crash, truncated, 128 + SIGSEGV */
static void test_segv(void **state) {
  (void)state;
  char *argv[] = {(char *)MEMSNAP_KERNEL_SEGV, (char *)"10000", NULL};
  kind_counts counts;
  ms_source *source = capture_run(argv, &counts, NULL, NULL);
  assert_int_equal(source->info.exit_status, 128 + SIGSEGV);
  assert_true(source->info.flags & MS_STREAM_TRUNCATED);
  assert_true(counts.by_kind[MS_STORE] >= 10000);
  ms_source_destroy(source);
}

/* The child processes of this test process (valgrind keeps its pid across exec). */
static pid_t only_child(void) {
  pid_t found = -1;
  DIR *proc = opendir("/proc");
  assert_non_null(proc);
  struct dirent *entry;
  while ((entry = readdir(proc))) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", entry->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *close_paren = strrchr(buf, ')');
    int ppid;
    char state;
    if (close_paren && sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid() &&
        state != 'Z')
      found = atoi(entry->d_name);
  }
  closedir(proc);
  return found;
}

typedef struct killer {
  int sig;
  uint64_t seen;
  int sent;
} killer;

static int kill_after_some(void *context, ms_source *source, const ms_batch *batch) {
  (void)source;
  killer *k = context;
  k->seen += batch->count;
  if (!k->sent && k->seen > 200000) {
    pid_t child = only_child();
    assert_true(child > 0);
    assert_int_equal(kill(child, k->sig), 0);
    k->sent = 1;
  }
  return 0;
}

static void killed_by(int sig) {
  char *argv[] = {(char *)MEMSNAP_KERNEL_SPIN, (char *)"50", NULL};
  killer k = {.sig = sig};
  kind_counts counts;
  ms_source *source = capture_run(argv, &counts, kill_after_some, &k);
  assert_true(k.sent);
  assert_int_equal(source->info.exit_status, 128 + sig);
  assert_true(source->info.flags & MS_STREAM_TRUNCATED);
  assert_true(counts.total > 200000);
  ms_source_destroy(source);
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no zombie left */
  assert_int_equal(errno, ECHILD);
}

static void test_sigterm(void **state) {
  (void)state;
  killed_by(SIGTERM);
}

static void test_sigkill(void **state) {
  (void)state;
  killed_by(SIGKILL);
}

/* destroy() in the middle of a run kills and reaps the child */
static int stop_at_once(void *context, ms_source *source, const ms_batch *batch) {
  (void)context, (void)source, (void)batch;
  return 1;
}

static void test_destroy_while_running(void **state) {
  (void)state;
  char *argv[] = {(char *)MEMSNAP_KERNEL_SPIN, (char *)"50", NULL};
  kind_counts counts;
  ms_source *source = capture_run(argv, &counts, stop_at_once, NULL);
  assert_true(counts.total > 0);
  ms_source_destroy(source);
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
  assert_int_equal(errno, ECHILD);
}

/* The accesses of the sites whose object is `object`, by kind, in order: a checksum of
 * (kind, size, site function) and the count. */
typedef struct object_accesses {
  const char *object;
  uint64_t count, checksum;
} object_accesses;

static uint64_t hash_text(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; s && *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Sites are resolved at the end of the stream: collect (site, kind, size), classify after. */
static object_accesses count_object(char *const *argv, const char *object, ms_source **out) {
  ms_capture_options options = {.tool_dir = capture_tool_dir(), .quiet = 1};
  int argc = 0;
  while (argv[argc])
    argc++;
  ms_source *source;
  assert_int_equal(ms_capture_open(&options, argc, argv, &source), 0);
  size_t capacity = 1 << 16, used = 0;
  ms_access *all = malloc(capacity * sizeof *all);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  int n;
  while ((n = ms_source_next(source, &batch)) > 0)
    for (size_t i = 0; i < batch.count; i++) {
      if (used == capacity) all = realloc(all, (capacity *= 2) * sizeof *all);
      all[used++] = batch.accesses[i];
    }
  assert_int_equal(n, 0);
  ms_batch_free(&batch);
  object_accesses result = {.object = object};
  for (size_t i = 0; i < used; i++) {
    const ms_site *site = ms_site_table_get(source->info.sites, all[i].site);
    if (!site || !site->object || strcmp(site->object, object) != 0) continue;
    result.count++;
    result.checksum =
        result.checksum * 31 + (all[i].kind * 256u + all[i].size) + hash_text(site->function);
  }
  free(all);
  *out = source;
  return result;
}

/* A wrapper that execs the program (env) is followed into it (--trace-children): the
 * program's own accesses are those of a direct run, in the same order, after the
 * wrapper's; the stream is complete (not truncated) and says so. With no_follow_exec it
 * stops at the exec and says that instead. An exec that fails (no such file) returns: not
 * flagged either way. */
static void test_exec_is_followed(void **state) {
  (void)state;
  char *direct[] = {(char *)MEMSNAP_KERNEL_EXIT3, NULL};
  char *wrapped[] = {(char *)"/usr/bin/env", (char *)"MEMSNAP_TEST=1", (char *)MEMSNAP_KERNEL_EXIT3,
                     NULL};
  ms_source *source;
  object_accesses alone = count_object(direct, MEMSNAP_KERNEL_EXIT3, &source);
  assert_int_equal(source->info.execs, 0);
  assert_false(source->info.flags & MS_STREAM_EXEC_FOLLOWED);
  ms_source_destroy(source);
  object_accesses through = count_object(wrapped, MEMSNAP_KERNEL_EXIT3, &source);
  assert_true(alone.count >= 64);
  assert_int_equal(through.count, alone.count);
  assert_true(through.checksum == alone.checksum);
  assert_int_equal(source->info.exit_status, 3);
  assert_true(source->info.flags & MS_STREAM_EXEC_FOLLOWED);
  assert_false(source->info.flags & (MS_STREAM_EXEC | MS_STREAM_TRUNCATED));
  assert_int_equal(source->info.execs, 1);
  assert_int_equal(source->info.children, 0);
  /* env's own sites come first and stay defined: a site of /usr/bin/env exists */
  int env_sites = 0;
  for (uint32_t i = 0; i < ms_site_table_count(source->info.sites); i++) {
    const ms_site *site = ms_site_table_get(source->info.sites, i);
    env_sites += site->object && ends_with(site->object, "/env");
  }
  assert_true(env_sites > 0);
  ms_source_destroy(source);

  ms_capture_options options = {.tool_dir = capture_tool_dir(), .quiet = 1, .no_follow_exec = 1};
  assert_int_equal(ms_capture_open(&options, 3, wrapped, &source), 0);
  ms_batch batch;
  assert_int_equal(ms_batch_init(&batch, 0), 0);
  uint64_t total = 0;
  int n;
  while ((n = ms_source_next(source, &batch)) > 0)
    total += batch.count;
  assert_int_equal(n, 0);
  ms_batch_free(&batch);
  assert_int_equal(source->info.exit_status, 3);
  assert_true(source->info.flags & MS_STREAM_EXEC);
  assert_true(source->info.flags & MS_STREAM_TRUNCATED);
  assert_false(source->info.flags & MS_STREAM_EXEC_FOLLOWED);
  assert_true(total > 0); /* env's own accesses */
  ms_source_destroy(source);

  /* a setgid program is not followed (Valgrind cannot run it traced) but runs natively,
   * as without following: the stream stops at the exec, and the exit status is its own */
  char setgid_dir[] = "/tmp/memsnap-setgid-XXXXXX", copy[64], script[1024];
  assert_non_null(mkdtemp(setgid_dir));
  snprintf(copy, sizeof copy, "%s/exit3", setgid_dir);
  snprintf(script, sizeof script, "cp '%s' '%s' && chmod 2755 '%s'", MEMSNAP_KERNEL_EXIT3, copy,
           copy);
  assert_int_equal(system(script), 0);
  snprintf(script, sizeof script, "exec %s", copy);
  char *setgid[] = {(char *)"/bin/sh", (char *)"-c", script, NULL};
  kind_counts counts;
  source = capture_run(setgid, &counts, NULL, NULL);
  assert_int_equal(source->info.exit_status, 3);
  assert_true(source->info.flags & MS_STREAM_EXEC);
  assert_false(source->info.flags & MS_STREAM_EXEC_FOLLOWED);
  ms_source_destroy(source);
  unlink(copy);
  rmdir(setgid_dir);

  char *missing[] = {(char *)"/usr/bin/env", (char *)"/nonexistent/memsnap-test", NULL};
  source = capture_run(missing, &counts, NULL, NULL);
  assert_int_equal(source->info.exit_status, 127);
  assert_false(source->info.flags & (MS_STREAM_EXEC | MS_STREAM_EXEC_FOLLOWED));
  assert_false(source->info.flags & MS_STREAM_TRUNCATED);
  ms_source_destroy(source);
}

/* Processes the program starts are counted (not observed); threads are not processes. */
static void test_children_are_counted(void **state) {
  (void)state;
  char script[1024];
  snprintf(script, sizeof script, "%s; %s; true", MEMSNAP_KERNEL_EXIT3, MEMSNAP_KERNEL_EXIT3);
  char *argv[] = {(char *)"/bin/sh", (char *)"-c", script, NULL};
  kind_counts counts;
  ms_source *source = capture_run(argv, &counts, NULL, NULL);
  assert_int_equal(source->info.exit_status, 0);
  assert_int_equal(source->info.children, 2);
  assert_true(source->info.flags & MS_STREAM_CHILDREN);
  assert_false(source->info.flags &
               (MS_STREAM_TRUNCATED | MS_STREAM_EXEC | MS_STREAM_EXEC_FOLLOWED));
  ms_source_destroy(source);

  char *threads[] = {(char *)MEMSNAP_KERNEL_THREADS4, (char *)"100", NULL};
  source = capture_run(threads, &counts, NULL, NULL);
  assert_true(source->info.thread_count >= 5);
  assert_int_equal(source->info.children, 0);
  assert_false(source->info.flags & MS_STREAM_CHILDREN);
  ms_source_destroy(source);
}

/* (d) the exit status passes through */
static void test_exit_status(void **state) {
  (void)state;
  char *argv[] = {(char *)MEMSNAP_KERNEL_EXIT3, NULL};
  kind_counts counts;
  ms_source *source = capture_run(argv, &counts, NULL, NULL);
  assert_int_equal(source->info.exit_status, 3);
  assert_false(source->info.flags & MS_STREAM_TRUNCATED);
  assert_true(counts.by_kind[MS_STORE] >= 64);
  assert_string_equal(source->info.program, MEMSNAP_KERNEL_EXIT3);
  assert_int_equal(source->info.argc, 1);
  ms_source_destroy(source);
}

/* (e) programs that cannot start: MS_ERR_CHILD naming them, no child left behind */
static void test_missing_program(void **state) {
  (void)state;
  ms_capture_options options = {.tool_dir = capture_tool_dir(), .quiet = 1};
  const char *names[] = {"/nonexistent/memsnap-no-such-program", "memsnap-no-such-program",
                         MEMSNAP_KERNEL_DIR_SOURCE};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char *argv[] = {(char *)names[i], NULL};
    ms_source *source = (ms_source *)0x1;
    assert_int_equal(ms_capture_open(&options, 1, argv, &source), MS_ERR_CHILD);
    assert_null(source);
    assert_non_null(strstr(ms_error_message(), names[i]));
  }
  ms_capture_options bad_dir = {.tool_dir = "/nonexistent-tool-dir", .quiet = 1};
  char *argv[] = {(char *)MEMSNAP_KERNEL_EXIT3, NULL};
  ms_source *source = NULL;
  assert_int_equal(ms_capture_open(&bad_dir, 1, argv, &source), MS_ERR_CHILD);
  assert_non_null(strstr(ms_error_message(), "/nonexistent-tool-dir"));
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
}

/* (f) sites carry the kernel's function, file and line (libdw) */
static void test_sites_resolve(void **state) {
  (void)state;
  int loop_line = test_program_line("stream_add.c", "a[i] = b[i] + c[i];");
  assert_true(loop_line > 0);
  char *argv[] = {(char *)MEMSNAP_KERNEL_STREAM_ADD, (char *)"1000", NULL};
  kind_counts counts;
  ms_source *source = capture_run(argv, &counts, NULL, NULL);
  const ms_site_table *sites = source->info.sites;
  int kernel_sites = 0, libc_named = 0;
  for (uint32_t id = 0; id < ms_site_table_count(sites); id++) {
    const ms_site *s = ms_site_table_get(sites, id);
    assert_non_null(s);
    if (s->function && strcmp(s->function, "stream_add") == 0) {
      assert_true(ends_with(s->object, "/stream_add"));
      assert_true(ends_with(s->file, "stream_add.c"));
      /* the loop body, its header, or the closing brace below (ret loads the return
       * address) */
      assert_in_range(s->line, loop_line - 1, loop_line + 1);
      if ((int)s->line == loop_line) kernel_sites++;
    }
    if (s->object && strstr(s->object, "libc.so") && s->function) libc_named++;
  }
  assert_true(kernel_sites >= 3); /* two loads and a store, at least, on the loop's line */
  assert_true(libc_named > 0);
  ms_source_destroy(source);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads4),
      cmocka_unit_test(test_threads4_through_exec),
      cmocka_unit_test(test_segv),
      cmocka_unit_test(test_sigterm),
      cmocka_unit_test(test_sigkill),
      cmocka_unit_test(test_destroy_while_running),
      cmocka_unit_test(test_exit_status),
      cmocka_unit_test(test_exec_is_followed),
      cmocka_unit_test(test_children_are_counted),
      cmocka_unit_test(test_missing_program),
      cmocka_unit_test(test_sites_resolve),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

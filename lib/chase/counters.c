/* Hardware counters through Linux perf_event_open (no library needed): for memsnap bench,
 * cycles, L1D read misses, last-level read misses and cache misses of this thread, user
 * space only; for memsnap skeleton --check, the L1D and last-level reads and read misses of
 * one run of a program (ms_counters_run). A machine or VM without a PMU (or a kernel forbidding it
 * through /proc/sys/kernel/perf_event_paranoid) makes the first open fail: the error says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memsnap/chase.h"
#include "memsnap/error.h"

/* A user-space counter, disabled: of this thread (pid 0), or of process `pid` between its
 * fork and its exec, then enabled by the exec, inherited by its threads and children, and
 * read with the times it ran (for scaling). */
static int open_event(uint32_t type, uint64_t config, pid_t pid) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = type;
  attr.config = config;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  if (pid) {
    attr.enable_on_exec = 1;
    attr.inherit = 1;
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  }
  return (int)syscall(SYS_perf_event_open, &attr, pid, -1, -1, 0);
}

#define CACHE_READ(cache, result)                                                                  \
  ((cache) | (PERF_COUNT_HW_CACHE_OP_READ << 8) | ((uint64_t)(result) << 16))
#define CACHE_READ_MISS(cache) CACHE_READ(cache, PERF_COUNT_HW_CACHE_RESULT_MISS)

int ms_counters_open(ms_counters *counters) {
  static const struct {
    const char *name;
    uint32_t type;
    uint64_t config;
  } events[4] = {
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
      {"L1D read misses", PERF_TYPE_HW_CACHE, CACHE_READ_MISS(PERF_COUNT_HW_CACHE_L1D)},
      {"LLC read misses", PERF_TYPE_HW_CACHE, CACHE_READ_MISS(PERF_COUNT_HW_CACHE_LL)},
      {"cache misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
  };
  memset(counters, 0, sizeof *counters);
  for (int i = 0; i < 4; i++) {
    int fd = open_event(events[i].type, events[i].config, 0);
    if (fd < 0) {
      int error = errno;
      ms_counters_close(counters);
      return ms_error_set(MS_ERR_UNSUPPORTED, "counters unavailable: perf_event_open(%s): %s%s",
                          events[i].name, strerror(error),
                          error == ENOENT || error == EOPNOTSUPP
                              ? " (no hardware performance counters on this machine or VM)"
                          : error == EACCES || error == EPERM
                              ? " (see /proc/sys/kernel/perf_event_paranoid)"
                              : "");
    }
    counters->fds[counters->count] = fd;
    counters->names[counters->count++] = events[i].name;
  }
  return MS_OK;
}

void ms_counters_start(ms_counters *counters) {
  for (int i = 0; i < counters->count; i++) {
    ioctl(counters->fds[i], PERF_EVENT_IOC_RESET, 0);
    ioctl(counters->fds[i], PERF_EVENT_IOC_ENABLE, 0);
  }
}

void ms_counters_stop(ms_counters *counters) {
  for (int i = 0; i < counters->count; i++) {
    ioctl(counters->fds[i], PERF_EVENT_IOC_DISABLE, 0);
    uint64_t value = 0;
    counters->values[i] = read(counters->fds[i], &value, sizeof value) == sizeof value ? value : 0;
  }
}

void ms_counters_close(ms_counters *counters) {
  for (int i = 0; i < counters->count; i++)
    close(counters->fds[i]);
  counters->count = 0;
}

/* ---- one run of a program ---- */

/* The count, scaled by enabled / running time when the kernel multiplexed the counter. */
static uint64_t read_scaled(int fd) {
  uint64_t v[3] = {0, 0, 0};
  if (read(fd, v, sizeof v) != (ssize_t)sizeof v || !v[2]) return 0;
  return v[2] < v[1] ? (uint64_t)((double)v[0] * (double)v[1] / (double)v[2]) : v[0];
}

int ms_counters_run(char *const argv[], int quiet_stdout, ms_program_counters *out) {
  memset(out, 0, sizeof *out);
  int go[2], status_pipe[2];
  if (pipe2(go, O_CLOEXEC) != 0)
    return ms_error_set(MS_ERR_CHILD, "%s: pipe: %s", argv[0], strerror(errno));
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    close(go[0]), close(go[1]);
    return ms_error_set(MS_ERR_CHILD, "%s: pipe: %s", argv[0], strerror(errno));
  }
  pid_t pid = fork();
  if (pid < 0) {
    int error = errno;
    close(go[0]), close(go[1]), close(status_pipe[0]), close(status_pipe[1]);
    return ms_error_set(MS_ERR_CHILD, "%s: fork: %s", argv[0], strerror(error));
  }
  if (pid == 0) { /* wait until the counters are on this process, then exec */
    char byte;
    close(go[1]);
    close(status_pipe[0]);
    if (read(go[0], &byte, 1) != 1) _exit(127);
    if (quiet_stdout) {
      int null = open("/dev/null", O_WRONLY);
      if (null >= 0) dup2(null, STDOUT_FILENO), close(null);
    }
    execvp(argv[0], argv);
    int error = errno;
    ssize_t unused = write(status_pipe[1], &error, sizeof error);
    (void)unused;
    _exit(127);
  }
  close(go[0]);
  close(status_pipe[1]);
  static const struct {
    const char *name;
    uint64_t config;
  } events[4] = {
      {"L1D reads", CACHE_READ(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_RESULT_ACCESS)},
      {"L1D read misses", CACHE_READ(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_RESULT_MISS)},
      {"LLC reads", CACHE_READ(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_RESULT_ACCESS)},
      {"LLC read misses", CACHE_READ(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_RESULT_MISS)},
  };
  int fds[4] = {-1, -1, -1, -1};
  out->have_cache = 1;
  for (int i = 0; i < 4 && out->have_cache; i++)
    if ((fds[i] = open_event(PERF_TYPE_HW_CACHE, events[i].config, pid)) < 0) {
      int error = errno;
      out->have_cache = 0;
      snprintf(out->cache_why, sizeof out->cache_why, "perf_event_open(%s): %s%s", events[i].name,
               strerror(error),
               error == ENOENT || error == EOPNOTSUPP
                   ? " (no hardware performance counters on this machine or VM)"
               : error == EACCES || error == EPERM ? " (see /proc/sys/kernel/perf_event_paranoid)"
                                                   : "");
    }
  if (write(go[1], "g", 1) != 1) { /* the child is gone already */
  }
  close(go[1]);
  int exec_error = 0;
  ssize_t got = read(status_pipe[0], &exec_error, sizeof exec_error);
  close(status_pipe[0]);
  int wait_status = 0;
  struct rusage usage;
  memset(&usage, 0, sizeof usage);
  while (wait4(pid, &wait_status, 0, &usage) < 0 && errno == EINTR) {
  }
  uint64_t values[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; i++)
    if (fds[i] >= 0) values[i] = read_scaled(fds[i]), close(fds[i]);
  if (got == (ssize_t)sizeof exec_error)
    return ms_error_set(MS_ERR_CHILD, "%s: cannot run it: %s", argv[0], strerror(exec_error));
  if (out->have_cache) {
    out->l1d_reads = values[0], out->l1d_misses = values[1];
    out->ll_reads = values[2], out->ll_misses = values[3];
  }
  out->cpu_seconds = (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 +
                     (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
  out->exit_status = WIFEXITED(wait_status)     ? WEXITSTATUS(wait_status)
                     : WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status)
                                                : 1;
  return MS_OK;
}

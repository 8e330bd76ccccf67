/* Hardware counters for memsnap bench through Linux perf_event_open (no library needed):
 * cycles, L1D read misses, last-level read misses and cache misses of this thread,
 * user space only. A machine or VM without a PMU (or a kernel forbidding it through
 * /proc/sys/kernel/perf_event_paranoid) makes the first open fail: the error says why.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memsnap/chase.h"
#include "memsnap/error.h"

static int open_event(uint32_t type, uint64_t config) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = type;
  attr.config = config;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

#define CACHE_READ_MISS(cache)                                                                     \
  ((cache) | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16))

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
    int fd = open_event(events[i].type, events[i].config);
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

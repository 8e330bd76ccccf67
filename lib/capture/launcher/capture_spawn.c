/* Live capture (see memsnap/capture.h): starting the program, under memsnap's Valgrind
 * tool or natively with the compiler runtime (lib/capture/rt), with the channel's
 * descriptors and its environment; capture_decode.c reads the channel.
 *
 * ms_capture_open starts
 *     VALGRIND_LIB=<tool dir> valgrind --tool=memsnap [-q] --memsnap-fd=N --memsnap-shm=M
 *         --memsnap-credit=C --memsnap-slots=S PROGRAM ARGS
 * waits for the tool's HELLO (so that a Valgrind that cannot start is reported at open, as
 * MS_ERR_CHILD), and returns a source that turns the tool's records into access batches.
 * The tool's records then reach the source through a pipe, a memfd of slots and a credit
 * socket (capture_decode.c).
 *
 * The compiler runtime (lib/capture/rt) speaks the same protocol: with --via=rt the program
 * itself is started, with MEMSNAP_RT_CHANNEL=N,M,C (and MEMSNAP_SAMPLE=ON/OFF) in its
 * environment, and its runtime sends HELLO from a constructor; ms_capture_attach reads a
 * channel that a runtime opened itself (MEMSNAP_OUT).
 */
#include "memsnap/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture_internal.h"
#include "memsnap/error.h"

#define TOOL_NAME "memsnap-amd64-linux"

extern char **environ;

/* Signals while a program runs, as system() and `perf record` have them: an interrupt or
 * quit from the terminal reaches the whole process group, so memsnap ignores it and lets the
 * program decide; a termination or hangup sent to memsnap alone (`timeout 600 memsnap
 * record ...`, a batch system's time limit) is passed on to the program. Either way the
 * stream then ends with the program's death, and the command writes what it observed
 * (truncated) instead of dying with a temporary file left behind. */
#define FORWARD_SLOTS 8
static volatile pid_t forward_pids[FORWARD_SLOTS];
static int forward_count;
static struct sigaction forward_saved[4];
static const int forward_signals[4] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};

static void forward_signal(int signo) {
  int saved = errno;
  for (int i = 0; i < FORWARD_SLOTS; i++) {
    pid_t pid = forward_pids[i];
    if (pid > 0) kill(pid, signo);
  }
  errno = saved;
}

static void forward_begin(capture_source *cs) {
  int slot = 0;
  while (slot < FORWARD_SLOTS && forward_pids[slot] > 0)
    slot++;
  if (cs->pid <= 0 || slot == FORWARD_SLOTS) return;
  forward_pids[slot] = cs->pid;
  cs->forwarding = 1;
  if (forward_count++ > 0) return;
  struct sigaction forward = {.sa_handler = forward_signal, .sa_flags = SA_RESTART};
  struct sigaction ignore = {.sa_handler = SIG_IGN};
  sigemptyset(&forward.sa_mask);
  sigemptyset(&ignore.sa_mask);
  for (int i = 0; i < 4; i++)
    sigaction(forward_signals[i], i < 2 ? &forward : &ignore, &forward_saved[i]);
}

static void forward_end(capture_source *cs, pid_t pid) {
  if (!cs->forwarding) return;
  cs->forwarding = 0;
  for (int i = 0; i < FORWARD_SLOTS; i++)
    if (forward_pids[i] == pid) forward_pids[i] = 0;
  if (--forward_count > 0) return;
  for (int i = 0; i < 4; i++)
    sigaction(forward_signals[i], &forward_saved[i], NULL);
}

void capture_wait_child(capture_source *cs, int *status) {
  *status = 0;
  const pid_t pid = cs->pid;
  while (cs->pid > 0) {
    pid_t r = waitpid(cs->pid, status, 0);
    if (r == cs->pid || (r < 0 && errno != EINTR)) {
      if (r < 0) *status = -1;
      cs->pid = -1;
    }
  }
  forward_end(cs, pid);
}

static int is_executable_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The program's path as execve wants it: argv[0] itself if it names a path, else the first
 * match in $PATH. Fails with MS_ERR_CHILD naming the program. */
static int find_program(const char *name, char **out) {
  if (!name || !*name) return ms_error_set(MS_ERR_CHILD, "no program to observe");
  if (strchr(name, '/')) {
    struct stat st;
    if (stat(name, &st) != 0)
      return ms_error_set(MS_ERR_CHILD, "%s: cannot start program: %s", name, strerror(errno));
    if (!S_ISREG(st.st_mode) || access(name, X_OK) != 0)
      return ms_error_set(MS_ERR_CHILD, "%s: cannot start program: not an executable file", name);
    *out = strdup(name);
    return *out ? MS_OK : ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    const char *colon = strchr(path, ':');
    size_t length = colon ? (size_t)(colon - path) : strlen(path);
    char candidate[PATH_MAX];
    int n = snprintf(candidate, sizeof candidate, "%.*s/%s", (int)(length ? length : 1),
                     length ? path : ".", name);
    if (n > 0 && (size_t)n < sizeof candidate && is_executable_file(candidate)) {
      *out = strdup(candidate);
      return *out ? MS_OK : ms_error_set(MS_ERR_NOMEM, "out of memory");
    }
    path += length + (colon ? 1 : 0);
  }
  return ms_error_set(MS_ERR_CHILD, "%s: cannot start program: not found in PATH", name);
}

static int tool_dir_ok(const char *dir) {
  char path[PATH_MAX];
  int n = snprintf(path, sizeof path, "%s/%s", dir, TOOL_NAME);
  return n > 0 && (size_t)n < sizeof path && is_executable_file(path);
}

/* options->tool_dir, $MEMSNAP_VALGRIND_LIB, the installed folder beside the running
 * executable, the build tree; the first one given (or, for the last two, present) wins. */
static int find_tool_dir(const ms_capture_options *options, char *out, size_t size) {
  const char *given =
      options && options->tool_dir ? options->tool_dir : getenv("MEMSNAP_VALGRIND_LIB");
  if (given && *given) {
    if (!tool_dir_ok(given))
      return ms_error_set(MS_ERR_CHILD, "%s: no memsnap Valgrind tool (%s) in this folder", given,
                          TOOL_NAME);
    snprintf(out, size, "%s", given);
    return MS_OK;
  }
#ifdef MEMSNAP_INSTALL_VALGRIND_LIB_FROM_BIN
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      int m = snprintf(out, size, "%s/%s", self, MEMSNAP_INSTALL_VALGRIND_LIB_FROM_BIN);
      if (m > 0 && (size_t)m < size && tool_dir_ok(out)) return MS_OK;
    }
  }
#endif
#ifdef MEMSNAP_BUILD_VALGRIND_LIB
  if (tool_dir_ok(MEMSNAP_BUILD_VALGRIND_LIB)) {
    snprintf(out, size, "%s", MEMSNAP_BUILD_VALGRIND_LIB);
    return MS_OK;
  }
#endif
  return ms_error_set(MS_ERR_CHILD,
                      "the memsnap Valgrind tool (%s) is not installed: set MEMSNAP_VALGRIND_LIB",
                      TOOL_NAME);
}

/* environ plus VALGRIND_LIB=dir (replacing any other), built before fork. */
static char **child_environment(const char *tool_dir) {
  size_t count = 0;
  while (environ && environ[count])
    count++;
  char **env = calloc(count + 2, sizeof *env);
  size_t length = strlen("VALGRIND_LIB=") + strlen(tool_dir) + 1;
  char *entry = malloc(length);
  if (!env || !entry) {
    free(env);
    free(entry);
    return NULL;
  }
  snprintf(entry, length, "VALGRIND_LIB=%s", tool_dir);
  size_t n = 0;
  env[n++] = entry;
  for (size_t i = 0; i < count; i++)
    if (strncmp(environ[i], "VALGRIND_LIB=", 13) != 0) env[n++] = environ[i];
  env[n] = NULL;
  return env;
}

/* fork + execve; the exec's errno comes back through a close-on-exec pipe. */
static int spawn(const char *executable, char *const *argv, char **env, const int *inherit,
                 int inherit_count, pid_t *pid_out) {
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0)
    return ms_error_set(MS_ERR_CHILD, "pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    int saved = errno;
    close(status_pipe[0]);
    close(status_pipe[1]);
    return ms_error_set(MS_ERR_CHILD, "fork: %s", strerror(saved));
  }
  if (pid == 0) {
    /* the channel's descriptors are the only ones the tool must inherit */
    for (int i = 0; i < inherit_count; i++)
      fcntl(inherit[i], F_SETFD, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    execve(executable, argv, env);
    int error = errno;
    ssize_t ignored = write(status_pipe[1], &error, sizeof error);
    (void)ignored;
    _exit(127);
  }
  close(status_pipe[1]);
  int error = 0;
  ssize_t n;
  do
    n = read(status_pipe[0], &error, sizeof error);
  while (n < 0 && errno == EINTR);
  close(status_pipe[0]);
  if (n == (ssize_t)sizeof error) {
    waitpid(pid, NULL, 0);
    return ms_error_set(MS_ERR_CHILD, "cannot run %s: %s", executable, strerror(error));
  }
  *pid_out = pid;
  return MS_OK;
}

static int init_info(capture_source *cs, int argc, char *const *argv, const char *program,
                     const char *capture, const ms_capture_options *options) {
  ms_stream_info *info = &cs->base.info;
  info->exit_status = -1;
  info->sites = ms_site_table_new();
  info->capture = strdup(capture);
  if (options && options->sample_on > 0 && options->sample_off > 0) {
    info->flags |= MS_STREAM_SAMPLED;
    info->sample_on = options->sample_on;
    info->sample_off = options->sample_off;
  }
  info->arch = strdup("amd64");
  if (!info->sites || !info->capture || !info->arch)
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  return ms_stream_info_set_program(info, program, argc, argv);
}

int ms_capture_has_rt(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ms_error_set(MS_ERR_IO, "%s: %s", path, strerror(errno));
  elf_version(EV_CURRENT);
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  int found = 0;
  size_t names;
  if (elf && elf_kind(elf) == ELF_K_ELF && elf_getshdrstrndx(elf, &names) == 0) {
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn && !found; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr header;
      const char *name = gelf_getshdr(scn, &header) ? elf_strptr(elf, names, header.sh_name) : NULL;
      found = name && strcmp(name, ".memsnap_rt") == 0;
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  return found;
}

/* environ without MEMSNAP_OUT, MEMSNAP_RT_CHANNEL and MEMSNAP_SAMPLE, plus the channel (and
 * the sampling) for the runtime; entries 0 and 1 are allocated here. */
static char **rt_environment(int notice_fd, int shm_fd, int credit_fd,
                             const ms_capture_options *options) {
  size_t count = 0;
  while (environ && environ[count])
    count++;
  char **env = calloc(count + 4, sizeof *env);
  char *channel = malloc(64), *sample = malloc(80);
  if (!env || !channel || !sample) {
    free(env);
    free(channel);
    free(sample);
    return NULL;
  }
  /* MEMSNAP_OBJECTS: the runtime's allocation wrappers record (memsnap record --objects);
   * an inherited value is replaced, as MEMSNAP_SAMPLE is */
  static char objects_on[] = "MEMSNAP_OBJECTS=1", objects_off[] = "MEMSNAP_OBJECTS=";
  snprintf(channel, 64, "MEMSNAP_RT_CHANNEL=%d,%d,%d", notice_fd, shm_fd, credit_fd);
  if (options && options->sample_on > 0 && options->sample_off > 0)
    snprintf(sample, 80, "MEMSNAP_SAMPLE=%llu/%llu", (unsigned long long)options->sample_on,
             (unsigned long long)options->sample_off);
  else
    snprintf(sample, 80, "MEMSNAP_SAMPLE=");
  size_t n = 0;
  env[n++] = channel;
  env[n++] = sample;
  env[n++] = options && options->objects ? objects_on : objects_off;
  for (size_t i = 0; i < count; i++)
    if (strncmp(environ[i], "MEMSNAP_OUT=", 12) != 0 &&
        strncmp(environ[i], "MEMSNAP_OBJECTS=", 16) != 0 &&
        strncmp(environ[i], "MEMSNAP_RT_CHANNEL=", 19) != 0 &&
        strncmp(environ[i], "MEMSNAP_SAMPLE=", 15) != 0)
      env[n++] = environ[i];
  env[n] = NULL;
  return env;
}

int ms_capture_attach(int notice_fd, int shm_fd, int credit_fd, const ms_capture_options *options,
                      int argc, char *const *argv, ms_source **out) {
  *out = NULL;
  capture_source *cs = argc >= 1 && argv && argv[0] ? capture_new_source() : NULL;
  if (!cs) {
    close(notice_fd);
    close(shm_fd);
    close(credit_fd);
    return argc >= 1 && argv && argv[0] ? ms_error_set(MS_ERR_NOMEM, "out of memory")
                                        : ms_error_set(MS_ERR_ARG, "no program named");
  }
  cs->fd = notice_fd;
  cs->credit_fd = credit_fd;
  cs->attached = 1;
  fcntl(notice_fd, F_SETFD, FD_CLOEXEC);
  fcntl(credit_fd, F_SETFD, FD_CLOEXEC);
  int rc = init_info(cs, argc, argv, argv[0], "rt", options);
  cs->capture_objects = options && options->objects;
  if (rc == 0) {
    void *map = mmap(NULL, (size_t)SLOT_COUNT * SLOT_BYTES, PROT_READ, MAP_SHARED, shm_fd, 0);
    if (map == MAP_FAILED)
      rc = ms_error_set(MS_ERR_CHILD, "capture shared memory: %s", strerror(errno));
    else
      cs->slots = map;
  }
  close(shm_fd);
  if (rc == 0) rc = capture_expect_hello(cs, argv[0]);
  if (rc < 0) {
    capture_destroy(&cs->base);
    return rc;
  }
  *out = &cs->base;
  return MS_OK;
}

int ms_capture_open(const ms_capture_options *options, int argc, char *const *argv,
                    ms_source **out) {
  *out = NULL;
  if (argc < 1 || !argv || !argv[0]) return ms_error_set(MS_ERR_ARG, "no program to observe");
  char *program = NULL;
  int rc = find_program(argv[0], &program);
  if (rc < 0) return rc;
  ms_capture_via via = options ? options->via : MS_CAPTURE_AUTO;
  if (via == MS_CAPTURE_AUTO)
    via = ms_capture_has_rt(program) > 0 ? MS_CAPTURE_RT : MS_CAPTURE_VALGRIND;
  char tool_dir[PATH_MAX];
  rc = via == MS_CAPTURE_RT ? MS_OK : find_tool_dir(options, tool_dir, sizeof tool_dir);
  if (rc < 0) {
    free(program);
    return rc;
  }
  capture_source *cs = capture_new_source();
  if (!cs) {
    free(program);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  rc = init_info(cs, argc, argv, program, via == MS_CAPTURE_RT ? "rt" : "valgrind", options);
  cs->sampling = via == MS_CAPTURE_VALGRIND && (cs->base.info.flags & MS_STREAM_SAMPLED);
  cs->capture_objects = options && options->objects;

  int channel[2] = {-1, -1}, credit[2] = {-1, -1}, log[2] = {-1, -1}, shm = -1;
  char **env = NULL;
  char **child_argv = NULL;
  /* for the runtime, the notice channel is a socket too: its writes use MSG_NOSIGNAL, so
   * that a memsnap that died gives the program EPIPE, not SIGPIPE */
  if (rc == 0 && via == MS_CAPTURE_RT &&
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0)
    rc = ms_error_set(MS_ERR_CHILD, "capture channel: %s", strerror(errno));
  if (rc == 0 &&
      ((via != MS_CAPTURE_RT && (pipe2(channel, O_CLOEXEC) != 0 || pipe2(log, O_CLOEXEC) != 0)) ||
       socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, credit) != 0))
    rc = ms_error_set(MS_ERR_CHILD, "capture channel: %s", strerror(errno));
  if (rc == 0) {
    shm = memfd_create("memsnap-capture", MFD_CLOEXEC);
    size_t bytes = (size_t)SLOT_COUNT * SLOT_BYTES;
    void *map = MAP_FAILED;
    if (shm >= 0 && ftruncate(shm, (off_t)bytes) == 0)
      map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, shm, 0);
    if (map == MAP_FAILED)
      rc = ms_error_set(MS_ERR_CHILD, "capture shared memory: %s", strerror(errno));
    else
      cs->slots = map;
  }
  if (rc == 0) {
    env = via == MS_CAPTURE_RT ? rt_environment(channel[1], shm, credit[1], options)
                               : child_environment(tool_dir);
    child_argv = calloc((size_t)argc + 12, sizeof *child_argv);
    if (!env || !child_argv) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  char options_text[5][40];
  if (rc == 0 && via == MS_CAPTURE_RT) {
    for (int i = 0; i < argc; i++)
      child_argv[i] = argv[i];
    child_argv[argc] = NULL;
    int inherit[3] = {channel[1], shm, credit[1]};
    rc = spawn(program, child_argv, env, inherit, 3, &cs->pid);
  } else if (rc == 0) {
    snprintf(options_text[0], sizeof options_text[0], "--memsnap-fd=%d", channel[1]);
    snprintf(options_text[1], sizeof options_text[1], "--memsnap-shm=%d", shm);
    snprintf(options_text[2], sizeof options_text[2], "--memsnap-credit=%d", credit[1]);
    snprintf(options_text[3], sizeof options_text[3], "--memsnap-slots=%d", SLOT_COUNT);
    /* Valgrind's own messages come here, not to the program's standard error: Valgrind
     * moves the descriptor out of the program's reach and keeps it across followed execs */
    snprintf(options_text[4], sizeof options_text[4], "--log-fd=%d", log[1]);
    int n = 0;
    child_argv[n++] = (char *)"valgrind";
    /* memsnapobj is the same tool under a second name, the one with a preload library
     * (Valgrind loads VALGRIND_LIB/vgpreload_TOOL-PLATFORM.so when it exists): the
     * allocation wrappers */
    int objects = options && options->objects;
    child_argv[n++] = (char *)(objects ? "--tool=memsnapobj" : "--tool=memsnap");
    if (objects) child_argv[n++] = (char *)"--memsnap-objects=yes";
    if (!options || options->quiet) child_argv[n++] = (char *)"-q";
    if (!options || !options->no_follow_exec) child_argv[n++] = (char *)"--trace-children=yes";
    for (int i = 0; i < 5; i++)
      child_argv[n++] = options_text[i];
    child_argv[n++] = program;
    for (int i = 1; i < argc; i++)
      child_argv[n++] = argv[i];
    child_argv[n] = NULL;
    int inherit[4] = {channel[1], shm, credit[1], log[1]};
    rc = spawn(MEMSNAP_VALGRIND_EXECUTABLE, child_argv, env, inherit, 4, &cs->pid);
  }
  if (env) free(env[0]);
  if (env && via == MS_CAPTURE_RT) free(env[1]);
  free(env);
  free(child_argv);
  if (channel[1] >= 0) close(channel[1]);
  if (credit[1] >= 0) close(credit[1]);
  if (log[1] >= 0) close(log[1]);
  if (shm >= 0) close(shm);
  cs->fd = channel[0];
  cs->log_fd = log[0];
  if (options) {
    cs->log_to = options->tool_messages;
    cs->log_context = options->tool_messages_context;
  }
  cs->credit_fd = credit[0];
  if (rc == 0) forward_begin(cs);
  if (rc == 0) rc = capture_expect_hello(cs, program);
  free(program);
  if (rc < 0) {
    capture_destroy(&cs->base);
    return rc;
  }
  *out = &cs->base;
  return MS_OK;
}

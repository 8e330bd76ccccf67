/* Inputs that are streams (see memsnap/input.h).
 *
 * A stream is opened on its first use and kept, by path, in a process-wide list. Its
 * states:
 * - OPEN: looked at, not read. `head` holds every byte read so far (peeks extend it).
 * - READING: handed to one reader (ms_input_open), which gets `head` and then the rest of
 *   the descriptor; DONE once that reader closed it.
 * - SPOOLED: copied whole to an unlinked temporary file (ms_input_open_seekable), which
 *   every later peek or open reads, at any offset (pread). Standard input redirected from
 *   a regular file (`memsnap sim - < t.mtr`) is that file already: no copy.
 * Regular files never enter the list: they are opened anew each time, as fopen() would.
 */
#include "memsnap/input.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "memsnap/error.h"

/* Looks at a stream beyond this many bytes are refused: detection needs far less (the
 * largest, a compressed profile's first zstd block, is at most 128 KiB). */
#define MAX_HEAD_BYTES ((size_t)4 << 20)

enum { STREAM_OPEN, STREAM_READING, STREAM_DONE, STREAM_SPOOLED };

typedef struct stream {
  struct stream *next;
  char *path;
  int state;
  int fd;       /* OPEN, READING: the stream */
  int spool_fd; /* SPOOLED: the copy */
  int eof;      /* the descriptor said end of file */
  unsigned char *head;
  size_t head_size, head_capacity;
  uint64_t bytes; /* read from the descriptor so far */
} stream;

static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static stream *streams;
static void (*wait_notice)(const char *name);

void ms_input_set_wait_notice(void (*notice)(const char *name)) { wait_notice = notice; }

const char *ms_input_name(const char *path) {
  return strcmp(path, "-") == 0 ? "standard input" : path;
}

int ms_input_is_stream(const char *path) {
  if (strcmp(path, "-") == 0) return 1;
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISBLK(st.st_mode);
}

static int already_read(const char *path) {
  return ms_error_set(MS_ERR_ARG,
                      "%s: already read: a stream (standard input, a pipe, a FIFO) is read "
                      "once; save it to a file to read it twice",
                      ms_input_name(path));
}

/* ---- Opening a stream ----------------------------------------------------------------- */

typedef struct fifo_watch {
  pthread_mutex_t lock;
  pthread_cond_t done_cond;
  int done;
  const char *name;
  void (*notice)(const char *name);
} fifo_watch;

static void *watch_fifo(void *arg) {
  fifo_watch *w = arg;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 1;
  pthread_mutex_lock(&w->lock);
  while (!w->done && pthread_cond_timedwait(&w->done_cond, &w->lock, &until) != ETIMEDOUT) {
  }
  int waiting = !w->done;
  pthread_mutex_unlock(&w->lock);
  if (waiting) w->notice(w->name);
  return NULL;
}

/* open() of a FIFO blocks until something opens it for writing: that is what a reader of
 * a FIFO wants (the writer is often started after it), but never silently. */
static int open_fifo(const char *path) {
  fifo_watch w = {.name = path, .notice = wait_notice};
  pthread_t thread;
  int watching = 0;
  if (w.notice) {
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.done_cond, NULL);
    watching = pthread_create(&thread, NULL, watch_fifo, &w) == 0;
    if (!watching) {
      pthread_mutex_destroy(&w.lock);
      pthread_cond_destroy(&w.done_cond);
    }
  }
  int fd;
  do
    fd = open(path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  int saved = errno;
  if (watching) {
    pthread_mutex_lock(&w.lock);
    w.done = 1;
    pthread_cond_signal(&w.done_cond);
    pthread_mutex_unlock(&w.lock);
    pthread_join(thread, NULL);
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.done_cond);
  }
  errno = saved;
  return fd;
}

/* The stream of `path` in *out, opened on first use; or a negative status. Called with
 * streams_lock held. */
static int find_stream(const char *path, stream **out) {
  for (stream *s = streams; s; s = s->next)
    if (strcmp(s->path, path) == 0) {
      *out = s;
      return MS_OK;
    }
  *out = NULL;
  stream *s = calloc(1, sizeof *s);
  if (!s || !(s->path = strdup(path))) {
    free(s);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  s->fd = s->spool_fd = -1;
  int rc = MS_OK;
  if (strcmp(path, "-") == 0) {
    struct stat st;
    if (isatty(STDIN_FILENO)) {
      rc = ms_error_set(MS_ERR_ARG, "standard input is a terminal: pipe the data into memsnap "
                                    "(... | memsnap COMMAND -) or name a file");
    } else if ((s->fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)) < 0) {
      rc = ms_error_set(MS_ERR_IO, "standard input: cannot open: %s", strerror(errno));
    } else if (fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(s->fd, 0, SEEK_CUR) == 0) {
      s->spool_fd = s->fd; /* `< file`: the file itself, from its start */
      s->fd = -1;
      s->state = STREAM_SPOOLED;
    }
  } else {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
      s->fd = open_fifo(path);
    else
      s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) rc = ms_error_set(MS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  if (rc < 0) {
    free(s->path);
    free(s);
    return rc;
  }
  s->next = streams;
  streams = s;
  *out = s;
  return MS_OK;
}

/* read() that retries interrupted calls. */
static ssize_t read_some(int fd, void *buf, size_t size) {
  ssize_t n;
  do
    n = read(fd, buf, size);
  while (n < 0 && errno == EINTR);
  return n;
}

/* Reads an OPEN stream until `head` holds `size` bytes or the stream ends. */
static int fill_head(stream *s, size_t size) {
  if (size > MAX_HEAD_BYTES)
    return ms_error_set(MS_ERR_ARG, "%s: cannot look %zu bytes ahead in a stream",
                        ms_input_name(s->path), size);
  if (size > s->head_capacity) {
    size_t capacity = s->head_capacity ? s->head_capacity : 4096;
    while (capacity < size)
      capacity *= 2;
    unsigned char *head = realloc(s->head, capacity);
    if (!head) return ms_error_set(MS_ERR_NOMEM, "out of memory");
    s->head = head;
    s->head_capacity = capacity;
  }
  while (s->head_size < size && !s->eof) {
    ssize_t n = read_some(s->fd, s->head + s->head_size, s->head_capacity - s->head_size);
    if (n < 0)
      return ms_error_set(MS_ERR_IO, "%s: read failed: %s", ms_input_name(s->path),
                          strerror(errno));
    if (n == 0) s->eof = 1;
    s->head_size += (size_t)n;
    s->bytes += (uint64_t)n;
  }
  return MS_OK;
}

static int read_spool_at(const stream *s, uint64_t offset, void *buf, size_t size, size_t *got) {
  *got = 0;
  while (*got < size) {
    ssize_t n = pread(s->spool_fd, (char *)buf + *got, size - *got, (off_t)(offset + *got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return ms_error_set(MS_ERR_IO, "%s: read failed: %s", ms_input_name(s->path),
                          strerror(errno));
    if (n == 0) break;
    *got += (size_t)n;
  }
  return MS_OK;
}

/* ---- Peeking -------------------------------------------------------------------------- */

static int peek_file(const char *path, uint64_t offset, void *buf, size_t size, size_t *got) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ms_error_set(MS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  stream file = {.path = (char *)path, .spool_fd = fd};
  int rc = read_spool_at(&file, offset, buf, size, got);
  close(fd);
  return rc;
}

static int peek_stream(stream *s, uint64_t offset, void *buf, size_t size, size_t *got) {
  if (s->state == STREAM_SPOOLED) return read_spool_at(s, offset, buf, size, got);
  int rc = MS_OK;
  if (s->state == STREAM_OPEN)
    rc = offset > MAX_HEAD_BYTES ? fill_head(s, MAX_HEAD_BYTES + 1)
                                 : fill_head(s, (size_t)offset + size);
  else if (s->state == STREAM_DONE || offset + size > s->head_size)
    rc = already_read(s->path); /* READING: what is still in head only */
  if (rc == 0 && offset < s->head_size) {
    *got = s->head_size - (size_t)offset < size ? s->head_size - (size_t)offset : size;
    memcpy(buf, s->head + offset, *got);
  }
  return rc;
}

int ms_input_peek(const char *path, uint64_t offset, void *buf, size_t size, size_t *got) {
  *got = 0;
  if (!ms_input_is_stream(path)) return peek_file(path, offset, buf, size, got);
  pthread_mutex_lock(&streams_lock);
  stream *s;
  int rc = find_stream(path, &s);
  if (rc == 0) rc = peek_stream(s, offset, buf, size, got);
  pthread_mutex_unlock(&streams_lock);
  return rc;
}

/* ---- Reading in order ----------------------------------------------------------------- */

typedef struct stream_reader {
  stream *s;
  size_t head_position; /* READING: the next byte of head to give */
  uint64_t offset;      /* SPOOLED: the next offset */
} stream_reader;

static ssize_t stream_read(void *cookie, char *buf, size_t size) {
  stream_reader *r = cookie;
  stream *s = r->s;
  if (s->state == STREAM_SPOOLED) {
    size_t got;
    if (read_spool_at(s, r->offset, buf, size, &got) < 0) return -1;
    r->offset += got;
    return (ssize_t)got;
  }
  if (r->head_position < s->head_size) {
    size_t n = s->head_size - r->head_position < size ? s->head_size - r->head_position : size;
    memcpy(buf, s->head + r->head_position, n);
    r->head_position += n;
    return (ssize_t)n;
  }
  if (s->eof) return 0;
  ssize_t n = read_some(s->fd, buf, size);
  if (n > 0) s->bytes += (uint64_t)n;
  if (n == 0) s->eof = 1;
  return n;
}

static int stream_close(void *cookie) {
  stream_reader *r = cookie;
  stream *s = r->s;
  pthread_mutex_lock(&streams_lock);
  if (s->state == STREAM_READING) {
    close(s->fd);
    s->fd = -1;
    free(s->head);
    s->head = NULL;
    s->head_size = s->head_capacity = 0;
    s->state = STREAM_DONE;
  }
  pthread_mutex_unlock(&streams_lock);
  free(r);
  return 0;
}

static FILE *stream_file(stream *s) {
  stream_reader *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->s = s;
  FILE *file =
      fopencookie(r, "rb", (cookie_io_functions_t){.read = stream_read, .close = stream_close});
  if (!file) free(r);
  return file;
}

static int open_file(const char *path, FILE **out) {
  *out = fopen(path, "rb");
  return *out ? MS_OK : ms_error_set(MS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
}

int ms_input_open(const char *path, FILE **out) {
  *out = NULL;
  if (!ms_input_is_stream(path)) return open_file(path, out);
  pthread_mutex_lock(&streams_lock);
  stream *s;
  int rc = find_stream(path, &s);
  if (rc == 0 && (s->state == STREAM_READING || s->state == STREAM_DONE)) rc = already_read(path);
  if (rc == 0 && !(*out = stream_file(s))) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
  if (rc == 0 && s->state == STREAM_OPEN) s->state = STREAM_READING;
  pthread_mutex_unlock(&streams_lock);
  return rc;
}

/* ---- Copying a stream to a temporary file --------------------------------------------- */

static int write_all(int fd, const void *data, size_t size) {
  for (size_t done = 0; done < size;) {
    ssize_t n = write(fd, (const char *)data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    done += (size_t)n;
  }
  return 0;
}

/* Copies an OPEN stream (its head, then the rest of the descriptor) to an unlinked
 * temporary file and makes it SPOOLED. A failure leaves it DONE: part of it is gone. */
static int spool(stream *s) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  const char *name = ms_input_name(s->path);
  size_t length = strlen(dir) + 32;
  char *temp = malloc(length);
  unsigned char *buffer = malloc(1 << 20);
  if (!temp || !buffer) {
    free(temp);
    free(buffer);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  snprintf(temp, length, "%s/memsnap-input-XXXXXX", dir);
  int fd = mkostemp(temp, O_CLOEXEC);
  if (fd < 0) {
    int rc = ms_error_set(MS_ERR_IO, "%s: cannot make a temporary copy in %s: %s", name, dir,
                          strerror(errno));
    free(temp);
    free(buffer);
    return rc;
  }
  unlink(temp);
  free(temp);
  int rc = MS_OK;
  if (write_all(fd, s->head, s->head_size) < 0)
    rc = ms_error_set(MS_ERR_IO, "%s: cannot write its temporary copy in %s: %s", name, dir,
                      strerror(errno));
  while (rc == 0 && !s->eof) {
    ssize_t n = read_some(s->fd, buffer, 1 << 20);
    if (n < 0)
      rc = ms_error_set(MS_ERR_IO, "%s: read failed: %s", name, strerror(errno));
    else if (n == 0)
      s->eof = 1;
    else if (write_all(fd, buffer, (size_t)n) < 0)
      rc = ms_error_set(MS_ERR_IO, "%s: cannot write its temporary copy in %s: %s", name, dir,
                        strerror(errno));
    if (n > 0) s->bytes += (uint64_t)n;
  }
  free(buffer);
  close(s->fd);
  s->fd = -1;
  free(s->head);
  s->head = NULL;
  s->head_size = s->head_capacity = 0;
  if (rc < 0) {
    close(fd);
    s->state = STREAM_DONE;
    return rc;
  }
  s->spool_fd = fd;
  s->state = STREAM_SPOOLED;
  return MS_OK;
}

int ms_input_open_seekable(const char *path, FILE **out) {
  *out = NULL;
  if (!ms_input_is_stream(path)) return open_file(path, out);
  pthread_mutex_lock(&streams_lock);
  stream *s;
  int rc = find_stream(path, &s);
  if (rc == 0 && (s->state == STREAM_READING || s->state == STREAM_DONE)) rc = already_read(path);
  if (rc == 0 && s->state == STREAM_OPEN) rc = spool(s);
  if (rc == 0) {
    /* a description of its own: the caller may read at its own offsets */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", s->spool_fd);
    int fd = open(self, O_RDONLY | O_CLOEXEC);
    if (fd < 0) fd = fcntl(s->spool_fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0 || !(*out = fdopen(fd, "rb"))) {
      rc = ms_error_set(MS_ERR_IO, "%s: cannot open: %s", ms_input_name(path), strerror(errno));
      if (fd >= 0) close(fd);
    }
  }
  pthread_mutex_unlock(&streams_lock);
  return rc;
}

uint64_t ms_input_size(const char *path) {
  struct stat st;
  if (!ms_input_is_stream(path)) return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
  uint64_t size = 0;
  pthread_mutex_lock(&streams_lock);
  for (stream *s = streams; s; s = s->next)
    if (strcmp(s->path, path) == 0)
      size = s->state == STREAM_SPOOLED ? (fstat(s->spool_fd, &st) == 0 ? (uint64_t)st.st_size : 0)
                                        : s->bytes;
  pthread_mutex_unlock(&streams_lock);
  return size;
}

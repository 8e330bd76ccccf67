/* libFuzzer target: the live capture channel's parser (lib/capture/launcher/capture_decode.c), as
 * the compiler runtime feeds it through ms_capture_attach. The input is the content of
 * shared slot 0 (whole 16-byte units, at most 1 MiB), announced by HELLO and one CHUNK
 * notice; an odd last byte adds a SIGNAL notice. Sampling is on for inputs whose first
 * byte is odd; bit 1 of the last byte selects the runtime's slot layout (MS_RT_VERSION: 8-byte
 * words) rather than the Valgrind tool's (MS_VG_VERSION: 16-byte units). Any error is fine; a
 * crash, a leak or an out-of-bounds access is not. */
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "../lib/capture/protocol.h"
#include "fuzz_common.h"
#include "memsnap/capture.h"

#define SLOT_BYTES ((size_t)MS_VG_SLOT_UNITS * MS_VG_UNIT_BYTES)
#define SLOTS 8

static int notices(int fd, uint64_t bytes, int signal, uint64_t version) {
  uint64_t units[6] = {MS_VG_MAGIC, version << 32 | TAG_HELLO << 8, bytes, (uint64_t)TAG_CHUNK << 8,
                       11,          (uint64_t)TAG_SIGNAL << 8};
  size_t length = signal ? sizeof units : 4 * sizeof units[0];
  return send(fd, units, length, MSG_NOSIGNAL) == (ssize_t)length ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int rt = size > 0 && (data[size - 1] & 2);
  size_t word = rt ? 8 : MS_VG_UNIT_BYTES, bytes = size / word * word;
  if (bytes > SLOT_BYTES) bytes = SLOT_BYTES;
  int channel[2], credit[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, channel) != 0) return 0;
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, credit) != 0) {
    close(channel[0]);
    close(channel[1]);
    return 0;
  }
  int shm = memfd_create("fuzz-capture", 0);
  void *map = MAP_FAILED;
  if (shm >= 0 && ftruncate(shm, (off_t)(SLOTS * SLOT_BYTES)) == 0)
    map = mmap(NULL, SLOTS * SLOT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
  if (map != MAP_FAILED && notices(channel[1], bytes, size > 0 && (data[size - 1] & 1),
                                   rt ? MS_RT_VERSION : MS_VG_VERSION) == 0) {
    memcpy(map, data, bytes);
    close(channel[1]);
    channel[1] = -1;
    ms_capture_options options = {.via = MS_CAPTURE_RT};
    if (size > 0 && (data[0] & 1)) options.sample_on = 3, options.sample_off = 5;
    char *argv[] = {(char *)"fuzzed", NULL};
    ms_source *source;
    /* attach takes the notice and credit descriptors and the memfd */
    if (ms_capture_attach(channel[0], shm, credit[0], &options, 1, argv, &source) == 0) {
      ms_batch batch;
      if (ms_batch_init(&batch, 0) == 0) {
        while (ms_source_next(source, &batch) > 0) {
        }
        ms_batch_free(&batch);
      }
      ms_source_destroy(source);
    }
    channel[0] = credit[0] = shm = -1;
  }
  if (map != MAP_FAILED) munmap(map, SLOTS * SLOT_BYTES);
  int fds[5] = {channel[0], channel[1], credit[0], credit[1], shm};
  for (int i = 0; i < 5; i++)
    if (fds[i] >= 0) close(fds[i]);
  return 0;
}

/* libFuzzer target: the mtr reader on arbitrary bytes. The input goes to a temporary file
 * (readers take paths), is opened, drained, sought, and stat'ed; any error is fine, a crash or
 * an out-of-bounds access is not. It is also recovered (memsnap recover: the reader's scan
 * mode), and what recovery writes must read back without an error.
 *
 * Random bytes rarely get past the CRCs and zstd's checksum, so inputs whose first byte is
 * 'S' are structured instead: the rest is wrapped into a well-formed file (valid header,
 * one chunk with correct CRC and checksums, trailer, footer) whose decompressed columns are
 * the fuzzer's bytes. That puts the record decoder itself under the fuzzer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../lib/io/mtr_internal.h"
#include "memsnap/memsnap.h"
#include "memsnap/trace.h"

#include <string.h>
#include <zstd.h>

/* 'S', u8 site count, u16 records, u16 site bytes, u16 address bytes, u16 attribute bytes,
 * then the columns: tags, sites, addresses, attributes (cut or zero-padded to those sizes).
 * The tags, sites and attributes go in the column frame, the addresses in the address frame.
 * Returns the file's size. */
static size_t build_structured(const uint8_t *data, size_t size, uint8_t *out, size_t capacity) {
  if (size < 10) return 0;
  uint32_t sites = data[1], records = get_u16(data + 2) % 4096 + 1;
  uint32_t site_bytes = get_u16(data + 4) % 8192, address_bytes = get_u16(data + 6) % 16384,
           attribute_bytes = get_u16(data + 8) % 8192;
  size_t payload_bytes = records + site_bytes + address_bytes + attribute_bytes;
  static uint8_t payload[4096 + 8192 + 16384 + 8192];
  memset(payload, 0, payload_bytes);
  memcpy(payload, data + 10, size - 10 < payload_bytes ? size - 10 : payload_bytes);
  uint8_t *p = out;
  memcpy(p, MTR_MAGIC, 8);
  put_u32(p + 8, MTR_VERSION);
  put_u32(p + 12, 60);
  memset(p + 16, 0, 24);
  for (int i = 0; i < 3; i++)
    put_u32(p + 40 + 4 * i, MTR_NO_STRING);
  put_u32(p + 52, 0);
  put_u32(p + 56, mtr_crc32(p, 56));
  p += 60;
  uint8_t *chunk = p;
  static uint8_t columns[4096 + 8192 + 8192];
  size_t address_at = records + site_bytes, column_bytes = address_at + attribute_bytes;
  memcpy(columns, payload, address_at);
  memcpy(columns + address_at, payload + address_at + address_bytes, attribute_bytes);
  ZSTD_CCtx *cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  size_t room = capacity - 60 - 40 - 32768;
  size_t compressed = ZSTD_compress2(cctx, chunk + 40, room, columns, column_bytes);
  size_t address_compressed = ZSTD_isError(compressed)
                                  ? compressed
                                  : ZSTD_compress2(cctx, chunk + 40 + compressed, room - compressed,
                                                   payload + address_at, address_bytes);
  ZSTD_freeCCtx(cctx);
  if (ZSTD_isError(compressed) || ZSTD_isError(address_compressed)) return 0;
  memcpy(chunk, MTR_CHUNK_MAGIC, 4);
  put_u32(chunk + 4, records);
  put_u64(chunk + 8, 0);
  put_u32(chunk + 16, (uint32_t)compressed);
  put_u32(chunk + 20, site_bytes);
  put_u32(chunk + 24, address_bytes);
  put_u32(chunk + 28, attribute_bytes);
  put_u32(chunk + 32, (uint32_t)address_compressed);
  put_u32(chunk + 36, mtr_crc32(chunk, 36));
  p = chunk + 40 + compressed + address_compressed;
  uint8_t *trailer = p;
  memcpy(p, MTR_TRAILER_MAGIC, 4);
  put_u32(p + 4, 1);
  put_u32(p + 8, 0);
  put_u32(p + 12, 0);
  put_u64(p + 16, records);
  put_u64(p + 24, records);
  put_u64(p + 32, 0);
  put_u64(p + 40, 0);
  put_u64(p + 48, 1);
  put_u32(p + 56, sites);
  p += 60;
  static uint8_t raw_sites[256 * 24];
  for (uint32_t s = 0; s < sites; s++) {
    put_u64(raw_sites + 24 * s, 0x400000 + s);
    for (int i = 0; i < 3; i++)
      put_u32(raw_sites + 24 * s + 8 + 4 * i, MTR_NO_STRING);
    put_u32(raw_sites + 24 * s + 20, s);
  }
  size_t site_frame = ZSTD_compress(p + 16, 16384, raw_sites, 24 * sites, 1);
  if (ZSTD_isError(site_frame)) return 0;
  put_u64(p, 24 * sites);
  put_u64(p + 8, site_frame);
  p += 16 + site_frame;
  put_u64(p, 60);
  put_u64(p + 8, 0);
  p += 16;
  put_u32(p, mtr_crc32(trailer, (size_t)(p - trailer)));
  p += 4;
  put_u64(p, (uint64_t)(trailer - out));
  put_u64(p + 8, (uint64_t)(p - trailer));
  memcpy(p + 16, MTR_FOOTER_MAGIC, 8);
  return (size_t)(p + 24 - out);
}

/* Drains a trace that must be valid: anything recover writes. */
static void drain_valid(const char *path) {
  ms_source *source;
  if (ms_mtr_open(path, &source) != 0) abort();
  ms_batch batch;
  if (ms_batch_init(&batch, 0) != 0) abort();
  int n;
  while ((n = ms_source_next(source, &batch)) > 0) {
  }
  if (n < 0) abort();
  ms_batch_free(&batch);
  ms_source_destroy(source);
}

static void recover(const char *path) {
  static char out[64];
  if (!out[0]) snprintf(out, sizeof out, "/tmp/fuzz_mtr.%ld.out", (long)getpid());
  ms_mtr_recovery report;
  if (ms_mtr_recover(path, out, &report) == 0) {
    drain_valid(out);
    unlink(out);
  }
}

static const char *input_path(void) {
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/fuzz_mtr.%ld", (long)getpid());
  return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = input_path();
  FILE *file = fopen(path, "wb");
  if (!file) return 0;
  static uint8_t built[1 << 17];
  size_t built_size =
      size > 0 && data[0] == 'S' ? build_structured(data, size, built, sizeof built) : 0;
  if (built_size)
    fwrite(built, 1, built_size, file);
  else
    fwrite(data, 1, size, file);
  fclose(file);
  ms_source *source;
  if (ms_mtr_open(path, &source) == 0) {
    ms_batch batch;
    if (ms_batch_init(&batch, 0) == 0) {
      while (ms_source_next(source, &batch) > 0) {
      }
      if (ms_source_seek(source, source->info.access_count / 2) == 0)
        while (ms_source_next(source, &batch) > 0) {
        }
      ms_batch_free(&batch);
    }
    ms_source_destroy(source);
  }
  ms_mtr_stat stat;
  ms_stream_info info;
  if (ms_mtr_stat_file(path, &stat, &info) == 0) ms_stream_info_clear(&info);
  ms_trace_detect(path);
  recover(path);
  if (built_size && (file = fopen(path, "wb"))) {
    /* without its trailer and footer: the scan finds the chunk and the sites it names */
    uint64_t trailer = get_u64(built + built_size - 24);
    fwrite(built, 1, trailer < built_size ? (size_t)trailer : built_size, file);
    fclose(file);
    recover(path);
  }
  unlink(path);
  return 0;
}

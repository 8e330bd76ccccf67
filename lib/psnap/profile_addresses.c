/* The exact addresses of --lossless sites in a .psnap profile: zigzag varint deltas, zstd,
 * base64, one line (`  addresses zstd ...`). */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "memsnap/error.h"
#include "profile_internal.h"

static const char base64_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int profile_write_addresses(FILE *out, const uint64_t *addresses, uint64_t count) {
  size_t raw_capacity = (size_t)count * 10 + 16, raw_size = 0;
  uint8_t *raw = malloc(raw_capacity);
  if (!raw) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  uint64_t previous = 0;
  for (uint64_t i = 0; i < count; i++) {
    int64_t delta = (int64_t)(addresses[i] - previous);
    uint64_t zigzag = ((uint64_t)delta << 1) ^ (0 - ((uint64_t)delta >> 63));
    previous = addresses[i];
    do {
      raw[raw_size++] = (uint8_t)((zigzag & 0x7f) | (zigzag > 0x7f ? 0x80 : 0));
      zigzag >>= 7;
    } while (zigzag);
  }
  size_t bound = ZSTD_compressBound(raw_size);
  uint8_t *packed = malloc(bound);
  if (!packed) {
    free(raw);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  size_t packed_size = ZSTD_compress(packed, bound, raw, raw_size, 19);
  free(raw);
  if (ZSTD_isError(packed_size)) {
    free(packed);
    return ms_error_set(MS_ERR_NOMEM, "zstd: %s", ZSTD_getErrorName(packed_size));
  }
  fputs("  addresses zstd ", out);
  for (size_t i = 0; i < packed_size; i += 3) {
    uint32_t v = (uint32_t)packed[i] << 16;
    if (i + 1 < packed_size) v |= (uint32_t)packed[i + 1] << 8;
    if (i + 2 < packed_size) v |= packed[i + 2];
    char chunk[4] = {base64_digits[v >> 18], base64_digits[(v >> 12) & 63],
                     i + 1 < packed_size ? base64_digits[(v >> 6) & 63] : '=',
                     i + 2 < packed_size ? base64_digits[v & 63] : '='};
    fwrite(chunk, 1, 4, out);
  }
  fputc('\n', out);
  free(packed);
  return 0;
}

static int decode_base64(reader *r, uint8_t **out, size_t *size) {
  size_t n = (size_t)(r->end - r->p);
  if (n % 4) return read_error(r, "base64 text of a length not a multiple of 4");
  uint8_t *bytes = malloc(n / 4 * 3 + 1);
  if (!bytes) return ms_error_set(MS_ERR_NOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < n; i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (int j = 0; j < 4; j++) {
      char c = r->p[i + j];
      const char *d = c && c != '=' ? strchr(base64_digits, c) : NULL;
      if (c == '=' && i + 4 == n && j >= 2) {
        pad++;
        v <<= 6;
        continue;
      }
      if (!d || pad) {
        r->p += i + j;
        free(bytes);
        return read_error(r, "bad base64 character");
      }
      v = v << 6 | (uint32_t)(d - base64_digits);
    }
    bytes[k++] = (uint8_t)(v >> 16);
    if (pad < 2) bytes[k++] = (uint8_t)(v >> 8);
    if (pad < 1) bytes[k++] = (uint8_t)v;
  }
  r->p = r->end;
  *out = bytes;
  *size = k;
  return 0;
}

int profile_read_addresses(reader *r, ms_psnap_site *site) {
  if (!profile_key_is(r, "zstd"))
    return read_error(r, "expected 'zstd' and the compressed addresses");
  uint8_t *packed = NULL;
  size_t packed_size = 0;
  const char *start = r->p;
  int rc = decode_base64(r, &packed, &packed_size);
  if (rc < 0) return rc;
  unsigned long long raw_size = ZSTD_getFrameContentSize(packed, packed_size);
  if (raw_size == ZSTD_CONTENTSIZE_ERROR || raw_size == ZSTD_CONTENTSIZE_UNKNOWN ||
      raw_size > (unsigned long long)site->count * 10 + 16 || raw_size < site->count ||
      raw_size > (1ull << 28)) {
    free(packed);
    r->p = start;
    return read_error(r, "compressed addresses are corrupt");
  }
  uint8_t *raw = malloc(raw_size + 1);
  site->addresses = malloc((site->count ? site->count : 1) * sizeof *site->addresses);
  if (!raw || !site->addresses) {
    free(packed), free(raw);
    return ms_error_set(MS_ERR_NOMEM, "out of memory");
  }
  size_t got = ZSTD_decompress(raw, raw_size, packed, packed_size);
  free(packed);
  uint64_t previous = 0, i = 0;
  size_t k = 0;
  if (!ZSTD_isError(got) && got == raw_size) {
    for (; i < site->count && k < got; i++) {
      uint64_t zigzag = 0;
      int shift = 0;
      while (k < got && shift < 64) {
        uint8_t byte = raw[k++];
        zigzag |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
        if (!(byte & 0x80)) break;
      }
      previous += (zigzag >> 1) ^ (0 - (zigzag & 1));
      site->addresses[i] = previous;
    }
  }
  free(raw);
  if (i != site->count || k != got || (i && site->addresses[0] != site->first_address)) {
    r->p = start;
    return read_error(r, "compressed addresses do not match the site's count and first address");
  }
  return 0;
}

/* CRC-32 for .mtr headers, trailers and chunk headers (zstd frames carry their own XXH64).
 * Bitwise table built once; these regions are small, so speed does not matter. */
#include "mtr_internal.h"

uint32_t mtr_crc32(const uint8_t *data, size_t size) {
  static _Thread_local uint32_t table[256];
  static _Thread_local int ready;
  if (!ready) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++)
        c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    ready = 1;
  }
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; i++)
    crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

/* Numbers as memsnap reads them on command lines and in option texts: one parser, two
 * documented suffix rules.
 *
 * - counts (accesses, lengths, repetitions): digits, then optionally k, M, G or T (any
 *   case) for powers of 1000, or Ki, Mi, Gi, Ti for powers of 1024: 20, 4k = 4000,
 *   1M = 10^6, 2Gi = 2^31;
 * - byte sizes (cache levels): digits, then optionally k, M or G (any case) for powers of
 *   1024, which may be followed by i and then B: 32k = 32Ki = 32KiB = 32KB = 32768;
 * - plain: digits only.
 * Nothing else may follow; a value that does not fit 64 bits is refused.
 */
#ifndef MEMSNAP_NUMBER_H
#define MEMSNAP_NUMBER_H

#include "memsnap/api.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ms_number_rule {
  MS_NUMBER_PLAIN = 0,
  MS_NUMBER_COUNT,
  MS_NUMBER_BYTES,
} ms_number_rule;

/* Parses text[0..length) by `rule` into *value. Returns 0, or -1 if malformed (no message:
 * the caller names the option). */
MS_API int ms_parse_number(const char *text, size_t length, ms_number_rule rule, uint64_t *value);
/* The same for a NUL-terminated text. */
MS_API int ms_parse_number_text(const char *text, ms_number_rule rule, uint64_t *value);
/* Interval sampling "ON/OFF": two counts, ON > 0 (1M/9M: keep a million, drop nine). */
MS_API int ms_parse_sampling(const char *text, uint64_t *on, uint64_t *off);

#ifdef __cplusplus
}
#endif

#endif

/* One number parser, two suffix rules (see memsnap/number.h). */
#include "memsnap/number.h"

#include <ctype.h>
#include <string.h>

int ms_parse_number(const char *text, size_t length, ms_number_rule rule, uint64_t *value) {
  if (length == 0 || !isdigit((unsigned char)text[0])) return -1;
  uint64_t number = 0;
  size_t i = 0;
  for (; i < length && isdigit((unsigned char)text[i]); i++) {
    unsigned digit = (unsigned)(text[i] - '0');
    if (number > (UINT64_MAX - digit) / 10) return -1;
    number = number * 10 + digit;
  }
  uint64_t scale = 1;
  if (i < length && rule != MS_NUMBER_PLAIN) {
    int power;
    switch (toupper((unsigned char)text[i])) {
    case 'K': power = 1; break;
    case 'M': power = 2; break;
    case 'G': power = 3; break;
    case 'T': power = rule == MS_NUMBER_COUNT ? 4 : 0; break;
    default: power = 0; break;
    }
    if (power == 0) return -1;
    i++;
    int binary = i < length && text[i] == 'i';
    i += binary;
    if (rule == MS_NUMBER_BYTES) {
      binary = 1;
      if (i < length && text[i] == 'B') i++;
    }
    for (int p = 0; p < power; p++)
      scale *= binary ? 1024 : 1000;
  }
  if (i != length || number > UINT64_MAX / scale) return -1;
  *value = number * scale;
  return 0;
}

int ms_parse_number_text(const char *text, ms_number_rule rule, uint64_t *value) {
  return ms_parse_number(text, strlen(text), rule, value);
}

int ms_parse_sampling(const char *text, uint64_t *on, uint64_t *off) {
  const char *slash = strchr(text, '/');
  if (!slash || slash == text) return -1;
  uint64_t kept, dropped;
  if (ms_parse_number(text, (size_t)(slash - text), MS_NUMBER_COUNT, &kept) != 0 ||
      ms_parse_number_text(slash + 1, MS_NUMBER_COUNT, &dropped) != 0 || kept == 0)
    return -1;
  *on = kept;
  *off = dropped;
  return 0;
}

/* libFuzzer target: the .sig parser on arbitrary bytes. Whatever parses must write back
 * to text that parses again to the same text (the format's round trip), and must survive
 * the JSON writer and the accessors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/signature.h"

static char *to_text(const ms_signature *signature, size_t *length) {
  char *text = NULL;
  FILE *out = open_memstream(&text, length);
  if (!out) abort();
  if (ms_signature_write_text(out, signature) != 0) abort();
  fclose(out);
  return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ms_signature *signature;
  if (ms_signature_parse((const char *)data, size, "fuzz.sig", &signature) != 0) return 0;
  size_t length, again_length;
  char *text = to_text(signature, &length);
  ms_signature *again;
  if (ms_signature_parse(text, length, "round-trip.sig", &again) != 0) abort();
  char *again_text = to_text(again, &again_length);
  if (length != again_length || memcmp(text, again_text, length) != 0) abort();
  FILE *null = fopen("/dev/null", "w");
  if (null) {
    ms_signature_write_json(null, signature);
    fclose(null);
  }
  for (int i = 0; i < signature->bin_count; i++)
    for (int level = 0; level < signature->levels; level++)
      if (ms_signature_alpha(&signature->bins[i], level, -1) > 1.0 ||
          ms_signature_hit_rate(&signature->bins[i], 16) > 1.0)
        abort();
  free(text);
  free(again_text);
  ms_signature_free(signature);
  ms_signature_free(again);
  return 0;
}

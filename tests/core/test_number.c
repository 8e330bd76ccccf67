/* One number parser, two suffix rules (memsnap/number.h), on hand-worked values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "memsnap/number.h"

static uint64_t parsed(const char *text, ms_number_rule rule) {
  uint64_t value = 0;
  if (ms_parse_number_text(text, rule, &value) != 0) fail_msg("'%s' refused", text);
  return value;
}

static void refused(const char *text, ms_number_rule rule) {
  uint64_t value = 12345;
  if (ms_parse_number_text(text, rule, &value) == 0) fail_msg("'%s' accepted", text);
  assert_int_equal(value, 12345);
}

static void counts_are_decimal_unless_binary(void **state) {
  (void)state;
  assert_int_equal(parsed("20", MS_NUMBER_COUNT), 20);
  assert_int_equal(parsed("4k", MS_NUMBER_COUNT), 4000);
  assert_int_equal(parsed("4K", MS_NUMBER_COUNT), 4000);
  assert_int_equal(parsed("1M", MS_NUMBER_COUNT), 1000000);
  assert_int_equal(parsed("3G", MS_NUMBER_COUNT), 3000000000ULL);
  assert_int_equal(parsed("2T", MS_NUMBER_COUNT), 2000000000000ULL);
  assert_int_equal(parsed("4Ki", MS_NUMBER_COUNT), 4096);
  assert_int_equal(parsed("2Gi", MS_NUMBER_COUNT), 2147483648ULL);
  assert_int_equal(parsed("18446744073709551615", MS_NUMBER_COUNT), UINT64_MAX);
  refused("", MS_NUMBER_COUNT);
  refused("k", MS_NUMBER_COUNT);
  refused("-1", MS_NUMBER_COUNT);
  refused("4KB", MS_NUMBER_COUNT);
  refused("4 k", MS_NUMBER_COUNT);
  refused("4x", MS_NUMBER_COUNT);
  refused("18446744073709551616", MS_NUMBER_COUNT);
  refused("20000000T", MS_NUMBER_COUNT);
}

static void byte_sizes_are_binary(void **state) {
  (void)state;
  assert_int_equal(parsed("32k", MS_NUMBER_BYTES), 32768);
  assert_int_equal(parsed("32Ki", MS_NUMBER_BYTES), 32768);
  assert_int_equal(parsed("32KiB", MS_NUMBER_BYTES), 32768);
  assert_int_equal(parsed("32KB", MS_NUMBER_BYTES), 32768);
  assert_int_equal(parsed("8m", MS_NUMBER_BYTES), 8388608);
  assert_int_equal(parsed("1G", MS_NUMBER_BYTES), 1073741824);
  assert_int_equal(parsed("64", MS_NUMBER_BYTES), 64);
  refused("1T", MS_NUMBER_BYTES);
  refused("32Kb", MS_NUMBER_BYTES);
  refused("32BK", MS_NUMBER_BYTES);
}

static void plain_numbers_have_no_suffix(void **state) {
  (void)state;
  assert_int_equal(parsed("65536", MS_NUMBER_PLAIN), 65536);
  refused("64k", MS_NUMBER_PLAIN);
  uint64_t value;
  assert_int_equal(ms_parse_number("512:4096", 3, MS_NUMBER_PLAIN, &value), 0);
  assert_int_equal(value, 512);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(counts_are_decimal_unless_binary),
      cmocka_unit_test(byte_sizes_are_binary),
      cmocka_unit_test(plain_numbers_have_no_suffix),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* ms_hierarchy_parse on what people type: size suffixes in every spelling, and shapes no
 * cache has refused with the reading that was probably meant (Cachegrind's size,ways,line
 * order), while every catalog row and every cache-surface point (W*D)/W/D still parse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "memsnap/cache.h"
#include "memsnap/error.h"

static void expect_sizes(const char *spec, uint64_t l1, uint64_t l2) {
  ms_hierarchy_config config;
  if (ms_hierarchy_parse(spec, &config) != MS_OK) fail_msg("%s: %s", spec, ms_error_message());
  assert_int_equal(config.level_count, 2);
  assert_int_equal(config.levels[0].size, l1);
  assert_int_equal(config.levels[1].size, l2);
}

static void expect_refused(const char *spec, const char *fragment) {
  ms_hierarchy_config config;
  assert_int_equal(ms_hierarchy_parse(spec, &config), MS_ERR_ARG);
  if (!strstr(ms_error_message(), fragment))
    fail_msg("%s: expected '%s' in '%s'", spec, fragment, ms_error_message());
}

static void test_size_suffixes(void **state) {
  (void)state;
  expect_sizes("32k/64/8,1M/64/16", 32768, 1048576);
  expect_sizes("32K/64/8,1m/64/16", 32768, 1048576);
  expect_sizes("32Ki/64/8,1Mi/64/16", 32768, 1048576);
  expect_sizes("32KiB/64/8,1MiB/64/16", 32768, 1048576);
  expect_sizes("32KB/64/8,2GiB/64/16", 32768, 2ull << 30);
  expect_sizes("32768/64/8,262144/64/8", 32768, 262144);
  expect_refused("32KiBB/64/8", "bad level '32KiBB/64/8': size");
  expect_refused("32iB/64/8", "size");
  expect_refused("32kk/64/8", "size");
}

static void test_swapped_line_and_ways(void **state) {
  (void)state;
  /* Cachegrind's order: 32 KiB, 8 ways, 64-byte lines */
  expect_refused("32768/8/64", "did you mean 32768/64/8?");
  expect_refused("32768/8/64", "the order is size/line/ways");
  expect_refused("32k/64/8,256k/8/64", "bad level '262144/8/64'");
  expect_refused("32k/64/8,256k/8/64", "did you mean 262144/64/8?");
  /* no suggestion when the swap is no cache either */
  expect_refused("32768/48/8", "line size must be a power of two");
  ms_hierarchy_config config;
  assert_int_equal(ms_hierarchy_parse("32768/48/8", &config), MS_ERR_ARG);
  assert_null(strstr(ms_error_message(), "did you mean"));
  /* more ways than lines */
  expect_refused("4096/64/128", "size must be at least line size x associativity");
}

static void test_plausible_shapes(void **state) {
  (void)state;
  ms_hierarchy_config config;
  for (int i = 0; i < ms_hierarchy_catalog_count(); i++)
    if (ms_hierarchy_parse(ms_hierarchy_catalog_get(i)->spec, &config) != MS_OK)
      fail_msg("%s: %s", ms_hierarchy_catalog_get(i)->name, ms_error_message());
  /* the cache surface's points: one set of W-byte lines, W from 4 */
  char spec[64];
  for (unsigned width = 4; width <= 512; width *= 2)
    for (unsigned depth = 1; depth <= 1024; depth *= 4) {
      snprintf(spec, sizeof spec, "%u/%u/%u", width * depth, width, depth);
      if (ms_hierarchy_parse(spec, &config) != MS_OK) fail_msg("%s: %s", spec, ms_error_message());
    }
  /* lines of 16 bytes and more in any number of sets */
  assert_int_equal(ms_hierarchy_parse("32/16/2,128/16/8", &config), MS_OK);
  assert_int_equal(ms_hierarchy_parse("100/16/2", &config), MS_OK);
  /* small lines in more than one set are refused */
  expect_refused("1048576/4/4", "lines under 16 bytes are for fully-associative levels only");
  expect_refused("64/8/4", "fully-associative");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_size_suffixes),
      cmocka_unit_test(test_swapped_line_and_ways),
      cmocka_unit_test(test_plausible_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

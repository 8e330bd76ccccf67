/* The site table's index (lib/core/id_index.h): sites of one pc (a recovered trace names
 * every lost site pc 0) keep one index entry, the first, so that adding 200000 of them
 * stays linear (they once filled one probe chain: minutes, found by fuzz_mtr), and every
 * pc is found at its first id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <cmocka.h>

#include "memsnap/sites.h"

static void many_sites_of_one_pc(void **state) {
  (void)state;
  ms_site_table *table = ms_site_table_new();
  assert_non_null(table);
  clock_t start = clock();
  for (uint32_t i = 0; i < 200000; i++) {
    char name[32];
    snprintf(name, sizeof name, "[lost site %u]", i);
    assert_int_equal(ms_site_table_add(table, i % 2 ? 0 : 0x400000 + i, NULL, name, NULL, 0), i);
  }
  double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
  if (seconds > 5) fail_msg("200000 sites took %.1f s", seconds);
  assert_int_equal(ms_site_table_find(table, 0), 1);
  for (uint32_t i = 0; i < 200000; i += 2)
    assert_int_equal(ms_site_table_find(table, 0x400000 + i), i);
  assert_int_equal(ms_site_table_find(table, 0x400001), -1);
  ms_site_table_free(table);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(many_sites_of_one_pc)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

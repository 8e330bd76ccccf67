/* Capture accuracy against an independent oracle: for each kernel, the number of loads,
 * stores and modifies memsnap's Valgrind tool reports equals the number of " L", " S" and
 * " M" lines of `valgrind --tool=lackey --trace-mem=yes` on the same binary, run with the
 * same environment and standard streams (ld.so's and stdio's work depends on both).
 * The tool applies Lackey's rules exactly (see lib/capture/valgrind/ms_main.c), so the
 * counts must match exactly, including everything ld.so and libc do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h> /* after its prerequisites above */

#include <stdio.h>

#include "capture_util.h"
#include "memsnap_kernels.h"

static void compare_with_lackey(char *const *argv) {
  kind_counts ours, lackey;
  ms_source *source = capture_run(argv, &ours, NULL, NULL);
  const ms_stream_info *info = ms_source_info(source);
  assert_int_equal(info->exit_status, 0);
  assert_false(info->flags & MS_STREAM_TRUNCATED);
  assert_string_equal(info->capture, "valgrind");
  assert_string_equal(info->arch, "amd64");
  ms_source_destroy(source);
  lackey_counts(argv, &lackey);
  print_message("%s: memsnap L/S/M %llu/%llu/%llu, lackey %llu/%llu/%llu\n", argv[0],
                (unsigned long long)ours.by_kind[0], (unsigned long long)ours.by_kind[1],
                (unsigned long long)ours.by_kind[2], (unsigned long long)lackey.by_kind[0],
                (unsigned long long)lackey.by_kind[1], (unsigned long long)lackey.by_kind[2]);
  for (int k = 0; k < MS_ACCESS_KIND_COUNT; k++)
    assert_int_equal(ours.by_kind[k], lackey.by_kind[k]);
  assert_int_equal(ours.total, lackey.total);
}

#define KERNEL_TEST(name, path, size)                                                              \
  static void name(void **state) {                                                                 \
    (void)state;                                                                                   \
    char *argv[] = {(char *)(path), (char *)(size), NULL};                                         \
    compare_with_lackey(argv);                                                                     \
  }

KERNEL_TEST(test_stream_add, MEMSNAP_KERNEL_STREAM_ADD, "20000")
KERNEL_TEST(test_matmul, MEMSNAP_KERNEL_MATMUL, "40")
KERNEL_TEST(test_stencil2d, MEMSNAP_KERNEL_STENCIL2D, "60")
KERNEL_TEST(test_gather, MEMSNAP_KERNEL_GATHER, "20000")
KERNEL_TEST(test_linked_list, MEMSNAP_KERNEL_LINKED_LIST, "10000")
KERNEL_TEST(test_static, MEMSNAP_KERNEL_STREAM_ADD_STATIC, "20000")
#ifdef MEMSNAP_KERNEL_FORTRAN
KERNEL_TEST(test_fortran, MEMSNAP_KERNEL_FORTRAN, "20000")
#endif
#ifdef MEMSNAP_KERNEL_CXX
KERNEL_TEST(test_cxx, MEMSNAP_KERNEL_CXX, "5000")
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stream_add),  cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_stencil2d),   cmocka_unit_test(test_gather),
      cmocka_unit_test(test_linked_list), cmocka_unit_test(test_static),
#ifdef MEMSNAP_KERNEL_FORTRAN
      cmocka_unit_test(test_fortran),
#endif
#ifdef MEMSNAP_KERNEL_CXX
      cmocka_unit_test(test_cxx),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

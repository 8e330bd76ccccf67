/* Pointer-chasing work loops for ILP 1..MS_CHASE_MAX_ILP (chameleon-weinberg-dissertation-2008.txt,
 * sections 5.3 and 5.8.1).
 *
 * Kernel K keeps K independent chains in registers; one iteration does p[c] = data[p[c]]
 * for c = 0..K-1 in order, so an in-order machine issues the chains' loads interleaved:
 * exactly one load per chase step and no other memory access in the loop (the tests
 * check the generated machine code with objdump). The chain loop is unrolled completely
 * (its count K is a constant), so that the compiler keeps p[] in registers as far as
 * the machine has them (gcc 12: the same memory operands in kernels 4, 8 and 16 as the
 * fully written-out kernels this macro replaced). noinline keeps each kernel a function
 * of its own, whose code the tests can find by name.
 */
#include "memsnap/chase.h"

#define CHASE_KERNEL(K)                                                                            \
  __attribute__((noinline)) void ms_chase_kernel_##K(                                              \
      const uint32_t *restrict data, uint32_t *restrict pointers, uint64_t iterations) {           \
    uint32_t p[K];                                                                                 \
    _Pragma("GCC unroll 32") for (int c = 0; c < (K); c++) p[c] = pointers[c];                     \
    for (uint64_t i = 0; i < iterations; i++) {                                                    \
      _Pragma("GCC unroll 32") for (int c = 0; c < (K); c++) p[c] = data[p[c]];                    \
    }                                                                                              \
    _Pragma("GCC unroll 32") for (int c = 0; c < (K); c++) pointers[c] = p[c];                     \
  }

CHASE_KERNEL(1)
CHASE_KERNEL(2)
CHASE_KERNEL(3)
CHASE_KERNEL(4)
CHASE_KERNEL(5)
CHASE_KERNEL(6)
CHASE_KERNEL(7)
CHASE_KERNEL(8)
CHASE_KERNEL(9)
CHASE_KERNEL(10)
CHASE_KERNEL(11)
CHASE_KERNEL(12)
CHASE_KERNEL(13)
CHASE_KERNEL(14)
CHASE_KERNEL(15)
CHASE_KERNEL(16)
CHASE_KERNEL(17)
CHASE_KERNEL(18)
CHASE_KERNEL(19)
CHASE_KERNEL(20)

const ms_chase_kernel ms_chase_kernels[MS_CHASE_MAX_ILP + 1] = {NULL,
                                                                ms_chase_kernel_1,
                                                                ms_chase_kernel_2,
                                                                ms_chase_kernel_3,
                                                                ms_chase_kernel_4,
                                                                ms_chase_kernel_5,
                                                                ms_chase_kernel_6,
                                                                ms_chase_kernel_7,
                                                                ms_chase_kernel_8,
                                                                ms_chase_kernel_9,
                                                                ms_chase_kernel_10,
                                                                ms_chase_kernel_11,
                                                                ms_chase_kernel_12,
                                                                ms_chase_kernel_13,
                                                                ms_chase_kernel_14,
                                                                ms_chase_kernel_15,
                                                                ms_chase_kernel_16,
                                                                ms_chase_kernel_17,
                                                                ms_chase_kernel_18,
                                                                ms_chase_kernel_19,
                                                                ms_chase_kernel_20};

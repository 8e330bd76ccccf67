/* The host CPU's features, asked once (see cpu.h). */
#include "cpu.h"

static unsigned probe(void) {
  unsigned features = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) features |= CPU_AVX2;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    features |= CPU_AVX512;
  if (__builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt") &&
      !__builtin_cpu_is("znver1") && !__builtin_cpu_is("znver2"))
    features |= CPU_FAST_PEXT;
#endif
  return features;
}

unsigned cpu_features(void) {
  /* a race between first callers only computes the same value twice */
  static unsigned features = ~0u;
  if (features == ~0u) features = probe();
  return features;
}

/* What the host CPU offers memsnap's vector and bit-manipulation paths: one place asks
 * (once) and every dispatcher (the simulator's level loops, the sampled surface passes, the
 * signature's tree walks) reads the answer here. Results never depend on it: each fast
 * path is checked against its portable twin by the tests. */
#ifndef MEMSNAP_CORE_CPU_H
#define MEMSNAP_CORE_CPU_H

enum {
  CPU_AVX2 = 1,
  CPU_AVX512 = 2,    /* AVX-512 F and DQ */
  CPU_FAST_PEXT = 4, /* BMI2 and POPCNT, on a CPU whose PEXT is fast (not AMD Zen 1 or 2,
                        where it is microcoded) */
};

/* The features above that this CPU has (0 on other architectures). */
unsigned cpu_features(void);

#endif

/* The level loops compiled with -mavx2 (lib/CMakeLists.txt), run only on hosts that have
 * AVX2 (cache_pick_run_level in simulator.c). Empty elsewhere. */
#ifdef MEMSNAP_HAVE_LEVEL_RUN_AVX2
#define LEVEL_RUN_FUNCTION cache_run_level_avx2
#include "level_run.h"
#else
typedef int level_run_avx2_unused; /* ISO C forbids an empty translation unit */
#endif

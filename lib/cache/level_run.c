/* The level loops for the baseline instruction set (level_run.h). */
#define LEVEL_RUN_FUNCTION cache_run_level
#include "level_run.h"

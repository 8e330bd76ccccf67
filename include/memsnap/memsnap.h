/* memsnap: observe, represent, characterize and imitate the memory accesses of programs. */
#ifndef MEMSNAP_H
#define MEMSNAP_H
#include "memsnap/access.h"
#include "memsnap/error.h"
#include "memsnap/sites.h"
#include "memsnap/stream.h"
#include "memsnap/surface.h"
#include "memsnap/scores.h"
#endif

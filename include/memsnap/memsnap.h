/* memsnap: observe, represent, characterize and imitate the memory accesses of programs.
 *
 * The umbrella header: it includes every public header (one per module), so that
 * `#include <memsnap/memsnap.h>` declares the whole library, from C or C++. Each header
 * also stands alone (tests/install checks both).
 */
#ifndef MEMSNAP_H
#define MEMSNAP_H

#include "memsnap/access.h"
#include "memsnap/analysis.h"
#include "memsnap/annotate.h"
#include "memsnap/api.h"
#include "memsnap/cache.h"
#include "memsnap/capture.h"
#include "memsnap/chase.h"
#include "memsnap/error.h"
#include "memsnap/evaluation.h"
#include "memsnap/expr.h"
#include "memsnap/fold.h"
#include "memsnap/input.h"
#include "memsnap/number.h"
#include "memsnap/objects.h"
#include "memsnap/open.h"
#include "memsnap/output.h"
#include "memsnap/psnap.h"
#include "memsnap/sample.h"
#include "memsnap/scores.h"
#include "memsnap/signature.h"
#include "memsnap/sites.h"
#include "memsnap/stream.h"
#include "memsnap/surface.h"
#include "memsnap/skeleton.h"
#include "memsnap/synth.h"
#include "memsnap/trace.h"
#include "memsnap/verify.h"

#endif

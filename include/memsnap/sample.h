/* Interval sampling: a sink wrapper that passes on a consecutive run of `on` accesses,
 * then drops the next `off`, and so on (dissertation chameleon-weinberg-dissertation-2008.txt,
 * section 3.3.1: 1M on, 9M off, i.e. 10%).
 *
 * The wrapper hands the inner sink only the kept accesses, in batches that never cross an
 * interval boundary, and with a copy of the stream info whose flags carry
 * MS_STREAM_SAMPLED and whose sample_on/sample_off are set. Before the first access of
 * every sampling interval it calls `on_interval` (if not NULL) with the interval's index
 * (0, 1, 2, ...): a model that follows the dissertation forgets its history there, so
 * that each interval starts cold. The wrapper does not own the inner sink.
 */
#ifndef MEMSNAP_SAMPLE_H
#define MEMSNAP_SAMPLE_H

#include <stdint.h>

#include "memsnap/api.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called before the first kept access of interval `interval`; a negative return stops
 * the pipeline with that status. */
typedef int (*ms_sample_interval_fn)(void *context, uint64_t interval);

/* on > 0 accesses kept, then off dropped (off == 0: everything is kept, one interval). */
MS_API int ms_sample_sink_new(ms_sink *inner, uint64_t on, uint64_t off,
                              ms_sample_interval_fn on_interval, void *context, ms_sink **out);

/* Warm-up: the last `count` (<= off) accesses of every skipped run go to `warm` (a sink
 * that updates its model's state without counting), right after `on_interval` announced
 * the interval they lead into. Without it (the default) an interval is announced at its
 * first kept access. The wrapper does not own `warm`. */
MS_API int ms_sample_sink_set_warmup(ms_sink *sink, ms_sink *warm, uint64_t count);

/* Accesses seen by the wrapper and accesses passed on, so far. */
MS_API void ms_sample_sink_counts(const ms_sink *sink, uint64_t *seen, uint64_t *kept);

#ifdef __cplusplus
}
#endif

#endif

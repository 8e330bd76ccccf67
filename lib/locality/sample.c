/* Interval sampling as a sink wrapper (see memsnap/sample.h).
 *
 * Model: the stream is cut into periods of on + off accesses counted from its first
 * access; the first `on` of each period are kept, the rest dropped. A kept run is passed
 * on as a sub-batch pointing into the caller's batch (no copy), so the cost of the
 * wrapper is a few comparisons per batch, not per access.
 */
#include "memsnap/sample.h"

#include <stdlib.h>

#include "memsnap/error.h"

typedef struct sample_sink {
  ms_sink base;
  ms_sink *inner;
  uint64_t on, off;
  uint64_t position; /* index of the next access within its period */
  uint64_t interval; /* index of the current period */
  uint64_t seen, kept;
  ms_sample_interval_fn on_interval;
  void *context;
} sample_sink;

static ms_stream_info sampled_info(const sample_sink *sample, const ms_stream_info *info) {
  ms_stream_info copy = *info;
  if (sample->off > 0) {
    copy.flags |= MS_STREAM_SAMPLED;
    copy.sample_on = sample->on;
    copy.sample_off = sample->off;
  }
  return copy;
}

static int sample_begin(ms_sink *sink, const ms_stream_info *info) {
  sample_sink *sample = (sample_sink *)sink;
  ms_stream_info copy = sampled_info(sample, info);
  return sample->inner->ops->begin ? sample->inner->ops->begin(sample->inner, &copy) : MS_OK;
}

static int sample_consume(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch) {
  sample_sink *sample = (sample_sink *)sink;
  ms_stream_info copy = sampled_info(sample, info);
  uint64_t period = sample->on + sample->off;
  size_t done = 0;
  sample->seen += batch->count;
  while (done < batch->count) {
    size_t left = batch->count - done;
    if (sample->position < sample->on) {
      if (sample->position == 0 && sample->on_interval) {
        int rc = sample->on_interval(sample->context, sample->interval);
        if (rc < 0) return rc;
      }
      uint64_t run = sample->on - sample->position;
      size_t take = run < left ? (size_t)run : left;
      ms_batch part = {batch->accesses + done, take, take};
      int rc = sample->inner->ops->consume(sample->inner, &copy, &part);
      if (rc < 0) return rc;
      sample->kept += take;
      sample->position += take;
      done += take;
    } else {
      uint64_t run = period - sample->position;
      size_t skip = run < left ? (size_t)run : left;
      sample->position += skip;
      done += skip;
    }
    if (sample->off > 0 && sample->position == period) {
      sample->position = 0;
      sample->interval++;
    }
  }
  return MS_OK;
}

static int sample_end(ms_sink *sink, const ms_stream_info *info) {
  sample_sink *sample = (sample_sink *)sink;
  ms_stream_info copy = sampled_info(sample, info);
  return sample->inner->ops->end ? sample->inner->ops->end(sample->inner, &copy) : MS_OK;
}

static void sample_destroy(ms_sink *sink) { free(sink); }

static const ms_sink_ops sample_ops = {sample_begin, sample_consume, sample_end, sample_destroy};

int ms_sample_sink_new(ms_sink *inner, uint64_t on, uint64_t off, ms_sample_interval_fn on_interval,
                       void *context, ms_sink **out) {
  *out = NULL;
  if (!inner || on == 0)
    return ms_error_set(MS_ERR_ARG, "interval sampling: the kept run must be at least 1 access");
  if (off > UINT64_MAX - on)
    return ms_error_set(MS_ERR_ARG, "interval sampling: on + off overflows");
  sample_sink *sample = calloc(1, sizeof *sample);
  if (!sample) return ms_error_set(MS_ERR_NOMEM, "out of memory for the sampling filter");
  sample->base.ops = &sample_ops;
  sample->inner = inner;
  sample->on = off > 0 ? on : UINT64_MAX;
  sample->off = off;
  sample->on_interval = on_interval;
  sample->context = context;
  *out = &sample->base;
  return MS_OK;
}

void ms_sample_sink_counts(const ms_sink *sink, uint64_t *seen, uint64_t *kept) {
  const sample_sink *sample = (const sample_sink *)sink;
  if (seen) *seen = sample->seen;
  if (kept) *kept = sample->kept;
}

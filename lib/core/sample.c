/* Interval sampling as a sink wrapper (see memsnap/sample.h).
 *
 * Model: the stream is cut into periods of on + off accesses counted from its first
 * access; the first `on` of each period are kept, the rest dropped, except the last
 * `warm_count` of each period, which go to the warm-up sink when one is set. A run is
 * passed on as a sub-batch pointing into the caller's batch (no copy), so the cost of the
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
  ms_sink *warm; /* receives the last warm_count accesses of every skipped run */
  uint64_t warm_count;
  uint64_t announced; /* intervals announced so far */
} sample_sink;

static int announce(sample_sink *sample, uint64_t interval) {
  if (interval < sample->announced) return MS_OK;
  sample->announced = interval + 1;
  return sample->on_interval ? sample->on_interval(sample->context, interval) : MS_OK;
}

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
    uint64_t warm_from = period - sample->warm_count; /* warm-up: [warm_from, period) */
    if (sample->position < sample->on) {
      if (sample->position == 0) {
        int rc = announce(sample, sample->interval);
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
    } else if (sample->position < warm_from) {
      uint64_t run = warm_from - sample->position;
      size_t skip = run < left ? (size_t)run : left;
      sample->position += skip;
      done += skip;
    } else {
      if (sample->position == warm_from) {
        int rc = announce(sample, sample->interval + 1);
        if (rc < 0) return rc;
      }
      uint64_t run = period - sample->position;
      size_t take = run < left ? (size_t)run : left;
      ms_batch part = {batch->accesses + done, take, take};
      int rc = sample->warm->ops->consume(sample->warm, &copy, &part);
      if (rc < 0) return rc;
      sample->position += take;
      done += take;
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

int ms_sample_sink_set_warmup(ms_sink *sink, ms_sink *warm, uint64_t count) {
  sample_sink *sample = (sample_sink *)sink;
  if (count > sample->off || (count > 0 && !warm))
    return ms_error_set(MS_ERR_ARG,
                        "interval sampling: warm-up of %llu accesses needs a sink and "
                        "at most the %llu skipped",
                        (unsigned long long)count, (unsigned long long)sample->off);
  sample->warm = warm;
  sample->warm_count = count;
  return MS_OK;
}

void ms_sample_sink_counts(const ms_sink *sink, uint64_t *seen, uint64_t *kept) {
  const sample_sink *sample = (const sample_sink *)sink;
  if (seen) *seen = sample->seen;
  if (kept) *kept = sample->kept;
}

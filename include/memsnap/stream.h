/* Sources, sinks and the pipeline that connects them.
 *
 * A source produces batches of accesses (pull: ms_source_next fills a caller's batch). A
 * sink consumes them. ms_pipeline_run pulls from one source and hands every batch to each
 * of several sinks in turn (fan-out). A sink never knows which source feeds it; a source
 * never knows who listens. Both describe the stream through ms_stream_info, owned by the
 * source, which may grow while the stream runs (live capture discovers sites and threads).
 */
#ifndef MEMSNAP_STREAM_H
#define MEMSNAP_STREAM_H

#include <stdint.h>

#include "memsnap/access.h"
#include "memsnap/objects.h"
#include "memsnap/api.h"
#include "memsnap/sites.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  MS_STREAM_TRUNCATED = 1u << 0, /* the program crashed or was killed; the stream is a prefix */
  MS_STREAM_SAMPLED = 1u << 1,   /* interval sampling: see sample_on/sample_off */
  MS_STREAM_EXEC = 1u << 2,      /* the program replaced its image (execve): what ran after is not
                                    in the stream (Valgrind capture; TRUNCATED is set too) */
  MS_STREAM_CHILDREN = 1u << 3,  /* the program started processes whose accesses are not in the
                                    stream (Valgrind capture follows one process: the first,
                                    and what it execs) */
  MS_STREAM_EXEC_FOLLOWED = 1u << 4, /* the program replaced its image (execve) and the stream
                                        goes on with the new image's accesses (Valgrind
                                        capture; its sites are new sites) */
  MS_STREAM_RECOVERED = 1u << 5,     /* rebuilt by memsnap recover from a damaged .mtr: the
                                        accesses before the damage (TRUNCATED is set too) */
};

typedef struct ms_stream_info {
  char *program; /* path of the observed program, or NULL */
  int argc;      /* its arguments, argv[0] included */
  char **argv;
  char *arch;            /* "amd64", ... */
  char *capture;         /* how the accesses were observed: "valgrind", "lackey", "din", ... */
  uint32_t thread_count; /* threads seen so far (final at end of stream) */
  uint64_t access_count; /* total accesses if known in advance, else 0 */
  uint32_t flags;        /* MS_STREAM_* */
  uint64_t sample_on, sample_off;
  int exit_status;       /* live program: exit code, or 128+signal; -1 unknown */
  uint32_t children;     /* live Valgrind capture: processes the program started (not observed) */
  uint32_t execs;        /* live Valgrind capture: execve calls followed (see EXEC_FOLLOWED) */
  char *capture_failure; /* live capture: why the stream ended before the program did, when
                            the capture itself failed (Valgrind gave up: its words and what to
                            do), or NULL; owned by the source, never stored in a trace */
  ms_site_table *sites;  /* never NULL */
  /* data objects (memsnap/objects.h): the events seen so far (all of a trace's, from the
   * start), or NULL when the input records none; owned with the info */
  ms_object_table *objects;
} ms_stream_info;

typedef struct ms_source ms_source;
typedef struct ms_source_ops {
  /* Fills batch (up to its capacity); returns the number of accesses, 0 at the end of
   * the stream, or a negative status (message via ms_error_message()). */
  int (*next)(ms_source *source, ms_batch *batch);
  /* Optional (NULL if unsupported): position so that the next access returned is the
   * `index`-th (0-based) of the stream. */
  int (*seek)(ms_source *source, uint64_t index);
  void (*destroy)(ms_source *source);
} ms_source_ops;

struct ms_source {
  const ms_source_ops *ops;
  ms_stream_info info;
};

static inline int ms_source_next(ms_source *source, ms_batch *batch) {
  return source->ops->next(source, batch);
}
static inline const ms_stream_info *ms_source_info(const ms_source *source) {
  return &source->info;
}
MS_API int ms_source_seek(ms_source *source, uint64_t index);
MS_API void ms_source_destroy(ms_source *source);

typedef struct ms_sink ms_sink;
typedef struct ms_sink_ops {
  /* Called once before the first batch. Optional. */
  int (*begin)(ms_sink *sink, const ms_stream_info *info);
  int (*consume)(ms_sink *sink, const ms_stream_info *info, const ms_batch *batch);
  /* Called once after the last batch, with the final info (threads, truncation, exit). */
  int (*end)(ms_sink *sink, const ms_stream_info *info);
  void (*destroy)(ms_sink *sink);
} ms_sink_ops;

struct ms_sink {
  const ms_sink_ops *ops;
};

MS_API void ms_sink_destroy(ms_sink *sink);

/* Pulls every batch of `source` (at most `limit` accesses if limit > 0) into each sink:
 * begin, consume..., end. Stops at the first error and returns it. */
/* Positions `source` before access `index`: a seek if the source can, else reading and
 * dropping the accesses before it (a stream that ends first is left at its end). */
MS_API int ms_source_skip(ms_source *source, uint64_t index);

MS_API int ms_pipeline_run(ms_source *source, ms_sink *const *sinks, int sink_count,
                           uint64_t limit);

/* Helpers for sources that own their info strings. */
MS_API int ms_stream_info_set_program(ms_stream_info *info, const char *program, int argc,
                                      char *const *argv);
MS_API void ms_stream_info_clear(ms_stream_info *info); /* frees strings and the site table */

#ifdef __cplusplus
}
#endif

#endif

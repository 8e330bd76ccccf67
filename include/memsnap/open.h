/* One way in: what an input holds, and any input opened as a source of accesses.
 *
 * An input is a path (a file, "-", a pipe or a FIFO: memsnap/input.h) or a program to run
 * under observation. Its kind comes from its contents: the .mtr magic (a trace seed is an
 * .mtr whose metadata says so), a profile's or a signature's first line (a profile may be
 * zstd-compressed), the shape of the first line of a Lackey or din text trace. Only when
 * the contents say nothing (an empty file) does the extension decide. Every command of the
 * memsnap program asks here; the look leaves a stream whole for its reader.
 */
#ifndef MEMSNAP_OPEN_H
#define MEMSNAP_OPEN_H

#include <stdint.h>

#include "memsnap/access.h"
#include "memsnap/api.h"
#include "memsnap/capture.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ms_input_kind {
  MS_INPUT_UNKNOWN = 0, /* none of the below (the contents say something else) */
  MS_INPUT_EMPTY,       /* no bytes, and an extension that says nothing */
  MS_INPUT_MTR,         /* an .mtr trace */
  MS_INPUT_SEED,        /* an .mtr trace seed (memsnap synth) */
  MS_INPUT_LACKEY,      /* Valgrind Lackey --trace-mem=yes text */
  MS_INPUT_DIN,         /* DineroIV din text */
  MS_INPUT_PSNAP,       /* a PSnAP profile (.psnap), plain or zstd-compressed */
  MS_INPUT_SIGNATURE,   /* a memory signature (.sig) */
  MS_INPUT_ZSTD,        /* zstd-compressed data that is not a profile */
} ms_input_kind;

/* What `path` holds. Returns 0 with *kind set, or a negative status when it cannot be
 * opened or read (the message names the path). */
MS_API int ms_input_kind_of(const char *path, ms_input_kind *kind);
/* "mtr trace", "trace seed", "lackey trace", "din trace", "psnap profile",
 * "memory signature", "zstd data", "empty", "unknown". */
MS_API const char *ms_input_kind_name(ms_input_kind kind);
/* 1 for the kinds ms_open opens as a source of accesses (traces, seeds, profiles). */
MS_API int ms_input_kind_has_accesses(ms_input_kind kind);

/* How ms_open observes and expands. Zero-initialised: capture with the defaults of
 * ms_capture_options, seeds read as they are. */
typedef struct ms_open_options {
  ms_capture_options capture; /* a live program */
  /* Trace seeds: when expand_seeds is set, a seed is replicated to seed_footprint bytes (0:
   * its own default, at least its minimum replications) and repeated to seed_length
   * accesses (0: one pass), and any other input is an error. */
  int expand_seeds;
  uint64_t seed_footprint, seed_length;
  /* Profiles: the rank and thread to replay (ms_psnap_profile_pick) when pick_rank or
   * pick_thread is set; else the lowest rank, all threads. Other inputs refuse them. */
  int pick_rank, pick_thread;
  uint32_t rank, thread;
} ms_open_options;

/* Opens an input as a source: `path` by its kind (traces of every format, seeds, profiles
 * replayed in full), or, when program_argc > 0, the program program_argv[0..argc) run under
 * observation (path is then ignored). options may be NULL (zero-initialised defaults).
 * Inputs that hold no accesses (a signature, compressed data, an empty file) are refused
 * with a message that says what they are. */
MS_API int ms_open(const char *path, int program_argc, char *const *program_argv,
                   const ms_open_options *options, ms_source **out);

/* What reading an input through tells, for formats whose header does not say it (Lackey,
 * din, profiles) or to check what it says (.mtr): accesses per kind and threads. *info gets
 * the stream's description (free it with ms_stream_info_clear); the thread count is the
 * larger of the description's and the threads seen. */
typedef struct ms_input_counts {
  uint64_t accesses;
  uint64_t by_kind[MS_ACCESS_KIND_COUNT];
} ms_input_counts;
MS_API int ms_input_count(const char *path, ms_input_counts *counts, ms_stream_info *info);
/* The same, opened with `options` (a rank and thread of a profile; NULL: the defaults). */
MS_API int ms_input_count_with(const char *path, const ms_open_options *options,
                               ms_input_counts *counts, ms_stream_info *info);

#ifdef __cplusplus
}
#endif

#endif

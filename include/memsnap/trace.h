/* Trace files: the .mtr format (docs/formats.md), Valgrind Lackey text, DineroIV din.
 *
 * Readers are sources, writers are sinks (memsnap/stream.h). All readers stream in
 * constant memory; all writers write through ms_output (temporary name, then rename), so
 * a failed or interrupted conversion never leaves a half-written file. Errors name the
 * file and the byte offset (or line) where the input went wrong.
 */
#ifndef MEMSNAP_TRACE_H
#define MEMSNAP_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "memsnap/api.h"
#include "memsnap/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ms_trace_format {
  MS_FORMAT_UNKNOWN = 0,
  MS_FORMAT_MTR,
  MS_FORMAT_LACKEY,
  MS_FORMAT_DIN,
} ms_trace_format;

/* Detects the format of a file from its first bytes (the .mtr magic, else the shape of
 * the first non-comment line), falling back to the extension. Every reader below takes "-"
 * (standard input), pipes and FIFOs as well as files (memsnap/input.h): Lackey and din are
 * read as they arrive; a .mtr stream is first copied to a temporary file. */
MS_API ms_trace_format ms_trace_detect(const char *path);
/* Format named by a path's extension (.mtr, .lackey, .din), or MS_FORMAT_UNKNOWN. */
MS_API ms_trace_format ms_trace_format_from_extension(const char *path);
MS_API const char *ms_trace_format_name(ms_trace_format format);

/* Opens any supported trace as a source (format detected). */
MS_API int ms_trace_open(const char *path, ms_source **out);
/* Creates a writer sink for `format` at `path` ("-" for standard output, din only). */
MS_API int ms_trace_sink_new(const char *path, ms_trace_format format, ms_sink **out);

/* .mtr */
MS_API int ms_mtr_open(const char *path, ms_source **out); /* supports ms_source_seek */
MS_API int ms_mtr_sink_new(const char *path, ms_sink **out);

typedef struct ms_mtr_stat {
  uint32_t version;
  uint64_t access_count;
  uint64_t chunk_count;
  uint64_t file_bytes;
  uint64_t counts_by_kind[3]; /* load, store, modify */
  int truncated;              /* MS_STREAM_TRUNCATED set in the trailer */
} ms_mtr_stat;
/* Reads the header and trailer only (no decompression of chunks). Fills `info` (caller
 * calls ms_stream_info_clear) when non-NULL. */
MS_API int ms_mtr_stat_file(const char *path, ms_mtr_stat *stat, ms_stream_info *info);

/* Recovery of a damaged .mtr (a cut copy, a full disk, a damaged byte): writes to out_path
 * a valid .mtr of every chunk before the first damage, each checked whole (its checksums
 * and every record), found in order from the header on (a cut file has no chunk index).
 * When the damage leaves the trailer intact, its site table, exit status and flags are
 * kept; otherwise the sites are placeholders (numbered as before, no pc, no location) and
 * the exit status unknown. A damaged trace's copy is flagged MS_STREAM_TRUNCATED and
 * MS_STREAM_RECOVERED; an intact trace is copied whole (report->intact). Fails, writing
 * nothing, when the header is damaged or no chunk is intact. */
typedef struct ms_mtr_recovery {
  uint64_t chunks, accesses; /* kept */
  uint64_t damage_offset;    /* where the damage starts: the first byte not kept */
  uint64_t file_bytes;
  uint32_t sites;   /* sites of the copy */
  int intact;       /* no damage: the whole trace was copied */
  int sites_lost;   /* the trailer was damaged: the sites are placeholders */
  char damage[400]; /* what is wrong at damage_offset (a reader's message) */
} ms_mtr_recovery;
MS_API int ms_mtr_recover(const char *path, const char *out_path, ms_mtr_recovery *report);

/* Valgrind Lackey --trace-mem=yes text: " L addr,size", " S ...", " M ...", "I ..." lines
 * (instruction lines are skipped, other "==pid==" lines ignored). */
MS_API int ms_lackey_open(const char *path, ms_source **out);
/* DineroIV din: "label address [size]" per line; label 0 read, 1 write, 2 ifetch (skipped),
 * 3 escape, 4 flush (ignored). A modify is written as a read then a write. */
MS_API int ms_din_open(const char *path, ms_source **out);
MS_API int ms_din_sink_new(const char *path, ms_sink **out);

/* Text, one line per access, to `out` (not closed): "INDEX THREAD KIND 0xADDRESS SIZE
 * SITE", indexes counted from first_index; SITE is the site's description from the
 * stream's site table ("-" for none), or with site_numbers its number ("s12"), as `memsnap
 * dump` and `memsnap replay` print them. */
MS_API int ms_text_sink_new(FILE *out, uint64_t first_index, int site_numbers, ms_sink **sink);

#ifdef __cplusplus
}
#endif

#endif

/* Where a command's report goes, and the line (or JSON fields) that say what it observed.
 *
 * A report goes to the file of -o (or the command's report option), "-" being standard
 * output; without one, to standard output for files, and to standard error when the
 * command observes a live program, whose standard output is its own (as perf stat and
 * Valgrind do): the program's output must stay byte for byte what it is without memsnap.
 *
 * Every report starts by saying what it observed: the program and its arguments, its exit
 * status or the signal that killed it, and whether the stream is truncated (a prefix of
 * the run: a killed or crashed program, a trace file marked truncated). */
#ifndef MEMSNAP_REPORT_H
#define MEMSNAP_REPORT_H

#include <json-c/json.h>
#include <stdio.h>

#include "memsnap/analysis.h"
#include "memsnap/output.h"
#include "memsnap/stream.h"

/* What a stream was observed from (memsnap/analysis.h). */
typedef ms_observed report_observed;

/* ms_observed_take, with the message printed on failure (out of memory): 0 or -1. */
int report_observe(const char *command, report_observed *observed, const ms_stream_info *info,
                   const char *path);
#define report_observed_free ms_observed_free
#define report_write_observed ms_observed_write_text
/* Adds "program", "input", "exit_status", "signal" and "truncated" to `object`, as
 * ms_observed_write_json writes them. */
void report_add_observed_json(json_object *object, const report_observed *observed);
/* ms_observed_write_json: 0, or -1 if `json` is not an object. */
int report_write_json(FILE *out, const report_observed *observed, const char *json);

/* Opens the report: `path` if given ("-": standard output), else standard error for a live
 * program and standard output otherwise. Prints the error and returns -1 on failure. */
int report_open(const char *command, ms_output *out, const char *path, int live);
/* Commits the report (prints the error and returns -1 on failure). */
int report_commit(const char *command, ms_output *out);
/* Ends the report: commits it, or, when `rc` is negative or a write failed, removes it
 * and says "cannot write the report". Returns 0 or -1. */
int report_finish(const char *command, ms_output *out, int rc);

/* The report of `analysis` (ms_analysis_report) after the stream of `source`, read from
 * `path` (NULL: a live program), to `output` by report_open's rules. 0, or -1 after a
 * message. */
int report_analysis(const char *command, const ms_analysis *analysis, const ms_source *source,
                    const char *path, const char *output, ms_report_format format);

#endif

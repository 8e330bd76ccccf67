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

#include "memsnap/output.h"
#include "memsnap/stream.h"

typedef struct report_observed {
  char *program;   /* the program and its arguments, NULL if unknown */
  char *input;     /* the file read, NULL for a live program */
  int exit_status; /* -1 unknown */
  int signal;      /* the signal that killed the program, 0 if none */
  int truncated;   /* 1 a prefix of the run, 0 complete, -1 not known (a .sig) */
} report_observed;

/* Takes what `info` says of the stream read from `path` (NULL: a live program). Returns 0,
 * or -1 out of memory (message printed). */
int report_observe(const char *command, report_observed *observed, const ms_stream_info *info,
                   const char *path);
void report_observed_free(report_observed *observed);

/* "observed: PROGRAM ARGS (trace FILE): exit status N | killed by SIG; complete | truncated". */
void report_write_observed(FILE *out, const report_observed *observed);
/* Adds "program", "exit_status", "signal" and "truncated" to `object`. */
void report_add_observed_json(json_object *object, const report_observed *observed);
/* Writes the JSON object `json` (a report written by the library) with the fields of
 * report_add_observed_json first. Returns 0, or -1 if `json` is not an object. */
int report_write_json(FILE *out, const report_observed *observed, const char *json);

/* Opens the report: `path` if given ("-": standard output), else standard error for a live
 * program and standard output otherwise. Prints the error and returns -1 on failure. */
int report_open(const char *command, ms_output *out, const char *path, int live);
/* Commits the report (prints the error and returns -1 on failure). */
int report_commit(const char *command, ms_output *out);
/* Ends the report: commits it, or, when `rc` is negative or a write failed, removes it
 * and says "cannot write the report". Returns 0 or -1. */
int report_finish(const char *command, ms_output *out, int rc);

#endif

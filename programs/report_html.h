/* The page of `memsnap report`: one self-contained HTML file (inline CSS, inline SVG
 * charts, a few lines of inline script that sort tables), drawn from the report's JSON
 * (programs/cmd_report.c) so that the page and `--json` show the same numbers.
 *
 * Every string that comes from an input (programs, paths, functions, patterns) is escaped
 * for HTML. The page is aggregated: its size does not grow with the length of the run. */
#ifndef MEMSNAP_REPORT_HTML_H
#define MEMSNAP_REPORT_HTML_H

#include <json-c/json.h>
#include <stdio.h>

/* `root` is {"memsnap_version": ..., "inputs": [one object per input]}; returns 0, or -1
 * if a write failed. */
int report_html_write(FILE *out, json_object *root);

/* `text` escaped for HTML text and attribute values (& < > " '). */
void report_html_escape(FILE *out, const char *text);

#endif

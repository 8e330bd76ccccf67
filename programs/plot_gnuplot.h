/* Pictures through gnuplot (Debian package gnuplot-nox): PNG (pngcairo) or SVG, chosen by
 * the output's extension, written atomically (a temporary beside the target, renamed when
 * gnuplot succeeds). MEMSNAP_GNUPLOT overrides the gnuplot executable. */
#ifndef MEMSNAP_PLOT_GNUPLOT_H
#define MEMSNAP_PLOT_GNUPLOT_H

#include <stdio.h>

/* 1 for .png, 2 for .svg, 0 otherwise. */
int plot_format_of(const char *path);

/* Runs gnuplot on `script` (which must not set the terminal or the output) to draw `output`.
 * Prints a one-line message and returns 1 on failure, 0 on success. */
int plot_run_gnuplot(const char *command, const char *output, const char *script);

/* Appends a gnuplot single-quoted string literal of `text` to `out`. */
void plot_quote(FILE *out, const char *text);

#endif

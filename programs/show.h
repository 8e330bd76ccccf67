/* Summaries printed by `memsnap show`, one function per kind of file (see cmd_show.c).
 * Each prints to standard output (JSON if json != 0) and returns the exit status. */
#ifndef MEMSNAP_SHOW_H
#define MEMSNAP_SHOW_H

int show_signature(const char *command, const char *path, int json);

#endif

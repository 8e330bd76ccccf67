/* Running gnuplot for memsnap plot: see plot_gnuplot.h. */
#include "plot_gnuplot.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

int plot_format_of(const char *path) {
  size_t n = strlen(path);
  if (n > 4 && !strcmp(path + n - 4, ".png")) return 1;
  if (n > 4 && !strcmp(path + n - 4, ".svg")) return 2;
  return 0;
}

void plot_quote(FILE *out, const char *text) {
  fputc('\'', out);
  for (const char *p = text; *p; p++) {
    if (*p == '\'') fputc('\'', out); /* '' is a quote inside '...' */
    if (*p != '\n') fputc(*p, out);
  }
  fputc('\'', out);
}

/* 'text' for sh, with ' written as '\'' */
static void shell_quote(FILE *out, const char *text) {
  fputc('\'', out);
  for (const char *p = text; *p; p++)
    if (*p == '\'')
      fputs("'\\''", out);
    else
      fputc(*p, out);
  fputc('\'', out);
}

int plot_run_gnuplot(const char *command, const char *output, const char *script) {
  int format = plot_format_of(output);
  if (!format) {
    cli_error(command, "%s: the picture's name must end in .png or .svg", output);
    return 2;
  }
  size_t n = strlen(output);
  char *temp = malloc(n + 16);
  if (!temp) {
    cli_error(command, "out of memory");
    return 1;
  }
  /* a temporary beside the target, with the same extension (gnuplot does not care) */
  snprintf(temp, n + 16, "%s.%ld.tmp%s", output, (long)getpid(), output + n - 4);
  const char *gnuplot = getenv("MEMSNAP_GNUPLOT");
  char *line = NULL;
  size_t line_size = 0;
  FILE *shell = open_memstream(&line, &line_size);
  if (!shell) {
    free(temp);
    cli_error(command, "out of memory");
    return 1;
  }
  shell_quote(shell, gnuplot && *gnuplot ? gnuplot : "gnuplot");
  fputs(" >/dev/null", shell);
  fclose(shell);
  fflush(stdout);
  /* If gnuplot is missing or dies early, the writes below hit a closed pipe: ignore SIGPIPE
   * meanwhile so that memsnap reports it (from pclose's status) instead of being killed. */
  struct sigaction ignore = {.sa_handler = SIG_IGN}, previous;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &previous);
  FILE *pipe = popen(line, "w");
  free(line);
  if (!pipe) {
    cli_error(command, "cannot run gnuplot: %s", strerror(errno));
    sigaction(SIGPIPE, &previous, NULL);
    free(temp);
    return 1;
  }
  if (format == 1)
    fputs("set terminal pngcairo size 1100,750 enhanced font 'DejaVu Sans,11'\n", pipe);
  else
    fputs("set terminal svg size 1100,750 enhanced font 'DejaVu Sans,11' background 'white'\n",
          pipe);
  fputs("set output ", pipe);
  plot_quote(pipe, temp);
  fputs("\n", pipe);
  fputs(script, pipe);
  fputs("\nset output\n", pipe);
  int status = pclose(pipe);
  sigaction(SIGPIPE, &previous, NULL);
  if (status != 0) {
    unlink(temp);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      cli_error(command, "gnuplot not found: install the Debian package 'gnuplot-nox' (or run "
                         "scripts/install-deps.sh)");
    else
      cli_error(command, "gnuplot failed to draw %s (its messages are above)", output);
    free(temp);
    return 1;
  }
  if (rename(temp, output) != 0) {
    cli_error(command, "%s: %s", output, strerror(errno));
    unlink(temp);
    free(temp);
    return 1;
  }
  free(temp);
  return 0;
}

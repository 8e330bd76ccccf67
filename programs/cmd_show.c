/* memsnap show FILE [--json]: a readable summary of a memsnap file.
 *
 * The kind of file is told by its contents (ms_input_kind_of); each kind shown has one row
 * in `formats` with its summary function, so that a new format is one more row.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memsnap/input.h"
#include "memsnap/open.h"
#include "memsnap/psnap.h"
#include "show.h"

typedef struct show_format {
  ms_input_kind kind;
  const char *name;
  int (*show)(const char *command, const char *path, int json);
  /* or, for a format with options of its own, the whole command line */
  int (*show_command_line)(int argc, char **argv);
} show_format;

static const show_format formats[] = {
    {MS_INPUT_SIGNATURE, "memory signature (.sig)", show_signature, NULL},
    {MS_INPUT_PSNAP, "PSnAP profile (.psnap, or compressed with zstd)", NULL, show_profile},
};

/* Options of any format that take a value as the next argument. */
static int takes_value(const char *option) {
  static const char *const with_value[] = {"-s", "--site", "-f", "--function", "-l", "--line"};
  for (size_t i = 0; i < sizeof with_value / sizeof with_value[0]; i++)
    if (strcmp(option, with_value[i]) == 0) return 1;
  return 0;
}

/* The first argument that is neither an option nor an option's value, or NULL. */
static const char *input_path(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] != '-' || argv[i][1] == '\0') return argv[i];
    if (takes_value(argv[i])) i++;
  }
  return NULL;
}

/* The format of `path`'s kind, or NULL. The look leaves standard input or a pipe whole
 * for the reader. */
static const show_format *format_of(const char *path) {
  ms_input_kind kind;
  if (ms_input_kind_of(path, &kind) < 0) return NULL;
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (formats[i].kind == kind) return &formats[i];
  return NULL;
}

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap show SIGNATURE.sig [--json]\n"
              "       memsnap show PROFILE.psnap [--site N | --function F | --line FILE:LINE |"
              " --all] [--json]\n"
              "  a readable summary of a memsnap file; kinds recognized by their first line:\n");
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    fprintf(to, "    %s\n", formats[i].name);
  fprintf(to, "  --json                the file's content as JSON\n"
              "  -s, --site N          .psnap: show site N in full\n"
              "  -f, --function NAME   .psnap: show the sites of a function in full\n"
              "  -l, --line FILE:LINE  .psnap: show the sites of a source line in full\n"
              "  -a, --all             .psnap: list every site (default: the 40 heaviest)\n");
}

int cmd_show(int argc, char **argv) {
  static const struct option long_options[] = {
      {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c, json = 0;
  char line[1];
  const char *first_input = input_path(argc, argv);
  const show_format *format = first_input ? format_of(first_input) : NULL;
  if (format && format->show_command_line) return format->show_command_line(argc, argv);
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
    switch (c) {
    case 'j': json = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count != 1 || inputs.program_argc > 0) {
    cli_error(argv[0], "give one file to show");
    return 2;
  }
  const char *path = inputs.paths[0];
  size_t n;
  if (ms_input_peek(path, 0, line, 1, &n) < 0) return cli_fail(argv[0]); /* cannot open */
  format = format_of(path);
  if (format && format->show) return format->show(argv[0], path, json);
  cli_error(argv[0], "%s:1: not a file memsnap shows (memsnap show --help lists the kinds)",
            ms_input_name(path));
  return 1;
}

/* memsnap: the command-line program. One file per subcommand; this one dispatches. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memsnap/input.h"

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} command;

static const command commands[] = {
    {"record", cmd_record, "observe a program and write its accesses to a .mtr trace"},
    {"info", cmd_info, "describe a trace: program, threads, accesses, sites, size"},
    {"dump", cmd_dump, "print accesses as text or DineroIV din"},
    {"convert", cmd_convert, "convert between .mtr, Lackey and din traces"},
    {"recover", cmd_recover, "a valid trace of the intact chunks of a damaged .mtr"},
    {"hierarchies", cmd_hierarchies, "list the built-in cache hierarchies"},
    {"sim", cmd_sim, "simulate cache hierarchies on a trace or a live program"},
    {"annotate", cmd_annotate, "misses per function and source line, with the source text"},
    {"profile", cmd_profile, "build a PSnAP profile (.psnap) of a trace or a live program"},
    {"replay", cmd_replay, "regenerate the accesses of a profile (all, some sites, a chunk)"},
    {"merge", cmd_merge, "merge the profiles of threads and MPI ranks into one (blocks)"},
    {"verify", cmd_verify, "compare a profile with its trace: exact matches, hit rates"},
    {"surface", cmd_surface, "hit rates of fully-associative LRU caches over widths x depths"},
    {"scores", cmd_scores, "spatial and temporal locality scores, whole run and per site"},
    {"compare", cmd_compare, "two sources on the 46 hierarchies and surfaces, or a matrix"},
    {"plot", cmd_plot, "pictures: cache surface, reuse CDFs, locality chart (PNG, SVG)"},
    {"signature", cmd_signature, "memory signature: reuse CDF and alpha values (.sig)"},
    {"show", cmd_show, "readable summary of a memsnap file (.sig signature, .psnap profile)"},
    {"synth", cmd_synth, "trace seed imitating a memory signature (synthetic trace)"},
    {"bench", cmd_bench, "pointer-chasing benchmark running a unique-index seed"},
    {"skeleton", cmd_skeleton, "memory skeleton: a short C program behaving like the run"},
    {"report", cmd_report, "one self-contained HTML page (or JSON) of an input's results"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: memsnap COMMAND [OPTIONS] [INPUT | -- PROGRAM ARGS...]\n"
               "       memsnap help [COMMAND] | --help | --version\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nInputs: a trace (.mtr, Lackey --trace-mem=yes text, din), a .psnap profile, or\n"
               "-- PROGRAM ARGS to observe a program live. A file may be a pipe, a FIFO or -\n"
               "(standard input).\n"
               "  help COMMAND, COMMAND --help  the options of a command\n"
               "  -h, --help                    this list\n"
               "  --version                     memsnap's version\n");
}

static const command *find_command(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(name, commands[i].name)) return &commands[i];
  return NULL;
}

/* memsnap help [COMMAND]: COMMAND's own --help, so that both print the one text. */
static int help(int argc, char **argv) {
  if (argc < 3 || (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))) {
    usage(stdout);
    return 0;
  }
  const command *command = find_command(argv[2]);
  if (!command || argc > 3) {
    fprintf(stderr,
            argc > 3 ? "memsnap help: give one command\n"
                     : "memsnap help: unknown command '%s' (memsnap --help lists them)\n",
            argv[2]);
    return 2;
  }
  char *command_argv[] = {argv[2], "--help", NULL};
  return command->run(2, command_argv);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "help")) return help(argc, argv);
  if (!strcmp(argv[1], "--version")) {
    printf("memsnap %s\n", MEMSNAP_VERSION);
    return 0;
  }
  const command *command = find_command(argv[1]);
  if (command) {
    ms_input_set_wait_notice(cli_fifo_notice);
    int command_argc = cli_set_aside_program(argc - 1, argv + 1);
    if ((command_argc = cli_take_pick_options(argv[1], command_argc, argv + 1)) < 0) return 2;
    return command->run(command_argc, argv + 1);
  }
  fprintf(stderr, "memsnap: unknown command '%s' (memsnap --help lists them)\n", argv[1]);
  return 2;
}

/* Shared pieces of the memsnap command-line program: messages, option helpers, and the
 * opening of any source of accesses (a trace file of any supported format, or a live
 * program after `--`). Only programs/ prints or exits; lib/ returns statuses. */
#ifndef MEMSNAP_CLI_H
#define MEMSNAP_CLI_H

#include <stdint.h>

#include "memsnap/memsnap.h"
#include "memsnap/open.h"

/* Every subcommand: int cmd_NAME(int argc, char **argv), argv[0] is the subcommand name.
 * Returns the process exit status. */
int cmd_record(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_hierarchies(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_merge(int argc, char **argv);
/* `memsnap show` of a .psnap profile (programs/show_profile.c). */
int show_profile(int argc, char **argv);
int cmd_surface(int argc, char **argv);
int cmd_scores(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_signature(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_skeleton(int argc, char **argv);
int cmd_annotate(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* "memsnap CMD: message\n" on stderr. */
void cli_error(const char *command, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Prints ms_error_message() after the command name; returns 1 (a failing exit status). */
int cli_fail(const char *command);

/* The notice of memsnap/input.h: opening a FIFO has waited a second for a writer. main()
 * sets it for every command. */
void cli_fifo_notice(const char *name);

/* The MPI rank of this process from its launcher's environment (OMPI_COMM_WORLD_RANK,
 * PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK, SLURM_PROCID, the first set), or NULL. */
const char *cli_mpi_rank(void);
/* The number of processes of this process's MPI job (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
 * MV2_COMM_WORLD_SIZE, SLURM_NTASKS), 1 if none. */
long cli_mpi_size(void);
/* An output name with its patterns expanded, for programs run as many processes (mpirun
 * -n 4 memsnap record -o app.%r.mtr -- ./app): %r the MPI rank (cli_mpi_rank; an error if
 * there is none), %p this process's pid, %% a '%'. A name without %r in a job of several
 * processes is an error (they would all write it), but for - and /dev/ files. A malloc'ed name, or
 * NULL after a message naming `option` (exit status 2). */
char *cli_output_name(const char *command, const char *option, const char *pattern);

/* After getopt_long returned ':' (missing value) or '?' (unknown option): one line naming
 * the option; returns 2, the usage-error exit status. */
int cli_option_error(const char *command, int option, char **argv);

/* Called by main() before a subcommand runs: everything after the first `--` is the
 * program to observe; it is set aside and argv is cut at `--` (returns the new argc), so
 * that getopt_long may take options anywhere before it (`dump app.mtr --limit 20`) and
 * never sees the program's own options. */
int cli_set_aside_program(int argc, char **argv);

/* --rank R and --thread T, which every command that reads a profile takes (to pick one
 * rank and thread of a merged profile, memsnap/psnap.h ms_psnap_profile_pick): main()
 * takes them out of argv (before the program set aside) into cli_rank and cli_thread (-1:
 * not given) and returns the new argc, or -1 after a message (exit status 2). */
extern int64_t cli_rank, cli_thread;
int cli_take_pick_options(const char *command, int argc, char **argv);

/* After getopt_long: the positional arguments (trace paths) and the program set aside. */
typedef struct cli_inputs {
  int count; /* positional arguments before `--` */
  char **paths;
  int program_argc; /* 0 if there was no `--` */
  char **program_argv;
} cli_inputs;
void cli_split_inputs(int argc, char **argv, int optind, cli_inputs *out);

/* The options the CLI opens inputs with (memsnap/open.h): Valgrind run quietly, its own
 * messages passed to standard error; commands then set capture (record) or seed expansion
 * (sim, compare). */
void cli_open_options_init(ms_open_options *options);
/* Opens any input through ms_open: a file of any kind or, when program_argc > 0, the
 * program under observation. options NULL: cli_open_options_init's. Prints the error and
 * returns NULL on failure. */
ms_source *cli_open_source(const char *command, const char *path, int program_argc,
                           char **program_argv, const ms_open_options *options);

/* Parses --via (auto, valgrind, rt) and --sample ON/OFF (counts as cli_parse_count);
 * -1 on a malformed value. */
int cli_parse_via(const char *text, int *via);
int cli_parse_sample(const char *text, uint64_t *on, uint64_t *off);
/* Parses the value of --footprint (option 'F') or --length ('L') into *footprint or
 * *length; returns 0, or 2 after a one-line error naming the option. */
int cli_parse_expansion_option(const char *command, int option, const char *text,
                               uint64_t *footprint, uint64_t *length);

/* Exit status to pass through for a live program (0 for files). Called once a command has
 * read its source to the end, it also prints, once, the notes on what a live capture did
 * not observe: an execve that replaced the program, processes it started. */
int cli_program_status(const ms_source *source);

/* Parses a count such as 20, 4k, 1M, 2G (powers of 1000 for k/M/G, 1024 for Ki/Mi/Gi).
 * Returns 0 or -1 on a malformed value. */
int cli_parse_count(const char *text, uint64_t *value);

#endif

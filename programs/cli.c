/* Shared command-line pieces (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memsnap/capture.h"
#include "memsnap/input.h"
#include "memsnap/number.h"
#include "memsnap/open.h"
#include "memsnap/psnap.h"
#include "memsnap/synth.h"
#include "memsnap/trace.h"

void cli_error(const char *command, const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "memsnap %s: ", command);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
}

int cli_fail(const char *command) {
  cli_error(command, "%s", ms_error_message());
  return 1;
}

const char *cli_mpi_rank(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                      "MV2_COMM_WORLD_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *value = getenv(names[i]);
    if (value && *value && strspn(value, "0123456789") == strlen(value)) return value;
  }
  return NULL;
}

long cli_mpi_size(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                                      "SLURM_NTASKS"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *value = getenv(names[i]);
    if (value && *value) return strtol(value, NULL, 10);
  }
  return 1;
}

char *cli_output_name(const char *command, const char *option, const char *pattern) {
  size_t size = strlen(pattern) + 1, used = 0;
  /* every rank of an MPI job writing one file: the last to finish would win, silently */
  if (cli_mpi_size() > 1 && !strstr(pattern, "%r") && strcmp(pattern, "-") &&
      strncmp(pattern, "/dev/", 5)) {
    cli_error(command,
              "%s %s: the %ld processes of this MPI job would all write this one file; name "
              "each rank's with %%r (app.%%r.psnap), then memsnap merge them if they are profiles",
              option, pattern, cli_mpi_size());
    return NULL;
  }
  for (const char *p = pattern; (p = strchr(p, '%')); p++)
    size += 32; /* room for a pid or a rank */
  char *name = malloc(size);
  if (!name) {
    cli_error(command, "out of memory");
    return NULL;
  }
  for (const char *p = pattern; *p; p++) {
    const char *rank = NULL;
    if (*p != '%') {
      name[used++] = *p;
      continue;
    }
    switch (p[1]) {
    case '%': name[used++] = '%'; break;
    case 'p': used += (size_t)snprintf(name + used, 32, "%ld", (long)getpid()); break;
    case 'r':
      if (!(rank = cli_mpi_rank()) || strlen(rank) > 20) {
        cli_error(command,
                  "%s %s: %%r needs an MPI rank in the environment (OMPI_COMM_WORLD_RANK, "
                  "PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK or SLURM_PROCID); none is set",
                  option, pattern);
        free(name);
        return NULL;
      }
      used += (size_t)snprintf(name + used, 32, "%s", rank);
      break;
    default:
      cli_error(command, "%s %s: unknown pattern %%%c (%%r rank, %%p pid, %%%% a '%%')", option,
                pattern, p[1] ? p[1] : ' ');
      free(name);
      return NULL;
    }
    p++;
  }
  name[used] = '\0';
  return name;
}

int cli_option_error(const char *command, int option, char **argv) {
  const char *given = argv[optind - 1];
  char short_option[3] = {'-', (char)optopt, '\0'};
  if (optopt && given[0] == '-' && given[1] != '-') given = short_option;
  if (option == ':')
    cli_error(command, "option %s needs a value", given);
  else
    cli_error(command, "unknown option %s (memsnap %s --help lists them)", given, command);
  return 2;
}

void cli_fifo_notice(const char *name) {
  fprintf(stderr,
          "memsnap: waiting for a writer on FIFO %s (nothing has opened it for writing yet; "
          "Ctrl-C to stop)\n",
          name);
}

int64_t cli_rank = -1, cli_thread = -1;

int cli_take_pick_options(const char *command, int argc, char **argv) {
  int kept = 1;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *value = NULL;
    int64_t *into = NULL;
    const char *name = NULL;
    for (int which = 0; which < 2 && !into; which++) {
      name = which ? "--thread" : "--rank";
      size_t n = strlen(name);
      if (!strcmp(arg, name)) {
        if (i + 1 >= argc) {
          cli_error(command, "%s needs a number", name);
          return -1;
        }
        value = argv[++i];
        into = which ? &cli_thread : &cli_rank;
      } else if (!strncmp(arg, name, n) && arg[n] == '=') {
        value = arg + n + 1;
        into = which ? &cli_thread : &cli_rank;
      }
    }
    if (!into) {
      argv[kept++] = argv[i];
      continue;
    }
    char *end;
    errno = 0;
    unsigned long long number = strtoull(value, &end, 10);
    if (!*value || *end || errno || value[0] == '-' ||
        number > (into == &cli_thread ? 65535ull : 4294967295ull)) {
      cli_error(command, "%s: expected a number from 0 to %s, got '%s'", name,
                into == &cli_thread ? "65535" : "2^32 - 1", value);
      return -1;
    }
    *into = (int64_t)number;
  }
  argv[kept] = NULL;
  return kept;
}

/* The program after `--`, set aside by main() before any option parsing. */
static int program_argc;
static char **program_argv;

int cli_set_aside_program(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--") == 0) {
      program_argc = argc - i - 1;
      program_argv = argv + i + 1;
      argv[i] = NULL;
      return i;
    }
  return argc;
}

void cli_split_inputs(int argc, char **argv, int optind, cli_inputs *out) {
  memset(out, 0, sizeof *out);
  out->count = optind < argc ? argc - optind : 0;
  out->paths = argv + optind;
  out->program_argc = program_argc;
  out->program_argv = program_argv;
}

int cli_parse_expansion_option(const char *command, int option, const char *text,
                               uint64_t *footprint, uint64_t *length) {
  if (cli_parse_count(text, option == 'F' ? footprint : length) == 0) return 0;
  cli_error(command, "bad %s '%s'", option == 'F' ? "--footprint" : "--length", text);
  return 2;
}

/* The source that observes a live program, whose exit status the command passes through. */
static const ms_source *live_source;

/* Valgrind's own messages reach memsnap's standard error unchanged, as they would have
 * reached the program's (the capture reads them to recognise a Valgrind that gave up). */
static void pass_tool_messages(void *context, const char *text, size_t length) {
  (void)context;
  fwrite(text, 1, length, stderr);
}

void cli_open_options_init(ms_open_options *options) {
  memset(options, 0, sizeof *options);
  options->capture.quiet = 1;
  options->capture.tool_messages = pass_tool_messages;
  options->pick_rank = cli_rank >= 0;
  options->rank = cli_rank >= 0 ? (uint32_t)cli_rank : 0;
  options->pick_thread = cli_thread >= 0;
  options->thread = cli_thread >= 0 ? (uint32_t)cli_thread : 0;
}

int cli_parse_via(const char *text, int *via) {
  if (strcmp(text, "auto") == 0)
    *via = MS_CAPTURE_AUTO;
  else if (strcmp(text, "valgrind") == 0)
    *via = MS_CAPTURE_VALGRIND;
  else if (strcmp(text, "rt") == 0)
    *via = MS_CAPTURE_RT;
  else
    return -1;
  return 0;
}

int cli_parse_sample(const char *text, uint64_t *on, uint64_t *off) {
  return ms_parse_sampling(text, on, off);
}

ms_source *cli_open_source(const char *command, const char *path, int program_argc,
                           char **program_argv, const ms_open_options *options) {
  ms_open_options defaults;
  if (!options) {
    cli_open_options_init(&defaults);
    options = &defaults;
  }
  ms_source *source = NULL;
  if (ms_open(path, program_argc, program_argv, options, &source) < 0) {
    cli_fail(command);
    return NULL;
  }
  if (program_argc > 0) live_source = source;
  return source;
}

/* The notes on how a live program's stream ended, each told once. */
enum { TOLD_EXEC = 1, TOLD_CHILDREN = 2, TOLD_LOST = 4, TOLD_SIGILL = 8 };

static int tell_once(int *told, int which) {
  if (*told & which) return 0;
  *told |= which;
  return 1;
}

int cli_program_status(const ms_source *source) {
  if (source != live_source) return 0;
  const ms_stream_info *info = ms_source_info(source);
  const char *program = info->program ? info->program : "the program";
  static int told;
  if ((info->flags & MS_STREAM_EXEC) && tell_once(&told, TOLD_EXEC))
    fprintf(stderr,
            "memsnap: note: %s replaced itself with another program (execve), which was not "
            "followed (--no-follow-exec, or a setuid, setgid or non-amd64 program, which "
            "Valgrind cannot run): the accesses are only those from before the exec.\n",
            program);
  if (info->children && tell_once(&told, TOLD_CHILDREN))
    fprintf(stderr,
            "memsnap: note: %s started %u other process%s (fork, system, posix_spawn), whose "
            "accesses are not observed: capture through Valgrind follows one process (and "
            "the programs it execs).\n",
            program, info->children, info->children == 1 ? "" : "es");
  if (info->capture_failure && tell_once(&told, TOLD_LOST))
    fprintf(stderr, "memsnap: note: %s. The trace holds what came before (truncated).\n",
            info->capture_failure);
  if ((info->flags & MS_STREAM_TRUNCATED) && !(info->flags & MS_STREAM_EXEC) &&
      info->exit_status >= 0 && info->exit_status < 128 && tell_once(&told, TOLD_LOST))
    fprintf(stderr,
            "memsnap: note: the accesses of %s stopped arriving before it ended (it exited with "
            "status %d, but its stream has no end): it closed file descriptors it had not "
            "opened, memsnap's capture channel among them, or it left by _exit or quick_exit, "
            "which skip the compiler runtime's last flush. The trace holds what came before "
            "(truncated).\n",
            program, info->exit_status);
  if (info->exit_status == 128 + SIGILL && info->capture &&
      strcmp(info->capture, "valgrind") == 0 && tell_once(&told, TOLD_SIGILL)) {
    fprintf(stderr,
            "memsnap: note: %s was killed by SIGILL under Valgrind. If Valgrind's \"Illegal "
            "opcode\" is at an instruction of the program's own code (not a trap it set), "
            "Valgrind cannot execute it: ",
            program);
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512f"))
      fprintf(stderr, "it has no AVX-512, which a build with -march=native uses on this CPU. "
                      "Rebuild with -march=x86-64-v3 (or add -mno-avx512f), or build with "
                      "memsnap-cc, whose capture runs the program natively. ");
    else
#endif
      fprintf(stderr, "rebuild the program for an older CPU, or build it with memsnap-cc, "
                      "whose capture runs the program natively. ");
    fprintf(stderr, "The trace holds the accesses made before it (truncated).\n");
  }
  return info->exit_status > 0 ? info->exit_status : 0;
}

int cli_parse_count(const char *text, uint64_t *value) {
  return ms_parse_number_text(text, MS_NUMBER_COUNT, value);
}

/* memsnap merge: one profile for a whole parallel run (ScalaMemTrace's inter-thread and
 * inter-process compression, scalamemtrace-budanur-mueller-gamblin-2010.txt 2.2-2.3).
 *
 *   memsnap merge app.*.psnap -o app.psnap
 *   memsnap merge app.%r.psnap -o app.psnap     (ranks 0, 1, ... while the files exist)
 *
 * Each profile's threads are merged (ms_psnap_merge_threads), then the profiles of the
 * ranks in log2(N) pairwise rounds (ms_psnap_merge): the same bytes whatever the order of
 * the files. The profiles say their rank (`rank R`, written by memsnap profile under
 * mpirun or with --rank), or are merged profiles themselves.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "memsnap/error.h"
#include "memsnap/psnap.h"
#include "rank_files.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap merge [-o OUT.psnap] [-z] [-q] PROFILE...\n"
              "  A PROFILE holding %%r stands for the files of ranks 0, 1, 2, ... while they\n"
              "  exist (app.%%r.psnap: the names of thousands of ranks' files overflow the\n"
              "  command line that mpirun hands on); a rank missing before one that exists\n"
              "  is an error.\n"
              "  Merges the profiles of the ranks of one run (each with its `rank` line, as\n"
              "  memsnap profile writes them under mpirun: app.%%r.psnap), or merged profiles,\n"
              "  into one profile in block form: threads and ranks whose sites and orders are\n"
              "  the same but for addresses affine in their numbers become one block. Of one\n"
              "  profile, merges its threads. Readers pick a rank and thread with --rank R\n"
              "  --thread T (default: the lowest rank, all its threads). Under mpirun -n K,\n"
              "  the K processes share the work (memsnap-merge-mpi) and write the same bytes.\n"
              "  -o, --output FILE     merged profile (default: standard output; FILE.zst is\n"
              "                        compressed with zstd)\n"
              "  -z, --compress        compress with zstd whatever the name\n"
              "  -q, --quiet           no summary line\n");
}

/* Under mpirun with several processes: memsnap-merge-mpi, beside this program, does the
 * merge over MPI (programs/mpi/merge_mpi.c); returns only if it cannot be started. */
static int exec_over_mpi(const char *command, int argc, char **argv) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 32);
  if (n <= 0) {
    cli_error(command, "cannot find memsnap-merge-mpi: /proc/self/exe unreadable");
    return 1;
  }
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  strcpy(slash ? slash + 1 : self, "memsnap-merge-mpi");
  char **args = calloc((size_t)argc + 1, sizeof *args);
  if (!args) return 1;
  args[0] = self;
  for (int i = 1; i < argc; i++)
    args[i] = argv[i];
  execv(self, args);
  cli_error(command, "%s: cannot start it (%m): the merge over MPI needs it beside memsnap", self);
  free(args);
  return 1;
}

int cmd_merge(int argc, char **argv) {
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"compress", no_argument, NULL, 'z'},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  const char *output = "-";
  int compress = 0, quiet = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:zqh", options, NULL)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'z': compress = 1; break;
    case 'q': quiet = 1; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  if (inputs.count < 1 || inputs.program_argc) {
    cli_error(argv[0], "give the profiles to merge");
    return 2;
  }
  if (cli_rank >= 0 || cli_thread >= 0) {
    cli_error(argv[0], "--rank and --thread pick in a profile; merge takes whole profiles");
    return 2;
  }
  if (cli_mpi_size() > 1) return exec_over_mpi(argv[0], argc, argv);
  char **paths = NULL, why[1024];
  int count = 0;
  if (rank_files(inputs.paths, inputs.count, &paths, &count, why, sizeof why) < 0) {
    cli_error(argv[0], "%s", why);
    return 1;
  }
  ms_psnap_profile *profiles = calloc((size_t)count, sizeof *profiles);
  if (!profiles) {
    cli_error(argv[0], "out of memory");
    rank_files_free(paths, count);
    return 1;
  }
  int status = 1, loaded = 0;
  for (int i = 0; i < count; i++, loaded++) {
    if (ms_psnap_profile_load(paths[i], &profiles[i]) < 0) {
      cli_fail(argv[0]);
      goto out;
    }
    if (ms_psnap_merge_threads(&profiles[i]) < 0) {
      cli_error(argv[0], "%s: %s", paths[i], ms_error_message());
      goto out;
    }
    if (count > 1 && !profiles[i].blocks && !profiles[i].has_rank) {
      cli_error(argv[0],
                "%s: the profile has no rank (no 'rank' line): profile each rank under mpirun "
                "(memsnap profile -o app.%%r.psnap) or with --rank R",
                paths[i]);
      goto out;
    }
  }
  ms_psnap_profile merged;
  loaded = 0; /* taken over by the merge */
  if (ms_psnap_merge(profiles, (uint32_t)count, &merged) < 0) {
    cli_fail(argv[0]);
    goto out;
  }
  size_t n = strlen(output);
  int rc = ms_psnap_profile_save_as(&merged, output,
                                    compress || (n > 4 && !strcmp(output + n - 4, ".zst")));
  if (rc < 0)
    cli_fail(argv[0]);
  else {
    status = 0;
    if (!quiet)
      fprintf(stderr,
              "memsnap merge: %s: %d profiles, %llu accesses, %u threads of ranks in %u blocks, "
              "%u sites\n",
              output, count, (unsigned long long)merged.access_count, merged.info.thread_count,
              merged.thread_count, merged.site_count);
  }
  ms_psnap_profile_free(&merged);
out:
  for (int i = 0; i < loaded; i++)
    ms_psnap_profile_free(&profiles[i]);
  free(profiles);
  rank_files_free(paths, count);
  return status;
}

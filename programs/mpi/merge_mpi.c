/* memsnap-merge-mpi: `memsnap merge` spread over the processes of an MPI job.
 *
 *   mpirun -n K memsnap merge app.*.psnap -o app.psnap
 *   mpirun -n K memsnap merge app.%r.psnap -o app.psnap   (every process expands it alike)
 *
 * memsnap merge execs this program when it runs as one of several MPI processes; libmpi
 * stays out of the memsnap program itself. The merge is the serial one's, tree for tree
 * (memsnap/psnap.h, ms_psnap_merge): the N profiles sorted by rank are the leaves, round k
 * merges nodes 2j and 2j + 1 of level k. Each process takes a whole subtree of level L
 * (the smallest with at most K nodes: 2^L consecutive profiles), merges it alone, and the
 * results go up a binomial tree over MPI (process p receives from p + 2^s at step s, the
 * text of the profile, as memsnap writes it), so that process 0 writes the very bytes of
 * the serial merge. Ranks are found first from the profiles' headers alone
 * (ms_psnap_peek_rank), each process reading every K-th file; a file whose header has no
 * rank (a merged profile) is read whole.
 */
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"
#include "../rank_files.h"

static int me, processes;

static void fail(const char *format, const char *detail) {
  fprintf(stderr, "memsnap merge: ");
  fprintf(stderr, format, detail);
  fputc('\n', stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

typedef struct leaf {
  uint32_t rank;
  int file; /* index in the inputs */
} leaf;

static int by_rank(const void *a, const void *b) {
  const leaf *x = a, *y = b;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The lowest rank of a profile file: its header's, else the whole profile's. */
static uint32_t rank_of(const char *path) {
  uint32_t rank;
  int found = ms_psnap_peek_rank(path, &rank);
  if (found < 0) fail("%s", ms_error_message());
  if (found) return rank;
  ms_psnap_profile p;
  if (ms_psnap_profile_load(path, &p) < 0) fail("%s", ms_error_message());
  if (!p.blocks) fail("%s: the profile has no rank (no 'rank' line)", path);
  rank = UINT32_MAX;
  for (uint32_t t = 0; t < p.thread_count; t++)
    if (p.threads[t].rank < rank) rank = p.threads[t].rank;
  ms_psnap_profile_free(&p);
  return rank;
}

static char *to_text(const ms_psnap_profile *p, size_t *size) {
  char *text = NULL;
  FILE *out = open_memstream(&text, size);
  if (!out || ms_psnap_profile_write(p, out) < 0) fail("%s", "out of memory");
  if (fclose(out) != 0) fail("%s", "out of memory");
  return text;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                          {"compress", no_argument, NULL, 'z'},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {NULL, 0, NULL, 0}};
  const char *output = "-";
  int compress = 0, quiet = 0, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "o:zq", options, NULL)) != -1) {
    if (c == 'o')
      output = optarg;
    else if (c == 'z')
      compress = 1;
    else if (c == 'q')
      quiet = 1;
    else
      fail("%s", "usage: memsnap merge [-o OUT.psnap] [-z] [-q] PROFILE...");
  }
  if (argc - optind < 1) fail("%s", "give the profiles to merge");
  char **paths = NULL, why[1024];
  int count = 0;
  if (rank_files(argv + optind, argc - optind, &paths, &count, why, sizeof why) < 0)
    fail("%s", why);

  /* the ranks of the files, each process reading every K-th header */
  uint32_t *ranks = calloc((size_t)count, sizeof *ranks),
           *mine = calloc((size_t)count, sizeof *mine);
  leaf *leaves = calloc((size_t)count, sizeof *leaves);
  if (!ranks || !mine || !leaves) fail("%s", "out of memory");
  for (int i = me; i < count; i += processes)
    mine[i] = rank_of(paths[i]) + 1;
  MPI_Allreduce(mine, ranks, count, MPI_UINT32_T, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < count; i++)
    leaves[i] = (leaf){ranks[i] - 1, i};
  qsort(leaves, (size_t)count, sizeof *leaves, by_rank);
  for (int i = 1; i < count; i++)
    if (leaves[i].rank == leaves[i - 1].rank) {
      char which[16];
      snprintf(which, sizeof which, "%u", leaves[i].rank);
      fail("two profiles of rank %s", which);
    }

  /* level L: at most K nodes of 2^L leaves */
  uint32_t width = 1;
  while ((count + width - 1) / width > (uint32_t)processes)
    width *= 2;
  uint32_t nodes = (count + width - 1) / width;
  ms_psnap_profile node;
  int have = (uint32_t)me < nodes;
  if (have) {
    uint32_t first = me * width, n = first + width > (uint32_t)count ? count - first : width;
    ms_psnap_profile *profiles = calloc(n, sizeof *profiles);
    if (!profiles) fail("%s", "out of memory");
    for (uint32_t i = 0; i < n; i++) {
      if (ms_psnap_profile_load(paths[leaves[first + i].file], &profiles[i]) < 0)
        fail("%s", ms_error_message());
      if (ms_psnap_merge_threads(&profiles[i]) < 0) fail("%s", ms_error_message());
    }
    if (ms_psnap_merge(profiles, n, &node) < 0) fail("%s", ms_error_message());
    free(profiles);
  }
  /* up the tree: at step s, node p (p a multiple of 2^(s+1)) takes node p + 2^s */
  for (uint32_t step = 1; step < nodes; step *= 2) {
    if (!have) break;
    if (me % (2 * step) == step) {
      size_t size;
      char *text = to_text(&node, &size);
      unsigned long long length = size;
      MPI_Send(&length, 1, MPI_UNSIGNED_LONG_LONG, me - step, 0, MPI_COMM_WORLD);
      for (size_t at = 0; at < size; at += 1u << 30) {
        int piece = (int)(size - at < (1u << 30) ? size - at : 1u << 30);
        MPI_Send(text + at, piece, MPI_CHAR, me - step, 1, MPI_COMM_WORLD);
      }
      free(text);
      ms_psnap_profile_free(&node);
      have = 0;
    } else if (me % (2 * step) == 0 && me + step < nodes) {
      unsigned long long length;
      MPI_Recv(&length, 1, MPI_UNSIGNED_LONG_LONG, me + step, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      char *text = malloc(length + 1);
      if (!text) fail("%s", "out of memory");
      for (size_t at = 0; at < length; at += 1u << 30) {
        int piece = (int)(length - at < (1u << 30) ? length - at : 1u << 30);
        MPI_Recv(text + at, piece, MPI_CHAR, me + step, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      ms_psnap_profile right, merged;
      if (ms_psnap_profile_parse(text, length, "a merged part", &right) < 0)
        fail("%s", ms_error_message());
      free(text);
      if (ms_psnap_merge_pair(&node, &right, &merged) < 0) fail("%s", ms_error_message());
      node = merged;
    }
  }
  int status = 0;
  if (me == 0) {
    size_t n = strlen(output);
    if (ms_psnap_profile_save_as(&node, output,
                                 compress || (n > 4 && !strcmp(output + n - 4, ".zst"))) < 0) {
      fprintf(stderr, "memsnap merge: %s\n", ms_error_message());
      status = 1;
    } else if (!quiet)
      fprintf(stderr,
              "memsnap merge: %s: %d profiles over %d processes, %llu accesses, %u threads of "
              "ranks in %u blocks, %u sites\n",
              output, count, processes, (unsigned long long)node.access_count,
              node.info.thread_count, node.thread_count, node.site_count);
    ms_psnap_profile_free(&node);
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(ranks);
  free(mine);
  free(leaves);
  rank_files_free(paths, count);
  MPI_Finalize();
  /* _exit: Open MPI still holds allocations of its own at exit (ompi_op_base_op_select,
   * the transports': 8 KiB and more per process), which LeakSanitizer reported in the ASan
   * build, failing every run; the merge's own frees are checked by the serial merge's
   * tests (test_psnap_merge), which link no MPI. */
  fflush(stdout);
  fflush(stderr);
  _exit(status);
}

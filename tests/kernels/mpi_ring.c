/* An MPI program: each rank fills its own array with rank + i (store loop), sums it (load
 * loop), and rank 0 prints the total of all ranks. Size: argv[1] doubles per rank
 * (default 100000). tests/cli/test_mpi.c counts the two loops' bytes in each rank's trace. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long n = argc > 1 ? atol(argv[1]) : 100000;
  double *a = malloc(n * sizeof *a), sum = 0, total = 0;
  if (!a) MPI_Abort(MPI_COMM_WORLD, 1);
  for (long i = 0; i < n; i++)
    a[i] = rank + (double)i; /* fill */
  for (long i = 0; i < n; i++)
    sum += a[i]; /* sum */
  MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%.0f\n", total);
  free(a);
  MPI_Finalize();
  return 0;
}

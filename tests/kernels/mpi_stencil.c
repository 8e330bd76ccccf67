/* An MPI halo-exchange stencil: 5-point Jacobi sweeps over a 2-D grid decomposed by rows.
 * Each rank owns LOCAL_ROWS x COLS points plus two ghost rows (row 0 above, row
 * LOCAL_ROWS + 1 below); every iteration exchanges ghost rows with the neighbours by
 * MPI_Sendrecv (MPI_PROC_NULL past the first and last rank, whose ghost rows keep the
 * boundary values), then sweeps the interior. At the end the ranks add their residuals
 * (the squared change of the last sweep) by MPI_Allreduce and rank 0 prints it.
 * Arguments: [LOCAL_ROWS [COLS [ITERS]]] (default 32 256 10).
 *
 * Weak scaling: the local grid does not depend on the rank count, and every rank runs the
 * same loops; the first and last rank differ only in the boundary values they store (not
 * in which addresses they touch) and in what MPI does for MPI_PROC_NULL. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* Fills rows 1..rows with a function of the global row and column, ghost rows with 0, and
 * the global top boundary (the first rank's upper ghost row) with 1. */
__attribute__((noinline)) static void stencil_init(double *u, int rows, int cols, int rank) {
  double top = rank == 0 ? 1.0 : 0.0, bottom = 0.0;
  for (int j = 0; j < cols; j++)
    u[j] = top, u[(long)(rows + 1) * cols + j] = bottom;
  for (int i = 1; i <= rows; i++) {
    long global_row = (long)rank * rows + i;
    for (int j = 0; j < cols; j++)
      u[(long)i * cols + j] = (double)((global_row * 3 + j) % 11) / 11.0;
  }
}

/* Ghost rows from the neighbours: the first owned row goes up while the lower ghost row
 * comes from below, then the last owned row goes down while the upper ghost row comes from
 * above. */
__attribute__((noinline)) static void exchange_halo(double *u, int rows, int cols, int rank,
                                                    int ranks) {
  int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int down = rank < ranks - 1 ? rank + 1 : MPI_PROC_NULL;
  MPI_Sendrecv(u + cols, cols, MPI_DOUBLE, up, 0, u + (long)(rows + 1) * cols, cols, MPI_DOUBLE,
               down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(u + (long)rows * cols, cols, MPI_DOUBLE, down, 1, u, cols, MPI_DOUBLE, up, 1,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* One sweep of the interior (columns 0 and cols - 1 are fixed boundaries); returns the sum
 * of the squared changes. */
__attribute__((noinline)) static double jacobi(const double *in, double *out, int rows, int cols) {
  double residual = 0.0;
  for (int i = 1; i <= rows; i++) {
    const double *row = in + (long)i * cols;
    double *out_row = out + (long)i * cols;
    for (int j = 1; j < cols - 1; j++) {
      double next = 0.2 * (row[j] + row[j - cols] + row[j + cols] + row[j - 1] + row[j + 1]);
      double change = next - row[j];
      residual += change * change;
      out_row[j] = next;
    }
  }
  return residual;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int rows = argc > 1 ? atoi(argv[1]) : 32;
  int cols = argc > 2 ? atoi(argv[2]) : 256;
  int iterations = argc > 3 ? atoi(argv[3]) : 10;
  if (rows < 1 || cols < 3 || iterations < 1) MPI_Abort(MPI_COMM_WORLD, 2);
  size_t points = (size_t)(rows + 2) * cols;
  double *u = malloc(points * sizeof *u), *v = malloc(points * sizeof *v);
  if (!u || !v) MPI_Abort(MPI_COMM_WORLD, 1);
  stencil_init(u, rows, cols, rank);
  stencil_init(v, rows, cols, rank);
  double residual = 0.0;
  for (int it = 0; it < iterations; it++) {
    exchange_halo(u, rows, cols, rank, ranks);
    residual = jacobi(u, v, rows, cols);
    double *swap = u;
    u = v, v = swap;
  }
  double total = 0.0;
  MPI_Allreduce(&residual, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%.9g\n", total);
  free(u), free(v);
  MPI_Finalize();
  return 0;
}

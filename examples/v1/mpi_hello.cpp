// A MagmaDNN v1-style MPI program: it relies on magmadnn.h for <mpi.h>, as
// v1 programs did, and starts MPI under `#if defined(MAGMADNN_HAVE_MPI)`.
// Each rank evaluates A x + b as a compute graph (A filled with rank + 1,
// x with 2, b with 1) and sums the result; the ranks add their sums with
// MPI_Allreduce and rank 0 checks the total against the closed form.
// Without MPI in the build it runs as a single rank. Exit status 0 means
// every check passed.
//   mpirun -np 2 ./mpi_hello
#include <cstdio>

#include "magmadnn.h"

using namespace magmadnn;

int main(int argc, char** argv) {
  int rank = 0;
  int world_size = 1;
#if defined(MAGMADNN_HAVE_MPI)
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
#endif
  magmadnn_init();

  const unsigned int rows = 3;
  const unsigned int cols = 4;
  const float a_value = static_cast<float>(rank + 1);
  auto A = op::var<float>("A", {rows, cols}, {CONSTANT, {a_value}}, HOST);
  auto x = op::var<float>("x", {cols, 1}, {CONSTANT, {2.0f}}, HOST);
  auto b = op::var<float>("b", {rows, 1}, {ONE, {}}, HOST);
  auto affine = op::add(op::matmul(A, x), b);
  Tensor<float>* result = affine->eval();

  // Every entry is (rank + 1) * 2 * cols + 1.
  const double local = math::sum_all(*result);
  const double local_expected = rows * (2.0 * cols * (rank + 1) + 1.0);
  std::printf("rank %d of %d: local sum %.1f\n", rank, world_size, local);

  double total = local;
#if defined(MAGMADNN_HAVE_MPI)
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#endif
  // The sum over ranks r = 0 .. n-1 of rows * (2 cols (r + 1) + 1).
  const double n = world_size;
  const double total_expected = rows * (2.0 * cols * n * (n + 1) / 2 + n);

  int status = 0;
  if (local != local_expected) {
    std::printf("rank %d: FAIL local sum %.1f, expected %.1f\n", rank, local, local_expected);
    status = 1;
  }
  if (rank == 0) {
    if (total != total_expected) {
      std::printf("FAIL: allreduce sum %.1f, expected %.1f\n", total, total_expected);
      status = 1;
    } else {
      std::printf("allreduce sum %.1f over %d ranks\n", total, world_size);
      if (status == 0) std::printf("mpi_hello ok: %d ranks\n", world_size);
    }
  }

  magmadnn_finalize();
#if defined(MAGMADNN_HAVE_MPI)
  MPI_Finalize();
#endif
  return status;
}

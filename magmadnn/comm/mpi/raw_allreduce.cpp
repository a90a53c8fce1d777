// The raw MPI_Allreduce baseline of allreduce_bench.h: MPI code, so it lives
// here; a build without MPI gets the NaN version in allreduce_bench.cpp.
#include <mpi.h>

#include <limits>

#include "magmadnn/comm/allreduce_bench.h"
#include "magmadnn/comm/mpi/mpi_communicator.h"

namespace magmadnn::distributed::detail {

double raw_mpi_allreduce_seconds(Communicator& comm, float* data, std::size_t count, int reps) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&comm);
  if (mpi == nullptr) return std::numeric_limits<double>::quiet_NaN();
  MAGMADNN_CHECK(count <= static_cast<std::size_t>(std::numeric_limits<int>::max()), ValueError,
                 "raw MPI_Allreduce: " << count << " floats exceed MPI's int count");
  // A duplicate of the communicator's own MPI_Comm: the same processes and
  // transport, none of MpiCommunicator's checks.
  MPI_Comm raw = MPI_COMM_NULL;
  MAGMADNN_CHECK(MPI_Comm_dup(mpi->comm(), &raw) == MPI_SUCCESS, CommError, "raw MPI_Allreduce: MPI_Comm_dup failed");
  double seconds = 0;
  int rc = MPI_Barrier(raw);
  const double t0 = MPI_Wtime();
  for (int k = 0; k < reps && rc == MPI_SUCCESS; ++k) {
    rc = MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, raw);
  }
  seconds = (MPI_Wtime() - t0) / reps;
  if (rc == MPI_SUCCESS) rc = MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, raw);
  MPI_Comm_free(&raw);
  MAGMADNN_CHECK(rc == MPI_SUCCESS, CommError, "raw MPI_Allreduce of " << count << " floats failed (MPI error " << rc << ")");
  return seconds;
}

}  // namespace magmadnn::distributed::detail

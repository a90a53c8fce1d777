/// @file allreduce_bench.h
/// What `magmadnn bench allreduce` measures: the time of an in-place float
/// sum over every rank through a Communicator (the descriptor check, the
/// non-blocking operation and the watched wait included), beside the raw
/// blocking MPI_Allreduce on a duplicate of the same MPI communicator, at
/// sizes from a few KiB to tens of MiB. The two are interleaved round by
/// round, so drift on a shared machine hits both alike; each figure is the
/// median over rounds of the slowest rank's time.
///
/// Bus bandwidth follows NCCL-tests: bytes x 2 (p - 1) / p / time, the
/// traffic an optimal ring allreduce moves through each rank's link, so
/// figures compare across rank counts.
///
/// Requires: every rank calls bench_allreduce with the same options
/// (collective). Guarantees: `raw_seconds` is NaN when the communicator is
/// not an MPI one (local, NCCL) or the build has no MPI; before timing a
/// size, a sum of ones is checked to equal the rank count everywhere, so a
/// wrong reduction fails the benchmark with CommError instead of printing a
/// fast time.
#pragma once

#include <cstddef>
#include <vector>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed {

struct AllreduceBenchOptions {
  std::vector<std::size_t> bytes;  ///< sizes to time; empty: 4 KiB to 64 MiB by factors of 4
  int rounds = 10;                 ///< timed rounds per size (after 2 warm-up rounds)
};

struct AllreduceBenchRecord {
  std::size_t bytes = 0;
  int ranks = 1;
  double seconds = 0;      ///< through the Communicator
  double raw_seconds = 0;  ///< raw MPI_Allreduce (NaN without one)
  double busbw_gbs() const noexcept;
  double raw_busbw_gbs() const noexcept;
};

std::vector<AllreduceBenchRecord> bench_allreduce(Communicator& comm, const AllreduceBenchOptions& options = {});

namespace detail {
/// The raw baseline (comm/mpi/): when `comm` is an MpiCommunicator,
/// times `reps` raw MPI_Allreduce calls on `data` and returns the slowest
/// rank's seconds per call; otherwise NaN. Collective.
double raw_mpi_allreduce_seconds(Communicator& comm, float* data, std::size_t count, int reps);
/// The slowest rank's value of `seconds` (an allreduce max). Collective.
double slowest(Communicator& comm, double seconds);
}  // namespace detail

}  // namespace magmadnn::distributed

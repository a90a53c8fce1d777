// Timing helpers of the MPI benchmarks (allreduce_overhead.cpp,
// hierarchical_allreduce.cpp): the median of a sample, and the slowest
// rank's seconds per call of f over `reps` calls after a barrier.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <vector>

namespace mpibench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double timed(MPI_Comm sync, int reps, F&& f) {
  MPI_Barrier(sync);
  const double t0 = MPI_Wtime();
  for (int k = 0; k < reps; ++k) f();
  double dt = (MPI_Wtime() - t0) / reps;
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, sync);  // the slowest rank's time
  return dt;
}

}  // namespace mpibench

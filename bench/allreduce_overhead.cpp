// What MpiCommunicator's checks cost: the median time of an in-place float
// sum over all ranks, by raw MPI_Allreduce, raw MPI_Iallreduce + MPI_Wait,
// and MpiCommunicator::allreduce (descriptor exchange + MPI_Iallreduce +
// watched wait) with strict checks (the default: the exchange completes
// before the data is posted) and with the check beside the collective
// (set_strict_checks(false)), at sizes from 4 KiB to 64 MiB. The four are
// interleaved round by round so that drift on a shared machine hits all alike.
//   mpirun -np 4 ./bench_allreduce_overhead [rounds] [smallest size in bytes]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "magmadnn/comm/mpi/mpi_communicator.h"

using namespace magmadnn::distributed;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double timed(MPI_Comm sync, F&& f) {
  MPI_Barrier(sync);
  const double t0 = MPI_Wtime();
  f();
  double dt = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, sync);  // the slowest rank's time
  return dt;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const std::size_t smallest = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4096;
  MpiCommunicator comm;
  MpiCommunicator overlap(comm.comm());
  comm.set_strict_checks(true);
  overlap.set_strict_checks(false);
  MPI_Comm raw;
  MPI_Comm_dup(comm.comm(), &raw);
  const int p = comm.size();
  if (comm.rank() == 0)
    std::printf("ranks %d, median of %d rounds; comm: strict checks, overlap: the check beside the collective\n"
                "%10s %12s %12s %12s %12s %10s %10s %12s\n",
                p, rounds, "bytes", "Allreduce", "Iallreduce", "comm", "overlap", "comm/Allr", "comm/Iallr",
                "overlap/comm");
  for (std::size_t bytes = smallest; bytes <= (64u << 20); bytes *= 4) {
    const std::size_t n = bytes / sizeof(float);
    std::vector<float> v(n, 1.0f);
    const int reps = bytes < (1u << 20) ? 50 : (bytes < (16u << 20) ? 5 : 1);
    std::vector<double> a, b, c, d;
    for (int r = 0; r < rounds + 2; ++r) {
      const double ta = timed(raw, [&] {
        for (int k = 0; k < reps; ++k) MPI_Allreduce(MPI_IN_PLACE, v.data(), int(n), MPI_FLOAT, MPI_SUM, raw);
      });
      const double tb = timed(raw, [&] {
        for (int k = 0; k < reps; ++k) {
          MPI_Request q;
          MPI_Iallreduce(MPI_IN_PLACE, v.data(), int(n), MPI_FLOAT, MPI_SUM, raw, &q);
          MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
      });
      const double tc = timed(raw, [&] {
        for (int k = 0; k < reps; ++k) comm.allreduce(host_buffer(v.data(), n), ReduceOp::sum);
      });
      const double td = timed(raw, [&] {
        for (int k = 0; k < reps; ++k) overlap.allreduce(host_buffer(v.data(), n), ReduceOp::sum);
      });
      if (r < 2) continue;  // warm-up
      a.push_back(ta / reps);
      b.push_back(tb / reps);
      c.push_back(tc / reps);
      d.push_back(td / reps);
    }
    if (comm.rank() == 0) {
      const double ma = median(a), mb = median(b), mc = median(c), md = median(d);
      std::printf("%10zu %9.1f us %9.1f us %9.1f us %9.1f us %9.0f%% %9.0f%% %11.0f%%\n", bytes, ma * 1e6, mb * 1e6,
                  mc * 1e6, md * 1e6, 100 * ma / mc, 100 * mb / mc, 100 * md / mc);
    }
  }
  MPI_Comm_free(&raw);
  return 0;
}

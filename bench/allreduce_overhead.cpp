// What MpiCommunicator's checks cost: the median time of an in-place float
// sum over all ranks, by raw MPI_Allreduce, raw MPI_Iallreduce + MPI_Wait,
// and MpiCommunicator::allreduce in each collective check mode (off,
// overlap: the default, every, pairwise), at sizes from 4 KiB to 64 MiB.
// All six run round by round, in turn, so that drift on a shared machine
// hits all alike; each ratio is the median of the per-round ratios against
// raw MPI_Allreduce of the same round (paired), so a slow round of the
// machine moves both sides of a ratio together.
//   mpirun -np 4 ./bench_allreduce_overhead [rounds] [smallest bytes] [largest bytes]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "magmadnn/comm/mpi/mpi_communicator.h"
#include "mpi_timing.h"

using namespace magmadnn::distributed;
using mpibench::median;
using mpibench::timed;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const std::size_t smallest = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4096;
  const std::size_t largest = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : (64u << 20);
  MpiCommunicator world;
  const CollectiveCheck modes[] = {CollectiveCheck::off, CollectiveCheck::overlap, CollectiveCheck::every,
                                   CollectiveCheck::pairwise};
  std::vector<std::unique_ptr<MpiCommunicator>> comms;
  for (CollectiveCheck m : modes) {
    comms.push_back(std::make_unique<MpiCommunicator>(world.comm()));
    comms.back()->set_collective_check(m);
  }
  MPI_Comm raw;
  MPI_Comm_dup(world.comm(), &raw);
  if (world.rank() == 0) {
    std::printf("ranks %d, median of %d rounds; us per allreduce, and %% of raw MPI_Allreduce (median of the "
                "per-round ratios)\n%9s %10s %10s",
                world.size(), rounds, "bytes", "Allreduce", "Iallr+Wait");
    for (CollectiveCheck m : modes) std::printf(" %10s", collective_check_name(m));
    for (CollectiveCheck m : modes) std::printf(" %9s%%", collective_check_name(m));
    std::printf("\n");
  }
  for (std::size_t bytes = smallest; bytes <= largest; bytes *= 4) {
    const std::size_t n = bytes / sizeof(float);
    std::vector<float> v(n, 1.0f);
    const int reps = bytes < (1u << 20) ? 200 : (bytes < (16u << 20) ? 5 : 1);
    std::vector<std::function<void()>> runs;
    runs.push_back([&] { MPI_Allreduce(MPI_IN_PLACE, v.data(), int(n), MPI_FLOAT, MPI_SUM, raw); });
    runs.push_back([&] {
      MPI_Request q;
      MPI_Iallreduce(MPI_IN_PLACE, v.data(), int(n), MPI_FLOAT, MPI_SUM, raw, &q);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
    });
    for (auto& c : comms) runs.push_back([&v, n, comm = c.get()] { comm->allreduce(host_buffer(v.data(), n), ReduceOp::sum); });
    std::vector<std::vector<double>> t(runs.size()), ratio(runs.size());
    for (int r = 0; r < rounds + 2; ++r) {
      std::vector<double> round(runs.size());
      for (std::size_t k = 0; k < runs.size(); ++k) round[k] = timed(raw, reps, runs[k]);
      if (r < 2) continue;  // warm-up
      for (std::size_t k = 0; k < runs.size(); ++k) {
        t[k].push_back(round[k]);
        ratio[k].push_back(round[0] / round[k]);
      }
    }
    if (world.rank() == 0) {
      std::printf("%9zu", bytes);
      for (std::size_t k = 0; k < runs.size(); ++k) std::printf(" %10.1f", median(t[k]) * 1e6);
      for (std::size_t k = 2; k < runs.size(); ++k) std::printf(" %9.0f%%", 100 * median(ratio[k]));
      std::printf("\n");
    }
  }
  MPI_Comm_free(&raw);
  return 0;
}

// Flat against hierarchical allreduce (comm/hierarchical_communicator.h):
// the median time of an in-place float sum over all ranks through the flat
// MpiCommunicator and through the HierarchicalCommunicator over an
// equivalent one, each as one buffer and as 8 buckets in flight together
// (started, then waited, as the allreduce strategy's buckets), beside raw
// MPI_Allreduce. Paired: within a round every variant runs once, the order
// reversed every other round, and each ratio is the median of the
// per-round ratios hierarchical / flat, so drift on a shared machine moves
// both sides together. Hosts: MAGMADNN_HOST if every rank sets it, else
// MPI_Comm_split_type's shared-memory groups (tools/mpi-netns-run.sh
// --ranks-per-host 2 makes each namespace one).
//   mpirun -np 4 ./bench_hierarchical_allreduce [rounds] [smallest bytes] [largest bytes] [only]
// only: "flat" or "hier" times that one buffer variant alone, once per
// round (no raw, no buckets), so that the bytes each host sends through the
// network (tools/mpi-netns-run.sh prints them) are that variant's.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/hierarchical_communicator.h"
#include "magmadnn/comm/mpi/mpi_communicator.h"
#include "mpi_timing.h"

using namespace magmadnn::distributed;
using mpibench::median;
using mpibench::timed;

namespace {

// `n` floats as 8 buckets started together, then waited in order.
void bucketed(Communicator& c, std::vector<float>& v) {
  const std::size_t parts = 8, n = v.size(), step = (n + parts - 1) / parts;
  std::vector<RequestPtr> reqs;
  for (std::size_t b = 0; b < n; b += step)
    reqs.push_back(c.iallreduce(host_buffer(v.data() + b, std::min(step, n - b)), ReduceOp::sum));
  wait_all(reqs);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const std::size_t smallest = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4096;
  const std::size_t largest = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : (16u << 20);
  const std::string only = argc > 4 ? argv[4] : "";
  auto world = std::make_shared<MpiCommunicator>();
  auto flat = std::make_shared<MpiCommunicator>(world->comm());
  auto hier = allreduce_communicator(std::make_shared<MpiCommunicator>(world->comm()), "hierarchical");
  const auto* h = dynamic_cast<const HierarchicalCommunicator*>(hier.get());
  MPI_Comm raw;
  MPI_Comm_dup(world->comm(), &raw);
  if (world->rank() == 0) {
    std::printf("%d ranks on %s; median of %d rounds, us per allreduce; hier/flat: median of the per-round ratios "
                "of times\n%9s %10s %10s %10s %10s %10s %9s %9s\n",
                world->size(), h->layout().describe().c_str(), rounds, "bytes", "raw", "flat", "hier", "flat x8",
                "hier x8", "hier/flat", "x8 ratio");
  }
  for (std::size_t bytes = smallest; bytes <= largest; bytes *= 4) {
    const std::size_t n = bytes / sizeof(float);
    std::vector<float> v(n, 1.0f);
    const int reps = bytes < (1u << 20) ? 100 : (bytes < (16u << 20) ? 4 : 1);
    std::vector<std::function<void()>> runs{
        [&] { MPI_Allreduce(MPI_IN_PLACE, v.data(), int(n), MPI_FLOAT, MPI_SUM, raw); },
        [&] { flat->allreduce(host_buffer(v.data(), n), ReduceOp::sum); },
        [&] { hier->allreduce(host_buffer(v.data(), n), ReduceOp::sum); },
        [&] { bucketed(*flat, v); },
        [&] { bucketed(*hier, v); }};
    if (!only.empty()) {
      Communicator& c = only == "flat" ? static_cast<Communicator&>(*flat) : *hier;
      std::vector<double> ts;
      for (int r = 0; r < rounds; ++r) ts.push_back(timed(raw, 1, [&] { c.allreduce(host_buffer(v.data(), n), ReduceOp::sum); }));
      if (world->rank() == 0) std::printf("%9zu %s alone: %d allreduces, median %.1f us\n", bytes, only.c_str(), rounds, median(ts) * 1e6);
      continue;
    }
    std::vector<std::vector<double>> t(runs.size());
    std::vector<double> ratio, ratio8;
    for (int r = 0; r < rounds + 2; ++r) {
      std::vector<double> round(runs.size());
      for (std::size_t k = 0; k < runs.size(); ++k) {
        const std::size_t j = r % 2 == 0 ? k : runs.size() - 1 - k;
        round[j] = timed(raw, reps, runs[j]);
      }
      if (r < 2) continue;  // warm-up
      for (std::size_t k = 0; k < runs.size(); ++k) t[k].push_back(round[k]);
      ratio.push_back(round[2] / round[1]);
      ratio8.push_back(round[4] / round[3]);
    }
    if (world->rank() == 0) {
      std::printf("%9zu", bytes);
      for (auto& tk : t) std::printf(" %10.1f", median(tk) * 1e6);
      std::printf(" %9.2f %9.2f\n", median(ratio), median(ratio8));
    }
  }
  MPI_Comm_free(&raw);
  return 0;
}

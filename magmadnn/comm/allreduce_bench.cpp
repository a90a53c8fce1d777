#include "magmadnn/comm/allreduce_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

#include "magmadnn/core/config.h"

namespace magmadnn::distributed {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double bus_gbs(std::size_t bytes, int ranks, double seconds) {
  if (!(seconds > 0) || ranks < 2) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(bytes) * 2.0 * (ranks - 1) / ranks / seconds / 1e9;
}

// Enough calls per timing that small sizes are not all timer and barrier.
int reps_for(std::size_t bytes) { return bytes < (1u << 20) ? 50 : (bytes < (16u << 20) ? 5 : 1); }

}  // namespace

double AllreduceBenchRecord::busbw_gbs() const noexcept { return bus_gbs(bytes, ranks, seconds); }
double AllreduceBenchRecord::raw_busbw_gbs() const noexcept { return bus_gbs(bytes, ranks, raw_seconds); }

double detail::slowest(Communicator& comm, double seconds) {
  comm.allreduce(host_buffer(&seconds, 1), ReduceOp::max);
  return seconds;
}

std::vector<AllreduceBenchRecord> bench_allreduce(Communicator& comm, const AllreduceBenchOptions& options) {
  MAGMADNN_CHECK(options.rounds >= 1, ValueError, "bench_allreduce: rounds must be >= 1, got " << options.rounds);
  std::vector<std::size_t> sizes = options.bytes;
  if (sizes.empty()) {
    for (std::size_t b = 4096; b <= (64u << 20); b *= 4) sizes.push_back(b);
  }
  std::vector<AllreduceBenchRecord> out;
  for (const std::size_t bytes : sizes) {
    MAGMADNN_CHECK(bytes >= sizeof(float) && bytes % sizeof(float) == 0, ValueError,
                   "bench_allreduce: " << bytes << " bytes is not a whole number of floats");
    const std::size_t n = bytes / sizeof(float);
    std::vector<float> v(n, 1.0f);
    // Checked once, untimed: ones summed over p ranks are exactly p.
    comm.allreduce(host_buffer(v.data(), n), ReduceOp::sum);
    const float p = static_cast<float>(comm.size());
    std::int32_t bad = std::all_of(v.begin(), v.end(), [p](float x) { return x == p; }) ? 0 : 1;
    comm.allreduce(host_buffer(&bad, 1), ReduceOp::max);
    MAGMADNN_CHECK(bad == 0, CommError,
                   "bench_allreduce: a sum of ones over " << comm.size() << " ranks (" << bytes
                                                          << " bytes) is not the rank count on some rank");
    const int reps = reps_for(bytes);
    std::vector<double> ours, raw;
    for (int r = 0; r < options.rounds + 2; ++r) {
      // Repeated sums grow the values (p^reps at most: no overflow in float
      // for the reps used), the same for both; reset so each round starts alike.
      std::fill(v.begin(), v.end(), 1.0f);
      comm.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < reps; ++k) comm.allreduce(host_buffer(v.data(), n), ReduceOp::sum);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
      const double ours_s = detail::slowest(comm, t);
      std::fill(v.begin(), v.end(), 1.0f);
      const double raw_s = detail::raw_mpi_allreduce_seconds(comm, v.data(), n, reps);
      if (r < 2) continue;  // warm-up
      ours.push_back(ours_s);
      raw.push_back(raw_s);
    }
    AllreduceBenchRecord rec;
    rec.bytes = bytes;
    rec.ranks = comm.size();
    rec.seconds = median(ours);
    rec.raw_seconds = std::isnan(raw.front()) ? raw.front() : median(raw);
    out.push_back(rec);
  }
  return out;
}

#if !MAGMADNN_HAVE_MPI
double detail::raw_mpi_allreduce_seconds(Communicator&, float*, std::size_t, int) {
  return std::numeric_limits<double>::quiet_NaN();
}
#endif

}  // namespace magmadnn::distributed

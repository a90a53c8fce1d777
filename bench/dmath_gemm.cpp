// Distributed GEMM (magmadnn/dmath/gemm.h): C = A B, n x n x n in
// float, timed for each algorithm on operands laid out for it, and on one
// process for the same product. Per plan: the algorithm gemm chose, the
// median over `reps` timed runs (after one warm-up) of the slowest rank's
// time, and GFLOP/s (2 n^3 / time).
//   OMP_NUM_THREADS=2 ./bench_dmath_gemm [n=4096] [reps=3]                   # 1 rank x 2 threads
//   OMP_NUM_THREADS=1 mpirun -np 2 ./bench_dmath_gemm [n=4096] [reps=3]      # 2 ranks x 1 thread
// Plans (P ranks): local  = A row-block x B replicated -> C row-block (no communication);
//                  reduce = A column-block x B row-block -> C row-block (one reduce-scatter of C);
//                  summa  = A, B, C 2-D block-cyclic on the near-square grid, 256 x 256 blocks.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/dmath/gemm.h"

using namespace magmadnn::distributed;
using namespace magmadnn::distributed::dmath;

int main(int argc, char** argv) {
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  auto comm = make_communicator("auto");
  const int ranks = comm->size(), rank = comm->rank();

  // Every rank fills only its own part, from one seeded stream per element
  // row, so the setup stays cheap at 4096^2.
  const auto fill = [&](DistMatrix<float>& m) {
    for (std::int64_t li = 0; li < m.local_rows(); ++li) {
      std::mt19937 gen(static_cast<unsigned>(m.layout().global_index(rank, li, 0).first));
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (std::int64_t lj = 0; lj < m.local_cols(); ++lj) m.local(li, lj) = u(gen);
    }
  };
  struct Plan {
    const char* name;
    Layout a, b, c;
  };
  const ProcessGrid grid = ProcessGrid::near_square(ranks);
  const Plan plans[] = {
      {"local", Layout::row_block(n, n, ranks), Layout::replicated(n, n), Layout::row_block(n, n, ranks)},
      {"reduce", Layout::col_block(n, n, ranks), Layout::row_block(n, n, ranks), Layout::row_block(n, n, ranks)},
      {"summa", Layout::block_cyclic(n, n, grid, 256, 256), Layout::block_cyclic(n, n, grid, 256, 256),
       Layout::block_cyclic(n, n, grid, 256, 256)},
  };
  if (rank == 0)
    std::printf("# n=%lld, %d rank(s) x %d thread(s), grid %s\n", static_cast<long long>(n), ranks,
                omp_get_max_threads(), grid.str().c_str());
  for (const Plan& p : plans) {
    DistMatrix<float> a(*comm, p.a), b(*comm, p.b), c(*comm, p.c);
    fill(a);
    fill(b);
    std::vector<double> times;
    GemmPlan chosen;
    for (int r = 0; r <= reps; ++r) {
      comm->barrier();
      const auto t0 = std::chrono::steady_clock::now();
      chosen = gemm(1.f, a, false, b, false, 0.f, c);
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      comm->allreduce(host_buffer(&t, 1), ReduceOp::max);
      if (r > 0) times.push_back(t);  // the first run creates oneDNN's primitives
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    if (rank == 0)
      std::printf("%-7s algorithm=%-6s remap=%d median=%.4f s  %.1f GFLOP/s\n", p.name,
                  gemm_algorithm_name(chosen.algorithm), chosen.remap_a || chosen.remap_b, median,
                  2.0 * static_cast<double>(n) * n * n / median * 1e-9);
  }
  return 0;
}

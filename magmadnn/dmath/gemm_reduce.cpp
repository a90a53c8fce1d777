// gemm.h's reduce algorithm: partial products over k slices, summed into C.
//
// Each rank's partial m x n product is packed as the concatenation of every
// rank's block of C (in that rank's local order, padded to the largest
// block), so that one reduce-scatter leaves each rank exactly its block,
// whatever C's layout: (P - 1)/P of C received per rank, half an allreduce.
#include <algorithm>
#include <vector>

#include "magmadnn/dmath/local_gemm.h"
#include "magmadnn/dmath/local_runs.h"
#include "magmadnn/dmath/operand.h"

namespace magmadnn::distributed::dmath::detail {

template <typename T>
void gemm_reduce(T alpha, const Operand<T>& a, const Operand<T>& b, T beta, DistMatrix<T>& c) {
  Communicator& comm = c.comm();
  const Layout& lc = c.layout();
  const std::int64_t m = lc.rows(), n = lc.cols();
  // A rank outside op(A)'s grid holds no k slice: its partial is zero.
  std::vector<T> partial(static_cast<std::size_t>(m * n), T(0));
  local_gemm(a.trans, b.trans, m, n, a.local_cols, T(1), a.data, a.ld, b.data, b.ld, T(0), partial.data(), n);

  const std::int64_t count = c.local_rows() * c.local_cols();
  const auto finish = [&](const T* sum) {
    T* out = c.local_data();
    for (std::int64_t i = 0; i < count; ++i) out[i] = alpha * sum[i] + (beta == T(0) ? T(0) : beta * out[i]);
  };
  if (lc.is_replicated()) {
    comm.allreduce(host_buffer(partial.data(), partial.size()), ReduceOp::sum);
    finish(partial.data());
    return;
  }
  const std::int64_t slot = lc.max_local_size();
  std::vector<T> packed(static_cast<std::size_t>(slot * comm.size()), T(0));
  for (int d = 0; d < comm.size(); ++d) {
    T* block = packed.data() + slot * d;
    const std::int64_t ld = lc.local_cols(d);
    for_each_local_run(lc, d, [&](std::int64_t li, std::int64_t lj, std::int64_t i, std::int64_t j, std::int64_t len) {
      std::copy_n(partial.data() + i * n + j, len, block + li * ld + lj);
    });
  }
  std::vector<T> mine(static_cast<std::size_t>(slot));
  comm.reduce_scatter(host_buffer(static_cast<const T*>(packed.data()), packed.size()),
                      host_buffer(mine.data(), mine.size()), ReduceOp::sum);
  finish(mine.data());
}

template void gemm_reduce<float>(float, const Operand<float>&, const Operand<float>&, float, DistMatrix<float>&);
template void gemm_reduce<double>(double, const Operand<double>&, const Operand<double>&, double,
                                  DistMatrix<double>&);

}  // namespace magmadnn::distributed::dmath::detail

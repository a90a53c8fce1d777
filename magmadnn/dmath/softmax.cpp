#include "magmadnn/dmath/softmax.h"

#include <cmath>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/local_runs.h"
#include "magmadnn/dmath/reduce_detail.h"

namespace magmadnn::distributed::dmath {

template <typename T>
void softmax_rows(const DistMatrix<T>& X, DistMatrix<T>& Y) {
  MAGMADNN_CHECK(&X.comm() == &Y.comm(), ValueError, "dmath::softmax_rows: X and Y live on different communicators");
  MAGMADNN_CHECK(X.rows() == Y.rows() && X.cols() == Y.cols(), ShapeError,
                 "dmath::softmax_rows: X is " << X.rows() << "x" << X.cols() << ", Y " << Y.rows() << "x" << Y.cols());
  const Layout& l = X.layout();
  Communicator& comm = X.comm();
  const int rank = comm.rank();
  // Rows are whole on their holders unless the grid splits columns.
  const bool split_rows = !l.is_replicated() && l.grid().cols() > 1 && comm.size() > 1;
  const auto n = static_cast<std::size_t>(X.rows());

  DistMatrix<T> Z(comm, l);
  std::copy_n(X.local_data(), X.local_rows() * X.local_cols(), Z.local_data());
  // Per global row: the maximum, then the sum of exponentials, of the
  // elements this rank holds; combined over the ranks of a split row.
  std::vector<T> row(n, detail::identity<T>(ReduceOp::max));
  const auto each_run = [&](auto&& f) { detail::for_each_local_run(l, rank, f); };
  each_run([&](std::int64_t li, std::int64_t lj, std::int64_t i, std::int64_t, std::int64_t len) {
    T& m = row[static_cast<std::size_t>(i)];
    for (std::int64_t t = 0; t < len; ++t) m = std::max(m, Z.local(li, lj + t));
  });
  if (split_rows && n > 0) comm.allreduce(host_buffer(row.data(), n), ReduceOp::max);
  std::vector<T> sums(n, T(0));
  each_run([&](std::int64_t li, std::int64_t lj, std::int64_t i, std::int64_t, std::int64_t len) {
    const T m = row[static_cast<std::size_t>(i)];
    T& s = sums[static_cast<std::size_t>(i)];
    for (std::int64_t t = 0; t < len; ++t) {
      T& z = Z.local(li, lj + t);
      z = std::exp(z - m);
      s += z;
    }
  });
  if (split_rows && n > 0) comm.allreduce(host_buffer(sums.data(), n), ReduceOp::sum);
  each_run([&](std::int64_t li, std::int64_t lj, std::int64_t i, std::int64_t, std::int64_t len) {
    const T inv = T(1) / sums[static_cast<std::size_t>(i)];
    for (std::int64_t t = 0; t < len; ++t) Z.local(li, lj + t) *= inv;
  });
  if (Y.layout() == l) {
    std::copy_n(Z.local_data(), Z.local_rows() * Z.local_cols(), Y.local_data());
  } else {
    Y = Z.redistribute(Y.layout());
  }
  Y.mark_changed();
}

template void softmax_rows<float>(const DistMatrix<float>&, DistMatrix<float>&);
template void softmax_rows<double>(const DistMatrix<double>&, DistMatrix<double>&);

}  // namespace magmadnn::distributed::dmath

#include "magmadnn/dmath/dist_matrix.h"

#include <algorithm>
#include <atomic>

#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/local_runs.h"
#include "magmadnn/dmath/redistribute.h"

namespace magmadnn::distributed::dmath {

template <typename T>
DistMatrix<T>::DistMatrix(Communicator& comm, Layout layout) : comm_(&comm), layout_(std::move(layout)) {
  MAGMADNN_CHECK(layout_.max_rank() < comm.size(), ValueError,
                 "DistMatrix: layout " << layout_.str() << " needs rank " << layout_.max_rank()
                                       << " but the group has " << comm.size() << " ranks");
  local_rows_ = layout_.local_rows(comm.rank());
  local_cols_ = layout_.local_cols(comm.rank());
  local_.assign(static_cast<std::size_t>(local_rows_ * local_cols_), T(0));
}

template <typename T>
DistMatrix<T> DistMatrix<T>::from_global(Communicator& comm, Layout layout, const T* global) {
  DistMatrix m(comm, std::move(layout));
  detail::for_each_local_run(m.layout_, comm.rank(),
                             [&](std::int64_t li, std::int64_t lj, std::int64_t i, std::int64_t j, std::int64_t len) {
                               std::copy_n(global + i * m.cols() + j, len, &m.local(li, lj));
                             });
  return m;
}

template <typename T>
std::uint64_t DistMatrix<T>::next_stamp() noexcept {
  static std::atomic<std::uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

template <typename T>
std::vector<T> DistMatrix<T>::to_global() const {
  const DistMatrix whole = redistribute(Layout::replicated(rows(), cols()));
  return whole.local_;
}

template class DistMatrix<float>;
template class DistMatrix<double>;

}  // namespace magmadnn::distributed::dmath

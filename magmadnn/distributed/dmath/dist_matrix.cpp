#include "magmadnn/distributed/dmath/dist_matrix.h"

#include "magmadnn/core/errors.h"
#include "magmadnn/distributed/dmath/redistribute.h"

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
  const int rank = comm.rank();
  for (std::int64_t li = 0; li < m.local_rows_; ++li) {
    for (std::int64_t lj = 0; lj < m.local_cols_; ++lj) {
      const auto [i, j] = m.layout_.global_index(rank, li, lj);
      m.local(li, lj) = global[i * m.cols() + j];
    }
  }
  return m;
}

template <typename T>
std::vector<T> DistMatrix<T>::to_global() const {
  const DistMatrix whole = redistribute(Layout::replicated(rows(), cols()));
  return whole.local_;
}

template class DistMatrix<float>;
template class DistMatrix<double>;

}  // namespace magmadnn::distributed::dmath

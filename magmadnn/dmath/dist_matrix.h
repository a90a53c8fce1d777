/// @file dist_matrix.h
/// DistMatrix<T>: a matrix split over the ranks of a group by a Layout,
/// each rank holding its own local matrix (dMath's distributed matrix).
///
/// The group is a distributed::Communicator, used through its collectives
/// and point-to-point calls only, so the same code runs on one process
/// (LocalCommunicator) and on many (MpiCommunicator). The communicator is
/// not owned: it must outlive the matrix, as an MPI communicator must
/// outlive the data exchanged on it.
///
/// Requires: T is float or double; the layout names no rank the group lacks
/// (ValueError otherwise); every rank constructs its DistMatrix
/// objects with the same layouts, and calls the collective operations
/// (redistribute, gemm, to_global) in the same order.
/// Guarantees: local() is local_rows() x local_cols(), row-major and dense,
/// zero-initialised by the constructor; a rank that the layout gives nothing
/// holds an empty local matrix and still takes part in collective calls.
///
/// Versions: stamp() identifies the matrix's contents. It is new (unique in
/// the process) when a matrix is made and each time it is marked changed,
/// and copies share it with their source. Every dmath operation that writes
/// a matrix marks it; code that writes local blocks itself calls
/// mark_changed() afterwards, on every rank of the group (a rank with an
/// empty block too), since a Replica compares stamps to decide whether to
/// copy again without asking the other ranks, and all ranks must decide
/// alike (dMath's "keep what you've seen").
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/dmath/layout.h"

namespace magmadnn::distributed::dmath {

template <typename T>
class DistMatrix;
/// Declared here for DistMatrix::redistribute; its contract is in redistribute.h.
template <typename S, typename D>
void redistribute(const DistMatrix<S>& from, DistMatrix<D>& to);

template <typename T>
class DistMatrix {
 public:
  /// A zero matrix of `layout` over `comm`. Not collective.
  DistMatrix(Communicator& comm, Layout layout);

  /// The part of `global` (rows x cols, row-major, the same on every rank)
  /// that `layout` gives this rank. Not collective: for initialisation from
  /// data every rank has (a seeded generator, a file), and for tests.
  static DistMatrix from_global(Communicator& comm, Layout layout, const T* global);

  Communicator& comm() const noexcept { return *comm_; }
  const Layout& layout() const noexcept { return layout_; }
  std::int64_t rows() const noexcept { return layout_.rows(); }
  std::int64_t cols() const noexcept { return layout_.cols(); }

  std::int64_t local_rows() const noexcept { return local_rows_; }
  std::int64_t local_cols() const noexcept { return local_cols_; }
  T* local_data() noexcept { return local_.data(); }
  const T* local_data() const noexcept { return local_.data(); }
  /// Local element (li, lj).
  T& local(std::int64_t li, std::int64_t lj) noexcept { return local_[li * local_cols_ + lj]; }
  const T& local(std::int64_t li, std::int64_t lj) const noexcept { return local_[li * local_cols_ + lj]; }

  /// See "Versions" above.
  std::uint64_t stamp() const noexcept { return stamp_; }
  void mark_changed() noexcept { stamp_ = next_stamp(); }

  /// The whole matrix, row-major, on every rank. Collective.
  std::vector<T> to_global() const;

  /// This matrix laid out by `to` over the same group, with elements of
  /// type U (float or double; T by default). Collective: see redistribute.h.
  template <typename U = T>
  DistMatrix<U> redistribute(const Layout& to) const;

 private:
  Communicator* comm_;
  Layout layout_;
  std::int64_t local_rows_ = 0, local_cols_ = 0;
  std::vector<T> local_;
  std::uint64_t stamp_ = next_stamp();

  static std::uint64_t next_stamp() noexcept;
};

template <typename T>
template <typename U>
DistMatrix<U> DistMatrix<T>::redistribute(const Layout& to) const {
  DistMatrix<U> out(*comm_, to);
  dmath::redistribute(*this, out);  // marks `out`
  return out;
}

extern template class DistMatrix<float>;
extern template class DistMatrix<double>;

}  // namespace magmadnn::distributed::dmath

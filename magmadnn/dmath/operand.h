/// @file operand.h
/// Operand: a GEMM operand op(X) seen through its transpose flag. Its layout
/// is X's layout, transposed when the flag is set, and each rank's local
/// op(X) is the transpose of its stored local X, read in place: no element
/// moves to apply the flag. Internal to dmath.
#pragma once

#include <cstdint>

#include "magmadnn/dmath/dist_matrix.h"

namespace magmadnn::distributed::dmath::detail {

template <typename T>
struct Operand {
  Operand(const DistMatrix<T>& x, bool trans)
      : layout(trans ? x.layout().transposed() : x.layout()), trans(trans), data(x.local_data()),
        ld(x.local_cols()), local_rows(trans ? x.local_cols() : x.local_rows()),
        local_cols(trans ? x.local_rows() : x.local_cols()) {}

  /// Local element (li, lj) of op(X).
  T at(std::int64_t li, std::int64_t lj) const noexcept { return trans ? data[lj * ld + li] : data[li * ld + lj]; }

  Layout layout;          // of op(X)
  bool trans;             // whether the stored local matrix is op(X)'s transpose
  const T* data;          // the stored local matrix, row-major
  std::int64_t ld;        // its row stride
  std::int64_t local_rows, local_cols;  // of the local op(X)
};

/// The three algorithms of gemm.h on operands already laid out for them.
template <typename T>
void gemm_local(T alpha, const Operand<T>& a, const Operand<T>& b, T beta, DistMatrix<T>& c);
template <typename T>
void gemm_reduce(T alpha, const Operand<T>& a, const Operand<T>& b, T beta, DistMatrix<T>& c);
template <typename T>
void gemm_summa(T alpha, const Operand<T>& a, const Operand<T>& b, T beta, DistMatrix<T>& c);

}  // namespace magmadnn::distributed::dmath::detail

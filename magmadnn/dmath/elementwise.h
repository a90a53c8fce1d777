/// @file elementwise.h
/// Elementwise operations on distributed matrices, correct whatever their
/// operands' layouts (dMath §3.2's layout independence): an operand whose
/// layout differs from the result's is remapped to it first
/// (redistribute.h), so the work itself is local. Operands already laid out
/// like the result move nothing.
///
///   axpby(2.0f, X, 0.5f, Y);      // Y = 2 X + 0.5 Y
///   hadamard(A, B, C);            // C = A .* B
///   add_row_vector(b, Y);         // Y(i, j) += b(0, j), a bias over columns
///   transform(Y, [](float v) { return v > 0 ? v : 0; });   // local, any layout
///
/// Requires: every DistMatrix of a call shares one Communicator object
/// (ValueError) and has the shape the operation needs (ShapeError); every
/// rank calls with the same layouts and scalars, in the same order (the
/// remapping is collective).
/// Guarantees: the result keeps its layout; each element equals the
/// single-process operation on the same values exactly (no sums are
/// reordered); beta == 0 overwrites Y without reading it, so a Y holding
/// NaN or garbage is fine.
#pragma once

#include "magmadnn/dmath/dist_matrix.h"

namespace magmadnn::distributed::dmath {

/// Y = alpha * X + beta * Y. Collective when X's layout differs from Y's.
template <typename T>
void axpby(T alpha, const DistMatrix<T>& X, T beta, DistMatrix<T>& Y);

/// C = A .* B (elementwise product). Collective when A or B is laid out
/// unlike C.
template <typename T>
void hadamard(const DistMatrix<T>& A, const DistMatrix<T>& B, DistMatrix<T>& C);

/// Y(i, j) += b(0, j) for a 1 x cols row vector b in any layout (e.g. the
/// bias of a layer whose outputs are split by columns). Collective: b is
/// replicated first (cols elements).
template <typename T>
void add_row_vector(const DistMatrix<T>& b, DistMatrix<T>& Y);

/// Y(i, j) += b(i, 0) for a rows x 1 column vector b in any layout.
/// Collective: b is replicated first (rows elements).
template <typename T>
void add_col_vector(const DistMatrix<T>& b, DistMatrix<T>& Y);

/// Y(i, j) = f(Y(i, j)) on every element this rank holds. Local: no rank
/// talks to another, whatever the layout.
template <typename T, typename F>
void transform(DistMatrix<T>& Y, F&& f) {
  T* p = Y.local_data();
  const std::int64_t n = Y.local_rows() * Y.local_cols();
  for (std::int64_t k = 0; k < n; ++k) p[k] = f(p[k]);
  Y.mark_changed();
}

}  // namespace magmadnn::distributed::dmath

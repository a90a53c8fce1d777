#include "magmadnn/dmath/elementwise.h"

#include <optional>

#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/local_runs.h"

namespace magmadnn::distributed::dmath {
namespace {

template <typename T>
void check_same_group(const char* op, const DistMatrix<T>& a, const DistMatrix<T>& b) {
  MAGMADNN_CHECK(&a.comm() == &b.comm(), ValueError,
                 "dmath::" << op << ": the operands live on different communicators");
}

template <typename T>
void check_same_shape(const char* op, const DistMatrix<T>& a, const DistMatrix<T>& b) {
  MAGMADNN_CHECK(a.rows() == b.rows() && a.cols() == b.cols(), ShapeError,
                 "dmath::" << op << ": " << a.rows() << "x" << a.cols() << " against " << b.rows() << "x"
                           << b.cols());
}

// The operand laid out as `to`: itself when it already is (nothing moves),
// else a remapped copy held in `storage`.
template <typename T>
const DistMatrix<T>& laid_out_as(const DistMatrix<T>& m, const Layout& to, std::optional<DistMatrix<T>>& storage) {
  if (m.layout() == to) return m;
  storage.emplace(m.redistribute(to));
  return *storage;
}

// The vector v (1 x n or n x 1) whole on every rank: its n elements in order.
template <typename T>
std::vector<T> whole_vector(const DistMatrix<T>& v) {
  return v.redistribute(Layout::replicated(v.rows(), v.cols())).to_global();
}

}  // namespace

template <typename T>
void axpby(T alpha, const DistMatrix<T>& X, T beta, DistMatrix<T>& Y) {
  check_same_group("axpby", X, Y);
  check_same_shape("axpby", X, Y);
  std::optional<DistMatrix<T>> remapped;
  const DistMatrix<T>& x = laid_out_as(X, Y.layout(), remapped);
  const T* xp = x.local_data();
  T* yp = Y.local_data();
  const std::int64_t n = Y.local_rows() * Y.local_cols();
  if (beta == T(0)) {
    for (std::int64_t k = 0; k < n; ++k) yp[k] = alpha * xp[k];
  } else {
    for (std::int64_t k = 0; k < n; ++k) yp[k] = alpha * xp[k] + beta * yp[k];
  }
  Y.mark_changed();
}

template <typename T>
void hadamard(const DistMatrix<T>& A, const DistMatrix<T>& B, DistMatrix<T>& C) {
  check_same_group("hadamard", A, C);
  check_same_group("hadamard", B, C);
  check_same_shape("hadamard", A, C);
  check_same_shape("hadamard", B, C);
  std::optional<DistMatrix<T>> ra, rb;
  const DistMatrix<T>& a = laid_out_as(A, C.layout(), ra);
  const DistMatrix<T>& b = laid_out_as(B, C.layout(), rb);
  const std::int64_t n = C.local_rows() * C.local_cols();
  for (std::int64_t k = 0; k < n; ++k) C.local_data()[k] = a.local_data()[k] * b.local_data()[k];
  C.mark_changed();
}

template <typename T>
void add_row_vector(const DistMatrix<T>& b, DistMatrix<T>& Y) {
  check_same_group("add_row_vector", b, Y);
  MAGMADNN_CHECK(b.rows() == 1 && b.cols() == Y.cols(), ShapeError,
                 "dmath::add_row_vector: b is " << b.rows() << "x" << b.cols() << ", Y needs 1x" << Y.cols());
  const std::vector<T> whole = whole_vector(b);
  detail::for_each_local_run(Y.layout(), Y.comm().rank(),
                             [&](std::int64_t li, std::int64_t lj, std::int64_t, std::int64_t j, std::int64_t len) {
                               T* y = &Y.local(li, lj);
                               for (std::int64_t t = 0; t < len; ++t) y[t] += whole[static_cast<std::size_t>(j + t)];
                             });
  Y.mark_changed();
}

template <typename T>
void add_col_vector(const DistMatrix<T>& b, DistMatrix<T>& Y) {
  check_same_group("add_col_vector", b, Y);
  MAGMADNN_CHECK(b.cols() == 1 && b.rows() == Y.rows(), ShapeError,
                 "dmath::add_col_vector: b is " << b.rows() << "x" << b.cols() << ", Y needs " << Y.rows() << "x1");
  const std::vector<T> whole = whole_vector(b);
  detail::for_each_local_run(Y.layout(), Y.comm().rank(),
                             [&](std::int64_t li, std::int64_t lj, std::int64_t i, std::int64_t, std::int64_t len) {
                               T* y = &Y.local(li, lj);
                               const T v = whole[static_cast<std::size_t>(i)];
                               for (std::int64_t t = 0; t < len; ++t) y[t] += v;
                             });
  Y.mark_changed();
}

#define MAGMADNN_DMATH_ELEMENTWISE(T)                                         \
  template void axpby<T>(T, const DistMatrix<T>&, T, DistMatrix<T>&);         \
  template void hadamard<T>(const DistMatrix<T>&, const DistMatrix<T>&, DistMatrix<T>&); \
  template void add_row_vector<T>(const DistMatrix<T>&, DistMatrix<T>&);      \
  template void add_col_vector<T>(const DistMatrix<T>&, DistMatrix<T>&);
MAGMADNN_DMATH_ELEMENTWISE(float)
MAGMADNN_DMATH_ELEMENTWISE(double)
#undef MAGMADNN_DMATH_ELEMENTWISE

}  // namespace magmadnn::distributed::dmath

// tensor/math: layout changes (permute, transpose, shift_right / shift_left).
#include <sstream>
#include <string>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::math {
namespace {

std::string to_string(const std::vector<int>& v) {
  std::ostringstream os;
  os << '{';
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << '}';
  return os.str();
}

}  // namespace

template <typename T>
void permute(const Tensor<T>& x, const std::vector<int>& perm, Tensor<T>& y) {
  const Shape& sx = x.shape();
  const std::int64_t nd = sx.ndim();
  MAGMADNN_CHECK(static_cast<std::int64_t>(perm.size()) == nd, ShapeError,
                 "math::permute: permutation " << to_string(perm) << " does not have one entry per axis of x "
                                               << sx);
  MAGMADNN_CHECK(nd <= BroadcastDesc::kMaxDims, NotSupportedError,
                 "math::permute: x " << sx << " has more than " << BroadcastDesc::kMaxDims << " axes");
  std::vector<int> p(perm.size());
  std::vector<bool> seen(perm.size(), false);
  std::vector<std::int64_t> out_dims(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) {
    const std::int64_t a = perm[i] < 0 ? perm[i] + nd : perm[i];
    MAGMADNN_CHECK(a >= 0 && a < nd && !seen[a], ValueError,
                   "math::permute: " << to_string(perm) << " is not a permutation of the axes of x " << sx);
    seen[a] = true;
    p[i] = static_cast<int>(a);
    out_dims[i] = sx.dims()[a];
  }
  const Shape expect(out_dims);
  MAGMADNN_CHECK(y.shape() == expect, ShapeError,
                 "math::permute: x " << sx << " permuted by " << to_string(perm) << " is " << expect
                                     << " but y is " << y.shape());
  Backend& be = common_backend("permute", x, y);
  if (x.size() == 0) return;
  kernels<T>(be).permute(x.data(), y.mutable_data(), static_cast<int>(nd), sx.dims().data(), p.data());
}

template <typename T>
Tensor<T> transpose(const Tensor<T>& x) {
  const std::int64_t nd = x.ndim();
  MAGMADNN_CHECK(nd >= 2, ShapeError, "math::transpose: x " << x.shape() << " needs at least two axes");
  std::vector<int> perm(static_cast<std::size_t>(nd));
  for (std::int64_t i = 0; i < nd; ++i) perm[i] = static_cast<int>(i);
  std::swap(perm[nd - 1], perm[nd - 2]);
  std::vector<std::int64_t> dims = x.shape().dims();
  std::swap(dims[nd - 1], dims[nd - 2]);
  Tensor<T> y(Shape(dims), x.get_memory_type(), x.get_device_id());
  permute(x, perm, y);
  return y;
}

template <typename T>
void shift_right(const Tensor<T>& x, T lead, Tensor<T>& y) {
  const Shape& sx = x.shape();
  MAGMADNN_CHECK(sx.ndim() == 2 && y.ndim() == 2 && y.shape()[0] == sx[0] && y.shape()[1] == sx[1] + 1, ShapeError,
                 "math::shift_right: x " << sx << " needs a 2-D y with one more column, got " << y.shape());
  Backend& be = common_backend("shift_right", x, y);
  if (y.size() == 0) return;
  kernels<T>(be).shift_right(x.data(), y.mutable_data(), sx[0], sx[1], lead);
}

template <typename T>
void shift_left(const Tensor<T>& x, Tensor<T>& y) {
  const Shape& sx = x.shape();
  MAGMADNN_CHECK(sx.ndim() == 2 && y.ndim() == 2 && sx[1] >= 1 && y.shape()[0] == sx[0] && y.shape()[1] == sx[1] - 1,
                 ShapeError,
                 "math::shift_left: x " << sx << " needs a 2-D y with one column fewer, got " << y.shape());
  Backend& be = common_backend("shift_left", x, y);
  if (y.size() == 0) return;
  kernels<T>(be).shift_left(x.data(), y.mutable_data(), sx[0], y.shape()[1]);
}

#define MAGMADNN_INSTANTIATE(T)                                                        \
  template void permute<T>(const Tensor<T>&, const std::vector<int>&, Tensor<T>&);     \
  template Tensor<T> transpose<T>(const Tensor<T>&);                                   \
  template void shift_right<T>(const Tensor<T>&, T, Tensor<T>&);                       \
  template void shift_left<T>(const Tensor<T>&, Tensor<T>&);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::math

// Printing in NumPy's style: nested brackets, long axes elided with "...".
#include <iomanip>
#include <ostream>
#include <sstream>

#include "magmadnn/tensor/tensor.h"

namespace magmadnn {
namespace {

template <typename T>
void print_value(std::ostream& os, T v) {
  if constexpr (std::is_integral_v<T>) os << v;
  else os << std::setprecision(6) << static_cast<double>(static_cast<float>(v));
}

template <typename T>
void print_axis(std::ostream& os, const std::vector<T>& v, const Shape& s, std::int64_t axis, std::int64_t base,
                int edge) {
  const std::int64_t n = s.dims()[axis];
  const auto strides = s.strides();
  os << '[';
  for (std::int64_t i = 0; i < n; ++i) {
    if (n > 2 * edge && i == edge) {
      os << (axis + 1 == s.ndim() ? "..., " : "...,\n ");
      i = n - edge - 1;
      continue;
    }
    if (axis + 1 == s.ndim()) print_value(os, v[static_cast<std::size_t>(base + i)]);
    else print_axis(os, v, s, axis + 1, base + i * strides[axis], edge);
    if (i + 1 < n) os << (axis + 1 == s.ndim() ? ", " : ",\n ");
  }
  os << ']';
}

}  // namespace

template <typename T>
std::string Tensor<T>::to_string(int edge) const {
  std::ostringstream os;
  os << "Tensor<" << dtype_name(dtype_v<T>) << "> shape " << shape_ << ' ' << memory_name(mem_) << '\n';
  if (!storage_ || numel_ == 0) {
    os << "[]";
  } else if (shape_.ndim() == 0) {
    print_value(os, get(0));
  } else {
    print_axis(os, to_vector(), shape_, 0, 0, edge);
  }
  return os.str();
}

template <typename T>
std::ostream& operator<<(std::ostream& os, const Tensor<T>& t) {
  return os << t.to_string();
}

#define MAGMADNN_PRINT(T)                                     \
  template std::string Tensor<T>::to_string(int) const;       \
  template std::ostream& operator<<(std::ostream&, const Tensor<T>&);
MAGMADNN_PRINT(float)
MAGMADNN_PRINT(double)
MAGMADNN_PRINT(half)
MAGMADNN_PRINT(bfloat16)
MAGMADNN_PRINT(std::int32_t)
MAGMADNN_PRINT(std::int64_t)
#undef MAGMADNN_PRINT

}  // namespace magmadnn

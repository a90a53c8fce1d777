// Tensor<T>::cast<U>: dtype conversion where the data lives (the backend's
// convert kernel for float types; the host for integer types).
#include <type_traits>

#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn {
namespace {
template <typename T>
constexpr bool is_float_type = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, half> ||
                               std::is_same_v<T, bfloat16>;
}

template <typename T>
template <typename U>
Tensor<U> Tensor<T>::cast() const {
  Tensor<U> out(shape_, mem_, device_);
  if (numel_ == 0) return out;
  if constexpr (is_float_type<T> && is_float_type<U>) {
    Backend& b = backend_of(*this);
    b.convert(dtype_v<T>, data(), dtype_v<U>, out.mutable_data(), numel_);
  } else {
    const std::vector<T> src = to_vector();
    std::vector<U> dst(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) {
      if constexpr (std::is_integral_v<U>) dst[i] = static_cast<U>(static_cast<double>(src[i]));
      else dst[i] = static_cast<U>(static_cast<float>(static_cast<double>(src[i])));
    }
    out.copy_from_host(dst.data(), numel_);
  }
  return out;
}

#define MAGMADNN_CAST_FROM(T)                                     \
  template Tensor<float> Tensor<T>::cast<float>() const;          \
  template Tensor<double> Tensor<T>::cast<double>() const;        \
  template Tensor<half> Tensor<T>::cast<half>() const;            \
  template Tensor<bfloat16> Tensor<T>::cast<bfloat16>() const;    \
  template Tensor<std::int32_t> Tensor<T>::cast<std::int32_t>() const; \
  template Tensor<std::int64_t> Tensor<T>::cast<std::int64_t>() const;
MAGMADNN_CAST_FROM(float)
MAGMADNN_CAST_FROM(double)
MAGMADNN_CAST_FROM(half)
MAGMADNN_CAST_FROM(bfloat16)
MAGMADNN_CAST_FROM(std::int32_t)
MAGMADNN_CAST_FROM(std::int64_t)
#undef MAGMADNN_CAST_FROM

}  // namespace magmadnn

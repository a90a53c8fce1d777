#include "magmadnn/model/batch_order.h"

#include <cstring>

#include "magmadnn/core/errors.h"

namespace magmadnn::model::detail {

template <typename T>
void gather_rows(const Tensor<T>& src, const std::int64_t* rows, std::int64_t begin, std::int64_t count,
                 Tensor<T>& dst) {
  const std::int64_t n = src.shape()[0];
  const std::int64_t row = n > 0 ? src.size() / n : 0;
  MAGMADNN_CHECK(dst.size() == count * row, ShapeError,
                 "gather_rows: destination " << dst.shape() << " does not hold " << count << " rows of " << row);
  const T* s = src.host_data();
  T* d = dst.mutable_host_data();
  if (rows == nullptr) {
    std::memcpy(d, s + begin * row, sizeof(T) * static_cast<std::size_t>(count * row));
    return;
  }
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t r = rows[begin + i];
    std::memcpy(d + i * row, s + r * row, sizeof(T) * static_cast<std::size_t>(row));
  }
}

template void gather_rows<float>(const Tensor<float>&, const std::int64_t*, std::int64_t, std::int64_t,
                                 Tensor<float>&);
template void gather_rows<double>(const Tensor<double>&, const std::int64_t*, std::int64_t, std::int64_t,
                                  Tensor<double>&);

}  // namespace magmadnn::model::detail

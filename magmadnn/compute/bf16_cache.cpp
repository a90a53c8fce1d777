#include "magmadnn/compute/bf16_cache.h"

#include "magmadnn/compute/autocast.h"
#include "magmadnn/tensor/dispatch.h"

namespace magmadnn::op {

template <typename T>
const Tensor<bfloat16>& Bf16Cache::get(const Tensor<T>& src) {
  const bool current = src.write_stamp() != 0 && src.write_stamp() == stamp_ && src.offset() == offset_ &&
                       copy_.shape() == src.shape() && copy_.get_memory_type() == src.get_memory_type();
  if (current) return copy_;
  if (copy_.shape() != src.shape() || copy_.get_memory_type() != src.get_memory_type() ||
      copy_.get_device_id() != src.get_device_id()) {
    copy_ = Tensor<bfloat16>(src.shape(), src.get_memory_type(), src.get_device_id());
  }
  if (src.size() > 0) {
    backend_of(src).convert(dtype_v<T>, src.data(), dtype::bf16, copy_.mutable_data(), src.size());
  }
  stamp_ = src.write_stamp();
  offset_ = src.offset();
  ++casts_;
  autocast::count_cast();
  return copy_;
}

void Bf16Cache::clear() {
  copy_ = Tensor<bfloat16>();
  stamp_ = 0;
  offset_ = -1;
}

template const Tensor<bfloat16>& Bf16Cache::get<float>(const Tensor<float>&);
template const Tensor<bfloat16>& Bf16Cache::get<double>(const Tensor<double>&);

}  // namespace magmadnn::op

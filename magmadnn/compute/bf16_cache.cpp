#include "magmadnn/compute/bf16_cache.h"

#include "magmadnn/compute/autocast.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::op {

template <typename T>
bool Bf16Cache::holds_copy_of(const Tensor<T>& src) const noexcept {
  return offset_ == src.offset() && copy_.shape() == src.shape() &&
         copy_.get_memory_type() == src.get_memory_type() && copy_.get_device_id() == src.get_device_id();
}

template <typename T>
const Tensor<bfloat16>& Bf16Cache::get(const Tensor<T>& src) {
  if (src.write_stamp() != 0 && src.write_stamp() == stamp_ && holds_copy_of(src)) return copy_;
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

template <typename T>
void Bf16Cache::axpby(T alpha, const Tensor<T>& x, T beta, Tensor<T>& y) {
  if (autocast::current() != Precision::BF16 || !autocast::fused_update_casts() || !holds_copy_of(y)) {
    math::axpby(alpha, x, beta, y);
    return;
  }
  stamp_ = 0;  // stale until both are written
  math::axpby(alpha, x, beta, y, copy_);
  // y's stamp moved when the kernel took its pointer; nothing wrote y since.
  stamp_ = y.write_stamp();
  ++fused_;
}

void Bf16Cache::clear() {
  copy_ = Tensor<bfloat16>();
  stamp_ = 0;
  offset_ = -1;
}

template const Tensor<bfloat16>& Bf16Cache::get<float>(const Tensor<float>&);
template const Tensor<bfloat16>& Bf16Cache::get<double>(const Tensor<double>&);
template void Bf16Cache::axpby<float>(float, const Tensor<float>&, float, Tensor<float>&);
template void Bf16Cache::axpby<double>(double, const Tensor<double>&, double, Tensor<double>&);

}  // namespace magmadnn::op

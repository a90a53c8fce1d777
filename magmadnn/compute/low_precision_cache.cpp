#include "magmadnn/compute/low_precision_cache.h"

#include <type_traits>

#include "magmadnn/compute/autocast.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::op {

template <typename L, typename Self>
auto& LowPrecisionCache::copy_of_type(Self& self) noexcept {
  static_assert(std::is_same_v<L, bfloat16> || std::is_same_v<L, half>, "a low-precision copy is bf16 or half");
  if constexpr (std::is_same_v<L, bfloat16>) {
    return self.bf16_;
  } else {
    return self.f16_;
  }
}

template <typename L, typename T>
bool LowPrecisionCache::holds_copy_of(const Tensor<T>& src) const noexcept {
  const Tensor<L>& c = copy_of_type<L>(*this);
  return held_ == dtype_v<L> && offset_ == src.offset() && c.shape() == src.shape() &&
         c.get_memory_type() == src.get_memory_type() && c.get_device_id() == src.get_device_id();
}

template <typename L, typename T>
const Tensor<L>& LowPrecisionCache::get(const Tensor<T>& src) {
  Tensor<L>& c = copy_of_type<L>(*this);
  if (src.write_stamp() != 0 && src.write_stamp() == stamp_ && holds_copy_of<L>(src)) return c;
  if (held_ != dtype_v<L>) clear();  // a run changed precision: keep one copy, not two
  if (c.shape() != src.shape() || c.get_memory_type() != src.get_memory_type() ||
      c.get_device_id() != src.get_device_id()) {
    c = Tensor<L>(src.shape(), src.get_memory_type(), src.get_device_id());
  }
  held_ = dtype_v<L>;
  if (src.size() > 0) {
    backend_of(src).convert(dtype_v<T>, src.data(), dtype_v<L>, c.mutable_data(), src.size());
  }
  stamp_ = src.write_stamp();
  offset_ = src.offset();
  ++casts_;
  autocast::count_cast();
  return c;
}

template <typename L, typename T, typename W>
bool LowPrecisionCache::write_through(Tensor<T>& y, W&& write) {
  if (!autocast::fused_update_casts() ||
      autocast::compute_dtype(autocast::OpKind::Gemm, autocast::current()) != dtype_v<L> || !holds_copy_of<L>(y)) {
    return false;
  }
  stamp_ = 0;  // stale until both are written
  if (!write(copy_of_type<L>(*this))) return false;
  // y's stamp moved when the kernel took its pointer; nothing wrote y since.
  stamp_ = y.write_stamp();
  ++fused_;
  return true;
}

template <typename T>
void LowPrecisionCache::axpby(T alpha, const Tensor<T>& x, T beta, Tensor<T>& y) {
  const auto fused = [&](auto& copy) {
    math::axpby(alpha, x, beta, y, copy);
    return true;
  };
  // At most one of the two runs: the thread's GEMMs read one type.
  if (!write_through<bfloat16>(y, fused) && !write_through<half>(y, fused)) math::axpby(alpha, x, beta, y);
}

template <typename L>
bool LowPrecisionCache::gemm_update(float alpha, const Tensor<L>& a, bool trans_a, const Tensor<L>& b, bool trans_b,
                                    float beta, Tensor<float>& y) {
  return write_through<L>(y, [&](Tensor<L>& copy) {
           return math::gemm_update(alpha, a, trans_a, b, trans_b, beta, y, &copy);
         }) ||
         math::gemm_update(alpha, a, trans_a, b, trans_b, beta, y, static_cast<Tensor<L>*>(nullptr));
}

void LowPrecisionCache::clear() {
  bf16_ = Tensor<bfloat16>();
  f16_ = Tensor<half>();
  held_ = dtype::f32;
  stamp_ = 0;
  offset_ = -1;
}

template bool LowPrecisionCache::gemm_update<bfloat16>(float, const Tensor<bfloat16>&, bool, const Tensor<bfloat16>&,
                                                        bool, float, Tensor<float>&);
template bool LowPrecisionCache::gemm_update<half>(float, const Tensor<half>&, bool, const Tensor<half>&, bool, float,
                                                    Tensor<float>&);

#define MAGMADNN_LP_CACHE_GET(L, T) template const Tensor<L>& LowPrecisionCache::get<L, T>(const Tensor<T>&);
MAGMADNN_LP_CACHE_GET(bfloat16, float)
MAGMADNN_LP_CACHE_GET(bfloat16, double)
MAGMADNN_LP_CACHE_GET(half, float)
MAGMADNN_LP_CACHE_GET(half, double)
#undef MAGMADNN_LP_CACHE_GET
template void LowPrecisionCache::axpby<float>(float, const Tensor<float>&, float, Tensor<float>&);
template void LowPrecisionCache::axpby<double>(double, const Tensor<double>&, double, Tensor<double>&);

}  // namespace magmadnn::op

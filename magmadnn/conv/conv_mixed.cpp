#include "magmadnn/conv/conv_mixed.h"

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/conv_bf16.h"
#include "magmadnn/conv/timing.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::conv {
namespace {

// The host computes bf16 (oneDNN) and nothing narrower.
template <typename L>
void check_host_type(const char* op) {
  MAGMADNN_CHECK((std::is_same_v<L, bfloat16>), NotSupportedError,
                 op << ": " << dtype_name(dtype_v<L>)
                    << " convolution runs on the GPU only (cuDNN); on the CPU use precision bf16 or fp32");
}

// The GPU keeps NCHW.
void device_plain(Blocks blocks, const char* op) {
  MAGMADNN_CHECK(blocks.x == 0 && blocks.y == 0, NotSupportedError,
                 op << ": device tensors are NCHW, not in layouts " << blocks.x << ", " << blocks.y);
}

// A device result in L, widened to float (the result the caller keeps).
template <typename L>
Tensor<float> widen(const Tensor<L>& t) {
  return t.template cast<float>();
}

}  // namespace

template <typename L>
Tensor<float> conv2d_forward_mixed(const Tensor<L>& x, const Tensor<L>& w, const Tensor<float>* bias,
                                   const ConvParams& params, Blocks blocks) {
  if (!x.on_device()) {
    check_host_type<L>("conv2d mixed precision");
    if constexpr (std::is_same_v<L, bfloat16>) return conv2d_forward_bf16(x, w, bias, params, blocks);
  }
  device_plain(blocks, "conv2d mixed precision");
  const ConvProblem pr = make_problem(x.shape(), w.shape(), params);
  if (bias) {
    MAGMADNN_CHECK(bias->shape() == Shape{pr.k}, ShapeError,
                   "conv2d mixed precision: bias " << bias->shape() << " must be {" << pr.k << "} for filters "
                                                   << w.shape());
  }
  Tensor<float> y = widen(conv2d_forward<L>(x, w, nullptr, params, Algo::CuDNN));
  if (bias) math::binary(BinaryOp::Add, y, bias->view(Shape{1, pr.k, 1, 1}), y);
  return y;
}

template <typename L>
Tensor<float> conv2d_backward_data_mixed(const Tensor<L>& dy, const Tensor<L>& w, const Shape& x_shape,
                                         const ConvParams& params, Blocks blocks) {
  if (!dy.on_device()) {
    check_host_type<L>("conv2d mixed precision backward data");
    if constexpr (std::is_same_v<L, bfloat16>) return conv2d_backward_data_bf16(dy, w, x_shape, params, blocks);
  }
  device_plain(blocks, "conv2d mixed precision backward data");
  return widen(conv2d_backward_data<L>(dy, w, x_shape, params, Algo::CuDNN));
}

template <typename L>
Tensor<float> conv2d_backward_filter_mixed(const Tensor<L>& x, const Tensor<L>& dy, const Shape& w_shape,
                                           const ConvParams& params, Tensor<float>* db, Blocks blocks) {
  if (!x.on_device()) {
    check_host_type<L>("conv2d mixed precision backward filter");
    if constexpr (std::is_same_v<L, bfloat16>) return conv2d_backward_filter_bf16(x, dy, w_shape, params, db, blocks);
  }
  device_plain(blocks, "conv2d mixed precision backward filter");
  Tensor<float> dw = widen(conv2d_backward_filter<L>(x, dy, w_shape, params, Algo::CuDNN, nullptr));
  if (db) {
    // The bias gradient sums the widened dy in float: cuDNN 9.19 has no
    // bf16 cudnnConvolutionBackwardBias (CUDNN_STATUS_NOT_SUPPORTED on an
    // H100), and a float sum spares half its result's rounding as well.
    const Tensor<float> dyf = widen(dy);
    const std::int64_t k = dyf.shape()[1];
    Tensor<float> sums(Shape{1, k, 1, 1}, dyf.get_memory_type(), dyf.get_device_id());
    math::reduce_to_shape(dyf, sums);
    sums.reshape(Shape{k});
    *db = std::move(sums);
  }
  return dw;
}

namespace {

// cuDNN's pass in L against the float algorithm the chooser picks on the
// device (its time is measured by that choice).
template <typename L>
bool device_pays(const ConvProblem& prob, Pass pass, device_t device_id) {
  choose<float>(prob, pass, DeviceKind::CUDA, device_id);
  const std::optional<Choice> c = cached_choice<float>(prob, pass, DeviceKind::CUDA, device_id);
  if (!c || c->seconds <= 0) return true;  // a forced float algorithm: the table's word stands
  ConvAlgorithm<L>* a = find_algorithm<L>(Algo::CuDNN, DeviceKind::CUDA);
  if (a == nullptr || !a->supports(prob, pass)) return false;
  TimingRounds rounds;
  const auto t = time_algorithms<L>({a}, prob, pass, DeviceKind::CUDA, device_id, rounds);
  return t.front().has_value() && *t.front() < c->seconds;
}

}  // namespace

bool mixed_conv_pays(const ConvProblem& prob, Pass pass, dtype low, bool on_device, device_t device_id) {
  MAGMADNN_CHECK(low == dtype::bf16 || low == dtype::f16, ValueError,
                 "mixed_conv_pays: the low precision is bfloat16 or float16, not " << dtype_name(low));
  if (!on_device) return low == dtype::bf16 && bf16_conv_pays(prob, pass);
  if (bf16_conv_policy() == Bf16ConvPolicy::Always) return true;
  if (deterministic_algorithms()) return low_precision_conv_by_rule(prob);
  static std::mutex mutex;
  static std::map<std::tuple<std::string, int, dtype, device_t>, bool> decided;
  const auto key = std::make_tuple(prob.to_string(), static_cast<int>(pass), low, device_id);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = decided.find(key);
    if (it != decided.end()) return it->second;
  }
  const bool pays = low == dtype::bf16 ? device_pays<bfloat16>(prob, pass, device_id)
                                       : device_pays<half>(prob, pass, device_id);
  std::lock_guard<std::mutex> lock(mutex);
  decided.emplace(key, pays);
  return pays;
}

#define MAGMADNN_CONV_MIXED_INSTANTIATE(L)                                                                        \
  template Tensor<float> conv2d_forward_mixed<L>(const Tensor<L>&, const Tensor<L>&, const Tensor<float>*,       \
                                                 const ConvParams&, Blocks);                                      \
  template Tensor<float> conv2d_backward_data_mixed<L>(const Tensor<L>&, const Tensor<L>&, const Shape&,          \
                                                       const ConvParams&, Blocks);                                \
  template Tensor<float> conv2d_backward_filter_mixed<L>(const Tensor<L>&, const Tensor<L>&, const Shape&,        \
                                                         const ConvParams&, Tensor<float>*, Blocks);
MAGMADNN_CONV_MIXED_INSTANTIATE(bfloat16)
MAGMADNN_CONV_MIXED_INSTANTIATE(half)
#undef MAGMADNN_CONV_MIXED_INSTANTIATE

}  // namespace magmadnn::conv

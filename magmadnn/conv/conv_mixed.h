/// @file conv_mixed.h
/// Mixed-precision convolution: the three passes of a 2-D convolution with
/// operands in L = bfloat16 or half and float results, where they run. This
/// is what autocast's Conv path (compute/autocast.h, Conv2dNode under
/// --precision bf16 or fp16) calls.
///
///  - Host tensors, L = bfloat16: oneDNN (conv_bf16.h), bf16 multiplies,
///    float accumulation, float results written directly. Half on the host
///    is refused (NotSupportedError), as precision fp16 is on the CPU.
///  - Device tensors, L = bfloat16 or half: cuDNN on the Tensor<L> operands
///    (conv.h's functions for T = L: storage in L, float accumulation,
///    tensor-core math preferred), whose results cuDNN writes in L; they are
///    then widened to float. So, unlike the host's, a device result carries
///    one more rounding to L (2^-9 relative for bfloat16, 2^-12 for half),
///    and a half result beyond 65504 is inf, which the loss scaler of an fp16
///    run then sees as an overflow. A bias is added in float after the
///    widening; the bias gradient is cuDNN's, in L, widened.
///
/// Requires shapes as conv.h's functions (ShapeError naming them) and all
/// operands in one memory. Guarantees: results and db are float, freshly
/// allocated in the memory of the first tensor argument. The device path
/// passed its tests on an H100 (Bf16ConvGpu, Fp16ConvGpu; docs/gpu.md).
#pragma once

#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/conv_params.h"
#include "magmadnn/core/types.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::conv {

/// y {N,K,P,Q} = conv(x, w) (+ bias {K}).
template <typename L>
Tensor<float> conv2d_forward_mixed(const Tensor<L>& x, const Tensor<L>& w, const Tensor<float>* bias,
                                   const ConvParams& params = {}, Blocks blocks = {});
/// dx with shape x_shape from dy and w.
template <typename L>
Tensor<float> conv2d_backward_data_mixed(const Tensor<L>& dy, const Tensor<L>& w, const Shape& x_shape,
                                         const ConvParams& params = {}, Blocks blocks = {});
/// dw with shape w_shape from x and dy; db (when not null) receives the bias
/// gradient {K}.
template <typename L>
Tensor<float> conv2d_backward_filter_mixed(const Tensor<L>& x, const Tensor<L>& dy, const Shape& w_shape,
                                           const ConvParams& params = {}, Tensor<float>* db = nullptr,
                                           Blocks blocks = {});

/// Whether autocast's Conv path should compute `pass` of `prob` with
/// operands of type `low` (bf16 or f16) where x lives (`on_device`, GPU
/// `device_id`), under conv_bf16.h's policy (Bf16ConvPolicy, which governs
/// both types): Always says yes; Timed compares, once per (problem, pass,
/// type, device), the low-precision pass with the float algorithm the
/// chooser picks there, on the host with bf16_conv_pays (operand casts
/// included), on a GPU by timing cuDNN's pass in `low` on random data
/// (timing.h; the casts of the operands are not included there).
bool mixed_conv_pays(const ConvProblem& prob, Pass pass, dtype low, bool on_device, device_t device_id);

}  // namespace magmadnn::conv

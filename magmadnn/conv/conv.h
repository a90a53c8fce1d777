/// @file conv.h
/// Convolution and pooling on Tensors: the entry points the graph ops and
/// layers call.
///
/// Each function checks shapes (ShapeError naming them), runs where the
/// tensors live (host tensors on the CPU algorithms, device tensors on the
/// GPU ones; mixing them raises DeviceError), and allocates its result in the
/// memory type and device of its first tensor argument. `algo` forces an
/// algorithm (see chooser.h for the order of forcing); Auto lets the chooser
/// time the candidates on first use of a shape. Requires T = float or double;
/// the three convolution passes also take T = half or bfloat16 on the GPU
/// (computed by cuDNN, accumulating in float; NotSupportedError for host
/// tensors or in a build without cuDNN; bfloat16 needs compute capability
/// 8.0 or later). Pooling is float and double only.
#pragma once

#include <cstdint>

#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/conv_params.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::conv {

/// The channel blocks (conv/layout.h) of a convolution's activations: x and
/// dx, y and dy. {0, 0}, the default, is NCHW; a blocked convolution runs
/// on an algorithm that reads its layouts (ConvAlgorithm::reads_blocked:
/// oneDNN, or the sliding kernel's filter pass for NCHW x and a blocked dy;
/// NotSupportedError where an algorithm that does not was forced).
struct Blocks {
  int x = 0, y = 0;
};

/// y {N,K,P,Q} = conv(x {N,C,H,W}, w {K,C/G,R,S}) (+ bias {K} when not null),
/// then max(y, 0) when `relu`: fused into the convolution where the chosen
/// algorithm can (ConvAlgorithm::forward_relu), else a pass over y.
/// `keep_inputs` false: no backward pass of this step will follow
/// (inference), so no algorithm keeps a copy derived from x for one
/// (input_states.h); the result is the same either way.
template <typename T>
Tensor<T> conv2d_forward(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>* bias, const ConvParams& params = {},
                         Algo algo = Algo::Auto, bool relu = false, bool keep_inputs = true, Blocks blocks = {});

/// dx with shape x_shape from dy and w.
template <typename T>
Tensor<T> conv2d_backward_data(const Tensor<T>& dy, const Tensor<T>& w, const Shape& x_shape,
                               const ConvParams& params = {}, Algo algo = Algo::Auto, Blocks blocks = {});

/// dw with shape w_shape from x and dy; when db is not null it receives the
/// bias gradient {K} (sum of dy over N, P, Q), reallocated if its shape differs.
template <typename T>
Tensor<T> conv2d_backward_filter(const Tensor<T>& x, const Tensor<T>& dy, const Shape& w_shape,
                                 const ConvParams& params = {}, Algo algo = Algo::Auto, Tensor<T>* db = nullptr,
                                 Blocks blocks = {});

/// y = pool(x {N,C,H,W}). For Max pooling, `argmax` (when not null) receives
/// the position of each maximum within its plane, for pool2d_backward.
template <typename T>
Tensor<T> pool2d_forward(const Tensor<T>& x, const PoolParams& params, Tensor<std::int32_t>* argmax = nullptr);

/// dx from dy (shape of pool2d_forward's result), x, and the argmax of the
/// forward pass when available (null: recomputed from x).
template <typename T>
Tensor<T> pool2d_backward(const Tensor<T>& x, const Tensor<T>& dy, const PoolParams& params,
                          const Tensor<std::int32_t>* argmax = nullptr);

}  // namespace magmadnn::conv

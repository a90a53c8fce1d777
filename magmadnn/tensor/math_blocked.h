/// @file math_blocked.h
/// math::batchnorm_forward / batchnorm_backward (math.h) on tensors held
/// in the channel-blocked or channels-last layouts of conv/layout.h, for the graph nodes that
/// keep that layout between layers.
#pragma once

#include "magmadnn/tensor/tensor.h"

namespace magmadnn::math {

/// batchnorm_forward with x, skip and y in the layout with channel block
/// `block` (0: NCHW, the plain function; kChannelsLast: NHWC). Requires,
/// for any other layout, host tensors and 4-D x whose channels the layout
/// holds (cpu::walkable; ValueError otherwise); the per-channel tensors
/// stay plain.
template <typename T>
void batchnorm_forward_blocked(int block, const Tensor<T>& x, const Tensor<T>& gamma, const Tensor<T>& beta,
                               const Tensor<T>* skip, bool relu, T eps, const Tensor<T>* running_mean,
                               const Tensor<T>* running_var, Tensor<T>& y, Tensor<T>& mean, Tensor<T>& var,
                               Tensor<T>& invstd);
/// batchnorm_backward with x, y, g, dx and dskip in that layout.
template <typename T>
void batchnorm_backward_blocked(int block, const Tensor<T>& x, const Tensor<T>* y, const Tensor<T>& g,
                                const Tensor<T>& gamma, const Tensor<T>& mean, const Tensor<T>& invstd, bool training,
                                Tensor<T>* dx, Tensor<T>* dskip, Tensor<T>& dgamma, Tensor<T>& dbeta);

}  // namespace magmadnn::math

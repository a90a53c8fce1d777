/// @file conv_bf16.h
/// Mixed-precision convolution on the CPU: the three passes of a 2-D
/// convolution with bfloat16 operands and float results, computed by oneDNN
/// (bf16 multiplies, float accumulation; fast on CPUs with AVX-512 BF16 or
/// AMX). This is autocast's Conv path (compute/autocast.h); it sits beside
/// the float algorithms and their chooser, not among them, because it
/// changes the operands' type rather than the way of computing.
///
/// Requires host tensors (NotSupportedError otherwise: bf16 convolution on
/// the GPU is not written yet) and shapes as conv.h's functions; ShapeError
/// names them otherwise. Guarantees: results and db are float, freshly
/// allocated in the memory of the first tensor argument; each distinct
/// problem creates its oneDNN primitives once.
#pragma once

#include "magmadnn/conv/conv_params.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::conv {

/// y {N,K,P,Q} = conv(x, w) (+ bias {K}).
Tensor<float> conv2d_forward_bf16(const Tensor<bfloat16>& x, const Tensor<bfloat16>& w, const Tensor<float>* bias,
                                  const ConvParams& params = {});
/// dx with shape x_shape from dy and w.
Tensor<float> conv2d_backward_data_bf16(const Tensor<bfloat16>& dy, const Tensor<bfloat16>& w, const Shape& x_shape,
                                        const ConvParams& params = {});
/// dw with shape w_shape from x and dy; db (when not null) receives the
/// bias gradient {K}, summed in float.
Tensor<float> conv2d_backward_filter_bf16(const Tensor<bfloat16>& x, const Tensor<bfloat16>& dy,
                                          const Shape& w_shape, const ConvParams& params = {},
                                          Tensor<float>* db = nullptr);

}  // namespace magmadnn::conv

/// @file conv_bf16.h
/// Mixed-precision convolution on the CPU: the three passes of a 2-D
/// convolution with bfloat16 operands and float results, computed by oneDNN
/// (bf16 multiplies, float accumulation; fast on CPUs with AVX-512 BF16 or
/// AMX). This is the host side of autocast's Conv path (conv_mixed.h, which
/// sends device tensors to cuDNN); it sits beside the float algorithms and
/// their chooser, not among them, because it changes the operands' type
/// rather than the way of computing.
///
/// Activations are NCHW or channels last (conv/layout.h's kChannelsLast),
/// each as `blocks` says (x and y, for the gradients too: dx in x's layout,
/// dy in y's). Channels last is where oneDNN's fast bf16 kernels (brgconv:
/// AMX, AVX-512 BF16) run; NCHW takes its gemm convolution.
///
/// Requires host tensors (NotSupportedError otherwise: device tensors go
/// through conv_mixed.h), shapes as conv.h's functions (ShapeError names
/// them otherwise), and layouts 0 or kChannelsLast that the shapes can hold
/// (ValueError). Guarantees: results and db are float, freshly allocated in
/// the memory of the first tensor argument, in the caller's layouts (dw
/// OIHW); each distinct problem creates its oneDNN primitives once.
#pragma once

#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/conv_params.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::conv {

/// y {N,K,P,Q} = conv(x, w) (+ bias {K}).
Tensor<float> conv2d_forward_bf16(const Tensor<bfloat16>& x, const Tensor<bfloat16>& w, const Tensor<float>* bias,
                                  const ConvParams& params = {}, Blocks blocks = {});
/// dx with shape x_shape from dy and w.
Tensor<float> conv2d_backward_data_bf16(const Tensor<bfloat16>& dy, const Tensor<bfloat16>& w, const Shape& x_shape,
                                        const ConvParams& params = {}, Blocks blocks = {});
/// dw with shape w_shape from x and dy; db (when not null) receives the
/// bias gradient {K}, summed in float.
Tensor<float> conv2d_backward_filter_bf16(const Tensor<bfloat16>& x, const Tensor<bfloat16>& dy,
                                          const Shape& w_shape, const ConvParams& params = {},
                                          Tensor<float>* db = nullptr, Blocks blocks = {});

/// When autocast's Conv path (Conv2dNode under --precision bf16, and on a GPU
/// fp16 too: conv_mixed.h's mixed_conv_pays) takes the low-precision
/// convolution.
///  - Timed (the default): per problem and pass, only where it is faster
///    than the float algorithm the chooser picks, the casts of its operands
///    included; both are timed once, on first use (dMath's timed choice).
///    Layers with few channels, such as LeNet-5's (1 and 6 input channels),
///    run faster in float with FFT than with oneDNN's bf16 im2col + GEMM;
///    wide layers gain from bf16.
///  - Always: whenever autocast says Conv is low precision (for tests).
enum class Bf16ConvPolicy : unsigned char { Timed, Always };
void set_bf16_conv_policy(Bf16ConvPolicy p);
Bf16ConvPolicy bf16_conv_policy();
/// Whether the bf16 path should compute `pass` of `prob` under the policy.
/// Timed: never where bf16_conv_native() is false; otherwise measures on the
/// first call for a (problem, pass: its layouts included, both sides
/// timed in them), then answers from a cache; under
/// deterministic algorithms (core/determinism.h) it answers by
/// low_precision_conv_by_rule instead, since a pick by timing may differ
/// between runs and so round differently.
bool bf16_conv_pays(const ConvProblem& prob, Pass pass);

/// Whether oneDNN computes bf16 convolutions natively on this CPU (oneDNN
/// 2.6 needs AVX-512; AVX2 machines such as AMD's Zen 3 have none). Where it
/// does not, the three functions above widen their operands to float and
/// run the float algorithms (the same result as bf16 multiplies with float
/// accumulation, at float speed plus the widening), and the Timed policy
/// keeps convolutions in float.
bool bf16_conv_native();

/// Input and output channels per group from which the fixed rule takes the
/// low precision.
inline constexpr std::int64_t kLowPrecisionConvMinChannels = 16;
/// The Timed policy's fixed rule, for deterministic runs (CPU and GPU): a
/// pass computes in the low precision when the layer has at least
/// kLowPrecisionConvMinChannels input and output channels per group. On this
/// CPU every measured layer with fewer (LeNet-5's 1 and 6 input channels)
/// ran faster in float, wide ones faster in bf16 (docs/mixed_precision.md).
bool low_precision_conv_by_rule(const ConvProblem& prob);

}  // namespace magmadnn::conv

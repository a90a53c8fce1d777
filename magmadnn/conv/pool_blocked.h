/// @file pool_blocked.h
/// Pooling read straight from the channel-blocked layout (conv/layout.h):
/// the global average that ends a residual network, and max pooling (the
/// 3x3 / 2 pooling of a ResNet stem).
///
/// Why: a global average's output {N, C, 1, 1} has the same element order
/// in every layout (element (n, c) is at n * C + c blocked or not), so a
/// pooling that reads the blocked x lets the last normalisation keep the
/// layout too; the plain path reordered x and the residual input into NCHW
/// there, and their gradients back, every step. Max pooling keeps its
/// input's layout, so the stem's normalisation, the pooling and the first
/// convolutions read and write one layout; at 112 x 112 x 64 x 32 the
/// reorders around a plain pooling cost more than the pooling.
#pragma once

#include "magmadnn/conv/conv_params.h"
#include "magmadnn/core/shape.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::conv {

/// Whether pooling `p` over x {N, C, H, W} is a global average: Average
/// mode, no padding, and a window of the whole image (one output pixel).
bool is_global_average(const Shape& x, const PoolParams& p) noexcept;

/// y {N, C, 1, 1} = the mean of each channel's H x W pixels of x, a host
/// tensor in layout `block` (8 or 16, dividing C, or kChannelsLast). Each mean is summed in
/// pixel order in float, as the plain CPU pooling sums its window, so the
/// two give the same values. ValueError for a shape or block that does
/// not fit.
Tensor<float> global_average_pool_blocked(const Tensor<float>& x, int block);

/// dx (x_shape, in layout `block`) = dy[n, c] / (H W) at every pixel of
/// channel c of image n: the gradient of global_average_pool_blocked.
/// ValueError unless dy is {N, C, 1, 1} for x_shape {N, C, H, W}.
Tensor<float> global_average_pool_blocked_backward(const Tensor<float>& dy, const Shape& x_shape, int block);

/// Whether max_pool_blocked computes pooling `p` of x {N, C, H, W} with
/// `block`: Max mode, x blockable (C a multiple of block, 8 or 16, or
/// channels last with C a multiple of kChannelsLastLanes), a
/// window no larger than the padded image, and padding smaller than the
/// window (so every window holds at least one element of x).
bool max_pool_blocked_supports(const Shape& x, const PoolParams& p, int block) noexcept;

/// y = max pooling of x (host, layout `block`), in layout `block`. When
/// argmax is not null it receives, per element of y (in y's blocked
/// order), the flat index h * W + w within its input plane of the maximum
/// (the first in row-major window order on ties, as the plain pooling
/// picks), reallocated when its shape differs from y's. ValueError where
/// max_pool_blocked_supports is false.
Tensor<float> max_pool_blocked(const Tensor<float>& x, const PoolParams& p, int block, Tensor<std::int32_t>* argmax);

/// dx (x_shape, layout `block`) from dy (y's shape and layout) and the
/// argmax of max_pool_blocked's forward pass: each dy element is added at
/// its maximum's position, zero elsewhere. ValueError when the shapes do
/// not fit.
Tensor<float> max_pool_blocked_backward(const Tensor<float>& dy, const Tensor<std::int32_t>& argmax,
                                        const Shape& x_shape, const PoolParams& p, int block);

}  // namespace magmadnn::conv

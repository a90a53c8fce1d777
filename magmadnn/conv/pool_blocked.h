/// @file pool_blocked.h
/// Global average pooling read straight from the channel-blocked layout
/// (conv/layout.h), for the pooling that ends a residual network.
///
/// Why: its output {N, C, 1, 1} has the same element order in every layout
/// (element (n, c) is at n * C + c blocked or not), so a pooling that reads
/// the blocked x lets the last normalisation keep the layout too; the plain
/// path reordered x and the residual input into NCHW there, and their
/// gradients back, every step.
#pragma once

#include "magmadnn/conv/conv_params.h"
#include "magmadnn/core/shape.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::conv {

/// Whether pooling `p` over x {N, C, H, W} is a global average: Average
/// mode, no padding, and a window of the whole image (one output pixel).
bool is_global_average(const Shape& x, const PoolParams& p) noexcept;

/// y {N, C, 1, 1} = the mean of each channel's H x W pixels of x, a host
/// tensor in layout `block` (8 or 16, dividing C). Each mean is summed in
/// pixel order in float, as the plain CPU pooling sums its window, so the
/// two give the same values. ValueError for a shape or block that does
/// not fit.
Tensor<float> global_average_pool_blocked(const Tensor<float>& x, int block);

/// dx (x_shape, in layout `block`) = dy[n, c] / (H W) at every pixel of
/// channel c of image n: the gradient of global_average_pool_blocked.
/// ValueError unless dy is {N, C, 1, 1} for x_shape {N, C, H, W}.
Tensor<float> global_average_pool_blocked_backward(const Tensor<float>& dy, const Shape& x_shape, int block);

}  // namespace magmadnn::conv

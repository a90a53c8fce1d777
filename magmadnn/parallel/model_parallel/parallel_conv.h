/// @file parallel_conv.h
/// A 2-D convolution whose filters are split over a group of P ranks by
/// output channel, as a composition of conv2d (compute/conv.h) with the
/// group ops (group_ops.h). It is the convolutional form of
/// column_parallel_linear (parallel_linear.h): an output channel of a
/// convolution is what an output unit is to a linear map.
///
/// Rank r holds the filters shard_of(K, P, r) of W {K, C, kh, kw} and the
/// same entries of b. Forward: copy_to_group (no communication), the local
/// convolution of the whole x with this rank's filters, and with
/// gather_output an allgather of the output channels. Backward: one
/// allreduce of dx (copy_to_group's); dW_r and db_r are local (with
/// gather_output, each rank first takes its channels of dy).
///
/// The local convolution is the same op::conv2d node the single-process
/// Conv2D layer builds, so every algorithm (Auto and its chooser, im2col,
/// Winograd, FFT, oneDNN, cuDNN) applies to the slice unchanged.
///
/// Requires: x {N, C, H, W} whole and the same on every rank; w {shard of
/// K, C, kh, kw} and b {shard of K} or empty (a ShapeError names the
/// expected shape otherwise); K >= P; params.groups == 1 (a grouped
/// convolution's output channels are tied to input-channel groups, which
/// this split does not follow); every rank builds, evaluates and
/// differentiates the same graph in the same order. Guarantees: on one rank
/// it is exactly conv2d(x, w, b, params, algo).
#pragma once

#include "magmadnn/compute/conv.h"
#include "magmadnn/parallel/model_parallel/group_ops.h"

namespace magmadnn::distributed::mp {

/// Returns {N, K, P, Q} with gather_output (`out_channels` = K, the whole
/// count), else {N, shard of K, P, Q}.
template <typename T>
op::Expr<T> channel_parallel_conv2d(const op::Expr<T>& x, const op::Expr<T>& w, const op::Expr<T>& b,
                                    GroupPtr group, std::int64_t out_channels, const conv::ConvParams& params,
                                    bool gather_output, conv::Algo algo = conv::Algo::Auto);

}  // namespace magmadnn::distributed::mp

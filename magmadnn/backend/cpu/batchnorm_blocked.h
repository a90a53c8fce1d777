/// @file batchnorm_blocked.h
/// Batch normalisation (with residual add and ReLU, as
/// Kernels::batchnorm_forward / batchnorm_backward) on host arrays in the
/// channel-blocked layout of conv/layout.h, element (n, c, i) of {N, C, R}
/// at ((n * C/B + c/B) * R + i) * B + c % B, or in channels last (`block`
/// kChannelsLast), at (n * R + i) * C + c (lane_walk.h). Requires B = 8 or
/// 16 and C a multiple of B, or C a multiple of kChannelsLastLanes; the fields of the argument structs mean what they mean
/// for the plain kernels. math::batchnorm_forward_blocked is the checked
/// entry point.
///
/// The per-channel sums split the samples into a fixed number of pieces
/// and add them in a fixed order, so results do not depend on the thread
/// count; they round differently from the plain kernels' sums.
#pragma once

#include "magmadnn/backend/kernels.h"

namespace magmadnn::cpu {

template <typename T>
void batchnorm_forward_blocked(const typename Kernels<T>::BatchNormForward& a, int block);
template <typename T>
void batchnorm_backward_blocked(const typename Kernels<T>::BatchNormBackward& a, int block);

}  // namespace magmadnn::cpu

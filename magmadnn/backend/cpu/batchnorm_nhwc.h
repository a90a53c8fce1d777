/// @file batchnorm_nhwc.h
/// The passes of batch normalisation over a channels-last (NHWC) tensor
/// (internal to backend/cpu; cpu_batchnorm_blocked.cpp's drivers call them
/// for the kChannelsLast layout and do the per-channel arithmetic between
/// them). Each walks pixels in memory order with all C channels of a pixel
/// inner, as B-lane vectors: walking one block of channels at a time, as
/// the blocked layout's kernels do, reads NHWC with a stride of C and took
/// three times as long on ResNet-50 (2-core Xeon, AVX-512; 1.57 s a step
/// against 0.53 s).
///
/// Requires C a multiple of B. The sums add the same terms in the same
/// order as the blocked kernels' (bn_lanes: pieces of samples, chunks of
/// kChunk pixels, even and odd pixels apart), so results do not depend on
/// the thread count either.
#pragma once

#include <cstdint>

#include "magmadnn/backend/cpu/batchnorm_lanes.h"

namespace magmadnn::cpu::nhwc {

/// {N, C, R} tensor in NHWC: n samples of r pixels of c channels.
struct Dims {
  std::int64_t n, c, r;
};

/// part[blk][p] += per-lane sums of x - shift and (x - shift)^2 over the
/// samples of piece p of `pieces`.
template <typename T, int B>
void moments(const T* x, Dims d, std::int64_t pieces, const double* shift, bn_lanes::Partials& part);

/// y = f((x - mean) * scale + shift (+ skip)), f the ReLU when `relu`.
template <typename T, int B>
void apply(const T* x, const T* skip, T* y, Dims d, const T* mean, const T* scale, const T* shift, bool relu);

/// part[blk][p] += per-lane sums of g' and g' (x - mean) over piece p, g'
/// the gradient masked by y > 0 when `relu` (y may be null otherwise),
/// also written to `kept` when that is not null.
template <typename T, int B>
void grad_sums(const T* x, const T* y, const T* g, T* kept, Dims d, std::int64_t pieces, const double* mean,
               bool relu, bn_lanes::Partials& part);

/// dx = scale * g' + k2 * (x - mean) + k3, g' = g masked by y > 0 when
/// `relu`. dx may be g.
template <typename T, int B>
void grad_apply(const T* x, const T* y, const T* g, T* dx, Dims d, const T* mean, const T* scale, const T* k2,
                const T* k3, bool relu);

}  // namespace magmadnn::cpu::nhwc

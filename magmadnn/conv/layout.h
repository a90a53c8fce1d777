/// @file layout.h
/// oneDNN's channel-blocked activation layout, kept between the layers that
/// read it (convolutions through oneDNN, batch normalisation) so that a
/// convolutional network reorders only at its edges.
///
/// Blocked with block B (8 on AVX2, 16 where oneDNN's kernels use AVX-512)
/// is oneDNN's nChw8c / nChw16c: element (n, c, h, w) of an {N, C, H, W}
/// tensor lives at ((n * C/B + c/B) * H * W + h * W + w) * B + c % B. It
/// needs C to be a multiple of B, so a blocked tensor has exactly its plain
/// size and keeps its logical shape {N, C, H, W}; only the order of the
/// elements differs. Block 0 means plain NCHW.
///
/// Channels last (NHWC, kChannelsLast) is the same idea with one block of
/// all C channels: element (n, c, h, w) at ((n * H + h) * W + w) * C + c.
/// It is what oneDNN's bf16 convolutions on AMX and AVX-512 BF16 read
/// (its brgconv kernels take no other activation layout), so a bf16 run
/// keeps it between layers as an fp32 run keeps nChw16c. Kernels walk it
/// as blocks of kChannelsLastLanes adjacent channels with a pixel stride
/// of C (cpu::LaneWalk), so it needs C to be a multiple of kChannelsLastLanes.
///
/// Only float host tensors are ever blocked (oneDNN has no double
/// convolution, and the GPU keeps NCHW). op::keep_blocked_layouts (passes.h)
/// decides which graph edges may be blocked; the nodes decide at each
/// forward pass whether they are (see op::BlockedOutput).
#pragma once

#include "magmadnn/backend/cpu/lane_walk.h"
#include "magmadnn/core/shape.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::conv {

/// The channel block this process keeps activations in: oneDNN's choice on
/// this CPU (16 with AVX-512, else 8), or 0 (blocked layouts off) where the
/// CPU has no AVX2. MAGMADNN_BLOCKED_LAYOUT=0 turns the layouts off, =8 or
/// =16 forces that block (correct on any CPU; a block the kernels do not
/// use costs a reorder inside each convolution); other values are ignored.
/// Read once.
int blocked_layout_block();

/// The layout value for channels last, and the lanes its kernels take.
using cpu::kChannelsLast;
using cpu::kChannelsLastLanes;

/// The layout activations take in a run whose convolutions compute in
/// bf16 on this CPU: kChannelsLast where oneDNN computes bf16 convolutions
/// natively and blocked layouts are on (blocked_layout_block() != 0), else
/// 0 (NCHW, as every run under autocast before). Read once.
int low_precision_layout();

/// Whether a float host tensor of shape `s` can be held in layout `block`:
/// 4-D, not empty, and C a positive multiple of block (block > 0), or of
/// kChannelsLastLanes (block == kChannelsLast).
bool blockable(const Shape& s, int block);

/// How the kernels walk a layout (backend/cpu/lane_walk.h).
using cpu::LaneWalk;
using cpu::lane_walk;

/// `t`, whose elements are in layout `from`, in layout `to` (each a block,
/// or 0 for plain): `t` itself when from == to, else `scratch` filled with
/// the reordered copy (reallocated only when its shape or memory differs,
/// so a node can keep it across steps). Requires a host tensor that is
/// blockable with every nonzero block named; ValueError otherwise.
const Tensor<float>& in_layout(const Tensor<float>& t, int from, int to, Tensor<float>& scratch);

}  // namespace magmadnn::conv

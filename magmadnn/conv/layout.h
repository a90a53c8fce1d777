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
/// Only float host tensors are ever blocked (oneDNN has no double
/// convolution, and the GPU keeps NCHW). op::keep_blocked_layouts (passes.h)
/// decides which graph edges may be blocked; the nodes decide at each
/// forward pass whether they are (see op::BlockedOutput).
#pragma once

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

/// Whether a float host tensor of shape `s` can be held with `block`: 4-D,
/// not empty, and C a positive multiple of block (block > 0).
bool blockable(const Shape& s, int block);

/// `t`, whose elements are in layout `from`, in layout `to` (each a block,
/// or 0 for plain): `t` itself when from == to, else `scratch` filled with
/// the reordered copy (reallocated only when its shape or memory differs,
/// so a node can keep it across steps). Requires a host tensor that is
/// blockable with every nonzero block named; ValueError otherwise.
const Tensor<float>& in_layout(const Tensor<float>& t, int from, int to, Tensor<float>& scratch);

}  // namespace magmadnn::conv

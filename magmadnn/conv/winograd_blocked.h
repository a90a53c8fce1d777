/// @file winograd_blocked.h
/// Winograd F(2x2, 3x3) on the channel-blocked layouts (conv/layout.h),
/// fused: each thread takes a run of 12 output tiles, transforms their
/// inputs, multiplies in the transformed domain and transforms back while
/// all of it is in its own cache, so the only memory traffic is reading x
/// and writing y once. WinogradConv<float, 2> uses it for all three passes
/// of blocked problems (docs/notes/conv.md, "Winograd on the blocked layouts").
///
/// Why: at 16-32 channels the unfused Winograd (transforms through memory,
/// then alpha^2 GEMMs with K = C = 16) was 1.3-2.5x slower than oneDNN's
/// direct kernels on these layers, while the same arithmetic done in cache
/// does 2.25x fewer multiplications than a direct convolution.
///
/// Requirements (checked by applies()): float; x and y blocked with 8 or 16
/// channels a block; both channel counts multiples of 8; 3x3 filter, stride
/// 1, padding 0 to 2 on each side. Channels are read 8 at a time, so a
/// block of 16 is two groups of 8.
#pragma once

#include <cstddef>
#include <cstdint>

namespace magmadnn::conv::winograd_blocked {

/// A forward-shaped convolution: y {n, cout, oh, ow} = conv3x3(x {n, cin,
/// ih, iw}) with the input origin of output (i, j) at (i - ph, j - pw);
/// x_block and y_block are the layouts' channel blocks.
struct Geometry {
  std::int64_t n, cin, cout, ih, iw, oh, ow, ph, pw;
  int x_block, y_block;
};

/// Whether run() computes `g`.
bool applies(const Geometry& g) noexcept;

/// Bytes of the transformed filters: 16 x cin x cout floats.
std::size_t filter_bytes(std::int64_t cin, std::int64_t cout) noexcept;

/// U[pos][c][k] = (G w[k][c] G^T)[pos] for w {cout, cin, 3, 3} (the forward
/// pass: x has cin channels). With `rotate`, the data pass's filters: w is
/// {cin_w = k, cout_w = c, 3, 3} as stored for the forward problem (K x C),
/// and U[pos][k][c] = (G rot180(w[k][c]) G^T)[pos], for a run() whose input
/// is dy (K channels) and output dx (C channels).
void transform_filters(const float* w, std::int64_t k, std::int64_t c, bool rotate, float* U);

/// y = [relu](conv(x, U) + bias) over the geometry; bias {cout} or null.
/// Requires applies(g). Each output element is summed by one thread in a
/// fixed order, so results do not depend on the thread count.
void run(const Geometry& g, const float* U, const float* x, const float* bias, bool relu, float* y);

/// Workspace of run_filter(): the filter pass sums chunks of tiles apart
/// (16 x cin x cout floats each) and adds them in chunk order.
std::size_t filter_pass_bytes(const Geometry& g) noexcept;

/// dw {cout, cin, 3, 3} = d(loss)/dw of the forward pass over g (the
/// adjoint: dU = sum over tiles of (A dy A^T) . (B^T x B), dw = G^T dU G),
/// from x (g's input) and dy (the gradient of its output, in y's layout).
/// Requires applies(g) and filter_pass_bytes(g) bytes of 64-byte aligned
/// workspace. The number of chunks depends on the shape alone, so results
/// do not depend on the thread count.
void run_filter(const Geometry& g, const float* x, const float* dy, float* dw, void* workspace);

/// For tests: run the baseline build of the kernel even where the AVX2 one
/// would run (process-wide; the two must give the same values to rounding).
void use_baseline_kernel_for_testing(bool on) noexcept;

}  // namespace magmadnn::conv::winograd_blocked

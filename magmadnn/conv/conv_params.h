/// @file conv_params.h
/// The description of one 2-D convolution or pooling problem, shared by every
/// algorithm, the chooser, the graph ops and the layers.
///
/// Shapes are NCHW: x {N, C, H, W}, w {K, C / groups, R, S},
/// y {N, K, P, Q}, bias {K}; so are the elements' order, except in a
/// blocked problem (ConvProblem::x_block, y_block; conv/layout.h). Convolution here is cross-correlation (as in
/// cuDNN, PyTorch and MagmaDNN v1's default): y[n,k,p,q] = sum over c, r, s of
/// x[n, g*C/G + c, p*stride_h - pad_h + r*dil_h, q*stride_w - pad_w + s*dil_w]
/// * w[k, c, r, s], with g = k / (K / G).
#pragma once

#include <cstdint>
#include <string>

#include "magmadnn/core/shape.h"

namespace magmadnn::conv {

/// Geometry of a convolution (everything except the batch and image sizes).
struct ConvParams {
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
  bool operator==(const ConvParams&) const = default;  // lets ConvProblem's defaulted == exist
};

/// A complete problem: sizes plus geometry. Built with make_problem, which
/// validates it (ShapeError naming the shapes when they do not fit).
struct ConvProblem {
  std::int64_t n = 0, c = 0, h = 0, w = 0;  ///< input
  std::int64_t k = 0, r = 0, s = 0;         ///< filters: K outputs, R x S kernel
  std::int64_t p = 0, q = 0;                ///< output height, width
  ConvParams geom;
  /// Channel blocks of the activations (conv/layout.h): x (and dx) and y
  /// (and dy). 0, the default, is NCHW. Only algorithms whose
  /// reads_blocked() says so take a blocked problem (oneDNN's always); the
  /// chooser times them where more than one does.
  int x_block = 0, y_block = 0;

  Shape x_shape() const { return Shape({n, c, h, w}); }
  Shape w_shape() const { return Shape({k, c / geom.groups, r, s}); }
  Shape y_shape() const { return Shape({n, k, p, q}); }
  /// Multiply-adds of the forward pass (for GFLOP/s figures): N*K*P*Q*(C/G)*R*S.
  double macs() const;
  /// "n1 c3 h32 w32 k16 r3 s3 pad1,1 str1,1 dil1,1 g1" (with " blk0,8" when
  /// blocked): the cache key and the text of messages.
  std::string to_string() const;
  bool blocked() const noexcept { return x_block != 0 || y_block != 0; }
  bool operator==(const ConvProblem&) const = default;
};

/// Validates x and w shapes against the geometry and computes P and Q.
/// Throws ShapeError naming both shapes and the geometry on a mismatch
/// (x not 4-D, channel counts that disagree with groups, an empty output...).
ConvProblem make_problem(const Shape& x, const Shape& w, const ConvParams& geom);

/// Output size of one spatial axis: (in + 2*pad - dil*(k-1) - 1) / stride + 1.
std::int64_t conv_out_size(std::int64_t in, std::int64_t k, std::int64_t pad, std::int64_t stride,
                           std::int64_t dil);

/// Pooling. MagmaDNN v1 names: MAX_POOL, AVERAGE_POOL (in namespace magmadnn).
enum class PoolMode : std::uint8_t { Max, Average };

struct PoolParams {
  std::int64_t kernel_h = 2, kernel_w = 2;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t stride_h = 2, stride_w = 2;
  PoolMode mode = PoolMode::Max;
  /// Average pooling: divide by the whole window (true, cuDNN's
  /// COUNT_INCLUDE_PADDING) or by the valid elements only (false).
  bool count_include_pad = false;
};

/// Output shape of pooling x {N, C, H, W}; ShapeError when it does not fit.
Shape pool_output_shape(const Shape& x, const PoolParams& p);

}  // namespace magmadnn::conv

namespace magmadnn {
/// MagmaDNN v1 spellings of the pooling modes.
inline constexpr conv::PoolMode MAX_POOL = conv::PoolMode::Max;
inline constexpr conv::PoolMode AVERAGE_POOL = conv::PoolMode::Average;
}  // namespace magmadnn

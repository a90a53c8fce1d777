/// @file shapes.h
/// Problem shapes shared by tests: the GEMMs and convolutions the
/// mixed-precision tests run on the CPU (bf16) and on the GPU (bf16, fp16),
/// in one place so both check the same problems, and the square convolution
/// geometry the convolution tests build.
///
/// Guarantees: gemm_cases() and conv_cases() list the same problems on every
/// call; PrintTo names a case by its numbers, without spaces, so ctest's
/// names say which problem ran (not "32-byte object <...>").
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "magmadnn/conv/conv_params.h"

namespace magmadnn::test {

/// Convolution parameters with the same padding, stride and dilation on
/// both axes.
inline conv::ConvParams conv_geometry(std::int64_t pad, std::int64_t stride = 1, std::int64_t dil = 1,
                                                std::int64_t groups = 1) {
  conv::ConvParams p;
  p.pad_h = p.pad_w = pad;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dil;
  p.groups = groups;
  return p;
}

/// C = op(A) op(B) with op(A) m x k and op(B) k x n; ta / tb: A / B stored
/// transposed.
struct GemmCase {
  std::int64_t m, n, k;
  bool ta, tb;
};

inline void PrintTo(const GemmCase& c, std::ostream* os) {
  *os << c.m << "x" << c.n << "x" << c.k << (c.ta ? "_At" : "") << (c.tb ? "_Bt" : "");
}

/// Small and odd shapes, the MLP's layer shapes in both transposes, and a
/// long reduction (K = 4096).
inline std::vector<GemmCase> gemm_cases() {
  return {GemmCase{5, 3, 7, false, false}, GemmCase{64, 64, 64, false, false}, GemmCase{128, 528, 784, false, true},
          GemmCase{528, 784, 128, true, false}, GemmCase{33, 17, 4096, true, true}};
}

/// Input n x c x h x w, k filters of r x r, and the geometry.
struct ConvCase {
  std::int64_t n, c, h, w, k, r;
  conv::ConvParams geom;
};

inline void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << c.n << "x" << c.c << "x" << c.h << "x" << c.w << "_k" << c.k << "_r" << c.r << "_pad" << c.geom.pad_h
      << "_stride" << c.geom.stride_h << "_dil" << c.geom.dilation_h << "_groups" << c.geom.groups;
}

/// LeNet-5's two convolutions, then stride with odd sizes, dilation and
/// groups.
inline std::vector<ConvCase> conv_cases() {
  return {ConvCase{2, 1, 28, 28, 6, 5, conv_geometry(2, 1)},     ConvCase{2, 6, 14, 14, 16, 5, conv_geometry(0, 1)},
          ConvCase{3, 4, 9, 11, 8, 3, conv_geometry(1, 2)},      ConvCase{1, 4, 12, 12, 4, 3, conv_geometry(2, 1, 2)},
          ConvCase{2, 4, 8, 8, 6, 3, conv_geometry(1, 1, 1, 2)}};
}

}  // namespace magmadnn::test

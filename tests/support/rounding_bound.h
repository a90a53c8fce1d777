/// @file rounding_bound.h
/// The error bound of a mixed-precision GEMM or convolution output, for the
/// tests of bf16 and fp16 (CPU and GPU) to check results against.
///
/// Operands are rounded to a format with unit roundoff u (2^-8 for bfloat16,
/// 2^-11 for IEEE half), each changing by a relative |d| <= u. An output
/// c = sum_k a_k b_k over K terms is then computed as
/// sum_k a_k b_k (1 + da_k)(1 + db_k), accumulated in float, so
///   |c_low - c| <= (2u + u^2) * sum_k |a_k b_k|  +  gamma_K * sum_k |a_k b_k|
/// with gamma_K = K 2^-24 / (1 - K 2^-24) for the float accumulation (Higham,
/// "Accuracy and Stability of Numerical Algorithms", 3.1): the worst case.
/// The rounding errors are independent and centred, each (da + db) with
/// variance at most 2u^2/3, so the error of an output is close to Gaussian
/// with standard deviation at most u sqrt(2/3) sqrt(sum_k (a_k b_k)^2),
/// growing as sqrt(K) for terms of similar size; each output is checked
/// against 6 such deviations too (about 2e-9 per output of failing by
/// chance). Two additions for the GPU paths:
///  - out_u: the result itself rounded to the format (cuDNN writes the
///    convolution's result in its operands' type), at most out_u relative;
///  - absolute: a term for operands below the format's normal range (half's
///    subnormals, below 6.1e-5, are rounded to an absolute 2^-25, not a
///    relative u), which the caller bounds for its data.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "magmadnn/tensor/math.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::test {

inline constexpr double kBf16Roundoff = 1.0 / 256.0;   // 2^-8
inline constexpr double kHalfRoundoff = 1.0 / 2048.0;  // 2^-11

/// gamma_K of float accumulation over k terms.
inline double gamma_f32(std::int64_t k) {
  const double t = static_cast<double>(k) * std::ldexp(1.0, -24);
  return t / (1.0 - t);
}

inline Tensor<double> abs_of(const Tensor<double>& t) {
  Tensor<double> out = t;
  math::unary(UnaryOp::Abs, out, out);
  return out;
}
inline Tensor<double> square_of(const Tensor<double>& t) {
  Tensor<double> out = t;
  math::binary(BinaryOp::Mul, t, t, out);
  return out;
}

struct RoundingBound {
  double u = kBf16Roundoff;  ///< the operands' unit roundoff
  double out_u = 0;          ///< the result's, when it is rounded to the format too
  double absolute = 0;       ///< added to every bound (see above)
  double scale = 1.0;        ///< |alpha| when the product is scaled
};

/// Checks got (float, computed from rounded operands) against ref (double)
/// elementwise: |got - ref| within the worst case and within 6 sigma, given
/// sum |a b| (abs_sum) and sum (a b)^2 (sq_sum) per output and the reduction
/// length k. When f32 is given, also that some output differs from the float
/// result, so the low-precision path ran. With out_u, `rounded` is the exact
/// value that was rounded to the format, when it is not ref (a convolution
/// whose bias is added after the rounding); it defaults to ref.
inline void expect_within_rounding_bound(const Tensor<float>& got, const Tensor<double>& ref,
                                         const Tensor<double>& abs_sum, const Tensor<double>& sq_sum,
                                         std::int64_t k, const RoundingBound& b, const Tensor<float>* f32 = nullptr,
                                         const Tensor<double>* rounded = nullptr) {
  ASSERT_EQ(got.shape(), ref.shape());
  const std::vector<float> g = got.to(HOST).to_vector();
  const std::vector<double> r = ref.to_vector(), a = abs_sum.to_vector(), s = sq_sum.to_vector();
  const std::vector<double> q = rounded ? rounded->to_vector() : r;
  ASSERT_EQ(q.size(), r.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double err = std::abs(static_cast<double>(g[i]) - r[i]);
    const double inner_worst = b.scale * ((2 * b.u + b.u * b.u + gamma_f32(k)) * a[i]) + b.absolute;
    const double sigma = b.scale * b.u * std::sqrt(2.0 / 3.0) * std::sqrt(s[i]);
    const double inner_stat = 6 * sigma + b.scale * gamma_f32(k) * a[i] + b.absolute;
    // The float result's own rounding, then the result's rounding to the format.
    const double last = std::ldexp(std::abs(r[i]), -23);
    const double worst = inner_worst + last + b.out_u * (std::abs(q[i]) + inner_worst);
    const double stat = inner_stat + last + b.out_u * (std::abs(q[i]) + inner_worst);
    ASSERT_LE(err, worst) << "output " << i << ": worst-case bound broken (K = " << k << ")";
    ASSERT_LE(err, stat) << "output " << i << ": 6-sigma bound broken (K = " << k << ")";
  }
  if (f32) {
    const std::vector<float> f = f32->to(HOST).to_vector();
    bool differs = false;
    for (std::size_t i = 0; i < g.size() && !differs; ++i) differs = g[i] != f[i];
    EXPECT_TRUE(differs) << "the low-precision result equals the float one bit for bit: its path did not run";
  }
}

}  // namespace magmadnn::test

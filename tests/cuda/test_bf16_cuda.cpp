// Precision bf16 on the GPU: autocast's bf16 GEMMs (cublasGemmEx, bf16
// operands, float accumulation) against the CPU's (oneDNN) on random data.
// Both sides multiply the same bf16 values, whose products are exact in
// float, and differ only in the order they sum K of them: each result is
// within K 2^-24 sum_k |a_ik b_kj| of the exact sum, so the two are within
// twice that of each other. The float -> bf16 casts must agree bit for bit.
// The GPU cases skip without one, saying why; the precision check runs
// anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/precision.h"
#include "magmadnn/tensor/math.h"
#include "magmadnn/tensor/tensor.h"
#include "support/gpu.h"

using namespace magmadnn;

namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// A {rows, cols} float tensor of random values on the host and its copy on
// the device, each cast to bf16 where it lives.
struct Operand {
  Tensor<bfloat16> host, device;
  std::vector<float> rounded;  // the bf16 values, widened
};

Operand operand(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const auto v = random_values(static_cast<std::size_t>(rows * cols), seed);
  const auto h = Tensor<float>::from_vector({rows, cols}, v, HOST);
  Operand o{h.cast<bfloat16>(), h.to(DEVICE).cast<bfloat16>(), {}};
  for (const bfloat16 b : o.host.to_vector()) o.rounded.push_back(static_cast<float>(b));
  return o;
}

void expect_same_bits(const Tensor<bfloat16>& a, const Tensor<bfloat16>& b) {
  const auto x = a.to_vector(), y = b.to_vector();
  ASSERT_EQ(x.size(), y.size());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(bfloat16)), 0) << "the GPU's cast differs";
}

// sum_k |a_ik b_kj| for row-major a {m, k} and b {k, n}.
double magnitude(const std::vector<float>& a, const std::vector<float>& b, std::int64_t i, std::int64_t j,
                 std::int64_t n, std::int64_t k) {
  double s = 0;
  for (std::int64_t t = 0; t < k; ++t)
    s += std::fabs(double(a[static_cast<std::size_t>(i * k + t)]) * b[static_cast<std::size_t>(t * n + j)]);
  return s;
}

}  // namespace

TEST(Bf16Gpu, PrecisionBf16IsAcceptedEverywhereAndFp16OnTheGpuOnly) {
  EXPECT_NO_THROW(check_precision_available(Precision::BF16, true));
  EXPECT_NO_THROW(check_precision_available(Precision::BF16, false));
  EXPECT_NO_THROW(check_precision_available(Precision::FP16, true));
  EXPECT_THROW(check_precision_available(Precision::FP16, false), NotSupportedError);
}

TEST(Bf16Gpu, MatmulMatchesTheCpuWithinTheAccumulationBound) {
  MAGMADNN_REQUIRE_GPU();
  for (const auto [m, n, k] : {std::array<std::int64_t, 3>{100, 528, 784}, {7, 13, 1}, {64, 10, 528}, {1, 1, 4099}}) {
    const Operand a = operand(m, k, 1 + m), b = operand(k, n, 2 + n);
    expect_same_bits(a.host, a.device);
    expect_same_bits(b.host, b.device);
    const auto cpu = math::matmul_mixed(a.host, b.host).to_vector();
    const auto gpu = math::matmul_mixed(a.device, b.device).to(HOST).to_vector();
    ASSERT_EQ(cpu.size(), gpu.size());
    double worst = 0;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const double bound = 2.0 * double(k) * std::ldexp(1.0, -24) * magnitude(a.rounded, b.rounded, i, j, n, k);
        const double err = std::fabs(double(cpu[static_cast<std::size_t>(i * n + j)]) -
                                     gpu[static_cast<std::size_t>(i * n + j)]);
        ASSERT_LE(err, bound) << "C[" << i << ", " << j << "] of " << m << " x " << n << " x " << k;
        if (bound > 0) worst = std::max(worst, err / bound);
      }
    std::printf("bf16 %lld x %lld x %lld: largest difference %.3g of the bound\n", (long long)m, (long long)n,
                (long long)k, worst);
  }
}

// The fused form the FullyConnected layer uses: act(x W^T + b) with bf16 x
// and W, float bias; ReLU and sigmoid, whose epilogue runs after the product.
// The activations are 1-Lipschitz, so the product's bound holds after them;
// with |x|, |w| <= 1 it is at most 2 K^2 2^-24.
TEST(Bf16Gpu, LinearWithBiasAndActivationMatchesTheCpu) {
  MAGMADNN_REQUIRE_GPU();
  const std::int64_t batch = 100, in = 784, out = 528;
  const Operand x = operand(batch, in, 11), w = operand(out, in, 12);
  const auto bias_h = Tensor<float>::from_vector({out}, random_values(out, 13), HOST);
  const auto bias_d = bias_h.to(DEVICE);
  for (const UnaryOp act : {UnaryOp::Relu, UnaryOp::Sigmoid, UnaryOp::Identity}) {
    Tensor<float> yc({batch, out}, HOST), yg({batch, out}, DEVICE);
    math::linear_mixed(x.host, w.host, &bias_h, act, 0.0f, yc);
    math::linear_mixed(x.device, w.device, &bias_d, act, 0.0f, yg);
    const auto c = yc.to_vector(), g = yg.to(HOST).to_vector();
    for (std::size_t i = 0; i < c.size(); ++i)
      ASSERT_NEAR(c[i], g[i], 2.0 * in * std::ldexp(1.0, -24) * in + 1e-6) << op_name(act) << " element " << i;
  }
}

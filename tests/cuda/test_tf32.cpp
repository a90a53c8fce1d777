// Precision tf32 on the GPU: float GEMMs (cuBLAS, and cuBLASLt with a bias
// epilogue) on TF32 tensor cores while an AutocastScope(TF32) is live on the
// calling thread, strict FP32 otherwise. Checked against a double reference
// with the bound TF32 allows: inputs rounded to 10-bit mantissas (unit
// roundoff 2^-11 each, so 2^-10 per product) plus float accumulation over K
// terms, i.e. |err| <= (2^-10 + K 2^-24) sum_k |a_ik b_kj| per element; the
// strict FP32 product must meet the much tighter K 2^-24 bound, which TF32
// results exceed on random data (the tensor cores were used). Skips without
// a GPU, saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "magmadnn/backend/backend.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/compute/autocast.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/thread_precision.h"
#include "support/gpu.h"

using namespace magmadnn;

namespace {

struct Product {
  std::vector<float> c;
  std::vector<double> ref, scale;  // double result, and sum |a b| per element
};

// C = A B (row-major, m x k times k x n) on the GPU, against double.
Product gpu_product(std::int64_t m, std::int64_t n, std::int64_t k, bool with_bias) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)),
      bias(static_cast<std::size_t>(n));
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : bias) v = u(rng);
  Backend& gpu = cuda_backend();
  // Device copies, freed on scope exit.
  struct Dev {
    Backend& b;
    std::size_t bytes;
    void* p;
    Dev(Backend& be, const std::vector<float>& v) : b(be), bytes(v.size() * sizeof(float)), p(be.allocate(bytes, 0)) {
      b.copy(p, v.data(), bytes, CopyKind::HostToDevice, 0);
    }
    ~Dev() { b.deallocate(p, bytes, 0); }
    float* f() const { return static_cast<float*>(p); }
  };
  const Dev da(gpu, a), db(gpu, b), dbias(gpu, bias), dc(gpu, std::vector<float>(static_cast<std::size_t>(m * n)));
  if (with_bias) {
    kernels<float>(gpu).gemm_bias_act(false, false, m, n, k, da.f(), k, db.f(), n, dbias.f(), UnaryOp::Identity, 0.0f,
                                      dc.f(), n);
  } else {
    kernels<float>(gpu).gemm(false, false, m, n, k, 1.0f, da.f(), k, db.f(), n, 0.0f, dc.f(), n);
  }
  Product p;
  p.c.resize(static_cast<std::size_t>(m * n));
  gpu.copy(p.c.data(), dc.p, p.c.size() * sizeof(float), CopyKind::DeviceToHost, 0);
  p.ref.assign(p.c.size(), 0.0);
  p.scale.assign(p.c.size(), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = with_bias ? bias[static_cast<std::size_t>(j)] : 0.0, mag = std::fabs(s);
      for (std::int64_t t = 0; t < k; ++t) {
        const double prod = double(a[static_cast<std::size_t>(i * k + t)]) * b[static_cast<std::size_t>(t * n + j)];
        s += prod;
        mag += std::fabs(prod);
      }
      p.ref[static_cast<std::size_t>(i * n + j)] = s;
      p.scale[static_cast<std::size_t>(i * n + j)] = mag;
    }
  return p;
}

// The largest error as a multiple of unit * scale, over all elements.
double worst(const Product& p, double unit) {
  double w = 0;
  for (std::size_t i = 0; i < p.c.size(); ++i) w = std::max(w, std::fabs(p.c[i] - p.ref[i]) / (unit * p.scale[i]));
  return w;
}

}  // namespace

TEST(Tf32, TheThreadPrecisionFollowsTheAutocastScope) {
  EXPECT_FALSE(tf32_math());
  {
    autocast::AutocastScope s(Precision::TF32);
    EXPECT_TRUE(tf32_math());
    EXPECT_EQ(autocast::current(), Precision::TF32);
    {
      autocast::AutocastScope inner(Precision::FP32);
      EXPECT_FALSE(tf32_math());
    }
    EXPECT_TRUE(tf32_math());
  }
  EXPECT_FALSE(tf32_math());
}

TEST(Tf32, IsAllowedOnTheGpuAndRefusedOnTheCpu) {
  EXPECT_NO_THROW(check_precision_available(Precision::TF32, /*on_gpu=*/true));
  EXPECT_THROW(check_precision_available(Precision::TF32, /*on_gpu=*/false), NotSupportedError);
  EXPECT_NO_THROW(check_precision_available(Precision::FP16, /*on_gpu=*/true));
}

TEST(Tf32, GpuGemmsUseTensorCoresOnlyUnderTf32) {
  MAGMADNN_REQUIRE_GPU();
  const std::int64_t m = 96, n = 80, k = 512;
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "cuBLASLt with a bias epilogue" : "cuBLAS");
    const Product strict = gpu_product(m, n, k, bias);
    Product tf32;
    {
      autocast::AutocastScope s(Precision::TF32);
      tf32 = gpu_product(m, n, k, bias);
    }
    const double u32 = std::ldexp(1.0, -24);
    EXPECT_LE(worst(strict, double(k + 1) * u32), 1.0);  // strict FP32 meets float's bound
    const double tf32_unit = std::ldexp(1.0, -10) + double(k + 1) * u32;
    EXPECT_LE(worst(tf32, tf32_unit), 1.0);  // TF32 meets its own
    EXPECT_GT(worst(tf32, double(k + 1) * u32), 1.0) << "TF32 results within FP32's bound: tensor cores unused?";
  }
}

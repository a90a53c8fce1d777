// The oneDNN 2.x / 3.x seam (backend/cpu/onednn_compat.h) against naive
// references: matmuls with bias and activation post-ops, with a run-time
// scale and a sum post-op, batched; the three convolution passes with bias
// and ReLU; max pooling forward and backward; and the accessors. The same
// file passes against oneDNN 2.6 (Debian 12) and 3.7 (Debian 13), which is
// what the seam promises.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "magmadnn/backend/cpu/onednn_compat.h"

namespace {

namespace compat = magmadnn::onednn_compat;
using dnnl::memory;
using dims = memory::dims;
using dt = memory::data_type;
using tag = memory::format_tag;

dnnl::engine& eng() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

void run(const dnnl::primitive& p, const std::unordered_map<int, memory>& args) {
  dnnl::stream s(eng());
  p.execute(s, args);
  s.wait();
}

memory mem(const memory::desc& md, const void* p) { return memory(md, eng(), const_cast<void*>(p)); }

std::vector<float> random_vec(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

// C (m x n) = A (m x k, or k x m when ta) times B (k x n).
std::vector<float> naive_matmul(const std::vector<float>& A, const std::vector<float>& B, std::int64_t m,
                                std::int64_t n, std::int64_t k, bool ta) {
  std::vector<float> C(static_cast<std::size_t>(m * n), 0.f);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t l = 0; l < k; ++l) acc += double(ta ? A[l * m + i] : A[i * k + l]) * B[l * n + j];
      C[i * n + j] = static_cast<float>(acc);
    }
  return C;
}

TEST(OnednnCompat, MatmulWithBiasAndActivationPostOps) {
  const std::int64_t m = 37, n = 29, k = 53;
  const auto A = random_vec(m * k, 1), B = random_vec(k * n, 2), bias = random_vec(n, 3);
  struct Case {
    dnnl::algorithm alg;
    float alpha;
    float (*f)(float, float);
  };
  const Case cases[] = {
      {dnnl::algorithm::eltwise_relu, 0.f, [](float v, float) { return v > 0 ? v : 0.f; }},
      {dnnl::algorithm::eltwise_relu, 0.1f, [](float v, float a) { return v > 0 ? v : a * v; }},
      {dnnl::algorithm::eltwise_logistic, 0.f, [](float v, float) { return 1.f / (1.f + std::exp(-v)); }},
      {dnnl::algorithm::eltwise_tanh, 0.f, [](float v, float) { return std::tanh(v); }},
  };
  for (bool ta : {false, true}) {
    const std::vector<float> ref = naive_matmul(A, B, m, n, k, ta);
    for (const Case& c : cases) {
      const memory::desc a_md({m, k}, dt::f32, ta ? dims{1, m} : dims{k, 1});
      const memory::desc b_md({k, n}, dt::f32, dims{n, 1}), c_md({m, n}, dt::f32, dims{n, 1});
      const memory::desc bias_md({1, n}, dt::f32, dims{n, 1});
      dnnl::post_ops po;
      compat::append_eltwise(po, c.alg, c.alpha, 0.f);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      const dnnl::matmul prim(compat::matmul_pd(eng(), a_md, b_md, &bias_md, c_md, attr));
      std::vector<float> C(m * n, 7.f), want(m * n);
      run(prim, {{DNNL_ARG_SRC, mem(a_md, A.data())},
                 {DNNL_ARG_WEIGHTS, mem(b_md, B.data())},
                 {DNNL_ARG_BIAS, mem(bias_md, bias.data())},
                 {DNNL_ARG_DST, mem(c_md, C.data())}});
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) want[i * n + j] = c.f(ref[i * n + j] + bias[j], c.alpha);
      SCOPED_TRACE("ta=" + std::to_string(ta) + " alpha=" + std::to_string(c.alpha));
      expect_near_all(C, want, 1e-4f);
    }
  }
}

// C = alpha A B + beta C: the run-time scale with the sum post-op, one
// primitive serving several alphas (how the CPU backend's gemm uses it).
TEST(OnednnCompat, MatmulRuntimeScaleWithSumPostOp) {
  const std::int64_t m = 64, n = 40, k = 48;
  const auto A = random_vec(m * k, 4), B = random_vec(k * n, 5), C0 = random_vec(m * n, 6);
  const float beta = 0.75f;
  const memory::desc a_md({m, k}, dt::f32, dims{k, 1}), b_md({k, n}, dt::f32, dims{n, 1});
  const memory::desc c_md({m, n}, dt::f32, dims{n, 1});
  dnnl::post_ops po;
  compat::append_sum(po, beta);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  compat::set_runtime_scale(attr);
  const dnnl::matmul prim(compat::matmul_pd(eng(), a_md, b_md, nullptr, c_md, attr));
  const std::vector<float> ref = naive_matmul(A, B, m, n, k, false);
  for (float alpha : {1.f, -0.05f, 3.5f}) {
    std::vector<float> C = C0, want(m * n);
    run(prim, {{DNNL_ARG_SRC, mem(a_md, A.data())},
               {DNNL_ARG_WEIGHTS, mem(b_md, B.data())},
               {DNNL_ARG_DST, mem(c_md, C.data())},
               {compat::scale_arg(), mem(compat::scale_desc(), &alpha)}});
    for (std::int64_t i = 0; i < m * n; ++i) want[i] = alpha * ref[i] + beta * C0[i];
    SCOPED_TRACE("alpha=" + std::to_string(alpha));
    expect_near_all(C, want, 1e-4f);
  }
}

// A strided batch as one 3-D matmul, as gemm_strided_batched makes it.
TEST(OnednnCompat, BatchedMatmul) {
  const std::int64_t batch = 3, m = 20, n = 30, k = 25;
  const auto A = random_vec(batch * m * k, 7), B = random_vec(batch * k * n, 8);
  const memory::desc a_md({batch, m, k}, dt::f32, tag::abc), b_md({batch, k, n}, dt::f32, tag::abc);
  const memory::desc c_md({batch, m, n}, dt::f32, tag::abc);
  const dnnl::matmul prim(compat::matmul_pd(eng(), a_md, b_md, nullptr, c_md));
  std::vector<float> C(batch * m * n);
  run(prim, {{DNNL_ARG_SRC, mem(a_md, A.data())},
             {DNNL_ARG_WEIGHTS, mem(b_md, B.data())},
             {DNNL_ARG_DST, mem(c_md, C.data())}});
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::vector<float> a(A.begin() + b * m * k, A.begin() + (b + 1) * m * k);
    const std::vector<float> bb(B.begin() + b * k * n, B.begin() + (b + 1) * k * n);
    const std::vector<float> got(C.begin() + b * m * n, C.begin() + (b + 1) * m * n);
    expect_near_all(got, naive_matmul(a, bb, m, n, k, false), 1e-4f);
  }
}

// 3x3 convolution, stride 1, padding 1, bias and ReLU (forward), and the two
// backward passes with the forward as their hint, all against loops.
TEST(OnednnCompat, ConvolutionThreePasses) {
  const std::int64_t N = 2, C = 3, H = 6, W = 5, K = 4, R = 3, S = 3;
  const auto x = random_vec(N * C * H * W, 9), w = random_vec(K * C * R * S, 10), b = random_vec(K, 11);
  const auto dy = random_vec(N * K * H * W, 12);
  const memory::desc x_md({N, C, H, W}, dt::f32, tag::nchw), w_md({K, C, R, S}, dt::f32, tag::oihw);
  const memory::desc y_md({N, K, H, W}, dt::f32, tag::nchw), b_md({K}, dt::f32, tag::x);
  const compat::ConvShape shape{{1, 1}, {0, 0}, {1, 1}, {1, 1}};
  const auto alg = dnnl::algorithm::convolution_direct;
  auto xi = [&](std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t ww) {
    return ((n * C + c) * H + h) * W + ww;
  };
  auto yi = [&](std::int64_t n, std::int64_t k, std::int64_t h, std::int64_t ww) {
    return ((n * K + k) * H + h) * W + ww;
  };
  auto wi = [&](std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s) { return ((k * C + c) * R + r) * S + s; };
  std::vector<float> y_ref(N * K * H * W), dx_ref(N * C * H * W, 0.f), dw_ref(K * C * R * S, 0.f), db_ref(K, 0.f);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t ww = 0; ww < W; ++ww) {
          double acc = b[k];
          db_ref[k] += dy[yi(n, k, h, ww)];
          for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t r = 0; r < R; ++r)
              for (std::int64_t s = 0; s < S; ++s) {
                const std::int64_t ih = h + r - 1, iw = ww + s - 1;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += double(x[xi(n, c, ih, iw)]) * w[wi(k, c, r, s)];
                dx_ref[xi(n, c, ih, iw)] += dy[yi(n, k, h, ww)] * w[wi(k, c, r, s)];
                dw_ref[wi(k, c, r, s)] += dy[yi(n, k, h, ww)] * x[xi(n, c, ih, iw)];
              }
          y_ref[yi(n, k, h, ww)] = std::max(0.f, static_cast<float>(acc));
        }
  dnnl::post_ops po;
  compat::append_eltwise(po, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  dnnl::primitive_attr relu;
  relu.set_post_ops(po);
  const auto fwd = compat::conv_forward_pd(eng(), dnnl::prop_kind::forward_training, alg, x_md, w_md, &b_md, y_md,
                                           shape, relu);
  std::vector<float> y(N * K * H * W), dx(N * C * H * W), dw(K * C * R * S), db(K);
  run(dnnl::convolution_forward(fwd), {{DNNL_ARG_SRC, mem(x_md, x.data())},
                                       {DNNL_ARG_WEIGHTS, mem(w_md, w.data())},
                                       {DNNL_ARG_BIAS, mem(b_md, b.data())},
                                       {DNNL_ARG_DST, mem(y_md, y.data())}});
  expect_near_all(y, y_ref, 1e-4f);
  const auto bwd_d = compat::conv_backward_data_pd(eng(), alg, x_md, w_md, y_md, shape, fwd);
  run(dnnl::convolution_backward_data(bwd_d), {{DNNL_ARG_DIFF_DST, mem(y_md, dy.data())},
                                               {DNNL_ARG_WEIGHTS, mem(w_md, w.data())},
                                               {DNNL_ARG_DIFF_SRC, mem(x_md, dx.data())}});
  expect_near_all(dx, dx_ref, 1e-4f);
  const auto bwd_w = compat::conv_backward_weights_pd(eng(), alg, x_md, w_md, &b_md, y_md, shape, fwd);
  run(dnnl::convolution_backward_weights(bwd_w), {{DNNL_ARG_SRC, mem(x_md, x.data())},
                                                  {DNNL_ARG_DIFF_DST, mem(y_md, dy.data())},
                                                  {DNNL_ARG_DIFF_WEIGHTS, mem(w_md, dw.data())},
                                                  {DNNL_ARG_DIFF_BIAS, mem(b_md, db.data())}});
  expect_near_all(dw, dw_ref, 1e-4f);
  expect_near_all(db, db_ref, 1e-4f);
  // Without a bias: the null-pointer form of both.
  EXPECT_NO_THROW(compat::conv_forward_pd(eng(), dnnl::prop_kind::forward_inference, alg, x_md, w_md, nullptr, y_md,
                                          shape));
  EXPECT_NO_THROW(compat::conv_backward_weights_pd(eng(), alg, x_md, w_md, nullptr, y_md, shape, fwd));
}

// 2x2 max pooling, stride 2: forward against loops, backward routes each
// gradient to its window's maximum through the workspace.
TEST(OnednnCompat, MaxPoolingForwardAndBackward) {
  const std::int64_t N = 2, C = 3, H = 4, W = 6, P = 2, Q = 3;
  const auto x = random_vec(N * C * H * W, 13), dy = random_vec(N * C * P * Q, 14);
  const memory::desc x_md({N, C, H, W}, dt::f32, tag::nchw), y_md({N, C, P, Q}, dt::f32, tag::nchw);
  const compat::PoolShape shape{{2, 2}, {2, 2}, {0, 0}, {0, 0}};
  const auto alg = dnnl::algorithm::pooling_max;
  const auto fwd = compat::pooling_forward_pd(eng(), dnnl::prop_kind::forward_training, alg, x_md, y_md, shape);
  const auto bwd = compat::pooling_backward_pd(eng(), alg, x_md, y_md, shape, fwd);
  const memory::desc ws_md = fwd.workspace_desc();
  std::vector<std::uint8_t> ws(ws_md.get_size());
  std::vector<float> y(N * C * P * Q), dx(N * C * H * W);
  run(dnnl::pooling_forward(fwd), {{DNNL_ARG_SRC, mem(x_md, x.data())},
                                   {DNNL_ARG_DST, mem(y_md, y.data())},
                                   {DNNL_ARG_WORKSPACE, mem(ws_md, ws.data())}});
  run(dnnl::pooling_backward(bwd), {{DNNL_ARG_DIFF_DST, mem(y_md, dy.data())},
                                    {DNNL_ARG_WORKSPACE, mem(ws_md, ws.data())},
                                    {DNNL_ARG_DIFF_SRC, mem(x_md, dx.data())}});
  std::vector<float> y_ref(y.size()), dx_ref(dx.size(), 0.f);
  for (std::int64_t nc = 0; nc < N * C; ++nc)
    for (std::int64_t p = 0; p < P; ++p)
      for (std::int64_t q = 0; q < Q; ++q) {
        std::int64_t best = nc * H * W + 2 * p * W + 2 * q;
        for (std::int64_t r = 0; r < 2; ++r)
          for (std::int64_t s = 0; s < 2; ++s) {
            const std::int64_t i = nc * H * W + (2 * p + r) * W + 2 * q + s;
            if (x[i] > x[best]) best = i;
          }
        y_ref[(nc * P + p) * Q + q] = x[best];
        dx_ref[best] += dy[(nc * P + p) * Q + q];
      }
  expect_near_all(y, y_ref, 0.f);
  expect_near_all(dx, dx_ref, 0.f);
  // Average pooling and inference make descriptors too.
  EXPECT_NO_THROW(compat::pooling_forward_pd(eng(), dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::pooling_avg_exclude_padding, x_md, y_md, shape));
}

TEST(OnednnCompat, Accessors) {
  EXPECT_EQ(compat::data_type(memory::desc({2, 3}, dt::f32, tag::ab)), dt::f32);
  EXPECT_EQ(compat::data_type(memory::desc({2, 3}, dt::bf16, tag::ab)), dt::bf16);
  EXPECT_EQ(compat::data_type(memory::desc({4}, dt::u8, tag::x)), dt::u8);
  EXPECT_EQ(compat::scale_desc().get_size(), sizeof(float));
  // The header the build compiled against and the library loaded agree on the major version.
  EXPECT_EQ(compat::runtime_version().rfind(std::to_string(compat::kApiMajor) + ".", 0), 0u)
      << "compiled against oneDNN " << compat::kApiMajor << ".x, running " << compat::runtime_version();
  const int bits = compat::effective_isa_vector_bits();
  EXPECT_TRUE(bits == 0 || bits == 256 || bits == 512) << bits;
#if defined(__x86_64__)
  // Every x86-64 machine oneDNN's JIT serves since 2013 has at least AVX2;
  // a 512 here must mean the CPU has AVX-512F.
  if (bits == 512) EXPECT_TRUE(__builtin_cpu_supports("avx512f"));
  if (__builtin_cpu_supports("avx2") && !__builtin_cpu_supports("avx512f")) EXPECT_EQ(bits, 256);
#endif
}

// Where oneDNN makes a bf16 matmul (the probe cpu_gemm.cpp uses), it computes
// bf16 operands with float accumulation; elsewhere creation throws, which the
// probe turns into "not native".
TEST(OnednnCompat, Bf16MatmulWhereNative) {
  const memory::desc ab({2, 2}, dt::bf16, tag::ab), c_md({2, 2}, dt::f32, tag::ab);
  bool native = true;
  dnnl::matmul prim;
  try {
    prim = dnnl::matmul(compat::matmul_pd(eng(), ab, ab, nullptr, c_md));
  } catch (const dnnl::error&) {
    native = false;
  }
  if (!native) GTEST_SKIP() << "oneDNN " << compat::runtime_version() << " has no bf16 matmul on this CPU";
  // 1, 2, 3, 4 and 0.5, -1, 2, 0.25 are exact in bf16.
  const std::uint16_t a[4] = {0x3f80, 0x4000, 0x4040, 0x4080}, b[4] = {0x3f00, 0xbf80, 0x4000, 0x3e80};
  float c[4];
  run(prim, {{DNNL_ARG_SRC, mem(ab, a)}, {DNNL_ARG_WEIGHTS, mem(ab, b)}, {DNNL_ARG_DST, mem(c_md, c)}});
  EXPECT_FLOAT_EQ(c[0], 1 * 0.5f + 2 * 2.f);
  EXPECT_FLOAT_EQ(c[1], 1 * -1.f + 2 * 0.25f);
  EXPECT_FLOAT_EQ(c[2], 3 * 0.5f + 4 * 2.f);
  EXPECT_FLOAT_EQ(c[3], 3 * -1.f + 4 * 0.25f);
}

}  // namespace

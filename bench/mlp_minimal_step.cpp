// How close can any framework come to the GEMM floor (gemm_floor.cpp) on the
// MagmaDNN paper's MLP at N = 1? This program measures it on the CPU: a
// training step written by hand against oneDNN, with no graph,
// no tensors and no allocation, doing only what every step must do beyond
// the floor's five products:
//   - gather the batch's 100 shuffled rows of the data set (float, as the
//     floor's operands are);
//   - the hidden layer's bias and sigmoid (oneDNN post-ops on its product);
//   - the output layer's bias, softmax and cross-entropy gradient;
//   - the sigmoid's gradient with the hidden bias's gradient in one pass;
//   - SGD with weight decay: the hidden weight's update folded into its
//     gradient's product (W = beta W - lr dH^T X, beta = 1 - lr decay, as a
//     pass W *= beta and a `sum` post-op: the fast way on AVX2), the small
//     weights and the biases by plain loops.
// It times rounds of 3,000 such steps (5 epochs) against the same number of
// the five products alone, back to back on the same buffers (the floor's
// loop), and prints each round's ratio. The two alternate every --block
// steps (default 10, about 13 ms), so that both see the same machine: this
// VM's speed drifts by 10-20% over seconds, and alternating whole rounds
// left single rounds anywhere from 1.0 to 1.4. magmadnn's ratio to the floor
// (docs/benchmarks.md; docs/notes/benchmarks-mlp.md) is to be read against this one.
//
// --fixed-batch skips the gather and trains on the first batch over and
// over: it says how much of the gap is the fresh batch (its copy, and the
// products' reading of operands no longer in cache).
//
// Usage: bench_mlp_minimal_step [--rounds R] [--steps S] [--block B] [--fixed-batch]
//        (threads: OMP_NUM_THREADS)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "magmadnn/backend/cpu/onednn_compat.h"

namespace {

using dnnl::memory;
using Dims = memory::dims;
constexpr memory::data_type f32 = memory::data_type::f32;
constexpr std::int64_t kBatch = 100, kIn = 784, kHidden = 528, kOut = 10, kRows = 60000;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// One oneDNN matmul C = scale op(A) op(B) (+ bias) (+ C) (then eltwise) on
// row-major host arrays; transposes are strides, as in the CPU backend. A
// scale other than 1 is a run-time scale, as in the CPU backend.
struct Matmul {
  dnnl::matmul prim;
  memory::desc a, b, c, bias;
  float scale;
  Matmul(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, bool with_bias, bool sum,
         bool sigmoid, float scale_ = 1.f)
      : scale(scale_) {
    namespace compat = magmadnn::onednn_compat;
    a = memory::desc({m, k}, f32, ta ? Dims{1, m} : Dims{k, 1});
    b = memory::desc({k, n}, f32, tb ? Dims{1, k} : Dims{n, 1});
    c = memory::desc({m, n}, f32, Dims{n, 1});
    if (with_bias) bias = memory::desc({1, n}, f32, Dims{n, 1});
    dnnl::post_ops po;
    if (sum) compat::append_sum(po, 1.f);
    if (sigmoid) compat::append_eltwise(po, dnnl::algorithm::eltwise_logistic, 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    if (scale != 1.f) compat::set_runtime_scale(attr);
    prim = dnnl::matmul(compat::matmul_pd(engine(), a, b, with_bias ? &bias : nullptr, c, attr));
  }
  void operator()(dnnl::stream& s, const float* A, const float* B, float* C, const float* bias_p = nullptr) const {
    memory ma(a, engine(), const_cast<float*>(A)), mb(b, engine(), const_cast<float*>(B)), mc(c, engine(), C);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    if (bias_p) args.emplace(DNNL_ARG_BIAS, memory(bias, engine(), const_cast<float*>(bias_p)));
    if (scale != 1.f) {
      args.emplace(magmadnn::onednn_compat::scale_arg(),
                   memory(magmadnn::onednn_compat::scale_desc(), engine(), const_cast<float*>(&scale)));
    }
    prim.execute(s, args);
    s.wait();
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Net {
  static constexpr float kLr = 0.05f, kDecay = 1e-3f;
  std::vector<float> data, w0, b0, w1, b1, x, h, z, dz, dh, dx1, dw1, db0;
  std::vector<int> labels, order;
  // The step's products; fwd0 carries bias + sigmoid, upd0 the folded update.
  Matmul fwd0{false, true, kBatch, kHidden, kIn, true, false, true};
  Matmul fwd1{false, true, kBatch, kOut, kHidden, true, false, false};
  Matmul dx1m{false, false, kBatch, kHidden, kOut, false, false, false};
  Matmul dw1m{true, false, kOut, kHidden, kBatch, false, false, false};
  Matmul upd0{true, false, kHidden, kIn, kBatch, false, true, false, -kLr};
  // The floor's five products, with beta = 0 and no post-ops.
  Matmul p_fwd0{false, true, kBatch, kHidden, kIn, false, false, false};
  Matmul p_dw0{true, false, kHidden, kIn, kBatch, false, false, false};
  std::vector<float> p_h, p_dw0buf;
  dnnl::stream stream{engine()};

  Net()
      : data(static_cast<std::size_t>(kRows * kIn)), w0(kHidden * kIn), b0(kHidden), w1(kOut * kHidden), b1(kOut),
        x(kBatch * kIn), h(kBatch * kHidden), z(kBatch * kOut), dz(kBatch * kOut), dh(kBatch * kHidden),
        dx1(kBatch * kHidden), dw1(kOut * kHidden), db0(kHidden), labels(kRows), order(kRows),
        p_h(kBatch * kHidden), p_dw0buf(kHidden * kIn) {
    std::mt19937 g(7);
    std::uniform_real_distribution<float> pixel(0.f, 1.f), weight(-0.05f, 0.05f);
    for (auto& v : data) v = pixel(g);
    for (auto& v : labels) v = static_cast<int>(g() % kOut);
    for (auto& v : w0) v = weight(g);
    for (auto& v : w1) v = weight(g);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), g);
  }

  void step(std::int64_t s, bool fixed_batch) {
    const std::int64_t first = fixed_batch ? 0 : (s * kBatch) % kRows;
    if (!fixed_batch || s == 0) {
#pragma omp parallel for schedule(static)
      for (std::int64_t r = 0; r < kBatch; ++r) {
        std::memcpy(&x[r * kIn], &data[static_cast<std::size_t>(order[first + r]) * kIn], kIn * sizeof(float));
      }
    }
    fwd0(stream, x.data(), w0.data(), h.data(), b0.data());
    fwd1(stream, h.data(), w1.data(), z.data(), b1.data());
    for (std::int64_t r = 0; r < kBatch; ++r) {  // softmax cross-entropy's gradient, mean over the batch
      const float* zr = &z[r * kOut];
      const float mx = *std::max_element(zr, zr + kOut);
      float sum = 0.f;
      for (std::int64_t j = 0; j < kOut; ++j) sum += std::exp(zr[j] - mx);
      for (std::int64_t j = 0; j < kOut; ++j) {
        dz[r * kOut + j] = (std::exp(zr[j] - mx) / sum - (j == labels[order[first + r]] ? 1.f : 0.f)) / kBatch;
      }
    }
    dx1m(stream, dz.data(), w1.data(), dx1.data());  // reads W1 before its update
    dw1m(stream, dz.data(), h.data(), dw1.data());
#pragma omp parallel
    {
      // The sigmoid's gradient and the hidden bias's gradient in one pass, a column block per thread.
#pragma omp for schedule(static)
      for (std::int64_t c0 = 0; c0 < kHidden; c0 += 16) {
        float acc[16] = {};
        const std::int64_t w = std::min<std::int64_t>(16, kHidden - c0);
        for (std::int64_t r = 0; r < kBatch; ++r) {
          for (std::int64_t j = 0; j < w; ++j) {
            const float y = h[r * kHidden + c0 + j];
            const float d = dx1[r * kHidden + c0 + j] * y * (1.f - y);
            dh[r * kHidden + c0 + j] = d;
            acc[j] += d;
          }
        }
        for (std::int64_t j = 0; j < w; ++j) db0[c0 + j] = acc[j];
      }
      const float beta = 1.f - kLr * kDecay;
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < kHidden * kIn; ++i) w0[i] *= beta;
    }
    upd0(stream, dh.data(), x.data(), w0.data());
    const float beta = 1.f - kLr * kDecay;
    for (std::int64_t i = 0; i < kOut * kHidden; ++i) w1[i] = beta * w1[i] - kLr * dw1[i];
    for (std::int64_t j = 0; j < kHidden; ++j) b0[j] -= kLr * db0[j];
    for (std::int64_t j = 0; j < kOut; ++j) {
      float g = 0.f;
      for (std::int64_t r = 0; r < kBatch; ++r) g += dz[r * kOut + j];
      b1[j] -= kLr * g;
    }
  }

  // The floor's loop: fwd0, fwd1, dW1, dX1, dW0, beta = 0, fixed buffers.
  void products() {
    p_fwd0(stream, x.data(), w0.data(), p_h.data());
    fwd1(stream, p_h.data(), w1.data(), z.data(), b1.data());
    dw1m(stream, dz.data(), p_h.data(), dw1.data());
    dx1m(stream, dz.data(), w1.data(), dx1.data());
    p_dw0(stream, dh.data(), x.data(), p_dw0buf.data());
  }
};

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::int64_t steps = 3000, block = 10;
  bool fixed_batch = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fixed-batch") {
      fixed_batch = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
    if (a == "--rounds") rounds = std::atoi(argv[++i]);
    else if (a == "--steps") steps = std::atoll(argv[++i]);
    else if (a == "--block") block = std::atoll(argv[++i]);
    else throw std::invalid_argument("unknown argument '" + a + "' (known: --rounds --steps --block --fixed-batch)");
  }
  if (rounds < 1 || steps < 1 || block < 1) throw std::invalid_argument("--rounds, --steps and --block must be positive");
  Net net;
  for (int w = 0; w < 20; ++w) net.step(w, fixed_batch), net.products();  // primitives created, pages touched
  std::printf("MLP N = 1 (batch 100)%s, %lld steps a round, alternating every %lld, %d threads; seconds\n\n",
              fixed_batch ? ", one fixed batch" : "", static_cast<long long>(steps), static_cast<long long>(block),
              omp_get_max_threads());
  std::printf("| round | minimal step | products alone | ratio |\n|---|---|---|---|\n");
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    double full = 0, prod = 0;
    for (std::int64_t s0 = 0; s0 < steps; s0 += block) {
      const std::int64_t s1 = std::min(steps, s0 + block);
      auto t0 = std::chrono::steady_clock::now();
      for (std::int64_t s = s0; s < s1; ++s) net.step(s, fixed_batch);
      full += seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      for (std::int64_t s = s0; s < s1; ++s) net.products();
      prod += seconds_since(t0);
    }
    ratios.push_back(full / prod);
    std::printf("| %d | %.3f | %.3f | %.3f |\n", r + 1, full, prod, full / prod);
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("\nmedian ratio %.3f (range %.3f-%.3f); W0[0] = %g (the weights trained: %s)\n",
              ratios[ratios.size() / 2], ratios.front(), ratios.back(), static_cast<double>(net.w0[0]),
              std::isfinite(net.w0[0]) ? "finite" : "NOT FINITE");
  return 0;
}

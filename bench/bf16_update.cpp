// What a bf16 step's weight update costs, per weight of the MLP benchmark
// (batch 100, 784 -> 528 -> ... -> 10), with the gradient's bf16 GEMM:
//   fold+cast     the update folded into the weight-gradient GEMM
//                 (W = keep W - lr dz^T x, oneDNN's beta), then the cast of
//                 W to bf16 for the next forward: what plain SGD did before
//   gemm+fused    the GEMM writes the gradient G, then one pass writes
//                 W = keep W - lr G and W's bf16 copy (math::axpby with y16)
//   gemm+axpby+cast   the same in two passes: the update, then the cast
//   tiled         math::gemm_update: the product made in row tiles, each
//                 consumed by the fused update while in cache
// and the fused and two-pass updates without their GEMM (the passes alone).
// With `cold`, 64 MB are written before each timed call, so that W comes
// from memory as in a training step, where only the update reads the float
// weight.
// Configurations alternate within each round so that all see the same
// machine; each reports the median and the minimum over rounds.
//
//   bench_bf16_update [rounds] [cold]   (threads: OMP_NUM_THREADS)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

using namespace magmadnn;

namespace {

double time_ms(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Tensor<bfloat16> random_bf16(const Shape& s) {
  Tensor<float> t(s, {UNIFORM, {-1.f, 1.f}}, HOST);
  return t.cast<bfloat16>();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  const bool cold = argc > 2 && std::string(argv[2]) == "cold";
  std::vector<float> evict(cold ? (64u << 20) / sizeof(float) : 0);
  const std::int64_t batch = 100;
  const float lr = 0.05f, keep = 1.f - 0.05f * 0.001f;
  std::printf(
      "| weight | fold+cast ms (median, min) | gemm+fused | gemm+axpby+cast | tiled | fused pass alone | axpby+cast alone |\n"
      "|---|---|---|---|---|---|---|\n");
  for (const auto [out, in] : {std::pair<std::int64_t, std::int64_t>{528, 784}, {528, 528}}) {
    const Tensor<bfloat16> dz16 = random_bf16({batch, out}), x16 = random_bf16({batch, in});
    Tensor<float> w({out, in}, {UNIFORM, {-0.1f, 0.1f}}, HOST), g({out, in}, HOST);
    Tensor<bfloat16> w16({out, in}, HOST);
    Backend& be = backend_of(w);
    auto cast = [&] { be.convert(dtype::f32, w.data(), dtype::bf16, w16.mutable_data(), w.size()); };
    const std::vector<std::function<void()>> configs = {
        [&] {
          math::matmul_mixed(-lr, dz16, true, x16, false, keep, w);
          cast();
        },
        [&] {
          math::matmul_mixed(1.f, dz16, true, x16, false, 0.f, g);
          math::axpby(-lr, g, keep, w, w16);
        },
        [&] {
          math::matmul_mixed(1.f, dz16, true, x16, false, 0.f, g);
          math::axpby(-lr, g, keep, w);
          cast();
        },
        [&] { math::gemm_update(-lr, dz16, true, x16, false, keep, w, &w16); },
        [&] { math::axpby(-lr, g, keep, w, w16); },
        [&] {
          math::axpby(-lr, g, keep, w);
          cast();
        }};
    std::vector<std::vector<double>> t(configs.size());
    for (int r = 0; r < rounds + 5; ++r) {
      for (std::size_t c = 0; c < configs.size(); ++c) {
        if (cold) {
          for (std::size_t i = 0; i < evict.size(); i += 16) evict[i] += 1.f;
        }
        const double ms = time_ms(configs[c]);
        if (r >= 5) t[c].push_back(ms);  // the first rounds warm caches and oneDNN's primitives
      }
    }
    std::printf("| %lld x %lld |", static_cast<long long>(out), static_cast<long long>(in));
    for (auto& v : t) {
      std::sort(v.begin(), v.end());
      std::printf(" %.3f, %.3f |", v[v.size() / 2], v.front());
    }
    std::printf("\n");
  }
  return 0;
}

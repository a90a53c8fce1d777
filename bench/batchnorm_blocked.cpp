// Batch normalisation on the channel-blocked layout (math_blocked.h) at the
// resnet preset's three activation shapes, batch 128: forward (batch
// statistics, ReLU, with and without the residual input) and backward (dx,
// and dskip where there is a residual input), each the median of R calls
// on the same buffers after a warm-up. The two smaller shapes' buffers stay
// in the L3 cache between calls, so those rows are the kernels' own speed;
// the 16-channel shape's six buffers of 6.4 MB do not all fit, as inside a
// training step, where the activations come from memory.
//
// Usage: bench_batchnorm_blocked [--calls R] [--block B]  (threads: OMP_NUM_THREADS)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "magmadnn/tensor/math_blocked.h"
#include "magmadnn/tensor/tensor.h"

using namespace magmadnn;

namespace {

template <typename F>
double median_ms(int calls, F&& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < calls; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

Tensor<float> filled(const Shape& s, float scale, float shift) {
  std::vector<float> v(static_cast<std::size_t>(s.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>((i * 2654435761u) % 1000) / 1000.f + shift;
  return Tensor<float>::from_vector(s, v, HOST);
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 40, block = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--block") == 0) block = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--calls R] [--block 8|16]\n", argv[0]);
      return 2;
    }
  }
  std::printf("| activation | residual input | forward ms | backward ms |\n|---|---|---|---|\n");
  for (const Shape& s : {Shape{128, 16, 28, 28}, Shape{128, 32, 14, 14}, Shape{128, 64, 7, 7}}) {
    const std::int64_t c = s[1];
    const Tensor<float> x = filled(s, 2.f, -0.5f), skip = filled(s, 1.f, -0.5f), g = filled(s, 1.f, -0.5f);
    const Tensor<float> gamma = filled({c}, 0.5f, 0.75f), beta = filled({c}, 0.2f, -0.1f);
    Tensor<float> y(s, HOST), dx(s, HOST), dskip(s, HOST), mean({c}, HOST), var({c}, HOST), inv({c}, HOST),
        dgamma({c}, HOST), dbeta({c}, HOST);
    for (bool residual : {false, true}) {
      const Tensor<float>* sk = residual ? &skip : nullptr;
      const double f = median_ms(calls, [&] {
        math::batchnorm_forward_blocked(block, x, gamma, beta, sk, true, 1e-5f, static_cast<const Tensor<float>*>(nullptr),
                                        static_cast<const Tensor<float>*>(nullptr), y, mean, var, inv);
      });
      const double b = median_ms(calls, [&] {
        math::batchnorm_backward_blocked(block, x, &y, g, gamma, mean, inv, true, &dx, residual ? &dskip : nullptr,
                                         dgamma, dbeta);
      });
      std::printf("| %lld x %lld x %lld x %lld | %s | %.3f | %.3f |\n", static_cast<long long>(s[0]),
                  static_cast<long long>(s[1]), static_cast<long long>(s[2]), static_cast<long long>(s[3]),
                  residual ? "yes" : "no", f, b);
    }
  }
  return 0;
}

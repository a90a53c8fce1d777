// Graph passes benchmark: the MLP of the MagmaDNN paper (batch 100,
// 784 -> 528 sigmoid x N -> 10, softmax cross-entropy), N = 1..4, float.
//
// Table 1, training: one step = forward + backward (op::gradients w.r.t.
// every weight and bias), on the graph as written (matmul, add, sigmoid
// nodes) and after op::optimize (one linear_sigmoid node per layer).
// Table 2, inference: forward only, as written with eval(), fused with
// eval(), and fused through an op::InferencePlan that recycles buffers,
// with the bytes of forward buffers alive at once.
//
// Each time is the median of `steps` (default 30) timed steps after 5 warm-up
// steps; every step marks the input as changed so the whole graph recomputes.
// Usage: bench_graph_fusion [steps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "magmadnn/compute/compute.h"

using namespace magmadnn;
using T = float;

namespace {

constexpr std::int64_t kBatch = 100, kIn = 784, kHidden = 528, kOut = 10;
constexpr int kWarmup = 5;

struct Mlp {
  op::Var<T> X, Y;
  std::vector<op::Expr<T>> params;
  op::Expr<T> logits, loss;

  explicit Mlp(int hidden_layers) {
    X = op::var<T>("X", {kBatch, kIn}, {UNIFORM, {0.0f, 1.0f}}, HOST);
    Y = op::constant<T>("Y", {kBatch, kOut}, {CONSTANT, {0.1f}}, HOST);
    op::Expr<T> h = X;
    std::int64_t fan_in = kIn;
    for (int l = 0; l <= hidden_layers; ++l) {
      const bool last = l == hidden_layers;
      const std::int64_t fan_out = last ? kOut : kHidden;
      auto W = op::var<T>("W" + std::to_string(l), {fan_out, fan_in}, {GLOROT, {1.0f}}, HOST);
      auto b = op::var<T>("b" + std::to_string(l), {fan_out}, {ZERO, {}}, HOST);
      params.push_back(W);
      params.push_back(b);
      // Written the way v1 users wrote a layer: product, bias, activation.
      h = op::add(op::matmul(h, W, false, true), b);
      if (!last) h = op::sigmoid(h);
      fan_in = fan_out;
    }
    logits = h;
    loss = op::softmax_crossentropy(logits, Y);
  }
};

template <typename F>
double median_ms(int steps, F&& step) {
  for (int i = 0; i < kWarmup; ++i) step();
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

double train_step_ms(int layers, bool fused, int steps) {
  Mlp m(layers);
  op::Expr<T> loss = fused ? op::optimize(m.loss) : m.loss;
  T sink = 0;
  const double t = median_ms(steps, [&] {
    m.X->mark_changed();  // a new batch: the whole graph recomputes
    op::GradTable<T> g = op::gradients(loss, m.params);
    sink += g.get(m.params[0])->get(std::int64_t{0});
  });
  if (sink == T(12345)) std::printf(" ");  // keeps the work observable
  return t;
}

struct InferResult {
  double ms;
  std::size_t peak_bytes;
};

InferResult infer_ms(int layers, int mode, int steps) {
  Mlp m(layers);
  op::Expr<T> out = mode == 0 ? m.logits : op::optimize(m.logits);
  if (mode < 2) {
    const double t = median_ms(steps, [&] {
      m.X->mark_changed();
      (void)out->eval();
    });
    // Without a plan every interior node keeps its buffer.
    std::size_t bytes = 0;
    for (auto* n : op::topological_order(out.get())) {
      if (!n->get_inputs().empty()) bytes += static_cast<std::size_t>(n->output().size()) * sizeof(T);
    }
    return {t, bytes};
  }
  op::InferencePlan<T> plan(out);
  const double t = median_ms(steps, [&] {
    m.X->mark_changed();
    (void)plan.run();
  });
  return {t, plan.stats().peak_in_use_bytes};
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 30;
  std::printf("MLP batch %lld, %lld -> %lld sigmoid x N -> %lld, float, median of %d steps after %d warm-up\n\n",
              static_cast<long long>(kBatch), static_cast<long long>(kIn), static_cast<long long>(kHidden),
              static_cast<long long>(kOut), steps, kWarmup);
  std::printf("training step (forward + backward)\n");
  std::printf("%3s | %12s | %12s | %7s\n", "N", "unfused ms", "fused ms", "speedup");
  for (int n = 1; n <= 4; ++n) {
    const double u = train_step_ms(n, false, steps);
    const double f = train_step_ms(n, true, steps);
    std::printf("%3d | %12.3f | %12.3f | %6.2fx\n", n, u, f, u / f);
  }
  std::printf("\ninference (forward only)\n");
  std::printf("%3s | %12s | %12s | %14s | %12s | %12s | %12s\n", "N", "unfused ms", "fused ms", "fused+reuse ms",
              "unfused KiB", "fused KiB", "reuse KiB");
  for (int n = 1; n <= 4; ++n) {
    const InferResult u = infer_ms(n, 0, steps), f = infer_ms(n, 1, steps), r = infer_ms(n, 2, steps);
    std::printf("%3d | %12.3f | %12.3f | %14.3f | %12zu | %12zu | %12zu\n", n, u.ms, f.ms, r.ms, u.peak_bytes / 1024,
                f.peak_bytes / 1024, r.peak_bytes / 1024);
  }
  return 0;
}

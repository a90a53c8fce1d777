// Shared pieces of the pipeline tests: the MLP and LeNet-5 as layer
// factories, a batch of data, the one-process reference trained on whole
// batches, and the comparison of a stage's weights with the reference's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "magmadnn.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/model/loss_graph.h"
#include "magmadnn/parallel/pipeline/pipeline.h"

namespace ptest {
using namespace magmadnn;
namespace pl = magmadnn::distributed::pipeline;
using Factories = std::vector<pl::LayerFactory<float>>;

// A pipeline is checked against one process to 1e-5 or 2e-5, so both must
// round alike: one convolution algorithm for every shape. Left to itself the
// chooser times its candidates per shape, micro-batches have other shapes than
// whole batches, and under a sanitizer's noisy timings LeNet-5's weights once
// came out 3.8e-5 apart (PipelineReplicas, 2 stages x 2 replicas).
inline const bool kOneConvAlgorithm = [] {
  conv::set_forced_algorithm(conv::Algo::Im2colGemm);
  return true;
}();

inline pl::LayerFactory<float> dense(std::int64_t units) {
  return [units](const op::Expr<float>& x) { return layer::fullyconnected<float>(x, units).ptr(); };
}
inline pl::LayerFactory<float> act(layer::activation_t f) {
  return [f](const op::Expr<float>& x) { return layer::activation<float>(x, f).ptr(); };
}

/// 20 -> 16 -> 12 -> 8 -> 4 with ReLUs and a softmax: 8 layers.
inline Factories mlp() {
  return {dense(16), act(layer::RELU), dense(12), act(layer::RELU), dense(8), act(layer::RELU), dense(4),
          act(layer::SOFTMAX)};
}
/// LeNet-5 on {1, 28, 28}: 13 layers.
inline Factories lenet5() {
  auto conv = [](std::int64_t filters, layer::Dims2 pad) {
    return pl::LayerFactory<float>([filters, pad](const op::Expr<float>& x) {
      return layer::conv2d<float>(x, {5, 5}, filters, pad, {1, 1}, {1, 1}, true, true).ptr();
    });
  };
  auto pool = pl::LayerFactory<float>(
      [](const op::Expr<float>& x) { return layer::pooling<float>(x, {2, 2}, {0, 0}, {2, 2}).ptr(); });
  auto flat = pl::LayerFactory<float>([](const op::Expr<float>& x) { return layer::flatten<float>(x).ptr(); });
  return {conv(6, {2, 2}), act(layer::RELU), pool, conv(16, {0, 0}), act(layer::RELU), pool, flat,
          dense(120), act(layer::RELU), dense(84), act(layer::RELU), dense(10), act(layer::SOFTMAX)};
}

/// x {n, sample...} uniform in [-1, 1], y one-hot of `classes`, from `seed`.
inline void make_batch(std::int64_t n, const std::vector<std::int64_t>& sample, std::int64_t classes, unsigned seed,
                       Tensor<float>& x, Tensor<float>& y) {
  std::vector<std::int64_t> dims{n};
  dims.insert(dims.end(), sample.begin(), sample.end());
  x = Tensor<float>(Shape(dims), {ZERO}, HOST);
  y = Tensor<float>(Shape({n, classes}), {ZERO}, HOST);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (std::int64_t i = 0; i < x.size(); ++i) x.set(i, u(gen));
  for (std::int64_t i = 0; i < n; ++i) y.set({i, static_cast<std::int64_t>(gen() % classes)}, 1.f);
}

inline std::shared_ptr<optimizer::Optimizer<float>> make_optimizer() {
  return std::make_shared<optimizer::GradientDescent<float>>(0.05, 0.9);
}

/// The network in one process, trained on whole batches (the reference).
struct Reference {
  std::vector<std::shared_ptr<layer::Layer<float>>> layers;
  op::Var<float> x, y;
  op::Expr<float> loss;
  std::vector<op::Expr<float>> params;
  std::shared_ptr<optimizer::Optimizer<float>> opt = make_optimizer();

  /// Built as Pipeline builds the whole network: after set_seed(seed), on a
  /// placeholder holding one zero sample, factory by factory.
  Reference(const Factories& f, const std::vector<std::int64_t>& sample, std::int64_t classes, std::uint64_t seed) {
    set_seed(seed);
    std::vector<std::int64_t> pattern{-1}, one{1};
    pattern.insert(pattern.end(), sample.begin(), sample.end());
    one.insert(one.end(), sample.begin(), sample.end());
    x = op::placeholder<float>("x", pattern, MANAGED);
    x->set_value(Tensor<float>(Shape(one), {ZERO}, MANAGED));
    op::Expr<float> cur = x;
    for (const auto& make : f) {
      layers.push_back(make(cur));
      cur = layers.back()->out();
      for (const auto& w : layers.back()->get_weights()) params.push_back(w);
    }
    y = op::placeholder<float>("y", {-1, classes}, MANAGED);
    y->set_value(Tensor<float>(Shape({1, classes}), {ZERO}, MANAGED));
    loss = model::make_loss_graph<float>(op::optimize(cur), y, optimizer::CROSS_ENTROPY).loss;
  }
  /// One step as a pipeline of `micro` micro-batches computes it: each
  /// micro-batch's gradient (its own batch statistics), scaled by 1 / micro
  /// and summed, then one update.
  double step_micro(const Tensor<float>& xb, const Tensor<float>& yb, int micro) {
    const std::int64_t rows = xb.shape()[0] / micro;
    std::vector<Tensor<float>> sum;
    double l = 0;
    for (int m = 0; m < micro; ++m) {
      x->set_value(xb.slice(m * rows, (m + 1) * rows));
      y->set_value(yb.slice(m * rows, (m + 1) * rows));
      auto table = op::compute_gradients<float>(loss, params, {}, 1.0f / static_cast<float>(micro));
      l += loss->eval()->get(0) / micro;
      for (std::size_t i = 0; i < params.size(); ++i) {
        if (m == 0) sum.push_back(*table.get(params[i]));
        else math::axpy(1.0f, *table.get(params[i]), sum[i]);
      }
    }
    op::GradTable<float> table;
    for (std::size_t i = 0; i < params.size(); ++i) table.set(params[i], std::move(sum[i]));
    opt->step(params, table);
    return l;
  }
  double step(const Tensor<float>& xb, const Tensor<float>& yb) {
    x->set_value(xb);
    y->set_value(yb);
    auto table = op::compute_gradients<float>(loss, params);
    const double l = loss->eval()->get(0);
    opt->step(params, table);
    return l;
  }
};

/// Whether every weight of `stage` equals the reference's (layers from
/// `first`) within rtol of the largest |value| of each tensor.
inline ::testing::AssertionResult weights_close(pl::Stage<float>& stage, int first, const Reference& ref,
                                                double rtol, const std::string& what) {
  for (std::size_t k = 0; k < stage.layers().size(); ++k) {
    const auto& got = stage.layers()[k]->get_weights();
    const auto& want = ref.layers[first + k]->get_weights();
    for (std::size_t j = 0; j < got.size(); ++j) {
      const auto g = got[j]->value().to_vector(), w = want[j]->value().to_vector();
      double scale = 0, worst = 0;
      for (float v : w) scale = std::max(scale, std::abs(double(v)));
      for (std::size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::abs(double(g[i]) - double(w[i])));
      if (worst > rtol * scale + 1e-7)
        return ::testing::AssertionFailure() << what << ": layer " << first + k << " weight " << j << " off by "
                                             << worst << " (scale " << scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

/// Whether the layer state (BatchNorm's running statistics) of `stage`
/// equals the reference's within `tol`.
inline ::testing::AssertionResult state_close(pl::Stage<float>& stage, int first, const Reference& ref, double tol) {
  for (std::size_t k = 0; k < stage.layers().size(); ++k) {
    const auto got = stage.layers()[k]->get_state(), want = ref.layers[first + k]->get_state();
    if (got.size() != want.size()) return ::testing::AssertionFailure() << "layer " << first + k << ": state sizes";
    for (std::size_t j = 0; j < got.size(); ++j) {
      const auto g = got[j].second->to_vector(), w = want[j].second->to_vector();
      for (std::size_t i = 0; i < w.size(); ++i)
        if (std::abs(double(g[i]) - double(w[i])) > tol)
          return ::testing::AssertionFailure() << want[j].first << "[" << i << "] is " << g[i] << ", expected " << w[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace ptest

// The strategy tests' world, network, data shards and checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "magmadnn.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/parallel/strategy.h"

/// The communicator every test uses (strategy_test_main.cpp).
std::shared_ptr<magmadnn::distributed::Communicator> strategy_world();

namespace stest {
using namespace magmadnn;

inline std::shared_ptr<distributed::Communicator> make_world() {
  return distributed::make_communicator("auto");
}

/// An MLP in -> hidden... -> classes with tanh and a softmax.
template <typename T>
std::vector<std::shared_ptr<layer::Layer<T>>> mlp(std::int64_t in, const std::vector<std::int64_t>& hidden,
                                                  std::int64_t classes) {
  std::vector<std::shared_ptr<layer::Layer<T>>> ls;
  auto x = op::placeholder<T>("x", {-1, in});
  x->set_value(Tensor<T>({1, in}, {ZERO}));  // gives the layers their input shape
  auto input = layer::input<T>(x);
  ls.push_back(input.ptr());
  op::Expr<T> out = input->out();
  for (std::int64_t h : hidden) {
    auto fc = layer::fullyconnected<T>(out, h, true);
    auto act = layer::activation<T>(fc->out(), layer::TANH);
    ls.push_back(fc.ptr());
    ls.push_back(act.ptr());
    out = act->out();
  }
  auto fc = layer::fullyconnected<T>(out, classes, true);
  auto sm = layer::activation<T>(fc->out(), layer::SOFTMAX);
  ls.push_back(fc.ptr());
  ls.push_back(sm.ptr());
  ls.push_back(layer::output<T>(sm->out()).ptr());
  return ls;
}

/// n samples in `dim` dimensions from `classes` Gaussian blobs, one-hot labels.
template <typename T>
void blobs(std::int64_t n, std::int64_t dim, std::int64_t classes, Tensor<T>& x, Tensor<T>& y, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<T> xv(static_cast<std::size_t>(n * dim)), yv(static_cast<std::size_t>(n * classes), T(0));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t c = i % classes;
    for (std::int64_t d = 0; d < dim; ++d)
      xv[static_cast<std::size_t>(i * dim + d)] = static_cast<T>((d % classes == c ? 1.5 : 0.0) + noise(gen));
    yv[static_cast<std::size_t>(i * classes + c)] = T(1);
  }
  x = Tensor<T>::from_vector({n, dim}, xv);
  y = Tensor<T>::from_vector({n, classes}, yv);
}

/// Part `part` of `parts` of every global batch of `global_batch` rows, in
/// batch order: trained with batch global_batch / parts and no shuffling,
/// local batch b is this part's share of global batch b.
template <typename T>
Tensor<T> shard(const Tensor<T>& t, std::int64_t global_batch, int parts, int part) {
  const std::int64_t n = t.shape()[0], row = t.size() / n, local = global_batch / parts;
  std::vector<T> all = t.to_vector(), out;
  for (std::int64_t b = 0; b < n / global_batch; ++b) {
    const std::int64_t first = b * global_batch + part * local;
    out.insert(out.end(), all.begin() + first * row, all.begin() + (first + local) * row);
  }
  std::vector<std::int64_t> dims = t.shape().dims();
  dims[0] = static_cast<std::int64_t>(out.size()) / row;
  return Tensor<T>::from_vector(Shape(dims), out);
}

/// Every parameter's values, concatenated.
template <typename T>
std::vector<T> weights(const model::NeuralNetwork<T>& net) {
  std::vector<T> out;
  for (const auto& p : net.parameters()) {
    const auto v = p->value().to_vector();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

/// FNV-1a over the parameters' bytes.
template <typename T>
std::int64_t weight_hash(const model::NeuralNetwork<T>& net) {
  std::uint64_t h = 1469598103934665603ull;
  for (T v : weights(net)) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (unsigned char c : b) h = (h ^ c) * 1099511628211ull;
  }
  return static_cast<std::int64_t>(h);
}

/// Whether every rank's `value` equals rank 0's.
inline bool same_on_all_ranks(distributed::Communicator& comm, std::int64_t value) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(comm.size()));
  comm.allgather(distributed::host_buffer(static_cast<const std::int64_t*>(&value), 1),
                 distributed::host_buffer(all.data(), all.size()));
  for (std::int64_t v : all)
    if (v != all[0]) return false;
  return true;
}

/// Largest |a - b| / max(1, |b|).
template <typename T>
double max_rel_diff(const std::vector<T>& a, const std::vector<T>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0.0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])) /
                     std::max(1.0, std::abs(static_cast<double>(b[i])));
    m = std::max(m, d);
  }
  return m;
}

}  // namespace stest

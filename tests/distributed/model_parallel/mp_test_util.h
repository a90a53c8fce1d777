// Shared pieces of the model-parallel tests: the group (the strategy tests'
// world communicator), slices of whole tensors, host variables and a
// tolerance check.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "magmadnn.h"
#include "magmadnn/parallel/model_parallel/group_tensor.h"
#include "magmadnn/parallel/model_parallel/parallel_linear.h"

/// The communicator every test uses (strategy_test_main.cpp).
std::shared_ptr<magmadnn::distributed::Communicator> strategy_world();

namespace mptest {
using namespace magmadnn;
using magmadnn::Shard;
using magmadnn::shard_of;

inline distributed::mp::GroupPtr group() { return strategy_world(); }

/// This rank's shard of n over the group.
inline Shard my_shard(std::int64_t n) { return shard_of(n, group()->size(), group()->rank()); }

/// Rows [s.offset, s.offset + s.extent) of t, as a new tensor.
template <typename T>
Tensor<T> rows_of(const Tensor<T>& t, Shard s) {
  return Tensor<T>(t.slice(s.offset, s.offset + s.extent));
}
template <typename T>
Tensor<T> cols_of(const Tensor<T>& t, Shard s) {
  return distributed::mp::take_columns(t, s);
}

/// A host variable holding `value`.
template <typename T>
op::Var<T> host_var(const std::string& name, const Tensor<T>& value) {
  auto v = op::var<T>(name, value.shape(), {NONE}, HOST);
  v->set_value(value);
  return v;
}

/// Whether every element of `got` is within atol + rtol * max|want| of `want`.
template <typename T>
::testing::AssertionResult close(const Tensor<T>& got, const Tensor<T>& want, double rtol, double atol,
                                 const std::string& what) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << what << ": shape " << got.shape() << ", expected " << want.shape();
  const auto g = got.to_vector(), w = want.to_vector();
  double scale = 0, worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < w.size(); ++i) scale = std::max(scale, std::abs(double(w[i])));
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double d = std::abs(double(g[i]) - double(w[i]));
    if (d > worst) worst = d, at = i;
  }
  if (worst <= atol + rtol * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << " " << want.shape() << ": element " << at << " is " << g[at]
                                       << ", expected " << w[at] << " (|diff| " << worst << ", scale " << scale
                                       << ", rank " << group()->rank() << " of " << group()->size() << ")";
}

}  // namespace mptest

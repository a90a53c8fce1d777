/// @file gradcheck.h
/// The one gradient check every op and layer test uses.
///
///   EXPECT_TRUE(magmadnn::testing::gradcheck<double>(
///       [](const auto& x) { return op::sigmoid(x[0]); }, {input_tensor}));
///
/// Builds the expression over fresh host variables holding `inputs`, forms
/// L = sum(out * R) with fixed pseudo-random weights R (so a transposed or
/// permuted gradient cannot pass by symmetry), and compares op::gradients of L
/// with central differences (L(x + eps) - L(x - eps)) / 2 eps, at every
/// element of small inputs and at `max_positions` sampled elements of large
/// ones. A mismatch names the input, the element and both values.
/// Defaults: double, eps 1e-6, relative tolerance 1e-6; the float defaults
/// (float_options()) are looser.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "magmadnn/compute/compute.h"

namespace magmadnn::testing {

struct GradcheckOptions {
  double eps = 1e-6;
  double rtol = 1e-6;
  double atol = 1e-9;
  std::int64_t max_positions = 48;  ///< per input; all elements when the input is smaller
  std::uint64_t seed = 12345;
};

/// Looser defaults for float graphs.
inline GradcheckOptions float_options() {
  GradcheckOptions o;
  o.eps = 1e-2;
  o.rtol = 2e-2;
  o.atol = 2e-3;
  return o;
}

namespace detail {
// A small deterministic generator (independent of the library's RNG so that a
// bug there cannot mask a gradient bug).
struct Lcg {
  std::uint64_t s;
  double uniform(double lo, double hi) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * static_cast<double>(s >> 11) / 9007199254740992.0;
  }
};
}  // namespace detail

/// A host tensor of `shape` with values uniform in [lo, hi) (deterministic).
template <typename T>
Tensor<T> random_tensor(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  detail::Lcg g{seed * 2654435761ull + 1};
  std::vector<T> v(static_cast<std::size_t>(shape.numel()));
  for (auto& x : v) x = static_cast<T>(g.uniform(lo, hi));
  return Tensor<T>::from_vector(shape, v, HOST);
}

template <typename T>
using GraphBuilder = std::function<op::Expr<T>(const std::vector<op::Var<T>>&)>;

template <typename T>
::testing::AssertionResult gradcheck(const GraphBuilder<T>& build, const std::vector<Tensor<T>>& inputs,
                                     GradcheckOptions opt = {}) {
  std::vector<op::Var<T>> vars;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto v = op::var<T>("x" + std::to_string(i), inputs[i].shape(), {NONE}, HOST);
    v->set_value(inputs[i]);
    vars.push_back(v);
  }
  op::Expr<T> out = build(vars);
  const Shape out_shape = out->eval()->shape();
  auto weights = op::constant<T>("R", random_tensor<T>(out_shape, opt.seed + 7));
  op::Expr<T> loss = op::reduce_sum(op::product(out, weights));

  std::vector<op::Expr<T>> wrt(vars.begin(), vars.end());
  op::GradTable<T> table = op::gradients(loss, wrt);
  auto loss_value = [&]() { return static_cast<double>(loss->eval()->get(std::int64_t{0})); };

  detail::Lcg pick{opt.seed};
  std::ostringstream failures;
  int n_fail = 0;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const Tensor<T>* g = table.get(vars[i]);
    if (g == nullptr) return ::testing::AssertionFailure() << "no gradient for input " << i;
    if (g->shape() != inputs[i].shape()) {
      return ::testing::AssertionFailure() << "gradient of input " << i << " has shape " << g->shape()
                                           << ", input has " << inputs[i].shape();
    }
    const std::int64_t n = inputs[i].size();
    std::vector<std::int64_t> positions;
    if (n <= opt.max_positions) {
      for (std::int64_t j = 0; j < n; ++j) positions.push_back(j);
    } else {
      for (std::int64_t k = 0; k < opt.max_positions; ++k) {
        positions.push_back(std::min<std::int64_t>(n - 1, static_cast<std::int64_t>(pick.uniform(0, double(n)))));
      }
    }
    for (std::int64_t j : positions) {
      const T x0 = vars[i]->value().get(j);
      vars[i]->value().set(j, static_cast<T>(double(x0) + opt.eps));
      const double lp = loss_value();
      vars[i]->value().set(j, static_cast<T>(double(x0) - opt.eps));
      const double lm = loss_value();
      vars[i]->value().set(j, x0);
      const double numeric = (lp - lm) / (2.0 * opt.eps);
      const double analytic = static_cast<double>(g->get(j));
      const double tol = opt.atol + opt.rtol * std::max(std::abs(numeric), std::abs(analytic));
      if (!(std::abs(numeric - analytic) <= tol)) {
        if (++n_fail <= 8) {
          failures << "\n  input " << i << " " << inputs[i].shape() << " element " << j << ": autodiff "
                   << analytic << ", central difference " << numeric;
        }
      }
    }
  }
  if (n_fail) {
    return ::testing::AssertionFailure() << n_fail << " gradient mismatch(es) for " << out->to_string()
                                         << failures.str();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace magmadnn::testing

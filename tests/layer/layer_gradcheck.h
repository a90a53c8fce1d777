/// @file layer_gradcheck.h
/// Gradient check of a whole layer: its output with respect to its input
/// and to every trainable weight, through the shared testing::gradcheck.
///
///   EXPECT_TRUE(layer_gradcheck(
///       [](const op::Expr<double>& x) { return layer::fullyconnected(x, 3); },
///       testing::random_tensor<double>({4, 5}, 1)));
///
/// `make` builds the layer on a given input node. The layer is built once on
/// a probe to learn its weights' shapes; inside the check it is built again
/// on the checked input, and each of its weight variables is replaced, in
/// the layer's graph, by the checked variable of the same shape (holding
/// random values), so the central differences perturb exactly the weights
/// the layer uses. `training` sets the layer's mode before the check.
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/layer/layers.h"
#include "support/gradcheck.h"

namespace magmadnn::testing {

/// Replaces every use of layer weight i by vars[i + first] in the layer's
/// graph (between its input and its output).
template <typename L>
void rebind_weights(L& l, const std::vector<op::Var<double>>& vars, std::size_t first) {
  const auto& weights = l.get_weights();
  for (op::Operation<double>* n : op::topological_order(l.out().get())) {
    for (std::size_t j = 0; j < n->get_inputs().size(); ++j) {
      for (std::size_t i = 0; i < weights.size(); ++i) {
        if (n->get_inputs()[j].get() == weights[i].get()) n->replace_input(j, vars[first + i].ptr());
      }
    }
  }
}

template <typename Make>
::testing::AssertionResult layer_gradcheck(Make make, const Tensor<double>& x, bool training = true,
                                           GradcheckOptions opt = {}) {
  auto probe_x = op::var<double>("probe_x", x.shape(), {ZERO}, HOST);
  auto probe = make(op::Expr<double>(probe_x));
  std::vector<Tensor<double>> inputs{x};
  std::uint64_t seed = 101;
  for (const auto& w : probe->get_weights()) inputs.push_back(random_tensor<double>(w->output().shape(), seed++));
  return gradcheck<double>(
      [&](const std::vector<op::Var<double>>& v) {
        auto l = make(op::Expr<double>(v[0]));
        rebind_weights(*l, v, 1);
        l->set_training(training);
        return l->out();
      },
      inputs, opt);
}

}  // namespace magmadnn::testing

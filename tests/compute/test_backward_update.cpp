// op::backward_update (plain SGD folded into the reverse pass) against the
// reference: compute_gradients, then var = beta * var + alpha * gradient.
// Covers the update folded into a linear op's GEMM, the generic path (applied
// right after the only reader's backward), a variable with two readers
// (applied after the pass), one the loss does not reach, and float products
// large enough for oneDNN, whose beta goes from a scaling pass (first call)
// to a primitive of its own (steady beta).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/compute/compute.h"
#include "magmadnn/compute/nodes.h"
#include "magmadnn/tensor/math.h"
#include "magmadnn/optimizer/optimizer.h"
#include "support/gradcheck.h"

using namespace magmadnn;
using magmadnn::testing::random_tensor;

namespace {

// A variable holding `value` (the v1 form shares the tensor's storage).
template <typename T>
op::Var<T> variable(const std::string& name, Tensor<T> value) {
  return op::var<T>(name, &value);
}

template <typename T>
struct Problem {
  op::Var<T> x, w1, b1, w2, unused;
  op::Var<T> y;
  op::Expr<T> loss;
};

// softmax_crossentropy(linear(sigmoid(linear(x, W1, b1)), W2) [+ h W2^T when
// `shared`: W2 read twice], and a variable the loss never reads.
template <typename T>
Problem<T> make_problem(std::int64_t batch, std::int64_t in, std::int64_t hidden, std::int64_t out, bool shared,
                        std::uint64_t seed) {
  Problem<T> p;
  p.x = op::constant<T>("x", random_tensor<T>({batch, in}, seed));
  p.w1 = variable<T>("W1", random_tensor<T>({hidden, in}, seed + 1, -0.3, 0.3));
  p.b1 = variable<T>("b1", random_tensor<T>({hidden}, seed + 2));
  p.w2 = variable<T>("W2", random_tensor<T>({out, hidden}, seed + 3, -0.3, 0.3));
  p.unused = variable<T>("unused", random_tensor<T>({3}, seed + 4));
  Tensor<T> labels({batch, out}, HOST);
  math::fill(labels, T(0));
  for (std::int64_t i = 0; i < batch; ++i) labels.set({i, (i * 7) % out}, T(1));
  p.y = op::constant<T>("y", labels);
  auto h = op::make_expr<T>(std::make_shared<op::LinearNode<T>>(p.x.ptr(), p.w1.ptr(), p.b1.ptr(), UnaryOp::Sigmoid));
  op::Expr<T> logits = op::linear(h, p.w2);
  if (shared) logits = op::add(logits, op::matmul(h, p.w2, false, true));
  p.loss = op::softmax_crossentropy(logits, p.y);
  return p;
}

template <typename T>
std::vector<op::Expr<T>> params(const Problem<T>& p) {
  return {p.w1, p.b1, p.w2, p.unused};
}

// Worst |got - want| / (1 + max |want|) over every parameter.
template <typename T>
double worst_difference(const Problem<T>& got, const Problem<T>& want) {
  double worst = 0;
  const auto g = params(got), w = params(want);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Tensor<T>& a = g[i]->output();
    const Tensor<T>& b = w[i]->output();
    double scale = 1;
    for (std::int64_t j = 0; j < b.size(); ++j) scale = std::max(scale, std::abs(double(b.get(j))));
    for (std::int64_t j = 0; j < a.size(); ++j) {
      const double e = std::abs(double(a.get(j)) - double(b.get(j))) / scale;
      if (!(e <= worst)) worst = e;  // NaN counts as worst
    }
  }
  return worst;
}

// `steps` steps of each; returns the worst difference after the last.
template <typename T>
double run_both(std::int64_t batch, std::int64_t in, std::int64_t hidden, std::int64_t out, bool shared,
                int steps) {
  Problem<T> fused = make_problem<T>(batch, in, hidden, out, shared, 11);
  Problem<T> ref = make_problem<T>(batch, in, hidden, out, shared, 11);
  const op::InPlaceUpdate<T> u{T(-0.5), T(0.99)};
  for (int s = 0; s < steps; ++s) {
    op::backward_update<T>(fused.loss, params(fused), u);
    op::GradTable<T> g = op::compute_gradients<T>(ref.loss, params(ref));
    for (const auto& v : params(ref)) {
      Tensor<T>& value = dynamic_cast<op::Variable<T>&>(*v.get()).value();
      math::axpby(u.alpha, *g.get(v), u.beta, value);
    }
  }
  return worst_difference(fused, ref);
}

}  // namespace

TEST(BackwardUpdate, MatchesGradientsThenUpdateInDouble) {
  EXPECT_LE(run_both<double>(6, 5, 4, 3, false, 3), 1e-13);
}

TEST(BackwardUpdate, SharedWeightIsUpdatedAfterThePass) {
  // W2 has two readers: an early update would feed the second reader's
  // backward the new W2, which the reference never sees.
  EXPECT_LE(run_both<double>(6, 5, 4, 3, true, 3), 1e-13);
}

TEST(BackwardUpdate, FloatThroughOnednnWithASteadyBeta) {
  // 64 x 96 x 80 products go to oneDNN; three steps use the scaling pass,
  // then the primitive with the update's beta.
  EXPECT_LE(run_both<float>(64, 96, 80, 10, false, 3), 2e-5);
}

TEST(BackwardUpdate, UnreachedVariableDecaysAndEveryVariableIsMarkedChanged) {
  Problem<double> p = make_problem<double>(4, 3, 2, 2, false, 5);
  const double before = p.unused->output().get(std::int64_t{0});
  const auto versions = [&] {
    std::vector<std::uint64_t> v;
    for (const auto& e : params(p)) v.push_back(e->version());
    return v;
  };
  const auto v0 = versions();
  op::backward_update<double>(p.loss, params(p), {-0.1, 0.5});
  EXPECT_DOUBLE_EQ(p.unused->output().get(std::int64_t{0}), 0.5 * before);
  const auto v1 = versions();
  for (std::size_t i = 0; i < v0.size(); ++i) EXPECT_NE(v0[i], v1[i]) << params(p)[i]->get_name();
}

TEST(BackwardUpdate, RefusesWhatIsNotAVariable) {
  Problem<double> p = make_problem<double>(4, 3, 2, 2, false, 5);
  const op::Expr<double> h = op::sigmoid(p.x);
  EXPECT_THROW(op::backward_update<double>(p.loss, {p.w1, h}, {-0.1, 1.0}), ValueError);
}

TEST(BackwardUpdate, PlainSgdMinimizeMatchesMomentumZeroStep) {
  // minimize() takes the fused path for plain SGD (with weight decay);
  // step() on gradients is the reference.
  Problem<double> fused = make_problem<double>(6, 5, 4, 3, false, 21);
  Problem<double> ref = make_problem<double>(6, 5, 4, 3, false, 21);
  optimizer::GradientDescent<double> a(0.2), b(0.2);
  a.set_weight_decay(0.01);
  b.set_weight_decay(0.01);
  ASSERT_TRUE(a.in_place_update().has_value());
  for (int s = 0; s < 3; ++s) {
    a.minimize(fused.loss, params(fused));
    op::GradTable<double> g = op::compute_gradients<double>(ref.loss, params(ref));
    b.step(params(ref), g);
  }
  EXPECT_EQ(a.step_count(), 3);
  EXPECT_LE(worst_difference(fused, ref), 1e-13);
  EXPECT_FALSE(optimizer::GradientDescent<double>(0.1, 0.9).in_place_update().has_value());
}

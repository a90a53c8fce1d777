// The compute graph: the slides' and v1's code as written, caching and
// versions, ownership (pin arena, delete), placeholders, fan-out, errors.
#include <gtest/gtest.h>

#include <cmath>

#include "magmadnn/compute/compute.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/optimizer/optimizer.h"

using namespace magmadnn;

// -- the slides, verbatim ----------------------------------------------------------------
TEST(Slides, OperationAndGraph) {
  auto X = op::var<float>("X", {5, 3}, {UNIFORM});
  auto W = op::var<float>("W", {6, 5}, {UNIFORM});
  auto b = op::var<float>("b", {6, 3}, {UNIFORM});
  auto transform = op::add(op::matmul(W, X), b);
  Tensor<float> *output = transform->eval();

  ASSERT_EQ(output->shape(), Shape({6, 3}));
  const Tensor<float>& x = X->value();
  const Tensor<float>& w = W->value();
  const Tensor<float>& bb = b->value();
  for (std::int64_t i = 0; i < 6; ++i) {
    for (std::int64_t j = 0; j < 3; ++j) {
      double ref = bb.get({i, j});
      for (std::int64_t k = 0; k < 5; ++k) ref += double(w.get({i, k})) * x.get({k, j});
      EXPECT_NEAR(output->get({i, j}), ref, 1e-5);
    }
  }
}

TEST(Slides, OptimizerMinimizesXSquaredPlusC) {
  auto x = op::var<float>("x", NONE);
  auto c = op::var<float>("c", {CONSTANT, -2.0f});

  optimizer::GradientDescent opt(0.05);

  opt.minimize(op::add(op::pow(x, 2), c), {x});

  static_assert(std::is_same_v<decltype(opt), optimizer::GradientDescent<float>>);
}

TEST(Slides, RepeatedMinimizeDrivesXToZero) {
  auto x = op::var<float>("x", {CONSTANT, 3.0f});
  auto c = op::var<float>("c", {CONSTANT, -2.0f});
  optimizer::GradientDescent opt(0.05);
  auto f = op::add(op::pow(x, 2), c);
  // One step: x <- x - 0.05 * 2x = 0.9 x.
  opt.minimize(f, {x});
  EXPECT_NEAR(x->value().get(std::int64_t{0}), 2.7f, 1e-6);
  for (int i = 0; i < 200; ++i) opt.minimize(f, {x});
  EXPECT_LT(std::abs(x->value().get(std::int64_t{0})), 1e-3f);
  EXPECT_NEAR(f->eval()->get(std::int64_t{0}), -2.0f, 1e-5);
}

// -- MagmaDNN v1 code ------------------------------------------------------------------------
TEST(V1, TensorMathAffineWithDelete) {
  const unsigned int M = 5;
  const unsigned int N = 4;
  auto A = op::var<float>("A", {M, N}, {CONSTANT, {3}}, HOST);
  auto x = op::var<float>("x", {N, 1}, {CONSTANT, {2}}, HOST);
  auto b = op::var<float>("b", {M, 1}, {ONE, {}}, HOST);
  auto aff = op::add(op::matmul(A, x), b);
  Tensor<float>* final_val = aff->eval();
  for (int i = 0; i < int(M); ++i) EXPECT_FLOAT_EQ(final_val->get({i, 0}), 25.0f);
  delete aff;  // harmless on a handle
  EXPECT_FLOAT_EQ(aff->eval()->get({0, 0}), 25.0f);
}

TEST(V1, RawPointersPinAndDeleteUnpins) {
  const std::size_t before = op::pinned_node_count();
  std::weak_ptr<op::Operation<float>> watch;
  {
    Tensor<float>* t = new Tensor<float>({3, 3}, {CONSTANT, {2.0f}}, HOST);
    auto v = op::var("t", t);  // v1: wraps the tensor, sharing its storage
    t->set({0, 0}, 5.0f);
    delete t;  // the storage lives on in the variable
    op::Variable<float>* x = op::var<float>("X", {3, 3}, {IDENTITY, {}}, HOST);
    op::Operation<float>* sum = op::add(v, x);
    EXPECT_EQ(op::pinned_node_count(), before + 2);
    watch = sum->shared_from_this();
    EXPECT_FLOAT_EQ(sum->eval()->get({0, 0}), 6.0f);
    EXPECT_FLOAT_EQ(sum->eval()->get({0, 1}), 2.0f);

    op::GradTable<float> table;
    magmadnn_error_t err = op::get_grad_table({x}, sum, table);
    EXPECT_EQ(err, 0);
    ASSERT_NE(table.get(x), nullptr);
    EXPECT_FLOAT_EQ(table.get(x)->get({1, 2}), 1.0f);
    table.clear();

    delete sum;  // unpins: the last owner goes, so the node is destroyed
    EXPECT_TRUE(watch.expired());
    delete x;
  }
  EXPECT_EQ(op::pinned_node_count(), before);
}

TEST(V1, ReleasePinnedNodes) {
  std::weak_ptr<op::Operation<double>> watch;
  {
    op::Operation<double>* p = op::var<double>("x", {2}, {ONE, {}}, HOST);
    watch = p->shared_from_this();
  }
  EXPECT_FALSE(watch.expired());
  op::release_pinned_nodes();
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(op::pinned_node_count(), 0u);
}

TEST(V1, OptimizeWithRawPointers) {
  op::Operation<double>* x = op::var<double>("x", {4}, {CONSTANT, {9.0}}, HOST);
  op::Operation<double>* c = op::var<double>("c", {4}, {CONSTANT, {-5.0}}, HOST);
  op::Operation<double>* expr = op::add(op::pow(x, 2), c);
  optimizer::GradientDescent<double> optim(0.2f);
  for (int i = 0; i < 50; ++i) {
    expr->eval(true);
    optim.minimize(expr, {x});
  }
  Tensor<double>* xt = x->get_output_tensor();
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(xt->get(std::int64_t{i}), 0.0, 1e-6);
  delete expr;
  delete x;
  delete c;
}

// -- caching and versions ------------------------------------------------------------------------
TEST(Graph, RecomputesOnlyWhatDependsOnAChange) {
  auto x = op::var<double>("x", {2, 2}, {CONSTANT, {1.0}}, HOST);
  auto y = op::var<double>("y", {2, 2}, {CONSTANT, {2.0}}, HOST);
  auto gx = op::exp(x);
  auto hy = op::log(y);
  auto f = op::add(gx, hy);
  f->eval();
  EXPECT_EQ(gx->eval_count(), 1u);
  EXPECT_EQ(hy->eval_count(), 1u);
  EXPECT_EQ(f->eval_count(), 1u);

  f->eval();  // nothing changed: nothing recomputes
  EXPECT_EQ(f->eval_count(), 1u);

  x->set_value(Tensor<double>({2, 2}, {CONSTANT, {0.0}}, HOST));
  Tensor<double>* out = f->eval();
  EXPECT_EQ(gx->eval_count(), 2u);
  EXPECT_EQ(hy->eval_count(), 1u);  // does not depend on x
  EXPECT_EQ(f->eval_count(), 2u);
  EXPECT_NEAR(out->get({0, 0}), 1.0 + std::log(2.0), 1e-12);

  // Writing through a variable's eval() pointer is seen too.
  x->eval()->set({1, 1}, 1.0);
  EXPECT_NEAR(f->eval()->get({1, 1}), std::exp(1.0) + std::log(2.0), 1e-12);
  EXPECT_EQ(hy->eval_count(), 1u);

  f->eval(true);  // forced
  EXPECT_EQ(hy->eval_count(), 2u);
}

TEST(Graph, PlaceholderTakesAnyBatchSize) {
  auto X = op::placeholder<double>("X", {-1, 3}, HOST);
  auto W = op::var<double>("W", {2, 3}, {CONSTANT, {1.0}}, HOST);
  auto b = op::var<double>("b", {2}, {CONSTANT, {0.5}}, HOST);
  auto y = op::linear(X, W, b);
  EXPECT_THROW(y->eval(), ValueError);  // no value yet
  for (std::int64_t batch : {4, 1, 7}) {
    X->set_value(Tensor<double>({batch, 3}, {CONSTANT, {2.0}}, HOST));
    Tensor<double>* out = y->eval();
    ASSERT_EQ(out->shape(), Shape({batch, 2}));
    EXPECT_DOUBLE_EQ(out->get({batch - 1, 1}), 6.5);
    auto g = op::gradients(op::reduce_sum(y), {W, b});
    EXPECT_DOUBLE_EQ(g.get(W)->get({0, 0}), 2.0 * batch);
    EXPECT_DOUBLE_EQ(g.get(b)->get(std::int64_t{1}), double(batch));
  }
  EXPECT_THROW(X->set_value(Tensor<double>({2, 4}, {ZERO, {}}, HOST)), ShapeError);
}

// -- autodiff semantics ------------------------------------------------------------------------------
TEST(Autodiff, FanOutOfFourAccumulates) {
  auto x = op::var<double>("x", {3}, {CONSTANT, {2.0}}, HOST);
  auto s = op::sigmoid(x);  // used by four consumers
  auto f = op::sum({op::Expr<double>(s), op::product(s, s), op::exp(s), op::scalarproduct(3, s)});
  auto g = op::gradients(f, {x});
  const double sv = 1.0 / (1.0 + std::exp(-2.0));
  const double ds = 1.0 + 2.0 * sv + std::exp(sv) + 3.0;
  EXPECT_NEAR(g.get(x)->get(std::int64_t{0}), ds * sv * (1.0 - sv), 1e-12);
}

TEST(Autodiff, NonScalarLossIsSummedAndBuffersAreFresh) {
  auto x = op::var<double>("x", {2, 3}, {CONSTANT, {1.5}}, HOST);
  auto y = op::add(x, x);
  auto g = op::gradients(y, {x, y});
  EXPECT_DOUBLE_EQ(g.get(x)->get({1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(g.get(y)->get({0, 0}), 1.0);
  EXPECT_FALSE(g.get(x)->shares_storage_with(x->value()));
  EXPECT_FALSE(g.get(y)->shares_storage_with(*y->get_output_tensor()));
}

// An add's gradient is handed to its inputs without a copy (the engine
// moves grad_out or adds it to a running sum, gradients.cpp): the values
// stay right where the same input is reached twice, through a residual
// join, a broadcast (not passed through), a subtraction (only its first
// input), an add_n, and when the add's own gradient is requested as well.
TEST(Autodiff, AddGradientsPassedThroughStayRight) {
  auto x = op::var<double>("x", {2, 3}, {CONSTANT, {0.5}}, HOST);
  auto b = op::var<double>("b", {3}, {CONSTANT, {0.25}}, HOST);
  auto h = op::exp(x);                        // dh/dx = exp(x)
  auto join = op::add(h, op::product(h, h));  // a residual join: h reaches it twice
  auto biased = op::add(join, b);             // b is broadcast: summed over rows, never passed through
  auto diff = op::sub(biased, x);             // d/dbiased = 1, d/dx = -1
  auto loss = op::add_n<double>({diff, op::Expr<double>(x), op::Expr<double>(join)});
  auto g = op::gradients(loss, {x, b, join});
  const double e = std::exp(0.5);
  // d loss / d join = 1 (through diff) + 1 (directly); d join / dh = 1 + 2h.
  const double djoin = 2.0, dx = djoin * (1 + 2 * e) * e - 1.0 + 1.0;
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      EXPECT_NEAR(g.get(x)->get({i, j}), dx, 1e-12);
      EXPECT_DOUBLE_EQ(g.get(join)->get({i, j}), djoin);
    }
  for (std::int64_t j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(g.get(b)->get(std::int64_t{j}), 2.0);
  // x + x: one input moved, the other a copy added to it.
  auto twice = op::add(x, x);
  auto g2 = op::gradients(op::add(twice, op::product(twice, twice)), {x});
  EXPECT_NEAR(g2.get(x)->get({1, 2}), 2.0 * (1 + 2 * 1.0), 1e-12);
  // Running the same gradients twice gives the same values (nothing was moved out of a cache).
  auto again = op::gradients(loss, {x, b, join});
  EXPECT_EQ(again.get(x)->to_vector(), g.get(x)->to_vector());
}

TEST(Autodiff, UnrelatedVariableGetsZeros) {
  auto x = op::var<double>("x", {2}, {ONE, {}}, HOST);
  auto z = op::var<double>("z", {3}, {ONE, {}}, HOST);
  auto g = op::gradients(op::exp(x), {x, z});
  EXPECT_DOUBLE_EQ(g.get(z)->get(std::int64_t{2}), 0.0);
  EXPECT_EQ(g.get(z)->shape(), Shape({3}));
}

TEST(Autodiff, InferenceKeepsNoGradientState) {
  auto x = op::var<double>("x", {2}, {ONE, {}}, HOST);
  auto f = op::exp(x);
  const std::uint64_t before = f->eval_count();
  f->eval();
  auto g = op::gradients(f, {x});  // reuses the cached forward value
  EXPECT_EQ(f->eval_count(), before + 1);
}

// -- errors name the op and the shapes -------------------------------------------------------------
TEST(Errors, BroadcastMismatchAtBuildTime) {
  auto a = op::var<float>("a", {2, 3}, {ZERO, {}}, HOST);
  auto b = op::var<float>("b", {4}, {ZERO, {}}, HOST);
  try {
    op::add(a, b);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("add: shapes {2, 3} and {4} cannot be broadcast"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(op::matmul(a, a), ShapeError);
}

TEST(Graph, ToStringAndNames) {
  auto W = op::var<float>("W", {2, 2}, {ZERO, {}}, HOST);
  auto X = op::var<float>("X", {2, 2}, {ZERO, {}}, HOST);
  auto b = op::var<float>("b", {2, 2}, {ZERO, {}}, HOST);
  auto e = op::sigmoid(op::add(op::matmul(W, X), b));
  EXPECT_EQ(e->to_string(), "sigmoid(add(matmul(W, X), b))");
  EXPECT_EQ(W->get_name(), "W");
  EXPECT_EQ(e->get_output_shape(), Shape({2, 2}));
  EXPECT_EQ(e->get_inputs().size(), 1u);
}

// -- shapes of a graph with fan-out ----------------------------------------------------------
namespace {
// Sums its inputs and counts how often its shape is inferred.
struct CountingNode : op::Operation<double> {
  inline static int inferred = 0;
  explicit CountingNode(std::vector<op::OpPtr<double>> xs) : op::Operation<double>("counting", std::move(xs)) {}
  std::string kind() const override { return "counting"; }
  void backward(const Tensor<double>&, const std::vector<bool>&, std::vector<Tensor<double>>&) override {}

 protected:
  Shape infer_shape(const std::vector<Shape>& in) const override {
    ++inferred;
    return in[0];
  }
  void forward() override {}
};
}  // namespace

// Every node's shape is inferred once per call, however many paths reach it:
// per path it was 2^k for k residual blocks, each reading its input twice
// (building GoogLeNet took a minute).
TEST(Graph, OutputShapeInfersEachNodeOnceUnderFanOut) {
  op::OpPtr<double> x = op::var<double>("x", {2, 3}, {ZERO}, HOST).ptr();
  const int levels = 20;  // 2^20 - 1 inferences when each path counted
  for (int k = 0; k < levels; ++k) x = std::make_shared<CountingNode>(std::vector<op::OpPtr<double>>{x, x});
  CountingNode::inferred = 0;
  EXPECT_EQ(x->get_output_shape(), Shape({2, 3}));
  EXPECT_EQ(CountingNode::inferred, levels);
}

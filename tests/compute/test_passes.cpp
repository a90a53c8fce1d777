// Graph passes (passes.h) and buffer reuse (inference_plan.h): fused graphs
// compute the same values and gradients as unfused ones, patterns with shared
// intermediates stay unfused, and recycled buffers cut allocations and peak
// bytes without changing any value. No timing here: that is bench/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "magmadnn/compute/compute.h"
#include "support/gradcheck.h"
#include "support/op_table.h"

using namespace magmadnn;
using magmadnn::testing::gradcheck;
using magmadnn::testing::random_tensor;

namespace {
using V = std::vector<op::Var<double>>;
using Builder = std::function<op::Expr<double>(const V&)>;

Tensor<double> rnd(const Shape& s, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random_tensor<double>(s, seed, lo, hi);
}

// The forward value and the gradients w.r.t. every input of
// L = sum(out * R), R fixed, for the graph `build` makes (optimized or not).
struct Outcome {
  std::vector<double> value;
  std::vector<std::vector<double>> grads;
  std::string graph;
};

Outcome evaluate(const Builder& build, const std::vector<Tensor<double>>& inputs, bool optimized) {
  V vars;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto v = op::var<double>("x" + std::to_string(i), inputs[i].shape(), {NONE}, HOST);
    v->set_value(inputs[i]);
    vars.push_back(v);
  }
  op::Expr<double> out = build(vars);
  if (optimized) out = op::optimize(out);
  Outcome r;
  r.value = out->eval()->to_vector();
  r.graph = out->to_string();
  auto weights = op::constant<double>("R", rnd(out->output().shape(), 99));
  auto loss = op::reduce_sum(op::product(out, weights));
  std::vector<op::Expr<double>> wrt(vars.begin(), vars.end());
  auto table = op::gradients(loss, wrt);
  for (const auto& v : vars) r.grads.push_back(table.get(v)->to_vector());
  return r;
}

::testing::AssertionResult close(const std::vector<double>& a, const std::vector<double>& b, double rtol = 1e-12) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " vs " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(std::abs(a[i] - b[i]) <= 1e-14 + rtol * std::max(std::abs(a[i]), std::abs(b[i])))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << b[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// Same values and gradients fused and unfused, the fused graph passes the
// shared gradcheck, and the fused graph prints as `expect`.
void expect_equivalent(const Builder& build, const std::vector<Tensor<double>>& inputs, const std::string& expect) {
  const Outcome plain = evaluate(build, inputs, false);
  const Outcome fused = evaluate(build, inputs, true);
  EXPECT_EQ(fused.graph, expect) << "unfused: " << plain.graph;
  EXPECT_TRUE(close(plain.value, fused.value)) << fused.graph;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_TRUE(close(plain.grads[i], fused.grads[i])) << "gradient of input " << i << " in " << fused.graph;
  }
  EXPECT_TRUE(gradcheck<double>([&](const V& x) { return op::optimize(build(x)); }, inputs));
}

// X {5, 4}, W {3, 4}, b {3}: the paper's fully connected layer, small.
std::vector<Tensor<double>> layer_inputs(const Shape& bias = {3}) {
  return {rnd({5, 4}, 1), rnd({3, 4}, 2), rnd(bias, 3)};
}
}  // namespace

// -- linear + activation fusion ---------------------------------------------------------------
TEST(FuseLinear, MatmulTransFlagAddActivation) {
  const auto in = layer_inputs();
  expect_equivalent([](const V& x) { return op::sigmoid(op::add(op::matmul(x[0], x[1], false, true), x[2])); },
                    in, "linear_sigmoid(x0, x1, x2)");
  expect_equivalent([](const V& x) { return op::relu(op::add(op::matmul(x[0], x[1], false, true), x[2])); }, in,
                    "linear_relu(x0, x1, x2)");
  expect_equivalent([](const V& x) { return op::tanh(op::add(op::matmul(x[0], x[1], false, true), x[2])); }, in,
                    "linear_tanh(x0, x1, x2)");
}

// Every activation of the op table: it fuses into the linear node exactly
// when LinearNode::supports() it (the table decides), else the matmul and
// bias still become one linear node under the separate activation; values
// and gradients are those of the unfused graph either way.
class FuseLinearActivation : public ::testing::TestWithParam<UnaryOp> {};

TEST_P(FuseLinearActivation, FusesExactlyWhenTheTableAllows) {
  const UnaryOpInfo& r = unary_op_info(GetParam());
  const double p = magmadnn::testing::op_param(r);
  const std::string name = r.name;
  const std::string expect =
      op::LinearNode<double>::supports(r.op) ? "linear_" + name + "(x0, x1, x2)" : name + "(linear(x0, x1, x2))";
  const Builder build = [&](const V& x) {
    return op::unary(r.op, op::add(op::matmul(x[0], x[1], false, true), x[2]), p);
  };
  expect_equivalent(build, layer_inputs(), expect);
}

INSTANTIATE_TEST_SUITE_P(OpTable, FuseLinearActivation,
                         ::testing::ValuesIn(magmadnn::testing::table_ops([](const UnaryOpInfo& r) {
                           return r.activation;
                         })),
                         [](const auto& info) { return std::string(op_name(info.param)); });

TEST(FuseLinear, TransposeNodeAndBiasFirst) {
  expect_equivalent([](const V& x) { return op::tanh(op::add(x[2], op::matmul(x[0], op::transpose(x[1])))); },
                    layer_inputs(), "linear_tanh(x0, x1, x2)");
  // A {1, out} bias is the same bias.
  expect_equivalent([](const V& x) { return op::sigmoid(op::add(op::matmul(x[0], op::transpose(x[1])), x[2])); },
                    layer_inputs({1, 3}), "linear_sigmoid(x0, x1, x2)");
}

TEST(FuseLinear, IdentityWithoutActivation) {
  expect_equivalent([](const V& x) { return op::add(op::matmul(x[0], x[1], false, true), x[2]); }, layer_inputs(),
                    "linear(x0, x1, x2)");
}

TEST(FuseLinear, ActivationOfLinearAndOfBiaslessMatmul) {
  expect_equivalent([](const V& x) { return op::relu(op::linear(x[0], x[1], x[2])); }, layer_inputs(),
                    "linear_relu(x0, x1, x2)");
  expect_equivalent([](const V& x) { return op::sigmoid(op::matmul(x[0], x[1], false, true)); },
                    {rnd({5, 4}, 1), rnd({3, 4}, 2)}, "linear_sigmoid(x0, x1)");
}

TEST(FuseLinear, StackedLayersAndConsumersAreRewired) {
  // Two layers and a loss on top: the consumers of each fused node (the next
  // layer, the product, the reduction) must read the fused node.
  const std::vector<Tensor<double>> in = {rnd({5, 4}, 1), rnd({6, 4}, 2), rnd({6}, 3), rnd({2, 6}, 4), rnd({2}, 5)};
  expect_equivalent(
      [](const V& x) {
        auto h = op::sigmoid(op::add(op::matmul(x[0], x[1], false, true), x[2]));
        auto o = op::tanh(op::add(op::matmul(h, op::transpose(x[3])), x[4]));
        return op::reduce_sum(op::product(o, o));
      },
      in, "reduce_sum(product(linear_tanh(linear_sigmoid(x0, x1, x2), x3, x4), linear_tanh(linear_sigmoid(x0, x1, x2), x3, x4)))");
}

TEST(FuseLinear, SharedIntermediatesStayUnfused) {
  const auto in = layer_inputs();
  // The pre-activation is also read by the add: the matmul + bias may become
  // one linear node, but the sigmoid must stay a separate node.
  expect_equivalent(
      [](const V& x) {
        auto z = op::add(op::matmul(x[0], x[1], false, true), x[2]);
        return op::add(op::sigmoid(z), z);
      },
      in, "add(sigmoid(linear(x0, x1, x2)), linear(x0, x1, x2))");
  // The product itself has a second consumer: nothing fuses.
  expect_equivalent(
      [](const V& x) {
        auto p = op::matmul(x[0], x[1], false, true);
        return op::add(op::sigmoid(op::add(p, x[2])), p);
      },
      in, "add(sigmoid(add(matmul(x0, x1), x2)), matmul(x0, x1))");
  // The transpose is shared with another consumer: nothing fuses.
  expect_equivalent(
      [](const V& x) {
        auto wt = op::transpose(x[1]);
        return op::add(op::relu(op::add(op::matmul(x[0], wt), x[2])), op::reduce_sum(wt));
      },
      in, "add(relu(add(matmul(x0, transpose(x1)), x2)), reduce_sum(transpose(x1)))");
}

TEST(FuseLinear, NonBiasAddAndTransposedInputStayUnfused) {
  // A full {batch, out} addend is not a per-unit bias.
  expect_equivalent([](const V& x) { return op::sigmoid(op::add(op::matmul(x[0], x[1], false, true), x[2])); },
                    layer_inputs({5, 3}), "sigmoid(add(matmul(x0, x1), x2))");
  // X^T W^T is not X W^T.
  expect_equivalent([](const V& x) { return op::relu(op::matmul(x[0], x[1], true, true)); },
                    {rnd({4, 5}, 1), rnd({3, 4}, 2)}, "relu(matmul(x0, x1))");
}

TEST(FuseLinear, OtherHandlesToRemovedNodesKeepWorking) {
  auto X = op::var<double>("X", {5, 4}, {NONE}, HOST);
  auto W = op::var<double>("W", {3, 4}, {NONE}, HOST);
  auto b = op::var<double>("b", {3}, {NONE}, HOST);
  X->set_value(rnd({5, 4}, 1));
  W->set_value(rnd({3, 4}, 2));
  b->set_value(rnd({3}, 3));
  auto z = op::add(op::matmul(X, W, false, true), b);
  auto y = op::sigmoid(z);
  const std::vector<double> z_before = z->eval()->to_vector();
  auto fused = op::optimize(y);
  EXPECT_EQ(fused->kind(), "linear_sigmoid");
  EXPECT_EQ(y->kind(), "sigmoid");  // the old root still exists and computes the same
  EXPECT_TRUE(close(z->eval()->to_vector(), z_before));
  EXPECT_TRUE(close(y->eval()->to_vector(), fused->eval()->to_vector()));
}

// -- elementwise chains ---------------------------------------------------------------------------
TEST(FuseElementwise, ChainBecomesOneNode) {
  const Builder chain = [](const V& x) { return op::exp(op::scalarproduct(0.5, op::tanh(op::sigmoid(x[0])))); };
  expect_equivalent(chain, {rnd({3, 4}, 7)}, "fused_elementwise(x0)");
  V vars{op::var<double>("x", {3, 4}, {NONE}, HOST)};
  vars[0]->set_value(rnd({3, 4}, 7));
  auto fused = op::optimize(chain(vars));
  auto* node = dynamic_cast<op::UnaryChainNode<double>*>(fused.get());
  ASSERT_NE(node, nullptr);
  ASSERT_EQ(node->steps().size(), 4u);
  EXPECT_EQ(node->steps()[0].op, UnaryOp::Sigmoid);
  EXPECT_EQ(node->steps()[2].op, UnaryOp::Scale);
  EXPECT_EQ(node->steps()[2].p, 0.5);
  EXPECT_EQ(node->steps()[3].op, UnaryOp::Exp);
}

TEST(FuseElementwise, LargeTensorSpansSeveralBlocks) {
  // More elements than one host block (16K) and not a multiple of it, so the
  // blocked pass and its ragged last block are both exercised, in values and
  // in gradients (the backward pass recomputes each block's stages).
  const Builder chain = [](const V& x) { return op::relu(op::add_scalar(op::tanh(op::scalarproduct(2.0, x[0])), 0.1)); };
  const std::vector<Tensor<double>> in = {rnd({201, 173}, 8)};
  const Outcome plain = evaluate(chain, in, false);
  const Outcome fused = evaluate(chain, in, true);
  EXPECT_EQ(fused.graph, "fused_elementwise(x0)");
  EXPECT_TRUE(close(plain.value, fused.value, 0.0));
  EXPECT_TRUE(close(plain.grads[0], fused.grads[0], 0.0));
  EXPECT_TRUE(gradcheck<double>([&](const V& x) { return op::optimize(chain(x)); }, in));
}

TEST(FuseElementwise, SharedIntermediateSplitsTheChain) {
  // y feeds two consumers, so exp and tanh cannot absorb it; log(exp(...))
  // above y's consumers is still a chain.
  expect_equivalent(
      [](const V& x) {
        auto y = op::sigmoid(op::negative(x[0]));
        return op::add(op::log(op::exp(y)), op::tanh(y));
      },
      {rnd({3, 4}, 9)}, "add(fused_elementwise(fused_elementwise(x0)), tanh(fused_elementwise(x0)))");
}

// -- ReLU after max pooling -----------------------------------------------------------------------
namespace {
conv::PoolParams pool2x2(conv::PoolMode mode, std::int64_t pad = 0) {
  conv::PoolParams p;
  p.mode = mode;
  p.pad_h = p.pad_w = pad;
  return p;
}
conv::ConvParams same3x3() {
  conv::ConvParams c;
  c.pad_h = c.pad_w = 1;
  return c;
}
// A convolution whose bias pushes most outputs below zero, so that many
// pooling windows hold no positive value at all.
std::vector<Tensor<double>> conv_inputs() {
  return {rnd({2, 3, 8, 8}, 11), rnd({4, 3, 3, 3}, 12, -0.4, 0.4), rnd({4}, 13, -0.9, -0.1)};
}
}  // namespace

TEST(ReluAfterMaxPool, MovesTheReluAndKeepsValuesAndGradients) {
  expect_equivalent(
      [](const V& x) { return op::pooling(op::relu(op::conv2d(x[0], x[1], x[2], same3x3())), pool2x2(MAX_POOL)); },
      conv_inputs(), "relu(max_pool(conv2d(x0, x1, x2)))");
  // With padding (and 3x3 windows of stride 2, so windows overlap).
  expect_equivalent(
      [](const V& x) {
        conv::PoolParams p = pool2x2(MAX_POOL, 1);
        p.kernel_h = p.kernel_w = 3;
        return op::pooling(op::relu(x[0]), p);
      },
      {rnd({2, 3, 7, 7}, 14)}, "relu(max_pool(x0))");
}

TEST(ReluAfterMaxPool, AveragePoolingAndSharedRelusStay) {
  // Average pooling does not commute with a ReLU: the ReLU fuses into the
  // convolution instead.
  expect_equivalent(
      [](const V& x) {
        return op::pooling(op::relu(op::conv2d(x[0], x[1], x[2], same3x3())), pool2x2(conv::PoolMode::Average));
      },
      conv_inputs(), "average_pool(conv2d_relu(x0, x1, x2))");
  // A ReLU read by something besides the pooling stays where it is.
  expect_equivalent(
      [](const V& x) {
        auto r = op::relu(x[0]);
        return op::add(op::pooling(r, pool2x2(MAX_POOL)), op::pooling(op::negative(r), pool2x2(MAX_POOL)));
      },
      {rnd({2, 3, 8, 8}, 15)}, "add(max_pool(relu(x0)), max_pool(negative(relu(x0))))");
  // The pass alone, outside optimize().
  auto x = op::var<double>("x", {2, 3, 8, 8}, {NONE}, HOST);
  auto moved = op::relu_after_max_pool(op::pooling(op::relu(x), pool2x2(MAX_POOL)));
  ASSERT_EQ(moved->kind(), "relu");
  EXPECT_EQ(moved->get_inputs()[0]->kind(), "max_pool");
}

// -- batch normalisation + residual add + ReLU ------------------------------------------------------
namespace {
// x {3, 4, 2, 3}, gamma, beta {4}, a residual input of x's shape, a second x.
std::vector<Tensor<double>> bn_inputs() {
  return {rnd({3, 4, 2, 3}, 21, -2, 2), rnd({4}, 22, 0.5, 1.5), rnd({4}, 23), rnd({3, 4, 2, 3}, 24),
          rnd({3, 4, 2, 3}, 25, -1, 3)};
}
op::Expr<double> bn(const op::Expr<double>& x, const V& v) { return op::batchnorm(x, v[1], v[2]); }
}  // namespace

TEST(FuseBatchNorm, ReluResidualAddAndBothInTrainingAndInference) {
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "inference");
    auto mode = [training](op::Expr<double> out) {
      op::set_training(out, training);
      return out;
    };
    expect_equivalent([&](const V& x) { return mode(op::relu(bn(x[0], x))); }, bn_inputs(),
                      "batchnorm_relu(x0, x1, x2)");
    expect_equivalent([&](const V& x) { return mode(op::add(bn(x[0], x), x[3])); }, bn_inputs(),
                      "batchnorm_add(x0, x1, x2, x3)");
    expect_equivalent([&](const V& x) { return mode(op::relu(op::add(x[3], bn(x[0], x)))); }, bn_inputs(),
                      "batchnorm_add_relu(x0, x1, x2, x3)");
    // A projection block's join: the first normalisation takes the add, the
    // shortcut's stays a plain node feeding it.
    expect_equivalent([&](const V& x) { return mode(op::relu(op::add(bn(x[0], x), bn(x[4], x)))); }, bn_inputs(),
                      "batchnorm_add_relu(x0, x1, x2, batchnorm(x4, x1, x2))");
  }
}

TEST(FuseBatchNorm, SharedAndBroadcastPartsStay) {
  // The normalisation is read twice: nothing fuses into it.
  expect_equivalent(
      [](const V& x) {
        auto b = bn(x[0], x);
        return op::add(op::relu(b), b);
      },
      bn_inputs(), "add(relu(batchnorm(x0, x1, x2)), batchnorm(x0, x1, x2))");
  // A broadcast residual ({1, 4, 1, 1}) is not the kernel's elementwise add.
  expect_equivalent([](const V& x) { return op::relu(op::add(bn(x[0], x), x[3])); },
                    {rnd({3, 4, 2, 3}, 21), rnd({4}, 22, 0.5, 1.5), rnd({4}, 23), rnd({1, 4, 1, 1}, 24)},
                    "relu(add(batchnorm(x0, x1, x2), x3))");
  // The sum is read twice: the add fuses, the ReLU stays a node of its own.
  expect_equivalent(
      [](const V& x) {
        auto a = op::add(bn(x[0], x), x[3]);
        return op::add(op::relu(a), a);
      },
      bn_inputs(), "add(relu(batchnorm_add(x0, x1, x2, x3)), batchnorm_add(x0, x1, x2, x3))");
}

// The fused node updates the running statistics the original node (and so
// a BatchNormLayer's checkpointed state) holds, and inference reads them.
TEST(FuseBatchNorm, TheFusedNodeSharesTheRunningStatistics) {
  const auto in = bn_inputs();
  auto x = op::var<double>("x", in[0].shape(), {NONE}, HOST);
  x->set_value(in[0]);
  auto gamma = op::var<double>("g", {4}, {ONE, {}}, HOST);
  auto beta = op::var<double>("b", {4}, {ZERO, {}}, HOST);
  auto plain = op::batchnorm(x, gamma, beta, 0.1, 1e-5);
  auto* node = dynamic_cast<op::BatchNormNode<double>*>(plain.get());
  ASSERT_NE(node, nullptr);
  auto fused = op::fuse_batchnorm_activation(op::relu(plain));
  ASSERT_EQ(fused->kind(), "batchnorm_relu");
  fused->eval();
  const auto xv = in[0].to_vector();
  for (std::int64_t c = 0; c < 4; ++c) {
    double s = 0;
    for (std::int64_t n = 0; n < 3; ++n)
      for (std::int64_t i = 0; i < 6; ++i) s += xv[static_cast<std::size_t>((n * 4 + c) * 6 + i)];
    EXPECT_NEAR(node->running_mean().get(c), 0.1 * s / 18, 1e-12) << "channel " << c;
  }
  // Inference through the fused node: relu((x - running_mean) / sqrt(running_var + eps)).
  op::set_training(fused, false);
  const auto y = fused->eval()->to_vector();
  for (std::size_t i = 0; i < y.size(); i += 5) {
    const std::int64_t c = static_cast<std::int64_t>(i / 6) % 4;
    const double v = (xv[i] - node->running_mean().get(c)) / std::sqrt(node->running_var().get(c) + 1e-5);
    EXPECT_NEAR(y[i], std::max(0.0, v), 1e-12) << "element " << i;
  }
}

// -- buffer reuse ----------------------------------------------------------------------------------
namespace {
// Six same-sized relu layers and a softmax: every intermediate is {32, 64}.
struct Mlp {
  op::Var<double> X = op::placeholder<double>("X", {-1, 64}, HOST);
  std::vector<op::Var<double>> params;
  op::Expr<double> out;
  Mlp() {
    op::Expr<double> h = X;
    for (int i = 0; i < 6; ++i) {
      auto W = op::var<double>("W" + std::to_string(i), {64, 64}, {NONE}, HOST);
      auto b = op::var<double>("b" + std::to_string(i), {64}, {NONE}, HOST);
      W->set_value(rnd({64, 64}, 20 + i, -0.3, 0.3));
      b->set_value(rnd({64}, 40 + i));
      params.push_back(W);
      params.push_back(b);
      h = op::relu(op::add(op::matmul(h, W, false, true), b));
    }
    out = op::softmax(h);
  }
};
}  // namespace

TEST(BufferReuse, SecondRunAllocatesNothingAndPeakIsLower) {
  Mlp reused, kept;
  reused.X->set_value(rnd({32, 64}, 1));
  kept.X->set_value(rnd({32, 64}, 1));
  op::InferencePlan<double> plan(reused.out, true);
  op::InferencePlan<double> plain(kept.out, false);

  const std::vector<double> first = plan.run().to_vector();
  EXPECT_TRUE(close(first, plain.run().to_vector(), 0.0));
  EXPECT_GT(plan.stats().allocations, 0u);
  EXPECT_GT(plan.stats().reuses, 0u);  // reuse already within the first run

  plan.pool().reset_counters();
  reused.X->set_value(rnd({32, 64}, 2));  // a new batch: everything recomputes
  kept.X->set_value(rnd({32, 64}, 2));
  const std::vector<double> second = plan.run().to_vector();
  EXPECT_EQ(plan.stats().allocations, 0u);
  EXPECT_GT(plan.stats().reuses, 0u);
  EXPECT_TRUE(close(second, plain.run().to_vector(), 0.0));
  EXPECT_FALSE(close(first, second));  // the new batch really was used

  // 19 interior {32, 64} values (3 per layer and the softmax) without reuse;
  // with it, a layer's input and output are all that is ever alive.
  const std::size_t one = 32 * 64 * sizeof(double);
  EXPECT_EQ(plain.stats().peak_in_use_bytes, 19 * one);
  EXPECT_EQ(plan.stats().peak_in_use_bytes, 2 * one);
  EXPECT_LT(plan.stats().peak_in_use_bytes, plain.stats().peak_in_use_bytes);
}

TEST(BufferReuse, WorksOnFusedGraphsAndKeepsGradientsRight) {
  Mlp reused, ref;
  reused.X->set_value(rnd({8, 64}, 3));
  ref.X->set_value(rnd({8, 64}, 3));
  op::Expr<double> fused = op::optimize(reused.out);
  op::InferencePlan<double> plan(fused);
  plan.run();
  plan.pool().reset_counters();
  EXPECT_TRUE(close(plan.run().to_vector(), ref.out->eval()->to_vector()));
  EXPECT_EQ(plan.stats().allocations, 0u);
  // Gradients after recycling: the recycled values are recomputed first.
  std::vector<op::Expr<double>> wr(reused.params.begin(), reused.params.end());
  std::vector<op::Expr<double>> wf(ref.params.begin(), ref.params.end());
  auto gr = op::gradients(op::reduce_sum(op::log(fused)), wr);
  auto gf = op::gradients(op::reduce_sum(op::log(ref.out)), wf);
  for (std::size_t i = 0; i < wr.size(); ++i) {
    EXPECT_TRUE(close(gr.get(wr[i])->to_vector(), gf.get(wf[i])->to_vector())) << "parameter " << i;
  }
}

TEST(BufferReuse, ViewsAreNeverRecycledUnderTheirAliases) {
  // reshape returns a view of exp's buffer, and the product reads it only
  // after the sigmoid branch ran. Were exp's buffer recycled once reshape had
  // read it, the scalarproduct (same size) would take it and overwrite the
  // values the view still shows.
  auto build = [](const op::Var<double>& x) {
    return op::product(op::reshape(op::exp(x), {3, 4}), op::sigmoid(op::scalarproduct(2.0, x)));
  };
  auto x1 = op::var<double>("x", {3, 4}, {NONE}, HOST);
  auto x2 = op::var<double>("x", {3, 4}, {NONE}, HOST);
  x1->set_value(rnd({3, 4}, 5));
  x2->set_value(rnd({3, 4}, 5));
  op::InferencePlan<double> plan(build(x1));
  const std::vector<double> expect = build(x2)->eval()->to_vector();
  EXPECT_TRUE(close(plan.run().to_vector(), expect, 0.0));
  EXPECT_TRUE(close(plan.run().to_vector(), expect, 0.0));
}

TEST(BufferReuse, PlanDetachesItsPoolWhenDestroyed) {
  Mlp m;
  m.X->set_value(rnd({4, 64}, 6));
  std::vector<double> planned;
  {
    op::InferencePlan<double> plan(m.out);
    planned = plan.run().to_vector();
    EXPECT_NE(m.out->buffer_pool(), nullptr);
  }
  EXPECT_EQ(m.out->buffer_pool(), nullptr);
  for (const auto* n : op::topological_order(m.out.get())) EXPECT_EQ(n->buffer_pool(), nullptr) << n->kind();
  // The graph still evaluates normally, recomputing what the plan recycled.
  EXPECT_TRUE(close(m.out->eval()->to_vector(), planned, 0.0));
}

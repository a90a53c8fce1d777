// The wide MLP of issue 17 (784 -> 4096 -> 4096 -> 10) trained with its two
// hidden layers model-parallel (column-parallel, then row-parallel: the
// Megatron pairing) against the same network on one process: the same
// initial weights, then the same loss and weights after every SGD step.
// Also the weight memory each rank keeps for a split layer: 1/P of the
// whole, within one row or column.
#include <cstdio>

#include "../../support/gradcheck.h"
#include "mp_test_util.h"

namespace {
using namespace mptest;
using LayerPtr = std::shared_ptr<layer::Layer<float>>;

constexpr std::int64_t kIn = 784, kHidden = 4096, kClasses = 10, kBatch = 8;
constexpr int kSteps = 3;

struct Mlp {
  std::vector<LayerPtr> layers;
  LayerPtr fc1, fc2, fc3;  // the three weight layers
};

// in -> fc1 -> relu -> fc2 -> relu -> fc3 -> softmax, with fc1 / fc2
// column- / row-parallel when `parallel`. Both forms draw their weights in
// the same order from the same seed.
Mlp wide_mlp(bool parallel) {
  set_seed(2026);
  layer::reset_layer_names();
  Mlp m;
  auto x = op::placeholder<float>("x", {-1, kIn});
  x->set_value(Tensor<float>({1, kIn}, {ZERO}));
  auto push = [&](auto ref) {
    m.layers.push_back(ref.ptr());
    return ref->out();
  };
  op::Expr<float> h = push(layer::input<float>(x));
  const tensor_filler_t<float> init{GLOROT};
  if (parallel) {
    h = push(layer::column_parallel_fc<float>(h, kHidden, group(), false, true, init));
    m.fc1 = m.layers.back();
    h = push(layer::activation<float>(h, layer::RELU));
    h = push(layer::row_parallel_fc<float>(h, kHidden, group(), true, true, init));
    m.fc2 = m.layers.back();
  } else {
    h = push(layer::fullyconnected<float>(h, kHidden, true, init));
    m.fc1 = m.layers.back();
    h = push(layer::activation<float>(h, layer::RELU));
    h = push(layer::fullyconnected<float>(h, kHidden, true, init));
    m.fc2 = m.layers.back();
  }
  h = push(layer::activation<float>(h, layer::RELU));
  h = push(layer::fullyconnected<float>(h, kClasses, true, init));
  m.fc3 = m.layers.back();
  h = push(layer::activation<float>(h, layer::SOFTMAX));
  push(layer::output<float>(h));
  return m;
}

std::unique_ptr<model::NeuralNetwork<float>> make_model(const Mlp& m) {
  model::nn_params_t p(kBatch, 1, 0.05);
  p.shuffle = false;
  return std::make_unique<model::NeuralNetwork<float>>(m.layers, optimizer::CROSS_ENTROPY, optimizer::SGD, p);
}

const Tensor<float>& weight(const LayerPtr& l) { return l->get_weights()[0]->output(); }
const Tensor<float>& bias(const LayerPtr& l) { return l->get_weights()[1]->output(); }

// The parallel network's weights against this rank's slices of the reference's.
void expect_same_weights(const Mlp& ref, const Mlp& par, double rtol, double atol, const std::string& when) {
  SCOPED_TRACE(when);
  const Shard s = my_shard(kHidden);
  EXPECT_TRUE(close(weight(par.fc1), rows_of(weight(ref.fc1), s), rtol, atol, "fc1 W (column-parallel)"));
  EXPECT_TRUE(close(bias(par.fc1), rows_of(bias(ref.fc1), s), rtol, atol, "fc1 b"));
  EXPECT_TRUE(close(weight(par.fc2), cols_of(weight(ref.fc2), s), rtol, atol, "fc2 W (row-parallel)"));
  EXPECT_TRUE(close(bias(par.fc2), bias(ref.fc2), rtol, atol, "fc2 b"));
  EXPECT_TRUE(close(weight(par.fc3), weight(ref.fc3), rtol, atol, "fc3 W (replicated)"));
}

TEST(MpTraining, WideMlpMatchesOneProcessStepForStep) {
  const Mlp ref = wide_mlp(false), par = wide_mlp(true);
  expect_same_weights(ref, par, 0.0, 0.0, "initial weights");  // the same draws: bit-identical
  auto ref_model = make_model(ref), par_model = make_model(par);

  for (int step = 0; step < kSteps; ++step) {
    const auto seed = static_cast<std::uint64_t>(900 + step);
    const Tensor<float> x = magmadnn::testing::random_tensor<float>({kBatch, kIn}, seed, 0.0, 1.0);
    std::vector<float> yv(kBatch * kClasses, 0.f);
    for (std::int64_t i = 0; i < kBatch; ++i) yv[static_cast<std::size_t>(i * kClasses + (i * 7 + step) % kClasses)] = 1.f;
    const Tensor<float> y = Tensor<float>::from_vector({kBatch, kClasses}, yv);
    const double ref_loss = ref_model->fit(x, y).back().train_loss;
    const double par_loss = par_model->fit(x, y).back().train_loss;
    EXPECT_NEAR(par_loss, ref_loss, 1e-5 * std::abs(ref_loss)) << "step " << step;
    expect_same_weights(ref, par, 1e-5, 1e-7, "after step " + std::to_string(step + 1));
    if (group()->rank() == 0 && step + 1 == kSteps) {
      const auto a = weight(par.fc2).to_vector(), b = cols_of(weight(ref.fc2), my_shard(kHidden)).to_vector();
      double worst = 0;
      for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
      std::printf("[model_parallel] P=%d after %d steps: max |W difference| of the row-parallel layer %.3g\n",
                  group()->size(), kSteps, worst);
    }
    if (group()->rank() == 0)
      std::printf("[model_parallel] P=%d step %d: loss %.7f, one process %.7f, |difference| %.2g\n",
                  group()->size(), step + 1, par_loss, ref_loss, std::abs(par_loss - ref_loss));
  }
}

TEST(MpTraining, EachRankKeepsItsShareOfTheWeights) {
  const Mlp par = wide_mlp(true);
  const int p = group()->size();
  auto fc1 = std::dynamic_pointer_cast<layer::ParallelFullyConnectedLayer<float>>(par.fc1);
  auto fc2 = std::dynamic_pointer_cast<layer::ParallelFullyConnectedLayer<float>>(par.fc2);
  ASSERT_TRUE(fc1 && fc2);
  // One block is one row of W for the column split and one column for the row split.
  const struct {
    const char* name;
    std::shared_ptr<layer::ParallelFullyConnectedLayer<float>> l;
    std::int64_t block;
  } cases[] = {{"column-parallel 784->4096", fc1, kIn}, {"row-parallel 4096->4096", fc2, kHidden}};
  for (const auto& c : cases) {
    const std::int64_t whole = c.l->full_weight_shape().numel(), mine = c.l->get_weight()->output().size();
    const double share = static_cast<double>(whole) / p;
    EXPECT_LE(std::abs(static_cast<double>(mine) - share), static_cast<double>(c.block)) << c.name;
    // All ranks together hold the whole matrix, once.
    std::int64_t total = mine;
    group()->allreduce(distributed::host_buffer(&total, 1), distributed::ReduceOp::sum);
    EXPECT_EQ(total, whole) << c.name;
    std::printf("[model_parallel] P=%d rank %d %s: W %lld of %lld floats (%.2f MiB of %.2f MiB, %.4f of the whole)\n",
                p, group()->rank(), c.name, static_cast<long long>(mine), static_cast<long long>(whole),
                mine * 4.0 / 1048576.0, whole * 4.0 / 1048576.0, static_cast<double>(mine) / whole);
  }
}

}  // namespace

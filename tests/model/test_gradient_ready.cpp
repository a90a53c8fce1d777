// The training plugin's gradient calls: each parameter's gradient is handed
// over the moment it is final, in the order the backward pass finishes
// gradients, and a plugin that copies and restores every gradient changes
// nothing, bit for bit.
#include <map>

#include "model_test_util.h"

using namespace magmadnn;
using namespace mtest;

namespace {

LayerVec<float> three_layers() {
  LayerVec<float> ls;
  ls.push_back(layer::make_layer<TestInput<float>>(6, "in").ptr());
  ls.push_back(layer::make_layer<TestDense<float>>(ls.back()->out(), 12, "fc1").ptr());
  ls.push_back(layer::make_layer<TestAct<float>>(ls.back()->out(), Act::Tanh, "a1").ptr());
  ls.push_back(layer::make_layer<TestDense<float>>(ls.back()->out(), 8, "fc2").ptr());
  ls.push_back(layer::make_layer<TestAct<float>>(ls.back()->out(), Act::Tanh, "a2").ptr());
  ls.push_back(layer::make_layer<TestDense<float>>(ls.back()->out(), 2, "fc3").ptr());
  ls.push_back(layer::make_layer<TestAct<float>>(ls.back()->out(), Act::Softmax, "sm").ptr());
  return ls;
}

// The trained parameters of a fresh network (same seed every time), with
// `setup` applied to it before fit.
std::vector<std::vector<float>> train(optimizer::optimizer_t opt,
                                      const std::function<void(model::NeuralNetwork<float>&)>& setup) {
  set_seed(21);
  Tensor<float> x, y;
  blobs<float>(96, 6, x, y, 4);
  model::nn_params_t p{16, 3, 0.05};
  p.momentum = 0.9;
  model::NeuralNetwork<float> net(three_layers(), optimizer::CROSS_ENTROPY, opt, p);
  setup(net);
  net.fit(x, y);
  std::vector<std::vector<float>> out;
  for (const auto& v : net.parameters()) out.push_back(v->value().to_vector());
  return out;
}

}  // namespace

TEST(GradientReady, CopyAndRestoreChangesNothingBitForBit) {
  for (auto opt : {optimizer::SGD, optimizer::ADAM}) {
    const auto plain = train(opt, [](model::NeuralNetwork<float>&) {});
    // Saves each gradient, scribbles over it, and restores it in
    // backward_finished: only what the plugin leaves behind may reach the
    // optimizer.
    std::vector<Tensor<float>> saved;
    std::vector<Tensor<float>*> live;
    PluginProbe<float> h;
    const auto hooked = train(opt, [&](model::NeuralNetwork<float>& net) {
      saved.resize(net.parameters().size());
      live.assign(net.parameters().size(), nullptr);
      h.ready = [&](std::size_t i, const op::Var<float>&, Tensor<float>& g) {
        saved[i] = g;  // a copy
        live[i] = &g;
        g.fill({CONSTANT, 1e3f});
      };
      h.finished = [&](const std::vector<Tensor<float>*>& grads) {
        for (std::size_t i = 0; i < live.size(); ++i) {
          EXPECT_EQ(grads[i], live[i]) << "backward_finished hands over other tensors than gradient_ready";
          live[i]->copy_from(saved[i]);
        }
      };
      h.attach(net);
    });
    ASSERT_EQ(plain.size(), hooked.size());
    for (std::size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i], hooked[i]) << "parameter " << i << (opt == optimizer::SGD ? " (sgd)" : " (adam)");
    }
  }
}

TEST(GradientReady, FiresOncePerParameterInReverseLayerOrderWithTheFinalGradient) {
  set_seed(22);
  Tensor<float> x, y;
  blobs<float>(32, 6, x, y, 5);
  model::nn_params_t p{32, 1, 0.05};
  model::NeuralNetwork<float> net(three_layers(), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  std::map<const void*, int> layer_of;
  for (std::size_t l = 0; l < net.layers().size(); ++l) {
    for (const auto& w : net.layers()[l]->get_weights()) layer_of[w.get()] = static_cast<int>(l);
  }
  std::vector<std::size_t> fired;
  std::vector<std::vector<float>> at_fire(net.parameters().size());
  bool finished = false;
  std::vector<std::vector<float>> final_grads;
  PluginProbe<float> h;
  h.ready = [&](std::size_t i, const op::Var<float>& v, Tensor<float>& g) {
    EXPECT_FALSE(finished) << "ready after finish";
    EXPECT_EQ(v.get(), net.parameters()[i].get());
    fired.push_back(i);
    at_fire[i] = g.to_vector();
  };
  h.finished = [&](const std::vector<Tensor<float>*>& grads) {
    finished = true;
    for (auto* g : grads) final_grads.push_back(g->to_vector());
  };
  h.attach(net);
  net.fit(x, y);  // one step: batch = data set

  ASSERT_TRUE(finished);
  ASSERT_EQ(fired.size(), net.parameters().size());  // once each
  std::vector<int> layers;
  for (auto i : fired) layers.push_back(layer_of.at(net.parameters()[i].get()));
  for (std::size_t k = 1; k < layers.size(); ++k) {
    EXPECT_GE(layers[k - 1], layers[k]) << "parameter " << fired[k] << " fired after one of an earlier layer";
  }
  EXPECT_EQ(layers.front(), 5);  // fc3 first
  EXPECT_EQ(layers.back(), 1);   // fc1 last
  ASSERT_EQ(final_grads.size(), at_fire.size());
  for (std::size_t i = 0; i < at_fire.size(); ++i) {
    EXPECT_EQ(at_fire[i], final_grads[i]) << "gradient " << i << " changed after it was handed over as final";
  }
}

TEST(GradientReady, ANanLossNeverReachesTheHooks) {
  set_seed(23);
  Tensor<float> x, y;
  blobs<float>(16, 6, x, y, 6);
  x.set({3, 2}, std::numeric_limits<float>::quiet_NaN());
  model::nn_params_t p{16, 1, 0.05};
  model::NeuralNetwork<float> net(three_layers(), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  int calls = 0;
  PluginProbe<float> h;
  h.ready = [&](std::size_t, const op::Var<float>&, Tensor<float>&) { ++calls; };
  h.finished = [&](const std::vector<Tensor<float>*>&) { ++calls; };
  h.attach(net);
  EXPECT_THROW(net.fit(x, y), ValueError);
  EXPECT_EQ(calls, 0);
}

// Export: networks from the layer API and from the presets' configs are
// written, accepted by ONNX's checker, imported back and compute the same
// predictions (within 1e-5) at two batch sizes (the batch axis is free).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "magmadnn/layer/layers.h"
#include "magmadnn/onnx/onnx.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/presets.h"

namespace fs = std::filesystem;
using namespace magmadnn;
using LayerPtr = std::shared_ptr<layer::Layer<float>>;

namespace {

fs::path temp_file(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("magmadnn_onnx_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

Tensor<float> random_batch(std::vector<std::int64_t> shape, std::int64_t n) {
  shape.insert(shape.begin(), n);
  return Tensor<float>(Shape(shape), {UNIFORM, {-1.0f, 1.0f}}, HOST);
}

// Gives every batch normalisation running statistics of its own, so the
// export must carry them (fresh ones are 0 and 1).
void perturb_statistics(const std::vector<LayerPtr>& layers) {
  for (const auto& l : layers) {
    for (auto& [name, t] : l->get_state()) {
      const bool var = name.find("running_var") != std::string::npos;
      t->fill(var ? tensor_filler_t<float>{UNIFORM, {0.5f, 2.0f}} : tensor_filler_t<float>{UNIFORM, {-0.5f, 0.5f}});
    }
  }
}

void expect_round_trip(model::NeuralNetwork<float>& net, const std::vector<std::int64_t>& sample,
                       const std::string& file) {
  const fs::path path = temp_file(file);
  onnx::export_model(net, path.string());
  EXPECT_NO_THROW(onnx::check_model_file(path.string()));
  onnx::Imported g = onnx::import_model(path.string());
  ASSERT_EQ(g.inputs.size(), 1u);
  ASSERT_EQ(g.outputs.size(), 1u);
  for (std::int64_t n : {3, 5}) {
    const Tensor<float> x = random_batch(sample, n);
    const Tensor<float> want = net.predict(x);
    g.inputs[0].second->set_value(x);
    const Tensor<float>& got = *g.outputs[0].second->eval();
    ASSERT_EQ(got.shape(), want.shape()) << file;
    for (std::int64_t k = 0; k < got.size(); ++k) {
      ASSERT_NEAR(got.host_data()[k], want.host_data()[k], 1e-5 + 1e-5 * std::abs(want.host_data()[k]))
          << file << " batch " << n << " element " << k;
    }
  }
}

model::nn_params_t params() { return model::nn_params_t(4, 1); }

}  // namespace

TEST(OnnxExport, MlpWithDropoutAndSoftmax) {
  auto in = layer::input<float>(std::vector<std::int64_t>{-1, 20});
  auto fc1 = layer::fullyconnected<float>(in->out(), 16);
  auto act = layer::activation<float>(fc1->out(), layer::RELU);
  auto drop = layer::dropout<float>(act->out(), 0.5f);
  auto fc2 = layer::fullyconnected<float>(drop->out(), 5);
  auto sm = layer::activation<float>(fc2->out(), layer::SOFTMAX);
  std::vector<LayerPtr> layers{in.ptr(), fc1.ptr(), act.ptr(), drop.ptr(), fc2.ptr(), sm.ptr()};
  model::NeuralNetwork<float> net(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, params());
  expect_round_trip(net, {20}, "mlp.onnx");
}

// A folded bias (fold_bias) is written as ONNX's Gemm takes it: W and b
// apart, with the values the layer computes with.
TEST(OnnxExport, AFoldedBiasIsWrittenAsSeparateWAndB) {
  auto in = layer::input<float>(std::vector<std::int64_t>{-1, 6});
  auto fc = layer::fullyconnected<float>(in->out(), 4, layer::BiasForm::folded);
  fc->get_folded()->set_value(Tensor<float>({4, 7}, {UNIFORM, {-1.0f, 1.0f}}, HOST));  // a bias that is not zero
  std::vector<LayerPtr> layers{in.ptr(), fc.ptr()};
  model::NeuralNetwork<float> net(layers, optimizer::MSE, optimizer::SGD, params());
  expect_round_trip(net, {6}, "folded.onnx");
  onnx::Imported g = onnx::import_model(temp_file("folded.onnx").string());
  const layer::FullyConnectedLayer<float>* back = nullptr;
  for (const auto& l : g.layers) {
    if (const auto* fc2 = dynamic_cast<const layer::FullyConnectedLayer<float>*>(l.get())) back = fc2;
  }
  ASSERT_NE(back, nullptr) << "no FullyConnected layer imported";
  ASSERT_FALSE(back->bias_folded());
  const auto [w, b] = fc->unfolded();
  EXPECT_EQ(back->get_weight()->value().to_vector(), w.to_vector());
  ASSERT_TRUE(back->get_bias());
  EXPECT_EQ(back->get_bias()->value().to_vector(), b.to_vector());
}

TEST(OnnxExport, ConvBatchNormPoolingAndEveryActivation) {
  auto in = layer::input<float>(std::vector<std::int64_t>{-1, 3, 12, 12});
  auto c1 = layer::conv2d<float>(in->out(), {3, 3}, 4, {1, 1}, {1, 1}, {1, 1}, true, /*bias=*/true);
  auto bn = layer::batchnorm<float>(c1->out());
  auto a1 = layer::activation<float>(bn->out(), layer::LEAKY_RELU, 0.2);
  auto p1 = layer::pooling<float>(a1->out(), {2, 2}, {0, 0}, {2, 2}, MAX_POOL);
  auto c2 = layer::conv2d<float>(p1->out(), {3, 3}, 6, {1, 1}, {2, 2}, {1, 1});
  auto a2 = layer::activation<float>(c2->out(), layer::GELU);  // exported as Erf etc., imported as one Gelu
  auto p2 = layer::pooling<float>(a2->out(), {3, 3}, {1, 1}, {1, 1}, AVERAGE_POOL);
  auto fl = layer::flatten<float>(p2->out());
  auto fc = layer::fullyconnected<float>(fl->out(), 8);
  auto a3 = layer::activation<float>(fc->out(), layer::TANH);
  auto a4 = layer::activation<float>(a3->out(), layer::SOFTPLUS);
  auto a5 = layer::activation<float>(a4->out(), layer::SIGMOID);
  std::vector<LayerPtr> layers{in.ptr(), c1.ptr(), bn.ptr(), a1.ptr(), p1.ptr(), c2.ptr(), a2.ptr(),
                               p2.ptr(), fl.ptr(), fc.ptr(), a3.ptr(), a4.ptr(), a5.ptr()};
  perturb_statistics(layers);
  model::NeuralNetwork<float> net(layers, optimizer::MSE, optimizer::SGD, params());
  expect_round_trip(net, {3, 12, 12}, "cnn.onnx");
}

TEST(OnnxExport, BranchingAddAndConcat) {
  auto in = layer::input<float>(std::vector<std::int64_t>{-1, 2, 6, 6});
  auto a = layer::conv2d<float>(in->out(), {1, 1}, 3);
  auto b = layer::conv2d<float>(in->out(), {3, 3}, 3, {1, 1});
  auto sum = layer::add<float>({a->out(), b->out()});
  auto cat = layer::concat<float>({sum->out(), a->out(), in->out()});
  auto fl = layer::flatten<float>(cat->out());
  auto fc = layer::fullyconnected<float>(fl->out(), 4);
  std::vector<LayerPtr> layers{in.ptr(), a.ptr(), b.ptr(), sum.ptr(), cat.ptr(), fl.ptr(), fc.ptr()};
  model::NeuralNetwork<float> net(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, params());
  expect_round_trip(net, {2, 6, 6}, "branches.onnx");
}

TEST(OnnxExport, ResidualBlocks) {
  auto in = layer::input<float>(std::vector<std::int64_t>{-1, 4, 8, 8});
  auto r1 = layer::residual<float>(in->out(), 4);
  auto r2 = layer::residual<float>(r1->out(), 8, {2, 2});  // projects
  auto fl = layer::flatten<float>(r2->out());
  auto fc = layer::fullyconnected<float>(fl->out(), 3);
  std::vector<LayerPtr> layers{in.ptr(), r1.ptr(), r2.ptr(), fl.ptr(), fc.ptr()};
  perturb_statistics(layers);
  model::NeuralNetwork<float> net(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, params());
  expect_round_trip(net, {4, 8, 8}, "residual.onnx");
}

// The presets (mlp, lenet5) as the config builds them: exported,
// checked, and the same predictions.
TEST(OnnxExport, Presets) {
  for (const std::string name : {"mlp", "lenet5"}) {  // resnet: ResidualBlocks (its block), at a CI-sized cost
    SCOPED_TRACE(name);
    const run::TrainSpec spec = run::parse_config(run::preset(name));
    run::NetworkBuild b = run::build_network(spec, {1, 28, 28}, 1, 10);
    perturb_statistics(b.model->layers());
    expect_round_trip(*b.model, {1, 28, 28}, name + ".onnx");
  }
}

TEST(OnnxExport, RefusesALayerItDoesNotKnow) {
  class Odd : public layer::Layer<float> {
   public:
    explicit Odd(op::Expr<float> x) : Layer<float>("odd", x, "odd") { set_output(op::negative(x)); }
    std::string type_name() const override { return "Odd"; }
  };
  auto in = layer::input<float>(std::vector<std::int64_t>{-1, 4});
  auto odd = layer::make_layer<Odd>(in->out());
  auto fc = layer::fullyconnected<float>(odd->out(), 2);
  std::vector<LayerPtr> layers{in.ptr(), odd.ptr(), fc.ptr()};
  model::NeuralNetwork<float> net(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, params());
  const fs::path path = temp_file("odd.onnx");
  fs::remove(path);
  try {
    onnx::export_model(net, path.string());
    FAIL() << "exported a layer of unknown kind";
  } catch (const NotSupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("layer odd is a Odd"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path));  // nothing written
}

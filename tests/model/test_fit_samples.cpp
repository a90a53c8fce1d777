// fit, evaluate and predict on inputs held at source precision (uint8 bytes,
// data::Samples) train exactly as on the same inputs converted to float.
#include <random>

#include "magmadnn/data/samples.h"
#include "model_test_util.h"

using namespace magmadnn;
using namespace mtest;

namespace {

// n samples of `dim` bytes, scaled by 1/255, and one-hot labels of 2 classes
// (class: whether the first byte is past the middle).
void byte_blobs(std::int64_t n, std::int64_t dim, data::Samples<float>& x, Tensor<float>& y) {
  std::mt19937 gen(17);
  auto bytes = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(n * dim));
  for (auto& b : *bytes) b = static_cast<std::uint8_t>(gen() % 256);
  y = Tensor<float>({n, 2}, {ZERO, {}}, HOST);
  for (std::int64_t i = 0; i < n; ++i) y.set({i, (*bytes)[i * dim] >= 128 ? 1 : 0}, 1.0f);
  x = data::Samples<float>::from_bytes({n, dim}, bytes, {1.0 / 255.0, 0.0});
}

model::NeuralNetwork<float> small_net() {
  set_seed(21);
  model::nn_params_t p{16, 3, 0.2};
  return model::NeuralNetwork<float>(mlp<float>(6, 8, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
}

}  // namespace

TEST(FitSamples, BytesTrainEvaluateAndPredictAsTheirFloatConversion) {
  data::Samples<float> xb;
  Tensor<float> y;
  byte_blobs(150, 6, xb, y);
  const Tensor<float> xf = xb.to_tensor();
  const data::Samples<float> vb = xb.slice(100, 150);
  const Tensor<float> vf = vb.to_tensor(), vy = y.slice(100, 150);
  for (const int workers : {0, 2}) {  // the inline feed and the DataLoader
    model::NeuralNetwork<float> a = small_net(), b = small_net();
    model::FitOptions<float> oa, ob;
    oa.loader_workers = ob.loader_workers = workers;
    oa.validation_samples = &vb;
    oa.validation_y = ob.validation_y = &vy;
    ob.validation_x = &vf;
    const auto ha = a.fit(xb, y, oa);
    const auto hb = b.fit(xf, y, ob);
    ASSERT_EQ(ha.size(), 3u);
    EXPECT_EQ(weight_bytes(a), weight_bytes(b)) << "workers " << workers;
    for (std::size_t e = 0; e < ha.size(); ++e) {
      EXPECT_EQ(ha[e].train_loss, hb[e].train_loss);
      EXPECT_EQ(ha[e].val_loss, hb[e].val_loss);
    }
    EXPECT_EQ(a.evaluate(xb, y).loss, b.evaluate(xf, y).loss);
    EXPECT_EQ(a.predict(xb).to_vector(), b.predict(xf).to_vector());
    EXPECT_EQ(a.predict_classes(xb), b.predict_classes(xf));
  }
}

TEST(FitSamples, ValidationGivenTwiceIsRefused) {
  data::Samples<float> xb;
  Tensor<float> y;
  byte_blobs(40, 6, xb, y);
  const Tensor<float> xf = xb.to_tensor();
  model::NeuralNetwork<float> net = small_net();
  model::FitOptions<float> o;
  o.validation_samples = &xb;
  o.validation_x = &xf;
  o.validation_y = &y;
  EXPECT_THROW(net.fit(xb, y, o), ValueError);
  o.validation_x = nullptr;
  o.validation_y = nullptr;
  EXPECT_THROW(net.fit(xb, y, o), ValueError);
}

// MagmaDNN v1 and slides signatures, prediction helpers, summary, progress bar.
#include <sstream>

#include "model_test_util.h"

using namespace magmadnn;
using namespace mtest;

TEST(ModelApi, V1AndSlidesSignaturesCompileAndRun) {
  set_seed(1);
  Tensor<float> x, y;
  blobs<float>(60, 2, x, y);
  auto in = layer::make_layer<TestInput<float>>(2, "in");
  auto fc1 = layer::make_layer<TestDense<float>>(in->out(), 6, "fc1");
  auto act1 = layer::make_layer<TestAct<float>>(fc1->out(), Act::Sigmoid, "act1");
  auto fc2 = layer::make_layer<TestDense<float>>(act1->out(), 2, "fc2");
  auto out = layer::make_layer<TestAct<float>>(fc2->out(), Act::Softmax, "out");
  std::vector<layer::Layer<float>*> layers = {in, fc1, act1, fc2, out};  // v1: raw pointers

  model::nn_params_t params;  // v1: field assignments
  params.batch_size = 16;
  params.n_epochs = 2;
  model::NeuralNetwork<float> model(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, params);
  model::metric_t m;
  testing::internal::CaptureStdout();
  EXPECT_EQ(model.fit(&x, &y, m, true), 0);  // v1
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("epoch 2/2"), std::string::npos) << printed;  // verbose: one line per epoch off a tty
  EXPECT_EQ(m.epochs, 2u);
  EXPECT_GT(m.training_time, 0.0);
  EXPECT_GT(m.samples_per_second, 0.0);
  EXPECT_EQ(m.loss, model.history().back().train_loss);

  model::NeuralNetwork<float> slides(layers, optimizer::CROSS_ENTROPY, optimizer::ADAM, {16, 1, 0.01});
  model::metric_t m2;
  slides.fit(x, y, m2, false);  // slides
  EXPECT_EQ(m2.epochs, 1u);

  // v1: a caller-owned optimizer object
  optimizer::GradientDescent opt(0.05);
  model::NeuralNetwork<float> owned(layers, optimizer::CROSS_ENTROPY, &opt, params);
  owned.fit(x, y, m, false);
  EXPECT_EQ(opt.step_count(), 8);  // 4 steps x 2 epochs on the given object

  for (auto* l : layers) delete l;  // v1 cleanup: unpins, the models keep their layers
  EXPECT_EQ(model.layers().size(), 5u);
  model.fit(x, y, m, false);
}

TEST(ModelApi, PredictForms) {
  set_seed(2);
  Tensor<double> x, y;
  blobs<double>(25, 3, x, y);
  model::nn_params_t p{8, 5, 0.1};
  model::NeuralNetwork<double> net(mlp<double>(3, 4, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  net.fit(x, y);
  const Tensor<double> all = net.predict(x);  // 4 batches, the last partial
  ASSERT_EQ(all.shape(), Shape({25, 2}));
  const auto classes = net.predict_classes(x);
  ASSERT_EQ(classes.size(), 25u);
  for (std::int64_t i = 0; i < 25; ++i) {
    Tensor<double> row({3});  // one sample without the batch axis
    for (int d = 0; d < 3; ++d) row.set(d, x.get({i, d}));
    Tensor<double>* pr = net.predict(&row);  // v1
    ASSERT_EQ(pr->shape(), Shape({1, 2}));
    EXPECT_NEAR(pr->get(0), all.get({i, 0}), 1e-12);
    const unsigned c = net.predict_class(&row);  // v1
    EXPECT_EQ(static_cast<std::int64_t>(c), classes[i]);
    Tensor<double> with_axis = x.slice(i, i + 1);  // {1, 3}
    EXPECT_EQ(net.predict_class(with_axis), c);
  }
  EXPECT_THROW(net.predict_class(x), ShapeError);  // a batch
  Tensor<double> wrong({4});
  EXPECT_THROW(net.predict(&wrong), ShapeError);
}

TEST(ModelApi, SummaryListsLayersAndCounts) {
  set_seed(3);
  model::nn_params_t p{8, 1, 0.1};
  model::NeuralNetwork<float> net(mlp<float>(3, 4, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  EXPECT_EQ(net.num_params(), 3 * 4 + 4 + 4 * 2 + 2);
  const std::string s = net.summary();
  EXPECT_NE(s.find("fc1 (TestDense)"), std::string::npos) << s;
  EXPECT_NE(s.find("(N, 4)"), std::string::npos) << s;
  EXPECT_NE(s.find("Trainable params: 26"), std::string::npos) << s;
  EXPECT_NE(s.find("sgd"), std::string::npos) << s;
}

TEST(ModelApi, ProgressBarPlainAndTerminal) {
  set_seed(4);
  Tensor<float> x, y;
  blobs<float>(50, 2, x, y);
  model::nn_params_t p{10, 2, 0.1};
  model::NeuralNetwork<float> net(mlp<float>(2, 4, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);

  std::ostringstream plain_os;
  auto plain = std::make_shared<model::ProgressBar<float>>(plain_os);  // Auto on a non-tty stream
  EXPECT_EQ(plain->mode(), model::ProgressMode::Plain);
  model::FitOptions<float> o;
  o.callbacks.push_back(plain);
  net.fit(x, y, o);
  const std::string ps = plain_os.str();
  EXPECT_EQ(ps.find('\r'), std::string::npos) << ps;
  EXPECT_EQ(std::count(ps.begin(), ps.end(), '\n'), 2) << ps;
  EXPECT_EQ(ps.rfind("epoch 1/2 - loss ", 0), 0u) << ps;
  EXPECT_NE(ps.find("epoch 2/2 - loss "), std::string::npos) << ps;
  EXPECT_NE(ps.find("samples/s"), std::string::npos) << ps;

  std::ostringstream tty_os;
  auto tty = std::make_shared<model::ProgressBar<float>>(tty_os, model::ProgressMode::Terminal, 0.0, 10);
  model::FitOptions<float> t;
  t.callbacks.push_back(tty);
  t.epochs = 1;
  net.fit(x, y, t);
  const std::string ts = tty_os.str();
  EXPECT_EQ(std::count(ts.begin(), ts.end(), '\r'), 5 + 1) << ts;  // a redraw per batch, then the summary
  EXPECT_NE(ts.find("epoch 3/3 [======>   ] 3/5"), std::string::npos) << ts;
  EXPECT_NE(ts.find("[==========] 5/5"), std::string::npos) << ts;
  EXPECT_NE(ts.find("ETA "), std::string::npos) << ts;
  EXPECT_NE(ts.find("ETA 0:00 "), std::string::npos) << ts;  // after the last batch
  EXPECT_NE(ts.find("\r\x1b[Kepoch 3/3 - loss"), std::string::npos) << ts;
  EXPECT_EQ(ts.back(), '\n');

  EXPECT_EQ(model::format_duration(59.4), "0:59");
  EXPECT_EQ(model::format_duration(3725), "1:02:05");
  EXPECT_EQ(model::format_duration(NAN), "--:--");
}

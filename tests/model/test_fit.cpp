#include <cmath>
#include <set>

#include "model_test_util.h"

using namespace magmadnn;
using namespace mtest;

TEST(ModelFit, ConvergesOnBlobs) {
  set_seed(11);
  Tensor<float> x, y;
  blobs<float>(400, 2, x, y, 1, 4.0);  // well separated: the Bayes accuracy is above 99%
  model::nn_params_t p{32, 15, 0.1};
  model::NeuralNetwork<float> net(mlp<float>(2, 16, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  const auto hist = net.fit(x, y);
  ASSERT_EQ(hist.size(), 15u);
  EXPECT_LT(hist.back().train_loss, hist.front().train_loss);
  const auto e = net.evaluate(x, y);
  EXPECT_GT(e.accuracy, 0.95);
  EXPECT_EQ(e.samples, 400);
  // the fused, stable loss is used on the logits of the softmax output
  EXPECT_EQ(net.output()->kind(), "softmax");
  EXPECT_EQ(net.loss()->get_inputs()[0].get(), net.output()->get_inputs()[0].get());
}

TEST(ModelFit, XorWithMseAndAdam) {
  set_seed(3);
  // XOR, repeated: one output column in [0, 1], accuracy by threshold.
  std::vector<double> xv, yv;
  for (int r = 0; r < 16; ++r) {
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) {
        xv.push_back(a);
        xv.push_back(b);
        yv.push_back(a ^ b);
      }
    }
  }
  auto x = Tensor<double>::from_vector({64, 2}, xv);
  auto y = Tensor<double>::from_vector({64, 1}, yv);
  LayerVec<double> ls;
  ls.push_back(layer::make_layer<TestInput<double>>(2, "in").ptr());
  ls.push_back(layer::make_layer<TestDense<double>>(ls.back()->out(), 8, "fc1").ptr());
  ls.push_back(layer::make_layer<TestAct<double>>(ls.back()->out(), Act::Tanh, "a1").ptr());
  ls.push_back(layer::make_layer<TestDense<double>>(ls.back()->out(), 1, "fc2").ptr());
  ls.push_back(layer::make_layer<TestAct<double>>(ls.back()->out(), Act::Sigmoid, "a2").ptr());
  model::nn_params_t p{8, 150, 0.05};
  model::NeuralNetwork<double> net(ls, optimizer::MSE, optimizer::ADAM, p);
  net.fit(x, y);
  EXPECT_GT(net.evaluate(x, y).accuracy, 0.99);
  const auto cls = net.predict_classes(x);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(cls[i], static_cast<std::int64_t>(yv[i])) << "row " << i;
}

// N = 103 with batch 10: 11 steps per epoch, the last of 3 samples; every
// sample exactly once per epoch; the epoch loss is the sample-weighted mean.
TEST(ModelFit, PartialLastBatchUsesEverySampleOnce) {
  set_seed(5);
  const std::int64_t n = 103;
  Tensor<double> x, y;
  blobs<double>(n, 3, x, y);
  for (std::int64_t i = 0; i < n; ++i) x.set({i, 2}, static_cast<double>(i));  // column 2: sample id
  model::nn_params_t p{10, 2, 0.05};
  model::NeuralNetwork<double> net(mlp<double>(3, 5, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);

  std::vector<std::multiset<std::int64_t>> seen(2);
  std::vector<std::int64_t> sizes;
  unsigned epoch = 0;
  PluginProbe<double> probe;
  probe.finished = [&](const std::vector<Tensor<double>*>&) {
    const Tensor<double>& xb = net.input()->output();
    for (std::int64_t r = 0; r < xb.shape()[0]; ++r) seen[epoch].insert(static_cast<std::int64_t>(xb.get({r, 2})));
  };
  probe.attach(net);
  double weighted = 0.0;
  auto cb = std::make_shared<model::LambdaCallback<double>>();
  cb->epoch_begin = [&](model::NeuralNetwork<double>&, unsigned e) { epoch = e - 1; weighted = 0.0; };
  cb->batch_end = [&](model::NeuralNetwork<double>&, const model::BatchLogs& l) {
    sizes.push_back(l.size);
    weighted += l.loss * static_cast<double>(l.size);
  };
  std::vector<double> epoch_means;
  cb->epoch_end = [&](model::NeuralNetwork<double>&, const model::EpochRecord& r) {
    epoch_means.push_back(weighted / n);
    EXPECT_NEAR(r.train_loss, weighted / n, 1e-12);
  };
  model::FitOptions<double> o;
  o.callbacks.push_back(cb);
  net.fit(x, y, o);

  ASSERT_EQ(sizes.size(), 22u);
  for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], (i % 11 == 10) ? 3 : 10) << "step " << i;
  for (int e = 0; e < 2; ++e) {
    ASSERT_EQ(seen[e].size(), static_cast<std::size_t>(n));
    std::int64_t want = 0;
    for (auto id : seen[e]) EXPECT_EQ(id, want++);
  }
  ASSERT_EQ(epoch_means.size(), 2u);

  // evaluate == a manual computation from predict()
  const auto e = net.evaluate(x, y);
  const Tensor<double> pred = net.predict(x);
  ASSERT_EQ(pred.shape(), Shape({n, 2}));
  double loss = 0.0;
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = y.get({i, 1}) > 0.5 ? 1 : 0;
    loss -= std::log(pred.get({i, label}));
    correct += (pred.get({i, 1}) > pred.get({i, 0})) == (label == 1);
    EXPECT_NEAR(pred.get({i, 0}) + pred.get({i, 1}), 1.0, 1e-12);
  }
  EXPECT_NEAR(e.loss, loss / n, 1e-10);
  EXPECT_DOUBLE_EQ(e.accuracy, static_cast<double>(correct) / n);
  EXPECT_EQ(e.samples, n);
}

TEST(ModelFit, HistoryAndCallbackOrder) {
  set_seed(2);
  Tensor<float> x, y, xv, yv;
  blobs<float>(50, 2, x, y, 1);
  blobs<float>(30, 2, xv, yv, 2);
  model::nn_params_t p{20, 3, 0.1};
  model::NeuralNetwork<float> net(mlp<float>(2, 4, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  std::vector<std::string> events;
  auto cb = std::make_shared<model::LambdaCallback<float>>();
  cb->train_begin = [&](auto&, const model::TrainInfo& i) {
    events.push_back("train_begin");
    EXPECT_EQ(i.batches_per_epoch, 3);
    EXPECT_TRUE(i.has_validation);
  };
  cb->epoch_begin = [&](auto&, unsigned e) { events.push_back("epoch_begin " + std::to_string(e)); };
  cb->batch_end = [&](auto&, const model::BatchLogs& l) { events.push_back("batch " + std::to_string(l.batch)); };
  cb->epoch_end = [&](auto& m, const model::EpochRecord& r) {
    events.push_back("epoch_end " + std::to_string(r.epoch));
    EXPECT_EQ(m.history().size(), r.epoch);  // the record is in the history already
  };
  cb->train_end = [&](auto&, const model::History& h) { events.push_back("train_end " + std::to_string(h.size())); };
  model::FitOptions<float> o;
  o.validation_x = &xv;
  o.validation_y = &yv;
  o.callbacks.push_back(cb);
  const auto hist = net.fit(x, y, o);

  std::vector<std::string> want{"train_begin"};
  for (int e = 1; e <= 3; ++e) {
    want.push_back("epoch_begin " + std::to_string(e));
    for (int b = 0; b < 3; ++b) want.push_back("batch " + std::to_string(b));
    want.push_back("epoch_end " + std::to_string(e));
  }
  want.push_back("train_end 3");
  EXPECT_EQ(events, want);
  ASSERT_EQ(hist.size(), 3u);
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ(hist[i].epoch, i + 1);
    EXPECT_FALSE(std::isnan(hist[i].val_loss));
    EXPECT_GE(hist[i].val_accuracy, 0.0);
    EXPECT_GT(hist[i].seconds, 0.0);
    EXPECT_GT(hist[i].samples_per_second, 0.0);
    EXPECT_DOUBLE_EQ(hist[i].learning_rate, 0.1);
  }
  const auto ev = net.evaluate(xv, yv);
  EXPECT_NEAR(hist.back().val_loss, ev.loss, 1e-6);
  EXPECT_DOUBLE_EQ(hist.back().val_accuracy, ev.accuracy);
  // fit continues from where it stands: 2 more epochs are numbered 4 and 5
  model::FitOptions<float> more;
  more.epochs = 2;
  const auto h2 = net.fit(x, y, more);
  ASSERT_EQ(h2.size(), 5u);
  EXPECT_EQ(h2.back().epoch, 5u);
  EXPECT_TRUE(std::isnan(h2.back().val_loss));
}

TEST(ModelFit, EarlyStoppingStops) {
  set_seed(4);
  Tensor<float> x, y;
  blobs<float>(40, 2, x, y);
  model::nn_params_t p{10, 50, 0.0};  // nothing is learnt: the loss never improves
  p.shuffle = false;
  model::NeuralNetwork<float> net(mlp<float>(2, 4, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  auto es = std::make_shared<model::EarlyStopping<float>>("loss", 2, 1e-6);
  model::FitOptions<float> o;
  o.callbacks.push_back(es);
  const auto hist = net.fit(x, y, o);
  EXPECT_EQ(hist.size(), 3u);  // best at 1, no improvement at 2 and 3
  EXPECT_EQ(es->stopped_epoch(), 3u);
  EXPECT_EQ(es->best_epoch(), 1u);

  // val_* without validation data is refused at train begin
  model::FitOptions<float> bad;
  bad.callbacks.push_back(std::make_shared<model::EarlyStopping<float>>("val_loss", 1));
  EXPECT_THROW(net.fit(x, y, bad), ValueError);
  EXPECT_THROW(model::EarlyStopping<float>("val_los"), ValueError);
}

TEST(ModelFit, EarlyStoppingRestoresBestWeights) {
  set_seed(8);
  Tensor<float> x, y;
  blobs<float>(60, 2, x, y);
  model::nn_params_t p{10, 30, 0.5};
  model::NeuralNetwork<float> net(mlp<float>(2, 8, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  std::vector<std::vector<unsigned char>> snaps;
  auto rec = std::make_shared<model::LambdaCallback<float>>();
  rec->epoch_end = [&](auto& m, const model::EpochRecord&) { snaps.push_back(weight_bytes(m)); };
  // from epoch 4 on the model climbs the loss (negative rate), so it gets worse
  rec->epoch_begin = [&](auto& m, unsigned e) { if (e == 4) m.optimizer().set_learning_rate(-0.5); };
  auto es = std::make_shared<model::EarlyStopping<float>>("loss", 2, 0.0, true);
  model::FitOptions<float> o;
  o.callbacks = {rec, es};
  const auto hist = net.fit(x, y, o);
  ASSERT_GT(es->best_epoch(), 0u);
  ASSERT_LT(hist.size(), 30u);
  EXPECT_EQ(weight_bytes(net), snaps[es->best_epoch() - 1]);
}

TEST(ModelFit, TrainingPluginSeesEveryGradientOncePerStepAndCanFreeze) {
  set_seed(6);
  Tensor<float> x, y;
  blobs<float>(45, 2, x, y);
  model::nn_params_t p{10, 2, 0.1};
  model::NeuralNetwork<float> net(mlp<float>(2, 4, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  int calls = 0;
  std::int64_t steps_seen_by_hook = -1;
  PluginProbe<float> freeze;
  freeze.finished = [&](const std::vector<Tensor<float>*>& grads) {
    ++calls;
    const auto& params = net.parameters();
    ASSERT_EQ(params.size(), grads.size());
    ASSERT_EQ(params.size(), 4u);
    for (std::size_t i = 0; i < params.size(); ++i) EXPECT_EQ(grads[i]->shape(), params[i]->value().shape());
    steps_seen_by_hook = net.optimizer().step_count();  // before the step
    for (auto* g : grads) math::fill(*g, 0.0f);           // freeze
  };
  freeze.attach(net);
  const auto before = weight_bytes(net);
  net.fit(x, y);
  EXPECT_EQ(calls, 10);  // 5 steps x 2 epochs
  EXPECT_EQ(net.optimizer().step_count(), 10);
  EXPECT_EQ(steps_seen_by_hook, 9);
  EXPECT_EQ(weight_bytes(net), before);

  // Without the plugin the same training changes the weights.
  net.set_training_plugin(nullptr);
  net.fit(x, y);
  EXPECT_NE(weight_bytes(net), before);
}

TEST(ModelFit, NanLossNamesEpochAndBatch) {
  set_seed(9);
  Tensor<float> x, y;
  blobs<float>(40, 2, x, y);
  model::nn_params_t p{10, 3, 0.1};
  p.shuffle = false;
  model::NeuralNetwork<float> net(mlp<float>(2, 4, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  const std::string dir = temp_dir("nan");
  model::FitOptions<float> o;
  o.checkpoint_path = dir + "/good.ckpt";
  o.checkpoint_every_epochs = 1;
  o.epochs = 1;
  net.fit(x, y, o);  // one clean epoch, checkpointed
  Tensor<float> bad = x;
  bad.set({25, 1}, std::nanf(""));  // batch 3 of the epoch
  try {
    net.fit(bad, y);
    FAIL() << "no error on a NaN loss";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("epoch 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("batch 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("good.ckpt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nan"), std::string::npos) << msg;
  }
  EXPECT_EQ(net.cursor().epoch, 1u);
  EXPECT_EQ(net.cursor().batch, 2);  // two good steps were taken
  std::filesystem::remove_all(dir);
}

TEST(ModelFit, NanLossLeavesTheParametersAsTheyWere) {
  // Plain SGD updates inside the backward pass, momentum after it: either
  // way a NaN loss is caught before any parameter changes.
  for (double momentum : {0.0, 0.9}) {
    set_seed(4);
    Tensor<float> x, y;
    blobs<float>(20, 2, x, y);
    model::nn_params_t p{10, 1, 0.1};
    p.momentum = momentum;
    p.shuffle = false;
    model::NeuralNetwork<float> net(mlp<float>(2, 4, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
    net.fit(x, y);
    std::vector<std::vector<float>> before;
    for (const auto& v : net.parameters()) before.push_back(v->output().to_vector());
    Tensor<float> bad = x;
    bad.set({0, 0}, std::nanf(""));  // the first batch
    EXPECT_THROW(net.fit(bad, y), ValueError) << "momentum " << momentum;
    for (std::size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(net.parameters()[i]->output().to_vector(), before[i])
          << net.parameters()[i]->get_name() << ", momentum " << momentum;
    }
  }
}

TEST(ModelFit, RejectsBadInputs) {
  set_seed(1);
  Tensor<float> x, y;
  blobs<float>(20, 2, x, y);
  model::nn_params_t p{10, 1, 0.1};
  model::NeuralNetwork<float> net(mlp<float>(2, 4, 2), optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  Tensor<float> y_short({19, 2}, {ZERO});
  EXPECT_THROW(net.fit(x, y_short), ShapeError);
  Tensor<float> x_wide({20, 3}, {ZERO});
  EXPECT_THROW(net.fit(x_wide, y), ShapeError);
  model::FitOptions<float> o;
  o.validation_x = &x;
  EXPECT_THROW(net.fit(x, y, o), ValueError);
  EXPECT_THROW(model::NeuralNetwork<float>(LayerVec<float>{}, optimizer::MSE, optimizer::SGD, p), ValueError);
}

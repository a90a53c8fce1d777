// A real-size preset (`resnet50`, `googlenet`, or the small `resnet` for
// comparison) adapted to 28 x 28 grey Fashion-MNIST images and 10 classes
// (its input layer's shape and its classifier's units), trained on a subset
// with the loss of every step printed: the experiments of
// docs/notes/benchmarks-resnet.md ("ResNet-50 and GoogLeNet on 28 x 28
// Fashion-MNIST") that separate the causes of a divergence.
//
// Usage: bench_real_size_fmnist --preset NAME [--train N] [--test M]
//   [--epochs E] [--batch B] [--lr X] [--momentum X] [--wd X]
//   [--schedule preset|none|cosine] [--warmup EPOCHS] [--zero-init-residual 0|1]
//   [--every K] [--seed S] [--dump DIR] [--stem-pool 0|1]
//   (threads: OMP_NUM_THREADS; layouts: MAGMADNN_BLOCKED_LAYOUT)
// --lr sets the optimizer's learning_rate as the config reads it (with the
// resnet50 preset's "lr_scaling": "linear" it is the rate for base_batch
// 256); --schedule none removes the schedule (a constant rate, no scaling).
// --zero-init-residual 1 sets the scale (gamma) of every batch
// normalisation whose layer name ends in ".bn3" to 0 (torchvision's
// zero_init_residual for ResNet-50's bottlenecks).
// --stem-pool 0 makes the resnet50 stem's 3x3/2 max pooling a 1x1/1 one
// (the stages then see 14, 7, 4 and 2 pixels a side instead of 7, 4, 2, 1).
// --dump DIR writes the training images (x.bin, float32 NCHW), their labels
// (labels.txt) and every weight before and after training (before.bin/.txt,
// after.bin/.txt): with one batch, one step, lr 1, no momentum and no weight
// decay, before - after is the gradient, which a reference framework can
// check on the same images and weights.
#include <omp.h>

#include <cstdio>
#include <fstream>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "magmadnn/run/presets.h"
#include "magmadnn/run/run_training.h"

using namespace magmadnn;

namespace {

run::Json adapt(const std::string& name) {
  run::Json j = run::preset(name);
  if (j["layers"][0]["type"] == "input") j["layers"][0]["shape"] = {1, 28, 28};
  for (auto it = j["layers"].rbegin(); it != j["layers"].rend(); ++it) {
    if ((*it)["type"] == "dense") {
      (*it)["units"] = 10;
      break;
    }
  }
  return j;
}

// Every weight of `net` as DIR/<tag>.bin (float32, in order) and
// DIR/<tag>.txt (one "name dims..." line each).
void dump_weights(model::NeuralNetwork<float>& net, const std::string& dir, const std::string& tag) {
  std::ofstream bin(dir + "/" + tag + ".bin", std::ios::binary), txt(dir + "/" + tag + ".txt");
  for (const auto& layer : net.layers())
    for (auto& [wname, var] : layer->named_weights()) {
      const Tensor<float>& t = static_cast<const op::Variable<float>&>(*var).value();
      txt << wname;
      for (std::int64_t d : t.shape().dims()) txt << ' ' << d;
      txt << '\n';
      std::vector<float> v(static_cast<std::size_t>(t.size()));
      for (std::int64_t k = 0; k < t.size(); ++k) v[static_cast<std::size_t>(k)] = t.get(k);
      bin.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
    }
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a{{"--preset", "resnet50"}, {"--train", "640"}, {"--test", "200"},
                                       {"--epochs", "1"}, {"--every", "1"}, {"--zero-init-residual", "0"},
                                       {"--stem-pool", "1"}};
  for (int i = 1; i + 1 < argc; i += 2) a[argv[i]] = argv[i + 1];
  run::Json j = adapt(a["--preset"]);
  j["data"] = {{"dataset", "fashion-mnist"},
               {"limit_train", std::stoll(a["--train"])},
               {"limit_test", std::stoll(a["--test"])},
               {"val_split", 0}};
  j["epochs"] = std::stoll(a["--epochs"]);
  if (a.count("--batch")) j["batch_size"] = std::stoll(a["--batch"]);
  if (a.count("--seed")) j["seed"] = std::stoll(a["--seed"]);
  if (a.count("--lr")) j["optimizer"]["learning_rate"] = std::stod(a["--lr"]);
  if (a.count("--momentum")) j["optimizer"]["momentum"] = std::stod(a["--momentum"]);
  if (a.count("--wd")) j["optimizer"]["weight_decay"] = std::stod(a["--wd"]);
  if (a.count("--schedule")) {
    if (a["--schedule"] == "none") j.erase("schedule");
    if (a["--schedule"] == "cosine") j["schedule"] = {{"type", "cosine"}};
  }
  if (a["--stem-pool"] == "0") {  // resnet50: the stem's max pooling made 1x1/1 (14x14 after the stem, 2x2 at the end)
    for (auto& l : j["layers"])
      if (l.value("name", "") == "stem") l.update({{"kernel", 1}, {"stride", 1}, {"padding", 0}});
  }
  if (a.count("--warmup")) j["schedule"]["warmup_epochs"] = std::stod(a["--warmup"]);
  std::printf("config: optimizer %s schedule %s batch %s, %d threads, MAGMADNN_BLOCKED_LAYOUT=%s\n",
              j["optimizer"].dump().c_str(), j.value("schedule", run::Json::object()).dump().c_str(),
              j["batch_size"].dump().c_str(), omp_get_max_threads(),
              std::getenv("MAGMADNN_BLOCKED_LAYOUT") ? std::getenv("MAGMADNN_BLOCKED_LAYOUT") : "(unset)");

  run::TrainingRun tr(run::parse_config(j));
  if (a["--zero-init-residual"] == "1") {
    int zeroed = 0;
    for (const auto& layer : tr.network().layers())
      for (auto& [wname, var] : layer->named_weights())
        if (ends_with(wname, ".bn3/gamma")) {
          Tensor<float>& g = var->value();
          for (std::int64_t k = 0; k < g.size(); ++k) g.set(k, 0.0f);
          ++zeroed;
        }
    std::printf("zero-init residual: %d gammas set to 0\n", zeroed);
  }
  const std::string dump = a.count("--dump") ? a["--dump"] : "";
  if (!dump.empty()) {  // the training images and labels, and the weights before training
    const Tensor<float> x = tr.train().x.to_tensor();
    std::ofstream xb(dump + "/x.bin", std::ios::binary), yt(dump + "/labels.txt");
    for (std::int64_t k = 0; k < x.size(); ++k) {
      const float f = x.get(k);
      xb.write(reinterpret_cast<const char*>(&f), sizeof f);
    }
    for (std::int64_t c : tr.train().labels) yt << c << '\n';
    dump_weights(tr.network(), dump, "before");
  }
  const std::int64_t every = std::stoll(a["--every"]);
  auto cb = std::make_shared<model::LambdaCallback<float>>();
  cb->batch_end = [every](model::NeuralNetwork<float>&, const model::BatchLogs& l) {
    if (l.batch % every == 0 || l.batch + 1 == l.batches)
      std::printf("epoch %u step %lld loss %.4f running %.4f acc %.3f (%.1f s)\n", l.epoch,
                  static_cast<long long>(l.batch), l.loss, l.epoch_loss, l.epoch_accuracy, l.seconds);
    std::fflush(stdout);
  };
  run::RunOptions o;
  o.callbacks.push_back(cb);
  const run::RunResult r = tr.run(o);
  if (!dump.empty()) dump_weights(tr.network(), dump, "after");
  std::printf("%s: test accuracy %.4f loss %.4f; train loss by epoch", a["--preset"].c_str(), r.test.accuracy,
              r.test.loss);
  for (const auto& e : r.history) std::printf(" %.4f (lr %.5f)", e.train_loss, e.learning_rate);
  std::printf("; fit %.1f s\n", r.fit_seconds);
  return 0;
}

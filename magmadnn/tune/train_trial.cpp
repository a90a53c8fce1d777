#include "magmadnn/tune/train_trial.h"

#include <cmath>

#include "magmadnn/run/run_training.h"

namespace magmadnn::tune {

TrialOutcome train_trial(const Trial& trial, const std::shared_ptr<distributed::Communicator>& group) {
  const run::TrainSpec spec = run::parse_config(trial.train_config);
  // A group of ranks trains the trial together: a config with model-parallel
  // layers splits them over the group (building them is collective).
  const bool grouped = group && group->size() > 1;
  run::TrainingRun training(spec, grouped ? group : nullptr);
  TrialOutcome o;
  double trained = 0;
  auto recorder = std::make_shared<model::LambdaCallback<float>>();
  recorder->epoch_end = [&](model::NeuralNetwork<float>&, const model::EpochRecord& e) {
    trained += e.seconds;
    const bool validated = !std::isnan(e.val_loss);
    o.curve.push_back({static_cast<std::int64_t>(e.epoch), validated ? e.val_loss : e.train_loss,
                       validated ? e.val_accuracy : e.train_accuracy, trained});
  };
  run::RunOptions options;
  options.callbacks.push_back(recorder);
  if (grouped) options.communicator = group;
  const run::RunResult r = training.run(options);
  if (!o.curve.empty()) {
    o.loss = o.curve.back().loss;
    o.accuracy = o.curve.back().accuracy;
  }
  o.test_accuracy = r.test.accuracy;
  o.extra = {{"train_seconds", run::training_seconds(r.history)}, {"test_loss", r.test.loss},
             {"parameters", r.summary.value("parameters", Json(nullptr))}, {"ranks", group ? group->size() : 1}};
  return o;
}

}  // namespace magmadnn::tune

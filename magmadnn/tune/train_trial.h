/// @file train_trial.h
/// The trial function of `magmadnn tune`: the trial's train config through
/// the library's training call (run::TrainingRun, run/run_training.h). The
/// curve holds each epoch's validation loss and accuracy (training ones when
/// the config holds no validation split) against cumulative training
/// seconds; test_accuracy is the test split scored once after training.
///
/// With a group of K > 1 ranks every rank of it calls this with the same
/// trial, and the run trains data-parallel with the strategy of the
/// config's "distributed" object (allreduce by default); a config with
/// model-parallel layers ("parallel": "model" or "auto", a layer's
/// "parallel") splits them over the group, as `magmadnn train` does over its
/// ranks. Every rank returns the same outcome.
#pragma once

#include "magmadnn/tune/trial.h"

namespace magmadnn::tune {

TrialOutcome train_trial(const Trial& trial, const std::shared_ptr<distributed::Communicator>& group);

}  // namespace magmadnn::tune

/// @file build_network.h
/// TrainSpec -> layers -> model::NeuralNetwork<float>: the one place where a
/// config becomes a network, shared by train, evaluate and predict (so a
/// checkpoint always meets the network it was written from).
///
/// Requires a spec from parse_config() and the sample shape of the data
/// ({1, 28, 28} for MNIST). Guarantees: the weights are initialised from the
/// spec's seed (set_seed is called here), so the same config builds the same
/// network; a network that cannot be built (a dense output whose unit count
/// differs from the number of classes, a window larger than its input) throws
/// ConfigError naming the layer (`layers[3]...`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/run/parallel_plan.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

struct NetworkBuild {
  std::unique_ptr<model::NeuralNetwork<float>> model;
  std::vector<std::int64_t> sample_shape;  ///< input without the batch axis
  std::int64_t classes = 0;                ///< output units
  ParallelPlan plan;                       ///< the spec's layout (parallel_plan.h)
  /// Built split over more than one rank (a hybrid plan on a group of
  /// size > 1): every rank must be fed the whole global batch
  /// (ShardOptions::replicated) and evaluate every batch with the others.
  bool split = false;
  /// With `split`: which of model->parameters() a data-parallel strategy
  /// exchanges (StrategyOptions::exchange; their gradients are summed).
  /// Empty otherwise.
  std::vector<bool> exchange;
  /// Weight elements this rank holds, and the whole model's (a split
  /// layer counted whole); equal unless `split`.
  std::int64_t rank_weights = 0, whole_weights = 0;
  /// The same two counts over the model-parallel layers alone (0 without any).
  std::int64_t rank_split_weights = 0, whole_split_weights = 0;
};

/// The batch, epochs, loss and optimizer settings of `spec` as a network
/// takes them (what build_network gives its network; an imported network
/// trains with the same).
model::nn_params_t training_params(const TrainSpec& spec);

/// The optimizer build_network gives its network (spec.optimizer's kind and
/// settings, and the schedule with `steps_per_epoch` and `world_size` as
/// there), for code that trains the spec's layers without that network (a
/// pipeline stage).
std::shared_ptr<optimizer::Optimizer<float>> make_optimizer(const TrainSpec& spec, std::int64_t steps_per_epoch,
                                                            std::int64_t world_size = 1);

/// Appends the activation `name` of the config ("relu", ...; "none":
/// nothing) after `x` to `chain`; returns its output.
op::Expr<float> push_activation(std::vector<std::shared_ptr<layer::Layer<float>>>& chain, op::Expr<float> x,
                                const std::string& name);

/// Builds the network of `spec` for samples of `sample_shape`.
/// `steps_per_epoch` converts the schedule's epochs into optimizer steps
/// (those of the first epoch when the batch grows). `classes` (> 0) is
/// checked against the output size. schedule.lr_scaling scales the rate
/// with the global batch, batch_size x `world_size`: for a program whose
/// batch_size is per rank, `world_size` is the number of ranks; a training
/// run (run_training.h), whose batch_size is already global, passes 1.
/// `group`: the ranks a hybrid plan splits its model-parallel layers over
/// (every rank of it calls build_network at once: building a split layer is
/// collective). Null or one rank: the plain single-process network, whatever
/// the plan; so is a plan without model-parallel layers.
NetworkBuild build_network(const TrainSpec& spec, const std::vector<std::int64_t>& sample_shape,
                           std::int64_t steps_per_epoch, std::int64_t classes, std::int64_t world_size = 1,
                           std::shared_ptr<distributed::Communicator> group = nullptr);

}  // namespace magmadnn::run

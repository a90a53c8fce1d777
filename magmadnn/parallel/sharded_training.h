/// @file sharded_training.h
/// distributed::ShardedTraining<T>: the training plugin
/// (model/training_plugin.h) of a data-parallel run. It puts a strategy
/// (parallel/strategy.h), which keeps the ranks' models one, together with
/// the distributed sampler, which shares every global batch among them:
///
///   auto strategy = distributed::make_strategy<float>("allreduce", comm);
///   distributed::ShardedTraining<float> plugin(comm, *strategy);
///   plugin.attach(net);  // collective: the strategy's start, then the plugin installed
///   net.fit(x, y, opts);  // every rank the same x and y; each trains its slice
///   strategy->finalize();
///
/// What fit then does on every rank:
///  - each global batch (nn_params_t::batch_size is the global size) is cut
///    among the ranks that train (data::shard_rows): all of them, or all
///    but `server_rank` when it is set (asgd's parameter server, which
///    takes every step without data and serves the others from the
///    strategy's calls; it counts no samples);
///  - the gradients the strategy sees are this rank's slice's mean gradient
///    scaled by trainers * slice / batch (times the strategy's own factor),
///    so their plain average over the trainers is the global batch's mean
///    gradient also when the slices differ by a row; a rank whose slice is
///    empty still takes the step, with weight 0, so every rank meets every
///    collective;
///  - at an epoch's end the strategy synchronises the weights (asgd: the
///    server's) and every rank takes one rank's layer state (the first
///    trainer's), then the epoch's loss, accuracy and validation (split by
///    the same rule) are summed over the ranks, so every rank's EpochRecord
///    is the run's;
///  - checkpoints: rank 0 writes, at points every rank counts alike (a
///    mid-epoch one holds the run's sums so far, and its cursor counts
///    global batches, so it resumes on any rank count); after each write
///    every rank learns whether it failed and why, and all stop with that
///    error rather than wait for rank 0 in the next collective.
/// `replicated` (a network split by a hybrid plan, run/parallel_plan.h):
/// every rank is fed the whole global batch and computes the same loss, the
/// split layers sharing the work; then no slices, no weighting, no sums
/// (they are already the run's), and checkpoints fall where one process's
/// would, every rank taking part in the gather of the split weights.
///
/// Requires: every rank builds it with the same options, a strategy of the
/// same kind, and calls fit with the same data and options; it and the
/// strategy outlive every fit of the network. Guarantees: with one rank,
/// training is the strategy's alone on all of the data.
#pragma once

#include <memory>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/model/training_plugin.h"
#include "magmadnn/parallel/strategy.h"

namespace magmadnn::distributed {

struct ShardOptions {
  /// The rank that trains on no data (asgd's parameter server), or -1.
  int server_rank = -1;
  /// Every rank is fed the whole batch (a network split by a hybrid plan).
  bool replicated = false;
};

template <typename T>
class ShardedTraining final : public model::TrainingPlugin<T> {
 public:
  using Part = typename model::TrainingPlugin<T>::Part;
  /// ValueError for a null communicator or a server rank outside [-1, size).
  ShardedTraining(std::shared_ptr<Communicator> comm, Strategy<T>& strategy, ShardOptions options = {});

  /// Collective: the strategy's attach (rank 0's state to every rank), then
  /// this plugin in its place on `net`.
  void attach(model::NeuralNetwork<T>& net) override;

  Part part(std::int64_t rows) const override;
  bool wants_gradients() const override { return strategy_.wants_gradients(); }
  void gradient_ready(std::size_t index, const op::Var<T>& param, Tensor<T>& grad) override {
    strategy_.gradient_ready(index, param, grad);
  }
  void backward_finished(const std::vector<Tensor<T>*>& grads) override { strategy_.backward_finished(grads); }
  bool apply_update() override { return strategy_.apply_update(); }
  void after_update() override { strategy_.after_update(); }

  void epoch_end() override;
  bool sums_are_partial() const override { return comm_->size() > 1 && !options_.replicated; }
  void sum_metrics(std::vector<double>& sums) override;

  bool spans_processes() const override { return comm_->size() > 1; }
  bool writes_checkpoints() const override { return comm_->rank() == 0; }
  void agree_on_checkpoint(const std::exception_ptr& failure, const std::string& path) override;

 private:
  std::shared_ptr<Communicator> comm_;
  Strategy<T>& strategy_;
  ShardOptions options_;
  model::NeuralNetwork<T>* net_ = nullptr;
};

}  // namespace magmadnn::distributed

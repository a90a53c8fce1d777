/// @file training_plugin.h
/// model::TrainingPlugin<T>: the one seam through which something outside the
/// model takes part in NeuralNetwork::fit: a data-parallel strategy
/// (parallel/strategy.h), the sampler that shares batches among processes
/// (parallel/sharded_training.h), or a test's probe. fit calls it at fixed
/// points of every step and epoch; every method has a default that does
/// nothing, so a plugin overrides only what it needs, and fit without one
/// trains one process on all of its data. fit itself knows no ranks: which
/// rows a process trains, how its sums become the run's, and who writes
/// checkpoints are all answers of the plugin.
///
///   struct Freeze : model::TrainingPlugin<float> {
///     bool wants_gradients() const override { return true; }
///     void backward_finished(const std::vector<Tensor<float>*>& grads) override {
///       for (auto* g : grads) math::fill(*g, 0.0f);
///     }
///   } freeze;
///   freeze.attach(net);  // net.fit(...) now trains nothing
///
/// One step of fit, in order:
///   part(rows) -> forward (this part's rows) -> NaN check -> backward, with
///   gradient_ready(i, ...) as each gradient becomes final (only when
///   wants_gradients()) -> backward_finished(grads) -> loss scaler ->
///   optimizer step unless apply_update() says no -> after_update() ->
///   on_batch_end callbacks.
/// A part that does not train (a parameter server) skips everything up to
/// backward_finished, which it receives with no gradients.
/// At an epoch's end: epoch_end() -> validation (its rows by part()) ->
/// sum_metrics() when sums_are_partial() -> the epoch's callbacks.
///
/// Requires: the plugin outlives every fit of the network it is attached to
/// (the network keeps a pointer, not ownership); one plugin per network (a
/// plugin that needs another's work delegates to it). Guarantees of fit:
/// each method is called from the thread that runs fit, at the points
/// above, on every process alike where the plugin spans processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "magmadnn/compute/variable.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::model {

template <typename T>
class NeuralNetwork;

template <typename T>
class TrainingPlugin {
 public:
  /// This process's share of one batch of `rows` rows (part()).
  struct Part {
    std::int64_t begin = 0;  ///< first row of the batch it trains on
    std::int64_t count = 0;  ///< rows it trains on (0: it still takes the step, with weight 0)
    /// false: the process takes the step without data (no forward or
    /// backward pass; backward_finished and after_update still run), as a
    /// parameter server does.
    bool trains = true;
    /// Multiplies every gradient the backward pass makes (through its seed,
    /// at no cost) when wants_gradients(): e.g. a strategy that sums the
    /// processes' gradients asks for 1 / processes.
    double gradient_scale = 1.0;
  };

  virtual ~TrainingPlugin() = default;

  /// Installs this plugin on `net` (NeuralNetwork::set_training_plugin),
  /// replacing any other. An override does its own set-up (a strategy's
  /// collective start) and then calls this.
  virtual void attach(NeuralNetwork<T>& net);

  // -- a step ------------------------------------------------------------------
  /// Rows [begin, begin + count) of a batch of `rows` (training and, by the
  /// same rule, the validation set). Default: all of them, on this process.
  virtual Part part(std::int64_t rows) const { return Part{0, rows, true, 1.0}; }
  /// Whether the step keeps its gradients for gradient_ready and
  /// backward_finished. Without it, plain SGD updates inside the backward
  /// pass (no gradient buffers) and only after_update is called.
  virtual bool wants_gradients() const { return false; }
  /// Parameter `index` (of NeuralNetwork::parameters()) has its final
  /// gradient, in the order the backward pass finishes them (last layer
  /// first) while the rest of the pass still runs. `grad` may be changed in
  /// place until backward_finished returns.
  virtual void gradient_ready(std::size_t /*index*/, const op::Var<T>& /*param*/, Tensor<T>& /*grad*/) {}
  /// The backward pass is done: complete what gradient_ready started.
  /// `grads` (by parameter index) may be changed in place; the optimizer
  /// reads them next. Empty on a step of a part that does not train.
  virtual void backward_finished(const std::vector<Tensor<T>*>& /*grads*/) {}
  /// Whether this process runs the optimizer step (a parameter server's
  /// workers do not: the server sends them the weights). Asked only where
  /// wants_gradients() (else the update is part of the backward pass).
  virtual bool apply_update() { return true; }
  /// After the optimizer step (or where it would have run), before the
  /// on_batch_end callbacks.
  virtual void after_update() {}

  // -- an epoch ------------------------------------------------------------------
  /// The epoch's steps are done, before its validation, sums, checkpoint and
  /// callbacks (e.g. every process takes the same weights and layer state).
  virtual void epoch_end() {}
  /// Whether this process's sums of loss, correct answers and samples (and
  /// the validation's) cover only its own rows; sum_metrics then makes them
  /// the run's. A checkpoint loaded mid-epoch holds the run's sums, which
  /// fit keeps only where writes_checkpoints().
  virtual bool sums_are_partial() const { return false; }
  /// Replaces `sums` by their element-wise totals over every process (each
  /// calls it at the same point with the same length).
  virtual void sum_metrics(std::vector<double>& /*sums*/) {}

  // -- checkpoints ----------------------------------------------------------------
  /// Whether training spans processes. Then fit places the checkpoints
  /// itself on every process (mid-epoch ones after every
  /// checkpoint_every_batches-th batch of the epoch, counted alike on every
  /// process), only writes_checkpoints() writes (a network with split
  /// parameters saves on every process, since save gathers them: a
  /// collective), and agree_on_checkpoint follows every write.
  virtual bool spans_processes() const { return false; }
  /// Whether this process writes the checkpoints.
  virtual bool writes_checkpoints() const { return true; }
  /// After a checkpoint write (`failure`: its exception on the process that
  /// wrote, else null): every process learns the outcome, and all throw if
  /// it failed, so none goes on to wait for one that stopped. Default:
  /// rethrows `failure`.
  virtual void agree_on_checkpoint(const std::exception_ptr& failure, const std::string& /*path*/) {
    if (failure) std::rethrow_exception(failure);
  }
};

}  // namespace magmadnn::model

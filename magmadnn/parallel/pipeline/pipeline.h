/// @file pipeline.h
/// pipeline::Pipeline<T>: layer (pipeline) parallelism, the paper's third
/// kind (§4.1): a network's layers cut into consecutive stages, stage s on
/// rank s; each batch split into micro-batches whose activations go forward
/// and whose gradients go backward between neighbouring stages by
/// non-blocking point-to-point messages on the communicator, in the order
/// of a schedule (schedule.h: GPipe or 1F1B). Docs: docs/hybrid.md,
/// "Pipelines".
///
///   std::vector<pipeline::LayerFactory<float>> net = {
///       [](const op::Expr<float>& x) { return layer::fullyconnected<float>(x, 64).ptr(); },
///       [](const op::Expr<float>& x) { return layer::activation<float>(x, layer::RELU).ptr(); },
///       [](const op::Expr<float>& x) { return layer::fullyconnected<float>(x, 10).ptr(); }};
///   pipeline::PipelineOptions o;
///   o.micro_batches = 4;                               // 1F1B by default
///   pipeline::Pipeline<float> pipe(comm, net, {784}, std::make_shared<optimizer::GradientDescent<float>>(0.05), o);
///   double loss = pipe.train_step(x_batch, y_batch);   // every rank, the same batch
///
/// Requires: comm's ranks are the stages (size() == stages); every rank
/// builds the pipeline with the same factories, sample shape, optimizer
/// settings and options, and calls train_step with the same batches.
/// Building draws the one-process network's initial weights from the global
/// RNG (set_seed): every rank builds the whole network once, keeps its
/// stage's layers with those weights and drops the rest. In one process
/// (ThreadCommunicator) build the ranks' pipelines one after another, each
/// after the same set_seed, and only then start the threads.
///
/// Guarantees:
///  - the step's update is the one-process update on the whole batch: each
///    micro-batch's loss gradient is scaled by 1 / M and summed over the
///    micro-batches before the optimizer steps once (so a pipelined run
///    equals one process within float rounding; tests/distributed/pipeline/);
///  - BatchNorm normalises each micro-batch by its own statistics (as
///    PyTorch's Pipe does) and updates its running statistics once per
///    micro-batch: a network with BatchNorm does not equal one process
///    trained on whole batches;
///  - a stage whose partner does not answer within comm's timeout() throws
///    CommError naming itself, the step, the micro-batch, what it waited
///    for and from which stage (with the communicator's own message); a
///    stage that fails reports it (Communicator::report_failure), so the
///    others stop at once;
///  - a plan that cannot run is refused at construction (ValueError: more
///    stages than layers, stages != ranks, a bad cut) and a batch that the
///    micro-batches do not divide at train_step, before any message.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/data/samples.h"
#include "magmadnn/model/params.h"
#include "magmadnn/optimizer/optimizer_base.h"
#include "magmadnn/parallel/pipeline/schedule.h"
#include "magmadnn/parallel/pipeline/stage.h"

namespace magmadnn::distributed::pipeline {

/// What the planner balances when no cuts are given.
///  - parameters: each layer's trainable scalars plus one;
///  - flops: each layer's estimated forward floating-point operations per
///    sample, 2 x parameters x output positions (the output's elements per
///    channel: 1 for a dense layer, H x W for a convolution) plus the
///    output's elements (what an activation, pooling or sum touches);
///  - time: each layer's forward seconds on 16 random rows, measured by
///    stage 0 when the pipeline is made (the median of 3 runs after a
///    warm-up) and broadcast, so every stage cuts alike. A measurement, so
///    two runs may cut differently; any cut trains the same network.
enum class Balance { parameters, flops, time };
/// "parameters", "flops" or "time".
const char* balance_name(Balance b) noexcept;
/// The balance named `name`; ValueError naming the choices otherwise.
Balance parse_balance(const std::string& name);

struct PipelineOptions {
  int micro_batches = 1;
  Schedule schedule = Schedule::one_f_one_b;
  /// Each stage's first layer (cuts.h); empty: balanced_cuts over each
  /// layer's cost as `balance` estimates it.
  std::vector<int> first;
  Balance balance = Balance::parameters;
  /// With `first` empty: before which layers a stage may start (cuts.h
  /// cut_points; empty: before any).
  std::vector<bool> cut_points;
  optimizer::loss_t loss = optimizer::CROSS_ENTROPY;
  memory_t memory = MANAGED;
  /// Data parallelism over pipelines: this stage's ranks in every replica
  /// of the pipeline (replica r at rank r; null: one replica). Replica r
  /// trains rows [r N / R, (r + 1) N / R) of each batch; the stage's
  /// gradients are averaged over the replicas before the update, so the
  /// step is still the one-process step on the whole batch.
  std::shared_ptr<Communicator> replicas;
};

/// What one train_step did on this stage.
struct StepStats {
  int peak_in_flight = 0;             ///< most micro-batches between their forward and backward at once
  std::int64_t peak_stash_bytes = 0;  ///< most bytes of kept micro-batch inputs at once
  std::int64_t recomputes = 0;        ///< forwards run again before a backward
  double loss = 0;                    ///< the batch's mean loss (every rank)
  std::int64_t correct = 0;           ///< rows whose predicted class is right (every rank)
  double busy_s = 0;                  ///< seconds in this stage's forward and backward passes
  double wall_s = 0;                  ///< seconds from the first pass to the last message (no update)
};

/// The facts a plan needs about each layer, from one build of the network.
struct LayerFacts {
  std::vector<std::int64_t> out_sample;  ///< output shape without the batch axis
  std::int64_t params = 0;               ///< trainable scalars
  double flops = 0;                      ///< estimated forward operations per sample (Balance::flops)
  std::int64_t weights = 0;              ///< trainable tensors (Layer::get_weights)
  std::int64_t states = 0;               ///< state tensors (Layer::get_state)
};

template <typename T>
class Pipeline {
 public:
  using LayerPtr = std::shared_ptr<layer::Layer<T>>;
  /// See the file comment. `sample_shape`: the network's input without the batch axis.
  Pipeline(std::shared_ptr<Communicator> comm, const std::vector<LayerFactory<T>>& factories,
           std::vector<std::int64_t> sample_shape, std::shared_ptr<optimizer::Optimizer<T>> opt,
           PipelineOptions options);

  /// One training step on batch (x {N, sample...}, y {N, ...}); stage 0
  /// reads x, the last stage y, every stage N. Returns the batch's mean loss
  /// on every rank (a broadcast from the last stage, averaged over the
  /// replicas). ValueError, before any message, when the replicas do not
  /// divide N or the micro-batches a replica's rows.
  double train_step(const Tensor<T>& x, const Tensor<T>& y);

  /// Loss and accuracy over (x, y) in eval mode, `batch` rows at a time,
  /// each batch whole through the stages (no micro-batches); every rank
  /// passes the same data and gets the same result. `classes`: also the
  /// predicted class of every row, on every rank.
  model::Evaluation evaluate(const data::Samples<T>& x, const Tensor<T>& y, std::int64_t batch,
                             std::vector<std::int64_t>* classes = nullptr);

  int stage() const noexcept { return comm_->rank(); }
  /// The replicas of the pipeline (PipelineOptions::replicas) and this one.
  int replicas() const noexcept { return options_.replicas ? options_.replicas->size() : 1; }
  int replica() const noexcept { return options_.replicas ? options_.replicas->rank() : 0; }
  int stages() const noexcept { return comm_->size(); }
  /// Each stage's first layer, and every layer's facts.
  const std::vector<int>& first() const noexcept { return first_; }
  const std::vector<LayerFacts>& facts() const noexcept { return facts_; }
  Stage<T>& local() noexcept { return *stage_; }
  optimizer::Optimizer<T>& optimizer() noexcept { return *opt_; }
  distributed::Communicator& communicator() noexcept { return *comm_; }
  const StepStats& last_step() const noexcept { return stats_; }

 private:
  bool is_first() const noexcept { return stage() == 0; }
  bool is_last() const noexcept { return stage() == stages() - 1; }
  Tensor<T> receive(int source, int tag, std::int64_t rows, const std::vector<std::int64_t>& sample, const char* what,
                    std::int64_t index);
  void send(const Tensor<T>& t, int dest, int tag);
  void run_action(const Action& a, const Tensor<T>& x, const Tensor<T>& y, std::int64_t rows, double& loss_sum);
  void finish_sends();
  void count_correct(const Tensor<T>& labels);

  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<optimizer::Optimizer<T>> opt_;
  PipelineOptions options_;
  std::vector<int> first_;
  std::vector<LayerFacts> facts_;
  std::vector<std::int64_t> in_sample_, out_sample_;
  std::unique_ptr<Stage<T>> stage_;
  struct Pending {
    RequestPtr request;
    Tensor<T> data;
  };
  std::vector<Pending> sends_;
  StepStats stats_;
  std::int64_t steps_ = 0;
};

}  // namespace magmadnn::distributed::pipeline

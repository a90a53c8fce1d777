/// @file neural_network.h
/// model::NeuralNetwork<T>: a chain of layers with a loss and an optimizer,
/// trained by fit() and used by evaluate() / predict() (paper §2.4, slides
/// "Model"). T is float or double.
///
///   model::nn_params_t p{100, 10, 0.05};                 // batch, epochs, lr
///   model::NeuralNetwork<float> net(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, p);
///   model::metric_t m;
///   net.fit(x, y, m, true);                              // slides / v1 (also &x, &y)
///   auto hist = net.fit(x, y, opts);                     // modern: FitOptions, History
///   model::Evaluation e = net.evaluate(x_test, y_test);
///
/// Requires: the layers form a chain ending in the prediction; exactly one
/// placeholder (the InputLayer's, e.g. {-1, 784}) feeds the graph; x has the
/// samples on axis 0 and y is {N, ...} matching the prediction (one-hot rows
/// for classification). The network and the data live where their tensors
/// live (MANAGED by default: on the GPU when there is one).
///
/// Guarantees:
///  - every sample is used exactly once per epoch; the last partial batch
///    trains and evaluates like the others (the graph is not tied to a batch
///    size). Shuffling (nn_params_t::shuffle) uses an order that is a
///    function of (data seed, epoch) only, so a resumed run sees the same
///    order. The batch size (params().batch_size) may change between epochs,
///    e.g. by a BatchGrowth callback in on_epoch_begin; a cursor inside an
///    epoch continues only at the batch size it was trained in;
///  - epoch loss / accuracy are sample-weighted means over the epoch; with
///    CROSS_ENTROPY on a softmax output the loss is the fused, stable
///    softmax cross-entropy on the logits; on a sigmoid output it is v1's
///    cross-entropy of probabilities; on any other output (a FullyConnected
///    layer last) the output is taken as logits, as in PyTorch's
///    CrossEntropyLoss, and predict() returns those logits; accuracy compares argmax of the
///    prediction with argmax of y (a single output column: threshold 0.5);
///  - a training step is: forward + backward (the gradient-ready hooks),
///    the gradient hook (exactly once), the optimizer step (unless the
///    apply_update hook declines it), the after_update hook, then
///    on_batch_end callbacks. The hooks are the one place where gradients
///    and weights may be exchanged between ranks;
///  - once built, the network hands itself to its optimizer's attached_to()
///    (a distributed optimizer such as v1's DistMomentumSGD installs its
///    hooks there);
///  - a NaN or infinite loss stops fit with a ValueError naming the epoch and
///    batch (and the last checkpoint written or loaded, if any) before the
///    optimizer step, so the weights stay those of the last good step;
///  - save()/load() cover weights, layer state (BatchNorm statistics),
///    optimizer state and step count, the RNG state, the data cursor and the
///    history: fit after load continues bit-identically;
///  - load() validates the whole file and every tensor name and shape before
///    changing anything (IOError for a bad file, ShapeError naming a tensor
///    whose shape differs, ValueError for a missing tensor or another dtype,
///    for a weight, layer state or optimizer state that is not finite (naming
///    the tensor and element), for a data cursor outside the epoch it points
///    into, and for a history that is not one record per epoch done); fit
///    refuses a cursor past the batches of the data it is given;
///  - data-parallel training (FitOptions::shard) keeps these guarantees per
///    global batch; see DataShard for what changes with more than one rank.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "magmadnn/compute/gradients.h"
#include "magmadnn/compute/variable.h"
#include "magmadnn/layer/layer.h"
#include "magmadnn/model/callbacks.h"
#include "magmadnn/model/fit_options.h"
#include "magmadnn/model/params.h"
#include "magmadnn/optimizer/optimizer_base.h"

namespace magmadnn::data {
template <typename T>
class DataLoader;
}  // namespace magmadnn::data

namespace magmadnn::model {

template <typename T>
class NeuralNetwork {
 public:
  using LayerPtr = std::shared_ptr<layer::Layer<T>>;
  /// Called once per step between backward and the optimizer step with the
  /// trainable parameters and their gradients (same order). Modify the
  /// gradient tensors in place (e.g. average them across ranks).
  using GradientHook = std::function<void(const std::vector<op::Var<T>>& params, std::vector<Tensor<T>*>& grads)>;

  /// Per-parameter hooks: the seam for communication that overlaps the
  /// backward pass (a distributed strategy starts a non-blocking allreduce of
  /// each gradient as soon as it exists).
  ///  - `ready(i, param, grad)` is called once per parameter per step, with
  ///    its index in parameters(), the moment its gradient is final, in the
  ///    order the backward pass finishes gradients (reverse layer order),
  ///    while the rest of the pass is still to run. It may modify `grad` in
  ///    place, now or later until `finish` returns.
  ///  - `finish()` is called once per step after the backward pass and
  ///    before the optimizer step: it must complete whatever `ready` started.
  ///  - `apply_update()` (optional), asked once per step after `finish`:
  ///    whether this rank runs the optimizer step. Unset means yes. A
  ///    parameter server's workers answer no (the server updates and sends
  ///    the weights), as does a step that only accumulates gradients.
  ///  - `after_update()` (optional), called once per step after the
  ///    optimizer step (or where it would have run) and before the
  ///    on_batch_end callbacks: e.g. broadcast the weights a server just
  ///    computed, or average the weights every k steps. Setting only this
  ///    hook keeps plain SGD fused into the backward pass.
  ///  - `gradient_scale`: every gradient the hooks and the optimizer see
  ///    comes out of the backward pass multiplied by it, through the pass's
  ///    seed (free, compute_gradients' `seed`): a strategy that sums
  ///    gradients across ranks sets 1 / ranks, and the sum is the mean with
  ///    no division pass.
  /// The optimizer step then reads what the hooks left in the gradients.
  /// With `ready` or `finish` set, plain SGD keeps its gradients and a
  /// separate update (the update waits for `finish`); without them it stays
  /// fused into the backward pass. The loss is checked before the backward
  /// pass starts, so a NaN loss never reaches the hooks.
  struct GradientReadyHooks {
    std::function<void(std::size_t index, const op::Var<T>& param, Tensor<T>& grad)> ready;
    std::function<void()> finish;
    std::function<bool()> apply_update;
    std::function<void()> after_update;
    double gradient_scale = 1.0;
  };

  /// Where training stands: the 0-based epoch in progress (equal to the
  /// number of finished epochs when `batch` is 0) and the steps done in it.
  struct Cursor {
    unsigned int epoch = 0;
    std::int64_t batch = 0;
  };

  /// MagmaDNN v1: layers as raw pointers (from layer::Ref conversions); the
  /// model takes shared ownership. The optimizer is chosen by name and built
  /// from `params` (learning_rate, momentum, nesterov, betas, epsilon,
  /// decaying_factor, weight_decay).
  NeuralNetwork(std::vector<layer::Layer<T>*> layers, optimizer::loss_t loss, optimizer::optimizer_t opt,
                nn_params_t params);
  /// MagmaDNN v1: a caller-owned optimizer, which must outlive the model.
  NeuralNetwork(std::vector<layer::Layer<T>*> layers, optimizer::loss_t loss, optimizer::Optimizer<T>* opt,
                nn_params_t params);
  NeuralNetwork(std::vector<LayerPtr> layers, optimizer::loss_t loss, optimizer::optimizer_t opt,
                nn_params_t params);
  NeuralNetwork(std::vector<LayerPtr> layers, optimizer::loss_t loss, std::shared_ptr<optimizer::Optimizer<T>> opt,
                nn_params_t params);
  NeuralNetwork(const NeuralNetwork&) = delete;
  NeuralNetwork& operator=(const NeuralNetwork&) = delete;
  NeuralNetwork(NeuralNetwork&&) = default;  ///< not during fit
  NeuralNetwork& operator=(NeuralNetwork&&) = default;
  ~NeuralNetwork();

  // -- training ------------------------------------------------------------------
  /// Trains on (x, y); returns the whole history (also history()).
  /// x may be held at source precision (data::Samples, e.g. uint8 images):
  /// each batch is promoted to T as it is fed; a Tensor<T> converts to one.
  History fit(const data::Samples<T>& x, const Tensor<T>& y, const FitOptions<T>& options = {});
  /// Slides: fit(x, y, metrics, verbose). Fills `metric_out` from the last epoch.
  magmadnn_error_t fit(const Tensor<T>& x, const Tensor<T>& y, metric_t& metric_out, bool verbose = false);
  /// MagmaDNN v1: fit(&x, &y, metrics, verbose).
  magmadnn_error_t fit(Tensor<T>* x, Tensor<T>* y, metric_t& metric_out, bool verbose = false);
  /// FitOptions and a metric_t summary.
  History fit(const Tensor<T>& x, const Tensor<T>& y, metric_t& metric_out, const FitOptions<T>& options);

  /// Asks a running fit to stop after the current batch (callbacks use it).
  void stop_training() noexcept { stop_ = true; }
  /// Replaces the gradient hook (an empty function removes it).
  void set_gradient_hook(GradientHook hook) { hook_ = std::move(hook); }
  /// Replaces the per-parameter hooks (empty functions remove them).
  void set_gradient_ready_hooks(GradientReadyHooks hooks) { ready_hooks_ = std::move(hooks); }

  // -- inference ------------------------------------------------------------------
  /// Loss and accuracy over (x, y), in eval mode, batch by batch.
  Evaluation evaluate(const data::Samples<T>& x, const Tensor<T>& y);
  /// The predictions {N, ...} for x {N, ...}, in eval mode, batch by batch
  /// (softmax probabilities when the network ends in a softmax).
  Tensor<T> predict(const data::Samples<T>& x);
  /// MagmaDNN v1: the prediction for one sample (without the batch axis, e.g.
  /// {28, 28} for a {-1, 28, 28} input) or a batch; the result is owned by
  /// the model and valid until the next call.
  Tensor<T>* predict(Tensor<T>* sample);
  /// MagmaDNN v1: the class (argmax) of ONE sample, with or without a batch axis of 1.
  unsigned int predict_class(Tensor<T>* sample);
  unsigned int predict_class(const Tensor<T>& sample);
  /// The class of every row of x {N, ...}.
  std::vector<std::int64_t> predict_classes(const data::Samples<T>& x);

  // -- checkpoints ------------------------------------------------------------------
  /// Writes the full training state atomically (format: docs/checkpoint_format.md).
  /// A network with layers split over a model-parallel group (Layer::sharding)
  /// writes every split parameter and its optimizer slots whole, under the
  /// names the one-process network of the same layers uses, so the file is
  /// that network's checkpoint: then save() is a collective (every rank of
  /// the group calls it, the gathers run in parameter order) and only the
  /// group's rank 0 writes the file.
  void save(const std::string& path);
  /// Restores what save() wrote (see the guarantees in the file comment).
  /// A split layer's parameters are read whole, checked against the whole
  /// layer's shapes, and this rank keeps its part: a checkpoint of a
  /// network split over P ranks loads split over any number of ranks, or
  /// into the one-process network, and the other way round. Local (every
  /// rank reads the file).
  void load(const std::string& path);
  /// Whether some parameter is split over a model-parallel group (then
  /// save() is a collective, see above).
  bool has_split_parameters() const noexcept;
  /// A header entry every later checkpoint of this network carries (save()
  /// and fit's periodic checkpoints), e.g. what rebuilds it; load() ignores it.
  void set_checkpoint_entry(const std::string& key, const std::string& value) { checkpoint_entries_[key] = value; }

  // -- inspection ------------------------------------------------------------------
  const std::vector<op::Var<T>>& parameters() const noexcept { return params_; }
  const std::vector<LayerPtr>& layers() const noexcept { return layers_; }
  optimizer::Optimizer<T>& optimizer() noexcept { return *opt_; }
  const History& history() const noexcept { return history_; }
  nn_params_t& params() noexcept { return nn_params_; }
  Cursor cursor() const noexcept { return {epoch_, batch_}; }
  /// Number of trainable scalars.
  std::int64_t num_params() const;
  /// A table: layer name (type), output shape, parameter count; then totals.
  std::string summary() const;
  /// The prediction node (after graph passes) and the training loss node.
  op::Expr<T> output() const { return out_; }
  op::Expr<T> loss() const { return loss_; }
  /// The placeholder batches are written into.
  op::Var<T> input() const { return x_ph_; }

 private:
  void build(optimizer::loss_t loss);
  void make_optimizer(optimizer::optimizer_t kind);
  void set_mode(bool training);
  void feed(const data::Samples<T>& x, const Tensor<T>& y, const std::int64_t* rows, std::int64_t begin,
            std::int64_t n);
  std::int64_t count_correct(const Tensor<T>& pred, const Tensor<T>& y) const;
  double read_loss() const;
  void check_data(const data::Samples<T>& x, const Tensor<T>* y, const char* what) const;
  Evaluation evaluate_batches(const data::Samples<T>& x, const Tensor<T>& y);
  void train_step(double& batch_loss, std::int64_t& correct);
  void serve_step();
  void checkpoint_across_ranks();
  void save_across_ranks();
  void agree_on_shard_checkpoint(const std::exception_ptr& failure);
  bool train_batches(const data::Samples<T>& x, const Tensor<T>& y, data::DataLoader<T>& loader, bool inline_batches,
                     std::vector<std::shared_ptr<Callback<T>>>& callbacks);
  EpochRecord close_epoch(const data::Samples<T>* validation_x, const Tensor<T>* validation_y);
  void write_checkpoint(const std::string& path, std::int64_t data_size);
  struct ParamSplit;
  const ParamSplit* split_of(std::size_t param, const Tensor<T>& t, const std::string& key) const;

  std::vector<LayerPtr> layers_;
  optimizer::loss_t loss_kind_;
  std::string optimizer_name_ = "custom";
  std::map<std::string, std::string> checkpoint_entries_;  // set_checkpoint_entry
  nn_params_t nn_params_;
  std::shared_ptr<optimizer::Optimizer<T>> opt_;

  op::Var<T> x_ph_, y_ph_;
  op::Expr<T> out_;    // prediction (after fusion)
  op::Expr<T> score_;  // what accuracy reads: the logits under a fused softmax, else out_
  op::Expr<T> loss_;
  std::vector<op::Var<T>> params_;
  std::vector<op::Expr<T>> param_exprs_;
  std::vector<std::string> param_names_;  // "<layer>/<key>", unique: checkpoint names
  // Per parameter: how its layer holds it when split over a group (no
  // group: whole on this rank). Checkpoints gather and cut by it.
  struct ParamSplit {
    std::shared_ptr<layer::WeightGroup> group;
    layer::WeightSplit weight;
  };
  std::vector<ParamSplit> splits_;
  std::vector<Tensor<T>*> grad_ptrs_;
  std::vector<std::pair<std::string, Tensor<T>*>> state_;  // layer state for checkpoints
  GradientHook hook_;
  GradientReadyHooks ready_hooks_;
  optimizer::LossScaler* scaler_ = nullptr;  // fit's options.loss_scaler, during fit
  bool training_mode_ = true;

  History history_;
  unsigned int epoch_ = 0;
  std::int64_t batch_ = 0;
  std::uint64_t data_seed_ = 0;
  bool data_seed_set_ = false;
  // Sums over the epoch in progress (in checkpoints, so a resumed epoch's
  // record equals an uninterrupted one's).
  struct EpochTotals {
    double loss = 0.0;  // sum of batch mean loss x batch size
    std::int64_t correct = 0;
    std::int64_t samples = 0;
    double seconds = 0.0;
  };
  EpochTotals partial_;
  std::int64_t data_size_ = -1;  // training set size of the cursor (for resume checks)
  std::int64_t cursor_batch_size_ = 0;  // batch size the cursor's batches were trained in (0: none yet)
  std::string last_checkpoint_;
  bool stop_ = false;
  DataShard shard_;       // fit's options.shard, for the epoch in progress
  std::string shard_checkpoint_path_;  // checkpoints across ranks (rank 0 writes)
  std::int64_t shard_checkpoint_every_ = 0;
  unsigned int shard_checkpoint_every_epochs_ = 0;  // epoch-end checkpoints across ranks (rank 0 writes)
  double grad_scale_ = 1.0;  // this step's factor for hooked gradients (DataShard)

  Tensor<T> bx_, by_;       // batch staging buffers (reused)
  Tensor<T> predict_out_;   // v1 predict(Tensor*) result
};

}  // namespace magmadnn::model

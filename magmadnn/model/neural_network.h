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
///  - a training step is: forward + backward, the optimizer step, then
///    on_batch_end callbacks, with the training plugin's calls between them
///    (model/training_plugin.h: the one place where gradients and weights
///    may be exchanged with other processes, and where the rows a process
///    trains are chosen);
///  - once built, the network hands itself to its optimizer's attached_to()
///    (a distributed optimizer such as v1's DistMomentumSGD attaches its
///    strategy there);
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
///  - training spread over processes by a plugin (parallel/sharded_training.h)
///    keeps these guarantees per global batch.
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
#include "magmadnn/model/training_plugin.h"
#include "magmadnn/optimizer/optimizer_base.h"

namespace magmadnn::data {
template <typename T>
class DataLoader;
template <typename T>
struct Batch;
}  // namespace magmadnn::data

namespace magmadnn::model {

template <typename T>
class NeuralNetwork {
 public:
  using LayerPtr = std::shared_ptr<layer::Layer<T>>;
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
  /// Installs the plugin fit calls at its fixed points (model/training_plugin.h),
  /// replacing any other; null removes it. Not owned: it must outlive every
  /// fit of this network. Usually called by TrainingPlugin::attach.
  void set_training_plugin(TrainingPlugin<T>* plugin) noexcept { plugin_ = plugin; }
  TrainingPlugin<T>* training_plugin() const noexcept { return plugin_; }

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
  /// For code that trains this network's layers by other means (a
  /// pipeline, parallel/pipeline/whole_network.h) and copies the weights
  /// and optimizer state in: records `history` and the cursor at the start
  /// of epoch history.size() + 1 over `data_size` samples, as fit leaves
  /// them after those epochs, so that save() writes the checkpoint fit would.
  void set_progress(History history, std::int64_t data_size);
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
  TrainingPlugin<T>& plugin() const noexcept;
  void train_step(double& batch_loss, std::int64_t& correct, double gradient_scale);
  void step_without_data();
  void feed_batch(const data::Samples<T>& x, const Tensor<T>& y, data::DataLoader<T>& loader, data::Batch<T>& batch,
                  bool inline_batches, const std::int64_t* rows, std::int64_t m,
                  const typename TrainingPlugin<T>::Part& part);
  void checkpoint_mid_epoch_shared();
  void save_shared();
  void check_fit_options(const FitOptions<T>& options) const;
  std::vector<std::shared_ptr<Callback<T>>> fit_callbacks(const FitOptions<T>& options);
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
  TrainingPlugin<T>* plugin_ = nullptr;  // set_training_plugin; null: train alone on all data
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
  std::string shared_checkpoint_path_;  // checkpoints fit places itself (a plugin spanning processes)
  std::int64_t shared_checkpoint_every_ = 0;
  unsigned int shared_checkpoint_every_epochs_ = 0;

  Tensor<T> bx_, by_;       // batch staging buffers (reused)
  Tensor<T> predict_out_;   // v1 predict(Tensor*) result
};

template <typename T>
void TrainingPlugin<T>::attach(NeuralNetwork<T>& net) {
  net.set_training_plugin(this);
}

}  // namespace magmadnn::model

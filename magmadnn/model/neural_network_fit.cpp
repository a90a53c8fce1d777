// NeuralNetwork::fit: the training loop. It knows no ranks: the training
// plugin (model/training_plugin.h) says which rows of a batch this process
// trains and does everything that involves other processes.
//   loader order -> the plugin's part -> feed -> forward -> NaN check ->
//   backward (gradient_ready as gradients become final) -> backward_finished
//   -> loss scaler's unscale (when fit has one) -> optimizer step (unless the
//   scaler found an inf or NaN, or apply_update says no) -> after_update ->
//   callbacks (checkpoints are the first callback);
// or, for plain SGD whose gradients no one keeps: feed -> forward -> NaN
// check -> backward with the update folded in -> after_update -> callbacks.
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/compute/profiler.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/data/dataloader.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/model/network_detail.h"

namespace magmadnn::model {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The plugin's part of `rows` rows, refused when it is not a range of them.
template <typename T>
typename TrainingPlugin<T>::Part checked_part(const TrainingPlugin<T>& p, std::int64_t rows) {
  const auto part = p.part(rows);
  MAGMADNN_CHECK(part.begin >= 0 && part.count >= 0 && part.begin + part.count <= rows, ValueError,
                 "NeuralNetwork::fit: the training plugin's part of a batch of "
                     << rows << " rows is [" << part.begin << ", " << part.begin + part.count << ")");
  return part;
}
}  // namespace

template <typename T>
TrainingPlugin<T>& NeuralNetwork<T>::plugin() const noexcept {
  // Every default: one process training on all of its data. Stateless, so
  // one instance serves every network.
  static TrainingPlugin<T> alone;
  return plugin_ != nullptr ? *plugin_ : alone;
}

template <typename T>
void NeuralNetwork<T>::train_step(double& batch_loss, std::int64_t& correct, double gradient_scale) {
  // The forward pass and the loss check come first, so a NaN loss leaves the
  // parameters untouched and never reaches the plugin.
  loss_->eval();
  {
    std::optional<op::Profiler::Scope> scope;
    if (op::Profiler::enabled()) {
      scope.emplace("step", "loss+accuracy", "", op::detail::device_sync_of(score_->output()));
    }
    batch_loss = read_loss();
    if (!std::isfinite(batch_loss)) {
      MAGMADNN_THROW(ValueError, "NeuralNetwork::fit: the loss is "
                                     << batch_loss << " at epoch " << epoch_ + 1 << ", batch " << batch_ + 1
                                     << (last_checkpoint_.empty() ? std::string("; no checkpoint was written")
                                                                  : "; last good checkpoint: " + last_checkpoint_));
    }
    correct = count_correct(score_->output(), y_ph_->output());
  }
  TrainingPlugin<T>& p = plugin();
  // Plain SGD whose gradients no one asks for updates inside the backward
  // pass (no gradient buffers, no update pass).
  if (const auto fused = scaler_ || p.wants_gradients() ? std::nullopt : opt_->in_place_update()) {
    op::backward_update<T>(loss_, param_exprs_, *fused, op::ForwardValues::Release);
    opt_->count_in_place_step();
    p.after_update();
    return;
  }
  // The plugin's factor and the loss scale multiply the backward pass's
  // seed, so no pass over the gradients is spent on them (scaling the loss
  // itself would change the value reported and checked).
  const T seed = static_cast<T>(gradient_scale * (scaler_ ? scaler_->scale() : 1.0));
  op::GradientReady<T> ready;
  if (p.wants_gradients()) ready = [this, &p](std::size_t i, Tensor<T>& g) { p.gradient_ready(i, params_[i], g); };
  // Each activation is freed once backward has read it for the last time
  // (the loss and accuracy were read above): the step's peak memory is the
  // activations or the gradients, not both.
  op::GradTable<T> grads = op::compute_gradients(loss_, param_exprs_, ready, seed, op::ForwardValues::Release);
  for (std::size_t i = 0; i < params_.size(); ++i) grad_ptrs_[i] = grads.get(param_exprs_[i]);
  p.backward_finished(grad_ptrs_);
  // Loss scaling: the gradients are unscaled after the plugin, which across
  // processes has summed them, so an inf on any process reaches every one
  // and all skip the same step.
  const bool finite =
      !scaler_ ||
      scaler_->unscale(grad_ptrs_, opt_->step_count() + static_cast<std::int64_t>(scaler_->skips().size()) + 1);
  if (finite && p.apply_update()) opt_->step(param_exprs_, grads);
  p.after_update();
}

// A step of a part that trains on no data (a parameter server): no forward
// or backward pass; the plugin serves the others.
template <typename T>
void NeuralNetwork<T>::step_without_data() {
  const std::vector<Tensor<T>*> none;
  plugin().backward_finished(none);
  plugin().after_update();
}

// Feeds this process's part of batch batch_ (m rows) to the placeholders. An
// empty part trains on the batch's first row with weight 0, so the process
// still takes part in every exchange of the step.
template <typename T>
void NeuralNetwork<T>::feed_batch(const data::Samples<T>& x, const Tensor<T>& y, data::DataLoader<T>& loader,
                                  data::Batch<T>& batch, bool inline_batches, const std::int64_t* rows,
                                  std::int64_t m, const typename TrainingPlugin<T>::Part& part) {
  const std::int64_t first = part.count > 0 ? part.begin : 0, fed = std::max<std::int64_t>(part.count, 1);
  if (!inline_batches) {  // a part that does not train keeps the loader's order all the same
    MAGMADNN_CHECK(loader.next(batch) && batch.index == batch_ && batch.size == m, ValueError,
                   "NeuralNetwork::fit: the data loader did not deliver batch " << batch_ << " of "
                                                                                << loader.num_batches());
  }
  if (!part.trains) return;
  if (inline_batches) {
    std::optional<op::Profiler::Scope> scope;
    if (op::Profiler::enabled()) scope.emplace("step", "feed batch", "", op::detail::device_sync_of(y));
    feed(x, y, rows, batch_ * nn_params_.batch_size + first, fed);
  } else if (part.begin != 0 || part.count != m) {
    feed(batch.x, batch.y, nullptr, first, fed);
  } else {
    x_ph_->set_value(batch.x);
    y_ph_->set_value(batch.y);
  }
}

// A mid-epoch checkpoint of a run spanning processes: the epoch's sums so
// far become the run's, the writer saves them, and every process goes on
// with its own.
template <typename T>
void NeuralNetwork<T>::checkpoint_mid_epoch_shared() {
  TrainingPlugin<T>& p = plugin();
  std::vector<double> sums = {partial_.loss, static_cast<double>(partial_.correct),
                              static_cast<double>(partial_.samples)};
  if (p.sums_are_partial()) p.sum_metrics(sums);
  MAGMADNN_CHECK(sums.size() == 3, ValueError, "TrainingPlugin::sum_metrics changed the length of its values");
  const EpochTotals own = partial_;
  if (p.writes_checkpoints()) {
    partial_.loss = sums[0];
    partial_.correct = std::llround(sums[1]);
    partial_.samples = std::llround(sums[2]);
  }
  try {
    save_shared();
  } catch (...) {
    partial_ = own;
    throw;
  }
  partial_ = own;
}

// A checkpoint of a run spanning processes: the writer writes (a network
// with split parameters saves everywhere, since save() gathers them whole:
// a collective), then every process learns how it went.
template <typename T>
void NeuralNetwork<T>::save_shared() {
  TrainingPlugin<T>& p = plugin();
  std::exception_ptr failure;
  if (p.writes_checkpoints() || has_split_parameters()) {
    try {
      save(shared_checkpoint_path_);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  p.agree_on_checkpoint(failure, shared_checkpoint_path_);
}

// The batches of the epoch in progress, from the cursor on. False when a
// callback stopped training inside the epoch (the cursor then stays there).
template <typename T>
bool NeuralNetwork<T>::train_batches(const data::Samples<T>& x, const Tensor<T>& y, data::DataLoader<T>& loader,
                                     bool inline_batches, std::vector<std::shared_ptr<Callback<T>>>& callbacks) {
  const std::int64_t n = x.shape()[0], bs = nn_params_.batch_size, nb = loader.num_batches();
  cursor_batch_size_ = bs;
  std::vector<std::int64_t> order;
  const std::int64_t* rows = nullptr;
  if (inline_batches && nn_params_.shuffle) {
    order = loader.epoch_order(epoch_);
    rows = order.data();
  }
  if (!inline_batches) loader.start_epoch(epoch_, batch_);
  data::Batch<T> batch;
  const auto t0 = Clock::now();
  const double seconds_before = partial_.seconds;
  BatchLogs logs;
  logs.epoch = epoch_ + 1;
  logs.batches = nb;
  while (batch_ < nb) {
    const std::int64_t m = std::min(bs, n - batch_ * bs);
    const auto part = checked_part(plugin(), m);
    feed_batch(x, y, loader, batch, inline_batches, rows, m, part);
    double l = 0.0;
    std::int64_t c = 0;
    if (part.trains) {
      train_step(l, c, part.gradient_scale);
    } else {
      step_without_data();
    }
    if (part.count == 0) c = 0;
    partial_.loss += l * static_cast<double>(part.count);
    partial_.correct += c;
    partial_.samples += part.count;
    partial_.seconds = seconds_before + seconds_since(t0);
    ++batch_;
    logs.batch = batch_ - 1;
    logs.size = part.count;
    logs.loss = l;
    logs.samples_done = partial_.samples;
    const double done = partial_.samples > 0 ? static_cast<double>(partial_.samples) : 1.0;
    logs.epoch_loss = partial_.loss / done;
    logs.epoch_accuracy = static_cast<double>(partial_.correct) / done;
    logs.seconds = partial_.seconds;
    // Before the callbacks, as a Checkpointer would be (the first of them).
    if (shared_checkpoint_every_ > 0 && batch_ < nb && batch_ % shared_checkpoint_every_ == 0) {
      checkpoint_mid_epoch_shared();
    }
    for (auto& cb : callbacks) cb->on_batch_end(*this, logs);
    if (stop_) return batch_ == nb;
  }
  return true;
}

// The finished epoch's record (validation included); moves the cursor on.
template <typename T>
EpochRecord NeuralNetwork<T>::close_epoch(const data::Samples<T>* validation_x, const Tensor<T>* validation_y) {
  TrainingPlugin<T>& p = plugin();
  p.epoch_end();
  std::optional<Evaluation> v;
  if (validation_x != nullptr) {
    const op::Profiler::Pause not_training;  // a profile of fit is a profile of training steps
    const auto part = checked_part(p, validation_x->rows());
    if (part.trains && part.begin == 0 && part.count == validation_x->rows()) {
      v = evaluate_batches(*validation_x, *validation_y);
    } else {
      const std::int64_t end = part.begin + part.count;
      v = part.trains && part.count > 0
              ? evaluate_batches(validation_x->slice(part.begin, end), validation_y->slice(part.begin, end))
              : Evaluation{};
    }
  }
  if (p.sums_are_partial()) {
    // One exchange per epoch: the training sums and the validation's.
    const double vn = v ? static_cast<double>(v->samples) : 0.0;
    std::vector<double> sums = {partial_.loss, static_cast<double>(partial_.correct),
                                static_cast<double>(partial_.samples), v ? v->loss * vn : 0.0,
                                v ? v->accuracy * vn : 0.0, vn};
    p.sum_metrics(sums);
    MAGMADNN_CHECK(sums.size() == 6, ValueError, "TrainingPlugin::sum_metrics changed the length of its values");
    partial_.loss = sums[0];
    partial_.correct = std::llround(sums[1]);
    partial_.samples = std::llround(sums[2]);
    if (v) {
      v->samples = std::llround(sums[5]);
      v->loss = v->samples > 0 ? sums[3] / sums[5] : 0.0;
      v->accuracy = v->samples > 0 ? std::round(sums[4]) / sums[5] : 0.0;
    }
  }
  EpochRecord r;
  r.epoch = epoch_ + 1;
  r.train_loss = partial_.loss / static_cast<double>(partial_.samples);
  r.train_accuracy = static_cast<double>(partial_.correct) / static_cast<double>(partial_.samples);
  r.seconds = partial_.seconds;
  r.samples_per_second = r.seconds > 0.0 ? static_cast<double>(partial_.samples) / r.seconds : 0.0;
  r.learning_rate = opt_->learning_rate();
  if (v) {
    r.val_loss = v->loss;
    r.val_accuracy = v->accuracy;
  }
  ++epoch_;
  batch_ = 0;
  partial_ = {};
  history_.push_back(r);
  return r;
}

template <typename T>
void NeuralNetwork<T>::check_fit_options(const FitOptions<T>& options) const {
  MAGMADNN_CHECK(options.loader_workers >= 0, ValueError,
                 "NeuralNetwork::fit: loader_workers = " << options.loader_workers << " must be >= 0");
  MAGMADNN_CHECK(options.checkpoint_every_batches >= 0, ValueError,
                 "NeuralNetwork::fit: checkpoint_every_batches " << options.checkpoint_every_batches << " is negative");
  MAGMADNN_CHECK(options.checkpoint_path.empty() == false ||
                     (options.checkpoint_every_epochs == 0 && options.checkpoint_every_batches == 0 && !options.resume),
                 ValueError, "NeuralNetwork::fit: checkpoint options need a checkpoint_path");
}

// fit's callbacks, checkpoints first: the others of a batch or epoch find
// its checkpoint written. A plugin spanning processes has fit place the
// checkpoints itself (every process takes part: mid-epoch ones hold the
// run's sums, a split network gathers its parameters whole, and every
// process learns whether the write failed), so no Checkpointer then.
template <typename T>
std::vector<std::shared_ptr<Callback<T>>> NeuralNetwork<T>::fit_callbacks(const FitOptions<T>& options) {
  const bool shared = plugin().spans_processes();
  shared_checkpoint_path_ = shared ? options.checkpoint_path : std::string();
  shared_checkpoint_every_ = shared ? options.checkpoint_every_batches : 0;
  shared_checkpoint_every_epochs_ = shared ? options.checkpoint_every_epochs : 0;
  std::vector<std::shared_ptr<Callback<T>>> callbacks;
  if (!shared && (options.checkpoint_every_epochs > 0 || options.checkpoint_every_batches > 0)) {
    callbacks.push_back(std::make_shared<Checkpointer<T>>(options.checkpoint_path, options.checkpoint_every_epochs,
                                                          options.checkpoint_every_batches));
  }
  callbacks.insert(callbacks.end(), options.callbacks.begin(), options.callbacks.end());
  if (options.verbose) callbacks.push_back(std::make_shared<ProgressBar<T>>());
  return callbacks;
}

template <typename T>
History NeuralNetwork<T>::fit(const data::Samples<T>& x_in, const Tensor<T>& y_in, const FitOptions<T>& options) {
  check_data(x_in, &y_in, "fit");
  MAGMADNN_CHECK(options.validation_x == nullptr || options.validation_samples == nullptr, ValueError,
                 "NeuralNetwork::fit: give validation_x or validation_samples, not both");
  const std::optional<data::Samples<T>> validation_tensor =
      options.validation_x ? std::optional<data::Samples<T>>(*options.validation_x) : std::nullopt;
  const data::Samples<T>* validation_x = validation_tensor ? &*validation_tensor : options.validation_samples;
  MAGMADNN_CHECK((validation_x == nullptr) == (options.validation_y == nullptr), ValueError,
                 "NeuralNetwork::fit: give both validation_x (or validation_samples) and validation_y, or neither");
  if (validation_x != nullptr) check_data(*validation_x, options.validation_y, "fit (validation)");
  check_fit_options(options);

  // Batches are gathered on the host; device-only data is staged there once.
  const bool stage = x_in.get_memory_type() == DEVICE || y_in.get_memory_type() == DEVICE;
  const data::Samples<T> x =
      x_in.get_memory_type() == DEVICE ? data::Samples<T>(x_in.tensor().to(HOST)) : x_in;
  Tensor<T> ys = stage ? y_in.to(HOST) : Tensor<T>();
  const Tensor<T>& y = stage ? ys : y_in;
  const std::int64_t n = x.rows();

  if (options.resume && std::filesystem::exists(options.checkpoint_path)) load(options.checkpoint_path);
  // An epoch in progress (a mid-epoch checkpoint loaded by every process)
  // holds the run's sums so far: they count once, where the writer is.
  if (plugin().sums_are_partial() && !plugin().writes_checkpoints()) partial_ = {};
  MAGMADNN_CHECK(batch_ == 0 || data_size_ == n, ValueError,
                 "NeuralNetwork::fit: the model stands in the middle of an epoch over " << data_size_
                                                                                       << " samples, but x has " << n);

  const unsigned int epochs = options.epochs != 0 ? options.epochs : nn_params_.n_epochs;
  const unsigned int end_epoch = options.resume ? epochs : epoch_ + epochs;
  // The loader serves batches of nn_params_.batch_size. A callback may change
  // that size between epochs (BatchGrowth): the loader is then rebuilt at the
  // start of the epoch. The epoch order depends on (seed, epoch) alone, so an
  // epoch's samples and their order stay the same; only the grouping changes.
  std::optional<data::DataLoader<T>> loader;
  auto build_loader = [&](std::int64_t batch_size) {
    data::LoaderOptions lo;
    lo.batch_size = batch_size;
    lo.shuffle = nn_params_.shuffle;
    lo.workers = options.loader_workers;
    lo.seed = data_seed_;  // never 0: a 0 would make the loader draw a seed of its own
    loader.reset();        // its worker threads end before the next loader's start
    loader.emplace(x, y, lo, options.augment);
  };
  auto check_cursor = [&] {
    MAGMADNN_CHECK(batch_ == 0 || batch_ < loader->num_batches(), ValueError,
                   "NeuralNetwork::fit: the model stands at batch " << batch_ << " of epoch " << epoch_ + 1
                       << ", but an epoch over these " << n << " samples has " << loader->num_batches()
                       << " batches");
  };
  // A cursor inside an epoch counts batches of the size they were trained
  // with (after a resume, the checkpoint's), whatever the size is now.
  const bool mid_epoch_size = batch_ > 0 && cursor_batch_size_ > 0;
  build_loader(mid_epoch_size ? cursor_batch_size_ : static_cast<std::int64_t>(nn_params_.batch_size));
  check_cursor();
  // Called once an epoch's on_epoch_begin callbacks have set its batch size.
  auto prepare_epoch = [&] {
    const auto bs = static_cast<std::int64_t>(nn_params_.batch_size);
    MAGMADNN_CHECK(bs > 0, ValueError, "NeuralNetwork::fit: batch_size is 0");
    MAGMADNN_CHECK(batch_ == 0 || cursor_batch_size_ == 0 || cursor_batch_size_ == bs, ValueError,
                   "NeuralNetwork::fit: the model stands at batch " << batch_ << " of epoch " << epoch_ + 1
                       << " in batches of " << cursor_batch_size_ << ", but the batch size is now " << bs);
    if (loader->options().batch_size != bs) build_loader(bs);
    check_cursor();
  };
  // Inline gathering straight into the placeholders (no per-step allocation)
  // unless background workers or augmentation are asked for.
  const bool inline_batches = options.loader_workers == 0 && options.augment.empty();

  std::vector<std::shared_ptr<Callback<T>>> callbacks = fit_callbacks(options);
  TrainInfo info;
  info.first_epoch = epoch_ + 1;
  info.last_epoch = std::max(end_epoch, epoch_);
  info.samples = n;
  info.batches_per_epoch = loader->num_batches();
  info.batch_size = nn_params_.batch_size;
  info.has_validation = validation_x != nullptr;

  stop_ = false;
  data_size_ = n;
  scaler_ = options.loss_scaler.get();
  struct ClearScaler {  // fit's options do not outlive it
    optimizer::LossScaler*& s;
    ~ClearScaler() { s = nullptr; }
  } clear_scaler{scaler_};
  set_mode(true);
  for (auto& cb : callbacks) cb->on_train_begin(*this, info);
  while (epoch_ < end_epoch && !stop_) {
    if (batch_ == 0) partial_ = {};
    for (auto& cb : callbacks) cb->on_epoch_begin(*this, epoch_ + 1);
    if (!training_mode_) set_mode(true);
    prepare_epoch();
    if (!train_batches(x, y, *loader, inline_batches, callbacks)) break;
    const EpochRecord r = close_epoch(validation_x, options.validation_y);
    // Before the callbacks, as a Checkpointer would be (the first of them).
    if (shared_checkpoint_every_epochs_ > 0 && r.epoch % shared_checkpoint_every_epochs_ == 0) save_shared();
    for (auto& cb : callbacks) cb->on_epoch_end(*this, r);
  }
  for (auto& cb : callbacks) cb->on_train_end(*this, history_);
  return history_;
}

template <typename T>
History NeuralNetwork<T>::fit(const Tensor<T>& x, const Tensor<T>& y, metric_t& metric_out,
                              const FitOptions<T>& options) {
  const auto t0 = Clock::now();
  const std::size_t before = history_.size();
  fit(x, y, options);
  metric_out.training_time = seconds_since(t0);
  metric_out.epochs = static_cast<unsigned int>(history_.size() - before);
  if (!history_.empty()) {
    const EpochRecord& last = history_.back();
    metric_out.loss = last.train_loss;
    metric_out.accuracy = last.train_accuracy;
    double seconds = 0.0;
    for (std::size_t i = before; i < history_.size(); ++i) seconds += history_[i].seconds;
    metric_out.samples_per_second =
        seconds > 0.0 ? static_cast<double>(metric_out.epochs) * static_cast<double>(x.shape()[0]) / seconds : 0.0;
  }
  return history_;
}

template <typename T>
magmadnn_error_t NeuralNetwork<T>::fit(const Tensor<T>& x, const Tensor<T>& y, metric_t& metric_out, bool verbose) {
  FitOptions<T> o;
  o.verbose = verbose;
  fit(x, y, metric_out, o);
  return 0;
}

template <typename T>
magmadnn_error_t NeuralNetwork<T>::fit(Tensor<T>* x, Tensor<T>* y, metric_t& metric_out, bool verbose) {
  MAGMADNN_CHECK(x != nullptr && y != nullptr, ValueError, "NeuralNetwork::fit: null data pointer");
  return fit(*x, *y, metric_out, verbose);
}

// The rest of NeuralNetwork is instantiated in neural_network.cpp.
#define MAGMADNN_FIT_INSTANTIATE(T)                                                                  \
  template TrainingPlugin<T>& NeuralNetwork<T>::plugin() const noexcept;                            \
  template void NeuralNetwork<T>::train_step(double&, std::int64_t&, double);                        \
  template void NeuralNetwork<T>::step_without_data();                                               \
  template void NeuralNetwork<T>::checkpoint_mid_epoch_shared();                                     \
  template void NeuralNetwork<T>::save_shared();                                                     \
  template bool NeuralNetwork<T>::train_batches(const data::Samples<T>&, const Tensor<T>&, data::DataLoader<T>&, \
                                                bool,                                                \
                                                std::vector<std::shared_ptr<Callback<T>>>&);         \
  template EpochRecord NeuralNetwork<T>::close_epoch(const data::Samples<T>*, const Tensor<T>*);     \
  template History NeuralNetwork<T>::fit(const data::Samples<T>&, const Tensor<T>&, const FitOptions<T>&); \
  template History NeuralNetwork<T>::fit(const Tensor<T>&, const Tensor<T>&, metric_t&,             \
                                         const FitOptions<T>&);                                      \
  template magmadnn_error_t NeuralNetwork<T>::fit(const Tensor<T>&, const Tensor<T>&, metric_t&, bool); \
  template magmadnn_error_t NeuralNetwork<T>::fit(Tensor<T>*, Tensor<T>*, metric_t&, bool);
MAGMADNN_FIT_INSTANTIATE(float)
MAGMADNN_FIT_INSTANTIATE(double)
#undef MAGMADNN_FIT_INSTANTIATE

}  // namespace magmadnn::model

// NeuralNetwork::fit: the training loop.
//   loader order -> feed -> forward -> NaN check -> backward (gradient-ready
//   hooks as gradients become final) -> finish hook -> gradient hook ->
//   loss scaler's unscale (when fit has one) -> optimizer step (unless the
//   scaler found an inf or NaN, or apply_update says no) -> after_update hook ->
//   callbacks (checkpoints are the first callback);
// or, for plain SGD without hooks or loss scaler: feed -> forward -> NaN check -> backward
// with the update folded in -> callbacks.
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
#include "magmadnn/data/shard.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/model/network_detail.h"

namespace magmadnn::model {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

template <typename T>
void NeuralNetwork<T>::train_step(double& batch_loss, std::int64_t& correct) {
  // The forward pass and the loss check come first, so a NaN loss leaves the
  // parameters untouched and never reaches a gradient hook.
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
  // Plain SGD without hooks updates inside the backward pass (no gradient
  // buffers, no update pass).
  const bool hooked =
      scaler_ || hook_ || ready_hooks_.ready || ready_hooks_.finish || ready_hooks_.apply_update;
  if (const auto fused = hooked ? std::nullopt : opt_->in_place_update()) {
    op::backward_update<T>(loss_, param_exprs_, *fused, op::ForwardValues::Release);
    opt_->count_in_place_step();
    if (ready_hooks_.after_update) ready_hooks_.after_update();
    return;
  }
  // A data-parallel rank whose slice differs from the others' weighs its
  // gradient by its rows (DataShard), and a strategy may ask for a factor
  // of its own: both scale the backward pass's seed, so no pass over the
  // gradients is spent on them.
  // The loss scale multiplies the seed too (scaling the loss itself would
  // change the value reported and checked).
  const T seed = static_cast<T>(grad_scale_ * ready_hooks_.gradient_scale * (scaler_ ? scaler_->scale() : 1.0));
  op::GradientReady<T> ready;
  if (ready_hooks_.ready) {
    ready = [this](std::size_t i, Tensor<T>& g) { ready_hooks_.ready(i, params_[i], g); };
  }
  // Each activation is freed once backward has read it for the last time
  // (the loss and accuracy were read above): the step's peak memory is the
  // activations or the gradients, not both.
  op::GradTable<T> grads = op::compute_gradients(loss_, param_exprs_, ready, seed, op::ForwardValues::Release);
  for (std::size_t i = 0; i < params_.size(); ++i) grad_ptrs_[i] = grads.get(param_exprs_[i]);
  if (ready_hooks_.finish) ready_hooks_.finish();
  if (hook_) {
    hook_(params_, grad_ptrs_);
    // The hook may hand back other tensors: the optimizer reads the table.
    for (std::size_t i = 0; i < params_.size(); ++i) {
      Tensor<T>* g = grads.get(param_exprs_[i]);
      if (grad_ptrs_[i] != g) {
        MAGMADNN_CHECK(grad_ptrs_[i] != nullptr, ValueError,
                       "gradient hook: set the gradient of '" << param_names_[i] << "' to null");
        g->copy_from(*grad_ptrs_[i]);
      }
    }
  }
  // Loss scaling: the gradients are unscaled after the hooks, which across
  // ranks have summed them, so an inf on any rank reaches every rank and all
  // skip the same step. The scaler works on the table's tensors, which the
  // optimizer reads (a hook may have handed back others, copied in above).
  if (scaler_) {
    for (std::size_t i = 0; i < params_.size(); ++i) grad_ptrs_[i] = grads.get(param_exprs_[i]);
  }
  const bool finite =
      !scaler_ ||
      scaler_->unscale(grad_ptrs_, opt_->step_count() + static_cast<std::int64_t>(scaler_->skips().size()) + 1);
  if (finite && (!ready_hooks_.apply_update || ready_hooks_.apply_update())) opt_->step(param_exprs_, grads);
  if (ready_hooks_.after_update) ready_hooks_.after_update();
}

// A data-parallel server's step (DataShard::server_rank): no data, no
// forward or backward pass; its strategy serves the others in the hooks.
template <typename T>
void NeuralNetwork<T>::serve_step() {
  if (ready_hooks_.finish) ready_hooks_.finish();
  if (ready_hooks_.after_update) ready_hooks_.after_update();
}

// A mid-epoch checkpoint of a data-parallel run: every rank adds its part of
// the epoch's sums so far, rank 0 saves them as the global ones and goes on
// with its own.
template <typename T>
void NeuralNetwork<T>::checkpoint_across_ranks() {
  std::vector<double> sums = {partial_.loss, static_cast<double>(partial_.correct),
                              static_cast<double>(partial_.samples)};
  if (!shard_.replicated) shard_.sum(sums);
  MAGMADNN_CHECK(sums.size() == 3, ValueError, "DataShard::sum changed the length of its values");
  // Rank 0 writes the sums over the ranks, then its own totals come back.
  const EpochTotals own = partial_;
  if (shard_.rank == 0) {
    partial_.loss = sums[0];
    partial_.correct = std::llround(sums[1]);
    partial_.samples = std::llround(sums[2]);
  }
  try {
    save_across_ranks();
  } catch (...) {
    partial_ = own;
    throw;
  }
  partial_ = own;
}

// A checkpoint across ranks: rank 0 writes (at an epoch's end the epoch's
// record already holds the sums over the ranks), every rank learns how it
// went. A network split over the ranks saves on every rank, since save()
// gathers the split tensors whole (a collective); its rank 0 writes.
template <typename T>
void NeuralNetwork<T>::save_across_ranks() {
  std::exception_ptr failure;
  if (shard_.rank == 0 || (shard_.replicated && has_split_parameters())) {
    try {
      save(shard_checkpoint_path_);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  agree_on_shard_checkpoint(failure);
}

// Every rank calls this after rank 0's write: rank 0 rethrows its own
// error; the others throw one that quotes it. Why: the other ranks would
// otherwise run on into the next step's collective, which rank 0 never
// joins, and fail only when a watchdog fires, naming a timeout rather than
// the full disk.
template <typename T>
void NeuralNetwork<T>::agree_on_shard_checkpoint(const std::exception_ptr& failure) {
  std::string why;
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
      why = "an exception that is not a std::exception";
    }
    if (why.empty()) why = "(no message)";
  }
  if (shard_.share_text) {
    shard_.share_text(why, 0);
  } else {
    std::vector<double> failed{failure ? 1.0 : 0.0};
    shard_.sum(failed);
    if (failed.at(0) != 0.0 && why.empty()) why = "(its message is on rank 0: DataShard::share_text is not set)";
  }
  if (failure) std::rethrow_exception(failure);
  MAGMADNN_CHECK(why.empty(), IOError,
                 "rank " << shard_.rank << ": rank 0 could not write the checkpoint " << shard_checkpoint_path_
                         << ", so every rank stops here (a checkpoint written before is intact): " << why);
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
  const bool sharded = shard_.size > 1 && !shard_.replicated;
  const int trainers = shard_.trainers(), trainer = shard_.trainer_index();
  const bool serves = sharded && trainer < 0;
  while (batch_ < nb) {
    const std::int64_t m = std::min(bs, n - batch_ * bs);
    // This rank's rows of the global batch; an empty slice trains on the
    // batch's first row with weight 0, so the rank still meets every collective.
    const data::RowRange mine = serves    ? data::RowRange{0, 0}
                                : sharded ? data::shard_rows(m, trainer, trainers)
                                          : data::RowRange{0, m};
    const std::int64_t first = mine.count > 0 ? mine.begin : 0, fed = std::max<std::int64_t>(mine.count, 1);
    grad_scale_ = sharded ? static_cast<double>(trainers * mine.count) / static_cast<double>(m) : 1.0;
    if (serves) {
      if (!inline_batches) {  // the loader's batch is not used, but its order is kept
        MAGMADNN_CHECK(loader.next(batch) && batch.index == batch_ && batch.size == m, ValueError,
                       "NeuralNetwork::fit: the data loader did not deliver batch " << batch_ << " of " << nb);
      }
    } else if (inline_batches) {
      std::optional<op::Profiler::Scope> scope;
      if (op::Profiler::enabled()) scope.emplace("step", "feed batch", "", op::detail::device_sync_of(y));
      feed(x, y, rows, batch_ * bs + first, fed);
    } else {
      MAGMADNN_CHECK(loader.next(batch) && batch.index == batch_ && batch.size == m, ValueError,
                     "NeuralNetwork::fit: the data loader did not deliver batch " << batch_ << " of " << nb);
      if (sharded) {
        feed(batch.x, batch.y, nullptr, first, fed);
      } else {
        x_ph_->set_value(batch.x);
        y_ph_->set_value(batch.y);
      }
    }
    double l = 0.0;
    std::int64_t c = 0;
    if (serves) {
      serve_step();
    } else {
      train_step(l, c);
    }
    if (mine.count == 0) c = 0;
    partial_.loss += l * static_cast<double>(mine.count);
    partial_.correct += c;
    partial_.samples += mine.count;
    partial_.seconds = seconds_before + seconds_since(t0);
    ++batch_;
    logs.batch = batch_ - 1;
    logs.size = mine.count;
    logs.loss = l;
    logs.samples_done = partial_.samples;
    const double done = partial_.samples > 0 ? static_cast<double>(partial_.samples) : 1.0;
    logs.epoch_loss = partial_.loss / done;
    logs.epoch_accuracy = static_cast<double>(partial_.correct) / done;
    logs.seconds = partial_.seconds;
    // Before the callbacks, as a Checkpointer would be (the first of them).
    if (shard_checkpoint_every_ > 0 && batch_ < nb && batch_ % shard_checkpoint_every_ == 0) {
      checkpoint_across_ranks();
    }
    for (auto& cb : callbacks) cb->on_batch_end(*this, logs);
    if (stop_) return batch_ == nb;
  }
  return true;
}

// The finished epoch's record (validation included); moves the cursor on.
template <typename T>
EpochRecord NeuralNetwork<T>::close_epoch(const data::Samples<T>* validation_x, const Tensor<T>* validation_y) {
  if (shard_.size > 1 && shard_.at_epoch_end) shard_.at_epoch_end();
  std::optional<Evaluation> v;
  if (validation_x != nullptr) {
    const op::Profiler::Pause not_training;  // a profile of fit is a profile of training steps
    if (shard_.size == 1 || shard_.replicated) {
      v = evaluate_batches(*validation_x, *validation_y);
    } else {
      const int trainer = shard_.trainer_index();
      const data::RowRange mine = trainer < 0 ? data::RowRange{0, 0}
                                              : data::shard_rows(validation_x->rows(), trainer, shard_.trainers());
      v = mine.count > 0 ? evaluate_batches(validation_x->slice(mine.begin, mine.begin + mine.count),
                                            validation_y->slice(mine.begin, mine.begin + mine.count))
                         : Evaluation{};
    }
  }
  if (shard_.size > 1 && !shard_.replicated) {
    // One collective per epoch: the training sums and the validation's.
    const double vn = v ? static_cast<double>(v->samples) : 0.0;
    std::vector<double> sums = {partial_.loss, static_cast<double>(partial_.correct),
                                static_cast<double>(partial_.samples), v ? v->loss * vn : 0.0,
                                v ? v->accuracy * vn : 0.0, vn};
    shard_.sum(sums);
    MAGMADNN_CHECK(sums.size() == 6, ValueError, "DataShard::sum changed the length of its values");
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
  MAGMADNN_CHECK(options.loader_workers >= 0, ValueError,
                 "NeuralNetwork::fit: loader_workers = " << options.loader_workers << " must be >= 0");
  const DataShard& shard = options.shard;
  MAGMADNN_CHECK(shard.size >= 1 && shard.rank >= 0 && shard.rank < shard.size, ValueError,
                 "NeuralNetwork::fit: shard rank " << shard.rank << " of " << shard.size << " ranks");
  MAGMADNN_CHECK(shard.size == 1 || shard.sum, ValueError,
                 "NeuralNetwork::fit: a shard of " << shard.size << " ranks needs a sum function");
  MAGMADNN_CHECK(shard.server_rank >= -1 && shard.server_rank < shard.size, ValueError,
                 "NeuralNetwork::fit: shard server rank " << shard.server_rank << " of " << shard.size << " ranks");
  MAGMADNN_CHECK(options.checkpoint_every_batches >= 0, ValueError,
                 "NeuralNetwork::fit: checkpoint_every_batches " << options.checkpoint_every_batches << " is negative");
  MAGMADNN_CHECK(options.checkpoint_path.empty() == false ||
                     (options.checkpoint_every_epochs == 0 && options.checkpoint_every_batches == 0 && !options.resume),
                 ValueError, "NeuralNetwork::fit: checkpoint options need a checkpoint_path");

  // Batches are gathered on the host; device-only data is staged there once.
  const bool stage = x_in.get_memory_type() == DEVICE || y_in.get_memory_type() == DEVICE;
  const data::Samples<T> x =
      x_in.get_memory_type() == DEVICE ? data::Samples<T>(x_in.tensor().to(HOST)) : x_in;
  Tensor<T> ys = stage ? y_in.to(HOST) : Tensor<T>();
  const Tensor<T>& y = stage ? ys : y_in;
  const std::int64_t n = x.rows();

  if (options.resume && std::filesystem::exists(options.checkpoint_path)) load(options.checkpoint_path);
  shard_ = shard;
  grad_scale_ = 1.0;
  // An epoch in progress (a mid-epoch checkpoint loaded on every rank) has
  // its sums so far counted once, by rank 0.
  if (shard.rank != 0 && !shard.replicated) partial_ = {};
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

  // Checkpoints first: the other callbacks of a batch or epoch find its checkpoint written.
  // Across ranks only rank 0 writes, and fit itself places the checkpoints
  // (every rank takes part: mid-epoch ones hold sums over the ranks, a
  // network split over the ranks gathers its split parameters whole, and
  // every rank learns whether rank 0's write failed).
  std::vector<std::shared_ptr<Callback<T>>> callbacks;
  const bool across_ranks = shard.size > 1;
  shard_checkpoint_path_ = across_ranks ? options.checkpoint_path : std::string();
  shard_checkpoint_every_ = across_ranks ? options.checkpoint_every_batches : 0;
  shard_checkpoint_every_epochs_ = across_ranks ? options.checkpoint_every_epochs : 0;
  const unsigned int every_epochs = across_ranks ? 0 : options.checkpoint_every_epochs;
  const std::int64_t every_batches = across_ranks ? 0 : options.checkpoint_every_batches;
  if (every_epochs > 0 || every_batches > 0) {
    callbacks.push_back(std::make_shared<Checkpointer<T>>(options.checkpoint_path, every_epochs, every_batches));
  }
  callbacks.insert(callbacks.end(), options.callbacks.begin(), options.callbacks.end());
  if (options.verbose) callbacks.push_back(std::make_shared<ProgressBar<T>>());
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
    if (shard_checkpoint_every_epochs_ > 0 && r.epoch % shard_checkpoint_every_epochs_ == 0) {
      save_across_ranks();
    }
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
  template void NeuralNetwork<T>::train_step(double&, std::int64_t&);                                \
  template void NeuralNetwork<T>::serve_step();                                                      \
  template void NeuralNetwork<T>::checkpoint_across_ranks();                                         \
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

/// @file callbacks.h
/// Callbacks of NeuralNetwork::fit: code that runs at fixed points of the
/// training loop (tiny-dnn / Keras style). Progress output, early stopping
/// and the history are callbacks or plain records, not special cases.
///
/// Order of calls during fit, guaranteed:
///   on_train_begin
///   for each epoch: on_epoch_begin, on_batch_end once per batch (after the
///   optimizer step), on_epoch_end (after validation; the record is already
///   in model.history())
///   on_train_end (also after early stopping; not after an exception)
/// A callback may call model.stop_training(): the loop stops after the
/// current batch (from on_batch_end) or epoch (from on_epoch_end).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "magmadnn/model/params.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::model {

template <typename T>
class NeuralNetwork;

/// What fit is about to do.
struct TrainInfo {
  unsigned int first_epoch = 1;  ///< 1-based epoch fit starts in (after a resume it may be > 1)
  unsigned int last_epoch = 1;   ///< 1-based epoch fit ends with
  std::int64_t samples = 0;      ///< training samples per epoch
  std::int64_t batches_per_epoch = 0;  ///< of the first epoch (BatchGrowth may change it later)
  std::int64_t batch_size = 0;         ///< of the first epoch
  bool has_validation = false;
};

/// State after one training step.
struct BatchLogs {
  unsigned int epoch = 1;           ///< 1-based
  std::int64_t batch = 0;           ///< 0-based index within the epoch
  std::int64_t batches = 0;         ///< batches in this epoch
  std::int64_t size = 0;            ///< samples in this batch (the last one may be partial)
  double loss = 0.0;                ///< this batch's mean loss
  double epoch_loss = 0.0;          ///< running mean loss of the epoch so far
  double epoch_accuracy = 0.0;      ///< running accuracy of the epoch so far
  std::int64_t samples_done = 0;    ///< samples of this epoch done so far
  double seconds = 0.0;             ///< seconds since this epoch started
};

template <typename T>
class Callback {
 public:
  virtual ~Callback() = default;
  // Every hook does nothing unless overridden (names commented out: unused here).
  virtual void on_train_begin(NeuralNetwork<T>& /*model*/, const TrainInfo& /*info*/) {}
  virtual void on_epoch_begin(NeuralNetwork<T>& /*model*/, unsigned int /*epoch*/) {}
  virtual void on_batch_end(NeuralNetwork<T>& /*model*/, const BatchLogs& /*logs*/) {}
  virtual void on_epoch_end(NeuralNetwork<T>& /*model*/, const EpochRecord& /*record*/) {}
  virtual void on_train_end(NeuralNetwork<T>& /*model*/, const History& /*history*/) {}
};

/// A callback made of optional functions (for small hooks in user code).
template <typename T>
class LambdaCallback : public Callback<T> {
 public:
  std::function<void(NeuralNetwork<T>&, const TrainInfo&)> train_begin;
  std::function<void(NeuralNetwork<T>&, unsigned int)> epoch_begin;
  std::function<void(NeuralNetwork<T>&, const BatchLogs&)> batch_end;
  std::function<void(NeuralNetwork<T>&, const EpochRecord&)> epoch_end;
  std::function<void(NeuralNetwork<T>&, const History&)> train_end;

  void on_train_begin(NeuralNetwork<T>& m, const TrainInfo& i) override { if (train_begin) train_begin(m, i); }
  void on_epoch_begin(NeuralNetwork<T>& m, unsigned int e) override { if (epoch_begin) epoch_begin(m, e); }
  void on_batch_end(NeuralNetwork<T>& m, const BatchLogs& l) override { if (batch_end) batch_end(m, l); }
  void on_epoch_end(NeuralNetwork<T>& m, const EpochRecord& r) override { if (epoch_end) epoch_end(m, r); }
  void on_train_end(NeuralNetwork<T>& m, const History& h) override { if (train_end) train_end(m, h); }
};

/// Stops training once the monitored quantity has gone `patience` epochs in
/// a row without improving by more than `min_delta` (patience 0 acts as 1). Monitors "val_loss" (default), "loss",
/// "val_accuracy" or "accuracy" (losses must fall, accuracies rise).
/// "val_*" requires validation data (ValueError at train begin otherwise).
/// With restore_best_weights, the parameters of the best epoch are copied
/// back when training ends (one copy of the parameters is kept).
template <typename T>
class EarlyStopping : public Callback<T> {
 public:
  explicit EarlyStopping(std::string monitor = "val_loss", unsigned int patience = 0, double min_delta = 0.0,
                         bool restore_best_weights = false);

  void on_train_begin(NeuralNetwork<T>& model, const TrainInfo& info) override;
  void on_epoch_end(NeuralNetwork<T>& model, const EpochRecord& record) override;
  void on_train_end(NeuralNetwork<T>& model, const History& history) override;

  /// 1-based epoch at which training was stopped (0: it was not).
  unsigned int stopped_epoch() const noexcept { return stopped_epoch_; }
  /// 1-based epoch with the best monitored value (0: none yet).
  unsigned int best_epoch() const noexcept { return best_epoch_; }
  double best_value() const noexcept { return best_; }

 private:
  double value_of(const EpochRecord& r) const;
  std::string monitor_;
  unsigned int patience_;
  double min_delta_;
  bool restore_;
  bool maximize_ = false;
  double best_ = 0.0;
  unsigned int best_epoch_ = 0, stopped_epoch_ = 0, wait_ = 0;
  std::vector<Tensor<T>> best_weights_;
};

/// Where ProgressBar output goes: Auto asks isatty(), the others force it.
enum class ProgressMode { Auto, Terminal, Plain };

/// Training progress. On a terminal: a bar redrawn in place with the batch
/// count, samples per second, ETA and running loss, ending in a summary line
/// per epoch. Otherwise (a file, a pipe, a test stream): one plain line per
/// epoch, so logs stay readable.
/// Periodic checkpoints (model.save, written atomically): after every
/// `every_epochs` epochs and/or every `every_batches` optimizer steps inside
/// an epoch (0 disables either). fit() puts one first in its callback list
/// when FitOptions asks for checkpoints, so every other callback of a batch
/// or epoch sees the checkpoint of that point already on disk.
template <typename T>
class Checkpointer : public Callback<T> {
 public:
  Checkpointer(std::string path, unsigned int every_epochs, std::int64_t every_batches);
  void on_batch_end(NeuralNetwork<T>& model, const BatchLogs& logs) override;
  void on_epoch_end(NeuralNetwork<T>& model, const EpochRecord& record) override;

 private:
  std::string path_;
  unsigned int every_epochs_;
  std::int64_t every_batches_;
};

template <typename T>
class ProgressBar : public Callback<T> {
 public:
  using Mode = ProgressMode;
  /// `Auto` asks isatty() about std::cout / std::cerr / std::clog; any
  /// other stream is treated as not a terminal. `min_interval` limits how
  /// often the bar is redrawn (seconds; 0 redraws after every batch).
  explicit ProgressBar(std::ostream& os, Mode mode = Mode::Auto, double min_interval = 0.1, int width = 30);
  ProgressBar();  ///< std::cout, Auto

  /// The mode actually used (Auto resolved).
  Mode mode() const noexcept { return mode_; }

  void on_train_begin(NeuralNetwork<T>& model, const TrainInfo& info) override;
  void on_epoch_begin(NeuralNetwork<T>& model, unsigned int epoch) override;
  void on_batch_end(NeuralNetwork<T>& model, const BatchLogs& logs) override;
  void on_epoch_end(NeuralNetwork<T>& model, const EpochRecord& record) override;

 private:
  std::ostream& os_;
  Mode mode_;
  double min_interval_;
  int width_;
  TrainInfo info_;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
};

/// Formats seconds as "m:ss" or "h:mm:ss" (used by the progress bar).
std::string format_duration(double seconds);
/// One plain line describing an epoch ("epoch 3/10 - loss 0.1234 - acc ...").
std::string format_epoch_line(const EpochRecord& r, unsigned int last_epoch);

}  // namespace magmadnn::model

#include "magmadnn/model/callbacks.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/model/neural_network.h"

namespace magmadnn::model {

// ---- formatting -------------------------------------------------------------------

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

std::string format_epoch_line(const EpochRecord& r, unsigned int last_epoch) {
  std::ostringstream os;
  os << "epoch " << r.epoch << "/" << last_epoch << " - loss " << std::fixed << std::setprecision(4) << r.train_loss
     << " - acc " << r.train_accuracy;
  if (!std::isnan(r.val_loss)) os << " - val_loss " << r.val_loss << " - val_acc " << r.val_accuracy;
  os << " - " << std::setprecision(2) << r.seconds << " s - " << std::setprecision(0) << r.samples_per_second
     << " samples/s";
  return os.str();
}

// ---- EarlyStopping -----------------------------------------------------------------

template <typename T>
EarlyStopping<T>::EarlyStopping(std::string monitor, unsigned int patience, double min_delta,
                                bool restore_best_weights)
    : monitor_(std::move(monitor)), patience_(patience), min_delta_(std::abs(min_delta)),
      restore_(restore_best_weights) {
  MAGMADNN_CHECK(monitor_ == "val_loss" || monitor_ == "loss" || monitor_ == "val_accuracy" ||
                     monitor_ == "accuracy",
                 ValueError,
                 "EarlyStopping: monitor '" << monitor_ << "' is not one of val_loss, loss, val_accuracy, accuracy");
  maximize_ = monitor_.find("accuracy") != std::string::npos;
}

template <typename T>
double EarlyStopping<T>::value_of(const EpochRecord& r) const {
  if (monitor_ == "loss") return r.train_loss;
  if (monitor_ == "accuracy") return r.train_accuracy;
  if (monitor_ == "val_loss") return r.val_loss;
  return r.val_accuracy;
}

template <typename T>
void EarlyStopping<T>::on_train_begin(NeuralNetwork<T>& model, const TrainInfo& info) {
  MAGMADNN_CHECK(info.has_validation || monitor_.rfind("val_", 0) != 0, ValueError,
                 "EarlyStopping: monitor '" << monitor_ << "' needs validation data (FitOptions::validation_x/y)");
  best_ = maximize_ ? -INFINITY : INFINITY;
  best_epoch_ = stopped_epoch_ = wait_ = 0;
  best_weights_.clear();
}

template <typename T>
void EarlyStopping<T>::on_epoch_end(NeuralNetwork<T>& model, const EpochRecord& record) {
  const double v = value_of(record);
  const bool better = maximize_ ? v > best_ + min_delta_ : v < best_ - min_delta_;
  if (better) {
    best_ = v;
    best_epoch_ = record.epoch;
    wait_ = 0;
    if (restore_) {
      const auto& ps = model.parameters();
      best_weights_.resize(ps.size());
      for (std::size_t i = 0; i < ps.size(); ++i) best_weights_[i] = ps[i]->value();  // copies values
    }
    return;
  }
  if (++wait_ >= patience_) {
    stopped_epoch_ = record.epoch;
    model.stop_training();
  }
}

template <typename T>
void EarlyStopping<T>::on_train_end(NeuralNetwork<T>& model, const History& history) {
  if (!restore_ || best_weights_.empty()) return;
  const auto& ps = model.parameters();
  for (std::size_t i = 0; i < ps.size(); ++i) ps[i]->value().copy_from(best_weights_[i]);
}

// ---- ProgressBar -------------------------------------------------------------------

namespace {
ProgressMode resolve(std::ostream& os, ProgressMode m) {
  using Mode = ProgressMode;
  if (m != Mode::Auto) return m;
  int fd = -1;
  if (&os == &std::cout) fd = STDOUT_FILENO;
  if (&os == &std::cerr || &os == &std::clog) fd = STDERR_FILENO;
  return (fd >= 0 && ::isatty(fd)) ? Mode::Terminal : Mode::Plain;
}
}  // namespace

template <typename T>
ProgressBar<T>::ProgressBar(std::ostream& os, Mode mode, double min_interval, int width)
    : os_(os), mode_(resolve(os, mode)),
      min_interval_(min_interval), width_(width > 0 ? width : 30) {}

template <typename T>
ProgressBar<T>::ProgressBar() : ProgressBar(std::cout) {}

template <typename T>
void ProgressBar<T>::on_train_begin(NeuralNetwork<T>& model, const TrainInfo& info) {
  info_ = info;
}

template <typename T>
void ProgressBar<T>::on_epoch_begin(NeuralNetwork<T>& model, unsigned int epoch) {
  drawn_ = false;
}

template <typename T>
void ProgressBar<T>::on_batch_end(NeuralNetwork<T>& model, const BatchLogs& logs) {
  if (mode_ != Mode::Terminal) return;
  const auto now = std::chrono::steady_clock::now();
  const bool last = logs.batch + 1 == logs.batches;
  if (drawn_ && !last && std::chrono::duration<double>(now - last_draw_).count() < min_interval_) return;
  last_draw_ = now;
  drawn_ = true;
  const double frac = static_cast<double>(logs.batch + 1) / static_cast<double>(logs.batches);
  const int filled = static_cast<int>(frac * width_);
  const double rate = logs.seconds > 0 ? static_cast<double>(logs.samples_done) / logs.seconds : 0.0;
  const double remaining = static_cast<double>(info_.samples - logs.samples_done);
  std::ostringstream line;
  line << "\repoch " << logs.epoch << "/" << info_.last_epoch << " [";
  for (int i = 0; i < width_; ++i) line << (i < filled ? '=' : (i == filled ? '>' : ' '));
  line << "] " << (logs.batch + 1) << "/" << logs.batches << " - " << std::fixed << std::setprecision(0) << rate
       << " samples/s - ETA " << format_duration(rate > 0 ? remaining / rate : NAN) << " - loss "
       << std::setprecision(4) << logs.epoch_loss << "\x1b[K";  // clear the rest of the line
  os_ << line.str() << std::flush;
}

template <typename T>
void ProgressBar<T>::on_epoch_end(NeuralNetwork<T>& model, const EpochRecord& record) {
  if (mode_ == Mode::Terminal) os_ << "\r\x1b[K";
  os_ << format_epoch_line(record, info_.last_epoch) << '\n' << std::flush;
}

// ---- Checkpointer ------------------------------------------------------------------

template <typename T>
Checkpointer<T>::Checkpointer(std::string path, unsigned int every_epochs, std::int64_t every_batches)
    : path_(std::move(path)), every_epochs_(every_epochs), every_batches_(every_batches) {
  MAGMADNN_CHECK(!path_.empty() || (every_epochs_ == 0 && every_batches_ == 0), ValueError,
                 "Checkpointer: periodic checkpoints need a path");
}

template <typename T>
void Checkpointer<T>::on_batch_end(NeuralNetwork<T>& model, const BatchLogs& logs) {
  // The last batch of an epoch is covered by the epoch's own checkpoint.
  if (every_batches_ > 0 && logs.batch + 1 < logs.batches && model.optimizer().step_count() % every_batches_ == 0) {
    model.save(path_);
  }
}

template <typename T>
void Checkpointer<T>::on_epoch_end(NeuralNetwork<T>& model, const EpochRecord& record) {
  if (every_epochs_ > 0 && record.epoch % every_epochs_ == 0) model.save(path_);
}

template class Checkpointer<float>;
template class Checkpointer<double>;
template class EarlyStopping<float>;
template class EarlyStopping<double>;
template class ProgressBar<float>;
template class ProgressBar<double>;

}  // namespace magmadnn::model

/// @file fit_options.h
/// FitOptions<T>: everything NeuralNetwork::fit takes beyond the data and
/// nn_params_t: validation data, callbacks, checkpoints, resuming.
///
///   model::FitOptions<float> o;
///   o.validation_x = &x_val; o.validation_y = &y_val;
///   o.callbacks.push_back(std::make_shared<model::EarlyStopping<float>>("val_loss", 3));
///   o.checkpoint_path = "run/model.ckpt"; o.checkpoint_every_epochs = 1; o.resume = true;
///   auto history = net.fit(x, y, o);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/data/transforms.h"
#include "magmadnn/model/callbacks.h"

namespace magmadnn::model {

/// Data-parallel training: this process is rank `rank` of `size`, and fit
/// trains on its slice of every global batch (data::shard_rows; the batch
/// size, nn_params_t::batch_size, is the global one). Every rank must call
/// fit with the same data, options and weights. With size > 1:
///  - the gradients a hook receives (GradientHook and GradientReadyHooks)
///    are this rank's slice's mean gradient scaled by size * slice / batch,
///    so their plain average over ranks is the global batch's mean gradient
///    also when the slices differ by a row (scale 1 when they are equal);
///    without hooks each rank steps on its own slice's mean gradient (local
///    SGD: a strategy such as weight averaging synchronises the weights);
///  - a rank whose slice is empty (a batch smaller than `size`, e.g. the
///    last one) still runs the step, on the batch's first row with weight 0
///    (its gradient is zero and it counts no loss), so every rank takes part
///    in every collective;
///  - the epoch's loss and accuracy and the validation set (split among the
///    ranks by the same rule) are summed across ranks with `sum`, so every
///    rank's EpochRecord is the global one; on_batch_end's running values
///    are this rank's own;
///  - checkpoints are per epoch only (checkpoint_every_batches must be 0),
///    where the state holds nothing rank-local.
struct DataShard {
  int rank = 0;
  int size = 1;
  /// Replaces `values` by their element-wise sums over all ranks (every
  /// rank calls it at the same points with the same length). Needed when
  /// size > 1.
  std::function<void(std::vector<double>& values)> sum;
  /// Called on every rank before each epoch's validation, e.g. to give every
  /// rank rank 0's layer state (BatchNorm statistics, which each rank
  /// otherwise updates from its own slices). Optional.
  std::function<void()> before_validation;
};

template <typename T>
struct FitOptions {
  /// Validation set (both or neither; not owned, must outlive fit). Evaluated
  /// at the end of every epoch in eval mode.
  const Tensor<T>* validation_x = nullptr;
  const Tensor<T>* validation_y = nullptr;

  /// Adds a ProgressBar on std::cout (bar on a terminal, lines otherwise).
  bool verbose = false;
  std::vector<std::shared_ptr<Callback<T>>> callbacks;

  /// Epochs to train; 0 takes nn_params_t::n_epochs. Without `resume` this
  /// many epochs are trained from where the model stands (an epoch in
  /// progress, e.g. after load() of a mid-epoch checkpoint, counts as the
  /// first). With `resume` it is the total number of epochs of the run, so
  /// restarting the same command finishes the same plan.
  unsigned int epochs = 0;

  /// Periodic checkpoints (io/checkpoint.h format) to this path, after every
  /// `checkpoint_every_epochs` epochs and/or every `checkpoint_every_batches`
  /// training steps (0 disables either). Written atomically.
  std::string checkpoint_path;
  unsigned int checkpoint_every_epochs = 0;
  std::int64_t checkpoint_every_batches = 0;
  /// Load checkpoint_path first if it exists and continue from its cursor
  /// (bit-identical to an uninterrupted run); without the file, start fresh.
  bool resume = false;

  /// Data loading. 0 workers and no augmentation: the model copies each
  /// batch's rows straight into the input placeholders (no per-step
  /// allocation). Otherwise a data::DataLoader prepares batches on
  /// `loader_workers` background threads (0: on the training thread) and
  /// applies `augment` to each training sample. Both serve the same samples
  /// in the same order for a given seed and epoch.
  int loader_workers = 0;
  std::vector<std::shared_ptr<const data::Transform<T>>> augment;

  /// This process's part in data-parallel training (the default: the only one).
  DataShard shard;
};

}  // namespace magmadnn::model

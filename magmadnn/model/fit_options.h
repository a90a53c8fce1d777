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

#include "magmadnn/data/samples.h"
#include "magmadnn/data/transforms.h"
#include "magmadnn/model/callbacks.h"
#include "magmadnn/optimizer/loss_scaler.h"

namespace magmadnn::model {

/// Data-parallel training: this process is rank `rank` of `size`, and fit
/// trains on its slice of every global batch (data::shard_rows; the batch
/// size, nn_params_t::batch_size, is the global one). Every rank must call
/// fit with the same data, options and weights. With size > 1:
///  - the slices are cut among the ranks that train: all of them, or all
///    but `server_rank` when it is set (asgd's parameter server). The
///    server takes every step without data: no forward or backward pass,
///    only the gradient-ready hooks' finish and after_update (where its
///    strategy serves the others); it counts no samples and its
///    on_batch_end running values are zero;
///  - the gradients a hook receives (GradientHook and GradientReadyHooks)
///    are this rank's slice's mean gradient scaled by trainers * slice /
///    batch (trainers: the ranks that train), so their plain average over
///    the trainers is the global batch's mean gradient also when the slices
///    differ by a row (scale 1 when they are equal); without hooks each
///    rank steps on its own slice's mean gradient (local SGD: a strategy
///    such as weight averaging synchronises the weights);
///  - a training rank whose slice is empty (a batch smaller than the number
///    of trainers, e.g. the last one) still runs the step, on the batch's
///    first row with weight 0 (its gradient is zero and it counts no loss),
///    so every rank takes part in every collective;
///  - when an epoch's steps are done every rank calls `at_epoch_end`, then
///    the epoch's loss and accuracy and the validation set (split among the
///    trainers by the same rule) are summed across ranks with `sum`, so
///    every rank's EpochRecord is the global one; on_batch_end's running
///    values are this rank's own;
///  - only rank 0 writes checkpoints (every rank reads checkpoint_path to
///    resume, so it must be on a file system every rank sees). A mid-epoch
///    checkpoint (checkpoint_every_batches > 0) falls after every
///    checkpoint_every_batches-th batch of an epoch, counted from the
///    epoch's first batch on every rank alike (a single process counts
///    optimizer steps instead); every rank then sums its part of the
///    epoch's loss and accuracy so far, so rank 0's checkpoint holds the
///    global sums. The cursor counts global batches, which do not depend on
///    the number of ranks: the checkpoint resumes on any rank count at the
///    same global sample.
struct DataShard {
  int rank = 0;
  int size = 1;
  /// The rank that trains on no data and serves the others (asgd's
  /// parameter server), or -1: every rank trains.
  int server_rank = -1;
  /// Replaces `values` by their element-wise sums over all ranks (every
  /// rank calls it at the same points with the same length). Needed when
  /// size > 1.
  std::function<void(std::vector<double>& values)> sum;
  /// Called on every rank when an epoch's steps are done, before its
  /// validation, its sums and its callbacks (so before its checkpoint),
  /// e.g. to give every rank the model's weights (asgd: the server's) and
  /// one rank's layer state (BatchNorm statistics, which each rank
  /// otherwise updates from its own slices). Optional.
  std::function<void()> at_epoch_end;
  /// Every rank is fed the whole global batch and computes the same loss
  /// on it (a network with model-parallel layers, which splits the work
  /// itself: run/parallel_plan.h). Then no rank weighs its gradient by its
  /// rows, the validation set is not split, and the epoch's sums are not
  /// summed across ranks (they are already the global ones on every rank).
  /// Its checkpoints fall where one process's would (after every
  /// checkpoint_every_batches-th optimizer step, and at epoch ends) on
  /// every rank: NeuralNetwork::save gathers the split parameters whole (a
  /// collective) and rank 0 writes the file, which is the one-process
  /// network's checkpoint.
  bool replicated = false;
  /// Replaces `text` on every rank by rank `root`'s (every rank calls it at
  /// the same points). Across ranks (size > 1) rank 0 alone writes the
  /// checkpoints (of a split network too, after every rank's part of the
  /// gather); after each write it tells every rank whether the write
  /// failed, and why, so that all ranks stop with that error rather than
  /// the others waiting in the next step's collective until a watchdog
  /// fires. Optional: without it `sum` carries the failure and only rank 0
  /// can say why.
  std::function<void(std::string& text, int root)> share_text = nullptr;

  /// The number of ranks that train on data, and this rank's index among
  /// them (-1 for the server).
  int trainers() const noexcept { return server_rank >= 0 && size > 1 ? size - 1 : size; }
  int trainer_index() const noexcept {
    if (server_rank < 0 || size == 1) return rank;
    return rank == server_rank ? -1 : rank - (rank > server_rank ? 1 : 0);
  }
};

template <typename T>
struct FitOptions {
  /// Validation set (both or neither; not owned, must outlive fit). Evaluated
  /// at the end of every epoch in eval mode.
  const Tensor<T>* validation_x = nullptr;
  const Tensor<T>* validation_y = nullptr;
  /// Validation inputs held at source precision (e.g. uint8 images,
  /// data::Samples), instead of validation_x; validation_y as above.
  const data::Samples<T>* validation_samples = nullptr;

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

  /// Dynamic loss scaling (optimizer::LossScaler, what fp16 needs; null:
  /// none). Each step multiplies the seed of the backward pass by
  /// scale() (the same as scaling the loss; the loss reported stays
  /// unscaled), then, after the gradient hooks and before the optimizer,
  /// LossScaler::unscale divides the gradients by it. A step whose gradients
  /// hold an inf or NaN is skipped: the optimizer does not run, so weights
  /// and optimizer state stay as they were, and the scaler records the skip
  /// with the step's number (1-based, skipped steps counted) and halves the
  /// scale. Shared, so the caller reads skips() and scale() after fit.
  /// Scaling turns off plain SGD's update folded into backward.
  std::shared_ptr<optimizer::LossScaler> loss_scaler;
};

}  // namespace magmadnn::model

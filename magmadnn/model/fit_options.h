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

  /// Dynamic loss scaling (optimizer::LossScaler, what fp16 needs; null:
  /// none). Each step multiplies the seed of the backward pass by
  /// scale() (the same as scaling the loss; the loss reported stays
  /// unscaled), then, after the training plugin's backward_finished and before the optimizer,
  /// LossScaler::unscale divides the gradients by it. A step whose gradients
  /// hold an inf or NaN is skipped: the optimizer does not run, so weights
  /// and optimizer state stay as they were, and the scaler records the skip
  /// with the step's number (1-based, skipped steps counted) and halves the
  /// scale. Shared, so the caller reads skips() and scale() after fit.
  /// Scaling turns off plain SGD's update folded into backward.
  std::shared_ptr<optimizer::LossScaler> loss_scaler;
};

}  // namespace magmadnn::model

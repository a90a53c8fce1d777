/// @file batch_growth.h
/// BatchGrowth: the batch size grows during training instead of the learning
/// rate decaying (Smith, Kindermans, Ying & Le 2017, "Don't Decay the
/// Learning Rate, Increase the Batch Size"). Epoch e (1-based) trains in
/// batches of
///
///   min(max_batch, initial * factor^floor((e - 1) / every_epochs))
///
/// so with factor 2 and every_epochs 2 from 32: epochs 1-2 in 32, 3-4 in 64,
/// 5-6 in 128, ... A larger batch averages the gradient over more samples,
/// which lowers the gradient noise as a smaller rate would, in fewer steps.
///
///   model::FitOptions<float> o;
///   o.callbacks.push_back(std::make_shared<model::BatchGrowth<float>>(32, 2, 2, 1024));
///
/// Requires: initial, factor and every_epochs >= 1, max_batch >= initial;
/// the model's batch size is the one this callback sets (it writes
/// model.params().batch_size at each epoch's start; fit rebuilds its loader
/// when the size changes). Guarantees: the size is a function of the epoch
/// alone, so a run resumed from a checkpoint (the callback given again with
/// the same settings) trains every epoch in the same batches as an
/// uninterrupted run, bit-identically; every sample is still used exactly
/// once per epoch. Learning-rate schedules keep counting optimizer steps, so
/// one set in epochs (run::TrainSpec) is converted with the first epoch's
/// steps per epoch.
#pragma once

#include <cstdint>

#include "magmadnn/model/callbacks.h"

namespace magmadnn::model {

template <typename T>
class BatchGrowth : public Callback<T> {
 public:
  BatchGrowth(std::int64_t initial, std::int64_t factor, std::int64_t every_epochs, std::int64_t max_batch);
  /// The batch size of 1-based epoch `epoch`.
  std::int64_t batch_size_at(unsigned int epoch) const;
  void on_epoch_begin(NeuralNetwork<T>& model, unsigned int epoch) override;

 private:
  std::int64_t initial_, factor_, every_, max_;
};

}  // namespace magmadnn::model

/// @file dist_momentum_sgd.h
/// optimizer::DistMomentumSGD<T>: MagmaDNN v1's distributed optimizer entry
/// point, kept for v1 programs, backed by the allreduce strategy:
///
///   optimizer::Optimizer<float>* optim =
///       new optimizer::DistMomentumSGD<float>(params.learning_rate, params.momentum);
///   model::NeuralNetwork<float> model(layers, optimizer::CROSS_ENTROPY, optim, params);
///   model.fit(&x, &y, metrics, true);     // each rank on its own part of the data
///
/// It is SGD with (heavy-ball) momentum, v = mu * v + g; p -= lr * v, whose
/// gradients are averaged over all ranks before every update. When a
/// network takes it (Optimizer::attached_to), it builds the allreduce
/// strategy (parallel/allreduce_strategy.h) on its communicator and
/// attaches it: rank 0's initial weights go to every rank, and from then on
/// the gradients are averaged in buckets that overlap the backward pass.
///
/// Requires: as v1, the program owns the optimizer and keeps it alive as
/// long as the network; one network per DistMomentumSGD; every rank builds
/// the network at the same point (attaching is collective). The
/// communicator is make_communicator("auto") unless one is given: MPI when
/// started by mpirun or srun, else one local rank, where it is plain
/// momentum SGD. Guarantees: every rank holds the same weights after every
/// step (the update of gradient averaging on the union of the ranks' batches).
#pragma once

#include <memory>

#include "magmadnn/parallel/strategy.h"
#include "magmadnn/optimizer/gradient_descent.h"

namespace magmadnn::optimizer {

template <typename T>
class DistMomentumSGD : public GradientDescent<T> {
 public:
  /// v1's constructor, on make_communicator("auto").
  DistMomentumSGD(T learning_rate, T momentum);
  /// On a given communicator, with allreduce options (bucket size, ...).
  DistMomentumSGD(T learning_rate, T momentum, std::shared_ptr<distributed::Communicator> comm,
                  distributed::StrategyOptions options = {});
  ~DistMomentumSGD() override;

  void attached_to(model::NeuralNetwork<T>& net) override;

  // v1 accessors.
  void set_learning_rate(T learning_rate) { Optimizer<T>::set_learning_rate(learning_rate); }
  T get_learning_rate() const { return static_cast<T>(this->base_learning_rate()); }
  T get_momentum() const { return static_cast<T>(this->momentum()); }

  /// The allreduce strategy, once a network has taken this optimizer (its
  /// timing() splits the steps into compute and communication); else null.
  distributed::Strategy<T>* strategy() const noexcept { return strategy_.get(); }

 private:
  std::shared_ptr<distributed::Communicator> comm_;
  distributed::StrategyOptions options_;
  std::unique_ptr<distributed::Strategy<T>> strategy_;
};

}  // namespace magmadnn::optimizer

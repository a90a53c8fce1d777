#include "magmadnn/parallel/dist_momentum_sgd.h"

#include "magmadnn/parallel/allreduce_strategy.h"
#include "magmadnn/comm/communicator_factory.h"

namespace magmadnn::optimizer {

template <typename T>
DistMomentumSGD<T>::DistMomentumSGD(T learning_rate, T momentum)
    : DistMomentumSGD(learning_rate, momentum, distributed::make_communicator("auto")) {}

template <typename T>
DistMomentumSGD<T>::DistMomentumSGD(T learning_rate, T momentum, std::shared_ptr<distributed::Communicator> comm,
                                    distributed::StrategyOptions options)
    : GradientDescent<T>(learning_rate, momentum, false), comm_(std::move(comm)), options_(options) {
  MAGMADNN_CHECK(comm_ != nullptr, ValueError, "DistMomentumSGD: null communicator");
}

template <typename T>
DistMomentumSGD<T>::~DistMomentumSGD() = default;

template <typename T>
void DistMomentumSGD<T>::attached_to(model::NeuralNetwork<T>& net) {
  MAGMADNN_CHECK(strategy_ == nullptr, ValueError,
                 "DistMomentumSGD: already used by a network (give each network its own optimizer)");
  strategy_ = std::make_unique<distributed::AllreduceStrategy<T>>(comm_, options_);
  strategy_->attach(net);
}

template class DistMomentumSGD<float>;
template class DistMomentumSGD<double>;

}  // namespace magmadnn::optimizer

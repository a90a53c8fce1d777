#include "magmadnn/model/batch_growth.h"

#include <algorithm>
#include <limits>

#include "magmadnn/core/errors.h"
#include "magmadnn/model/neural_network.h"

namespace magmadnn::model {

template <typename T>
BatchGrowth<T>::BatchGrowth(std::int64_t initial, std::int64_t factor, std::int64_t every_epochs,
                            std::int64_t max_batch)
    : initial_(initial), factor_(factor), every_(every_epochs), max_(max_batch) {
  MAGMADNN_CHECK(initial >= 1 && factor >= 1 && every_epochs >= 1, ValueError,
                 "BatchGrowth: initial batch, factor and every_epochs must be >= 1, got "
                     << initial << ", " << factor << " and " << every_epochs);
  MAGMADNN_CHECK(max_batch >= initial && max_batch <= std::numeric_limits<unsigned int>::max(), ValueError,
                 "BatchGrowth: max batch " << max_batch << " must be in [" << initial << " (the initial batch), "
                                           << std::numeric_limits<unsigned int>::max() << "]");
}

template <typename T>
std::int64_t BatchGrowth<T>::batch_size_at(unsigned int epoch) const {
  const std::int64_t growths = epoch == 0 ? 0 : (static_cast<std::int64_t>(epoch) - 1) / every_;
  std::int64_t b = initial_;
  // Multiplied one growth at a time so the cap stops it before any overflow.
  for (std::int64_t i = 0; factor_ > 1 && i < growths && b < max_; ++i) b = b > max_ / factor_ ? max_ : b * factor_;
  return std::min(b, max_);
}

template <typename T>
void BatchGrowth<T>::on_epoch_begin(NeuralNetwork<T>& model, unsigned int epoch) {
  model.params().batch_size = static_cast<unsigned int>(batch_size_at(epoch));
}

template class BatchGrowth<float>;
template class BatchGrowth<double>;

}  // namespace magmadnn::model

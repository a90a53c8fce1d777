#include "magmadnn/model/metrics.h"

#include <limits>
#include <numeric>

#include "magmadnn/core/errors.h"
#include "magmadnn/model/network_detail.h"

namespace magmadnn::model {

template <typename T>
std::int64_t count_correct(const Tensor<T>& pred, const Tensor<T>& y) {
  return detail::count_correct(pred, y);
}
template std::int64_t count_correct(const Tensor<float>&, const Tensor<float>&);
template std::int64_t count_correct(const Tensor<double>&, const Tensor<double>&);

template <typename T>
std::vector<std::int64_t> row_classes(const Tensor<T>& pred) {
  return detail::row_classes(pred);
}
template std::vector<std::int64_t> row_classes(const Tensor<float>&);
template std::vector<std::int64_t> row_classes(const Tensor<double>&);

std::int64_t ConfusionMatrix::operator()(std::int64_t true_class, std::int64_t predicted) const {
  MAGMADNN_CHECK(true_class >= 0 && true_class < classes && predicted >= 0 && predicted < classes, IndexError,
                 "confusion matrix: entry (" << true_class << ", " << predicted << ") outside " << classes << " x "
                                             << classes);
  return counts[static_cast<std::size_t>(true_class * classes + predicted)];
}

std::int64_t ConfusionMatrix::class_total(std::int64_t true_class) const {
  MAGMADNN_CHECK(true_class >= 0 && true_class < classes, IndexError,
                 "confusion matrix: class " << true_class << " outside [0, " << classes << ")");
  const auto row = counts.begin() + true_class * classes;
  return std::accumulate(row, row + classes, std::int64_t{0});
}

double ConfusionMatrix::class_accuracy(std::int64_t true_class) const {
  const std::int64_t n = class_total(true_class);
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>((*this)(true_class, true_class)) / static_cast<double>(n);
}

std::int64_t ConfusionMatrix::total() const { return std::accumulate(counts.begin(), counts.end(), std::int64_t{0}); }

ConfusionMatrix confusion_matrix(const std::vector<std::int64_t>& true_labels,
                                 const std::vector<std::int64_t>& predicted, std::int64_t classes) {
  MAGMADNN_CHECK(classes > 0, ValueError, "confusion_matrix: classes must be positive, got " << classes);
  MAGMADNN_CHECK(true_labels.size() == predicted.size(), ShapeError,
                 "confusion_matrix: " << true_labels.size() << " true labels but " << predicted.size()
                                      << " predictions");
  ConfusionMatrix cm;
  cm.classes = classes;
  cm.counts.assign(static_cast<std::size_t>(classes * classes), 0);
  for (std::size_t i = 0; i < true_labels.size(); ++i) {
    const std::int64_t t = true_labels[i], p = predicted[i];
    MAGMADNN_CHECK(t >= 0 && t < classes, ValueError,
                   "confusion_matrix: true label " << t << " of sample " << i << " is outside [0, " << classes << ")");
    MAGMADNN_CHECK(p >= 0 && p < classes, ValueError,
                   "confusion_matrix: prediction " << p << " of sample " << i << " is outside [0, " << classes
                                                   << ")");
    ++cm.counts[static_cast<std::size_t>(t * classes + p)];
  }
  return cm;
}

}  // namespace magmadnn::model

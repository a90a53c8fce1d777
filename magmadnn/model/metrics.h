/// @file metrics.h
/// Classification metrics computed from class indices, after evaluate() or
/// predict_classes(): the confusion matrix and what follows from it.
///
///   auto cm = model::confusion_matrix(labels, net.predict_classes(x), 10);
///   cm(3, 6);               // samples of class 3 predicted as class 6
///   cm.class_accuracy(3);   // the share of class 3 predicted correctly
///
/// Requires: as many predictions as true labels, `classes` > 0, and every
/// label and prediction in [0, classes); otherwise ShapeError (sizes) or
/// ValueError (classes, out-of-range indices, naming the sample).
/// Guarantees: counts has classes x classes entries, row = true class,
/// column = predicted class, and sums to the number of samples.
#pragma once

#include <cstdint>
#include <vector>

#include "magmadnn/tensor/tensor.h"

namespace magmadnn::model {

struct ConfusionMatrix {
  std::int64_t classes = 0;
  std::vector<std::int64_t> counts;  ///< row-major: counts[true_class * classes + predicted]

  /// Samples of `true_class` predicted as `predicted` (IndexError outside [0, classes)).
  std::int64_t operator()(std::int64_t true_class, std::int64_t predicted) const;
  /// Samples whose true class is `true_class`.
  std::int64_t class_total(std::int64_t true_class) const;
  /// Correct predictions over class_total(); NaN for a class with no samples.
  double class_accuracy(std::int64_t true_class) const;
  /// All samples counted.
  std::int64_t total() const;
};

/// Rows of `pred` {N, C} whose class matches the one-hot (or 0/1) labels
/// `y`'s: argmax against argmax, or both thresholded at 0.5 for C = 1 (the
/// accuracy NeuralNetwork reports). ShapeError when the sizes differ.
template <typename T>
std::int64_t count_correct(const Tensor<T>& pred, const Tensor<T>& y);

/// The class of every row of `pred` {N, C}: argmax, or 0/1 at 0.5 for C = 1.
template <typename T>
std::vector<std::int64_t> row_classes(const Tensor<T>& pred);

/// The confusion matrix of `predicted` against `true_labels` (see the file comment).
ConfusionMatrix confusion_matrix(const std::vector<std::int64_t>& true_labels,
                                 const std::vector<std::int64_t>& predicted, std::int64_t classes);

}  // namespace magmadnn::model

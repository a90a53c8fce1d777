/// @file test_results.h
/// What report.html shows about the test set once training has finished: the
/// evaluation, the confusion matrix, and a few misclassified images with
/// their pixels, gathered from the trained network's predictions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "magmadnn/model/metrics.h"
#include "magmadnn/model/params.h"
#include "magmadnn/data/samples.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::cli {

/// One test image with its labels.
struct LabelledImage {
  std::int64_t index = 0;  ///< position in the test set
  std::int64_t true_class = 0, predicted_class = 0;
  std::int64_t height = 0, width = 0;
  std::vector<float> pixels;  ///< height * width, row-major, 0 black .. 1 white
};

struct TestResults {
  model::Evaluation evaluation;
  model::ConfusionMatrix confusion;
  std::int64_t misclassified_total = 0;     ///< all wrong predictions
  std::vector<LabelledImage> misclassified;  ///< the ones shown, by true class then test-set order
};

/// The test results of predictions `predicted` for the images `x` whose true
/// classes are `labels`.
/// Requires: labels and predicted hold one class in [0, classes) per sample
/// of x (else the errors of model::confusion_matrix).
/// Guarantees: at most `max_images` misclassified images, taken in turns
/// from each true class (its first errors in test-set order) so that the
/// kinds of mistakes are spread out; none when x is not {N, 1, H, W} (the
/// matrix is still filled).
TestResults collect_test_results(const model::Evaluation& evaluation, const data::Samples<float>& x,
                                 const std::vector<std::int64_t>& labels, const std::vector<std::int64_t>& predicted,
                                 std::int64_t classes, std::size_t max_images = 24);

}  // namespace magmadnn::cli

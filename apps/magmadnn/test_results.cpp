#include "test_results.h"

#include <algorithm>

namespace magmadnn::cli {

TestResults collect_test_results(const model::Evaluation& evaluation, const data::Samples<float>& x,
                                 const std::vector<std::int64_t>& labels, const std::vector<std::int64_t>& predicted,
                                 std::int64_t classes, std::size_t max_images) {
  TestResults r;
  r.evaluation = evaluation;
  r.confusion = model::confusion_matrix(labels, predicted, classes);
  std::vector<std::vector<std::size_t>> wrong(static_cast<std::size_t>(classes));  // per true class
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] != predicted[i]) wrong[static_cast<std::size_t>(labels[i])].push_back(i);
  }
  for (const auto& w : wrong) r.misclassified_total += static_cast<std::int64_t>(w.size());

  const auto& d = x.shape().dims();
  // Only single-channel images can be drawn; the page then shows the matrix alone.
  if (d.size() != 4 || d[1] != 1 || d[0] != static_cast<std::int64_t>(labels.size())) return r;
  std::vector<std::size_t> picked;
  for (std::size_t round = 0; picked.size() < max_images; ++round) {
    bool any = false;
    for (const auto& w : wrong) {
      if (round < w.size() && picked.size() < max_images) {
        picked.push_back(w[round]);
        any = true;
      }
    }
    if (!any) break;
  }
  std::sort(picked.begin(), picked.end(), [&](std::size_t a, std::size_t b) {
    return labels[a] != labels[b] ? labels[a] < labels[b] : a < b;
  });
  const std::int64_t h = d[2], w = d[3];
  for (std::size_t i : picked) {
    LabelledImage im;
    im.index = static_cast<std::int64_t>(i);
    im.true_class = labels[i];
    im.predicted_class = predicted[i];
    im.height = h;
    im.width = w;
    im.pixels.resize(static_cast<std::size_t>(h * w));
    const auto row = static_cast<std::int64_t>(i);
    x.gather(&row, 0, 1, im.pixels.data());
    r.misclassified.push_back(std::move(im));
  }
  return r;
}

}  // namespace magmadnn::cli

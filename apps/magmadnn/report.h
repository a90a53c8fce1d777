/// @file report.h
/// report.html of a run folder: one self-contained page (inline CSS, SVG and
/// data: URI PNG images; no script, no external resource, so it opens
/// offline and from a file URL) that tells at a glance how a run went:
///  - a headline of cards: test accuracy and loss, training time, samples/s,
///    peak memory against what training needs (data set, parameters,
///    gradients, optimizer state), device and threads;
///  - loss and accuracy curves per epoch (training and validation, and the
///    test split's when the run scored it every epoch), the seconds of every
///    epoch, and the per-epoch table;
///  - on the test set: the confusion matrix (counts, cells coloured by their
///    share of the true class) with per-class accuracy, under the data set's
///    class names, and a grid of misclassified images with their true and
///    predicted labels;
///  - all summary values and the config, folded away (<details>).
///
/// Headline formats (tools/screenshot-report.sh looks for exactly these):
/// accuracy "%.2f%%" of 100 x the fraction, loss "%.4f", times "%.2f s",
/// samples/s rounded to an integer with ',' between thousands, memory
/// "%.1f MiB" (2^20 bytes), threads "N threads" ("1 thread"), device as
/// written in the summary.
///
/// Requires nothing of the input: an empty history, a summary without some
/// keys (the in-progress {"status": "training"}), no test results or no
/// class names give a page that says what is not there yet (the in-progress
/// headline shows the epoch reached and the latest accuracy instead of the
/// test results); NaN values (no validation) are left out of the curves and
/// shown as "-"; classes without a name are shown by index.
/// Guarantees: the page lays nothing out wider than its window down to
/// about 600 px (content width capped, long values wrapped, the confusion
/// matrix scrolls inside its own box when it has too many classes); every
/// string taken from the run (name, class names, config, summary) is
/// HTML-escaped.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "run_names.h"
#include "html.h"
#include "magmadnn/model/params.h"
#include "report_charts.h"
#include "test_curve.h"
#include "test_results.h"

namespace magmadnn::cli {

struct ReportInput {
  std::string title;                     ///< e.g. the config's name
  model::History history;                ///< one record per epoch, in order
  Json summary;                          ///< summary.json's content
  Json config;                           ///< the resolved config
  std::vector<std::string> class_names;  ///< in label order (dataset.h: class_names)
  std::optional<TestResults> test;       ///< absent while training
  /// The test split scored after every epoch (test_every_epoch); empty: not
  /// recorded. When present, the loss and accuracy charts show it as well.
  TestCurve test_curve;

  ReportInput() = default;
  /// The in-progress page needs only the first four.
  ReportInput(std::string title_, model::History history_, Json summary_, Json config_,
              std::vector<std::string> class_names_ = {}, std::optional<TestResults> test_ = std::nullopt)
      : title(std::move(title_)),
        history(std::move(history_)),
        summary(std::move(summary_)),
        config(std::move(config_)),
        class_names(std::move(class_names_)),
        test(std::move(test_)) {}
};

/// The HTML text of the report.
std::string render_report(const ReportInput& in);

}  // namespace magmadnn::cli

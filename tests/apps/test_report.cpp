// report.html: self-contained, both curves of both charts, escaped strings.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <string>

#include "report.h"

using namespace magmadnn;
using namespace magmadnn::cli;

namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

ReportInput sample(bool with_validation) {
  ReportInput in;
  in.title = "mlp <test>";
  for (unsigned e = 1; e <= 4; ++e) {
    model::EpochRecord r;
    r.epoch = e;
    r.train_loss = 1.0 / e;
    r.train_accuracy = 0.6 + 0.05 * e;
    r.val_loss = with_validation ? 1.1 / e : std::numeric_limits<double>::quiet_NaN();
    r.val_accuracy = with_validation ? 0.55 + 0.05 * e : std::numeric_limits<double>::quiet_NaN();
    r.seconds = 2.0;
    r.learning_rate = 0.05;
    in.history.push_back(r);
  }
  in.summary = {{"test_accuracy", 0.81}, {"epochs", 4}};
  in.config = {{"name", "mlp <test>"}, {"data", {{"dir", "/tmp/a&b"}}}};
  return in;
}

}  // namespace

TEST(CliReport, HasTwoChartsWithBothCurves) {
  const std::string html = render_report(sample(true));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), 2u);
  EXPECT_EQ(count(html, "<polyline"), 4u);  // train and validation, loss and accuracy
  for (const char* label : {"train loss", "validation loss", "train accuracy", "validation accuracy"}) {
    EXPECT_NE(html.find(std::string("data-series=\"") + label + "\""), std::string::npos) << label;
  }
  // Axis titles and one tick label per epoch on the x axes.
  EXPECT_EQ(count(html, ">epoch</text>"), 2u);
  EXPECT_NE(html.find(">loss</text>"), std::string::npos);
  EXPECT_NE(html.find(">accuracy</text>"), std::string::npos);
  EXPECT_GE(count(html, ">4</text>"), 2u);
  // Every epoch's point is drawn (4 per series, 4 series).
  EXPECT_EQ(count(html, "<circle"), 16u);
}

TEST(CliReport, IsSelfContained) {
  const std::string html = render_report(sample(true));
  EXPECT_EQ(html.find("http"), std::string::npos);  // no links, no xmlns, nothing fetched
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
}

TEST(CliReport, EscapesRunStrings) {
  const std::string html = render_report(sample(true));
  EXPECT_EQ(html.find("mlp <test>"), std::string::npos);
  EXPECT_NE(html.find("mlp &lt;test&gt;"), std::string::npos);
  EXPECT_NE(html.find("/tmp/a&amp;b"), std::string::npos);
}

TEST(CliReport, WithoutValidationDrawsOnlyTrainingCurves) {
  const std::string html = render_report(sample(false));
  EXPECT_EQ(count(html, "<polyline"), 2u);
  EXPECT_EQ(html.find("data-series=\"validation loss\""), std::string::npos);
  EXPECT_NE(html.find("<td>-</td>"), std::string::npos);  // NaN shown as "-" in the table
}

TEST(CliReport, PointsLieInsideThePlotArea) {
  // A single epoch and a flat series must still map to finite coordinates.
  Series s{"flat", "#000", false, {1.0}, {0.5}};
  const std::string svg = svg_line_chart("t", "epoch", "y", {s});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("cx=\"([-0-9.]+)\" cy=\"([-0-9.]+)\"")));
  const double cx = std::stod(m[1]), cy = std::stod(m[2]);
  EXPECT_GT(cx, 64.0);
  EXPECT_LT(cx, 540.0 - 16.0);
  EXPECT_GT(cy, 34.0);
  EXPECT_LT(cy, 330.0 - 52.0);
  EXPECT_NE(svg_line_chart("t", "x", "y", {}).find("no data"), std::string::npos);
}

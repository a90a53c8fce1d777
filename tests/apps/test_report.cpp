// report.html: the headline as readable values, the curves and epoch times,
// the confusion matrix under class names, misclassified images that decode,
// escaping, self-containment, and the page of a run still in progress.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <regex>
#include <string>

#include "magmadnn/run/dataset.h"
#include "report.h"
#include "test_results.h"

using namespace magmadnn;
using namespace magmadnn::cli;

namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The text between `from` and the next `to` (empty when `from` is absent).
std::string between(const std::string& s, const std::string& from, const std::string& to) {
  const auto a = s.find(from);
  if (a == std::string::npos) return "";
  const auto b = s.find(to, a);
  return s.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

model::History history(bool with_validation, unsigned epochs = 4) {
  model::History h;
  for (unsigned e = 1; e <= epochs; ++e) {
    model::EpochRecord r;
    r.epoch = e;
    r.train_loss = 1.0 / e;
    r.train_accuracy = 0.6 + 0.05 * e;
    r.val_loss = with_validation ? 1.1 / e : std::numeric_limits<double>::quiet_NaN();
    r.val_accuracy = with_validation ? 0.55 + 0.05 * e : std::numeric_limits<double>::quiet_NaN();
    r.seconds = 2.0;
    r.samples_per_second = 1500;
    r.learning_rate = 0.05;
    h.push_back(r);
  }
  return h;
}

// Three classes; true 0 predicted 1 once, true 2 predicted 0 twice.
TestResults test_results_of_three_classes() {
  const std::vector<std::int64_t> truth = {0, 0, 0, 1, 1, 2, 2, 2, 2};
  const std::vector<std::int64_t> pred = {0, 0, 1, 1, 1, 0, 2, 0, 2};
  std::vector<float> pixels;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    for (int p = 0; p < 6; ++p) pixels.push_back(static_cast<float>((i + p) % 5) / 4.0f);  // 0 .. 1
  }
  const Tensor<float> x = Tensor<float>::from_vector({9, 1, 2, 3}, pixels);
  model::Evaluation ev;
  ev.accuracy = 6.0 / 9.0;
  ev.loss = 0.53091;
  ev.samples = 9;
  return collect_test_results(ev, x, truth, pred, 3);
}

ReportInput finished() {
  ReportInput in;
  in.title = "mlp <test>";
  in.history = history(true);
  in.summary = Json::parse(R"({"name": "mlp <test>", "test_accuracy": 0.6667, "test_loss": 0.53091,
    "train_seconds": 8.0, "epochs": 4, "samples_per_second": 12345.4, "train_samples": 60000,
    "parameters": 419770, "threads": 4, "device": "cpu", "wall_seconds": 9.5,
    "memory": {"dataset_bytes": 7340032, "parameter_bytes": 1048576, "gradient_bytes": 1048576,
               "optimizer_state_bytes": 0, "peak_rss_bytes": 38482739, "peak_rss_scope": "training",
               "peak_rss_over_needed": 4.0}})");
  in.config = {{"name", "mlp <test>"}, {"epochs", 4}, {"data", {{"dataset", "three"}, {"dir", "/tmp/a&b"}}}};
  in.class_names = {"Cat", "Dog <b>", "Bird"};
  in.test = test_results_of_three_classes();
  return in;
}

std::string base64_decode(const std::string& s) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<std::uint32_t>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::uint32_t be32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// Decodes an 8-bit greyscale PNG of the kind png.h writes, checking every CRC.
std::vector<std::uint8_t> decode_grey_png(const std::string& png, std::uint32_t& width, std::uint32_t& height) {
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::string idat;
  for (std::size_t at = 8; at + 12 <= png.size();) {
    const std::uint32_t len = be32(png, at);
    const std::string type = png.substr(at + 4, 4), body = png.substr(at + 8, len);
    const std::string typed = type + body;
    EXPECT_EQ(be32(png, at + 8 + len),
              crc32(0, reinterpret_cast<const Bytef*>(typed.data()), static_cast<uInt>(typed.size())))
        << type;
    if (type == "IHDR") {
      width = be32(body, 0);
      height = be32(body, 4);
      EXPECT_EQ(body[8], 8);  // depth
      EXPECT_EQ(body[9], 0);  // greyscale
    }
    if (type == "IDAT") idat += body;
    at += 12 + len;
  }
  uLongf raw_size = (width + 1) * height;
  std::vector<std::uint8_t> raw(raw_size);
  EXPECT_EQ(uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()),
                       static_cast<uLong>(idat.size())),
            Z_OK);
  EXPECT_EQ(raw_size, (width + 1) * height);
  std::vector<std::uint8_t> pixels;
  for (std::uint32_t r = 0; r < height; ++r) {
    EXPECT_EQ(raw[r * (width + 1)], 0);  // filter type none
    pixels.insert(pixels.end(), raw.begin() + r * (width + 1) + 1, raw.begin() + (r + 1) * (width + 1));
  }
  return pixels;
}

}  // namespace

TEST(CliReport, HeadlineShowsReadableValues) {
  const std::string html = render_report(finished());
  const std::string head = between(html, "aria-label=\"headline\"", "</section>");
  ASSERT_FALSE(head.empty());
  for (const char* value : {">66.67%<", ">0.5309<", ">8.00 s<", ">12,345<", ">36.7 MiB<", ">cpu<", "4 threads",
                            "9 test samples", "training needs 9.0 MiB", "wall 9.50 s"}) {
    EXPECT_NE(head.find(value), std::string::npos) << value << " not in the headline:\n" << head;
  }
  for (const char* label : {"Test accuracy", "Test loss", "Training time", "Samples/s", "Peak memory", "Device"}) {
    EXPECT_NE(head.find(std::string(">") + label + "<"), std::string::npos) << label;
  }
  // Raw JSON only in the folded summary, never in the visible page.
  const std::string visible = html.substr(0, html.find("<details"));
  EXPECT_EQ(visible.find("dataset_bytes"), std::string::npos);
  EXPECT_EQ(visible.find('{', visible.find("</style>")), std::string::npos);
  EXPECT_NE(html.find("<th>memory.peak_rss_bytes</th><td>38482739</td>"), std::string::npos);
  EXPECT_NE(html.find("<summary>Config</summary>"), std::string::npos);
}

TEST(CliReport, HasCurvesAndTimePerEpoch) {
  const std::string html = render_report(finished());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), 3u);
  EXPECT_EQ(count(html, "<polyline"), 4u);  // train and validation, loss and accuracy
  for (const char* label : {"train loss", "validation loss", "train accuracy", "validation accuracy"}) {
    EXPECT_NE(html.find(std::string("data-series=\"") + label + "\""), std::string::npos) << label;
  }
  EXPECT_EQ(count(html, ">epoch</text>"), 3u);
  EXPECT_NE(html.find(">loss</text>"), std::string::npos);
  EXPECT_NE(html.find(">accuracy</text>"), std::string::npos);
  EXPECT_NE(html.find(">seconds</text>"), std::string::npos);
  EXPECT_EQ(count(html, "<circle"), 16u);  // 4 points per series, 4 series
  const std::string bars = between(html, "<g class=\"bars\"", "</g>");
  EXPECT_EQ(count(bars, "<rect"), 4u);  // one bar per epoch
  EXPECT_NE(bars.find("<title>epoch 4: 2 seconds</title>"), std::string::npos) << bars;
}

TEST(CliReport, ConfusionMatrixUnderClassNames) {
  const std::string html = render_report(finished());
  const std::string table = between(html, "<table class=\"confusion\"", "</table>");
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(count(table, "<td class=\"cell"), 9u);
  for (const char* name : {"Cat", "Dog &lt;b&gt;", "Bird"}) {
    EXPECT_NE(table.find(std::string("<th scope=\"col\">") + name + "</th>"), std::string::npos) << name;
    EXPECT_NE(table.find(std::string("<th scope=\"row\">") + name + "</th>"), std::string::npos) << name;
  }
  // Cells: counts, a tooltip naming both classes, coloured by the share of the row.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(table, m, std::regex("<td class=\"cell\" style=\"background:rgba\\(230,85,13,[0-9.]+\\)"
                                                     "[^\"]*\" title=\"true Bird, predicted Cat: 2 \\(50.00%\\)\">2</td>")))
      << table;
  EXPECT_NE(table.find("title=\"true Cat, predicted Cat: 2 (66.67%)\">2</td>"), std::string::npos);
  EXPECT_NE(table.find("title=\"true Dog &lt;b&gt;, predicted Dog &lt;b&gt;: 2 (100.00%)\">2</td>"),
            std::string::npos);
  EXPECT_NE(table.find("<td class=\"cell zero\" title=\"true Dog &lt;b&gt;, predicted Cat: 0 (0.00%)\">0</td>"),
            std::string::npos);
  // Per-class accuracy: Cat 2/3, Dog 2/2, Bird 2/4.
  for (const char* acc : {"66.67%</td>", "100.00%</td>", "50.00%</td>"}) {
    EXPECT_NE(table.find(acc), std::string::npos) << acc;
  }
}

TEST(CliReport, MisclassifiedImagesDecode) {
  const ReportInput in = finished();
  const std::string html = render_report(in);
  EXPECT_NE(html.find("3 of 3 misclassified images"), std::string::npos);
  const std::regex img("<img src=\"data:image/png;base64,([A-Za-z0-9+/=]+)\" width=\"9\" height=\"6\" alt=\"test "
                       "image ([0-9]+): ([^\"]*) predicted as ([^\"]*)\">");
  std::vector<std::smatch> found;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), img); it != std::sregex_iterator(); ++it) {
    found.push_back(*it);
  }
  ASSERT_EQ(found.size(), 3u);
  // By true class: sample 2 (Cat as Dog), then 5 and 7 (Bird as Cat).
  EXPECT_EQ(found[0][2], "2");
  EXPECT_EQ(found[0][3], "Cat");
  EXPECT_EQ(found[0][4], "Dog &lt;b&gt;");
  EXPECT_EQ(found[1][2], "5");
  EXPECT_EQ(found[2][2], "7");
  EXPECT_NE(html.find("<span class=\"pred\">&rarr; Dog &lt;b&gt;</span>"), std::string::npos);
  for (std::size_t k = 0; k < found.size(); ++k) {
    std::uint32_t w = 0, h = 0;
    const std::vector<std::uint8_t> pixels = decode_grey_png(base64_decode(found[k][1]), w, h);
    ASSERT_EQ(w, 3u);
    ASSERT_EQ(h, 2u);
    const auto& expected = in.test->misclassified[k].pixels;
    ASSERT_EQ(pixels.size(), expected.size());
    for (std::size_t i = 0; i < pixels.size(); ++i) {
      EXPECT_EQ(pixels[i], static_cast<std::uint8_t>(std::lround(expected[i] * 255))) << "image " << k << " pixel " << i;
    }
  }
}

TEST(CliReport, MisclassifiedSectionWithoutImages) {
  ReportInput in = finished();
  in.test->misclassified.clear();  // as for inputs that are not {N, 1, H, W}
  std::string html = render_report(in);
  EXPECT_NE(html.find("3 misclassified images; the inputs are not single-channel images"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  in.test->misclassified_total = 0;
  html = render_report(in);
  EXPECT_NE(html.find("Every test image was classified correctly."), std::string::npos);
}

TEST(CliReport, IsSelfContained) {
  const std::string html = render_report(finished());
  EXPECT_EQ(html.find("http"), std::string::npos);  // no links, no xmlns, nothing fetched
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(count(html, "src="), count(html, "src=\"data:image/png;base64,"));  // images are inline
}

TEST(CliReport, EscapesRunStrings) {
  const std::string html = render_report(finished());
  EXPECT_EQ(html.find("mlp <test>"), std::string::npos);
  EXPECT_EQ(html.find("Dog <b>"), std::string::npos);
  EXPECT_NE(html.find("mlp &lt;test&gt;"), std::string::npos);
  EXPECT_NE(html.find("/tmp/a&amp;b"), std::string::npos);
}

TEST(CliReport, InProgressPageSaysWhereTrainingStands) {
  ReportInput in{"mlp (in progress)", history(true, 2), Json{{"status", "training"}},
                 Json{{"name", "mlp"}, {"epochs", 5}}};
  const std::string html = render_report(in);
  const std::string head = between(html, "aria-label=\"headline\"", "</section>");
  EXPECT_NE(head.find(">epoch 2 of 5<"), std::string::npos) << head;
  EXPECT_NE(head.find(">Validation accuracy<"), std::string::npos);
  EXPECT_NE(head.find(">65.00%<"), std::string::npos);  // the last epoch's
  EXPECT_NE(head.find(">Training time so far<"), std::string::npos);
  EXPECT_NE(head.find(">4.00 s<"), std::string::npos);
  EXPECT_EQ(head.find("Test accuracy"), std::string::npos);
  EXPECT_EQ(head.find("MiB"), std::string::npos);  // memory is measured at the end
  EXPECT_NE(html.find("appear once training has finished"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("class=\"confusion\""), std::string::npos);
  EXPECT_EQ(count(html, "<polyline"), 4u);

  const std::string empty = render_report({"mlp (in progress)", {}, Json{{"status", "training"}}, Json::object()});
  EXPECT_NE(empty.find(">starting<"), std::string::npos);
  EXPECT_NE(empty.find("No epoch has finished yet."), std::string::npos);
  EXPECT_EQ(count(empty, "no data</text>"), 3u);
}

TEST(CliReport, WithoutValidationDrawsOnlyTrainingCurves) {
  ReportInput in = finished();
  in.history = history(false);
  const std::string html = render_report(in);
  EXPECT_EQ(count(html, "<polyline"), 2u);
  EXPECT_EQ(html.find("data-series=\"validation loss\""), std::string::npos);
  EXPECT_NE(html.find("<td>-</td>"), std::string::npos);  // NaN shown as "-" in the table
  in.test.reset();  // in progress without validation: the train accuracy stands in
  const std::string head = between(render_report(in), "aria-label=\"headline\"", "</section>");
  EXPECT_NE(head.find(">Train accuracy<"), std::string::npos);
}

TEST(CliReport, ClassesWithoutNamesShowTheirIndex) {
  ReportInput in = finished();
  in.class_names = {"Cat"};
  const std::string table = between(render_report(in), "<table class=\"confusion\"", "</table>");
  EXPECT_NE(table.find("<th scope=\"col\">Cat</th><th scope=\"col\">1</th><th scope=\"col\">2</th>"),
            std::string::npos);
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

TEST(CliReport, LegendAvoidsTheLines) {
  auto legend_y = [](const std::string& svg) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(svg, m, std::regex("<g class=\"legend\">.*?<text x=\"[0-9.]+\" y=\"([0-9.]+)\">")));
    return m.empty() ? 0.0 : std::stod(m[1]);
  };
  const double middle = 34.0 + (330.0 - 34.0 - 52.0) / 2;
  const std::vector<double> x = {1, 2, 3, 4, 5};
  const Series falling{"loss", "#000", false, x, {1.0, 0.6, 0.5, 0.45, 0.4}};
  const Series rising{"accuracy", "#000", false, x, {0.6, 0.75, 0.8, 0.82, 0.83}};
  EXPECT_LT(legend_y(svg_line_chart("t", "epoch", "y", {falling})), middle);  // top right is free
  EXPECT_GT(legend_y(svg_line_chart("t", "epoch", "y", {rising})), middle);   // bottom right is free
}

TEST(CliReport, BarsStandOnZeroInsideThePlotArea) {
  const std::string svg = svg_bar_chart("t", "epoch", "seconds", "#000", {1, 2, 3}, {1.0, 3.0, 2.0});
  const std::regex bar("<rect x=\"([-0-9.]+)\" y=\"([-0-9.]+)\" width=\"([0-9.]+)\" height=\"([0-9.]+)\"><title>");
  int bars = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it, ++bars) {
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]), w = std::stod((*it)[3]), h = std::stod((*it)[4]);
    EXPECT_GT(x, 64.0);
    EXPECT_LT(x + w, 540.0 - 16.0);
    EXPECT_GT(h, 0.0);
    EXPECT_NEAR(y + h, 330.0 - 52.0, 0.11);  // on the zero line, the bottom of the plot
  }
  EXPECT_EQ(bars, 3);
  EXPECT_NE(svg_bar_chart("t", "x", "y", "#000", {}, {}).find("no data"), std::string::npos);
}

TEST(CliReport, ClassNamesOfTheDataSets) {
  const auto fashion = class_names("fashion-mnist", 10);
  ASSERT_EQ(fashion.size(), 10u);
  EXPECT_EQ(fashion[0], "T-shirt/top");
  EXPECT_EQ(fashion[6], "Shirt");
  EXPECT_EQ(fashion[9], "Ankle boot");
  EXPECT_EQ(class_names("mnist", 10), std::vector<std::string>({"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));
  EXPECT_EQ(class_names("other", 3), std::vector<std::string>({"0", "1", "2"}));
  EXPECT_EQ(class_names("fashion-mnist", 3), std::vector<std::string>({"0", "1", "2"}));  // not its 10 classes
  EXPECT_TRUE(class_names("mnist", 0).empty());
}

TEST(CliReport, TestResultsPickMistakesInTurnsPerClass) {
  // Class 0 has 3 mistakes, class 1 one, class 2 none: with room for 3, two from class 0 and one from class 1.
  const std::vector<std::int64_t> truth = {0, 0, 1, 0, 2, 1};
  const std::vector<std::int64_t> pred = {1, 2, 0, 1, 2, 1};
  std::vector<float> pixels(6 * 4);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i);
  const Tensor<float> x = Tensor<float>::from_vector({6, 1, 2, 2}, pixels);
  const TestResults r = collect_test_results({}, x, truth, pred, 3, 3);
  EXPECT_EQ(r.misclassified_total, 4);
  EXPECT_EQ(r.confusion(0, 1), 2);
  ASSERT_EQ(r.misclassified.size(), 3u);
  EXPECT_EQ(r.misclassified[0].index, 0);
  EXPECT_EQ(r.misclassified[1].index, 1);
  EXPECT_EQ(r.misclassified[2].index, 2);
  EXPECT_EQ(r.misclassified[2].true_class, 1);
  EXPECT_EQ(r.misclassified[2].predicted_class, 0);
  EXPECT_EQ(r.misclassified[1].pixels, std::vector<float>({4, 5, 6, 7}));
  EXPECT_EQ(r.misclassified[1].height, 2);
  // Images that are not {N, 1, H, W} are not drawn, but still counted.
  const TestResults flat = collect_test_results({}, Tensor<float>::from_vector({6, 4}, pixels), truth, pred, 3);
  EXPECT_TRUE(flat.misclassified.empty());
  EXPECT_EQ(flat.misclassified_total, 4);
}

// magmadnn compare: the page of several runs (every run in both charts and
// the table, points at the running sum of metrics.csv's seconds, labels from
// ranks and strategy, the accuracy's split named), test_per_epoch.csv, the
// opt-in test_every_epoch leaving training unchanged, and the command's
// refusals (not a run, other data sets, nothing to compare).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli.h"
#include "compare.h"
#include "support/run_fixtures.h"
#include "magmadnn/io/idx.h"
#include "run_folder.h"
#include "test_curve.h"

using namespace magmadnn;
using namespace magmadnn::cli;
namespace fs = std::filesystem;

namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The <svg> element whose aria-label is `title`.
std::string chart(const std::string& page, const std::string& title) {
  const auto a = page.find("aria-label=\"" + title + "\"");
  if (a == std::string::npos) return "";
  return page.substr(a, page.find("</svg>", a) - a);
}

struct Point {
  double x, y;
};

// The points of the series labelled `label` in `svg`, from their tooltips
// ("LABEL, training time (s) X: Y"), in the order drawn.
std::vector<Point> points(const std::string& svg, const std::string& label) {
  std::vector<Point> p;
  const std::regex title("<title>" + std::regex_replace(label, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                         R"(, training time \(s\) ([-0-9.e+]+): ([-0-9.e+]+)</title>)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), title); it != std::sregex_iterator(); ++it) {
    p.push_back({std::stod((*it)[1]), std::stod((*it)[2])});
  }
  return p;
}

model::History history(unsigned epochs, double seconds_per_epoch, double loss0) {
  model::History h;
  for (unsigned e = 1; e <= epochs; ++e) {
    model::EpochRecord r;
    r.epoch = e;
    r.train_loss = loss0 / e;
    r.train_accuracy = 0.5 + 0.04 * e;
    r.val_loss = 1.2 * loss0 / e;
    r.val_accuracy = 0.45 + 0.05 * e;
    r.seconds = seconds_per_epoch * (1 + 0.1 * e);  // uneven, so a wrong running sum shows
    r.samples_per_second = 1000;
    r.learning_rate = 0.05;
    h.push_back(r);
  }
  return h;
}

CompareRun run_of(const std::string& name, model::History h, Json summary) {
  CompareRun r;
  r.dir = "/runs/" + name;
  r.name = name;
  r.config = {{"name", "mlp"}, {"batch_size", 100}, {"data", {{"dataset", "fashion-mnist"}, {"dir", "/d"}}}};
  r.summary = std::move(summary);
  r.history = std::move(h);
  return r;
}

std::vector<CompareRun> three_runs() {
  return {run_of("one", history(4, 2.0, 2.0),
                 {{"test_accuracy", 0.8123}, {"test_loss", 0.5}, {"train_seconds", 11.0}, {"epochs", 4},
                  {"samples_per_second", 21818.2}, {"batch_size", 100}}),
          run_of("two", history(3, 1.0, 1.5),
                 {{"ranks", 2}, {"strategy", "allreduce"}, {"test_accuracy", 0.77}, {"epochs", 3},
                  {"batch_size", 200}}),
          run_of("four <b>", history(5, 0.5, 1.8), {{"ranks", 4}, {"strategy", "ps"}})};
}

}  // namespace

TEST(CliCompare, EveryRunHasACurveInBothChartsAndARow) {
  const auto runs = three_runs();
  const std::string page = render_compare(runs);
  const std::string loss = chart(page, "Training loss against time");
  const std::string acc = chart(page, "Validation accuracy against time");
  ASSERT_FALSE(loss.empty());
  ASSERT_FALSE(acc.empty()) << "every run has validation: the chart says so";
  for (const char* label : {"1 rank: one", "2 ranks, allreduce: two", "4 ranks, ps: four &lt;b&gt;"}) {
    const std::string series = "data-series=\"" + std::string(label) + "\"";
    EXPECT_EQ(count(loss, series), 1u) << label;
    EXPECT_EQ(count(acc, series), 1u) << label;
    EXPECT_EQ(count(loss, ">" + std::string(label) + "</text></g>"), 1u) << "legend entry " << label;
  }
  for (const char* row : {"data-run=\"one\"", "data-run=\"two\"", "data-run=\"four &lt;b&gt;\""}) {
    EXPECT_EQ(count(page, row), 1u) << row;
  }
  EXPECT_EQ(page.find("<b>"), std::string::npos);  // escaped everywhere
  EXPECT_EQ(page.find("http"), std::string::npos);  // self-contained
  EXPECT_EQ(page.find("<script"), std::string::npos);
  // Table values: ranks, strategy, global batch, test accuracy, time, samples/s.
  EXPECT_NE(page.find("</span>one</td><td>1</td><td>-</td><td>100</td><td>4</td><td>0.5000</td><td>0.5000</td>"
                      "<td>81.23%</td><td>11.00 s</td><td>21,818</td></tr>"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("</span>two</td><td>2</td><td>allreduce</td><td>200</td><td>3</td>"), std::string::npos);
}

TEST(CliCompare, PointsAreTheEpochsAtTheRunningSumOfTheirSeconds) {
  const auto runs = three_runs();
  const std::string page = render_compare(runs);
  const std::string loss = chart(page, "Training loss against time");
  const std::string acc = chart(page, "Validation accuracy against time");
  for (const auto& r : runs) {
    const std::string label = std::regex_replace(run_label(r), std::regex("<"), "&lt;");
    const std::string esc = std::regex_replace(label, std::regex(">"), "&gt;");
    const auto lp = points(loss, esc), ap = points(acc, esc);
    ASSERT_EQ(lp.size(), r.history.size()) << label;
    ASSERT_EQ(ap.size(), r.history.size()) << label;
    double t = 0;
    for (std::size_t i = 0; i < r.history.size(); ++i) {
      t += r.history[i].seconds;
      EXPECT_NEAR(lp[i].x, t, 1e-3 * t) << label << " epoch " << i + 1;
      EXPECT_NEAR(lp[i].y, r.history[i].train_loss, 1e-4 * r.history[i].train_loss);
      EXPECT_NEAR(ap[i].x, t, 1e-3 * t);
      EXPECT_NEAR(ap[i].y, r.history[i].val_accuracy, 1e-4);
    }
  }
  // The time axis starts at zero.
  EXPECT_NE(loss.find("text-anchor=\"middle\">0</text>"), std::string::npos);
}

TEST(CliCompare, AccuracyNamesItsSplit) {
  auto runs = three_runs();
  // The first run scored the test split after every epoch: its curve is that.
  runs[0].test_curve = {{1, 0.9, 0.61}, {2, 0.7, 0.69}, {3, 0.6, 0.74}, {4, 0.55, 0.8123}};
  std::string page = render_compare(runs);
  std::string acc = chart(page, "Accuracy against time");
  ASSERT_FALSE(acc.empty());
  const auto tp = points(acc, "1 rank: one (test)");
  ASSERT_EQ(tp.size(), 4u);
  EXPECT_NEAR(tp[3].y, 0.8123, 1e-6);
  EXPECT_NEAR(tp[3].x, 2.2 + 2.4 + 2.6 + 2.8, 1e-3);
  EXPECT_EQ(points(acc, "2 ranks, allreduce: two (validation)").size(), 3u);
  EXPECT_NE(page.find("test_every_epoch"), std::string::npos);  // the note says where test points come from

  // All with test curves: "Test accuracy against time".
  for (auto& r : runs) {
    r.test_curve.clear();
    for (const auto& e : r.history) r.test_curve.push_back({e.epoch, 1.0, 0.5});
  }
  page = render_compare(runs);
  EXPECT_FALSE(chart(page, "Test accuracy against time").empty());
  EXPECT_NE(page.find(">test accuracy</text>"), std::string::npos);  // the axis

  // No validation and no test curve: the training accuracy, said so.
  for (auto& r : runs) {
    r.test_curve.clear();
    for (auto& e : r.history) e.val_accuracy = std::numeric_limits<double>::quiet_NaN();
  }
  page = render_compare(runs);
  EXPECT_FALSE(chart(page, "Train accuracy against time").empty());
}

TEST(CliCompare, RunsOfDifferentDataSetsOrNoneAreRefused) {
  auto runs = three_runs();
  EXPECT_NO_THROW(check_comparable(runs));
  runs[2].config["data"]["dataset"] = "mnist";
  try {
    check_comparable(runs);
    FAIL() << "mnist and fashion-mnist compared";
  } catch (const ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("different data sets"), std::string::npos) << m;
    EXPECT_NE(m.find("/runs/one"), std::string::npos) << m;
    EXPECT_NE(m.find("\"mnist\""), std::string::npos) << m;
  }
  // "idx" data sets are told apart by their folder.
  runs = three_runs();
  for (auto& r : runs) r.config["data"]["dataset"] = "idx";
  EXPECT_NO_THROW(check_comparable(runs));
  runs[1].config["data"]["dir"] = "/other";
  EXPECT_THROW(check_comparable(runs), ValueError);
  EXPECT_THROW(check_comparable({}), ValueError);
}

// summary.json's "ranks" labels the run; a value no run writes (1e300, whose
// cast to an integer is undefined: seen while writing tests/fuzz's compare
// target) is refused naming the file and the field, as is a strategy that
// is not a string. Absent, the run is one process without a strategy.
TEST(CliCompare, SummaryRanksAndStrategyOfAnotherTypeAreRefused) {
  const std::string dir = (fs::temp_directory_path() / ("magmadnn-compare-summary-" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  std::ofstream(dir + "/config.json") << R"({"data": {"dataset": "fashion-mnist"}})";
  std::ofstream(dir + "/metrics.csv") << metrics_csv(history(2, 1.0, 1.0));
  const auto summary = [&](const std::string& text) { std::ofstream(dir + "/summary.json") << text; };
  summary(R"({"test_accuracy": 0.5})");
  EXPECT_EQ(ranks_of(read_compare_run(dir)), 1);
  summary(R"({"ranks": 3, "strategy": "ring"})");
  EXPECT_EQ(run_label(read_compare_run(dir)), "3 ranks, ring: " + fs::path(dir).filename().string());
  for (const char* bad : {R"({"ranks": 1e300})", R"({"ranks": 2.5})", R"({"ranks": 0})", R"({"ranks": "2"})",
                          R"({"ranks": -1e300})", R"({"strategy": 5})"}) {
    summary(bad);
    try {
      (void)read_compare_run(dir);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find("summary.json"), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(CliCompare, TestCurveCsvRoundTripsAndNamesMistakes) {
  const TestCurve c = {{1, 0.912345678, 0.5}, {2, 0.5, 0.75}};
  EXPECT_EQ(parse_test_curve_csv(test_curve_csv(c), "f"), c);
  EXPECT_EQ(test_curve_csv(c), "epoch,test_loss,test_accuracy\n1,0.912345678,0.5\n2,0.5,0.75\n");
  auto error = [](const std::string& text) {
    try {
      parse_test_curve_csv(text, "t.csv");
    } catch (const IOError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("epoch,loss\n").find("t.csv:1: unexpected header"), std::string::npos);
  EXPECT_NE(error("epoch,test_loss,test_accuracy\n1,0.5\n").find("t.csv:2: expected 3 fields"), std::string::npos);
  EXPECT_NE(error("epoch,test_loss,test_accuracy\n1,0.5,x\n").find("t.csv:2: field 3 is not a number"),
            std::string::npos);
  EXPECT_NE(error("epoch,test_loss,test_accuracy\n0,0.5,0.5\n").find("is not a positive integer"), std::string::npos);
}

TEST(CliCompare, TestEveryEpochIsAnOptInConfigKey) {
  Json j = {{"layers", Json::array({{{"type", "flatten"}}, {{"type", "dense"}, {"units", 3}}})}};
  EXPECT_FALSE(parse_config(j).test_every_epoch);
  EXPECT_FALSE(to_json(parse_config(j)).contains("test_every_epoch"));  // configs without it stay as they were
  j["test_every_epoch"] = true;
  const TrainSpec s = parse_config(j);
  EXPECT_TRUE(s.test_every_epoch);
  EXPECT_EQ(parse_config(to_json(s)), s);
  j["test_every_epoch"] = 1;
  EXPECT_THROW(parse_config(j), ConfigError);
}

// ---- the command, on tiny runs it trains ----------------------------------------

namespace {

constexpr int kSide = 8, kClasses = 3;

// Class c lights rows [2c+1, 2c+3) of an 8x8 image over noise.
void write_split(const std::string& dir, const std::string& prefix, int n, unsigned seed) {
  test::write_stripes(dir, prefix, n, seed, {60, 220, false});
}

struct Result {
  int rc;
  std::string out, err;
};

Result run_cmd(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = run_cli(args, out, err);
  return {rc, out.str(), err.str()};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class CliCompareCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = ::testing::TempDir() + "/magmadnn_compare_" + std::to_string(::getpid());
    fs::remove_all(root_);
    for (const char* d : {"/data", "/other-data"}) {
      fs::create_directories(root_ + d);
      write_split(root_ + d, "train", 200, 1);
      write_split(root_ + d, "t10k", 60, 2);
    }
    const Json cfg = {
        {"name", "tiny"},
        {"layers", Json::array({{{"type", "flatten"}},
                                {{"type", "dense"}, {"units", 12}, {"activation", "relu"}},
                                {{"type", "dense"}, {"units", kClasses}, {"activation", "softmax"}}})},
        {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}, {"momentum", 0.9}}},
        {"epochs", 3},
        {"batch_size", 20},
        {"seed", 5},
        {"data", {{"dataset", "idx"}, {"dir", root_ + "/data"}}}};
    std::ofstream(root_ + "/tiny.json") << cfg.dump(2);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  static std::string path(const std::string& p) { return root_ + "/" + p; }
  static Result train(const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"train", "--config", path("tiny.json"), "--out", path(out), "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cmd(args);
  }
  static std::string root_;
};
std::string CliCompareCommand::root_;

}  // namespace

TEST_F(CliCompareCommand, ComparesTrainedRunsAndPlotsWhatTheirMetricsHold) {
  ASSERT_EQ(train("a", {"--test-every-epoch"}).rc, 0);
  ASSERT_EQ(train("b", {"--batch-size", "40", "--seed", "9"}).rc, 0);
  const Result r = run_cmd({"compare", path("a"), path("b") + "/", "--out", path("page.html")});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("1 rank: a ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 rank: b ("), std::string::npos) << "a trailing / still names the folder: " << r.out;
  const std::string page = slurp(path("page.html"));
  const std::string loss = chart(page, "Training loss against time");
  const std::string acc = chart(page, "Accuracy against time");
  for (const char* run : {"a", "b"}) {
    const model::History h = RunFolder(path(run)).read_metrics();
    ASSERT_EQ(h.size(), 3u);
    const auto lp = points(loss, std::string("1 rank: ") + run);
    ASSERT_EQ(lp.size(), 3u) << run;
    double t = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
      t += h[i].seconds;
      EXPECT_NEAR(lp[i].x, t, 1e-3 * t + 1e-9) << run;
      EXPECT_NEAR(lp[i].y, h[i].train_loss, 1e-4 * std::abs(h[i].train_loss)) << run;
    }
  }
  // a's accuracy curve is its per-epoch test scores; the last is the final test result.
  const TestCurve curve = parse_test_curve_csv(slurp(path("a/test_per_epoch.csv")), "a");
  ASSERT_EQ(curve.size(), 3u);
  const Json sa = read_json_file(path("a/summary.json"));
  EXPECT_NEAR(curve.back().accuracy, sa["test_accuracy"].get<double>(), 1e-9);
  EXPECT_NEAR(curve.back().loss, sa["test_loss"].get<double>(), 1e-6);
  const auto tp = points(acc, "1 rank: a (test)");
  ASSERT_EQ(tp.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(tp[i].y, curve[i].accuracy, 1e-4);
  EXPECT_EQ(points(acc, "1 rank: b (validation)").size(), 3u);
  EXPECT_FALSE(fs::exists(path("b/test_per_epoch.csv")));  // off by default
  // The run's own report shows the per-epoch test scores only when it has them.
  EXPECT_NE(slurp(path("a/report.html")).find("data-series=\"test accuracy\""), std::string::npos);
  EXPECT_NE(slurp(path("a/report.html")).find("data-series=\"test loss\""), std::string::npos);
  EXPECT_EQ(slurp(path("b/report.html")).find("data-series=\"test"), std::string::npos);
}

// Scoring the test split every epoch changes nothing in training: the same
// seed gives the same losses, validation and final test scores with and without it.
TEST_F(CliCompareCommand, TestEveryEpochLeavesTrainingUnchanged) {
  ASSERT_EQ(train("with", {"--test-every-epoch"}).rc, 0);
  ASSERT_EQ(train("without", {}).rc, 0);
  const model::History a = RunFolder(path("with")).read_metrics(), b = RunFolder(path("without")).read_metrics();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].train_loss, b[i].train_loss) << "epoch " << i + 1;
    EXPECT_EQ(a[i].val_accuracy, b[i].val_accuracy) << "epoch " << i + 1;
  }
  const Json sa = read_json_file(path("with/summary.json")), sb = read_json_file(path("without/summary.json"));
  EXPECT_EQ(sa["test_accuracy"], sb["test_accuracy"]);
  EXPECT_EQ(sa["test_loss"], sb["test_loss"]);  // the same final weights, to the last bit of the loss
}

// --resume keeps the scores of the epochs before it.
TEST_F(CliCompareCommand, ResumeKeepsTheEarlierTestScores) {
  ASSERT_EQ(train("resumed", {"--test-every-epoch", "--epochs", "2"}).rc, 0);
  const Result r = run_cmd({"train", "--out", path("resumed"), "--resume", "--epochs", "3", "--quiet"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const TestCurve c = parse_test_curve_csv(slurp(path("resumed/test_per_epoch.csv")), "resumed");
  ASSERT_EQ(c.size(), 3u);
  for (unsigned e = 1; e <= 3; ++e) EXPECT_EQ(c[e - 1].epoch, e);
}

TEST_F(CliCompareCommand, MistakesAreNamed) {
  ASSERT_EQ(train("x", {}).rc, 0);
  fs::create_directories(path("not-a-run"));
  Result r = run_cmd({"compare", path("x"), path("not-a-run"), "--out", path("p.html")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("not-a-run is not a run folder of magmadnn train: it has no config.json, metrics.csv, "
                       "summary.json"),
            std::string::npos)
      << r.err;
  r = run_cmd({"compare", path("x"), path("missing"), "--out", path("p.html")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("missing is not a run folder: no such directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("p.html")));

  ASSERT_EQ(train("y", {"--data", path("other-data")}).rc, 0);
  r = run_cmd({"compare", path("x"), path("y"), "--out", path("p.html")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("runs of different data sets cannot be compared"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("other-data"), std::string::npos) << r.err;

  r = run_cmd({"compare", "--out", path("p.html")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no run folder given"), std::string::npos) << r.err;
  r = run_cmd({"compare", path("x")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--out FILE is required"), std::string::npos) << r.err;
  r = run_cmd({"compare", path("x"), "--out", path("p.html"), "--bogus"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_FALSE(fs::exists(path("p.html")));
  r = run_cmd({"compare", "--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("usage: magmadnn compare RUN_DIR... --out FILE"), std::string::npos);
}

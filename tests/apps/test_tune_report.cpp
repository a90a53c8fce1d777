// The tune report page (tune_report.h) written from synthetic results.json
// files: a row per trial, the heat map's cells (values, failed, pruned,
// empty, best), the histogram's bin counts against bins computed here, the
// escaping of odd strings, which way the objective is better, a continuous
// dimension put into bins, an empty search, and the refusal of bad files
// naming the file and the JSON path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "magmadnn/core/errors.h"
#include "run_names.h"
#include "tune_report.h"

using namespace magmadnn;
using magmadnn::cli::Json;
namespace fs = std::filesystem;

namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

std::string g4(double v) {  // the heat map's cell format
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

class TuneReport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tune_report_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_results(const std::string& text) const { std::ofstream(dir_ / "results.json") << text; }
  std::string page(const Json& results) const {
    write_results(results.dump(1));
    cli::write_tune_report(dir_);
    std::ifstream in(dir_ / "report.html");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The message of the IOError that write_tune_report throws for `text`;
  // the page must not be written.
  std::string refusal(const std::string& text) const {
    write_results(text);
    try {
      cli::write_tune_report(dir_);
    } catch (const IOError& e) {
      EXPECT_FALSE(fs::exists(dir_ / "report.html"));
      return e.what();
    }
    ADD_FAILURE() << "no IOError for " << text.substr(0, 200);
    return "";
  }

  fs::path dir_;
};

// A grid of batch sizes x learning rates, one trial per point in row-major
// order, objective = a loss area that falls with the learning rate and
// rises with the batch; trial `failed` failed, trial `pruned` was pruned,
// and point (rows-1, cols-1) is left out when `hole`.
Json grid(const std::vector<int>& batches, const std::vector<double>& rates, int failed, int pruned, bool hole) {
  Json trials = Json::array();
  int index = 0;
  std::int64_t best = -1;
  double best_objective = 1e300;
  for (std::size_t b = 0; b < batches.size(); ++b) {
    for (std::size_t l = 0; l < rates.size(); ++l, ++index) {
      if (hole && b + 1 == batches.size() && l + 1 == rates.size()) continue;
      Json curve = Json::array();
      double area = 0;
      for (int e = 1; e <= 3; ++e) {
        const double loss = 2.0 / (1 + e * rates[l] * 10) + 0.01 * batches[b] / 16 + 0.001 * index;
        area += loss;
        curve.push_back({{"epoch", e}, {"loss", loss}, {"accuracy", 1 - loss / 3}, {"seconds", 0.5}});
      }
      Json t = {{"index", index},
                {"params", {{"batch_size", batches[b]}, {"optimizer.learning_rate", rates[l]}}},
                {"status", index == failed ? "failed" : index == pruned ? "pruned" : "ok"},
                {"attempts", 1},
                {"worker", index % 2},
                {"seconds", 1.5},
                {"objective", index == failed ? Json() : Json(area)},
                {"final", {{"loss", curve.back()["loss"]}, {"accuracy", curve.back()["accuracy"]}, {"test_accuracy", nullptr}}},
                {"curve", index == failed ? Json::array() : curve}};
      if (index == failed) t["error"] = "worker died";
      if (index != failed && index != pruned && area < best_objective) {
        best_objective = area;
        best = index;
      }
      trials.push_back(t);
    }
  }
  return {{"objective", {{"kind", "loss_area"}}},
          {"searcher", "grid"},
          {"seed", 3},
          {"best", best},
          {"dimensions",
           {{{"path", "batch_size"}, {"kind", "list"}, {"values", batches}},
            {{"path", "optimizer.learning_rate"}, {"kind", "list"}, {"values", rates}}}},
          {"trials", trials}};
}

struct Cell {
  std::string state;
  bool best;
  int row, col;
  std::string text;
};

std::vector<Cell> heat_cells(const std::string& page) {
  std::vector<Cell> cells;
  const std::regex cell(
      R"re(<g class="cell (\w+)( best)?" data-row="(\d+)" data-col="(\d+)">[\s\S]*?<text class="v"[^>]*>([^<]*)</text>)re");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), cell); it != std::sregex_iterator(); ++it) {
    cells.push_back({(*it)[1], (*it)[2].matched, std::stoi((*it)[3]), std::stoi((*it)[4]), (*it)[5]});
  }
  return cells;
}

TEST_F(TuneReport, EveryTrialHasARowWithItsStatusAndTheBestIsStarred) {
  const Json r = grid({16, 32, 64}, {0.1, 0.2, 0.3, 0.4}, 5, 2, false);
  const std::string html = page(r);
  for (const auto& t : r["trials"]) {
    const std::string idx = std::to_string(t["index"].get<int>());
    const std::string status = t["status"].get<std::string>();
    const bool best = t["index"] == r["best"];
    EXPECT_EQ(count(html, "<tr class=\"" + status + (best ? " best" : "") + "\" id=\"trial-" + idx + "\""), 1u)
        << "trial " << idx;
  }
  EXPECT_EQ(count(html, "<tr class="), r["trials"].size() + 0u);
  EXPECT_NE(html.find("<td class=\"error\" data-v=\"worker died\">worker died</td>"), std::string::npos);
  // The best trial's section and its four charts.
  const std::string best = std::to_string(r["best"].get<int>());
  EXPECT_NE(html.find("<h3>Trial " + best + " \xe2\x98\x85</h3>"), std::string::npos);
  for (const char* title : {"Best trial: loss per epoch", "Best trial: accuracy per epoch",
                            "Best trial: loss against time", "Best trial: accuracy against time"}) {
    EXPECT_EQ(count(html, "aria-label=\"" + std::string(title) + "\""), 1u) << title;
  }
  // Self-contained: one inline script, nothing fetched.
  EXPECT_EQ(count(html, "<script"), 1u);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
}

TEST_F(TuneReport, HeatMapCellsHoldTheirObjectivesAndMarkFailedPrunedEmptyAndBest) {
  const std::vector<int> batches{16, 32, 64};
  const std::vector<double> rates{0.1, 0.2, 0.3, 0.4};
  const Json r = grid(batches, rates, 5, 2, true);
  const std::vector<Cell> cells = heat_cells(page(r));
  ASSERT_EQ(cells.size(), batches.size() * rates.size());
  std::map<std::pair<int, int>, const Json*> at;
  for (const auto& t : r["trials"]) {
    const int index = t["index"].get<int>();
    at[{index / 4, index % 4}] = &t;
  }
  int bests = 0;
  for (const Cell& c : cells) {
    const auto it = at.find({c.row, c.col});
    if (it == at.end()) {
      EXPECT_EQ(c.state, "empty");
      EXPECT_EQ(c.text, "\xe2\x80\x94");  // an em dash
      continue;
    }
    const Json& t = *it->second;
    const std::string status = t["status"].get<std::string>();
    EXPECT_EQ(c.state, status) << c.row << "," << c.col;
    if (status == "failed") {
      EXPECT_NE(c.text.find("failed"), std::string::npos);
    } else {
      EXPECT_EQ(c.text, g4(t["objective"].get<double>())) << c.row << "," << c.col;
    }
    EXPECT_EQ(c.best, t["index"] == r["best"]);
    bests += c.best;
  }
  EXPECT_EQ(bests, 1);
}

TEST_F(TuneReport, HistogramCountsMatchSturgesBinsComputedHere) {
  const Json r = grid({16, 32, 64, 128, 256, 512}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}, 8, 20, false);
  const std::string html = page(r);
  std::vector<double> v;
  for (const auto& t : r["trials"]) {
    if (t["status"] == "ok") v.push_back(t["objective"].get<double>());
  }
  ASSERT_EQ(v.size(), 52u);
  const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  const int k = 7;  // ceil(log2 52) + 1
  std::vector<int> want(k, 0);
  for (double x : v) ++want[std::min(k - 1, static_cast<int>((x - lo) / ((hi - lo) / k)))];
  std::vector<int> got;
  const std::regex bin(R"re(<rect class="bin" data-count="(\d+)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), bin); it != std::sregex_iterator(); ++it) {
    got.push_back(std::stoi((*it)[1]));
  }
  EXPECT_EQ(got, want);
}

TEST_F(TuneReport, EscapesEveryStringFromTheFile) {
  Json r = grid({16, 32}, {0.1, 0.2}, 1, -1, false);
  r["dimensions"].push_back({{"path", "model.<act>"}, {"kind", "choice"}, {"values", {"re\"lu", "<b>tanh</b>"}}});
  r["trials"][0]["params"]["model.<act>"] = "re\"lu";
  r["trials"][1]["params"]["model.<act>"] = "<b>tanh</b>";
  r["trials"][1]["error"] = "died: <script>alert('x')</script> & gone";
  r["objective"]["note"] = "</code><i>";
  r["searcher"] = "grid & <random>";
  const std::string html = page(r);
  for (const char* raw : {"<script>alert", "<b>tanh", "<act>", "<random>", "</code><i>", "re\"lu"}) {
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  }
  for (const char* escaped : {"died: &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; gone", "&lt;b&gt;tanh&lt;/b&gt;",
                              "model.&lt;act&gt;", "grid &amp; &lt;random&gt;", "re&quot;lu"}) {
    EXPECT_NE(html.find(escaped), std::string::npos) << escaped;
  }
}

TEST_F(TuneReport, LargerIsBetterWhenTheBestTrialHasTheLargestObjective) {
  Json r = grid({16, 32}, {0.1, 0.2, 0.3}, -1, -1, false);
  r["objective"]["kind"] = "accuracy";
  double most = -1;
  for (auto& t : r["trials"]) {
    t["objective"] = 0.5 + 0.01 * t["index"].get<int>();
    most = std::max(most, t["objective"].get<double>());
  }
  r["best"] = 5;
  const std::string html = page(r);
  EXPECT_NE(html.find("objective accuracy (larger is better)"), std::string::npos);
  EXPECT_NE(html.find(">" + g4(most) + " best</text>"), std::string::npos);
  // An explicit direction wins over the inference.
  r["objective"]["direction"] = "minimize";
  EXPECT_NE(page(r).find("objective accuracy (smaller is better)"), std::string::npos);
}

TEST_F(TuneReport, WithoutBatchAndRateTheFirstTwoDimensionsAreMappedAndContinuousOnesBinned) {
  Json trials = Json::array();
  for (int i = 0; i < 40; ++i) {
    trials.push_back({{"index", i},
                      {"params", {{"optimizer.momentum", i % 2 ? 0.9 : 0.0},
                                  {"optimizer.weight_decay", 1e-6 * std::pow(10.0, i / 10.0)}}},
                      {"status", "ok"},
                      {"objective", 1.0 + i}});
  }
  const Json r = {{"objective", {{"kind", "loss"}}},
                  {"best", 0},
                  {"dimensions",
                   {{{"path", "optimizer.momentum"}, {"kind", "choice"}},
                    {{"path", "optimizer.weight_decay"}, {"kind", "log_uniform"}, {"low", 1e-6}, {"high", 1e-2}}}},
                  {"trials", trials}};
  const std::string html = page(r);
  EXPECT_NE(html.find("aria-label=\"Objective by optimizer.momentum and optimizer.weight_decay\""),
            std::string::npos);
  const std::vector<Cell> cells = heat_cells(html);
  EXPECT_EQ(cells.size(), 2u * 8u);  // momentum 0 and 0.9; weight decay in 8 bins
  int trials_seen = 0;
  for (const auto& c : cells) trials_seen += c.state == "ok";
  EXPECT_EQ(trials_seen, 16);  // five trials per weight-decay bin, both momenta among them
}

TEST_F(TuneReport, AnEmptySearchStillGivesAPage) {
  const std::string html =
      page(Json::parse(R"({"objective": {"kind": "loss"}, "best": null, "dimensions": [], "trials": []})"));
  EXPECT_NE(html.find("No best trial: no trial has run."), std::string::npos);
  EXPECT_NE(html.find("The search has no dimension to map."), std::string::npos);
  EXPECT_GE(count(html, ">no data</text>"), 2u);  // curves and histogram
  EXPECT_EQ(count(html, "<tr class="), 0u);
}

// A search that ended before its first trial (a random search whose seconds
// ran out) over continuous dimensions: the heat map's axes have no value, and
// the page was written through a label that did not exist (SIGSEGV).
TEST_F(TuneReport, AnEmptySearchOverContinuousDimensionsStillGivesAPage) {
  const Json log_rate = {{"path", "optimizer.learning_rate"}, {"kind", "log_uniform"}, {"min", 0.001}, {"max", 1}};
  const Json momentum = {{"path", "optimizer.momentum"}, {"kind", "uniform"}, {"min", 0}, {"max", 0.9}};
  const Json batch = {{"path", "batch_size"}, {"kind", "list"}, {"values", {16, 32}}};
  for (const Json& dims : {Json::array({log_rate}), Json::array({log_rate, momentum}), Json::array({batch, log_rate}),
                           Json::array({momentum, batch})}) {
    const std::string html = page(Json{{"objective", {{"kind", "loss"}}}, {"best", nullptr}, {"dimensions", dims},
                                       {"trials", Json::array()}});
    EXPECT_NE(html.find("No best trial: no trial has run."), std::string::npos) << dims.dump();
    EXPECT_NE(html.find("No trial has run: nothing to map."), std::string::npos) << dims.dump();
    EXPECT_EQ(count(html, "<tr class="), 0u);
  }
}

// A failed trial has no metrics, even in a results.json written when failed
// trials carried loss 0.0: its cells are empty, so sorting by loss puts it last.
TEST_F(TuneReport, AFailedTrialHasNoMetricsInTheTable) {
  Json r = grid({16, 32}, {0.1, 0.2}, 1, -1, false);
  r["trials"][1]["final"] = {{"loss", 0.0}, {"accuracy", 0.0}, {"test_accuracy", 0.0}};
  const std::string html = page(r);
  const std::size_t row = html.find("id=\"trial-1\"");
  ASSERT_NE(row, std::string::npos);
  const std::string tr = html.substr(row, html.find("</tr>", row) - row);
  EXPECT_EQ(tr.find("data-v=\"0\""), std::string::npos) << tr;
  EXPECT_EQ(count(tr, "<td data-v=\"\">-</td>"), 5u) << tr;  // objective, loss, accuracy, test accuracy, epochs
}

TEST_F(TuneReport, BadFilesAreRefusedNamingTheFileAndTheField) {
  const std::string file = (dir_ / "results.json").string();
  const std::string ok_trial = R"({"index": 0, "params": {}, "status": "ok"})";
  auto doc = [&](const std::string& trials, const std::string& extra = "") {
    return R"({"objective": {"kind": "loss"}, "dimensions": [], "trials": [)" + trials + "]" + extra + "}";
  };
  struct Case {
    std::string text, expected;
  } cases[] = {
      {"{\"objective\": ", "invalid JSON"},
      {"[1, 2]", "(document): expected an object, got [1,2]"},
      {R"({"dimensions": [], "trials": []})", "objective: missing"},
      {R"({"objective": {}, "dimensions": [], "trials": []})", "objective.kind: missing"},
      {R"({"objective": {"kind": "loss", "direction": "up"}, "dimensions": [], "trials": []})",
       "objective.direction: expected \"minimize\" or \"maximize\", got \"up\""},
      {R"({"objective": {"kind": "loss"}, "trials": []})", "dimensions: missing"},
      {R"({"objective": {"kind": "loss"}, "dimensions": [{"kind": "list"}], "trials": []})", "dimensions[0].path: missing"},
      {doc(ok_trial + R"(, {"index": 1, "params": {}, "status": "done"})"),
       "trials[1].status: expected one of \"ok\", \"failed\", \"pruned\", got \"done\""},
      {doc(R"({"index": "0", "params": {}, "status": "ok"})"), "trials[0].index: expected an integer, got \"0\""},
      {doc(R"({"index": 0, "params": [], "status": "ok"})"), "trials[0].params: expected an object, got []"},
      {doc(R"({"index": 0, "params": {}, "status": "ok", "curve": [{"epoch": 1}, {"epoch": 2, "loss": "abc"}]})"),
       "trials[0].curve[1].loss: expected a number or null, got \"abc\""},
      {doc(R"({"index": 0, "params": {}, "status": "ok", "curve": [{"loss": 1}]})"), "trials[0].curve[0].epoch: missing"},
      {doc(R"({"index": 0, "params": {}, "status": "ok", "final": {"accuracy": true}})"),
       "trials[0].final.accuracy: expected a number or null, got true"},
      {doc(ok_trial + ", " + ok_trial), "trials[1].index: 0 is also the index of trials[0]"},
      {doc(ok_trial, R"(, "best": 99)"), "best: 99 is not the index of any trial"},
      {std::string(100, '[') + std::string(100, ']'), "nests arrays/objects more than 64 levels deep"},
  };
  for (const auto& c : cases) {
    const std::string message = refusal(c.text);
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << "expected \"" << c.expected << "\" in: " << message;
  }
  fs::remove(dir_ / "results.json");
  EXPECT_THROW(
      {
        try {
          cli::write_tune_report(dir_);
        } catch (const IOError& e) {
          EXPECT_NE(std::string(e.what()).find(file + ": no such file"), std::string::npos) << e.what();
          throw;
        }
      },
      IOError);
}

TEST_F(TuneReport, TheTableListsTrialsByIndexWhateverTheirOrderInTheFile) {
  Json r = grid({16, 32}, {0.1, 0.2, 0.3}, -1, -1, false);
  std::reverse(r["trials"].begin(), r["trials"].end());
  const std::string html = page(r);
  std::size_t last = 0;
  for (int i = 0; i < 6; ++i) {
    const std::size_t at = html.find("id=\"trial-" + std::to_string(i) + "\"");
    ASSERT_NE(at, std::string::npos) << i;
    EXPECT_GT(at, last) << "trial " << i << " is listed before trial " << i - 1;
    last = at;
  }
}

TEST_F(TuneReport, TableCellsCarryTheValuesTheyAreSortedBy) {
  const Json r = grid({16, 32}, {0.1, 0.2}, -1, -1, false);
  const std::string html = page(r);
  for (const auto& t : r["trials"]) {
    char want[64];
    std::snprintf(want, sizeof want, "%.17g", t["objective"].get<double>());
    EXPECT_NE(html.find("<td data-v=\"" + std::string(want) + "\">"), std::string::npos) << want;
  }
  EXPECT_NE(html.find("<th data-type=\"num\" title=\"optimizer.learning_rate\">learning_rate</th>"), std::string::npos);
  EXPECT_NE(html.find("<th data-type=\"num\" aria-sort=\"ascending\">trial</th>"), std::string::npos);
}

}  // namespace

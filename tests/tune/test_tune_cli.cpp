// `magmadnn tune` end to end with real training (the library's training call)
// on a tiny striped IDX data set: in one process (in process, through
// run_cli), with local worker processes and, built as test_tune_cli_mpi,
// under mpirun with data-parallel groups (the program itself).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli.h"
#include "magmadnn/tune/journal.h"
#include "support/run_fixtures.h"
#include "tune_fixtures.h"

namespace {

using namespace tunetest;
namespace fs = std::filesystem;

// A folder with the data set and a 2 x 2 grid over it (epochs 2).
std::string prepare(const std::string& name) {
  const std::string root = fresh_dir(name);
  fs::create_directories(root + "/data");
  magmadnn::test::write_stripes(root + "/data", "train", 200, 1);
  magmadnn::test::write_stripes(root + "/data", "t10k", 60, 2);
  Json train = {{"name", "tiny"},
                {"layers", Json::array({{{"type", "flatten"}},
                                        {{"type", "dense"}, {"units", 8}, {"activation", "relu"}},
                                        {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}})},
                {"epochs", 2},
                {"batch_size", 20},
                {"data", {{"dataset", "idx"}, {"dir", root + "/data"}, {"val_split", 0.2}}}};
  Json j = {{"train", train},
            {"space", Json::parse(R"([{"path": "optimizer.learning_rate", "values": [0.05, 0.5]},
                                      {"path": "batch_size", "values": [10, 20]}])")},
            {"objective", {{"kind", "loss_area"}, {"threshold", 10}, {"axis", "epochs"}}},
            {"seed", 3}};
  std::ofstream(root + "/tune.json") << j.dump(2);
  return root;
}

void expect_results(const std::string& out, int trials) {
  const auto counts = count_events(magmadnn::tune::read_journal(out + "/journal.jsonl"));
  ASSERT_EQ(counts.size(), static_cast<std::size_t>(trials));
  for (const auto& [i, c] : counts) EXPECT_EQ(c.finished, 1) << "trial " << i;
  const Json r = Json::parse(magmadnn::test::read_text(out + "/results.json"));
  ASSERT_EQ(r["trials"].size(), static_cast<std::size_t>(trials));
  for (const Json& t : r["trials"]) {
    EXPECT_EQ(t["status"], "ok") << t.dump();
    EXPECT_EQ(t["curve"].size(), 2u);  // two epochs, validated
    EXPECT_TRUE(t["final"]["test_accuracy"].is_number());
  }
  EXPECT_FALSE(r["best"].is_null());
  EXPECT_TRUE(fs::exists(out + "/best.json"));
}

#if !defined(MAGMADNN_MPIEXEC)

int cli(const std::vector<std::string>& args, std::string* err = nullptr) {
  std::ostringstream out, e;
  const int rc = magmadnn::cli::run_cli(args, out, e);
  if (err) *err = e.str();
  return rc;
}

TEST(TuneCli, SearchesInOneProcessAndItsBestConfigTrains) {
  const std::string root = prepare("cli-inline");
  ASSERT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/search", "--quiet"}), 0);
  expect_results(root + "/search", 4);
  // best.json goes to `magmadnn train --config` unchanged.
  std::string err;
  EXPECT_EQ(cli({"train", "--config", root + "/search/best.json", "--out", root + "/best-run", "--quiet"}, &err), 0) << err;
  EXPECT_TRUE(fs::exists(root + "/best-run/summary.json"));
}

TEST(TuneCli, RefusesMisuse) {
  const std::string root = prepare("cli-misuse");
  std::string err;
  EXPECT_EQ(cli({"tune", "--out", root + "/x"}, &err), 2);
  EXPECT_NE(err.find("expected one CONFIG file"), std::string::npos) << err;
  EXPECT_EQ(cli({"tune", root + "/tune.json"}, &err), 2);
  EXPECT_NE(err.find("--out DIR is required"), std::string::npos) << err;
  EXPECT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/x", "--ranks-per-trial", "2"}, &err), 2);
  EXPECT_NE(err.find("--ranks-per-trial needs mpirun"), std::string::npos) << err;
  EXPECT_EQ(cli({"tune", "--worker"}, &err), 2);
  EXPECT_NE(err.find("only a master starts workers"), std::string::npos) << err;
  Json bad = Json::parse(magmadnn::test::read_text(root + "/tune.json"));
  bad["space"][0]["path"] = "optimizer.lr";
  std::ofstream(root + "/bad.json") << bad.dump();
  EXPECT_EQ(cli({"tune", root + "/bad.json", "--out", root + "/x"}, &err), 2);
  EXPECT_NE(err.find("space[0].path: \"optimizer.lr\" is not a training parameter"), std::string::npos) << err;
}

TEST(TuneCli, LocalWorkersAndResume) {
  const std::string root = prepare("cli-workers");
  const std::string app = MAGMADNN_APP;
  auto r = magmadnn::test::run_shell(app + " tune " + root + "/tune.json --out " + root + "/search --workers 2",
                                     root + "/log");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4 trials (0 failed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on 2 workers"), std::string::npos) << r.out;
  expect_results(root + "/search", 4);
  const Json results = Json::parse(magmadnn::test::read_text(root + "/search/results.json"));
  std::set<int> workers;
  for (const Json& t : results["trials"]) workers.insert(t["worker"].get<int>());
  EXPECT_EQ(workers.size(), 2u);
  // Resuming a finished search starts nothing.
  const std::size_t lines = magmadnn::tune::read_journal(root + "/search/journal.jsonl").size();
  r = magmadnn::test::run_shell(app + " tune " + root + "/tune.json --out " + root + "/search --workers 2 --resume",
                                root + "/log2");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(count_events(magmadnn::tune::read_journal(root + "/search/journal.jsonl"), lines).empty());
}

#else

// `magmadnn tune` on root's tune.json under the launcher, in groups of two ranks.
magmadnn::test::CommandResult tune_in_groups_of_two(const std::string& root, int ranks) {
  // Open MPI refuses root (build containers) without both variables.
  const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 " +
                          std::string(MAGMADNN_MPIEXEC) + " -np " + std::to_string(ranks) + " --oversubscribe " +
                          MAGMADNN_APP + " tune " + root + "/tune.json --out " + root + "/search --ranks-per-trial 2";
  return magmadnn::test::run_shell(cmd, root + "/log");
}

TEST(TuneCliMpi, GroupsOfTwoTrainDataParallel) {
  const std::string root = prepare("cli-mpi");
  const auto r = tune_in_groups_of_two(root, 5);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("on 2 workers"), std::string::npos) << r.out;
  expect_results(root + "/search", 4);
  const Json results = Json::parse(magmadnn::test::read_text(root + "/search/results.json"));
  for (const Json& t : results["trials"]) EXPECT_EQ(t["extra"]["ranks"], 2) << t.dump();
}

// A learning rate that diverges fails its trial on both ranks of the group
// (a NaN loss); the group must go on to the trials after it.
TEST(TuneCliMpi, ADivergedTrialFailsAloneInItsGroup) {
  const std::string root = prepare("cli-mpi-nan");
  Json j = Json::parse(magmadnn::test::read_text(root + "/tune.json"));
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "values": [0.05, 1e30, 0.5]}])");
  std::ofstream(root + "/tune.json") << j.dump(2);
  const auto r = tune_in_groups_of_two(root, 3);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  const Json results = Json::parse(magmadnn::test::read_text(root + "/search/results.json"));
  ASSERT_EQ(results["trials"].size(), 3u) << r.out << r.err;
  for (const Json& t : results["trials"]) {
    if (t["index"] == 1) {
      EXPECT_EQ(t["status"], "failed") << t.dump();
      EXPECT_NE(t.dump().find("the loss is"), std::string::npos) << t.dump();
    } else {
      EXPECT_EQ(t["status"], "ok") << t.dump();
      EXPECT_EQ(t["extra"]["ranks"], 2) << t.dump();
    }
  }
}

// `magmadnn tune` on root's tune.json under the launcher: `ranks` ranks,
// --ranks-per-trial `per_trial`, into root/search-<tag>.
magmadnn::test::CommandResult tune_under_mpirun(const std::string& root, int ranks, int per_trial,
                                                const std::string& tag) {
  const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 " +
                          std::string(MAGMADNN_MPIEXEC) + " -np " + std::to_string(ranks) + " --oversubscribe " +
                          MAGMADNN_APP + " tune " + root + "/tune.json --out " + root + "/search-" + tag +
                          " --ranks-per-trial " + std::to_string(per_trial);
  return magmadnn::test::run_shell(cmd, root + "/log-" + tag);
}

// root's tune.json with `searcher` over a continuous learning rate (and
// epochs 2, the ASHA searcher's max_epochs overriding it per rung).
void use_searcher(const std::string& root, const Json& searcher) {
  Json j = Json::parse(magmadnn::test::read_text(root + "/tune.json"));
  j["searcher"] = searcher;
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "log_uniform": [0.01, 0.5]}])");
  std::ofstream(root + "/tune.json") << j.dump(2);
}

// What every search under mpirun must leave: each trial started and ended
// once in the journal, results.json naming the searcher, every trial
// trained by `per_trial` ranks with a learning rate inside the space.
Json expect_search(const std::string& out, const std::string& searcher, int per_trial) {
  for (const auto& [i, c] : count_events(magmadnn::tune::read_journal(out + "/journal.jsonl"))) {
    EXPECT_EQ(c.started, 1) << "trial " << i;
    EXPECT_EQ(c.finished, 1) << "trial " << i;
    EXPECT_EQ(c.lost + c.failed, 0) << "trial " << i;
  }
  const Json r = Json::parse(magmadnn::test::read_text(out + "/results.json"));
  EXPECT_EQ(r["searcher"], searcher);
  EXPECT_FALSE(r["best"].is_null());
  for (const Json& t : r["trials"]) {
    EXPECT_EQ(t["extra"]["ranks"], per_trial) << t.dump();
    const double lr = t["params"]["optimizer.learning_rate"].get<double>();
    EXPECT_TRUE(lr >= 0.01 && lr <= 0.5) << t.dump();
    EXPECT_TRUE(t["final"]["test_accuracy"].is_number()) << t.dump();
  }
  return r;
}

// The random searcher under mpirun: 3 trials at 2 ranks (one worker) and
// at 3 ranks (one group of two), each a distinct point of the space.
TEST(TuneCliMpi, RandomSearchAtTwoAndThreeRanks) {
  const std::string root = prepare("cli-mpi-random");
  use_searcher(root, {{"type", "random"}, {"trials", 3}});
  for (const auto& [ranks, per_trial] : {std::pair{2, 1}, std::pair{3, 2}}) {
    const std::string tag = "np" + std::to_string(ranks);
    const auto run = tune_under_mpirun(root, ranks, per_trial, tag);
    ASSERT_EQ(run.rc, 0) << run.out << run.err;
    const Json r = expect_search(root + "/search-" + tag, "random", per_trial);
    ASSERT_EQ(r["trials"].size(), 3u) << r.dump();
    std::set<double> points;
    for (const Json& t : r["trials"]) {
      EXPECT_EQ(t["status"], "ok") << t.dump();
      EXPECT_EQ(t["curve"].size(), 2u) << t.dump();
      points.insert(t["params"]["optimizer.learning_rate"].get<double>());
    }
    EXPECT_EQ(points.size(), 3u) << r.dump();
  }
}

// ASHA under mpirun, at 2 ranks (one worker) and 3 ranks (two workers, so
// rungs fill asynchronously): 3 configurations at 1 epoch, the best
// promoted to 2 epochs (eta 2), every trial ok or pruned, the best from
// the top rung.
TEST(TuneCliMpi, AshaSearchAtTwoAndThreeRanks) {
  const std::string root = prepare("cli-mpi-asha");
  use_searcher(root, {{"type", "asha"}, {"configs", 3}, {"min_epochs", 1}, {"max_epochs", 2}, {"eta", 2}});
  for (const int ranks : {2, 3}) {
    const std::string tag = "np" + std::to_string(ranks);
    const auto run = tune_under_mpirun(root, ranks, 1, tag);
    ASSERT_EQ(run.rc, 0) << run.out << run.err;
    const Json r = expect_search(root + "/search-" + tag, "asha", 1);
    std::set<std::int64_t> rung0, rung1;  // configurations
    std::int64_t best_rung = -1;
    for (const Json& t : r["trials"]) {
      EXPECT_TRUE(t["status"] == "ok" || t["status"] == "pruned") << t.dump();
      const int rung = t["rung"].get<int>();
      ASSERT_TRUE(rung == 0 || rung == 1) << t.dump();
      EXPECT_EQ(t["curve"].size(), rung == 0 ? 1u : 2u) << t.dump();  // its rung's epochs, trained from scratch
      EXPECT_TRUE((rung == 0 ? rung0 : rung1).insert(t["config"].get<std::int64_t>()).second) << t.dump();
      if (t["index"] == r["best"]) best_rung = rung;
    }
    EXPECT_EQ(rung0.size(), 3u) << r.dump();  // every configuration once at 1 epoch
    EXPECT_GE(rung1.size(), 1u) << r.dump();  // at least the best of the first two promoted
    for (const std::int64_t c : rung1) EXPECT_EQ(rung0.count(c), 1u) << "config " << c << " promoted unseen";
    EXPECT_EQ(best_rung, 1) << r.dump();  // only the top rung competes
  }
}

#endif

}  // namespace

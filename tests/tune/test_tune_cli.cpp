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
#include "folder_lock.h"
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

// A random search whose seconds end before its first trial, over a
// log-uniform dimension: the report was written through a heat-map label
// that did not exist (SIGSEGV, every time on resuming this journal). The
// page must come, saying no trial ran.
TEST(TuneCli, ASearchEndingWithoutTrialsOverAContinuousDimensionGetsItsPage) {
  const std::string root = prepare("cli-zero-trials");
  Json j = Json::parse(magmadnn::test::read_text(root + "/tune.json"));
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "log_uniform": [0.001, 1]}])");
  j["searcher"] = {{"type", "random"}, {"seconds", 0.001}};
  std::ofstream(root + "/tune.json") << j.dump(2);
  // The journal a zero-trial search writes: its begin line, then its end.
  fs::create_directories(root + "/search");
  std::ofstream(root + "/search/journal.jsonl")
      << Json{{"event", "begin"}, {"tune", j}, {"seed", 3}, {"workers", 1}, {"t", 0.0}}.dump() << "\n"
      << R"({"event":"end","t":0.004940617})" << "\n";
  std::string err;
  ASSERT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/search", "--resume", "--quiet"}, &err), 0) << err;
  const std::string html = magmadnn::test::read_text(root + "/search/report.html");
  EXPECT_NE(html.find("No trial has run: nothing to map."), std::string::npos);
  EXPECT_EQ(Json::parse(magmadnn::test::read_text(root + "/search/results.json"))["trials"].size(), 0u);
}

// A trial that diverges fails; its loss and accuracy are no result: empty in
// results.csv, null in results.json and the journal (they were 0.0, which
// sorted the diverged trial first by loss).
TEST(TuneCli, AFailedTrialHasNoLossOrAccuracy) {
  const std::string root = prepare("cli-failed-metrics");
  Json j = Json::parse(magmadnn::test::read_text(root + "/tune.json"));
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "values": [0.05, 1e30]}])");
  j["objective"] = {{"kind", "loss"}};
  std::ofstream(root + "/tune.json") << j.dump(2);
  std::string err;
  ASSERT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/search", "--quiet"}, &err), 0) << err;
  const Json r = Json::parse(magmadnn::test::read_text(root + "/search/results.json"));
  ASSERT_EQ(r["trials"].size(), 2u);
  const Json& failed = r["trials"][1];
  ASSERT_EQ(failed["status"], "failed") << failed.dump();
  for (const char* k : {"loss", "accuracy", "test_accuracy"}) EXPECT_TRUE(failed["final"][k].is_null()) << k;
  EXPECT_TRUE(r["trials"][0]["final"]["loss"].is_number());
  // results.csv: index,status,attempts,worker,seconds,objective,<dim>,loss,accuracy,test_accuracy,epochs,rung,error
  std::istringstream csv(magmadnn::test::read_text(root + "/search/results.csv"));
  std::string header, ok, bad;
  std::getline(csv, header);
  std::getline(csv, ok);
  std::getline(csv, bad);
  EXPECT_EQ(bad.rfind("1,failed,", 0), 0u) << bad;
  auto field = [](const std::string& line, int n) {
    std::size_t b = 0;
    for (int i = 0; i < n; ++i) b = line.find(',', b) + 1;
    return line.substr(b, line.find(',', b) - b);
  };
  for (int f : {5, 7, 8, 9}) EXPECT_EQ(field(bad, f), "") << "field " << f << " of " << bad;
  EXPECT_NE(field(ok, 7), "");
  for (const Json& e : magmadnn::tune::read_journal(root + "/search/journal.jsonl")) {
    if (e.value("event", "") == "failed") EXPECT_TRUE(e["outcome"]["loss"].is_null()) << e.dump();
  }
}

// --resume compares the config as JSON: its keys in another order (jq -S, an
// editor) are the same config; a real difference is named by its JSON path.
TEST(TuneCli, ResumeTakesTheConfigWithKeysReorderedAndNamesARealDifference) {
  const std::string root = prepare("cli-resume-order");
  Json j = Json::parse(magmadnn::test::read_text(root + "/tune.json"));
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "values": [0.05]}])");
  std::ofstream(root + "/tune.json") << j.dump(2);
  std::string err;
  ASSERT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/search", "--quiet"}, &err), 0) << err;
  Json reordered = Json::object();
  for (const char* k : {"seed", "objective", "space", "train"}) reordered[k] = j[k];
  Json train = Json::object();  // and inside "train" too
  for (auto it = j["train"].rbegin(); it != j["train"].rend(); ++it) train[it.key()] = it.value();
  reordered["train"] = train;
  std::ofstream(root + "/reordered.json") << reordered.dump();
  EXPECT_EQ(cli({"tune", root + "/reordered.json", "--out", root + "/search", "--resume", "--quiet"}, &err), 0) << err;
  Json changed = reordered;
  changed["train"]["epochs"] = 3;
  std::ofstream(root + "/changed.json") << changed.dump();
  EXPECT_EQ(cli({"tune", root + "/changed.json", "--out", root + "/search", "--resume", "--quiet"}, &err), 1);
  EXPECT_NE(err.find("at train.epochs the search began with 2, the config given now has 3"), std::string::npos) << err;
  EXPECT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/search", "--resume", "--seed", "4", "--quiet"}, &err),
            1);
  EXPECT_NE(err.find("the seed differs"), std::string::npos) << err;
}

// A journal of 0 bytes (the search stopped before its first line) is empty,
// not missing.
TEST(TuneCli, AnEmptyJournalIsCalledEmpty) {
  const std::string root = prepare("cli-empty-journal");
  fs::create_directories(root + "/search");
  std::ofstream(root + "/search/journal.jsonl").flush();
  std::string err;
  EXPECT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/search", "--resume", "--quiet"}, &err), 1);
  EXPECT_NE(err.find("journal.jsonl is empty (0 bytes)"), std::string::npos) << err;
  EXPECT_EQ(err.find("does not exist"), std::string::npos) << err;
  EXPECT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/none", "--resume", "--quiet"}, &err), 1);
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
}

// While one process holds a search folder, a second `tune` (a --resume, or a
// new search) into it is refused naming the first's process id; its journal
// is untouched. (Two resumes at once both ran, interleaving the journal.)
TEST(TuneCli, ASecondSearchIntoAFolderInUseIsRefusedNamingTheFirst) {
  const std::string root = prepare("cli-locked");
  Json j = Json::parse(magmadnn::test::read_text(root + "/tune.json"));
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "values": [0.05]}])");
  std::ofstream(root + "/tune.json") << j.dump(2);
  std::string err;
  ASSERT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/search", "--quiet"}, &err), 0) << err;
  const std::string journal = magmadnn::test::read_text(root + "/search/journal.jsonl");
  {
    const magmadnn::cli::FolderLock held(root + "/search", "magmadnn tune");
    EXPECT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/search", "--resume", "--quiet"}, &err), 2);
    EXPECT_NE(err.find(root + "/search is in use by process " + std::to_string(::getpid())), std::string::npos)
        << err;
    EXPECT_EQ(magmadnn::test::read_text(root + "/search/journal.jsonl"), journal);
  }
  EXPECT_FALSE(fs::exists(root + "/search/.lock"));  // removed by its holder
  EXPECT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/search", "--resume", "--quiet"}, &err), 0) << err;
  EXPECT_FALSE(fs::exists(root + "/search/.lock"));
}

// A search into a training run's folder would replace its report.html; a
// config that is a file the search writes would be replaced by it.
TEST(TuneCli, RefusesATrainingRunFolderAndAConfigInsideItsOwnOutput) {
  const std::string root = prepare("cli-run-folder");
  fs::create_directories(root + "/run");
  std::ofstream(root + "/run/config.json") << "{}";
  std::ofstream(root + "/run/report.html") << "the run's page";
  std::string err;
  EXPECT_EQ(cli({"tune", root + "/tune.json", "--out", root + "/run", "--quiet"}, &err), 2);
  EXPECT_NE(err.find("--out " + root + "/run holds a training run"), std::string::npos) << err;
  EXPECT_EQ(magmadnn::test::read_text(root + "/run/report.html"), "the run's page");
  fs::create_directories(root + "/s2");
  fs::copy_file(root + "/tune.json", root + "/s2/results.json");
  EXPECT_EQ(cli({"tune", root + "/s2/results.json", "--out", root + "/s2", "--quiet"}, &err), 2);
  EXPECT_NE(err.find("is the results.json of the search folder"), std::string::npos) << err;
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

#endif

}  // namespace

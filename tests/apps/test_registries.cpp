// A data-parallel strategy and a searcher registered here, in the test's own
// file, exactly as a new one registers in its own .cpp: with no other edit,
// the run config accepts them, the trait checks read their traits, the
// messages that list the choices name them, and `magmadnn train --help`,
// `magmadnn tune --help` and the top help list them; a search runs with the
// new searcher. Its own executable, so that no other test sees the extra
// entries (test_spec checks the built-in list word for word).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli.h"
#include "magmadnn/comm/local_communicator.h"
#include "magmadnn/core/registry.h"
#include "magmadnn/parallel/strategy_registry.h"
#include "magmadnn/run/data_parallel.h"
#include "magmadnn/run/spec.h"
#include "magmadnn/tune/settings.h"
#include "magmadnn/tune/tune_config.h"

namespace {

using namespace magmadnn;
using run::ConfigError;
using run::Json;
namespace fs = std::filesystem;

// -- what a new strategy's .h and .cpp would hold ---------------------------------------------

template <typename T>
class EchoStrategy final : public distributed::Strategy<T> {
 public:
  EchoStrategy(std::shared_ptr<distributed::Communicator> comm, distributed::StrategyOptions options)
      : distributed::Strategy<T>(std::move(comm), options) {}
  std::string name() const override { return "echo"; }
  void attach(model::NeuralNetwork<T>& net) override { this->broadcast_initial_state(net); }
};
const distributed::StrategyRegistrar<EchoStrategy> echo_registrar(
    {"echo", "a test strategy: rank 0 listens, the others train alone", 60,
     {.serves_model_parallel = true, .server_trains_no_data = true}});

// -- what a new searcher's .h and .cpp would hold ---------------------------------------------

class FirstPointSearcher final : public tune::Searcher {
 public:
  FirstPointSearcher(const Json& j, const std::string& where, const tune::SearchContext& context)
      : Searcher(context) {
    tune::Settings(j, where, {"type"});
  }
  std::string name() const override { return "first"; }
  tune::Proposal next(double) override {
    if (proposed_) return {};
    proposed_ = true;
    return propose(make_trial(0, 0, 0, ctx_.space.grid_point(0)));
  }
  void report(const tune::TrialRecord&) override {}
  Json describe() const override { return {{"type", name()}}; }

 private:
  bool proposed_ = false;
};
const tune::SearcherRegistrar<FirstPointSearcher> first_registrar(
    {"first", "a test searcher: the space's first grid point, once", 40});

// -- the rest of the code, unchanged ----------------------------------------------------------

struct Result {
  int rc;
  std::string out, err;
};
Result run_cmd(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = cli::run_cli(args, out, err);
  return {rc, out.str(), err.str()};
}

Json mlp(const std::string& strategy, const std::string& parallel = "data") {
  Json j;
  j["layers"] = Json::array({{{"type", "flatten"}},
                             {{"type", "dense"}, {"units", 64}, {"activation", "relu"}},
                             {{"type", "dense"}, {"units", 64}, {"activation", "relu"}},
                             {{"type", "dense"}, {"units", 3}, {"activation", "softmax"}}});
  j["distributed"] = {{"strategy", strategy}, {"parallel", parallel}};
  j["data"] = {{"dataset", "synthetic"}, {"shape", {1, 4, 4}}, {"classes", 3}, {"train_samples", 40},
               {"test_samples", 10}};
  j["epochs"] = 1;
  j["batch_size"] = 10;
  return j;
}

std::string refusal(const Json& j) {
  try {
    run::parse_config(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Registries, ANewStrategyIsAcceptedAndAskedForItsTraits) {
  // The config takes it, also for a hybrid plan (it serves model parallelism).
  EXPECT_EQ(run::parse_config(mlp("echo")).distributed.strategy, "echo");
  EXPECT_EQ(refusal(mlp("echo", "model")), "");
  // The choices in messages are the registry's, by order.
  // (Built from the registry, so that the library's own strategies may
  // grow without an edit here; echo must be among them.)
  const std::vector<std::string> names = distributed::strategy_names();
  ASSERT_NE(std::find(names.begin(), names.end(), "echo"), names.end());
  EXPECT_EQ(refusal(mlp("horovod")),
            "distributed.strategy: expected one of " + names_text(names, ", ", "\"") + R"(, got "horovod")");
  const std::vector<std::string> serving =
      distributed::strategy_names_where([](const distributed::StrategyTraits& t) { return t.serves_model_parallel; });
  ASSERT_NE(std::find(serving.begin(), serving.end(), "echo"), serving.end());
  EXPECT_NE(refusal(mlp("ring", "model")).find("which only the " + names_text(serving) + " strategy serves"),
            std::string::npos)
      << refusal(mlp("ring", "model"));
  // Its traits, not its name: rank 0 serves and trains on no data.
  const run::DistributedSpec d = run::parse_config(mlp("echo")).distributed;
  EXPECT_EQ(run::DataParallel::server_rank_for(d, 2), 0);
  EXPECT_EQ(run::DataParallel::server_rank_for(d, 1), -1);
  // make_strategy builds it, an exchange mask included.
  auto comm = std::make_shared<distributed::LocalCommunicator>();
  distributed::StrategyOptions o;
  o.sum_gradients = true;
  EXPECT_EQ(distributed::make_strategy<float>("echo", comm, o)->name(), "echo");
  EXPECT_EQ(distributed::make_strategy<double>("echo", comm)->name(), "echo");
  try {
    distributed::make_strategy<float>("ps", comm, o);
    ADD_FAILURE() << "ps took summed gradients";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("only " + names_text(serving) + " does"), std::string::npos) << e.what();
  }
  // A second strategy of the same name is refused.
  EXPECT_THROW(distributed::StrategyRegistrar<EchoStrategy>({"echo", "again", 70, {}}), ValueError);
}

TEST(Registries, TheCliListsANewStrategyAndTakesIt) {
  const Result help = run_cmd({"train", "--help"});
  ASSERT_EQ(help.rc, 0) << help.err;
  std::vector<std::string> names = distributed::strategy_names();
  ASSERT_NE(std::find(names.begin(), names.end(), "echo"), names.end());
  names.front() += " (default)";
  EXPECT_NE(help.out.find("under mpirun: " + names_text(names)), std::string::npos) << help.out;
  // Its line of the strategy table: the name, padded to the longest name, then its help.
  const std::size_t line = help.out.find("\n  echo ");
  ASSERT_NE(line, std::string::npos) << help.out;
  const std::string echo_line = help.out.substr(line + 1, help.out.find('\n', line + 1) - line - 1);
  EXPECT_EQ(echo_line.substr(echo_line.find_first_not_of(' ', 6)),
            "a test strategy: rank 0 listens, the others train alone")
      << help.out;
  const Result r = run_cmd({"train", "--strategy", "echo", "--print-config"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["distributed"]["strategy"], "echo");
  const Result bad = run_cmd({"train", "--strategy", "hogwild", "--print-config"});
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find(R"("echo")"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find(R"(got "hogwild")"), std::string::npos) << bad.err;
}

TEST(Registries, ANewSearcherIsAcceptedListedAndRuns) {
  Json j = {{"train", mlp("echo")},
            {"space", Json::parse(R"([{"path": "optimizer.learning_rate", "values": [0.05, 0.5]}])")},
            {"searcher", {{"type", "first"}}}};
  const tune::TuneConfig c = tune::parse_tune_config(j);
  EXPECT_EQ(c.make_searcher()->name(), "first");
  j["searcher"] = {{"type", "bayes"}};
  try {
    tune::parse_tune_config(j);
    ADD_FAILURE() << "an unknown searcher was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), R"(searcher.type: expected "grid", "random", "asha" or "first", got "bayes")");
  }
  j["searcher"] = {{"type", "first"}, {"trials", 3}};
  EXPECT_THROW(tune::parse_tune_config(j), ConfigError);  // its own settings reader refuses the key

  const Result top = run_cmd({"--help"});
  EXPECT_NE(top.out.find("hyperparameter search (grid, random, asha, first)"), std::string::npos) << top.out;
  const Result help = run_cmd({"tune", "--help"});
  EXPECT_NE(help.out.find("the searcher (grid, random, asha, first) picks"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("  first   a test searcher: the space's first grid point, once"), std::string::npos)
      << help.out;
  EXPECT_NE(help.out.find("  loss_area"), std::string::npos) << help.out;

  // A whole search with it: one trial, in this process.
  const fs::path root = fs::temp_directory_path() / ("magmadnn-registries-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  j["searcher"] = {{"type", "first"}};
  std::ofstream(root / "tune.json") << j.dump();
  const Result tuned = run_cmd({"tune", (root / "tune.json").string(), "--out", (root / "search").string(), "--quiet"});
  ASSERT_EQ(tuned.rc, 0) << tuned.err;
  std::ifstream in(root / "search" / "results.json");
  const Json results = Json::parse(in);
  EXPECT_EQ(results["searcher"], "first");
  EXPECT_EQ(results["trials"].size(), 1u);
  fs::remove_all(root);
}

}  // namespace

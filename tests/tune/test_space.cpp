// The search space and the tune config's reader: exact range steps, (seed, i)
// determinism, and mistakes refused with their JSON path.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "magmadnn/tune/counter_rng.h"
#include "magmadnn/tune/grid_searcher.h"
#include "magmadnn/tune/space.h"
#include "magmadnn/tune/tune_config.h"
#include "tune_fixtures.h"

namespace {

using namespace tunetest;
using magmadnn::run::ConfigError;

tune::SearchSpace space_of(const std::string& dims) {
  return tune::parse_space(Json::parse(dims), "space", base_train());
}

// The message of the ConfigError that parsing `j` throws ("" if none).
std::string refusal(const Json& j) {
  try {
    tune::parse_tune_config(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(TuneSpace, RangeStepsAreExact) {
  const auto s = space_of(R"([{"path": "optimizer.learning_rate", "range": [0.1, 0.9], "step": 0.1}])");
  const auto& p = s.dims[0].points;
  ASSERT_EQ(p.size(), 9u);
  const double expected[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  for (std::size_t k = 0; k < 9; ++k) EXPECT_EQ(p[k].get<double>(), expected[k]) << "point " << k;  // bit-exact
  EXPECT_EQ(p.back().get<double>(), 0.9);
  // Accumulating the step would drift: 0.1 + 0.1 + 0.1 != 0.3 in binary.
  EXPECT_NE(0.1 + 0.1 + 0.1, 0.3);

  const auto fine = space_of(R"([{"path": "optimizer.momentum", "range": [0, 0.99], "step": 0.01}])");
  ASSERT_EQ(fine.dims[0].points.size(), 100u);
  EXPECT_EQ(fine.dims[0].points[7].get<double>(), 0.07);
  EXPECT_EQ(fine.dims[0].points[99].get<double>(), 0.99);

  const auto ints = space_of(R"([{"path": "batch_size", "range": [16, 512], "step": 16}])");
  ASSERT_EQ(ints.dims[0].points.size(), 32u);
  EXPECT_TRUE(ints.dims[0].points[3].is_number_integer());
  EXPECT_EQ(ints.dims[0].points.back().get<std::int64_t>(), 512);
}

TEST(TuneSpace, GridVisitsEveryPointOnce) {
  const auto s = space_of(R"([{"path": "optimizer.learning_rate", "range": [0.1, 0.9], "step": 0.1},
                              {"path": "batch_size", "values": [16, 32, 64]},
                              {"path": "optimizer.type", "choice": ["sgd", "adam"]}])");
  ASSERT_EQ(s.grid_size(), 54u);
  std::set<std::string> seen;
  for (std::uint64_t i = 0; i < s.grid_size(); ++i) seen.insert(s.grid_point(i).dump());
  EXPECT_EQ(seen.size(), 54u);
  EXPECT_EQ(s.grid_point(0).dump(), R"({"optimizer.learning_rate":0.1,"batch_size":16,"optimizer.type":"sgd"})");
  EXPECT_EQ(s.grid_point(1)["optimizer.type"], "adam");  // the last dimension varies fastest
}

TEST(TuneSpace, RandomPointsDependOnSeedAndIndexOnly) {
  const auto s = space_of(R"([{"path": "optimizer.learning_rate", "log_uniform": [1e-4, 1]},
                              {"path": "optimizer.momentum", "uniform": [0, 0.9]},
                              {"path": "batch_size", "log_uniform": [8, 512], "integer": true},
                              {"path": "optimizer.type", "choice": ["sgd", "adam", "rmsprop"]}])");
  // Drawn in any order, point i is the same.
  std::vector<Json> forward, backward(50);
  for (std::uint64_t i = 0; i < 50; ++i) forward.push_back(s.random_point(11, i));
  for (std::uint64_t i = 50; i-- > 0;) backward[i] = s.random_point(11, i);
  EXPECT_EQ(forward, backward);
  EXPECT_NE(s.random_point(11, 3), s.random_point(12, 3));
  std::set<std::string> types;
  for (const Json& p : forward) {
    const double lr = p["optimizer.learning_rate"].get<double>();
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1.0);
    EXPECT_TRUE(p["batch_size"].is_number_integer());
    EXPECT_GE(p["batch_size"].get<std::int64_t>(), 8);
    EXPECT_LE(p["batch_size"].get<std::int64_t>(), 512);
    types.insert(p["optimizer.type"].get<std::string>());
  }
  EXPECT_EQ(types.size(), 3u);
  // The generator itself is a pure function: a known value guards it against changes.
  EXPECT_EQ(tune::uniform01(1, 2, 3), tune::uniform01(1, 2, 3));
  EXPECT_NE(tune::uniform01(1, 2, 3), tune::uniform01(1, 2, 4));
}

TEST(TuneSpace, SetsNestedParameters) {
  Json c = base_train();
  tune::set_param(c, "layers[1].units", 32);
  tune::set_param(c, "schedule.type", "cosine");  // an object the config did not have
  EXPECT_EQ(c["layers"][1]["units"], 32);
  EXPECT_EQ(c["schedule"]["type"], "cosine");
  const auto s = space_of(R"([{"path": "layers[1].units", "values": [16, 64]}])");
  EXPECT_EQ(s.dims[0].points.size(), 2u);
}

TEST(TuneConfigReader, RefusesMistakesWithTheirPath) {
  Json j = tune_json({{"type", "grid"}});
  auto with = [&](const std::string& pointer, const Json& v) {
    Json k = j;
    k[Json::json_pointer(pointer)] = v;
    return refusal(k);
  };
  EXPECT_EQ(refusal(j), "");
  EXPECT_NE(with("/space/0/step", 0.15).find("space[0].range: the end 0.9 is not the start 0.1 plus a whole number"),
            std::string::npos);
  EXPECT_NE(with("/space/0/stepp", 1).find("space[0].stepp: unknown key"), std::string::npos);
  EXPECT_NE(with("/space/0/path", "optimizer.learning_rat").find("space[0].path: \"optimizer.learning_rat\" is not a"),
            std::string::npos);
  EXPECT_NE(with("/space/1/values", Json::array({16, 0.5})).find("space[1]: value 0.5 is refused by the train config: "
                                                                 "batch_size: expected an integer"),
            std::string::npos);
  EXPECT_NE(with("/space/1/values", Json::array({16, "big"})).find("space[1]: value \"big\" does not fit batch_size"),
            std::string::npos);
  EXPECT_NE(with("/searcher/trails", 5).find("searcher.trails: unknown key"), std::string::npos);
  EXPECT_NE(with("/searcher", Json{{"type", "random"}}).find("searcher: a random search needs a budget"),
            std::string::npos);
  EXPECT_NE(with("/objective", Json{{"kind", "loss_area"}}).find("objective.threshold: missing"), std::string::npos);
  EXPECT_NE(with("/objective", Json{{"kind", "loss"}, {"threshold", 1}}).find("objective.threshold: unknown key"),
            std::string::npos);
  EXPECT_NE(with("/objective", Json{{"kind", "callback"}, {"name", "mine"}}).find("objective.name: no objective callback"),
            std::string::npos);
  EXPECT_NE(with("/colour", 1).find("colour: unknown key"), std::string::npos);
  EXPECT_NE(with("/train/epochs", 0).find("train.epochs: expected an integer"), std::string::npos);
  EXPECT_NE(with("/space/0", Json{{"path", "optimizer.learning_rate"}, {"uniform", {0.1, 0.9}}})
                .find("space[0]: a grid needs values, a range or a choice"),
            std::string::npos);
  EXPECT_NE(with("/searcher", Json{{"type", "asha"}, {"configs", 9}}).find("searcher.max_epochs: missing"),
            std::string::npos);
}

// The searchers and objective kinds each register from their own .cpp: the
// lists, the defaults and the messages naming the choices come from the
// registries, in their order (the messages as they were before them).
TEST(TuneConfigReader, SearchersAndObjectivesComeFromTheirRegistries) {
  EXPECT_EQ(tune::searcher_names(), (std::vector<std::string>{"grid", "random", "asha"}));
  EXPECT_EQ(tune::objective_names(),
            (std::vector<std::string>{"accuracy", "loss", "time", "weighted", "loss_area", "callback"}));
  EXPECT_EQ(tune::default_searcher_object(), (Json{{"type", "grid"}}));
  EXPECT_EQ(tune::default_objective().name, "loss");
  EXPECT_EQ(tune::Objective().describe(), (Json{{"kind", "loss"}, {"direction", "minimize"}}));
  for (const tune::SearcherEntry* e : tune::searchers()) EXPECT_FALSE(e->help.empty()) << e->name;
  for (const tune::ObjectiveKind* k : tune::objective_kinds()) EXPECT_FALSE(k->help.empty()) << k->name;

  Json j = tune_json({{"type", "bayes"}});
  EXPECT_EQ(refusal(j), R"(searcher.type: expected "grid", "random" or "asha", got "bayes")");
  j = tune_json({{"type", "grid"}});
  j["objective"] = {{"kind", "f1"}};
  EXPECT_EQ(refusal(j), R"(objective.kind: expected one of "accuracy", "loss", "time", "weighted", "loss_area", )"
                        R"("callback", got "f1")");
  j.erase("objective");
  const tune::TuneConfig c = tune::parse_tune_config(j);
  EXPECT_EQ(c.context.objective.kind(), "loss");
  try {
    tune::SearcherRegistrar<tune::GridSearcher>({"grid", "a second grid", 99});
    ADD_FAILURE() << "a second grid was registered";
  } catch (const magmadnn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("searcher 'grid' is registered twice"), std::string::npos) << e.what();
  }
  const auto none = +[](const tune::Settings&, const Json&, const tune::ObjectiveCallbacks&) {
    return tune::ObjectiveSetup{};
  };
  EXPECT_THROW(tune::ObjectiveRegistrar({"loss", "a second loss", 99, false, {}, none}), magmadnn::ValueError);
  EXPECT_EQ(tune::objective_names().size(), 6u);
}

TEST(TuneConfigReader, TakesAPresetAndTheSeedFlag) {
  Json j = tune_json({{"type", "grid"}});
  j["train"] = {{"preset", "lenet5"}, {"epochs", 2}};
  const tune::TuneConfig c = tune::parse_tune_config(j, {}, 99);
  EXPECT_EQ(c.context.seed, 99u);
  EXPECT_EQ(c.context.base["epochs"], 2);
  EXPECT_GT(c.context.base["layers"].size(), 5u);
  EXPECT_EQ(c.make_searcher()->name(), "grid");
}

}  // namespace

namespace {

TEST(TuneConfigReader, TheExampleConfigsParse) {
  std::size_t n = 0;
  for (const auto& f : std::filesystem::directory_iterator(MAGMADNN_TUNE_EXAMPLES)) {
    if (f.path().extension() != ".json") continue;
    SCOPED_TRACE(f.path().string());
    const tune::TuneConfig c = tune::parse_tune_config(magmadnn::run::read_json_file(f.path().string()));
    EXPECT_FALSE(c.context.space.dims.empty());
    ++n;
  }
  EXPECT_GE(n, 2u);
  const tune::TuneConfig lenet =
      tune::parse_tune_config(magmadnn::run::read_json_file(std::string(MAGMADNN_TUNE_EXAMPLES) + "/lenet5_batch_lr.json"));
  EXPECT_EQ(lenet.context.space.grid_size(), 54u);  // the issue's search: 6 batch sizes x 9 learning rates
}

}  // namespace

// Searchers and objectives in one process (InlineChannel) on synthetic
// trials: grid coverage, ASHA's and the loss-area objective's known answers,
// the random search's stop at a target accuracy, the results files.
#include <gtest/gtest.h>

#include <set>

#include "magmadnn/tune/asha_searcher.h"
#include "magmadnn/tune/inline_channel.h"
#include "magmadnn/tune/master.h"
#include "magmadnn/tune/results.h"
#include "support/run_fixtures.h"
#include "tune_fixtures.h"

namespace {

using namespace tunetest;

tune::SearchResult search(const Json& j, const std::string& dir, tune::TrialFunction fn = synthetic_trial,
                          const tune::ObjectiveCallbacks& callbacks = {}) {
  const tune::TuneConfig c = tune::parse_tune_config(j, callbacks);
  tune::InlineChannel channel(std::move(fn));
  tune::MasterOptions o;
  o.out_dir = dir;
  tune::SearchResult r = tune::run_search(c, channel, o);
  tune::write_results(dir, c, r);
  return r;
}

TEST(TuneSearch, GridInOneProcessRunsEveryPointOnce) {
  const std::string dir = fresh_dir("grid-inline");
  const tune::SearchResult r = search(tune_json({{"type", "grid"}}), dir);
  ASSERT_EQ(r.trials.size(), 36u);
  std::set<std::string> points;
  for (const auto& t : r.trials) {
    EXPECT_EQ(t.status, "ok");
    EXPECT_EQ(t.attempts, 1);
    points.insert(t.trial.params.dump());
  }
  EXPECT_EQ(points.size(), 36u);
  const auto counts = count_events(tune::read_journal(dir + "/journal.jsonl"));
  ASSERT_EQ(counts.size(), 36u);
  for (const auto& [i, c] : counts) {
    EXPECT_EQ(c.started, 1) << "trial " << i;
    EXPECT_EQ(c.finished, 1) << "trial " << i;
  }
  // The loss objective's best is the known minimum: lr 0.4 (closest to 0.37), batch 128.
  ASSERT_TRUE(r.best.has_value());
  const Json& best = r.trials[static_cast<std::size_t>(*r.best)].trial.params;
  EXPECT_EQ(best["optimizer.learning_rate"].get<double>(), 0.4);
  EXPECT_EQ(best["batch_size"], 128);
  // A second search into the same folder is refused (it would mix journals).
  EXPECT_THROW(search(tune_json({{"type", "grid"}}), dir), magmadnn::ValueError);
}

TEST(TuneSearch, ResultsFilesFollowTheSchema) {
  const std::string dir = fresh_dir("schema");
  search(tune_json({{"type", "grid"}}, {{"kind", "loss_area"}, {"threshold", 0.5}, {"axis", "epochs"}}), dir);
  const Json j = Json::parse(magmadnn::test::read_text(dir + "/results.json"));
  for (const char* key : {"objective", "searcher", "seed", "best", "dimensions", "trials"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["objective"]["kind"], "loss_area");
  EXPECT_EQ(j["searcher"], "grid");
  EXPECT_EQ(j["seed"], 7);
  EXPECT_EQ(j["dimensions"][0]["path"], "optimizer.learning_rate");
  EXPECT_EQ(j["dimensions"][0]["kind"], "range");
  EXPECT_EQ(j["dimensions"][1]["kind"], "list");
  const Json& t = j["trials"][5];
  for (const char* key : {"index", "params", "status", "attempts", "worker", "seconds", "objective", "final", "curve"})
    EXPECT_TRUE(t.contains(key)) << key;
  EXPECT_FALSE(t.contains("error"));
  EXPECT_EQ(t["curve"].size(), 3u);
  for (const char* key : {"epoch", "loss", "accuracy", "seconds"}) EXPECT_TRUE(t["curve"][0].contains(key)) << key;
  for (const char* key : {"loss", "accuracy", "test_accuracy"}) EXPECT_TRUE(t["final"].contains(key)) << key;
  const std::string csv = magmadnn::test::read_text(dir + "/results.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "index,status,attempts,worker,seconds,objective,optimizer.learning_rate,batch_size,loss,accuracy,"
            "test_accuracy,epochs,rung,error");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 37);
  // best.json is the winner's train config, which the train config reader takes unchanged.
  const Json best = Json::parse(magmadnn::test::read_text(dir + "/best.json"));
  const magmadnn::run::TrainSpec spec = magmadnn::run::parse_config(best);
  const Json& winner = j["trials"][j["best"].get<std::size_t>()]["params"];
  EXPECT_EQ(spec.optimizer.learning_rate, winner["optimizer.learning_rate"].get<double>());
  EXPECT_EQ(spec.batch_size, winner["batch_size"].get<std::int64_t>());
}

// Designed curves: by learning rate, the loss per epoch and its training seconds.
tune::TrialOutcome designed_curve(const tune::Trial& t, const std::shared_ptr<magmadnn::distributed::Communicator>&) {
  const double lr = t.params["optimizer.learning_rate"].get<double>();
  struct Curve { std::vector<double> loss, seconds; };
  Curve c;
  if (lr == 0.1) c = {{3.0, 2.5}, {0.1, 0.2}};  // the least area of all, but never under the threshold
  if (lr == 0.2) c = {{2.0, 1.5}, {1.0, 2.0}};  // area 3.5
  if (lr == 0.3) c = {{1.9, 1.2}, {0.5, 1.0}};  // area 0.95 + 0.6 = 1.55: the winner
  if (lr == 0.4) c = {{1.0, 0.5}, {2.0, 4.0}};  // the least loss, area 3
  if (lr == 0.5) c = {{1.0, std::nan("")}, {0.2, 0.4}};  // diverged
  tune::TrialOutcome o;
  for (std::size_t e = 0; e < c.loss.size(); ++e)
    o.curve.push_back({static_cast<std::int64_t>(e + 1), c.loss[e], 0.5, c.seconds[e]});
  o.loss = c.loss.back();
  return o;
}

TEST(TuneObjective, LossAreaPicksTheKnownWinner) {
  Json j = tune_json({{"type", "grid"}}, {{"kind", "loss_area"}, {"threshold", 1.8}});
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "range": [0.1, 0.5], "step": 0.1}])");
  const tune::SearchResult r = search(j, fresh_dir("area"), designed_curve);
  ASSERT_TRUE(r.best.has_value());
  EXPECT_EQ(r.trials[static_cast<std::size_t>(*r.best)].trial.params["optimizer.learning_rate"].get<double>(), 0.3);
  EXPECT_FALSE(r.trials[0].objective.has_value());  // above the threshold: no value at all
  EXPECT_FALSE(r.trials[4].objective.has_value());  // diverged
  EXPECT_NEAR(*r.trials[1].objective, 3.5, 1e-12);
  EXPECT_NEAR(*r.trials[2].objective, 1.55, 1e-12);
  // The plain loss objective would pick another trial: the threshold matters.
  j["objective"] = {{"kind", "loss"}};
  const tune::SearchResult by_loss = search(j, fresh_dir("area-loss"), designed_curve);
  EXPECT_EQ(*by_loss.best, 3);
}

TEST(TuneObjective, WeightedAndCallback) {
  tune::TrialRecord r;
  r.status = "ok";
  r.outcome.accuracy = 0.9;
  r.outcome.seconds = 10;
  const auto w = tune::Objective::parse({{"kind", "weighted"}, {"accuracy_weight", 2}, {"time_weight", 0.01}}, "objective");
  EXPECT_TRUE(w.maximize());
  EXPECT_NEAR(*w.evaluate(r), 2 * 0.9 - 0.01 * 10, 1e-12);
  r.status = "failed";
  EXPECT_FALSE(w.evaluate(r).has_value());

  tune::ObjectiveCallbacks cbs;
  cbs["largest_lr"] = {[](const tune::TrialRecord& t) -> std::optional<double> {
                         return t.trial.params["optimizer.learning_rate"].get<double>();
                       },
                       true};
  const tune::SearchResult s =
      search(tune_json({{"type", "grid"}}, {{"kind", "callback"}, {"name", "largest_lr"}}), fresh_dir("callback"),
             synthetic_trial, cbs);
  EXPECT_EQ(s.trials[static_cast<std::size_t>(*s.best)].trial.params["optimizer.learning_rate"].get<double>(), 0.9);
}

TEST(TuneSearch, AshaPromotesTheKnownBest) {
  Json j = tune_json({{"type", "asha"}, {"configs", 9}, {"min_epochs", 1}, {"max_epochs", 9}, {"eta", 3}});
  // One dimension: the synthetic loss then ranks configurations the same at every epoch count.
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "uniform": [0.01, 1.0]}])");
  const tune::TuneConfig c = tune::parse_tune_config(j);
  // The known answer: the configuration whose learning rate is closest to 0.37.
  std::int64_t known = 0;
  double closest = 1e9;
  for (std::int64_t k = 0; k < 9; ++k) {
    const double lr = c.context.space.random_point(7, static_cast<std::uint64_t>(k))["optimizer.learning_rate"].get<double>();
    if (std::fabs(lr - 0.37) < closest) closest = std::fabs(lr - 0.37), known = k;
  }
  const tune::SearchResult r = search(j, fresh_dir("asha"));
  ASSERT_EQ(r.trials.size(), 9u + 3u + 1u);  // rungs of 1, 3 and 9 epochs
  ASSERT_TRUE(r.best.has_value());
  const tune::TrialRecord& best = r.trials[static_cast<std::size_t>(*r.best)];
  EXPECT_EQ(best.trial.config, known);
  EXPECT_EQ(best.trial.rung, 2);
  EXPECT_EQ(best.outcome.curve.size(), 9u);
  int pruned = 0;
  for (const auto& t : r.trials) pruned += t.status == "pruned" ? 1 : 0;
  EXPECT_EQ(pruned, 8 + 2);  // rung-0 runs of the 8 configs that never reached the top, and the 2 at rung 1
}

TEST(TuneSearch, RandomStopsAtTheTargetAccuracy) {
  Json j = tune_json({{"type", "random"}, {"trials", 200}, {"target_accuracy", 0.85}});
  const tune::SearchResult r = search(j, fresh_dir("target"));
  ASSERT_FALSE(r.trials.empty());
  ASSERT_LT(r.trials.size(), 200u);
  std::size_t first_hit = r.trials.size();
  for (std::size_t i = 0; i < r.trials.size() && first_hit == r.trials.size(); ++i)
    if (r.trials[i].outcome.accuracy >= 0.85) first_hit = i;
  ASSERT_LT(first_hit, r.trials.size());
  // Nothing is proposed after the hit is reported; what was already sent
  // (at most 8 short trials at once) still finishes.
  EXPECT_LE(r.trials.size(), first_hit + 8);
  for (const auto& t : r.trials) {
    const tune::TuneConfig c = tune::parse_tune_config(j);
    EXPECT_EQ(t.trial.params, c.context.space.random_point(7, static_cast<std::uint64_t>(t.trial.index)));
  }
}

TEST(TuneSearch, AFailingTrialIsRecordedWithItsReason) {
  const tune::SearchResult r = search(tune_json({{"type", "grid"}}), fresh_dir("throws"),
                                      [](const tune::Trial& t, const auto& g) {
                                        if (t.index == 4) throw magmadnn::ValueError("no good: trial 4");
                                        return synthetic_trial(t, g);
                                      });
  EXPECT_EQ(r.trials[4].status, "failed");
  EXPECT_EQ(r.trials[4].attempts, 1);  // a trial that throws is not a lost worker: no retry
  EXPECT_NE(r.trials[4].outcome.error.find("no good: trial 4"), std::string::npos);
  EXPECT_EQ(r.trials[4].to_json()["error"], r.trials[4].outcome.error);
  EXPECT_EQ(r.trials[5].status, "ok");
}

}  // namespace

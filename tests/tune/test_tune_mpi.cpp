// The search under mpirun: rank 0 is the master, the other ranks workers in
// groups of K (--ranks-per-trial). A grid must run every point exactly once
// at every rank count, and a group must train each trial together (the
// synthetic trial checks its group with an allreduce).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/tune/comm_channel.h"
#include "magmadnn/tune/master.h"
#include "magmadnn/tune/worker.h"
#include "tune_fixtures.h"

namespace {

using namespace tunetest;
std::shared_ptr<magmadnn::distributed::Communicator> g_world;

// A trial every rank of the group takes part in: the sum of the group's
// ranks travels back in the outcome, so the master sees that K ranks ran it.
tune::TrialOutcome group_trial(const tune::Trial& t, const std::shared_ptr<magmadnn::distributed::Communicator>& group) {
  tune::TrialOutcome o = synthetic_trial(t, group);
  std::int64_t members[2] = {1, g_world->rank()};
  if (group) group->allreduce(magmadnn::distributed::host_buffer(members, 2), magmadnn::distributed::ReduceOp::sum);
  o.extra["members"] = members[0];
  o.extra["rank_sum"] = members[1];
  o.extra["index_seen"] = t.index;
  return o;
}

struct MasterView {
  tune::SearchResult result;
  std::string dir;
};

// Trials 1 and 2 fail as a training run that diverges or whose callback
// throws: trial 1 on every rank of the group at once (a NaN loss), trial 2
// on the group's last rank alone while the others wait for it in an
// allreduce. Each failing rank reports on the trial's communicator first,
// as TrainingRun does.
tune::TrialOutcome failing_trial(const tune::Trial& t,
                                 const std::shared_ptr<magmadnn::distributed::Communicator>& comm) {
  const bool last = comm && comm->rank() == comm->size() - 1;
  if (t.index == 1 || (t.index == 2 && last)) {
    const std::string why = "trial " + std::to_string(t.index) + " failed on purpose";
    if (comm) comm->report_failure(why);
    throw magmadnn::ValueError(why);
  }
  return group_trial(t, comm);
}

// Runs a search (grid unless `config` is given) over the world with groups
// of k; the master's result on rank 0.
std::optional<MasterView> search(int k, const std::string& name, const tune::TrialFunction& fn = group_trial,
                                 const Json& config = tune_json({{"type", "grid"}})) {
  const tune::GroupLayout layout = tune::split_groups(*g_world, k);
  if (g_world->rank() == 0) {
    const std::string dir = fresh_dir(name);
    tune::CommMasterChannel channel(g_world, k);
    tune::MasterOptions o;
    o.out_dir = dir;
    return MasterView{tune::run_search(tune::parse_tune_config(config), channel, o), dir};
  }
  if (layout.leader) {
    tune::CommWorkerChannel channel(g_world);
    tune::serve(channel, fn, layout.comm);
  } else {
    tune::serve_group_member(layout.comm, fn);
  }
  return std::nullopt;
}

void check_grid(const tune::SearchResult& r, int k, const std::string& dir) {
  ASSERT_EQ(r.trials.size(), 36u);
  std::set<std::string> points;
  std::set<int> workers;
  for (const auto& t : r.trials) {
    EXPECT_EQ(t.status, "ok") << t.outcome.error;
    EXPECT_EQ(t.attempts, 1);
    points.insert(t.trial.params.dump());
    workers.insert(t.worker);
    EXPECT_EQ(t.outcome.extra["members"], k) << "trial " << t.trial.index;
    // Group g holds ranks 1 + g*k .. k + g*k.
    const int first = 1 + t.worker * k;
    EXPECT_EQ(t.outcome.extra["rank_sum"], k * first + k * (k - 1) / 2);
  }
  EXPECT_EQ(points.size(), 36u);
  EXPECT_EQ(static_cast<int>(workers.size()), (g_world->size() - 1) / k);
  const auto counts = count_events(tune::read_journal(dir + "/journal.jsonl"));
  ASSERT_EQ(counts.size(), 36u);
  for (const auto& [i, c] : counts) {
    EXPECT_EQ(c.started, 1) << "trial " << i;
    EXPECT_EQ(c.finished, 1) << "trial " << i;
  }
}

TEST(TuneMpi, GridRunsEveryPointOnceOneRankPerTrial) {
  if (g_world->size() < 2) GTEST_SKIP() << "needs a master and a worker rank";
  ScopedEnv sleep("TUNE_TEST_SLEEP_MS", "2");
  const auto r = search(1, "mpi-k1");
  if (r) check_grid(r->result, 1, r->dir);
}

TEST(TuneMpi, GridRunsEveryPointOnceInGroups) {
  const int k = g_world->size() - 1;  // one group of every worker rank
  if (k < 2) GTEST_SKIP() << "needs at least 3 ranks";
  const auto r = search(k, "mpi-group");
  if (r) check_grid(r->result, k, r->dir);
}

TEST(TuneMpi, GridRunsEveryPointOnceInGroupsOfTwo) {
  const int workers = g_world->size() - 1;
  if (workers < 4 || workers % 2 != 0) GTEST_SKIP() << "needs 1 + 2m ranks, m >= 2";
  const auto r = search(2, "mpi-k2");
  if (r) check_grid(r->result, 2, r->dir);
}

// A failed trial's communicator is unusable on every rank of its group;
// the group itself must go on to the next trial (a search over learning
// rates meets diverging ones as a rule), and nothing of the failure may
// reach a later trial.
TEST(TuneMpi, AFailedTrialLeavesItsGroupWorking) {
  const int k = g_world->size() - 1;
  if (k < 2) GTEST_SKIP() << "needs at least 3 ranks";
  const auto r = search(k, "mpi-failing", failing_trial);
  if (!r) return;
  ASSERT_EQ(r->result.trials.size(), 36u);
  for (const auto& t : r->result.trials) {
    if (t.trial.index == 1 || t.trial.index == 2) {
      EXPECT_EQ(t.status, "failed") << "trial " << t.trial.index;
      EXPECT_NE(t.outcome.error.find("trial " + std::to_string(t.trial.index) + " failed on purpose"),
                std::string::npos)
          << t.outcome.error;
    } else {
      EXPECT_EQ(t.status, "ok") << "trial " << t.trial.index << ": " << t.outcome.error;
      EXPECT_EQ(t.outcome.extra["members"], k) << "trial " << t.trial.index;
    }
  }
}

// One rank per trial, and (3 ranks or more) one group of every worker rank.
std::vector<int> group_sizes() {
  std::vector<int> k{1};
  if (g_world->size() >= 3) k.push_back(g_world->size() - 1);
  return k;
}

// Every trial of `r` ended once in its journal, trained by a whole group of k.
void check_ended_once(const MasterView& v, int k) {
  for (const auto& t : v.result.trials) {
    EXPECT_EQ(t.attempts, 1) << "trial " << t.trial.index;
    EXPECT_EQ(t.outcome.extra["members"], k) << "trial " << t.trial.index;
  }
  for (const auto& [i, c] : count_events(tune::read_journal(v.dir + "/journal.jsonl"))) {
    EXPECT_EQ(c.started, 1) << "trial " << i;
    EXPECT_EQ(c.finished, 1) << "trial " << i;
  }
}

// The random searcher under mpirun: its 12 trials once each, at the points
// (seed, i) gives whatever the number of workers, one rank per trial and
// (3 ranks or more) one group of every worker rank.
TEST(TuneMpi, RandomRunsItsTrialsOnceAtTheirPoints) {
  if (g_world->size() < 2) GTEST_SKIP() << "needs a master and a worker rank";
  const Json j = tune_json({{"type", "random"}, {"trials", 12}});
  const tune::TuneConfig c = tune::parse_tune_config(j);
  for (const int k : group_sizes()) {
    const auto r = search(k, "mpi-random-k" + std::to_string(k), group_trial, j);
    if (!r) continue;
    ASSERT_EQ(r->result.trials.size(), 12u);
    for (const auto& t : r->result.trials) {
      EXPECT_EQ(t.status, "ok") << t.outcome.error;
      EXPECT_EQ(t.trial.params, c.context.space.random_point(7, static_cast<std::uint64_t>(t.trial.index)));
    }
    check_ended_once(*r, k);
  }
}

// ASHA under mpirun: 9 configurations at 1 epoch, promoted to 3 and 9
// (eta 3); with several workers the rungs fill asynchronously, so only the
// shape is fixed: every configuration once at rung 0, promotions only of
// configurations seen below, the best from the top rung.
TEST(TuneMpi, AshaPromotesAcrossRanks) {
  if (g_world->size() < 2) GTEST_SKIP() << "needs a master and a worker rank";
  Json j = tune_json({{"type", "asha"}, {"configs", 9}, {"min_epochs", 1}, {"max_epochs", 9}, {"eta", 3}});
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "uniform": [0.01, 1.0]}])");
  for (const int k : group_sizes()) {
    const auto r = search(k, "mpi-asha-k" + std::to_string(k), group_trial, j);
    if (!r) continue;
    std::map<int, std::set<std::int64_t>> rungs;
    for (const auto& t : r->result.trials) {
      EXPECT_TRUE(t.status == "ok" || t.status == "pruned") << t.status << " " << t.outcome.error;
      EXPECT_TRUE(rungs[t.trial.rung].insert(t.trial.config).second) << "config " << t.trial.config << " twice";
      EXPECT_EQ(t.outcome.curve.size(), t.trial.rung == 0 ? 1u : t.trial.rung == 1 ? 3u : 9u);
    }
    EXPECT_EQ(rungs[0].size(), 9u);
    for (const int rung : {1, 2})
      for (const std::int64_t c : rungs[rung]) EXPECT_EQ(rungs[rung - 1].count(c), 1u) << "config " << c;
    ASSERT_TRUE(r->result.best.has_value());
    EXPECT_EQ(r->result.trials[static_cast<std::size_t>(*r->result.best)].trial.rung, 2);
    check_ended_once(*r, k);
  }
}

TEST(TuneMpi, RefusesGroupsThatDoNotDivideTheRanks) {
  if (g_world->size() < 3) GTEST_SKIP() << "needs 2 or more worker ranks";
  EXPECT_THROW(tune::split_groups(*g_world, g_world->size()), magmadnn::ValueError);  // checked before any split
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_world = magmadnn::distributed::make_communicator("mpi");
  g_world->set_timeout(std::chrono::seconds(30));
  if (g_world->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  g_world.reset();
  return rc;
}

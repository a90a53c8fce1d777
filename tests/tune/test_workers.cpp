// Local worker processes (this binary started again, TuneChild.Worker) and
// the journal: a grid runs every point once with 1 and 4 workers, parameters
// do not depend on the number of workers, and killed workers and masters
// lose and repeat nothing (checked from the journal and a log of completed runs).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "magmadnn/tune/inline_channel.h"
#include "magmadnn/tune/master.h"
#include "magmadnn/tune/results.h"
#include "magmadnn/tune/worker.h"
#include "support/run_fixtures.h"
#include "tune_fixtures.h"

namespace {

using namespace tunetest;

// ASHA over one dimension, whose synthetic loss ranks configurations alike at every epoch count.
Json asha_json() {
  Json j = tune_json({{"type", "asha"}, {"configs", 9}, {"min_epochs", 1}, {"max_epochs", 9}, {"eta", 3}});
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "uniform": [0.01, 1.0]}])");
  return j;
}

// The configuration whose learning rate is closest to 0.37: ASHA's known answer.
std::int64_t asha_known_best() {
  const tune::TuneConfig c = tune::parse_tune_config(asha_json());
  std::int64_t known = 0;
  double closest = 1e9;
  for (std::int64_t k = 0; k < 9; ++k) {
    const double lr = c.context.space.random_point(7, static_cast<std::uint64_t>(k))["optimizer.learning_rate"].get<double>();
    if (std::fabs(lr - 0.37) < closest) closest = std::fabs(lr - 0.37), known = k;
  }
  return known;
}

// -- the children: this binary started again --------------------------------

// A worker when started by LocalWorkers; otherwise nothing to do.
TEST(TuneChild, Worker) {
  const std::optional<int> fd = tune::worker_fd_from_environment();
  if (!fd) GTEST_SKIP() << "run by the tests below as a worker process";
  std::freopen("/dev/null", "w", stdout);  // one worker per trial batch: keep gtest's report out of the parent's log
  tune::FdWorkerChannel channel(*fd);
  tune::ServeHooks hooks;
  hooks.after_result = [](const tune::Trial& t) {
    const std::string kill = env_or("TUNE_TEST_KILL");
    if (kill.empty()) return;
    const auto a = kill.find(':'), b = kill.rfind(':');
    if (std::stol(kill.substr(0, a)) == t.index && kill.substr(a + 1, b - a - 1) == "after" &&
        t.attempt <= std::stol(kill.substr(b + 1)))
      ::kill(::getpid(), SIGKILL);
  };
  tune::serve(channel, synthetic_trial, nullptr, hooks);
}

// A master with 2 workers searching the grid into TUNE_TEST_DIR, killing
// itself (SIGKILL) once TUNE_TEST_KILL_AFTER journal lines are on disk.
TEST(TuneChild, Master) {
  const std::string dir = env_or("TUNE_TEST_DIR");
  if (dir.empty()) GTEST_SKIP() << "run by the tests below as a master process";
  std::freopen("/dev/null", "w", stdout);
  const std::size_t kill_after = std::stoul(env_or("TUNE_TEST_KILL_AFTER", "0"));
  const tune::TuneConfig c = tune::parse_tune_config(env_or("TUNE_TEST_ASHA") == "1" ? asha_json() : tune_json({{"type", "grid"}}));
  tune::LocalWorkers workers(2, worker_command());
  tune::MasterOptions o;
  o.out_dir = dir;
  o.resume = env_or("TUNE_TEST_RESUME") == "1";
  o.after_commit = [kill_after](std::size_t lines) {
    if (kill_after > 0 && lines >= kill_after) ::kill(::getpid(), SIGKILL);
  };
  tune::run_search(c, workers, o);
}

// -- helpers -----------------------------------------------------------------

tune::SearchResult search_with_workers(const Json& j, int workers, const std::string& dir, bool resume = false) {
  const tune::TuneConfig c = tune::parse_tune_config(j);
  tune::LocalWorkers pool(workers, worker_command());
  tune::MasterOptions o;
  o.out_dir = dir;
  o.resume = resume;
  tune::SearchResult r = tune::run_search(c, pool, o);
  tune::write_results(dir, c, r);
  return r;
}

// Completed runs per trial, from TUNE_TEST_LOG.
std::map<std::int64_t, int> completed_runs(const std::string& log) {
  std::map<std::int64_t, int> m;
  std::istringstream in(magmadnn::test::read_text(log));
  std::int64_t i;
  int attempt;
  long pid;
  while (in >> i >> attempt >> pid) ++m[i];
  return m;
}

void expect_each_trial_once(const std::string& dir, std::size_t n) {
  const auto counts = count_events(tune::read_journal(dir + "/journal.jsonl"));
  ASSERT_EQ(counts.size(), n);
  for (const auto& [i, c] : counts) EXPECT_EQ(c.terminal(), 1) << "trial " << i;
}

// What asynchronous successive halving guarantees whatever order the
// workers finish in (asha_searcher.h), for asha_json()'s 9 configurations,
// eta 3 and rungs of 1, 3 and 9 epochs. The trial count is not among them:
// a config promoted early may later drop out of its rung's top third while
// the final top third is promoted too, so 4 workers can run 14 trials where
// synchronous halving runs 9 + 3 + 1 = 13.
void expect_asha_invariants(const tune::SearchResult& r) {
  std::map<int, std::set<std::int64_t>> by_rung;
  for (const auto& t : r.trials) {
    EXPECT_TRUE(t.status == "ok" || t.status == "pruned") << "trial " << t.trial.index << ": " << t.status;
    EXPECT_TRUE(by_rung[t.trial.rung].insert(t.trial.config).second)
        << "config " << t.trial.config << " ran twice at rung " << t.trial.rung;
    if (t.trial.rung > 0)
      EXPECT_EQ(by_rung[t.trial.rung - 1].count(t.trial.config), 1u)
          << "config " << t.trial.config << " reached rung " << t.trial.rung << " without finishing the one below";
  }
  ASSERT_EQ(by_rung.size(), 3u);
  EXPECT_EQ(by_rung[0].size(), 9u);  // every configuration starts
  // The final top third of each rung is always promoted: at least 3 reach rung 1 and 1 reaches rung 2.
  EXPECT_GE(by_rung[1].size(), 3u);
  EXPECT_GE(by_rung[2].size(), 1u);
  EXPECT_LE(by_rung[2].size(), by_rung[1].size());
}

// -- tests -------------------------------------------------------------------

TEST(TuneWorkers, GridRunsEveryPointOnceWithOneAndFourWorkers) {
  std::vector<Json> params_by_count[2];
  const int counts[2] = {1, 4};
  for (int k = 0; k < 2; ++k) {
    const std::string dir = fresh_dir("grid-w" + std::to_string(counts[k]));
    ScopedEnv log("TUNE_TEST_LOG", dir + "/runs.log");
    ScopedEnv sleep("TUNE_TEST_SLEEP_MS", "3");
    const tune::SearchResult r = search_with_workers(tune_json({{"type", "grid"}}), counts[k], dir);
    ASSERT_EQ(r.trials.size(), 36u);
    std::set<std::string> points;
    std::set<int> workers_used;
    for (const auto& t : r.trials) {
      EXPECT_EQ(t.status, "ok");
      points.insert(t.trial.params.dump());
      params_by_count[k].push_back(t.trial.params);
      workers_used.insert(t.worker);
    }
    EXPECT_EQ(points.size(), 36u);
    EXPECT_EQ(workers_used.size(), static_cast<std::size_t>(counts[k]));
    expect_each_trial_once(dir, 36);
    for (const auto& [i, n] : completed_runs(dir + "/runs.log")) EXPECT_EQ(n, 1) << "trial " << i << " ran " << n << " times";
    EXPECT_EQ(completed_runs(dir + "/runs.log").size(), 36u);
  }
  EXPECT_EQ(params_by_count[0], params_by_count[1]);
}

TEST(TuneWorkers, RandomParamsDoNotDependOnTheWorkers) {
  const Json j = tune_json({{"type", "random"}, {"trials", 24}});
  const tune::TuneConfig c = tune::parse_tune_config(j);
  ScopedEnv sleep("TUNE_TEST_SLEEP_MS", "2");
  for (int workers : {1, 3}) {
    const tune::SearchResult r = search_with_workers(j, workers, fresh_dir("random-w" + std::to_string(workers)));
    ASSERT_EQ(r.trials.size(), 24u);
    for (const auto& t : r.trials)
      EXPECT_EQ(t.trial.params, c.context.space.random_point(7, static_cast<std::uint64_t>(t.trial.index)));
  }
}

TEST(TuneWorkers, AKilledWorkersTrialIsRetriedOnce) {
  for (const std::string point : {"before", "during", "after"}) {
    SCOPED_TRACE("killed " + point + " its trial");
    const std::string dir = fresh_dir("kill-" + point);
    ScopedEnv log("TUNE_TEST_LOG", dir + "/runs.log");
    ScopedEnv kill("TUNE_TEST_KILL", "5:" + point + ":1");
    ScopedEnv sleep("TUNE_TEST_SLEEP_MS", "4");
    const tune::SearchResult r = search_with_workers(tune_json({{"type", "grid"}}), 3, dir);
    ASSERT_EQ(r.trials.size(), 36u);
    for (const auto& t : r.trials) EXPECT_EQ(t.status, "ok") << "trial " << t.trial.index;
    expect_each_trial_once(dir, 36);
    const auto events = count_events(tune::read_journal(dir + "/journal.jsonl"));
    if (point == "after") {
      // Its result arrived before it died: recorded, never run again.
      EXPECT_EQ(r.trials[5].attempts, 1);
      EXPECT_EQ(events.at(5).lost, 0);
      EXPECT_EQ(events.at(5).started, 1);
    } else {
      EXPECT_EQ(r.trials[5].attempts, 2);
      EXPECT_EQ(events.at(5).lost, 1);
      EXPECT_EQ(events.at(5).started, 2);
    }
    const auto runs = completed_runs(dir + "/runs.log");
    EXPECT_EQ(runs.size(), 36u);
    for (const auto& [i, n] : runs) EXPECT_EQ(n, 1) << "trial " << i << " completed " << n << " times";
  }
}

TEST(TuneWorkers, ATrialLostTwiceFailsWithTheReason) {
  const std::string dir = fresh_dir("kill-twice");
  ScopedEnv kill("TUNE_TEST_KILL", "2:during:2");
  const tune::SearchResult r = search_with_workers(tune_json({{"type", "grid"}}), 2, dir);
  ASSERT_EQ(r.trials.size(), 36u);
  EXPECT_EQ(r.trials[2].status, "failed");
  EXPECT_EQ(r.trials[2].attempts, 2);
  EXPECT_NE(r.trials[2].outcome.error.find("was killed by signal 9"), std::string::npos) << r.trials[2].outcome.error;
  EXPECT_NE(r.trials[2].outcome.error.find("lost 2 times"), std::string::npos) << r.trials[2].outcome.error;
  for (const auto& t : r.trials)
    if (t.trial.index != 2) EXPECT_EQ(t.status, "ok");
  expect_each_trial_once(dir, 36);
  const Json j = Json::parse(magmadnn::test::read_text(dir + "/results.json"));
  EXPECT_EQ(j["trials"][2]["status"], "failed");
  EXPECT_TRUE(j["trials"][2]["objective"].is_null());
}

// Kills the master (a child process) once `lines` journal lines are on disk,
// then returns the journal it left.
std::vector<Json> run_master_until(const std::string& dir, std::size_t lines, bool resume, bool asha = false) {
  std::ostringstream cmd;
  cmd << "TUNE_TEST_ASHA=" << (asha ? 1 : 0) << " TUNE_TEST_DIR=" << dir << " TUNE_TEST_KILL_AFTER=" << lines << " TUNE_TEST_RESUME=" << (resume ? 1 : 0)
      << " TUNE_TEST_SLEEP_MS=5 TUNE_TEST_LOG=" << dir << "/runs.log " << tune::self_executable()
      << " --gtest_filter=TuneChild.Master";
  const auto result = magmadnn::test::run_shell(cmd.str(), dir + "/master");
  EXPECT_NE(result.rc, 0) << "the master was to be killed after " << lines << " lines\n" << result.out << result.err;
  return tune::read_journal(dir + "/journal.jsonl");
}

TEST(TuneWorkers, AKilledMasterResumesWithNothingLostOrRunTwice) {
  // Points: right after "begin", after the first round of starts, mid-search,
  // near the end; the last case kills the resumed master again.
  const std::vector<std::vector<std::size_t>> plans = {{1}, {3}, {20}, {40}, {66}, {12, 30}};
  for (const auto& plan : plans) {
    const std::string dir = fresh_dir("master-" + std::to_string(plan.front()) + "-" + std::to_string(plan.size()));
    SCOPED_TRACE("killed after " + std::to_string(plan.front()) + " lines, " + std::to_string(plan.size()) + " times");
    std::vector<Json> before;
    for (std::size_t k = 0; k < plan.size(); ++k) before = run_master_until(dir, plan[k], k > 0);
    ASSERT_GE(before.size(), 1u);
    const auto at_kill = count_events(before);
    {
      ScopedEnv log("TUNE_TEST_LOG", dir + "/runs.log");
      ScopedEnv sleep("TUNE_TEST_SLEEP_MS", "1");
      const tune::SearchResult r = search_with_workers(tune_json({{"type", "grid"}}), 2, dir, /*resume=*/true);
      ASSERT_EQ(r.trials.size(), 36u);
      for (const auto& t : r.trials) EXPECT_EQ(t.status, "ok");
      EXPECT_EQ(r.sessions, static_cast<int>(plan.size()) + 1);
    }
    const std::vector<Json> all = tune::read_journal(dir + "/journal.jsonl");
    const auto after = count_events(all, before.size());
    expect_each_trial_once(dir, 36);
    for (const auto& [i, c] : at_kill) {
      if (c.terminal() == 1) {
        EXPECT_EQ(after.count(i), 0u) << "trial " << i << " finished before the kill and was started again";
      } else {
        ASSERT_EQ(after.count(i), 1u);
        EXPECT_EQ(after.at(i).started, 1) << "trial " << i << " was started but not finished: it reruns once";
      }
    }
    // The full journal: every trial started at most once per session it was pending in.
    for (const auto& [i, c] : count_events(all)) EXPECT_LE(c.started, static_cast<int>(plan.size()) + 1) << i;
  }
}

TEST(TuneWorkers, AshaFindsTheKnownBestWithWorkersAndAfterAKilledMaster) {
  const std::int64_t known = asha_known_best();
  {
    const std::string dir = fresh_dir("asha-w4");
    ScopedEnv sleep("TUNE_TEST_SLEEP_MS", "3");
    const tune::SearchResult r = search_with_workers(asha_json(), 4, dir);
    expect_asha_invariants(r);
    ASSERT_TRUE(r.best.has_value());
    EXPECT_EQ(r.trials[static_cast<std::size_t>(*r.best)].trial.config, known);
    expect_each_trial_once(dir, r.trials.size());
  }
  // Killed twice, then resumed: the replayed rungs and promotions lead to the same answer.
  const std::string dir = fresh_dir("asha-killed");
  std::vector<Json> before = run_master_until(dir, 8, false, true);
  before = run_master_until(dir, 6, true, true);
  const tune::SearchResult r = search_with_workers(asha_json(), 2, dir, true);
  expect_asha_invariants(r);
  EXPECT_EQ(r.sessions, 3);
  ASSERT_TRUE(r.best.has_value());
  EXPECT_EQ(r.trials[static_cast<std::size_t>(*r.best)].trial.config, known);
  expect_each_trial_once(dir, r.trials.size());
  const auto at_kill = count_events(before);
  const auto after = count_events(tune::read_journal(dir + "/journal.jsonl"), before.size());
  for (const auto& [i, c] : at_kill)
    if (c.terminal() == 1) EXPECT_EQ(after.count(i), 0u) << "trial " << i << " ran again";
}

TEST(TuneWorkers, ARandomSearchOnASecondsBudgetResumesAlike) {
  const std::string dir = fresh_dir("seconds");
  const Json j = tune_json({{"type", "random"}, {"seconds", 0.3}});
  ScopedEnv sleep("TUNE_TEST_SLEEP_MS", "30");
  const tune::SearchResult r = search_with_workers(j, 2, dir);
  // What the budget guarantees whatever the machine's load (worker start-up
  // alone can take most of 0.3 s under ASan, so a trial count is not one):
  // trials start only while budget is left, the search ends only once it is
  // spent, and a trial finishing well inside it is followed by another.
  const std::vector<Json> events = tune::read_journal(dir + "/journal.jsonl");
  std::size_t started = 0, finished_early = 0;
  double end = -1;
  for (const Json& e : events) {
    const std::string kind = e["event"];
    const double t = e["t"];
    if (kind == "started") {
      ++started;
      EXPECT_LT(t, 0.3) << "a trial started after the budget was spent";
    }
    if (kind == "finished" && t < 0.2) ++finished_early;
    if (kind == "end") end = t;
  }
  EXPECT_GE(end, 0.3) << "the search ended before its budget was spent";
  EXPECT_EQ(started, r.trials.size());
  EXPECT_GE(r.trials.size(), std::min<std::size_t>(2 + finished_early, 40));
  EXPECT_GE(r.trials.size(), 2u);  // both workers got one at the start
  EXPECT_LE(r.trials.size(), 40u);  // 2 workers x 0.3 s / 30 ms = 20, with room for prefetch
  // The replay asks the searcher at the journaled times and gets the same trials; nothing new starts.
  const std::size_t lines = tune::read_journal(dir + "/journal.jsonl").size();
  const tune::SearchResult again = search_with_workers(j, 2, dir, true);
  EXPECT_EQ(again.trials.size(), r.trials.size());
  EXPECT_TRUE(count_events(tune::read_journal(dir + "/journal.jsonl"), lines).empty());
}

TEST(TuneWorkers, ResumingAFinishedSearchRunsNothing) {
  const std::string dir = fresh_dir("resume-done");
  search_with_workers(tune_json({{"type", "grid"}}), 2, dir);
  const std::size_t lines = tune::read_journal(dir + "/journal.jsonl").size();
  const tune::SearchResult r = search_with_workers(tune_json({{"type", "grid"}}), 2, dir, true);
  EXPECT_EQ(r.trials.size(), 36u);
  const auto added = count_events(tune::read_journal(dir + "/journal.jsonl"), lines);
  EXPECT_TRUE(added.empty());
  // A different config cannot resume this journal.
  EXPECT_THROW(search_with_workers(tune_json({{"type", "grid"}}, {{"kind", "accuracy"}}), 2, dir, true),
               magmadnn::ValueError);
}

// A journal whose lines are JSON but not events of this shape: each is
// refused as a damaged journal, a ValueError naming the file, not the JSON
// library's own exception nor undefined behaviour. The begin line without
// "tune" was found by tests/fuzz's journal target (the const operator[] of
// a missing key); "attempt": 1e300 is a float converted to int.
TEST(TuneJournal, ALineOfAnotherShapeIsADamagedJournal) {
  const Json cfg = tune_json({{"type", "grid"}});
  const std::string begin = Json{{"event", "begin"}, {"tune", cfg}, {"seed", 7}, {"workers", 1}, {"t", 0.0}}.dump();
  const std::string started =
      R"({"event":"started","trial":0,"attempt":1,"worker":0,"config":0,"rung":0,"params":{"optimizer.learning_rate":0.1,"batch_size":16},"t":0.1})";
  for (const std::string& bad :
       {std::string(R"({"event":"finished","attempt":1})"),          // no "trial"
        std::string(R"({"event":"started","trial":"zero"})"),        // a string where the index belongs
        std::string(R"({"event":"resume","t":"late"})"),             // a string where the time belongs
        started + "\n" + R"({"event":"finished","trial":0,"outcome":{"curve":[{"epoch":1}]}})",
        std::string(R"({"event":"started","trial":0,"attempt":1e300,"worker":0,"config":0,"rung":0,)") +
            R"("params":{"optimizer.learning_rate":0.1,"batch_size":16},"t":0.1})",  // a float where an int belongs
        started + "\n" + R"({"event":"finished","trial":0,"outcome":{"curve":[{"epoch":1e300,"loss":1,"accuracy":1,"seconds":1}]}})"}) {
    const std::string dir = fresh_dir("journal-shape");
    std::ofstream(dir + "/journal.jsonl") << begin << "\n" << bad << "\n";
    try {
      tune::InlineChannel channel(synthetic_trial);
      tune::MasterOptions o;
      o.out_dir = dir;
      o.resume = true;
      tune::run_search(tune::parse_tune_config(cfg), channel, o);
      ADD_FAILURE() << "resumed a journal holding " << bad;
    } catch (const magmadnn::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("journal.jsonl has a line that is not an event"), std::string::npos)
          << e.what();
    }
  }
}

// A begin line without "tune" or "seed" is another search's, refused as
// such (it was the const operator[] of a missing key: undefined behaviour,
// an assertion in the fuzz build; tests/fuzz/corpus/journal/crash-begin_without_tune).
TEST(TuneJournal, ABeginLineWithoutItsConfigIsAnotherSearch) {
  const Json cfg = tune_json({{"type", "grid"}});
  for (const Json& begin : {Json{{"event", "begin"}, {"seed", 7}}, Json{{"event", "begin"}, {"tune", cfg}}}) {
    const std::string dir = fresh_dir("journal-begin");
    std::ofstream(dir + "/journal.jsonl") << begin.dump() << "\n";
    tune::InlineChannel channel(synthetic_trial);
    tune::MasterOptions o;
    o.out_dir = dir;
    o.resume = true;
    try {
      tune::run_search(tune::parse_tune_config(cfg), channel, o);
      ADD_FAILURE() << "resumed " << begin.dump();
    } catch (const magmadnn::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("differs"), std::string::npos) << e.what();
    }
  }
}

// A number too large for a double (1e999) makes the JSON parser throw
// out_of_range, not parse_error: it escaped read_journal as the library's
// own exception (tests/fuzz's journal target, after 189,000 executions;
// reproducer corpus/journal/crash-number_out_of_range).
TEST(TuneJournal, ANumberOutOfRangeIsNotAJournalLine) {
  const std::string dir = fresh_dir("journal-range");
  std::ofstream(dir + "/journal.jsonl") << R"({"event":"begin"})" << "\n" << R"({"t":1e999})" << "\n";
  try {
    (void)tune::read_journal(dir + "/journal.jsonl");
    ADD_FAILURE() << "read a journal holding 1e999";
  } catch (const magmadnn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("journal.jsonl:2: not a journal line"), std::string::npos) << e.what();
  }
}

TEST(TuneJournal, DropsATornLastLine) {
  const std::string dir = fresh_dir("torn");
  {
    tune::Journal j(dir + "/journal.jsonl");
    j.append({{"event", "begin"}});
    j.commit();
  }
  std::ofstream(dir + "/journal.jsonl", std::ios::app) << R"({"event":"star)";
  EXPECT_EQ(tune::read_journal(dir + "/journal.jsonl").size(), 1u);
  {
    tune::Journal j(dir + "/journal.jsonl");
    j.append({{"event", "end"}});
    j.commit();
    EXPECT_EQ(j.committed(), 1u);
  }
  const auto events = tune::read_journal(dir + "/journal.jsonl");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["event"], "end");
}

}  // namespace

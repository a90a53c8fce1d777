/// @file tune_fixtures.h
/// What the search tests share: a train config to search over, a synthetic
/// trial function (no training: a loss curve computed from the parameters),
/// the test binary started again as a worker or a master, and a reading of
/// the journal that counts each trial's events.
///
/// The synthetic trial obeys the environment, which worker processes inherit:
///   TUNE_TEST_LOG=FILE        append "index attempt pid" for each completed run
///   TUNE_TEST_KILL=I:P:A      SIGKILL this worker at point P (before, during,
///                             after) of trial I, on attempts <= A
///   TUNE_TEST_SLEEP_MS=N      each trial lasts N ms (default 0)
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "magmadnn/tune/journal.h"
#include "magmadnn/tune/local_workers.h"
#include "magmadnn/tune/trial.h"
#include "magmadnn/tune/tune_config.h"

namespace tunetest {

using magmadnn::tune::Json;
namespace tune = magmadnn::tune;

/// A small valid train config (never trained: the synthetic trials only read it).
inline Json base_train() {
  return Json::parse(R"({"layers": [{"type": "flatten"}, {"type": "dense", "units": 8}], "epochs": 3,
                         "batch_size": 32, "optimizer": {"type": "sgd", "learning_rate": 0.1}})");
}

/// A tune config over learning rate x batch size with `searcher` and `objective`.
inline Json tune_json(const Json& searcher, const Json& objective = {{"kind", "loss"}}, std::uint64_t seed = 7) {
  Json j;
  j["train"] = base_train();
  j["space"] = Json::parse(R"([{"path": "optimizer.learning_rate", "range": [0.1, 0.9], "step": 0.1},
                               {"path": "batch_size", "values": [16, 32, 64, 128]}])");
  j["searcher"] = searcher;
  j["objective"] = objective;
  j["seed"] = seed;
  return j;
}

inline std::string env_or(const char* name, const std::string& def = "") {
  const char* v = std::getenv(name);
  return v ? std::string(v) : def;
}

/// The synthetic trial: loss_e = (lr - 0.37)^2 + 1 / (e * batch / 16), for
/// the trial's epochs; accuracy 1 - loss (clamped). A fixed, known landscape.
inline tune::TrialOutcome synthetic_trial(const tune::Trial& t,
                                          const std::shared_ptr<magmadnn::distributed::Communicator>& group) {
  const std::string kill = env_or("TUNE_TEST_KILL");
  long kill_index = -1, kill_attempts = 0;
  std::string point;
  if (!kill.empty()) {
    const auto a = kill.find(':'), b = kill.rfind(':');
    kill_index = std::stol(kill.substr(0, a));
    point = kill.substr(a + 1, b - a - 1);
    kill_attempts = std::stol(kill.substr(b + 1));
  }
  const bool doomed = t.index == kill_index && t.attempt <= kill_attempts;
  if (doomed && point == "before") ::kill(::getpid(), SIGKILL);
  const int sleep_ms = std::stoi(env_or("TUNE_TEST_SLEEP_MS", "0"));
  if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms / 2));
  if (doomed && point == "during") ::kill(::getpid(), SIGKILL);
  if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms - sleep_ms / 2));
  const Json& c = t.train_config;
  const double lr = c["optimizer"]["learning_rate"].get<double>();
  const double batch = c["batch_size"].get<double>();
  const auto epochs = c["epochs"].get<std::int64_t>();
  tune::TrialOutcome o;
  for (std::int64_t e = 1; e <= epochs; ++e) {
    const double loss = (lr - 0.37) * (lr - 0.37) + 1.0 / (static_cast<double>(e) * batch / 16.0);
    o.curve.push_back({e, loss, std::max(0.0, 1.0 - loss), 0.1 * static_cast<double>(e) * batch / 16.0});
  }
  o.loss = o.curve.back().loss;
  o.accuracy = o.curve.back().accuracy;
  o.extra = {{"pid", ::getpid()}, {"group", group ? group->size() : 1}};
  if (const std::string log = env_or("TUNE_TEST_LOG"); !log.empty()) {
    const std::string line = std::to_string(t.index) + " " + std::to_string(t.attempt) + " " +
                             std::to_string(::getpid()) + "\n";
    const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd >= 0) {
      [[maybe_unused]] const auto n = ::write(fd, line.data(), line.size());  // one append: lines never mix
      ::close(fd);
    }
  }
  return o;
}

/// The command that starts this test binary again as a worker (TuneChild.Worker).
inline std::vector<std::string> worker_command() {
  return {tune::self_executable(), "--gtest_filter=TuneChild.Worker", "--gtest_brief=1"};
}

/// The folders fresh_dir made, removed when the test program ends (kept
/// with TUNE_TEST_KEEP=1, to look at a failure).
struct MadeDirs {
  std::vector<std::string> dirs;
  ~MadeDirs() {
    if (std::getenv("TUNE_TEST_KEEP") != nullptr) return;
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
inline MadeDirs made_dirs;

/// A fresh, empty folder under the temporary directory.
inline std::string fresh_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("magmadnn-tune-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  made_dirs.dirs.push_back(d.string());
  return d.string();
}

/// Each trial's events in a journal.
struct TrialEvents {
  int started = 0, finished = 0, failed = 0, lost = 0;
  int terminal() const { return finished + failed; }
};
inline std::map<std::int64_t, TrialEvents> count_events(const std::vector<Json>& events, std::size_t from = 0,
                                                        std::size_t to = SIZE_MAX) {
  std::map<std::int64_t, TrialEvents> m;
  for (std::size_t k = from; k < std::min(to, events.size()); ++k) {
    const Json& e = events[k];
    if (!e.contains("trial")) continue;
    TrialEvents& t = m[e["trial"].get<std::int64_t>()];
    const std::string kind = e["event"];
    if (kind == "started") ++t.started;
    if (kind == "finished") ++t.finished;
    if (kind == "failed") ++t.failed;
    if (kind == "lost") ++t.lost;
  }
  return m;
}

/// Sets an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace tunetest

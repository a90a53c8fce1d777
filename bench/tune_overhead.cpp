// What the search machinery costs (magmadnn/tune/): no-op trials per second
// through the master, the overhead on trials of 1 s, and how trials per
// second scale with single-threaded worker processes. The journal is
// written and fsynced as in a real search.
//
//   bench_tune_overhead [--dir DIR] [--noop N] [--long T] [--scale N] [--spin-ms MS]
//
// The program starts itself again as its workers (MAGMADNN_TUNE_WORKER_FD);
// BENCH_TUNE_TRIAL tells them which trial to run.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "magmadnn/tune/inline_channel.h"
#include "magmadnn/tune/local_workers.h"
#include "magmadnn/tune/master.h"
#include "magmadnn/tune/worker.h"

namespace tune = magmadnn::tune;
using tune::Json;
using Clock = std::chrono::steady_clock;

namespace {

volatile double g_sink = 0;

// A fixed amount of arithmetic on one core (the same work in every process).
void spin(long iterations) {
  double x = 1.0;
  for (long i = 0; i < iterations; ++i) x = x * 1.0000001 + 1e-9;
  g_sink = x;
}

tune::TrialOutcome bench_trial(const tune::Trial&, const std::shared_ptr<magmadnn::distributed::Communicator>&) {
  const std::string kind = std::getenv("BENCH_TUNE_TRIAL") ? std::getenv("BENCH_TUNE_TRIAL") : "noop";
  if (kind == "sleep") std::this_thread::sleep_for(std::chrono::seconds(1));
  if (kind == "spin") spin(std::atol(std::getenv("BENCH_TUNE_SPIN")));
  tune::TrialOutcome o;
  o.curve.push_back({1, 0.5, 0.5, 0.0});
  o.loss = 0.5;
  o.accuracy = 0.5;
  o.seconds = 0;  // not timed: the master's clock is what counts here
  return o;
}

tune::TuneConfig config(long trials) {
  return tune::parse_tune_config(Json{
      {"train", {{"layers", Json::array({{{"type", "flatten"}}, {{"type", "dense"}, {"units", 2}}})}}},
      {"space", Json::array({{{"path", "optimizer.learning_rate"}, {"log_uniform", {1e-4, 1.0}}}})},
      {"searcher", {{"type", "random"}, {"trials", trials}}},
      {"seed", 1}});
}

// Seconds for `trials` trials of `kind` on `workers` processes (0: in this process).
double run(const std::string& dir, const std::string& kind, long trials, int workers) {
  ::setenv("BENCH_TUNE_TRIAL", kind.c_str(), 1);
  std::filesystem::remove_all(dir);
  const tune::TuneConfig c = config(trials);
  tune::MasterOptions o;
  o.out_dir = dir;
  const auto t0 = Clock::now();
  if (workers == 0) {
    tune::InlineChannel ch(bench_trial);
    tune::run_search(c, ch, o);
  } else {
    tune::LocalWorkers ch(workers, {tune::self_executable()});
    tune::run_search(c, ch, o);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::filesystem::remove_all(dir);
  return s;
}

// Seconds for `trials` spins split among `processes` forked processes.
double forked_spins(int processes, long trials, long iters) {
  const auto t0 = Clock::now();
  std::vector<pid_t> kids;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (long t = p; t < trials; t += processes) spin(iters);
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) ::waitpid(k, nullptr, 0);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

long arg(int argc, char** argv, const std::string& name, long def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + name) return std::atol(argv[i + 1]);
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  if (const auto fd = tune::worker_fd_from_environment()) {
    tune::FdWorkerChannel ch(*fd);
    tune::serve(ch, bench_trial);
    return 0;
  }
  std::string dir = (std::filesystem::temp_directory_path() / ("bench-tune-" + std::to_string(::getpid()))).string();
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--dir") dir = argv[i + 1];
  const long noop = arg(argc, argv, "noop", 20000);
  const long long_trials = arg(argc, argv, "long", 6);
  const int scale = static_cast<int>(arg(argc, argv, "scale", 2));
  const long spin_ms = arg(argc, argv, "spin-ms", 100);

  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) < 1) load[0] = -1;
  std::printf("tune overhead (journal fsynced in %s; load average %.2f)\n\n", dir.c_str(), load[0]);

  // 1. No-op trials through the master.
  std::printf("no-op trials per second through the master (%ld trials):\n", noop);
  Json record{{"noop_trials", noop}, {"load_before", load[0]}};
  for (int w : {0, 1, 2, 4}) {
    const double s = run(dir, "noop", noop, w);
    const std::string where = w == 0 ? "one process" : std::to_string(w) + (w == 1 ? " worker" : " workers");
    std::printf("  %-12s %9.0f trials/s\n", where.c_str(), static_cast<double>(noop) / s);
    record["noop_per_second"][w == 0 ? "inline" : std::to_string(w)] = static_cast<double>(noop) / s;
  }

  // 2. Overhead on trials of 1 s.
  std::printf("\noverhead on trials of 1 s (%ld trials):\n", long_trials);
  for (int w : {0, 1, 2}) {
    const double ideal = w <= 1 ? static_cast<double>(long_trials) : std::ceil(static_cast<double>(long_trials) / w);
    const double s = run(dir, "sleep", long_trials, w);
    const double overhead = (s - ideal) / ideal;
    const std::string where = w == 0 ? "one process" : std::to_string(w) + (w == 1 ? " worker" : " workers");
    std::printf("  %-12s %6.3f s for %.0f s of trials: %+.2f%%\n", where.c_str(), s, ideal, 100 * overhead);
    record["overhead_1s"][w == 0 ? "inline" : std::to_string(w)] = overhead;
  }

  // 3. Scaling with single-threaded workers on CPU-bound trials.
  const auto c0 = Clock::now();
  spin(20'000'000);
  const double per_iter = std::chrono::duration<double>(Clock::now() - c0).count() / 20'000'000.0;
  const long iters = static_cast<long>(static_cast<double>(spin_ms) / 1000.0 / per_iter);
  ::setenv("BENCH_TUNE_SPIN", std::to_string(iters).c_str(), 1);
  const long trials = 20L * scale;
  std::printf("\nscaling: %ld CPU-bound trials of about %ld ms, single-threaded workers:\n", trials, spin_ms);
  const double one = static_cast<double>(trials) / run(dir, "spin", trials, 1);
  const double many = static_cast<double>(trials) / run(dir, "spin", trials, scale);
  std::printf("  1 worker     %7.2f trials/s\n  %d workers    %7.2f trials/s  = %.2f x one worker (%.2f of %d x)\n", one,
              scale, many, many / one, many / one / scale, scale);
  // What the machine gives at this moment: the same work in `scale` plain
  // processes (no search machinery) against one, to tell the search's loss
  // from cores that are busy with something else.
  const double raw_one = static_cast<double>(trials) / forked_spins(1, trials, iters);
  const double raw_many = static_cast<double>(trials) / forked_spins(scale, trials, iters);
  std::printf("  bare processes, same work: %d give %.2f x one; the workers reach %.2f of that\n", scale,
              raw_many / raw_one, (many / one) / (raw_many / raw_one));
  record["scaling"] = {{"workers", scale}, {"one", one}, {"many", many}, {"ratio", many / one},
                       {"bare_ratio", raw_many / raw_one}};
  if (::getloadavg(load, 3) >= 1) record["load_after"] = load[0];
  std::printf("\n%s\n", record.dump().c_str());
  return 0;
}

// magmadnn tune: a hyperparameter search (magmadnn/tune/) -> journal, results, best config, report.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <ostream>
#include <thread>

#include "args.h"
#include "cli.h"
#include "folder_lock.h"
#include "output_guard.h"
#include "rank_output.h"
#include "magmadnn/core/registry.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/run/across_ranks.h"
#include "magmadnn/tune/comm_channel.h"
#include "magmadnn/tune/inline_channel.h"
#include "magmadnn/tune/local_workers.h"
#include "magmadnn/tune/master.h"
#include "magmadnn/tune/results.h"
#include "magmadnn/tune/train_trial.h"
#include "magmadnn/tune/worker.h"

#include "tune_report.h"

namespace magmadnn::cli {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"out", "DIR", "the search folder: journal.jsonl, results.csv, results.json, best.json (required)"},
    {"workers", "N", "run trials in N local worker processes (default: in this process)"},
    {"ranks-per-trial", "K", "under mpirun: train each trial data-parallel on a group of K ranks (default 1)"},
    {"watchdog", "SECONDS", "under mpirun: a worker group one of whose ranks sends no heartbeat this long is lost "
                            "and its trial runs elsewhere (default 10)"},
    {"resume", "", "continue the search in --out DIR from its journal"},
    {"seed", "S", "the search's seed (overrides the config's \"seed\")"},
    {"quiet", "", "no line per trial, only the summary"},
    {"worker", "", "(internal) serve trials to the master that started this process"},
};

// Built when asked, so that every registered searcher and objective is listed.
std::string about_text() {
  std::vector<std::pair<std::string, std::string>> searchers, objectives;
  for (const tune::SearcherEntry* e : tune::searchers()) searchers.emplace_back(e->name, e->help);
  for (const tune::ObjectiveKind* k : tune::objective_kinds()) objectives.emplace_back(k->name, k->help);
  return "Searches hyperparameters: each trial is a training run (as `magmadnn train`) of the config's\n"
         "\"train\" part with one point of its \"space\" applied; the searcher (" +
         names_text(tune::searcher_names(), ", ") +
         ") picks\n"
         "the points and the objective ranks the trials. The journal makes a killed search resumable\n"
         "with --resume. Under mpirun, rank 0 is the master and the other ranks are workers, in groups\n"
         "of --ranks-per-trial. See docs/tune.md for the config format." +
         choices_text("searchers (\"searcher\": {\"type\": NAME, ...})", searchers) +
         choices_text("objectives (\"objective\": {\"kind\": NAME, ...})", objectives);
}

std::string params_text(const Json& params) {
  std::string s;
  for (const auto& [path, v] : params.items()) s += (s.empty() ? "" : " ") + path + "=" + v.dump();
  return s;
}

void print_trial(std::ostream& out, const tune::TrialRecord& r) {
  out << "trial " << r.trial.index << " " << r.status << "  " << params_text(r.trial.params);
  if (r.status == "ok") {
    out << "  loss " << std::setprecision(4) << r.outcome.loss << "  accuracy " << r.outcome.accuracy;
    out << "  objective " << (r.objective ? Json(*r.objective).dump() : "null");
  } else {
    out << "  (" << r.outcome.error << ")";
  }
  out << "  " << std::fixed << std::setprecision(2) << r.outcome.seconds << " s" << std::defaultfloat << "\n";
  out.flush();
}

tune::TuneConfig read_config(const std::string& path, const ParsedArgs& a) {
  std::optional<std::uint64_t> seed;
  if (a.has("seed")) seed = static_cast<std::uint64_t>(a.integer("seed", 0, std::numeric_limits<std::int64_t>::max()));
  return tune::parse_tune_config(run::read_json_file(path), {}, seed);
}

// Before the master reads or writes the search folder: it is no training
// run's, the config is none of the files the search writes, and no other
// process writes it (a second `tune --resume` of one folder is refused).
FolderLock claim_search_folder(const std::string& dir, const std::string& config_path) {
  check_output_folder("magmadnn tune", dir, FolderKind::search);
  for (const auto& f : search_files()) {
    if (same_file((std::filesystem::path(dir) / f).string(), config_path)) {
      throw UsageError("magmadnn tune: the CONFIG " + config_path + " is the " + f + " of the search folder --out " +
                       dir + ", which the search writes; copy it out of the folder first");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  MAGMADNN_CHECK(!ec, IOError, "cannot create the search folder " << dir << ": " << ec.message());
  return FolderLock(dir, "magmadnn tune");
}

// The master's part, whatever the channel: search, results, report, summary.
int master(const tune::TuneConfig& config, tune::MasterChannel& channel, const std::string& dir, const ParsedArgs& a,
           std::ostream& out) {
  tune::MasterOptions options;
  options.out_dir = dir;
  options.resume = a.has("resume");
  if (!a.has("quiet")) options.on_trial_end = [&out](const tune::TrialRecord& r) { print_trial(out, r); };
  const tune::SearchResult result = tune::run_search(config, channel, options);
  tune::write_results(dir, config, result);
  write_tune_report(std::filesystem::path(dir));
  std::size_t failed = 0;
  for (const auto& r : result.trials) failed += r.status == "failed" ? 1 : 0;
  out << "magmadnn tune: " << result.trials.size() << " trials (" << failed << " failed) in " << std::fixed
      << std::setprecision(1) << result.seconds << " s on " << result.workers
      << (result.workers == 1 ? " worker" : " workers") << std::defaultfloat << " -> " << dir << "\n";
  if (result.best) {
    const tune::TrialRecord& b = result.trials[static_cast<std::size_t>(*result.best)];
    out << "best: trial " << b.trial.index << "  " << params_text(b.trial.params) << "  objective "
        << Json(*b.objective).dump() << "  (" << config.context.objective.kind() << "; best.json)\n";
  } else {
    out << "best: none (no trial has a value of the objective)\n";
  }
  return failed == result.trials.size() && !result.trials.empty() ? 1 : 0;
}

int tune_ranks(const std::shared_ptr<distributed::Communicator>& world, const std::string& path, const ParsedArgs& a,
               std::ostream& out) {
  const int k = a.has("ranks-per-trial") ? static_cast<int>(a.integer("ranks-per-trial", 1, 1 << 20)) : 1;
  // Every rank knows the count: each refuses it alike, as the user's mistake.
  const int workers = world->size() - 1;
  if (workers % k != 0)
    throw UsageError("magmadnn tune: --ranks-per-trial " + std::to_string(k) + " does not divide the " +
                     std::to_string(workers) + " worker ranks (rank 0 is the master): start 1 + a multiple of " +
                     std::to_string(k) + " ranks (mpirun -np " + std::to_string(1 + k * std::max(1, workers / k)) +
                     "), or choose a K that divides " + std::to_string(workers));
  // Rank 0 reads and checks the config; a mistake there reaches every rank,
  // which would otherwise wait for trials that never come. The workers need
  // nothing of it: each trial carries its train config.
  std::optional<tune::TuneConfig> config;
  std::optional<FolderLock> lock;
  run::share_config(*world, [&] {
    config = read_config(path, a);
    lock.emplace(claim_search_folder(a.str("out"), path));
    return Json(true);
  }, is_usage_error);
  const tune::GroupLayout layout = tune::split_groups(*world, k);
  const auto watchdog = std::chrono::milliseconds(
      static_cast<std::int64_t>((a.has("watchdog") ? a.positive("watchdog") : 10.0) * 1000.0));
  if (world->rank() == 0) {
    tune::CommMasterChannel channel(world, k, layout.beats, watchdog);
    const int rc = master(*config, channel, a.str("out"), a, out);
    if (channel.lost_any()) {
      // The ranks of a lost group may live on, stuck with a dead partner, and
      // MPI cannot finalize with a dead rank: the search is complete, so the
      // job ends here, with the search's status.
      out << "magmadnn tune: a worker group was lost (see the journal); ending the job" << std::endl;
      distributed::abort_job(rc);
    }
    return rc;
  }
  const tune::Heartbeat heartbeat(layout.beats, tune::heartbeat_interval(watchdog));
  if (layout.leader) {
    tune::CommWorkerChannel channel(world);
    tune::serve(channel, tune::train_trial, layout.comm);
  } else {
    tune::serve_group_member(layout.comm, tune::train_trial);
  }
  return 0;
}

}  // namespace

int tune_command(const std::vector<std::string>& args, std::ostream& out) {
  // The config file is the one positional argument.
  const SplitArgs split = split_positional(args, kOptions);
  const std::vector<std::string>& configs = split.positional;
  const ParsedArgs a = parse_args("magmadnn tune", split.options, kOptions);
  if (a.has("help")) {
    out << usage_text("magmadnn tune CONFIG --out DIR [--workers N] [--ranks-per-trial K] [--resume] [--seed S]",
                      about_text(), kOptions);
    return 0;
  }
  if (a.has("worker")) {
    const std::optional<int> fd = tune::worker_fd_from_environment();
    if (!fd) throw UsageError("magmadnn tune --worker: only a master starts workers (no " +
                              std::string(tune::kWorkerFdVariable) + " in the environment)");
    tune::FdWorkerChannel channel(*fd);
    tune::serve(channel, tune::train_trial);
    return 0;
  }
  if (configs.size() != 1)
    throw UsageError("magmadnn tune: expected one CONFIG file (usage: magmadnn tune CONFIG --out DIR), got " +
                     std::to_string(configs.size()));
  if (!a.has("out")) throw UsageError("magmadnn tune: --out DIR is required (the search folder)");
  const std::string dir = a.str("out");

  if (distributed::launched_by_mpi()) {
    if (a.has("watchdog") && !(a.positive("watchdog") <= 86400.0))
      throw UsageError("magmadnn tune: --watchdog " + a.str("watchdog") + " is more than a day (86400 s)");
    if (a.has("workers"))
      throw UsageError("magmadnn tune: --workers is for a single machine without mpirun; under mpirun the ranks "
                       "are the workers");
    const std::shared_ptr<distributed::Communicator> world = distributed::make_communicator("mpi");
    if (world->size() > 1)
      return run_on_ranks("magmadnn tune", *world, out,
                          [&](std::ostream& o) { return tune_ranks(world, configs[0], a, o); });
  }
  if (a.has("ranks-per-trial") && a.integer("ranks-per-trial", 1, 1 << 20) != 1)
    throw UsageError("magmadnn tune: --ranks-per-trial needs mpirun (rank 0 is the master, the others train)");
  const tune::TuneConfig config = read_config(configs[0], a);
  const FolderLock lock = claim_search_folder(dir, configs[0]);
  if (a.has("workers")) {
    const int n = static_cast<int>(a.integer("workers", 1, 4096));
    // N workers share the machine: unless told otherwise, each gets its share of the cores.
    if (std::getenv("OMP_NUM_THREADS") == nullptr) {
      const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      ::setenv("OMP_NUM_THREADS", std::to_string(std::max(1u, cores / static_cast<unsigned>(n))).c_str(), 1);
    }
    tune::LocalWorkers workers(n, {tune::self_executable(), "tune", "--worker"});
    return master(config, workers, dir, a, out);
  }
  tune::InlineChannel inline_channel(tune::train_trial);
  return master(config, inline_channel, dir, a, out);
}

}  // namespace magmadnn::cli

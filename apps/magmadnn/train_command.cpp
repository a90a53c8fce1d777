// magmadnn train: flags -> run specification -> run::TrainingRun -> run folder and printing.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <ostream>
#include <thread>

#include "args.h"
#include "checkpoint_config.h"
#include "cli.h"
#include "magmadnn/backend/cpu/cpu_gemm.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/compute/profiler.h"
#include "magmadnn/core/registry.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/comm/flight_recorder.h"
#include "magmadnn/parallel/strategy_registry.h"
#include "magmadnn/run/across_ranks.h"
#include "magmadnn/run/data_parallel.h"
#include "magmadnn/run/presets.h"
#include "magmadnn/run/run_training.h"
#include "magmadnn/run/spec_fields.h"
#include "rank_output.h"
#include "folder_lock.h"
#include "output_guard.h"
#include "run_folder.h"
#include "test_curve.h"
#include "test_results.h"

namespace magmadnn::cli {
namespace {
namespace fs = std::filesystem;

// "allreduce (default), weight-avg, ps, asgd or ring": the registry's names.
std::string strategy_choices() {
  std::vector<std::string> names = distributed::strategy_names();
  if (!names.empty()) names.front() += " (default)";
  return names_text(names);
}

// The options: those of the command, then one per field of the run spec
// that has a flag (spec_fields.h), in the table's order. Built when asked,
// so that every registered strategy is listed.
std::vector<OptionSpec> train_options() {
  std::vector<OptionSpec> o = {
    {"config", "FILE", "JSON config (merged over --preset when both are given)"},
    {"preset", "NAME", "start from a preset: mlp (default without --config), lenet5, resnet, resnet50, alexnet, alexnet-cifar, googlenet"},
    {"layers", "N", "mlp preset: number of hidden layers of 528 sigmoid units (default 1)"},
  };
  for (const SpecField& f : spec_fields()) {
    if (f.flag.name.empty()) continue;
    std::string help = f.flag.help;
    if (f.path() == "distributed.strategy") help += ": " + strategy_choices();
    if (f.flag.resume_may_change && f.path() != "epochs") help += "; may change on --resume";
    o.push_back({f.flag.name, f.flag.value, help});
  }
  const std::vector<OptionSpec> rest = {
    {"out", "DIR", "run folder (default runs/<name>-<date>-<time>)"},
    {"resume", "", "continue the run in --out DIR from its checkpoint"},
    {"checkpoint-every", "N", "also write checkpoint.bin inside an epoch: every N training steps (under mpirun: "
                              "after every N-th global batch of an epoch); 0 (default): at epoch ends only"},
    {"overwrite", "", "replace the run already in --out DIR"},
    {"threads", "N", "CPU threads, at most 4 per hardware thread (default: OpenMP's choice)"},
    {"print-config", "", "print the resolved config as JSON and exit"},
    {"print-schema", "", "print every config key (what it accepts, its default, its flag) as JSON and exit"},
    {"quiet", "", "no per-epoch output, only the final result line"},
    {"profile", "", "time every operation of the training steps and print where the time goes"},
  };
  o.insert(o.end(), rest.begin(), rest.end());
  return o;
}

const char* kAbout =
    "Trains a network on MNIST-format data (Fashion-MNIST by default) and writes a run folder:\n"
    "config.json, metrics.csv, summary.json, checkpoint.bin and report.html.\n"
    "Flags override the config; the config overrides the preset.\n"
    "Under mpirun -np N the ranks train together (srun is detected, not yet tested):\n"
    "--batch-size is the global batch, rank 0 writes the run folder and prints; see docs/distributed.md.";

// kAbout and one line per registered strategy.
std::string about_text() {
  std::vector<std::pair<std::string, std::string>> lines;
  for (const distributed::StrategyEntry* e : distributed::strategies()) lines.emplace_back(e->name, e->help);
  return kAbout + choices_text("strategies (--strategy NAME, distributed.strategy)", lines);
}

std::string default_out_dir(const std::string& name) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return "runs/" + name + "-" + stamp;
}

// A setting flag's value, read as its field takes it: integers in the
// field's range (or the flag's own), numbers, switches; names as given (the
// config then checks them against its choices).
Json flag_value(const ParsedArgs& a, const SpecField& f) {
  const std::string& name = f.flag.name;
  switch (f.accepts.kind) {
    case Accepts::Kind::integer:
    case Accepts::Kind::seed: {
      const IntRange r = f.flag.range.value_or(f.accepts.ints);
      return a.integer(name, r.min, r.max);
    }
    case Accepts::Kind::positive:
      return a.positive(name);
    case Accepts::Kind::number:  // an open lower end takes any positive number; the config checks the upper
      return f.accepts.lo_open ? a.positive(name) : a.number(name, f.accepts.lo, f.accepts.hi);
    case Accepts::Kind::boolean:
      return true;
    default:
      return a.str(name);
  }
}

// The config: preset and/or file (or the saved one when resuming), then the
// setting flags. With --resume only the flags whose field allows it.
Json resolve_config(const ParsedArgs& a, bool resume) {
  const std::vector<SpecField>& fields = spec_fields();
  Json cfg;
  if (resume) {
    std::vector<std::string> fixed = {"config", "preset", "layers", "overwrite"};
    for (const SpecField& f : fields) {
      if (!f.flag.name.empty() && !f.flag.resume_may_change) fixed.push_back(f.flag.name);
    }
    for (const std::string& flag : fixed) {
      if (a.has(flag)) {
        throw UsageError("magmadnn train: --resume continues the config saved in the run folder; --" + flag +
                         " cannot change it");
      }
    }
    const std::string saved = (fs::path(a.str("out")) / "config.json").string();
    if (!fs::exists(saved)) throw UsageError("magmadnn train: nothing to resume: " + saved + " does not exist");
    cfg = read_json_file(saved);
  } else {
    const std::string name = a.str("preset", a.has("config") ? "" : "mlp");
    if (a.has("layers") && name != "mlp") {
      throw UsageError("magmadnn train: --layers applies to the mlp preset only");
    }
    if (!name.empty()) {
      cfg = preset(name, a.has("layers") ? static_cast<int>(a.integer("layers", 1, 1000)) : 0);
    }
    if (a.has("config")) merge_json(cfg, read_json_file(a.str("config")));
  }
  for (const SpecField& f : fields) {
    if (f.flag.name.empty() || !a.has(f.flag.name)) continue;
    Json& target = f.group.empty() ? cfg : cfg[f.group];
    target[f.key] = flag_value(a, f);  // the config checks what the flag could not
  }
  return cfg;
}

// --threads' upper bound: 4 threads per hardware thread (at least 4, at
// most 1024); far more only exhausts the stacks OpenMP gives each thread.
std::int64_t max_threads() {
  const std::int64_t hw = std::thread::hardware_concurrency();
  return std::clamp<std::int64_t>(4 * hw, 4, 1024);
}

// Refuses, before anything is loaded or written, to mix a new run into an
// old one (or into any file of the names a run writes), and a --resume with
// nothing to resume.
void check_folder(const RunFolder& rf, bool resume, bool overwrite) {
  if (resume) {
    if (!rf.has_checkpoint()) {
      throw UsageError("magmadnn train: nothing to resume: " + rf.checkpoint_path() + " does not exist" +
                       previous_run_hint(rf.dir()));
    }
    return;
  }
  if (overwrite) return;
  for (const auto& f : RunFolder::run_files()) {
    if (fs::exists(rf.file(f))) {
      throw UsageError("magmadnn train: " + rf.dir() + " already holds a run (" + rf.file(f) +
                       " exists); pass --resume to continue it, --overwrite to replace it, or another --out");
    }
  }
}

// The run folder of one `train`, held by rank 0 from before it is read until
// the run ends: locked (a second process is refused naming this one), and,
// when the run is refused before it starts, left as it was found (a folder
// this run created is removed again).
class FolderClaim {
 public:
  FolderClaim(const std::string& dir, std::ostream& out) {
    check_output_folder("magmadnn train", dir, FolderKind::run);
    std::error_code ec;
    created_ = !fs::exists(dir, ec);
    const RunFolder rf(dir);  // creates it
    dir_ = rf.dir();
    try {
      lock_.emplace(dir_, "magmadnn train");
      // What a run killed in this folder left (an interrupted --overwrite, temporary
      // files) is settled now that no other process writes here: --resume reads
      // the restored config.json.
      rf.recover(out);
    } catch (...) {
      release();
      throw;
    }
  }
  FolderClaim(const FolderClaim&) = delete;
  FolderClaim& operator=(const FolderClaim&) = delete;
  ~FolderClaim() { release(); }
  /// The run started: from here on the folder is the run's.
  void accept() { accepted_ = true; }

 private:
  void release() noexcept {
    lock_.reset();
    std::error_code ec;
    if (created_ && !accepted_) fs::remove(dir_, ec);  // only when empty: a refused run leaves nothing
  }

  std::string dir_;
  std::optional<FolderLock> lock_;
  bool created_ = false, accepted_ = false;
};

// The per-op table, and how it adds up against the measured training time.
void print_profile(std::ostream& out, model::NeuralNetwork<float>& net, const model::History& history) {
  const std::int64_t steps = net.optimizer().step_count();
  const double train_seconds = training_seconds(history);
  out << "\nprofile of " << steps << " training steps (per-op clocks; --profile itself slows small ops):\n";
  const double profiled = op::Profiler::print(out, steps);
  char line[200];
  std::snprintf(line, sizeof line,
                "training time %.3f s, of which profiled %.3f s (%.1f%%); the rest is graph bookkeeping, "
                "callbacks and the clocks themselves\n\n",
                train_seconds, profiled, train_seconds > 0 ? 100.0 * profiled / train_seconds : 0.0);
  out << line;
}

}  // namespace

// How the run in a folder starts: what it continues or replaces.
struct FolderStart {
  bool resume = false, overwrite = false;
  FolderClaim* claim = nullptr;  // accepted when the training starts
};

static int train_in_folder(const RunFolder& rf, TrainingRun& run, const TrainSpec& spec, const Json& config,
                           const FolderStart& start, bool quiet, bool profile, std::int64_t checkpoint_every,
                           const std::shared_ptr<distributed::Communicator>& comm, std::ostream& out);
static int train_ranks(const ParsedArgs& a, const std::shared_ptr<distributed::Communicator>& comm, std::ostream& out);

int train_command(const std::vector<std::string>& args, std::ostream& out) {
  const std::vector<OptionSpec> options = train_options();
  const ParsedArgs a = parse_args("magmadnn train", args, options);
  if (a.has("help")) {
    out << usage_text("magmadnn train [--config FILE] [--preset NAME] [options]", about_text(), options);
    return 0;
  }
  if (a.has("print-schema")) {
    out << spec_schema().dump(2) << "\n";
    return 0;
  }
  // A single process (no launcher) gets the local communicator: no MPI at all.
  const std::shared_ptr<distributed::Communicator> comm = distributed::make_communicator("auto");
  if (comm->size() == 1) return train_ranks(a, comm, out);
  return run_on_ranks("magmadnn train", *comm, out, [&](std::ostream& o) { return train_ranks(a, comm, o); });
}

static int train_ranks(const ParsedArgs& a, const std::shared_ptr<distributed::Communicator>& comm, std::ostream& out) {
  const bool resume = a.has("resume"), quiet = a.has("quiet"), lead = comm->rank() == 0;
  if (resume && !a.has("out")) throw UsageError("magmadnn train: --resume needs --out DIR (the run to continue)");
  const std::int64_t threads = a.has("threads") ? a.integer("threads", 1, max_threads()) : 0;  // checked up front
  const std::int64_t checkpoint_every =
      a.has("checkpoint-every") ? a.integer("checkpoint-every", 0, limits::samples.max) : 0;
  // Rank 0 claims the run folder (locks it and settles what a killed run
  // left), resolves the config and checks the folder fits the run; every
  // rank trains on what it sent (the seed included), whatever its own files say.
  std::optional<FolderClaim> claim;
  const Json shared = share_config(*comm, [&] {
    if (a.has("out") && !a.has("print-config")) claim.emplace(a.str("out"), out);
    const TrainSpec spec = parse_config(resolve_config(a, resume));
    const std::string dir = a.str("out", default_out_dir(spec.name));
    if (!a.has("print-config")) {
      if (!claim) claim.emplace(dir, out);
      check_folder(RunFolder(dir), resume, a.has("overwrite"));
    }
    return Json{{"config", to_json(spec)}, {"out", dir}};
  }, is_usage_error);
  const Json& config = shared["config"];
  const TrainSpec spec = parse_config(config);
  if (a.has("print-config")) {
    out << config.dump(2) << "\n";
    return 0;
  }
  if (threads > 0) omp_set_num_threads(static_cast<int>(threads));

  // Loads the data and builds the network (split over the ranks when the plan has model-parallel layers).
  TrainingRun run(spec, comm->size() > 1 ? comm : nullptr);
  const std::string dir = shared["out"].get<std::string>();
  // A failed job's ranks leave their last collectives in the run folder (magmadnn flight).
  if (comm->size() > 1) distributed::flight::set_flight_dir(dir);
  if (!lead) {
    // Only rank 0 writes (nor creates the folder); the others read the checkpoint when resuming.
    RunOptions ro;
    ro.checkpoint_path = (fs::path(dir) / "checkpoint.bin").string();
    ro.resume = resume;
    ro.checkpoint_every_steps = checkpoint_every;  // every rank takes part in a mid-epoch checkpoint
    ro.communicator = comm;
    run.run(ro);
    return 0;
  }
  const RunFolder rf(dir);
  try {
    return train_in_folder(rf, run, spec, config, {resume, a.has("overwrite"), &*claim}, quiet, a.has("profile"),
                           checkpoint_every, comm, out);
  } catch (...) {
    // A new run that failed before its first checkpoint gives the folder back
    // to the run it was replacing (the same steps as after a kill).
    try {
      rf.recover(out);
    } catch (const std::exception& e) {
      out << "magmadnn train: " << rf.dir() << ": could not restore the previous run: " << e.what() << std::endl;
    }
    throw;
  }
}

// A batch script that runs `magmadnn train` without srun or mpirun gets one
// process, whatever the job asked for: say so rather than leave the other
// tasks idle without a word.
static void note_unused_slurm_tasks(const distributed::Communicator& comm, std::ostream& out) {
  const char* tasks = std::getenv("SLURM_NTASKS");
  if (comm.size() != 1 || tasks == nullptr || std::atoi(tasks) <= 1) return;
  out << "magmadnn train: note: Slurm gave this job SLURM_NTASKS=" << tasks
      << " tasks, but magmadnn runs here as one process; start it with `srun magmadnn train ...` (or mpirun) "
         "to train on all of them"
      << std::endl;
}

static int train_in_folder(const RunFolder& rf, TrainingRun& run, const TrainSpec& spec, const Json& config,
                           const FolderStart& start, bool quiet, bool profile, std::int64_t checkpoint_every,
                           const std::shared_ptr<distributed::Communicator>& comm, std::ostream& out) {
  const bool resume = start.resume;
  model::NeuralNetwork<float>& net = run.network();
  attach_config(net, config, run.sample_shape(), run.classes());
  if (!quiet) {
    out << "magmadnn train: " << spec.name << " (" << net.num_params() << " parameters) on "
        << run.train().x.shape()[0] << " training and " << run.test().x.shape()[0] << " test samples ("
        << run.validation().x.shape()[0] << " training samples held out for validation) from "
        << (spec.data.dataset == "synthetic" ? std::string("synthetic data (seeded random images)")
            : spec.data.dataset == "folder" ? spec.data.train_dir + " and " + spec.data.test_dir
                                            : spec.data.dir)
        << " (" << std::fixed << std::setprecision(1) << static_cast<double>(run.dataset_bytes()) / 1e6
        << std::defaultfloat << " MB in memory, images as " << run.train().x.storage_type() << ")"
        << "; run folder " << rf.dir() << (resume ? " (resuming)" : "");
    if (comm->size() > 1) {
      out << "; " << comm->size() << " ranks (" << comm->backend() << "), "
          << (spec.pipeline.enabled ? "pipeline" : "strategy " + spec.distributed.strategy) << ", global batch "
          << spec.batch_size;
    }
    out
        << std::endl;  // flushed: logs under nohup show it at once
    if (spec.precision == Precision::BF16 && !has_cuda_device() && !cpu::bf16_matmul_native())
      out << "magmadnn train: note: oneDNN has no bf16 GEMM or convolution for this CPU (it needs AVX-512), so bf16 "
             "operands are widened to float: the results of bf16, the speed below fp32's" << std::endl;
    note_unused_slurm_tasks(*comm, out);
  }

  RunOptions ro;
  ro.checkpoint_path = rf.checkpoint_path();
  ro.resume = resume;
  ro.checkpoint_every_steps = checkpoint_every;
  ro.profile = profile;
  if (comm->size() > 1) ro.communicator = comm;
  if (!quiet) {
    ro.log = &out;
    // A server that trains on no data (asgd's rank 0) has no running values
    // for a bar to show, so one line per epoch (its values are the workers' sums).
    const bool serves = DataParallel::server_rank_for(spec.distributed, comm->size()) >= 0;
    ro.callbacks.push_back(std::make_shared<model::ProgressBar<float>>(
        out, serves ? model::ProgressMode::Plain : model::ProgressMode::Auto));
  }
  // test_every_epoch: the scores of the epochs before a --resume are kept.
  TestCurve earlier;
  if (spec.test_every_epoch && resume && fs::exists(rf.file("test_per_epoch.csv"))) {
    earlier = parse_test_curve_csv(read_text_file(rf.file("test_per_epoch.csv")), rf.file("test_per_epoch.csv"));
  }
  auto with_earlier = [&](const TestCurve& now) {
    TestCurve all;
    for (const auto& t : earlier) {
      if (now.empty() || t.epoch < now.front().epoch) all.push_back(t);
    }
    all.insert(all.end(), now.begin(), now.end());
    return all;
  };

  // After every epoch the folder is complete up to that epoch: a killed run
  // still has its curves, and --resume starts from the matching checkpoint.
  auto writer = std::make_shared<model::LambdaCallback<float>>();
  writer->epoch_end = [&](model::NeuralNetwork<float>& m, const model::EpochRecord&) {
    // fit wrote this epoch's checkpoint (with the config, attach_config) before
    // this callback: from the first one on, the old run can go.
    if (rf.has_previous()) rf.recover(out);
    rf.write_metrics(m.history());
    ReportInput in{spec.name + " (in progress)", m.history(), Json{{"status", "training"}}, config};
    if (spec.test_every_epoch) {
      in.test_curve = with_earlier(run.test_curve());  // run's scorer has run: it comes before these callbacks
      rf.write_test_curve(in.test_curve);
    }
    rf.write_report(in);
    out.flush();
  };
  // Nothing is written into the folder before the run is accepted: a run
  // refused at its start (by fit's checks, or across ranks) leaves the folder
  // as it found it. From here on, an old run being replaced waits in
  // DIR/.previous/ until the new run's first checkpoint.
  writer->train_begin = [&](model::NeuralNetwork<float>&, const model::TrainInfo&) {
    bool old_run = false;
    for (const auto& f : RunFolder::run_files()) old_run = old_run || fs::exists(rf.file(f));
    if (!resume && start.overwrite && old_run) rf.set_aside(out);
    rf.write_config(config);
    start.claim->accept();
  };
  ro.callbacks.push_back(writer);

  const RunResult result = run.run(ro);
  if (ro.profile) print_profile(out, net, result.history);
  const model::Evaluation& ev = result.test;
  const Split& test = run.test();
  rf.write_metrics(result.history);
  ReportInput report{spec.name, result.history, result.summary, config, class_names(spec.data.dataset, run.classes()),
                     collect_test_results(ev, test.x, test.labels,
                                          // A split network predicted with every rank, inside run().
                                          result.test_predictions.empty() ? net.predict_classes(test.x)
                                                                          : result.test_predictions,
                                          run.classes())};
  if (spec.test_every_epoch) {
    report.test_curve = with_earlier(result.test_curve);
    rf.write_test_curve(report.test_curve);
  }
  rf.write_summary(result.summary);
  rf.write_report(report);

  char line[160];
  std::snprintf(line, sizeof line, "test accuracy: %.4f (loss %.4g) in %.1f s%s\n", ev.accuracy, ev.loss,
                result.fit_seconds, spec.data.dataset == "synthetic" ? " (synthetic data)" : "");
  out << line;
  if (result.summary.contains("staleness") && !quiet) {
    const Json& st = result.summary["staleness"];
    out << "asgd staleness: max " << st["max"].get<std::int64_t>() << ", mean " << st["mean"].get<double>() << " over "
        << st["gradients"].get<std::int64_t>() << " gradients (bound " << st["bound"].get<std::int64_t>() << ")\n";
  }
  if (!quiet) {
    out << "run folder: " << rf.dir() << " (report.html, summary.json, metrics.csv, checkpoint.bin)\n";
  }
  return 0;
}

}  // namespace magmadnn::cli

// TrainingRun::run for a spec with a pipeline (spec.pipeline; docs/hybrid.md,
// "Pipelines"): the stages on the communicator's ranks, the batches in the
// order NeuralNetwork::fit serves them, validation and test through the
// stages, and the plan with what each stage measured in summary.json.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <mutex>

#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/compute/autocast.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/core/random.h"
#include "magmadnn/data/dataloader.h"
#include "magmadnn/parallel/pipeline/whole_network.h"
#include "magmadnn/run/pipeline_config.h"
#include "magmadnn/run/process_memory.h"
#include "magmadnn/run/run_training.h"

namespace magmadnn::run {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
using Pipe = distributed::pipeline::Pipeline<float>;
namespace fs = std::filesystem;

// What the run refuses before training, beyond the config's own checks
// (pipeline_config.h).
void check_pipelined_run(const TrainSpec& spec, const RunOptions& o, int ranks, std::int64_t train_rows) {
  const PipelineSpec& p = spec.pipeline;
  const std::int64_t need = p.stages * p.replicas;
  const std::string what = p.replicas > 1 ? std::to_string(p.stages) + " stages x " + std::to_string(p.replicas) +
                                                " replicas need " + std::to_string(need) + " ranks"
                                          : std::to_string(p.stages) + " stages need " + std::to_string(need) +
                                                " ranks (one per stage)";
  if (need != ranks)
    throw ConfigError(p.replicas > 1 ? "parallel.pipeline.replicas" : "parallel.pipeline.stages",
                      what + ", the run has " + std::to_string(ranks) + " (start it with mpirun -np " +
                          std::to_string(need) + ")");
  if (o.checkpoint_every_steps > 0)
    throw ConfigError("parallel.pipeline", "checkpoints inside an epoch are not supported with a pipeline yet (its "
                                           "checkpoints are written at each epoch's end)");
  if (spec.early_stopping.enabled) throw ConfigError("early_stopping", "not supported with a pipeline yet");
  if (loss_scaling_enabled(spec.loss_scaling, spec.precision))
    throw ConfigError("loss_scaling", "not supported with a pipeline yet");
  const std::int64_t last = train_rows % spec.batch_size;
  if (last % (p.micro_batches * p.replicas) != 0)
    throw ConfigError("parallel.pipeline.micro_batches",
                      std::to_string(p.micro_batches * p.replicas) +
                          " micro-batches (all replicas') do not divide the last training batch of " +
                          std::to_string(last) + " samples (" + std::to_string(train_rows) + " samples in batches of " +
                          std::to_string(spec.batch_size) + "); change data.limit_train or data.val_split");
}

// The stage's totals over the run, for summary.json.
struct StageTotals {
  double busy_s = 0, wall_s = 0, peak_in_flight = 0, peak_stash_bytes = 0, recomputes = 0;
  void add(const distributed::pipeline::StepStats& s) {
    busy_s += s.busy_s;
    wall_s += s.wall_s;
    peak_in_flight = std::max(peak_in_flight, static_cast<double>(s.peak_in_flight));
    peak_stash_bytes = std::max(peak_stash_bytes, static_cast<double>(s.peak_stash_bytes));
    recomputes += static_cast<double>(s.recomputes);
  }
};

// One epoch of training: its record without validation.
model::EpochRecord train_epoch(Pipe& pipe, data::DataLoader<float>& loader, unsigned epoch,
                               const optimizer::Optimizer<float>& opt, StageTotals& totals) {
  model::EpochRecord rec;
  rec.epoch = epoch + 1;
  const auto t0 = Clock::now();
  loader.start_epoch(epoch);
  data::Batch<float> b;
  double loss = 0, correct = 0;
  while (loader.next(b)) {
    loss += pipe.train_step(b.x, b.y) * static_cast<double>(b.size);
    correct += static_cast<double>(pipe.last_step().correct);
    totals.add(pipe.last_step());
  }
  rec.seconds = seconds_since(t0);
  rec.learning_rate = opt.learning_rate();  // as fit records it: the rate of the next step
  const auto n = static_cast<double>(loader.size());
  rec.train_loss = loss / n;
  rec.train_accuracy = correct / n;
  rec.samples_per_second = rec.seconds > 0 ? n / rec.seconds : 0.0;
  return rec;
}

// Every stage's totals into the plan's "per_stage" entries.
void add_measurements(Json& plan, distributed::Communicator& comm, const StageTotals& t) {
  double mine[5] = {t.busy_s, t.wall_s, t.peak_in_flight, t.peak_stash_bytes, t.recomputes};
  std::vector<double> all(5 * static_cast<std::size_t>(comm.size()));
  comm.allgather(distributed::host_buffer(static_cast<const double*>(mine), 5),
                 distributed::host_buffer(all.data(), all.size()));
  for (int s = 0; s < comm.size(); ++s) {
    Json& st = plan["per_stage"][static_cast<std::size_t>(s)];
    const double* v = all.data() + 5 * s;
    st["busy_seconds"] = v[0];
    st["step_seconds"] = v[1];
    st["idle_fraction"] = v[1] > 0 ? 1.0 - v[0] / v[1] : 0.0;
    st["peak_micro_batches_in_flight"] = static_cast<std::int64_t>(v[2]);
    st["peak_kept_input_bytes"] = static_cast<std::int64_t>(v[3]);
    st["forwards_run_again"] = static_cast<std::int64_t>(v[4]);
  }
  const double m = static_cast<double>(plan["micro_batches"].get<std::int64_t>()), s = comm.size();
  plan["gpipe_bubble_theory"] = (s - 1) / (m + s - 1);
}

// Resuming: every rank loads the one-process checkpoint into `net` and its
// stage takes its part. Returns the epochs done.
unsigned resume_stage(Pipe& pipe, model::NeuralNetwork<float>& net, const std::string& path, model::History& h) {
  net.load(path);
  MAGMADNN_CHECK(net.cursor().batch == 0, ValueError,
                 "checkpoint " << path << " stands inside epoch " << net.cursor().epoch + 1
                               << ": a pipeline resumes only from an epoch's end");
  distributed::pipeline::take_from_whole(pipe, net);
  h = net.history();
  return net.cursor().epoch;
}

// An epoch's end: every rank's `net` takes the whole trained network and the
// history (a collective), rank 0 writes the checkpoint, the callbacks hear.
void end_epoch(Pipe& pipe, model::NeuralNetwork<float>& net, const model::History& h, const RunOptions& o,
               std::int64_t samples, bool writer) {
  distributed::pipeline::gather_whole(pipe, net);
  net.set_progress(h, samples);
  if (!o.checkpoint_path.empty() && writer) net.save(o.checkpoint_path);
  for (const auto& cb : o.callbacks) cb->on_epoch_end(net, h.back());
}

}  // namespace

RunResult TrainingRun::run_pipelined(const RunOptions& options) {
  const auto t0 = Clock::now();
  std::shared_ptr<distributed::Communicator> comm = options.communicator;
  if (!comm) comm = distributed::make_communicator("local");
  check_pipelined_run(spec_, options, comm->size(), train_.x.rows());
  comm->set_timeout(std::chrono::milliseconds(static_cast<std::int64_t>(spec_.distributed.watchdog_s * 1000)));
  distributed::pipeline::PipelineOptions po = pipeline_options(spec_);
  std::shared_ptr<distributed::Communicator> stages = comm;
  if (spec_.pipeline.replicas > 1) {  // rank = replica x stages + stage
    const int S = static_cast<int>(spec_.pipeline.stages), r = comm->rank();
    stages = distributed::split_communicator(*comm, r / S, r % S);
    po.replicas = distributed::split_communicator(*comm, r % S, r / S);
  }
  const std::int64_t n = train_.x.rows();
  auto opt = make_optimizer(spec_, (n + spec_.batch_size - 1) / spec_.batch_size);
  // The weights build_network drew, and fit's data order, from the global
  // RNG: one rank at a time when the ranks are threads of one process
  // (building a pipeline sends no message).
  static std::mutex drawing;
  std::unique_lock<std::mutex> lock(drawing);
  set_seed(spec_.seed);
  layer::reset_layer_names();
  const std::uint64_t data_seed = get_seed() != 0 ? get_seed() : kDefaultSeed;
  Pipe pipe(stages, pipeline_factories(spec_), sample_shape(), opt, po);
  lock.unlock();
  Json plan = pipeline_plan_json(spec_, pipe);
  if (options.log && comm->rank() == 0) *options.log << pipeline_plan_text(plan) << std::flush;

  const autocast::AutocastScope precision(spec_.precision);
  const DeterministicScope deterministic(spec_.deterministic);
  const bool peak_is_training = reset_peak_rss();
  data::LoaderOptions lo;
  lo.batch_size = spec_.batch_size;
  lo.seed = data_seed;
  data::DataLoader<float> loader(train_.x, train_.y, lo);
  RunResult r;
  model::NeuralNetwork<float>& net = network();
  unsigned first = 0;
  if (options.resume && fs::exists(options.checkpoint_path))
    first = resume_stage(pipe, net, options.checkpoint_path, r.history);
  // The run is accepted: callbacks hear of its start (the command's run folder is written from here on).
  model::TrainInfo info{first + 1, static_cast<unsigned>(spec_.epochs), n, loader.num_batches(), spec_.batch_size,
                        val_.x.rows() > 0};
  for (const auto& cb : options.callbacks) cb->on_train_begin(net, info);
  StageTotals totals;
  test_curve_.clear();
  const auto fit0 = Clock::now();
  try {
    for (unsigned e = first; e < static_cast<unsigned>(spec_.epochs); ++e) {
      for (const auto& cb : options.callbacks) cb->on_epoch_begin(net, e + 1);
      model::EpochRecord rec = train_epoch(pipe, loader, e, *opt, totals);
      if (val_.x.rows() > 0) {
        const model::Evaluation v = pipe.evaluate(val_.x, val_.y, spec_.batch_size);
        rec.val_loss = v.loss;
        rec.val_accuracy = v.accuracy;
      }
      if (spec_.test_every_epoch) {
        const model::Evaluation t = pipe.evaluate(test_.x, test_.y, spec_.batch_size);
        test_curve_.push_back({rec.epoch, t.loss, t.accuracy});
      }
      r.history.push_back(rec);
      end_epoch(pipe, net, r.history, options, n, comm->rank() == 0);
    }
  } catch (const std::exception& e) {
    comm->report_failure(e.what());  // a failed write or callback: the other stages stop at once
    throw;
  }
  for (const auto& cb : options.callbacks) cb->on_train_end(net, r.history);
  r.fit_seconds = seconds_since(fit0);
  const std::uint64_t peak = peak_rss_bytes();
  r.test = pipe.evaluate(test_.x, test_.y, spec_.batch_size, &r.test_predictions);
  add_measurements(plan, pipe.communicator(), totals);
  r.test_curve = test_curve_;
  r.summary = summary(r, load_seconds_ + seconds_since(t0));
  r.summary["memory"] = memory(peak, peak_is_training);
  r.summary["ranks"] = comm->size();
  if (options.checkpoint_path.empty()) r.summary["checkpoint"] = nullptr;
  r.summary["pipeline"] = plan;
  return r;
}

}  // namespace magmadnn::run

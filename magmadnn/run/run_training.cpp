#include "magmadnn/run/run_training.h"

#include <omp.h>

#include <chrono>

#include "magmadnn/backend/registry.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/compute/autocast.h"
#include "magmadnn/compute/profiler.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/core/registry.h"
#include "magmadnn/data/holdout.h"
#include "magmadnn/run/data_parallel.h"
#include "magmadnn/model/batch_growth.h"
#include "magmadnn/run/process_memory.h"

namespace magmadnn::run {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Images at their source precision (uint8: 1 byte a pixel), labels in float.
std::uint64_t bytes_of(const Split& s) {
  return s.x.storage_bytes() + sizeof(float) * static_cast<std::uint64_t>(s.y.size());
}

// An image folder's scan, one line, then each file left out (the first 20).
void log_folder_scan(std::ostream& log, const char* split, const data::ImageFolderSource<float>& f) {
  const data::FolderIndex& idx = f.index();
  log << "image folder " << idx.root << " (" << split << "): " << idx.files.size() << " images of "
      << idx.classes.size() << " classes";
  if (!idx.skipped.empty()) log << ", " << idx.skipped.size() << " bad files skipped";
  log << std::endl;
  for (std::size_t i = 0; i < idx.skipped.size() && i < 20; ++i)
    log << "  skipped " << idx.skipped[i].file << ": " << idx.skipped[i].reason << std::endl;
  if (idx.skipped.size() > 20) log << "  (" << idx.skipped.size() - 20 << " more in summary.json)" << std::endl;
}

// The decode threads in use and how they were chosen, and the files that
// failed while batches were prepared.
Json folder_report(const data::ImageFolderSource<float>& f, std::ostream* log, const char* split) {
  const data::DecodeTuning t = f.tuning();
  Json j;
  j["root"] = f.index().root;
  j["images"] = f.index().files.size();
  j["classes"] = f.index().classes.size();
  Json skipped = Json::array(), failed = Json::array(), measured = Json::array();
  for (std::size_t i = 0; i < f.index().skipped.size() && i < 1000; ++i)
    skipped.push_back({{"file", f.index().skipped[i].file}, {"reason", f.index().skipped[i].reason}});
  j["skipped_files"] = f.index().skipped.size();
  j["skipped"] = skipped;
  for (const auto& b : f.decode_failures()) failed.push_back({{"file", b.file}, {"reason", b.reason}});
  j["decode_failures"] = failed;
  j["blank_rows"] = f.blank_rows();
  for (const auto& [threads, ips] : t.measured) measured.push_back({{"threads", threads}, {"images_per_second", ips}});
  j["decode_threads"] = t.threads;
  j["decode_threads_tuned"] = t.tuned;
  j["decode_threads_measured"] = measured;
  if (log == nullptr) return j;
  std::ostream& o = *log;
  o << "image folder " << f.index().root << " (" << split << "): " << t.threads << " decode thread"
    << (t.threads == 1 ? "" : "s");
  if (f.options().threads > 0) {
    o << " (data.decode_threads)";
  } else if (!t.measured.empty()) {
    o << " (tuned:";
    for (const auto& [threads, ips] : t.measured) o << " " << threads << " -> " << static_cast<long>(ips) << " images/s;";
    o << (t.tuned ? " kept the fastest)" : " still measuring)");
  } else {
    o << (t.tuned ? " (one hardware thread)" : " (too few batches to measure others)");
  }
  o << std::endl;
  for (const auto& b : f.decode_failures())
    o << "  served blank: " << b.file << ": " << b.reason << std::endl;
  return j;
}

// Batches of an image folder are decoded and augmented on a loader thread,
// which gives each sample its generator for the random crops.
void use_folder_loader(const Split& train, const Split& test, model::FitOptions<float>& fo, std::ostream* log) {
  if (!train.folder) return;
  fo.loader_workers = 1;
  if (log == nullptr) return;
  log_folder_scan(*log, "train", *train.folder);
  log_folder_scan(*log, "test", *test.folder);
}

Json folder_reports(const Split& train, const Split& test, std::ostream* log) {
  return {{"train", folder_report(*train.folder, log, "train")}, {"test", folder_report(*test.folder, log, "test")}};
}

}  // namespace

double training_seconds(const model::History& h) {
  double s = 0;
  for (const auto& r : h) s += r.seconds;
  return s;
}

TrainingRun::TrainingRun(const TrainSpec& spec, std::shared_ptr<distributed::Communicator> comm)
    : spec_(spec), comm_(std::move(comm)) {
  // A spec built in code, not by parse_config, meets the same limits before
  // any value is narrowed (epochs and patience become unsigned int below).
  auto within = [](const char* key, std::int64_t v, IntRange r) {
    MAGMADNN_CHECK(v >= r.min && v <= r.max, ValueError,
                   "TrainingRun: " << key << " " << v << " is outside [" << r.min << ", " << r.max << "]");
  };
  within("epochs", spec_.epochs, limits::epochs);
  within("batch_size", spec_.batch_size, limits::batch_size);
  within("data.limit_train", spec_.data.limit_train, limits::samples);
  within("data.limit_test", spec_.data.limit_test, limits::samples);
  within("early_stopping.patience", spec_.early_stopping.patience, limits::patience);
  // Before the data is read: a precision this machine cannot run fails at once.
  check_precision_available(spec_.precision, has_cuda_device());
  // Half's smallest normal is 6e-5: unscaled, small gradients flush to zero
  // and large ones overflow, so an fp16 run without the scaler would train
  // on wrong gradients without saying so.
  MAGMADNN_CHECK(spec_.precision != Precision::FP16 || loss_scaling_enabled(spec_.loss_scaling, spec_.precision),
                 ValueError,
                 "TrainingRun: precision fp16 needs dynamic loss scaling; loss_scaling.mode \"off\" is for fp32 and "
                 "bf16 (use \"auto\" or \"on\")");
  const auto t0 = Clock::now();
  {
    const Split all = load_data(spec_.data, "train", dataset_classes(spec_.data), spec_.seed);
    const data::Holdout h = data::holdout_split(all.x.rows(), spec_.data.val_split, spec_.seed, &all.labels);
    train_ = subset(all, h.train);
    val_ = subset(all, h.validation);
  }
  // The whole split, copied into its two parts above, now sits freed in the
  // host memory cache: hand it back, or the peak memory of training would
  // carry a second copy of the data set.
  cpu_backend().release_cached_memory();
  const std::int64_t classes = train_.y.shape()[1];
  test_ = load_data(spec_.data, "test", classes, spec_.seed);
  const std::vector<std::int64_t> dims = train_.x.shape().dims();
  check_sample_shape(test_, {dims.begin() + 1, dims.end()}, "the training images (" + train_.source + ") are");
  const std::int64_t n = train_.x.shape()[0];
  build_ = build_network(spec_, {dims.begin() + 1, dims.end()}, (n + spec_.batch_size - 1) / spec_.batch_size,
                         classes, 1, comm_);
  load_seconds_ = seconds_since(t0);
}

// The loss scaler of spec.loss_scaling, each skipped step logged.
std::shared_ptr<optimizer::LossScaler> TrainingRun::loss_scaler(std::ostream* log) {
  if (!loss_scaling_enabled(spec_.loss_scaling, spec_.precision)) return nullptr;
  optimizer::LossScaler::Options lo;
  lo.init_scale = spec_.loss_scaling.init_scale;
  lo.max_scale = std::max(lo.max_scale, lo.init_scale);
  lo.growth_interval = spec_.loss_scaling.growth_interval;
  auto scaler = std::make_shared<optimizer::LossScaler>(lo);
  if (log != nullptr) {
    scaler->set_on_skip([log, &net = network()](const optimizer::LossScaler::Skip& s) {
      const auto c = net.cursor();
      *log << "loss scaling: step " << s.step << " (epoch " << c.epoch + 1 << ", batch " << c.batch + 1
           << ") skipped, its gradients hold an inf or NaN; scale " << s.scale_before << " -> " << s.scale_after
           << std::endl;
    });
  }
  return scaler;
}

// fit's options from the spec and the caller's: the test scorer first among
// the callbacks (the caller's, which write the run folder, then see this
// epoch's score; it only records), early stopping, batch growth, the
// caller's callbacks, checkpoints and the image-folder loader.
model::FitOptions<float> TrainingRun::fit_options(const RunOptions& options, const Scorer& score) {
  model::FitOptions<float> fo;
  fo.epochs = static_cast<unsigned>(spec_.epochs);
  if (spec_.test_every_epoch) {
    auto scorer = std::make_shared<model::LambdaCallback<float>>();
    scorer->epoch_end = [this, score](model::NeuralNetwork<float>&, const model::EpochRecord& rec) {
      const model::Evaluation e = score(test_.x, test_.y);
      test_curve_.push_back({rec.epoch, e.loss, e.accuracy});
    };
    fo.callbacks.push_back(scorer);
  }
  if (val_.x.rows() > 0) {
    fo.validation_samples = &val_.x;
    fo.validation_y = &val_.y;
  }
  if (spec_.early_stopping.enabled) {
    const auto& e = spec_.early_stopping;
    fo.callbacks.push_back(std::make_shared<model::EarlyStopping<float>>(
        e.monitor, static_cast<unsigned>(e.patience), e.min_delta, e.restore_best));
  }
  if (spec_.batch_growth.enabled) {
    const auto& g = spec_.batch_growth;
    fo.callbacks.push_back(
        std::make_shared<model::BatchGrowth<float>>(spec_.batch_size, g.factor, g.every_epochs, g.max));
  }
  fo.callbacks.insert(fo.callbacks.end(), options.callbacks.begin(), options.callbacks.end());
  fo.checkpoint_path = options.checkpoint_path;
  fo.checkpoint_every_epochs = options.checkpoint_path.empty() ? 0 : 1;
  fo.checkpoint_every_batches = options.checkpoint_path.empty() ? 0 : options.checkpoint_every_steps;
  fo.resume = options.resume;
  fo.loss_scaler = loss_scaler(options.log);
  use_folder_loader(train_, test_, fo, options.log);
  return fo;
}

RunResult TrainingRun::run(const RunOptions& options) {
  if (spec_.pipeline.enabled) return run_pipelined(options);
  const auto t0 = Clock::now();
  model::NeuralNetwork<float>& net = network();
  test_curve_.clear();
  // Null on one rank; on more, every rank holds rank 0's initial weights.
  const std::unique_ptr<DataParallel> parallel =
      DataParallel::start({options.communicator, comm_, &spec_, &build_, train_.x.rows(), val_.x.rows(), test_.x.rows()},
                          [&] { return inputs(options); });
  const Scorer score = [&](const data::Samples<float>& x, const Tensor<float>& y) {
    return parallel ? parallel->evaluate(x, y) : net.evaluate(x, y);
  };
  model::FitOptions<float> fo = fit_options(options, score);

  // Training, validation and the final test score all compute at the run's
  // precision; checkpoints hold the float masters either way.
  const autocast::AutocastScope precision(spec_.precision);
  const DeterministicScope deterministic(spec_.deterministic);
  const bool peak_is_training = reset_peak_rss();  // else the peak is the whole process's
  if (options.profile) {
    op::Profiler::reset();
    op::Profiler::enable();
  }
  RunResult r;
  std::uint64_t peak = 0;
  try {
    const auto fit0 = Clock::now();
    r.history = net.fit(train_.x, train_.y, fo);
    r.fit_seconds = seconds_since(fit0);
    if (options.profile) op::Profiler::enable(false);
    if (parallel) parallel->finish();  // every rank ends with the same weights
    peak = peak_rss_bytes();
    r.test = score(test_.x, test_.y);
  } catch (const std::exception& e) {
    // This process stops here (a callback threw, a loss went NaN, a write
    // failed): the others hear why at once (a failure of the communication
    // itself has told them already).
    if (parallel) parallel->report_failure(e.what());
    throw;
  }
  if (parallel) r.test_predictions = parallel->split_predictions(test_.x);
  r.test_curve = test_curve_;
  r.summary = summary(r, load_seconds_ + seconds_since(t0));
  r.summary["memory"] = memory(peak, peak_is_training);
  if (fo.loss_scaler) r.summary["loss_scaling"] = loss_scaling(*fo.loss_scaler);
  if (train_.folder) r.summary["image_folder"] = folder_reports(train_, test_, options.log);
  if (parallel) parallel->describe(r.summary);
  return r;
}

Json TrainingRun::summary(const RunResult& r, double wall_seconds) const {
  const model::History& h = r.history;
  const double train_seconds = training_seconds(h);
  const std::int64_t n = train_.x.shape()[0];
  Json s;
  s["name"] = spec_.name;
  s["dataset"] = spec_.data.dataset;
  // Seeded random images: the accuracy means nothing, the speed does.
  if (spec_.data.dataset == "synthetic") s["synthetic_data"] = true;
  s["test_accuracy"] = r.test.accuracy;
  s["test_loss"] = r.test.loss;
  s["train_seconds"] = train_seconds;
  s["epochs"] = h.size();
  s["samples_per_second"] =
      train_seconds > 0 ? static_cast<double>(n) * static_cast<double>(h.size()) / train_seconds : 0.0;
  if (!h.empty()) {
    s["final_train_loss"] = h.back().train_loss;
    s["final_train_accuracy"] = h.back().train_accuracy;
  }
  s["train_samples"] = n;
  s["validation_samples"] = val_.x.shape()[0];
  s["test_samples"] = r.test.samples;
  s["parameters"] = build_.model->num_params();
  s["batch_size"] = spec_.batch_size;
  s["ranks"] = 1;  // DataParallel::describe says otherwise
  s["launcher"] = distributed::launcher_name();
  if (build_.plan.hybrid()) s["parallel_plan"] = plan_to_json(spec_, build_.plan);
  s["seed"] = spec_.seed;
  s["precision"] = precision_name(spec_.precision);
  s["threads"] = omp_get_max_threads();
  s["device"] = has_cuda_device() ? "cuda" : "cpu";
  s["wall_seconds"] = wall_seconds;
  s["checkpoint"] = "checkpoint.bin";
  return s;
}

std::uint64_t TrainingRun::dataset_bytes() const { return bytes_of(train_) + bytes_of(val_) + bytes_of(test_); }

// The peak resident memory against what training must hold: the data set,
// the parameters, their gradients and the optimizer's state.
Json TrainingRun::memory(std::uint64_t peak_rss, bool peak_is_training) const {
  std::uint64_t optimizer_state = 0;
  for (const auto& [name, t] : build_.model->optimizer().state()) optimizer_state += sizeof(float) * t->size();
  const auto params = sizeof(float) * static_cast<std::uint64_t>(build_.model->num_params());
  const std::uint64_t dataset = dataset_bytes();
  const std::uint64_t need = dataset + 2 * params + optimizer_state;  // one gradient per parameter
  Json j;
  j["dataset_bytes"] = dataset;
  // What holding the images at source precision saves: the same sets with
  // the images in float, as they were read before.
  j["dataset_image_type"] = train_.x.storage_type();
  std::uint64_t as_float = 0;
  for (const Split* p : {&train_, &val_, &test_})
    as_float += sizeof(float) * static_cast<std::uint64_t>(p->x.size() + p->y.size());
  j["dataset_bytes_as_float"] = as_float;
  j["parameter_bytes"] = params;
  // Weights this rank holds against the whole model's (a split layer
  // counted whole), and the same over the model-parallel layers alone:
  // there the ratio is 1/P within a row or column per layer.
  j["weight_bytes_per_rank"] = sizeof(float) * static_cast<std::uint64_t>(build_.rank_weights);
  j["weight_bytes_whole_model"] = sizeof(float) * static_cast<std::uint64_t>(build_.whole_weights);
  if (build_.plan.hybrid()) {
    j["model_parallel_weight_bytes_per_rank"] = sizeof(float) * static_cast<std::uint64_t>(build_.rank_split_weights);
    j["model_parallel_weight_bytes_whole"] = sizeof(float) * static_cast<std::uint64_t>(build_.whole_split_weights);
  }
  j["gradient_bytes"] = params;
  j["optimizer_state_bytes"] = optimizer_state;
  j["peak_rss_bytes"] = peak_rss;
  j["peak_rss_scope"] = peak_is_training ? "training" : "process";
  j["peak_rss_over_needed"] = need > 0 ? static_cast<double>(peak_rss) / static_cast<double>(need) : 0.0;
  return j;
}

// The scaler's record: its scale now and every step it skipped (the first
// 1000 listed, so a run that skips on and on keeps a readable summary).
Json TrainingRun::loss_scaling(const optimizer::LossScaler& scaler) const {
  Json j;
  j["init_scale"] = spec_.loss_scaling.init_scale;
  j["growth_interval"] = spec_.loss_scaling.growth_interval;
  j["final_scale"] = scaler.scale();
  j["skipped_steps"] = scaler.skips().size();
  Json list = Json::array();
  for (std::size_t i = 0; i < scaler.skips().size() && i < 1000; ++i) {
    const auto& s = scaler.skips()[i];
    list.push_back({{"step", s.step}, {"scale_before", s.scale_before}, {"scale_after", s.scale_after}});
  }
  j["skipped"] = list;
  return j;
}

RunResult run_training(const TrainSpec& spec, const RunOptions& options) { return TrainingRun(spec).run(options); }

}  // namespace magmadnn::run

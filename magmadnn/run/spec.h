/// @file spec.h
/// The run specification: what a training run is, as a JSON document (file,
/// preset or both, plus overrides) turned into a TrainSpec. The `magmadnn`
/// command, run_training (run_training.h) and, later, the search and
/// distributed runs all start from it.
///
/// Schema (every key optional except `layers`; see docs/cli.md):
///   { "name": "mlp",
///     "layers": [ {"type": "flatten"},
///                 {"type": "dense", "units": 528, "activation": "sigmoid",
///                  "parallel": "data"|"model"|"auto"},   (dense, conv2d; default: distributed.parallel)
///                 {"type": "conv2d", "filters": 6, "kernel": [5,5], "padding": [2,2],
///                  "stride": [1,1], "dilation": [1,1], "activation": "relu"},
///                 {"type": "pool", "mode": "max", "kernel": [2,2], "stride": [2,2]},
///                 {"type": "global_pool", "mode": "average"},   (the whole H x W)
///                 {"type": "residual", "filters": 32, "stride": [2,2]},   (layer/residual_layer.h)
///                 {"type": "dropout", "rate": 0.5}, {"type": "batchnorm"},
///                 {"type": "activation", "function": "relu"},
///                 {"type": "input", "name": "image", "shape": [3, 224, 224]},   (first only)
///                 {"name": "sum", "type": "add", "inputs": ["a", "b"], "activation": "relu"},
///                 {"type": "concat", "inputs": ["a", "b", "c"]} ],   (along the channels)
///      every layer may have a "name" and "inputs" (names of earlier layers;
///      default: the layer before it): docs/networks.md, run/layer_kinds.h
///     "loss": "cross_entropy" | "mse",
///     "optimizer": {"type": "sgd"|"adam"|"adamw"|"adagrad"|"rmsprop"|"lars"|"lamb",
///                   "learning_rate": 0.05, "momentum": 0, "nesterov": false,
///                   "weight_decay": 0, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "rho": 0.99,
///                   "trust_coefficient": 0.001, "exclude_vectors": false},
///     "schedule": {"type": "constant"|"step"|"exponential"|"cosine",
///                  "step_epochs": 1, "gamma": 0.1, "min_lr": 0, "warmup_epochs": 0,
///                  "lr_scaling": "none"|"linear"|"sqrt", "base_batch": batch_size},
///     "batch_growth": {"factor": 2, "every_epochs": 1, "max": 1024},   (absent: a fixed batch)
///     "data": {"dataset": "fashion-mnist"|"mnist"|"idx"|"cifar10"|"cifar100"|"synthetic",
///              "dir": "/usr/share/datasets/fashion-mnist",
///              "limit_train": 0, "limit_test": 0, "val_split": 0.1,
///              "shape": [3, 224, 224], "classes": 1000,          (synthetic only)
///              "train_samples": 1280, "test_samples": 256},    (synthetic only)
///     "early_stopping": {"patience": 3, "monitor": "val_loss", "min_delta": 0,
///                        "restore_best": true},          (absent: train every epoch)
///     "distributed": {"strategy": "allreduce", "parallel": "data", "bucket_mb": 25, "average_every": 4,
///                     "staleness": 2, "watchdog_s": 60},   (read only under mpirun)
///     "parallel": {"pipeline": {"stages": 2, "micro_batches": 4, "replicas": 1, "schedule": "1f1b",
///                               "balance": "parameters"|"flops", "cuts": [0, 5]}},
///                  (docs/hybrid.md, "Pipelines")
///     "epochs": 5, "batch_size": 100, "seed": 42,
///     "precision": "fp32" | "bf16" | "fp16" | "tf32",   (see core/precision.h)
///     "loss_scaling": {"mode": "auto"|"on"|"off", "init_scale": 65536,
///                      "growth_interval": 2000},   (auto: on at fp16 only)
///     "test_every_epoch": false }    (true: score the test split after every
///                                     epoch, for study plots only; see TrainSpec)
///
/// Guarantees: parse_config() either returns a spec whose every value is in
/// range, or throws ConfigError whose message starts with the JSON path of the
/// offending value and quotes it (`layers[2].units: expected an integer in
/// [1, 1048576], got "abc"`). Every integer is checked against its limits::
/// range, `name` against a plain file-name component. Unknown keys are errors
/// too, so a typo never passes silently. to_json(parse_config(j)) is a complete config that parses back to
/// the same spec (it is what run folders store and --print-config shows).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/precision.h"

namespace magmadnn::run {

using Json = nlohmann::ordered_json;

/// A configuration mistake. The message is for the user and names the JSON
/// path; unlike other library errors it carries no source file:line, because
/// the location that matters is in the user's config.
class ConfigError : public ValueError {
 public:
  ConfigError(std::string path, const std::string& what)
      : ValueError((path.empty() ? std::string("config") : path) + ": " + what), path_(std::move(path)) {}
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

/// The range of an integer setting, both ends included. One table, read by
/// parse_config and by the `magmadnn` flags that set the same keys, so a
/// value is either refused with its range or held exactly by the code.
struct IntRange {
  std::int64_t min, max;
};
namespace limits {
inline constexpr IntRange epochs{1, 1'000'000};
inline constexpr IntRange batch_size{1, 2'147'483'647};
inline constexpr IntRange samples{0, 2'147'483'647};  ///< data.limit_train, data.limit_test (0: all)
inline constexpr IntRange units{1, 1 << 20};          ///< dense units
inline constexpr IntRange filters{1, 1 << 16};        ///< conv2d output channels
inline constexpr IntRange window{1, 1 << 16};         ///< kernel, stride, dilation (each of h, w)
inline constexpr IntRange padding{0, 1 << 16};
inline constexpr IntRange patience{0, 1'000'000};     ///< early_stopping.patience
inline constexpr IntRange average_every{1, 1'000'000};  ///< distributed.average_every (steps)
inline constexpr IntRange staleness{0, 1'000'000};      ///< distributed.staleness (steps)
inline constexpr IntRange growth_factor{1, 1024};      ///< batch_growth.factor
inline constexpr IntRange growth_max{1, 4'294'967'295};  ///< batch_growth.max (nn_params_t holds an unsigned int)
inline constexpr IntRange growth_interval{1, 1'000'000'000};  ///< loss_scaling.growth_interval (steps)
inline constexpr IntRange classes{2, 1'000'000};           ///< data.classes (synthetic)
inline constexpr IntRange synthetic_samples{1, 2'147'483'647};  ///< data.train_samples, data.test_samples
inline constexpr IntRange decode_threads{0, 256};  ///< data.decode_threads (folder; 0: tuned)
inline constexpr IntRange stages{1, 1024};            ///< parallel.pipeline.stages
inline constexpr IntRange micro_batches{1, 4096};     ///< parallel.pipeline.micro_batches
inline constexpr IntRange replicas{1, 4096};          ///< parallel.pipeline.replicas
}  // namespace limits

/// One layer of the network. Layers are listed so that every layer comes
/// after the layers it reads (run/layer_kinds.h lists the kinds and what
/// each reads and holds).
struct LayerSpec {
  std::string type;                    ///< a kind of run/layer_kinds.h: dense, conv2d, pool, ..., add, concat
  /// What other layers call this one in their "inputs"; empty: unnamed
  /// (no other layer can name it; the next layer in the list reads it).
  std::string name;
  /// The names of the layers this one reads ("input": the network's input);
  /// empty: the layer before it in the list (the network's input for the first).
  std::vector<std::string> inputs;
  std::vector<std::int64_t> shape;     ///< input: the sample shape the network takes ({C, H, W}); empty: any
  std::int64_t units = 0;              ///< dense
  std::int64_t filters = 0;            ///< conv2d, residual
  std::vector<std::int64_t> kernel;    ///< conv2d, pool: {h, w}
  std::vector<std::int64_t> padding;   ///< conv2d, pool: {h, w}
  std::vector<std::int64_t> stride;    ///< conv2d, pool, residual: {h, w}
  std::vector<std::int64_t> dilation;  ///< conv2d: {h, w}
  std::string activation = "none";     ///< dense/conv2d/add/concat: applied after; activation layer: its function
  std::string mode = "max";            ///< pool, global_pool: max or average
  double rate = 0.0;                   ///< dropout probability
  double gamma_init = 1.0;             ///< batchnorm: the scale's initial value (0: a residual branch starts at zero)
  bool bias = true;                    ///< dense, conv2d
  /// dense: the bias folded into the weight matrix (SHM-Learn-Dist §4,
  /// layer::BiasForm::folded); needs bias. Off by default: slower on the
  /// CPU (docs/seeds.md, SHM-Learn-Dist §4).
  bool fold_bias = false;
  /// dense, conv2d: "data", "model" or "auto"; empty: distributed.parallel.
  /// How the layer is laid out over the ranks (run/parallel_plan.h).
  std::string parallel;
  bool operator==(const LayerSpec&) const = default;
};

struct OptimizerSpec {
  std::string type = "sgd";
  double learning_rate = 0.05;
  double momentum = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double rho = 0.99;  ///< RMSProp's decay of the squared-gradient average
  double trust_coefficient = 0.001;  ///< LARS's eta
  bool exclude_vectors = false;      ///< LARS, LAMB: biases and BatchNorm parameters take the plain step
  bool operator==(const OptimizerSpec&) const = default;
};

/// Learning-rate schedule, counted in epochs (converted to optimizer steps
/// once the number of batches per epoch is known).
struct ScheduleSpec {
  std::string type = "constant";
  double step_epochs = 1.0;    ///< step: decay every this many epochs
  double gamma = 0.1;          ///< step, exponential (per epoch)
  double min_lr = 0.0;         ///< cosine
  double warmup_epochs = 0.0;  ///< any: linear warm-up first (from the unscaled rate under lr_scaling)
  /// The learning rate is set for `base_batch` and scaled with the global
  /// batch, batch_size x ranks (optimizer::LargeBatchLR): none, linear, sqrt.
  std::string lr_scaling = "none";
  std::int64_t base_batch = 0;  ///< parse_config sets it to batch_size when the config leaves it out
  bool operator==(const ScheduleSpec&) const = default;
};

struct DataSpec {
  /// fashion-mnist or mnist (10 classes); idx: any folder of MNIST-format
  /// IDX files, whose classes are 0 .. the largest training label; cifar10
  /// or cifar100 (their binary files in `dir`: run/dataset.h); synthetic:
  /// seeded random images of `shape` and labels of `classes`, computed as
  /// batches are assembled (for throughput runs; results say "synthetic");
  /// folder: JPEG and PNG image folders `train` and `test` (one sub-folder
  /// per class, data/image_folder.h), decoded and augmented to `shape` as
  /// batches are assembled.
  std::string dataset = "fashion-mnist";
  std::string dir = "/usr/share/datasets/fashion-mnist";
  /// synthetic and folder only (written to the config only then):
  std::vector<std::int64_t> shape{3, 224, 224};  ///< one sample, {C, H, W}
  /// folder only (written to the config only then): the two image folders
  /// (config keys "train" and "test"), per-channel normalisation (1 value
  /// or one per channel), random resized crop and flip of training images,
  /// bad files "skip" (named, counted, left out) or "refuse" (an error),
  /// a full decode of every file before training (else headers only), and
  /// decode threads per batch (0: tuned at run time).
  std::string train_dir, test_dir;
  std::vector<double> mean{0.0}, std{1.0};
  bool augment = true;
  double min_scale = 0.08;
  double center_crop = 0.875;
  std::string on_error = "skip";
  bool verify = false;
  std::int64_t decode_threads = 0;
  std::int64_t classes = 1000;
  std::int64_t train_samples = 1280;
  std::int64_t test_samples = 256;
  std::int64_t limit_train = 0;   ///< use the first N training samples (0: all)
  std::int64_t limit_test = 0;    ///< use the first N test samples (0: all)
  /// Fraction of the training samples held out (seeded, stratified) for the
  /// per-epoch validation curve and early stopping; 0: no validation. The
  /// test split is never used for validation: it is scored once, at the end.
  double val_split = 0.1;
  bool operator==(const DataSpec&) const = default;
};

/// Stop when the monitored validation value has not improved for `patience`
/// epochs (model::EarlyStopping). Needs data.val_split > 0.
struct EarlyStoppingSpec {
  bool enabled = false;               ///< the config has an "early_stopping" object
  std::int64_t patience = 3;
  std::string monitor = "val_loss";   ///< val_loss or val_accuracy
  double min_delta = 0.0;
  bool restore_best = true;           ///< end with the best epoch's weights
  bool operator==(const EarlyStoppingSpec&) const = default;
};

/// How a run across ranks (mpirun -np N) trains; a single process ignores
/// it. batch_size stays the global batch, split among the ranks
/// (docs/distributed.md, "Training across ranks").
/// The default data-parallel strategy (parallel/strategy_registry.h).
std::string default_strategy_name();

struct DistributedSpec {
  /// A registered strategy's name (parallel/strategy_registry.h; the
  /// config accepts distributed::strategy_names()).
  std::string strategy = default_strategy_name();
  /// The layout of every dense and conv2d layer that names none: "data"
  /// (every layer data-parallel: the network replicated, the batch split),
  /// "model" or "auto" (run/parallel_plan.h, docs/hybrid.md).
  std::string parallel = "data";
  double bucket_mb = 25.0;          ///< allreduce: gradient bucket size, MiB (0, 4096]
  std::int64_t average_every = 4;   ///< weight-avg: local steps between averages
  std::int64_t staleness = 2;       ///< asgd: most steps a gradient may lag the weights
  double watchdog_s = 60.0;         ///< a collective missing ranks this long fails, seconds (0, 86400]
  /// How the allreduce strategies' buckets travel: "auto", "flat" or
  /// "hierarchical" (comm/hierarchical_communicator.h).
  std::string allreduce = "auto";
  bool operator==(const DistributedSpec&) const = default;
};

/// Layer (pipeline) parallelism (parallel/pipeline/pipeline.h,
/// docs/hybrid.md "Pipelines"): the layers cut into `stages` consecutive
/// stages, one per rank, each batch into `micro_batches`.
struct PipelineSpec {
  bool enabled = false;  ///< the config has a "parallel.pipeline" object
  std::int64_t stages = 2;
  std::int64_t micro_batches = 1;
  /// Data-parallel replicas of the whole pipeline: the run takes stages x
  /// replicas ranks, replica r training rows [r N / R, (r + 1) N / R).
  std::int64_t replicas = 1;
  std::string schedule = "1f1b";  ///< "gpipe" or "1f1b"
  /// What the planner balances without cuts: "parameters", "flops" or "time"
  /// (parallel/pipeline/pipeline.h, Balance).
  std::string balance = "parameters";
  /// Each stage's first layer (index into `layers`), starting with 0; empty:
  /// chosen so that the stages' parameter counts are balanced.
  std::vector<std::int64_t> cuts;
  bool operator==(const PipelineSpec&) const = default;
};

/// The values data.dataset accepts.
const std::vector<std::string>& dataset_names();

/// The values a layer's "parallel" and distributed.parallel accept.
const std::vector<std::string>& parallel_choices();

/// The batch grows by `factor` every `every_epochs` epochs, up to `max`
/// (model::BatchGrowth; Smith et al. 2017).
struct BatchGrowthSpec {
  bool enabled = false;  ///< the config has a "batch_growth" object
  std::int64_t factor = 2;
  std::int64_t every_epochs = 1;
  std::int64_t max = 0;  ///< parse_config: required, >= batch_size
  bool operator==(const BatchGrowthSpec&) const = default;
};

/// Dynamic loss scaling (optimizer::LossScaler wired into fit: scaled
/// backward, unscaled gradients, steps with inf/NaN gradients skipped).
struct LossScalingSpec {
  /// "auto": on at fp16 only; "on": at any precision (e.g. to test it at
  /// fp32 on the CPU); "off" (refused at fp16 by TrainingRun).
  std::string mode = "auto";
  double init_scale = 65536.0;
  std::int64_t growth_interval = 2000;  ///< good steps in a row before the scale doubles
  bool operator==(const LossScalingSpec&) const = default;
};

/// Whether `spec` trains with a loss scaler (mode, and precision for "auto").
bool loss_scaling_enabled(const LossScalingSpec& spec, Precision precision);

struct TrainSpec {
  std::string name = "custom";
  std::vector<LayerSpec> layers;
  std::string loss = "cross_entropy";
  OptimizerSpec optimizer;
  ScheduleSpec schedule;
  DataSpec data;
  EarlyStoppingSpec early_stopping;
  DistributedSpec distributed;
  PipelineSpec pipeline;  ///< "parallel": {"pipeline": {...}}
  BatchGrowthSpec batch_growth;
  std::int64_t epochs = 5;
  std::int64_t batch_size = 100;
  std::uint64_t seed = 42;
  /// Deterministic algorithms (core/determinism.h) for the run: convolution
  /// and pooling implementations picked by a fixed rule, not by timing, so
  /// a rerun on the same machine, threads and ranks computes the same bits.
  bool deterministic = false;
  /// What GEMMs and convolutions compute in (compute/autocast.h); weights,
  /// gradients and optimizer state are float whatever it is, so a run may
  /// resume at another precision. Written to the config only when not fp32.
  Precision precision = Precision::FP32;
  /// Written to the config only when not the default.
  LossScalingSpec loss_scaling;
  /// Also score the test split after every epoch (RunResult::test_curve),
  /// for plots of test accuracy against time (`magmadnn compare`). Opt-in
  /// and for study plots only: nothing reads these scores during training
  /// (early stopping and restore_best watch the validation split), so the
  /// trained weights are those of the same run without it. Written to the
  /// config only when true.
  bool test_every_epoch = false;
  bool operator==(const TrainSpec&) const = default;
};

/// Validates `j` and returns the spec (throws ConfigError).
TrainSpec parse_config(const Json& j);
/// Reads and parses a JSON file holding one object (a config, a summary).
/// ConfigError names the file, and: for a directory, that it is one; for a
/// syntax error, the position; for a number beyond a double (1e999), its JSON
/// path, line and column; for a document that is not an object ([], 3),
/// "config: expected an object in FILE".
Json read_json_file(const std::string& path);
/// The complete config of `spec` (every key written).
Json to_json(const TrainSpec& spec);
/// Recursively merges `patch` into `base` (objects merge; other values,
/// arrays included, replace).
void merge_json(Json& base, const Json& patch);

}  // namespace magmadnn::run

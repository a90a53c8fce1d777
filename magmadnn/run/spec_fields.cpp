#include "magmadnn/run/spec_fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "magmadnn/comm/hierarchical_communicator.h"
#include "magmadnn/optimizer/factory.h"
#include "magmadnn/optimizer/large_batch_lr.h"
#include "magmadnn/parallel/pipeline/schedule.h"
#include "magmadnn/parallel/strategy_registry.h"

namespace magmadnn::run {
namespace {

using Kind = Accepts::Kind;

// A member of a TrainSpec, for a const spec (writing) and a mutable one
// (reading) alike.
template <class M>
auto top(M TrainSpec::*m) {
  return [m](auto& s) -> auto& { return s.*m; };
}
template <class G, class M>
auto in(G TrainSpec::*g, M G::*m) {
  return [g, m](auto& s) -> auto& { return (s.*g).*m; };
}

// The group of a field from its reference's path: "optimizer.momentum",
// "parallel.pipeline.stages" (group "parallel.pipeline").
SpecField named(const std::string& path, std::string meaning) {
  SpecField f;
  const auto dot = path.rfind('.');
  f.group = dot == std::string::npos ? "" : path.substr(0, dot);
  f.key = dot == std::string::npos ? path : path.substr(dot + 1);
  f.meaning = std::move(meaning);
  return f;
}

template <class Ref>
void write_with(SpecField& f, Ref ref) {
  f.value = [ref](const TrainSpec& s) { return Json(ref(s)); };
}

template <class Ref>
SpecField integer(const std::string& path, Ref ref, IntRange r, std::string meaning) {
  SpecField f = named(path, std::move(meaning));
  f.accepts.kind = Kind::integer;
  f.accepts.ints = r;
  f.read = [ref, k = f.key, r](const ConfigObject& o, TrainSpec& s) { ref(s) = o.integer(k, ref(s), r); };
  write_with(f, ref);
  return f;
}

// A finite number in its interval; an open end is refused with the
// interval in the message ("expected a number in (0, 4096], got 0").
template <class Ref>
SpecField number(const std::string& path, Ref ref, double lo, double hi, bool lo_open, bool hi_open,
                 std::string meaning) {
  SpecField f = named(path, std::move(meaning));
  f.accepts = {Kind::number, {0, 0}, lo, hi, lo_open, hi_open, {}, {}};
  f.read = [ref, k = f.key, lo, hi, lo_open, hi_open, a = f.accepts](const ConfigObject& o, TrainSpec& s) {
    ref(s) = o.number(k, ref(s), lo, hi, hi_open);
    if (lo_open && o.has(k) && ref(s) == lo) throw ConfigError(o.at(k), "expected " + a.text() + ", got " + o.get(k).dump());
  };
  write_with(f, ref);
  return f;
}

template <class Ref>
SpecField positive(const std::string& path, Ref ref, std::string meaning) {
  SpecField f = named(path, std::move(meaning));
  f.accepts.kind = Kind::positive;
  f.read = [ref, k = f.key](const ConfigObject& o, TrainSpec& s) { ref(s) = o.positive(k, ref(s)); };
  write_with(f, ref);
  return f;
}

template <class Ref>
SpecField boolean(const std::string& path, Ref ref, std::string meaning) {
  SpecField f = named(path, std::move(meaning));
  f.accepts.kind = Kind::boolean;
  f.read = [ref, k = f.key](const ConfigObject& o, TrainSpec& s) { ref(s) = o.boolean(k, ref(s)); };
  write_with(f, ref);
  return f;
}

template <class Ref>
SpecField choice(const std::string& path, Ref ref, std::function<std::vector<std::string>()> choices,
                 std::string meaning) {
  SpecField f = named(path, std::move(meaning));
  f.accepts.kind = Kind::choice;
  f.accepts.choices = choices;
  f.read = [ref, k = f.key, choices](const ConfigObject& o, TrainSpec& s) { ref(s) = o.choice(k, ref(s), choices()); };
  write_with(f, ref);
  return f;
}

std::function<std::vector<std::string>()> fixed(std::vector<std::string> names) {
  return [names] { return names; };
}

// An object of the config; `on_present` runs when the config has it.
SpecField object(const std::string& key, std::string what, std::string meaning,
                 std::function<void(TrainSpec&)> on_present = {}) {
  SpecField f = named(key, std::move(meaning));
  f.accepts.kind = Kind::object;
  f.accepts.described = "an object";
  f.what = std::move(what);
  if (on_present) f.read = [on_present](const ConfigObject&, TrainSpec& s) { on_present(s); };
  return f;
}

// A field its group's own code reads and writes (data, layers), listed for
// the allowed keys, the docs and the schema.
SpecField described(const std::string& path, Kind kind, std::string accepts, std::string meaning,
                    std::string default_text = {}) {
  SpecField f = named(path, std::move(meaning));
  f.accepts.kind = kind;
  f.accepts.described = std::move(accepts);
  f.default_text = std::move(default_text);
  f.by_group = true;
  return f;
}

SpecField flagged(SpecField f, SpecFlag flag) {
  f.flag = std::move(flag);
  return f;
}

SpecField written_if(SpecField f, std::function<bool(const TrainSpec&)> when) {
  f.written = std::move(when);
  return f;
}

SpecField defaults_to(SpecField f, std::string text) {
  f.default_text = std::move(text);
  return f;
}

using Table = std::vector<SpecField>;

void add_optimizer_fields(Table& t) {
  using O = OptimizerSpec;
  const auto o = [](auto m) { return in(&TrainSpec::optimizer, m); };
  t.push_back(object("optimizer", "the optimizer", "how the weights are updated"));
  t.push_back(choice("optimizer.type", o(&O::type), [] { return optimizer::kind_names(); }, "the update rule"));
  t.push_back(flagged(positive("optimizer.learning_rate", o(&O::learning_rate), "the step size"),
                      {"lr", "X", "learning rate"}));
  t.push_back(number("optimizer.momentum", o(&O::momentum), 0, 1, false, true, "SGD and LARS momentum"));
  t.push_back(boolean("optimizer.nesterov", o(&O::nesterov), "Nesterov momentum (needs a positive momentum)"));
  t.push_back(number("optimizer.weight_decay", o(&O::weight_decay), 0, INFINITY, false, false,
                     "L2, or decoupled for `adamw` and `lamb`; for `lars`, the beta of its trust ratio"));
  t.push_back(number("optimizer.beta1", o(&O::beta1), 0, 1, false, true, "Adam and LAMB: the first moment's decay"));
  t.push_back(number("optimizer.beta2", o(&O::beta2), 0, 1, false, true, "Adam and LAMB: the second moment's decay"));
  t.push_back(positive("optimizer.epsilon", o(&O::epsilon), "Adam, LAMB, Adagrad, RMSProp: added to the denominator"));
  t.push_back(number("optimizer.rho", o(&O::rho), 0, 1, false, true, "RMSProp: the squared gradients' decay"));
  t.push_back(positive("optimizer.trust_coefficient", o(&O::trust_coefficient),
                       "LARS's eta: its step is lr x eta x ||w|| / (||g|| + weight_decay x "
                       "||w||) per tensor"));
  t.push_back(boolean("optimizer.exclude_vectors", o(&O::exclude_vectors),
                      "`lars`, `lamb`: tensors of fewer than two dimensions (biases, BatchNorm's scale and shift) take "
                      "the plain step, without trust ratio or weight decay"));
}

void add_schedule_fields(Table& t) {
  using S = ScheduleSpec;
  const auto c = [](auto m) { return in(&TrainSpec::schedule, m); };
  t.push_back(object("schedule", "the schedule", "how the learning rate changes during training"));
  t.push_back(choice("schedule.type", c(&S::type), fixed({"constant", "step", "exponential", "cosine"}),
                     "`step`: multiply by `gamma` every `step_epochs`; `exponential`: by `gamma` per epoch; `cosine`: "
                     "down to `min_lr`"));
  t.push_back(positive("schedule.step_epochs", c(&S::step_epochs), "`step`: epochs between decays"));
  t.push_back(positive("schedule.gamma", c(&S::gamma), "`step`, `exponential`: the factor"));
  t.push_back(number("schedule.min_lr", c(&S::min_lr), 0, INFINITY, false, false, "`cosine`: the floor"));
  t.push_back(number("schedule.warmup_epochs", c(&S::warmup_epochs), 0, INFINITY, false, false,
                     "linear warm-up before any schedule: from lr / steps to lr, or, with `lr_scaling`, from the "
                     "unscaled to the scaled rate (from the scaled rate / steps when the batch is below `base_batch`)"));
  t.push_back(choice("schedule.lr_scaling", c(&S::lr_scaling), [] { return optimizer::lr_scaling_names(); },
                     "the learning rate is the one for `base_batch`, multiplied by G / base_batch (`linear`) or its "
                     "square root (`sqrt`), with G the global batch, which `batch_size` already is on any number of "
                     "ranks"));
  t.push_back(defaults_to(integer("schedule.base_batch", c(&S::base_batch), limits::batch_size,
                                  "the batch the learning rate was chosen for"),
                          "batch_size"));
}

// Read and written by spec.cpp's parse_data and data_json, whose checks
// depend on the data set; listed here for the allowed keys, flags and docs.
SpecField by_group(SpecField f) {
  f.read = nullptr;
  f.by_group = true;
  return f;
}

void add_data_fields(Table& t) {
  using D = DataSpec;
  const auto d = [](auto m) { return in(&TrainSpec::data, m); };
  const auto folder_only = [](std::string m) { return "`folder` only: " + m; };
  const auto synthetic_only = [](std::string m) { return "`synthetic` only: " + m; };
  t.push_back(object("data", "the data", "what the network trains and is tested on"));
  t.push_back(by_group(choice(
      "data.dataset", d(&D::dataset), [] { return dataset_names(); },
      "`fashion-mnist` or `mnist`: MNIST-format IDX files, `.gz` or plain, of 10 classes (a label outside [0, 10) is "
      "an error naming the file, image and offset); `idx`: any folder of MNIST-format files, classes 0 .. the largest "
      "training label; `cifar10`, `cifar100`: the CIFAR binary files in `data.dir` (required for them), images 3 x 32 "
      "x 32 held as uint8, 10 or 100 (fine) classes; `synthetic`: seeded random images (uniform in [0, 1)) and "
      "labels, computed as each batch is assembled from (seed, split, sample), so the images take no memory (the "
      "labels are held one-hot: 4 x classes bytes a sample), labelled as synthetic in `summary.json`, the report and "
      "the command's output; `folder`: JPEG and PNG images in `data.train` and `data.test`, one sub-folder per class "
      "(docs/training.md, \"Image folders\"), decoded and augmented a batch at a time on the loader's thread")));
  SpecField dir = by_group(described("data.dir", Kind::string, "a directory",
                                     "folder of `train-images-idx3-ubyte[.gz]`, `train-labels-idx1-ubyte[.gz]`, "
                                     "`t10k-...`; for `cifar10` of `data_batch_1.bin` .. `data_batch_5.bin` and "
                                     "`test_batch.bin`, for `cifar100` of `train.bin` and `test.bin` (each also as "
                                     "`.gz`); refused with `folder`"));
  write_with(dir, d(&D::dir));
  t.push_back(flagged(dir, {"data", "DIR", "data.dir: folder of the IDX (or, for cifar10/cifar100, CIFAR binary) "
                                           "files (default /usr/share/datasets/fashion-mnist)", true}));
  t.push_back(flagged(by_group(integer("data.limit_train", d(&D::limit_train), limits::samples,
                                       "use the first N training samples, 0 for all")),
                      {"limit-train", "N", "use only the first N training samples", false, IntRange{1, limits::samples.max}}));
  t.push_back(flagged(by_group(integer("data.limit_test", d(&D::limit_test), limits::samples,
                                       "use the first N test samples, 0 for all")),
                      {"limit-test", "N", "use only the first N test samples", false, IntRange{1, limits::samples.max}}));
  t.push_back(flagged(by_group(number("data.val_split", d(&D::val_split), 0, 1, false, true,
                                      "the fraction of the training samples held out for validation; 0: none")),
                      {"val-split", "F", "fraction of the training samples held out for validation (default 0.1; 0: none)"}));
  t.push_back(by_group(described("data.shape", Kind::other, "1 to 3 integers in [1, 65536], at most 2^28 values",
                                 "`synthetic` and `folder` only: one sample's shape ([C, H, W] with C 1 or 3 for "
                                 "`folder`)", "[3, 224, 224]")));
  t.push_back(by_group(integer("data.classes", d(&D::classes), limits::classes, synthetic_only("the classes"))));
  t.push_back(by_group(integer("data.train_samples", d(&D::train_samples), limits::synthetic_samples,
                               synthetic_only("the training split's samples"))));
  t.push_back(by_group(integer("data.test_samples", d(&D::test_samples), limits::synthetic_samples,
                               synthetic_only("the test split's samples"))));
  t.push_back(by_group(described("data.train", Kind::string, "a directory", folder_only("the training images"), "required")));
  t.push_back(by_group(described("data.test", Kind::string, "a directory", folder_only("the test images"), "required")));
  t.push_back(by_group(described("data.mean", Kind::other, "a number, or 1 or 3 numbers",
                                 folder_only("each pixel p becomes (p / 255 - mean) / std, per channel"), "0")));
  t.push_back(by_group(described("data.std", Kind::other, "a number > 0, or 1 or 3 such numbers",
                                 folder_only("see `data.mean`"), "1")));
  t.push_back(by_group(boolean("data.augment", d(&D::augment), folder_only("random resized crop and flip of the "
                                                                           "training images"))));
  t.push_back(by_group(number("data.min_scale", d(&D::min_scale), 0, 1, true, false,
                              folder_only("the random crop's smallest area fraction"))));
  t.push_back(by_group(number("data.center_crop", d(&D::center_crop), 0, 1, true, false,
                              folder_only("the evaluation centre crop's fraction of the shorter side"))));
  t.push_back(by_group(choice("data.on_error", d(&D::on_error), fixed({"skip", "refuse"}),
                              folder_only("bad files are skipped (named, counted, left out) or refused (an error "
                                          "naming the first)"))));
  t.push_back(by_group(boolean("data.verify", d(&D::verify),
                               folder_only("decode every file before training (false: headers only)"))));
  t.push_back(by_group(integer("data.decode_threads", d(&D::decode_threads), limits::decode_threads,
                               folder_only("decode threads per batch (0: measured at run time, the fastest kept)"))));
}

void add_early_stopping_fields(Table& t) {
  using E = EarlyStoppingSpec;
  const auto e = [](auto m) { return in(&TrainSpec::early_stopping, m); };
  t.push_back(written_if(object("early_stopping", "early stopping",
                                "when present, training stops once the validation value has not improved for "
                                "`patience` epochs (needs `data.val_split` > 0)",
                                [](TrainSpec& s) { s.early_stopping.enabled = true; }),
                         [](const TrainSpec& s) { return s.early_stopping.enabled; }));
  t.push_back(flagged(integer("early_stopping.patience", e(&E::patience), limits::patience,
                              "epochs without improvement"),
                      {"early-stopping", "N", "stop after N epochs without a better validation loss (needs --val-split > 0)"}));
  t.push_back(choice("early_stopping.monitor", e(&E::monitor), fixed({"val_loss", "val_accuracy"}), "what must improve"));
  t.push_back(number("early_stopping.min_delta", e(&E::min_delta), 0, INFINITY, false, false,
                     "the smallest change that counts as better"));
  t.push_back(boolean("early_stopping.restore_best", e(&E::restore_best), "end with the best epoch's weights"));
}

void add_distributed_fields(Table& t) {
  using D = DistributedSpec;
  const auto d = [](auto m) { return in(&TrainSpec::distributed, m); };
  t.push_back(object("distributed", "the distributed settings",
                     "read only when the run has more than one rank (docs/distributed.md); `batch_size` is then the "
                     "global batch"));
  t.push_back(flagged(choice("distributed.strategy", d(&D::strategy), [] { return distributed::strategy_names(); },
                             "how the ranks combine their work (with `asgd` rank 0 is the parameter server and trains "
                             "on no data); a plan with model-parallel layers takes only a strategy that serves them"),
                      {"strategy", "NAME", "under mpirun", true}));
  t.push_back(written_if(choice("distributed.parallel", d(&D::parallel), [] { return parallel_choices(); },
                                "the layout of every `dense` and `conv2d` layer that names none: `data` (the whole "
                                "network data-parallel), `model` (dense layers split over the ranks) or `auto` "
                                "(convolutions data-parallel, dense layers model-parallel); docs/hybrid.md. Written "
                                "to `config.json` only when not `data`"),
                         [](const TrainSpec& s) { return s.distributed.parallel != DistributedSpec{}.parallel; }));
  t.push_back(written_if(
      flagged(choice("distributed.allreduce", d(&D::allreduce), [] { return distributed::allreduce_modes(); },
                     "how the allreduce buckets travel: `flat` (one allreduce over all ranks), `hierarchical` "
                     "(reduce inside each host, allreduce among one leader per host, broadcast inside each host) or "
                     "`auto` (hierarchical when the ranks span several hosts and a host has several ranks); "
                     "docs/distributed.md. Written to `config.json` only when not `auto`"),
              {"allreduce", "MODE", "under mpirun: auto, flat or hierarchical (default auto)", true}),
      [](const TrainSpec& s) { return s.distributed.allreduce != DistributedSpec{}.allreduce; }));
  t.push_back(number("distributed.bucket_mb", d(&D::bucket_mb), 0, 4096, true, false,
                     "allreduce: gradient bucket size in MiB"));
  t.push_back(integer("distributed.average_every", d(&D::average_every), limits::average_every,
                      "weight-avg: local steps between weight averages"));
  t.push_back(integer("distributed.staleness", d(&D::staleness), limits::staleness,
                      "asgd: most steps a gradient may lag the weights"));
  t.push_back(flagged(number("distributed.watchdog_s", d(&D::watchdog_s), 0, 86400, true, false,
                             "seconds a collective may wait for a missing rank"),
                      {"watchdog", "SECONDS", "under mpirun: fail when a rank misses a collective this long (default 60)",
                       true}));
}

// "parallel": {"pipeline": {...}} (parallel/pipeline/, docs/hybrid.md).
SpecField pipeline_cuts() {
  SpecField f = named("parallel.pipeline.cuts",
                      "each stage's first layer (an index into `layers`), starting with 0, one per stage; absent: "
                      "chosen by `balance`");
  f.accepts.kind = Kind::other;
  f.accepts.described = "a list of integers";
  f.default_text = "balanced";
  f.read = [](const ConfigObject& o, TrainSpec& s) {
    if (!o.has("cuts")) return;
    const Json& v = o.get("cuts");
    if (!v.is_array() || v.empty())
      throw ConfigError(o.at("cuts"), "expected a list of layer indices (one per stage), got " + v.dump());
    s.pipeline.cuts.clear();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 0)
        throw ConfigError(o.at("cuts") + "[" + std::to_string(i) + "]", "expected a layer index, got " + v[i].dump());
      s.pipeline.cuts.push_back(v[i].get<std::int64_t>());
    }
  };
  f.value = [](const TrainSpec& s) { return Json(s.pipeline.cuts); };
  f.written = [](const TrainSpec& s) { return !s.pipeline.cuts.empty(); };
  return f;
}
void add_pipeline_fields(Table& t) {
  using P = PipelineSpec;
  const auto p = [](auto m) { return in(&TrainSpec::pipeline, m); };
  const auto enabled = [](const TrainSpec& s) { return s.pipeline.enabled; };
  t.push_back(written_if(object("parallel", "the parallel plan",
                                "how the network is laid out over the ranks beyond data parallelism; written to "
                                "`config.json` only with a pipeline"),
                         enabled));
  t.push_back(written_if(object("parallel.pipeline", "the pipeline",
                                "when present, layer parallelism: the layers cut into `stages` consecutive stages, "
                                "one per rank, each batch into `micro_batches` (docs/hybrid.md, \"Pipelines\")",
                                [](TrainSpec& s) { s.pipeline.enabled = true; }),
                         enabled));
  t.push_back(integer("parallel.pipeline.stages", p(&P::stages), limits::stages,
                      "stages, each on its own rank: the run needs exactly `stages` x `replicas` ranks"));
  t.push_back(integer("parallel.pipeline.micro_batches", p(&P::micro_batches), limits::micro_batches,
                      "micro-batches per batch (per replica's share of it); they must divide it, and the last "
                      "training batch"));
  t.push_back(written_if(integer("parallel.pipeline.replicas", p(&P::replicas), limits::replicas,
                                 "data-parallel replicas of the whole pipeline: the run takes `stages` x `replicas` "
                                 "ranks, each replica training its share of every batch, the stages' gradients "
                                 "averaged over the replicas"),
                         [](const TrainSpec& s) { return s.pipeline.replicas != PipelineSpec{}.replicas; }));
  t.push_back(choice("parallel.pipeline.schedule", p(&P::schedule), [] { return distributed::pipeline::schedule_names(); },
                     "`gpipe`: every forward, then every backward; `1f1b`: one forward, one backward, at most "
                     "`stages` micro-batches in flight"));
  t.push_back(written_if(
      choice("parallel.pipeline.balance", p(&P::balance), fixed({"parameters", "flops", "time"}),
             "what the planner balances without `cuts`: `parameters` (each layer's parameters + 1), `flops` (each "
             "layer's estimated forward operations per sample: 2 x parameters x output positions + output "
             "elements) or `time` (each layer's forward seconds on 16 rows, measured by stage 0 and sent to the "
             "others)"),
      [](const TrainSpec& s) { return s.pipeline.balance != PipelineSpec{}.balance; }));
  t.push_back(pipeline_cuts());
}
void add_batch_growth_fields(Table& t) {
  using G = BatchGrowthSpec;
  const auto g = [](auto m) { return in(&TrainSpec::batch_growth, m); };
  t.push_back(written_if(object("batch_growth", "batch growth",
                                "when present, the batch grows during training: epoch e trains in batches of min(max, "
                                "batch_size x factor^floor((e - 1) / every_epochs)); schedules in epochs are "
                                "converted to steps with the first epoch's batch",
                                [](TrainSpec& s) { s.batch_growth.enabled = true; }),
                         [](const TrainSpec& s) { return s.batch_growth.enabled; }));
  t.push_back(integer("batch_growth.factor", g(&G::factor), limits::growth_factor, "the growth factor"));
  t.push_back(integer("batch_growth.every_epochs", g(&G::every_epochs), limits::epochs, "epochs between growths"));
  t.push_back(defaults_to(integer("batch_growth.max", g(&G::max), limits::growth_max,
                                  "the largest batch, at least `batch_size`"),
                          "required"));
}

void add_top_level_scalars(Table& t) {
  t.push_back(flagged(integer("epochs", top(&TrainSpec::epochs), limits::epochs, "epochs to train"),
                      {"epochs", "N", "epochs to train (with --resume: the run's new total)", true}));
  t.push_back(flagged(integer("batch_size", top(&TrainSpec::batch_size), limits::batch_size,
                              "samples per training step (across ranks: the global batch)"),
                      {"batch-size", "N", "samples per training step"}));
  {
    SpecField f = named("seed", "weights, shuffling, dropout");
    f.accepts.kind = Kind::seed;
    f.read = [](const ConfigObject& o, TrainSpec& s) { s.seed = o.seed("seed", s.seed); };
    write_with(f, top(&TrainSpec::seed));
    t.push_back(flagged(f, {"seed", "N", "seed of weights, shuffling and dropout", false, IntRange{0, INT64_MAX}}));
  }
  t.push_back(flagged(written_if(boolean("deterministic", top(&TrainSpec::deterministic),
                                         "convolution and pooling implementations (and which convolution passes "
                                         "take the low precision) picked by a fixed rule instead of by timing "
                                         "(`core/determinism.h`), so a rerun on the same machine, thread count and "
                                         "rank count computes the same bits"),
                                 [](const TrainSpec& s) { return s.deterministic; }),
                      {"deterministic", "", "convolution and pooling algorithms picked by a fixed rule, not by timing, "
                                            "so a rerun (same machine, threads and ranks) computes the same bits", true}));
  t.push_back(flagged(written_if(boolean("test_every_epoch", top(&TrainSpec::test_every_epoch),
                                         "also score the test split after every epoch into `test_per_epoch.csv`, for "
                                         "study plots only (`magmadnn compare`): nothing in training reads these "
                                         "scores, and the epoch's `seconds` leave them out"),
                                 [](const TrainSpec& s) { return s.test_every_epoch; }),
                      {"test-every-epoch", "", "also score the test split after every epoch, into test_per_epoch.csv "
                                               "(for study plots such as magmadnn compare; never used by training)"}));
  {
    SpecField f = named("precision", "what GEMMs and convolutions compute in (docs/mixed_precision.md); weights, "
                                     "gradients, optimizer state and checkpoints stay float in every precision, so a "
                                     "run may resume at another one");
    f.accepts.kind = Kind::choice;
    f.accepts.choices = fixed({"fp32", "bf16", "fp16", "tf32"});
    f.read = [](const ConfigObject& o, TrainSpec& s) {
      s.precision = parse_precision(o.choice("precision", precision_name(s.precision), {"fp32", "bf16", "fp16", "tf32"}));
    };
    f.value = [](const TrainSpec& s) { return Json(precision_name(s.precision)); };
    f.written = [](const TrainSpec& s) { return s.precision != Precision::FP32; };
    t.push_back(flagged(f, {"precision", "P", "fp32 (default), bf16 (bf16 GEMMs and convolutions, float accumulation "
                                              "and masters), fp16 or tf32 (both GPU only)", true}));
  }
}

void add_loss_scaling_fields(Table& t) {
  using L = LossScalingSpec;
  const auto l = [](auto m) { return in(&TrainSpec::loss_scaling, m); };
  t.push_back(written_if(object("loss_scaling", "the loss scaling",
                                "dynamic loss scaling, which skips a step whose gradients overflow and halves the "
                                "scale; written to `config.json` only when not the default"),
                         [](const TrainSpec& s) { return s.loss_scaling != LossScalingSpec{}; }));
  t.push_back(flagged(choice("loss_scaling.mode", l(&L::mode), fixed({"auto", "on", "off"}),
                             "`auto`: on at fp16 only; `on`: at any precision; `off`: not at fp16"),
                      {"loss-scaling", "MODE", "auto (default: on at fp16 only), on or off (not at fp16): dynamic loss "
                                               "scaling, which skips a step whose gradients overflow and halves the "
                                               "scale (see docs/mixed_precision.md)", true}));
  t.push_back(number("loss_scaling.init_scale", l(&L::init_scale), 1, 16777216, false, false, "the first scale"));
  t.push_back(integer("loss_scaling.growth_interval", l(&L::growth_interval), limits::growth_interval,
                      "good steps in a row before the scale doubles"));
}

// A Markdown table cell: pipes escaped.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// The default in words: the field's own text, else its value in a default spec.
std::string default_of(const SpecField& f) {
  if (!f.default_text.empty()) return f.default_text;
  if (!f.value) return "";
  const Json v = f.value(TrainSpec{});
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::string Accepts::text() const {
  std::ostringstream os;
  switch (kind) {
    case Kind::integer:
      os << "an integer in [" << ints.min << ", " << ints.max << "]";
      break;
    case Kind::seed:
      os << "an integer in [0, 2^64 - 1]";
      break;
    case Kind::number:
      os << "a number in " << (lo_open ? "(" : "[") << ConfigObject::exact(lo) << ", ";
      if (hi == INFINITY) os << "inf)"; else os << ConfigObject::exact(hi) << (hi_open ? ")" : "]");
      break;
    case Kind::positive:
      os << "a number > 0";
      break;
    case Kind::boolean:
      os << "true or false";
      break;
    case Kind::choice: {
      const std::vector<std::string> names = choices();
      for (std::size_t i = 0; i < names.size(); ++i) os << (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") << names[i];
      break;
    }
    default:
      os << described;
  }
  return os.str();
}

namespace {
std::vector<SpecField> build_spec_fields() {
  std::vector<SpecField> t;
  auto add = [&t](SpecField f) { t.push_back(std::move(f)); };
  // -- top level, as to_json writes it
  {
    SpecField f = named("name", "used in the report and the default run folder");
    f.accepts = {Kind::string, {0, 0}, 0, 0, false, false, {}, "1 to 100 letters, digits, `-`, `_`, `.`, not starting with `.`"};
    // The name becomes the run folder's name (runs/<name>-<date>-<time>):
    // one plain path component, never a way out of runs/ or a hidden file.
    f.read = [](const ConfigObject& o, TrainSpec& s) {
      s.name = o.string("name", s.name);
      const bool plain = !s.name.empty() && s.name.size() <= 100 && s.name[0] != '.' &&
                         std::all_of(s.name.begin(), s.name.end(), [](char c) {
                           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                         });
      if (!plain) {
        throw ConfigError("name", "expected 1 to 100 letters, digits, '-', '_' or '.' (not starting with '.'), got " +
                                      Json(s.name).dump());
      }
    };
    write_with(f, top(&TrainSpec::name));
    add(f);
  }
  add(described("layers", Kind::other, "a non-empty array of layer objects",
                "the network: its layers, in order after the input unless a layer names its `inputs` (the layer "
                "table below, docs/networks.md)", "required"));
  add(choice("loss", top(&TrainSpec::loss), fixed({"cross_entropy", "mse"}),
             "`cross_entropy` (fused with a final softmax) or `mse`"));
  add_optimizer_fields(t);
  add_schedule_fields(t);
  add_data_fields(t);
  add_early_stopping_fields(t);
  add_distributed_fields(t);
  add_pipeline_fields(t);
  add_batch_growth_fields(t);
  add_top_level_scalars(t);
  add_loss_scaling_fields(t);
  return t;
}
}  // namespace

// Built once, on first use: every parse, every --help and every flag lookup
// walks the table, and building it allocates a few hundred closures.
// Function-local static: thread-safe initialisation, no order-of-init issue.
const std::vector<SpecField>& spec_fields() {
  static const std::vector<SpecField> table = build_spec_fields();
  return table;
}

std::vector<std::string> field_keys(const std::string& group) {
  std::vector<std::string> keys;
  for (const SpecField& f : spec_fields()) {
    if (f.group == group) keys.push_back(f.key);
  }
  return keys;
}

SpecField spec_field(const std::string& path) {
  for (const SpecField& f : spec_fields()) {
    if (f.path() == path) return f;
  }
  throw ValueError("spec_field: the run spec has no key " + path);
}

void read_fields(const ConfigObject& o, const std::string& group, TrainSpec& s) {
  for (const SpecField& f : spec_fields()) {
    if (f.group != group) continue;
    if (f.accepts.kind != Kind::object) {
      if (f.read) f.read(o, s);
    } else if (o.has(f.key)) {  // an object inside the group: "parallel.pipeline"
      const ConfigObject inner(o.get(f.key), f.path(), field_keys(f.path()), f.what);
      if (f.read) f.read(inner, s);
      read_fields(inner, f.path(), s);
    }
  }
}

void write_fields(const TrainSpec& s, const std::string& group, Json& out) {
  for (const SpecField& f : spec_fields()) {
    if (f.group != group || f.by_group || (f.written && !f.written(s))) continue;
    if (f.accepts.kind == Kind::object) {  // an object inside the group
      Json inner = Json::object();
      write_fields(s, f.path(), inner);
      out[f.key] = std::move(inner);
    } else if (f.value) {
      out[f.key] = f.value(s);
    }
  }
}

Json spec_schema() {
  Json all = Json::array();
  for (const SpecField& f : spec_fields()) {
    Json j;
    j["key"] = f.path();
    j["accepts"] = f.accepts.text();
    if (f.accepts.kind == Kind::choice) j["choices"] = f.accepts.choices();
    j["default"] = default_of(f);
    j["meaning"] = f.meaning;
    if (!f.flag.name.empty()) {
      j["flag"] = "--" + f.flag.name + (f.flag.value.empty() ? "" : " " + f.flag.value);
      j["resume_may_change"] = f.flag.resume_may_change;
    }
    all.push_back(std::move(j));
  }
  return all;
}

std::string spec_key_table() {
  std::ostringstream os;
  os << "| key | accepts | default | meaning |\n| --- | --- | --- | --- |\n";
  for (const SpecField& f : spec_fields()) {
    std::string meaning = f.meaning;
    if (!f.flag.name.empty()) {
      meaning += "; flag `--" + f.flag.name + (f.flag.value.empty() ? "" : " " + f.flag.value) + "`" +
                 (f.flag.resume_may_change ? ", allowed with `--resume`" : "");
    }
    // A value in code font; a default in words ("required") as it is.
    const std::string def = default_of(f);
    const bool words = !f.default_text.empty() || def.empty();
    os << "| `" << f.path() << "` | " << cell(f.accepts.text()) << " | " << (words ? cell(def) : "`" + cell(def) + "`")
       << " | " << cell(meaning) << " |\n";
  }
  return os.str();
}

}  // namespace magmadnn::run

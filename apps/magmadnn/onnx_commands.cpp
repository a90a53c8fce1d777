// magmadnn export / import: a run's network to ONNX, and an ONNX model to a
// run folder that trains further and exports again (magmadnn/onnx/onnx.h).
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "args.h"
#include "checkpoint_config.h"
#include "cli.h"
#include "magmadnn/core/config.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/dataset.h"
#if MAGMADNN_HAVE_ONNX
#include "magmadnn/io/atomic_file.h"
#include "magmadnn/onnx/onnx.h"
#endif

namespace magmadnn::cli {
namespace fs = std::filesystem;

#if MAGMADNN_HAVE_ONNX
namespace {

// An imported run folder holds the model it came from beside its checkpoint.
constexpr const char* kImportedModel = "model.onnx";
constexpr const char* kCheckpoint = "checkpoint.bin";

const std::vector<OptionSpec> kExportOptions = {
    {"onnx", "FILE", "the ONNX model to write (required)"},
    {"config", "FILE", "the run's config, when the checkpoint carries none"},
};

const std::vector<OptionSpec> kImportOptions = {
    {"out", "DIR", "the run folder to write (required; must not hold a run already)"},
    {"config", "FILE", "a run config: its loss, optimizer and batch size, and with --epochs its data"},
    {"epochs", "N", "train that many epochs on the config's data before writing (default 0)"},
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(path + ": cannot open the file");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// The network of a run folder or checkpoint, its weights loaded.
std::unique_ptr<model::NeuralNetwork<float>> load_run(const std::string& what, const std::string& config) {
  const fs::path p(what);
  const fs::path dir = fs::is_directory(p) ? p : p.parent_path();
  const std::string ckpt = fs::is_directory(p) ? (p / kCheckpoint).string() : what;
  if (!fs::exists(ckpt)) throw UsageError(ckpt + " does not exist: name a run folder or a checkpoint");
  if (fs::exists(dir / kImportedModel)) {  // an imported run: the model gives the network
    // The optimizer its checkpoint holds state for: the config it was imported with.
    const fs::path cfg = config.empty() ? dir / "config.json" : fs::path(config);
    const model::nn_params_t params =
        fs::exists(cfg) ? training_params(parse_config(Json::parse(read_all(cfg.string())))) : model::nn_params_t{};
    auto net = onnx::import_network((dir / kImportedModel).string(), params.loss, params.optimizer, params);
    net->load(ckpt);
    return net;
  }
  const StoredNetwork stored = network_for_checkpoint(ckpt, config);
  NetworkBuild b = build_network(parse_config(stored.config), stored.sample_shape, 1, stored.classes);
  b.model->load(ckpt);
  return std::move(b.model);
}

}  // namespace

int export_command(const std::vector<std::string>& args, std::ostream& out) {
  const SplitArgs split = split_positional(args, kExportOptions);
  const ParsedArgs a = parse_args("magmadnn export", split.options, kExportOptions);
  if (a.has("help")) {
    out << usage_text("magmadnn export RUN_OR_CHECKPOINT --onnx FILE",
                      "Writes the network of a run folder or checkpoint as an ONNX model (opset " +
                          std::to_string(onnx::kExportOpset) +
                          ", inference form, free batch axis), checked by ONNX's checker.",
                      kExportOptions);
    return 0;
  }
  if (split.positional.size() != 1) throw UsageError("magmadnn export: name one run folder or checkpoint");
  if (!a.has("onnx")) throw UsageError("magmadnn export: --onnx FILE is required");
  auto net = load_run(split.positional[0], a.str("config"));
  onnx::export_model(*net, a.str("onnx"));
  out << "wrote " << a.str("onnx") << " (ONNX opset " << onnx::kExportOpset << ", " << net->num_params()
      << " parameters)\n";
  return 0;
}

int import_command(const std::vector<std::string>& args, std::ostream& out) {
  const SplitArgs split = split_positional(args, kImportOptions);
  const ParsedArgs a = parse_args("magmadnn import", split.options, kImportOptions);
  if (a.has("help")) {
    out << usage_text("magmadnn import FILE.onnx --out DIR [--config FILE [--epochs N]]",
                      "Builds a network from an ONNX model and writes a run folder (model.onnx, checkpoint.bin) "
                      "that `magmadnn export` reads; with --epochs it first trains on the config's data.",
                      kImportOptions);
    return 0;
  }
  if (split.positional.size() != 1) throw UsageError("magmadnn import: name one ONNX model file");
  if (!a.has("out")) throw UsageError("magmadnn import: --out DIR is required");
  const std::string src = split.positional[0];
  const fs::path dir(a.str("out"));
  if (fs::exists(dir / kCheckpoint) || fs::exists(dir / kImportedModel)) {
    throw UsageError(dir.string() + " holds a run already; choose another --out");
  }
  const std::int64_t epochs = a.has("epochs") ? a.integer("epochs", 0, 1'000'000) : 0;
  if (epochs > 0 && !a.has("config")) throw UsageError("magmadnn import: --epochs needs --config (the data)");
  TrainSpec spec = a.has("config") ? parse_config(Json::parse(read_all(a.str("config")))) : TrainSpec{};
  model::nn_params_t params = a.has("config") ? training_params(spec) : model::nn_params_t{};
  auto net = onnx::import_network(src, params.loss, params.optimizer, params);
  out << "imported " << src << ": " << net->layers().size() << " layers, " << net->num_params() << " parameters\n";
  if (epochs > 0) {
    const std::int64_t classes = net->output()->get_output_shape()[1];
    const Split train = load_data(spec.data, "train", classes, spec.seed);
    const Split test = load_data(spec.data, "test", classes, spec.seed);
    net->params().n_epochs = static_cast<unsigned int>(epochs);
    net->fit(train.x, train.y);
    const model::Evaluation e = net->evaluate(test.x, test.y);
    out << "after " << epochs << " epochs: test accuracy " << e.accuracy << " (loss " << e.loss << ")\n";
  }
  // Written only now, when the network exists: nothing half-built.
  fs::create_directories(dir);
  io::write_file_atomic((dir / kImportedModel).string(), read_all(src));
  if (a.has("config")) io::write_file_atomic((dir / "config.json").string(), read_all(a.str("config")));
  net->save((dir / kCheckpoint).string());
  out << "wrote " << dir.string() << "\n";
  return 0;
}

#else

int export_command(const std::vector<std::string>&, std::ostream&) {
  throw UsageError("magmadnn export: this build has no ONNX support (apt-get install libonnx-dev libprotobuf-dev)");
}
int import_command(const std::vector<std::string>&, std::ostream&) {
  throw UsageError("magmadnn import: this build has no ONNX support (apt-get install libonnx-dev libprotobuf-dev)");
}

#endif

}  // namespace magmadnn::cli

// The run layer (C++ run::): what `magmadnn train` does in one process, and
// the data sets as NumPy arrays. The Python side (magmadnn.train in
// python/magmadnn/__init__.py) merges the preset, the config and the flags
// as the command does, then hands the JSON here.
#include <nanobind/stl/string.h>

#include "common.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/data/mnist.h"
#include "magmadnn/run/presets.h"
#include "magmadnn/run/run_training.h"
#include "magmadnn/run/spec.h"
#include "magmadnn/tune/inline_channel.h"
#include "magmadnn/tune/master.h"
#include "magmadnn/tune/results.h"
#include "magmadnn/tune/train_trial.h"
#include "magmadnn/tune/tune_config.h"

namespace magmadnn::python {

namespace {
// The ranks of this process, made once ("auto": MPI under mpirun or srun,
// else one local rank, so a single process never starts MPI). MPI is
// initialised at most once per process, and not again if the program (e.g.
// mpi4py) did it first; the communicator lives until the process exits.
std::shared_ptr<distributed::Communicator> process_ranks() {
  static std::shared_ptr<distributed::Communicator> comm = distributed::make_communicator("auto");
  return comm;
}
}  // namespace

void bind_run(nb::module_& m) {
  m.def("_preset", [](const std::string& name) { return run::preset(name).dump(); }, nb::arg("name"),
        "A preset's config as JSON text (mlp, lenet5, resnet, ...); ValueError for an unknown name.");
  m.def("_read_json", [](const std::string& path) { return run::read_json_file(path).dump(); }, nb::arg("path"),
        "A JSON file's content as text (ConfigError naming a missing or malformed file).");
  m.def("_train", [](const std::string& config, const std::string& checkpoint, bool resume, nb::handle callbacks) {
    const run::TrainSpec spec = run::parse_config(run::Json::parse(config));
    const std::shared_ptr<distributed::Communicator> comm = process_ranks();
    run::RunOptions o;
    if (comm->size() > 1) o.communicator = comm;  // data-parallel, as `magmadnn train` under mpirun
    o.checkpoint_path = checkpoint;
    o.resume = resume;
    o.callbacks = callbacks_arg(callbacks);
    o.callbacks.push_back(signal_check());
    std::string summary;
    {
      nb::gil_scoped_release release;
      run::TrainingRun tr(spec, comm->size() > 1 ? comm : nullptr);
      summary = tr.run(o).summary.dump();
    }
    o.callbacks.clear();  // with the GIL (Python callbacks hold Python objects)
    return summary;
  }, nb::arg("config"), nb::arg("checkpoint"), nb::arg("resume"), nb::arg("callbacks").none(),
  "run::run_training of the config (JSON text); returns summary.json's content as text. Under mpirun\n"
  "every rank calls it with the same config and they train data-parallel (rank 0 writes the checkpoint).");
  m.def("_tune", [](const std::string& config, const std::string& out, bool resume) {
    const tune::TuneConfig cfg = tune::parse_tune_config(run::Json::parse(config));
    tune::MasterOptions options;
    options.out_dir = out;
    options.resume = resume;
    std::string results;
    {
      nb::gil_scoped_release release;
      tune::InlineChannel channel(tune::train_trial);
      const tune::SearchResult r = tune::run_search(cfg, channel, options);
      tune::write_results(out, cfg, r);
      results = tune::results_json(cfg, r).dump();
    }
    return results;
  }, nb::arg("config"), nb::arg("out"), nb::arg("resume"),
  "tune::run_search of the tune config (JSON text) in this process, as `magmadnn tune CONFIG --out DIR`\n"
  "without --workers; writes journal.jsonl, results.json and best.json to `out`; returns results.json.");
  m.def("rank", []() { return process_ranks()->rank(); }, "This process's rank (0 without mpirun).");
  m.def("ranks", []() { return process_ranks()->size(); }, "The number of ranks (1 without mpirun).");
  m.def("load_fashion_mnist", [](const std::string& split, const std::string& dir) {
    MAGMADNN_CHECK(split == "train" || split == "test", ValueError,
                   "split: expected 'train' or 'test', got '" << split << "'");
    data::ImageOptions opts;
    opts.memory = HOST;
    data::ImageSet<float> s;
    {
      nb::gil_scoped_release release;
      s = data::load_mnist<float>(dir.empty() ? data::kFashionMnistDir : dir, split == "train" ? data::Train : data::Test,
                                  opts);
    }
    nb::object x = nb::cast(PyTensor{std::move(s.images)});
    nb::object y = nb::cast(PyTensor{std::move(s.labels)});
    return nb::make_tuple(numpy_view(nb::cast<PyTensor&>(x), x), numpy_view(nb::cast<PyTensor&>(y), y));
  }, nb::arg("split") = "train", nb::arg("dir") = "",
  "Fashion-MNIST (or any MNIST-format folder `dir`) as NumPy arrays: images {N, 1, 28, 28} float32 in\n"
  "[0, 1] and one-hot labels {N, 10}; Debian's dataset-fashion-mnist by default. IOError naming a\n"
  "missing file (and the package to install).");
}

}  // namespace magmadnn::python

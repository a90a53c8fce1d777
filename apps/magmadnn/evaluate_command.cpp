// magmadnn evaluate: a checkpoint's loss and accuracy on the test split.
#include <cmath>
#include <cstdio>
#include <ostream>

#include "args.h"
#include "checkpoint_config.h"
#include "cli.h"
#include "lead_process.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/dataset.h"

namespace magmadnn::cli {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"checkpoint", "FILE", "checkpoint written by magmadnn train (required)"},
    {"data", "DIR", "folder of the IDX files (default: the run's data folder)"},
    {"config", "FILE", "the run's config, when the checkpoint carries none"},
    {"limit-test", "N", "use only the first N test samples"},
    {"json", "", "print the result as JSON"},
};

}  // namespace

int evaluate_command(const std::vector<std::string>& args, std::ostream& out) {
  // Under mpirun every rank would print the same result: rank 0 alone works.
  if (!lead_process()) return 0;
  const ParsedArgs a = parse_args("magmadnn evaluate", args, kOptions);
  if (a.has("help")) {
    out << usage_text("magmadnn evaluate --checkpoint FILE [--data DIR]",
                      "Loads a checkpoint and prints its accuracy and loss on the test split.", kOptions);
    return 0;
  }
  if (!a.has("checkpoint")) throw UsageError("magmadnn evaluate: --checkpoint FILE is required");
  const std::int64_t limit = a.has("limit-test") ? a.integer("limit-test", 1, limits::samples.max) : 0;
  const std::string ckpt = a.str("checkpoint");
  const StoredNetwork stored = network_for_checkpoint(ckpt, a.str("config"));
  const TrainSpec spec = parse_config(stored.config);
  DataSpec data = spec.data;
  data.dir = a.str("data", spec.data.dir);
  data.limit_test = limit;
  const std::string& dir = data.dir;
  const Split test = load_data(data, "test", stored.classes, spec.seed);
  check_sample_shape(test, stored.sample_shape, "the network's input is");

  NetworkBuild b = build_network(spec, stored.sample_shape, 1, stored.classes);
  b.model->load(ckpt);
  const model::Evaluation e = b.model->evaluate(test.x, test.y);
  if (!std::isfinite(e.loss)) {
    MAGMADNN_THROW(ValueError, "the loss of " << ckpt << " on the " << e.samples << " test samples of " << dir
                                              << " is " << e.loss << " (accuracy " << e.accuracy << ")");
  }
  if (a.has("json")) {
    out << Json{{"checkpoint", ckpt}, {"test_accuracy", e.accuracy}, {"test_loss", e.loss}, {"samples", e.samples}}
               .dump(2)
        << "\n";
  } else {
    char line[160];
    std::snprintf(line, sizeof line, "test accuracy: %.4f (loss %.4g) on %lld samples\n", e.accuracy, e.loss,
                  static_cast<long long>(e.samples));
    out << line;
  }
  return 0;
}

}  // namespace magmadnn::cli

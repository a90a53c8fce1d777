// magmadnn predict: class and probabilities of each input sample.
#include <cstdio>
#include <fstream>
#include <ostream>

#include "args.h"
#include "checkpoint_config.h"
#include "cli.h"
#include "lead_process.h"
#include "output_guard.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/dataset.h"

namespace magmadnn::cli {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"checkpoint", "FILE", "checkpoint written by magmadnn train (required)"},
    {"input", "FILE", "IDX images (plain or .gz) or CSV, one sample of raw pixel values per line (required)"},
    {"output", "FILE", "write the CSV here instead of standard output"},
    {"config", "FILE", "the run's config, when the checkpoint carries none"},
};

// One line per sample; the class is the argmax of its row (first on ties).
void write_predictions(std::ostream& os, const Tensor<float>& probs) {
  const std::int64_t n = probs.shape()[0], k = probs.shape()[1];
  const std::vector<float> p = probs.to_vector();
  std::vector<std::int64_t> classes(static_cast<std::size_t>(n), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 1; j < k; ++j) {
      if (p[i * k + j] > p[i * k + classes[i]]) classes[i] = j;
    }
  }
  os << "index,class";
  for (std::int64_t j = 0; j < k; ++j) os << ",p" << j;
  os << "\n";
  char buf[32];
  for (std::int64_t i = 0; i < n; ++i) {
    os << i << ',' << classes[i];
    for (std::int64_t j = 0; j < k; ++j) {
      std::snprintf(buf, sizeof buf, ",%.6g", p[i * k + j]);
      os << buf;
    }
    os << "\n";
  }
}

}  // namespace

int predict_command(const std::vector<std::string>& args, std::ostream& out) {
  // Under mpirun every rank would print the same result: rank 0 alone works.
  if (!lead_process()) return 0;
  const ParsedArgs a = parse_args("magmadnn predict", args, kOptions);
  if (a.has("help")) {
    out << usage_text("magmadnn predict --checkpoint FILE --input IDX-or-CSV [--output CSV]",
                      "Prints one CSV line per input sample: its index, the predicted class and the\n"
                      "network's output for each class (probabilities after a softmax).",
                      kOptions);
    return 0;
  }
  if (!a.has("checkpoint")) throw UsageError("magmadnn predict: --checkpoint FILE is required");
  if (!a.has("input")) throw UsageError("magmadnn predict: --input FILE is required");
  const std::string ckpt = a.str("checkpoint");
  if (a.has("output")) {
    std::vector<NamedInput> inputs;
    for (const char* in : {"checkpoint", "input", "config"})
      if (a.has(in)) inputs.push_back({std::string("--") + in, a.str(in)});
    check_output_file("magmadnn predict", "output", a.str("output"), inputs);
  }
  const StoredNetwork stored = network_for_checkpoint(ckpt, a.str("config"));
  const TrainSpec spec = parse_config(stored.config);
  const Tensor<float> x = load_inputs(a.str("input"), stored.sample_shape);

  NetworkBuild b = build_network(spec, stored.sample_shape, 1, stored.classes);
  b.model->load(ckpt);
  const Tensor<float> probs = b.model->predict(x);
  if (a.has("output")) {
    std::ofstream f(a.str("output"));
    MAGMADNN_CHECK(f.good(), IOError, "cannot write " << a.str("output"));
    write_predictions(f, probs);
    MAGMADNN_CHECK(f.good(), IOError, "write failed: " << a.str("output"));
  } else {
    write_predictions(out, probs);
  }
  return 0;
}

}  // namespace magmadnn::cli

// magmadnn bench conv: times every convolution algorithm on LeNet-5 and
// VGG-style layers (the measuring is conv::run_benchmark's; this file maps
// flags to it and prints its records with conv_bench_output.h).
#include <algorithm>
#include <ostream>

#include "args.h"
#include "cli.h"
#include "conv_bench_output.h"
#include "magmadnn/conv/bench.h"

namespace magmadnn::cli {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"json", "FILE", "also write the results as JSON to FILE"},
    {"dtype", "T", "float (default) or double"},
    {"batch", "N", "images per batch (default 32)"},
    {"repeats", "N", "timed runs per case; the minimum is reported (default 3)"},
    {"layers", "A,B", "only these layers (names listed by --list-layers)"},
    {"list-layers", "", "print the layer names and exit"},
    {"cpu-only", "", "skip the GPU algorithms"},
    {"gpu-only", "", "skip the CPU algorithms"},
};

int run_conv_bench(const ParsedArgs& a, std::ostream& out) {
  if (a.has("list-layers")) {
    for (const auto& n : conv::bench_layer_names()) out << n << "\n";
    return 0;
  }
  if (a.has("cpu-only") && a.has("gpu-only")) {
    throw UsageError("magmadnn bench conv: --cpu-only and --gpu-only exclude each other");
  }
  conv::BenchOptions o;
  o.dtype = a.str("dtype", o.dtype);
  if (a.has("batch")) o.batch = a.integer("batch", 1, 1 << 20);
  if (a.has("repeats")) o.repeats = static_cast<int>(a.integer("repeats", 1, 1'000'000));
  const std::string layers = a.str("layers");
  for (std::size_t b = 0; b < layers.size();) {
    const std::size_t e = std::min(layers.find(',', b), layers.size());
    if (e > b) o.layers.push_back(layers.substr(b, e - b));
    b = e + 1;
  }
  o.cpu = !a.has("gpu-only");
  o.cuda = !a.has("cpu-only");
  const std::vector<conv::BenchRecord> records = conv::run_benchmark(o);
  print_conv_bench_table(out, records);
  if (a.has("json")) {
    write_conv_bench_json(a.str("json"), records);
    out << "results written to " << a.str("json") << "\n";
  }
  return 0;
}

}  // namespace

int bench_command(const std::vector<std::string>& args, std::ostream& out) {
  const std::string synopsis = "magmadnn bench conv [--json FILE] | magmadnn bench --profile [train options]";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    out << usage_text(synopsis,
                      "conv: the time of each convolution algorithm on LeNet-5 and VGG-style 3x3 layers.\n"
                      "--profile: trains (the mlp preset unless --preset/--config say otherwise) and prints where\n"
                      "the time of a training step goes, per operation; the same as `magmadnn train --profile`.",
                      kOptions);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--profile" || args[0] == "profile") {
    std::vector<std::string> train_args(args.begin() + 1, args.end());
    train_args.push_back("--profile");
    if (std::find(train_args.begin(), train_args.end(), "--quiet") == train_args.end()) train_args.push_back("--quiet");
    return train_command(train_args, out);
  }
  if (args[0] != "conv") {
    throw UsageError("magmadnn bench: unknown benchmark \"" + args[0] + "\" (available: conv, --profile)");
  }
  const ParsedArgs a = parse_args("magmadnn bench conv", {args.begin() + 1, args.end()}, kOptions);
  if (a.has("help")) {
    out << usage_text(synopsis, "Times each convolution algorithm on LeNet-5 and VGG-style 3x3 layers.", kOptions);
    return 0;
  }
  return run_conv_bench(a, out);
}

}  // namespace magmadnn::cli

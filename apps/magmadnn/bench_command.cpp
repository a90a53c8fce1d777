// magmadnn bench conv: times every convolution algorithm on LeNet-5 and
// VGG-style layers (the measuring is conv::run_benchmark's; this file maps
// flags to it and prints its records with conv_bench_output.h).
// magmadnn bench allreduce: the Communicator's allreduce against raw
// MPI_Allreduce (the measuring is distributed::bench_allreduce's).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "args.h"
#include "cli.h"
#include "conv_bench_output.h"
#include "output_guard.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/conv/bench.h"
#include "magmadnn/core/config.h"
#include "magmadnn/comm/allreduce_bench.h"
#include "magmadnn/comm/communicator_factory.h"

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
  // --gpu-only times nothing where there is no GPU: said, not an empty table.
  if (a.has("gpu-only")) {
#if MAGMADNN_HAVE_CUDA
    if (!has_cuda_device())
      throw UsageError("magmadnn bench conv: --gpu-only: no CUDA device is visible to this process (check "
                       "nvidia-smi and CUDA_VISIBLE_DEVICES), so there is no GPU algorithm to time; drop --gpu-only "
                       "to time the CPU algorithms");
#else
    throw UsageError("magmadnn bench conv: --gpu-only: this build has no CUDA (configured with MAGMADNN_CUDA=OFF), "
                     "so there is no GPU algorithm to time; drop --gpu-only to time the CPU algorithms");
#endif
  }
  conv::BenchOptions o;
  o.dtype = a.str("dtype", o.dtype);
  if (a.has("batch")) o.batch = a.integer("batch", 1, 1 << 20);
  if (a.has("repeats")) o.repeats = static_cast<int>(a.integer("repeats", 1, 1'000'000));
  if (a.has("layers")) {
    // An empty name (",", "a,,b", a trailing comma) is a mistake, never "every layer".
    const std::string layers = a.str("layers");
    for (std::size_t b = 0; b <= layers.size();) {
      const std::size_t e = std::min(layers.find(',', b), layers.size());
      if (e == b)
        throw UsageError("magmadnn bench conv: --layers \"" + layers +
                         "\" has an empty name; give layer names separated by commas (magmadnn bench conv "
                         "--list-layers lists them)");
      o.layers.push_back(layers.substr(b, e - b));
      b = e + 1;
    }
  }
  o.cpu = !a.has("gpu-only");
  o.cuda = !a.has("cpu-only");
  // The file is checked before the benchmark, which takes minutes.
  if (a.has("json")) check_output_file("magmadnn bench conv", "json", a.str("json"), {});
  const std::vector<conv::BenchRecord> records = conv::run_benchmark(o);
  print_conv_bench_table(out, records);
  if (a.has("json")) {
    write_conv_bench_json(a.str("json"), records);
    out << "results written to " << a.str("json") << "\n";
  }
  return 0;
}

const std::vector<OptionSpec> kAllreduceOptions = {
    {"bytes", "A,B", "sizes in bytes, 4 to 1G (suffixes K, M and G allowed; default 4K to 64M by factors of 4)"},
    {"rounds", "N", "timed rounds per size; the median is reported (default 10)"},
    {"communicator", "KIND", "auto (default: MPI under mpirun, else one process), local or mpi"},
};

std::size_t parse_size(const std::string& s) {
  std::size_t end = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &end);
  } catch (const std::exception&) {
    throw UsageError("magmadnn bench allreduce: --bytes: \"" + s + "\" is not a size");
  }
  const std::string unit = s.substr(end);
  const unsigned long long scale = unit.empty()  ? 1
                                   : unit == "K" ? 1ull << 10
                                   : unit == "M" ? 1ull << 20
                                   : unit == "G" ? 1ull << 30
                                                 : 0;
  if (scale == 0 || v == 0 || v > (1ull << 30) / scale) {
    throw UsageError("magmadnn bench allreduce: --bytes: \"" + s +
                     "\" must be 1 byte to 1G (1073741824 bytes), with K, M or G (powers of 1024) as the unit");
  }
  if (v * scale % sizeof(float) != 0) {
    throw UsageError("magmadnn bench allreduce: --bytes: " + std::to_string(v * scale) +
                     " bytes is not a whole number of floats");
  }
  return static_cast<std::size_t>(v * scale);
}

int run_allreduce_bench(const ParsedArgs& a, std::ostream& out) {
  distributed::AllreduceBenchOptions o;
  const std::string list = a.str("bytes");
  for (std::size_t b = 0; b < list.size();) {
    const std::size_t e = std::min(list.find(',', b), list.size());
    if (e > b) o.bytes.push_back(parse_size(list.substr(b, e - b)));
    b = e + 1;
  }
  if (a.has("rounds")) o.rounds = static_cast<int>(a.integer("rounds", 1, 100000));
  const auto comm = distributed::make_communicator(a.str("communicator", "auto"));
  const auto records = distributed::bench_allreduce(*comm, o);
  if (comm->rank() != 0) return 0;
  char line[160];
  std::snprintf(line, sizeof line, "allreduce (float sum) over %d rank%s, %s communicator; median of %d rounds\n",
                comm->size(), comm->size() == 1 ? "" : "s", comm->backend().c_str(), o.rounds);
  out << line
      << "bus bandwidth = bytes x 2(p-1)/p / time (NCCL-tests' busbw)\n";
  std::snprintf(line, sizeof line, "%10s %12s %12s %12s %12s %9s\n", "bytes", "magmadnn", "MPI_Allreduce",
                "busbw GB/s", "raw GB/s", "of raw");
  out << line;
  // "-" where a figure does not exist: one rank has no bus traffic, and
  // only an MPI communicator has a raw MPI_Allreduce beside it.
  auto fmt = [](double v, const char* f) {
    char b[32];
    if (std::isnan(v)) return std::string("-");
    std::snprintf(b, sizeof b, f, v);
    return std::string(b);
  };
  for (const auto& r : records) {
    std::snprintf(line, sizeof line, "%10zu %12s %12s %12s %12s %9s\n", r.bytes, fmt(r.seconds * 1e6, "%.1f us").c_str(),
                  fmt(r.raw_seconds * 1e6, "%.1f us").c_str(), fmt(r.busbw_gbs(), "%.3f").c_str(),
                  fmt(r.raw_busbw_gbs(), "%.3f").c_str(), fmt(100.0 * r.raw_seconds / r.seconds, "%.1f%%").c_str());
    out << line;
  }
  return 0;
}

}  // namespace

int bench_command(const std::vector<std::string>& args, std::ostream& out) {
  const std::string synopsis =
      "magmadnn bench conv [--json FILE] | [mpirun -np N] magmadnn bench allreduce | magmadnn bench --profile [train options]";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    out << usage_text(synopsis,
                      "conv: the time of each convolution algorithm on LeNet-5, resnet and VGG-style 3x3 layers.\n"
                      "allreduce: magmadnn's allreduce against raw MPI_Allreduce, per size (run under mpirun).\n"
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
  if (args[0] == "allreduce") {
    const ParsedArgs a = parse_args("magmadnn bench allreduce", {args.begin() + 1, args.end()}, kAllreduceOptions);
    if (a.has("help")) {
      out << usage_text("[mpirun -np N] magmadnn bench allreduce [--bytes A,B] [--rounds N]",
                        "Times an in-place float allreduce through magmadnn's communicator (its descriptor check\n"
                        "and watchdog included) against raw MPI_Allreduce on the same processes.",
                        kAllreduceOptions);
      return 0;
    }
    return run_allreduce_bench(a, out);
  }
  if (args[0] != "conv") {
    throw UsageError("magmadnn bench: unknown benchmark \"" + args[0] + "\" (available: conv, allreduce, --profile)");
  }
  const ParsedArgs a = parse_args("magmadnn bench conv", {args.begin() + 1, args.end()}, kOptions);
  if (a.has("help")) {
    out << usage_text(synopsis, "Times each convolution algorithm on LeNet-5, resnet and VGG-style 3x3 layers.", kOptions);
    return 0;
  }
  return run_conv_bench(a, out);
}

}  // namespace magmadnn::cli

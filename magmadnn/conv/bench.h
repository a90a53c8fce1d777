/// @file bench.h
/// The convolution benchmark behind `magmadnn bench conv`: times every
/// algorithm that supports each layer, for each pass and device, and what the
/// chooser picks ("auto").
///
/// Layers: LeNet-5's two convolutions (5x5), the resnet preset's eight
/// ("resnet_*": the stem, 3x3 pairs, strided 3x3 and 1x1 projections),
/// VGG-style 3x3 layers with 64,
/// 128 and 256 channels on 32x32 and 56x56 images, and 7x7 layers on 56x56
/// images (where FFT should win), and LeNet-5's two 2x2 max pools
/// ("lenet_pool1", "lenet_pool2"; passes "forward" and "backward", our
/// pooling as "pool_cpu" against oneDNN's). Batch 32 by default. Direct is timed only
/// for layers of at most `direct_max_macs` multiply-adds (it is the slow
/// reference). Each time is the minimum over `repeats` runs after a warm-up,
/// the algorithms' runs interleaved (timing.h). The library returns records;
/// presenting them (the CLI's table and JSON file) is the caller's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace magmadnn::conv {

struct BenchOptions {
  std::string dtype = "float";      ///< "float" or "double"
  std::int64_t batch = 32;
  int repeats = 3;
  /// Layer names to run (see bench_layer_names()); empty: all.
  std::vector<std::string> layers;
  /// Passes to run ("forward", "backward_data", "backward_filter", "backward" for pools); empty: all.
  std::vector<std::string> passes;
  bool cpu = true;                  ///< time the CPU algorithms
  bool cuda = true;                 ///< time the GPU algorithms when a GPU is present
  double direct_max_macs = 2e8;
  bool include_auto = true;         ///< add the chooser's pick as algorithm "auto"
};

/// One timing. `chosen` is the algorithm the chooser picked (auto rows only).
struct BenchRecord {
  std::string layer, algorithm, device, pass;
  double seconds = 0;
  std::int64_t channels = 0, kernel = 0;
  std::string chosen;
  std::int64_t image = 0;  ///< input height (= width)
};

/// The names of the built-in layers, e.g. "lenet_conv1", "vgg_64_32x32".
std::vector<std::string> bench_layer_names();

/// Runs the benchmark. ValueError for an unknown dtype or layer name. An
/// algorithm that cannot run a case on its device (a DeviceError for its
/// workspace or in its warm-up, e.g. out of GPU memory) has no record there.
std::vector<BenchRecord> run_benchmark(const BenchOptions& options = {});

}  // namespace magmadnn::conv

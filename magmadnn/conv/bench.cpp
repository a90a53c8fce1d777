#include "magmadnn/conv/bench.h"

#include <algorithm>
#include <optional>

#include "magmadnn/backend/registry.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/pool_chooser.h"
#include "magmadnn/conv/timing.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

struct Layer {
  std::string name;
  std::int64_t c, hw, k, rs, pad, stride = 1;
};

std::vector<Layer> all_layers() {
  std::vector<Layer> v = {{"lenet_conv1", 1, 32, 6, 5, 0}, {"lenet_conv2", 6, 14, 16, 5, 0}};
  // The resnet preset's convolutions (run/presets.cpp): the stem, each
  // block's 3x3 pair and the 1x1 projections of the two halving blocks.
  v.push_back({"resnet_stem", 1, 28, 16, 3, 1});
  v.push_back({"resnet_16_28x28", 16, 28, 16, 3, 1});
  v.push_back({"resnet_16to32_s2", 16, 28, 32, 3, 1, 2});
  v.push_back({"resnet_32_14x14", 32, 14, 32, 3, 1});
  v.push_back({"resnet_proj32_s2", 16, 28, 32, 1, 0, 2});
  v.push_back({"resnet_32to64_s2", 32, 14, 64, 3, 1, 2});
  v.push_back({"resnet_64_7x7", 64, 7, 64, 3, 1});
  v.push_back({"resnet_proj64_s2", 32, 14, 64, 1, 0, 2});
  for (std::int64_t hw : {32, 56})
    for (std::int64_t c : {64, 128, 256})
      v.push_back({"vgg_" + std::to_string(c) + "_" + std::to_string(hw) + "x" + std::to_string(hw), c, hw, c, 3, 1});
  v.push_back({"large7_32_56x56", 32, 56, 32, 7, 3});
  v.push_back({"large9_16_64x64", 16, 64, 16, 9, 4});
  return v;
}

template <typename T>
void bench_device(const BenchOptions& o, const std::vector<Layer>& layers, DeviceKind dev,
                  std::vector<BenchRecord>& out) {
  const std::string dname = dev == DeviceKind::CPU ? "cpu" : "cuda";
  const int repeats = std::max(1, o.repeats);
  const TimingRounds rounds{.max_rounds = repeats, .min_rounds = repeats};
  for (const Layer& l : layers) {
    ConvParams g;
    g.pad_h = g.pad_w = l.pad;
    g.stride_h = g.stride_w = l.stride;
    const ConvProblem pr = make_problem(Shape{o.batch, l.c, l.hw, l.hw}, Shape{l.k, l.c, l.rs, l.rs}, g);
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
      if (!o.passes.empty() && std::find(o.passes.begin(), o.passes.end(), pass_name(pass)) == o.passes.end()) continue;
      std::vector<ConvAlgorithm<T>*> cands;
      std::vector<std::string> labels;
      for (ConvAlgorithm<T>* a : algorithms<T>(dev)) {
        if (!a->supports(pr, pass)) continue;
        if (a->id() == Algo::Direct && pr.macs() > o.direct_max_macs) continue;
        cands.push_back(a);
        labels.push_back(algo_name(a->id()));
      }
      std::string chosen;
      if (o.include_auto) {
        ConvAlgorithm<T>& a = choose<T>(pr, pass, dev, 0);
        chosen = algo_name(a.id());
        cands.push_back(&a);
        labels.push_back("auto");
      }
      const std::vector<std::optional<double>> best = time_algorithms<T>(cands, pr, pass, dev, 0, rounds);
      for (std::size_t i = 0; i < cands.size(); ++i) {
        if (!best[i]) continue;  // could not run on this device (e.g. out of memory for its workspace)
        out.push_back({l.name, labels[i], dname, pass_name(pass), *best[i], l.c, l.rs,
                       labels[i] == "auto" ? chosen : "", l.hw});
      }
    }
  }
}

// LeNet-5's max pools as it trains them (batch from the options): ours
// ("pool_cpu") against oneDNN's, and the pool chooser's pick.
struct PoolLayer {
  std::string name;
  std::int64_t c, hw, k;
};
std::vector<PoolLayer> pool_layers() { return {{"lenet_pool1", 6, 28, 2}, {"lenet_pool2", 16, 10, 2}}; }

template <typename T>
void bench_pools(const BenchOptions& o, const std::vector<PoolLayer>& layers, std::vector<BenchRecord>& out) {
  auto label = [](const PoolImpl<T>* p) { return std::string(p->reference() ? "pool_" : "") + p->name(); };
  for (const PoolLayer& l : layers) {
    const Shape xs{o.batch, l.c, l.hw, l.hw};
    PoolParams p;
    p.kernel_h = p.kernel_w = p.stride_h = p.stride_w = l.k;
    for (const char* pass : {"forward", "backward"}) {
      if (!o.passes.empty() && std::find(o.passes.begin(), o.passes.end(), pass) == o.passes.end()) continue;
      const bool backward = std::string(pass) == "backward";
      std::vector<PoolImpl<T>*> impls = pool_impls<T>(DeviceKind::CPU);
      std::erase_if(impls, [&](PoolImpl<T>* i) { return !i->supports(xs, p); });
      std::string chosen;
      if (o.include_auto) {
        PoolImpl<T>* pick = choose_pool<T>(xs, p, backward, DeviceKind::CPU);
        chosen = label(pick);
        impls.push_back(pick);
      }
      const std::vector<double> t = time_pool_impls<T>(impls, xs, p, backward, std::max(1, o.repeats));
      for (std::size_t i = 0; i < impls.size(); ++i) {
        const bool is_auto = o.include_auto && i + 1 == impls.size();
        out.push_back({l.name, is_auto ? "auto" : label(impls[i]), "cpu", pass, t[i], l.c, l.k,
                       is_auto ? chosen : "", l.hw});
      }
    }
  }
}

}  // namespace

std::vector<std::string> bench_layer_names() {
  std::vector<std::string> v;
  for (const Layer& l : all_layers()) v.push_back(l.name);
  for (const PoolLayer& l : pool_layers()) v.push_back(l.name);
  return v;
}

std::vector<BenchRecord> run_benchmark(const BenchOptions& o) {
  MAGMADNN_CHECK(o.dtype == "float" || o.dtype == "double", ValueError,
                 "bench conv: dtype must be float or double, got '" << o.dtype << "'");
  MAGMADNN_CHECK(o.batch >= 1, ValueError, "bench conv: batch must be >= 1, got " << o.batch);
  auto wanted = [&](const std::string& name) {
    return o.layers.empty() || std::find(o.layers.begin(), o.layers.end(), name) != o.layers.end();
  };
  std::vector<Layer> layers;
  for (const Layer& l : all_layers())
    if (wanted(l.name)) layers.push_back(l);
  std::vector<PoolLayer> pools;
  for (const PoolLayer& l : pool_layers())
    if (wanted(l.name)) pools.push_back(l);
  for (const std::string& n : o.layers) {
    const auto names = bench_layer_names();
    if (std::find(names.begin(), names.end(), n) == names.end()) {
      std::string valid;
      for (const auto& v : names) valid += (valid.empty() ? "" : ", ") + v;
      MAGMADNN_THROW(ValueError, "bench conv: unknown layer '" << n << "'; layers: " << valid);
    }
  }
  std::vector<BenchRecord> out;
  std::vector<DeviceKind> devs;
  if (o.cpu) devs.push_back(DeviceKind::CPU);
  if (o.cuda && has_cuda_device()) devs.push_back(DeviceKind::CUDA);
  for (DeviceKind d : devs) {
    if (o.dtype == "float") {
      bench_device<float>(o, layers, d, out);
      if (d == DeviceKind::CPU) bench_pools<float>(o, pools, out);
    } else {
      bench_device<double>(o, layers, d, out);
      if (d == DeviceKind::CPU) bench_pools<double>(o, pools, out);
    }
  }
  return out;
}

}  // namespace magmadnn::conv

// Every distinct convolution of ResNet-50 v1.5 (the `resnet50` preset) at
// batch 32, 224 x 224, timed alone in its three passes: magmadnn's path
// (conv::conv2d_forward / backward_data / backward_filter on host tensors,
// the chooser's algorithm, in the channel-blocked layouts the network keeps,
// the result's allocation and any reorder included) against the fastest
// oneDNN primitive for the problem (resnet50_conv_floor.h: oneDNN timed
// alone, its operands already in the layouts it asked for).
//
// Runs alternate: in each round every contender of a pass runs once, so
// load on a shared machine falls on all of them alike. Each figure is the
// fastest run of the rounds.
//
// Usage: bench_resnet50_convs [--batch B] [--rounds R] [--layer NAME]
//   (threads: OMP_NUM_THREADS; the chooser's cache: MAGMADNN_CONV_CACHE)
// Prints one row per (layer, pass): both times, the ratio ours / oneDNN,
// what ran on each side, and the per-step totals weighted by how often
// each convolution occurs in the network.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/layout.h"
#include "resnet50_conv_floor.h"

using namespace magmadnn;

namespace {

Tensor<float> random_tensor(const Shape& s, unsigned seed) {
  Tensor<float> t(s, HOST);
  float* p = t.mutable_data();
  std::uint32_t x = seed * 2654435761u + 1;
  for (std::int64_t i = 0; i < t.size(); ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return t;
}

conv::Pass to_conv(r50::Pass p) {
  return p == r50::Pass::Forward        ? conv::Pass::Forward
         : p == r50::Pass::BackwardData ? conv::Pass::BackwardData
                                        : conv::Pass::BackwardFilter;
}

// magmadnn's call of `pass`, as a network of blocked activations makes it.
std::function<void()> ours(const conv::ConvProblem& pr, conv::Pass pass, const conv::Blocks& b) {
  const conv::ConvParams geom = pr.geom;
  auto x = std::make_shared<Tensor<float>>(random_tensor(pr.x_shape(), 1));
  auto w = std::make_shared<Tensor<float>>(random_tensor(pr.w_shape(), 2));
  auto dy = std::make_shared<Tensor<float>>(random_tensor(pr.y_shape(), 3));
  switch (pass) {
    case conv::Pass::Forward:
      return [=] { (void)conv::conv2d_forward<float>(*x, *w, nullptr, geom, conv::Algo::Auto, false, true, b); };
    case conv::Pass::BackwardData:
      return [=] { (void)conv::conv2d_backward_data(*dy, *w, x->shape(), geom, conv::Algo::Auto, b); };
    case conv::Pass::BackwardFilter:
      return [=] {
        (void)conv::conv2d_backward_filter<float>(*x, *dy, w->shape(), geom, conv::Algo::Auto, nullptr, b);
      };
  }
  return {};
}

struct Row {
  double ours = 1e300, floor = 1e300;
  std::string our_algo, floor_impl;
};

// Times our pass against every oneDNN description of it, alternating.
Row time_pass(const r50::Layer& l, std::int64_t batch, r50::Pass p, int rounds) {
  const conv::Pass pass = to_conv(p);
  conv::ConvParams geom;
  geom.stride_h = geom.stride_w = l.stride;
  geom.pad_h = geom.pad_w = l.pad;
  const int block = conv::blocked_layout_block();
  conv::ConvProblem pr = conv::make_problem(Shape({batch, l.c, l.h, l.h}), Shape({l.k, l.c, l.r, l.r}), geom);
  const conv::Blocks b{l.first ? 0 : block, block};
  std::function<void()> mine = ours(pr, pass, b);
  std::vector<r50::Prim> prims = r50::floor_candidates(l, batch, p);
  dnnl::stream s(r50::engine());
  Row row;
  std::vector<double> best(prims.size(), 1e300);
  mine();  // warm-up: the chooser's measuring, plans, first touch
  for (auto& q : prims) q.run(s);
  for (int i = 0; i < rounds; ++i) {
    double t0 = r50::now();
    mine();
    row.ours = std::min(row.ours, r50::now() - t0);
    for (std::size_t j = 0; j < prims.size(); ++j) {
      t0 = r50::now();
      prims[j].run(s);
      best[j] = std::min(best[j], r50::now() - t0);
    }
  }
  for (std::size_t j = 0; j < prims.size(); ++j) {
    if (best[j] < row.floor) row.floor = best[j], row.floor_impl = prims[j].impl;
  }
  pr.x_block = b.x, pr.y_block = b.y;
  const std::optional<conv::Choice> c = conv::cached_choice<float>(pr, pass, DeviceKind::CPU);
  row.our_algo = c ? conv::algo_name(c->algo) : "onednn (only reader)";
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 32;
  int rounds = 5;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--layer")) only = argv[i + 1];
  }
  std::printf("ResNet-50 convolutions, batch %lld, %d threads, block %d, oneDNN %s, fastest of %d alternating rounds\n",
              static_cast<long long>(batch), omp_get_max_threads(), conv::blocked_layout_block(),
              onednn_compat::runtime_version().c_str(), rounds);
  std::printf("%-24s %3s %-16s %10s %10s %6s  %-22s %s\n", "layer", "x", "pass", "ours ms", "oneDNN ms", "ratio",
              "our algorithm", "oneDNN floor");
  double total_ours[3] = {0, 0, 0}, total_floor[3] = {0, 0, 0};
  const r50::Pass passes[] = {r50::Pass::Forward, r50::Pass::BackwardData, r50::Pass::BackwardFilter};
  for (const r50::Layer& l : r50::layers()) {
    if (!only.empty() && only != l.name) continue;
    for (r50::Pass pass : passes) {
      if (l.first && pass == r50::Pass::BackwardData) continue;
      const Row r = time_pass(l, batch, pass, rounds);
      const int pi = static_cast<int>(pass);
      total_ours[pi] += l.count * r.ours;
      total_floor[pi] += l.count * r.floor;
      std::printf("%-24s %3d %-16s %10.2f %10.2f %6.2f  %-22s %s\n", l.name, l.count, r50::pass_name(pass),
                  1e3 * r.ours, 1e3 * r.floor, r.ours / r.floor, r.our_algo.c_str(), r.floor_impl.c_str());
      std::fflush(stdout);
    }
  }
  std::printf("per step, weighted by occurrence (53 convolutions):\n");
  double all_ours = 0, all_floor = 0;
  for (r50::Pass pass : passes) {
    const int pi = static_cast<int>(pass);
    all_ours += total_ours[pi], all_floor += total_floor[pi];
    std::printf("  %-16s ours %8.1f ms  oneDNN %8.1f ms  ratio %.2f\n", r50::pass_name(pass), 1e3 * total_ours[pi],
                1e3 * total_floor[pi], total_ours[pi] / total_floor[pi]);
  }
  std::printf("  %-16s ours %8.1f ms  oneDNN %8.1f ms  ratio %.2f\n", "all", 1e3 * all_ours, 1e3 * all_floor,
              all_ours / all_floor);
  return 0;
}

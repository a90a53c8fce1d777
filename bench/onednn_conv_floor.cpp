// The oneDNN floor of every distinct ResNet-50 convolution alone
// (resnet50_conv_floor.h), for comparing oneDNN versions: it depends on
// oneDNN only, so the same source builds against Debian 12's oneDNN 2.6 and
// Debian 13's 3.7 (e.g. in a trixie root:
//   g++ -O2 -std=c++20 -fopenmp -I. bench/onednn_conv_floor.cpp \
//       magmadnn/backend/cpu/onednn_compat.cpp -ldnnl -o floor37).
//
// Usage: bench_onednn_conv_floor [--batch B] [--rounds R] [--layer NAME]
//   (threads: OMP_NUM_THREADS)
// Prints, per (layer, pass), the fastest run of R rounds of the fastest
// description and its kernel, and the per-step totals weighted by how
// often each convolution occurs in the network.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "resnet50_conv_floor.h"

int main(int argc, char** argv) {
  std::int64_t batch = 32;
  int rounds = 5;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--layer")) only = argv[i + 1];
  }
  std::printf("oneDNN %s floor, ResNet-50 convolutions, batch %lld, %d threads, fastest of %d rounds\n",
              magmadnn::onednn_compat::runtime_version().c_str(), static_cast<long long>(batch),
              omp_get_max_threads(), rounds);
  double total[3] = {0, 0, 0};
  dnnl::stream s(r50::engine());
  for (const r50::Layer& l : r50::layers()) {
    if (!only.empty() && only != l.name) continue;
    for (r50::Pass pass : {r50::Pass::Forward, r50::Pass::BackwardData, r50::Pass::BackwardFilter}) {
      if (l.first && pass == r50::Pass::BackwardData) continue;
      std::vector<r50::Prim> prims = r50::floor_candidates(l, batch, pass);
      std::vector<double> best(prims.size(), 1e300);
      for (auto& p : prims) p.run(s);
      for (int i = 0; i < rounds; ++i) {
        for (std::size_t j = 0; j < prims.size(); ++j) {
          const double t0 = r50::now();
          prims[j].run(s);
          best[j] = std::min(best[j], r50::now() - t0);
        }
      }
      const auto j = static_cast<std::size_t>(std::min_element(best.begin(), best.end()) - best.begin());
      total[static_cast<int>(pass)] += l.count * best[j];
      std::printf("%-24s %3d %-16s %10.2f ms  %s\n", l.name, l.count, r50::pass_name(pass), 1e3 * best[j],
                  prims[j].impl.c_str());
      std::fflush(stdout);
    }
  }
  std::printf("per step, weighted: forward %.1f ms, backward_data %.1f ms, backward_filter %.1f ms, all %.1f ms\n",
              1e3 * total[0], 1e3 * total[1], 1e3 * total[2], 1e3 * (total[0] + total[1] + total[2]));
  return 0;
}

#include "magmadnn/conv/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "magmadnn/backend/device_buffer.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/half.h"

namespace magmadnn::conv {
namespace {

// n uniform numbers in [-1, 1) in the device's memory: a tile of kTile
// drawn from Philox, repeated by doubling copies. The values only need to be
// ordinary numbers (no zeros or denormals for a kernel to skip); drawing all
// of them cost a tenth of the chooser's time on the CPU (Philox per element,
// three buffers of up to a few million elements per problem).
template <typename T>
void fill_random(Backend& be, DeviceKind device, device_t dev, T* p, std::int64_t n, std::uint64_t stream) {
  constexpr std::uint64_t kSeed = 7;
  constexpr std::int64_t kTile = 4096;
  const std::int64_t drawn = std::min(n, kTile);
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    DeviceBuffer f(be, sizeof(float) * drawn, dev);
    kernels<float>(be).fill_uniform(f.as<float>(), drawn, -1.f, 1.f, kSeed, stream);
    be.convert(dtype::f32, f.data(), dtype_v<T>, p, drawn);
  } else {
    kernels<T>(be).fill_uniform(p, drawn, T(-1), T(1), kSeed, stream);
  }
  const CopyKind kind = device == DeviceKind::CPU ? CopyKind::HostToHost : CopyKind::DeviceToDevice;
  for (std::int64_t done = drawn; done < n;) {
    const std::int64_t k = std::min(done, n - done);
    be.copy(p + done, p, sizeof(T) * static_cast<std::size_t>(k), kind, dev);
    done += k;
  }
}

// The random x, w and y (standing for dy in the backward passes) of a problem.
template <typename T>
class Inputs {
 public:
  Inputs(const ConvProblem& pr, Backend& be, DeviceKind device, device_t dev)
      : x_(be, sizeof(T) * pr.x_shape().numel(), dev),
        w_(be, sizeof(T) * pr.w_shape().numel(), dev),
        y_(be, sizeof(T) * pr.y_shape().numel(), dev) {
    fill_random(be, device, dev, x(), pr.x_shape().numel(), 1);
    fill_random(be, device, dev, w(), pr.w_shape().numel(), 2);
    fill_random(be, device, dev, y(), pr.y_shape().numel(), 3);
  }
  T* x() const noexcept { return x_.as<T>(); }
  T* w() const noexcept { return w_.as<T>(); }
  T* y() const noexcept { return y_.as<T>(); }

 private:
  DeviceBuffer x_, w_, y_;
};

// One algorithm with its own workspace; run() does the pass once and waits
// for the device, returning the seconds it took.
template <typename T>
struct Candidate {
  ConvAlgorithm<T>& a;
  DeviceBuffer ws;
  Candidate(ConvAlgorithm<T>& al, const ConvProblem& pr, Pass pass, Backend& be, device_t dev)
      : a(al), ws(be, al.workspace_bytes(pr, pass), dev) {}
  double run(const ConvProblem& pr, Pass pass, Backend& be, device_t dev, const Inputs<T>& in) {
    T *x = in.x(), *w = in.w(), *y = in.y();
    const auto t0 = std::chrono::steady_clock::now();
    switch (pass) {
      case Pass::Forward: a.forward(pr, x, w, nullptr, y, ws.data()); break;
      case Pass::BackwardData: a.backward_data(pr, y, w, x, ws.data()); break;
      case Pass::BackwardFilter: a.backward_filter(pr, x, y, w, nullptr, ws.data()); break;
    }
    be.synchronize(dev);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

}  // namespace

template <typename T>
std::vector<std::optional<double>> time_algorithms(const std::vector<ConvAlgorithm<T>*>& candidates,
                                                   const ConvProblem& pr, Pass pass, DeviceKind device,
                                                   device_t dev, const TimingRounds& rounds) {
  Backend& be = backend_for(device);
  be.set_device(dev);
  Inputs<T> in(pr, be, device, dev);
  std::vector<std::unique_ptr<Candidate<T>>> runs;  // null: could not run
  for (ConvAlgorithm<T>* a : candidates) {
    try {
      auto c = std::make_unique<Candidate<T>>(*a, pr, pass, be, dev);
      c->run(pr, pass, be, dev, in);  // the warm-up
      runs.push_back(std::move(c));
    } catch (const DeviceError&) {
      runs.push_back(nullptr);  // e.g. out of device memory for this workspace
    }
  }
  const std::size_t n = runs.size();
  std::vector<double> best(n, std::numeric_limits<double>::infinity());
  std::vector<bool> active(n);
  for (std::size_t i = 0; i < n; ++i) active[i] = runs[i] != nullptr;
  double total = 0;
  const int max_rounds = std::max(1, rounds.max_rounds);
  for (int round = 0; round < max_rounds && (round < rounds.min_rounds || total < rounds.budget_seconds); ++round) {
    if (std::count(active.begin(), active.end(), true) == 0) break;
    for (std::size_t i = 0; i < n; ++i) {
      if (!active[i]) continue;
      const double dt = runs[i]->run(pr, pass, be, dev, in);
      best[i] = std::min(best[i], dt);
      total += dt;
    }
    double ratio = rounds.drop_ratio > 0 ? rounds.drop_ratio : std::numeric_limits<double>::infinity();
    if (round + 1 >= rounds.min_rounds && rounds.settle_ratio > 0) ratio = std::min(ratio, rounds.settle_ratio);
    if (std::isfinite(ratio)) {
      const double leader = *std::min_element(best.begin(), best.end());
      for (std::size_t i = 0; i < n; ++i) active[i] = active[i] && best[i] < ratio * leader;
      if (std::count(active.begin(), active.end(), true) <= 1) break;  // nothing left to compare
    }
  }
  std::vector<std::optional<double>> out(n);
  for (std::size_t i = 0; i < n; ++i)
    if (runs[i]) out[i] = best[i];
  return out;
}

template std::vector<std::optional<double>> time_algorithms<float>(const std::vector<ConvAlgorithm<float>*>&,
                                                                   const ConvProblem&, Pass, DeviceKind, device_t,
                                                                   const TimingRounds&);
template std::vector<std::optional<double>> time_algorithms<double>(const std::vector<ConvAlgorithm<double>*>&,
                                                                    const ConvProblem&, Pass, DeviceKind, device_t,
                                                                    const TimingRounds&);
template std::vector<std::optional<double>> time_algorithms<half>(const std::vector<ConvAlgorithm<half>*>&,
                                                                  const ConvProblem&, Pass, DeviceKind, device_t,
                                                                  const TimingRounds&);
template std::vector<std::optional<double>> time_algorithms<bfloat16>(const std::vector<ConvAlgorithm<bfloat16>*>&,
                                                                      const ConvProblem&, Pass, DeviceKind, device_t,
                                                                      const TimingRounds&);

}  // namespace magmadnn::conv

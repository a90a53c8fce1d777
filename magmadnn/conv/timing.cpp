#include "magmadnn/conv/timing.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <type_traits>

#include "magmadnn/backend/device_buffer.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/half.h"

namespace magmadnn::conv {
namespace {

// n uniform numbers in [-1, 1) in the device's memory. Half and bfloat16
// have no kernels of their own: they are drawn in float and converted.
template <typename T>
void fill_random(Backend& be, device_t dev, T* p, std::int64_t n, std::uint64_t stream) {
  constexpr std::uint64_t kSeed = 7;
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    DeviceBuffer f(be, sizeof(float) * n, dev);
    kernels<float>(be).fill_uniform(f.as<float>(), n, -1.f, 1.f, kSeed, stream);
    be.convert(dtype::f32, f.data(), dtype_v<T>, p, n);
  } else {
    kernels<T>(be).fill_uniform(p, n, T(-1), T(1), kSeed, stream);
  }
}

// The random x, w and y (standing for dy in the backward passes) of a problem.
template <typename T>
class Inputs {
 public:
  Inputs(const ConvProblem& pr, Backend& be, device_t dev)
      : x_(be, sizeof(T) * pr.x_shape().numel(), dev),
        w_(be, sizeof(T) * pr.w_shape().numel(), dev),
        y_(be, sizeof(T) * pr.y_shape().numel(), dev) {
    fill_random(be, dev, x(), pr.x_shape().numel(), 1);
    fill_random(be, dev, w(), pr.w_shape().numel(), 2);
    fill_random(be, dev, y(), pr.y_shape().numel(), 3);
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
  Inputs<T> in(pr, be, dev);
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
    if (rounds.drop_ratio > 0) {
      const double leader = *std::min_element(best.begin(), best.end());
      for (std::size_t i = 0; i < n; ++i) active[i] = active[i] && best[i] < rounds.drop_ratio * leader;
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

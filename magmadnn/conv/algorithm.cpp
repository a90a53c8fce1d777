// The algorithm registry. Each algorithm's translation unit registers itself
// from a static initializer, possibly before anything else in this file runs,
// so the list lives in a function-local static (constructed on first use).
#include "magmadnn/conv/algorithm.h"

#include <algorithm>
#include <mutex>

#include "magmadnn/backend/registry.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {

namespace {
constexpr Algo kAll[] = {Algo::Auto,         Algo::Direct, Algo::Im2colGemm, Algo::WinogradF2x2,
                         Algo::WinogradF4x4, Algo::FFT,    Algo::OneDNN, Algo::CuDNN, Algo::Sliding};

template <typename T>
struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<ConvAlgorithm<T>>> algos;
};
template <typename T>
Registry<T>& registry() {
  static Registry<T> r;
  return r;
}
}  // namespace

const char* algo_name(Algo a) noexcept {
  switch (a) {
    case Algo::Auto: return "auto";
    case Algo::Direct: return "direct";
    case Algo::Im2colGemm: return "im2col";
    case Algo::WinogradF2x2: return "winograd_f2x2";
    case Algo::WinogradF4x4: return "winograd_f4x4";
    case Algo::FFT: return "fft";
    case Algo::OneDNN: return "onednn";
    case Algo::CuDNN: return "cudnn";
    case Algo::Sliding: return "sliding";
  }
  return "?";
}

Algo parse_algo(const std::string& name) {
  for (Algo a : kAll) {
    if (name == algo_name(a)) return a;
  }
  std::string valid;
  for (Algo a : kAll) valid += std::string(valid.empty() ? "" : ", ") + algo_name(a);
  MAGMADNN_THROW(ValueError, "unknown convolution algorithm '" << name << "'; valid names: " << valid);
}

const char* pass_name(Pass p) noexcept {
  switch (p) {
    case Pass::Forward: return "forward";
    case Pass::BackwardData: return "backward_data";
    case Pass::BackwardFilter: return "backward_filter";
  }
  return "?";
}

template <typename T>
std::vector<ConvAlgorithm<T>*> algorithms(DeviceKind device) {
  if (device == DeviceKind::CUDA && !has_cuda_device()) return {};
  Registry<T>& r = registry<T>();
  std::lock_guard lock(r.mu);
  std::vector<ConvAlgorithm<T>*> out;
  for (auto& a : r.algos) {
    if (a->device() == device) out.push_back(a.get());
  }
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->id() < b->id(); });
  return out;
}

template <typename T>
ConvAlgorithm<T>* find_algorithm(Algo id, DeviceKind device) {
  for (ConvAlgorithm<T>* a : algorithms<T>(device)) {
    if (a->id() == id) return a;
  }
  return nullptr;
}

namespace detail {
template <typename T>
void register_algorithm(std::unique_ptr<ConvAlgorithm<T>> algo) {
  Registry<T>& r = registry<T>();
  std::lock_guard lock(r.mu);
  for (auto& a : r.algos) {
    // A second registration of the same (id, device) would make the choice ambiguous.
    if (a->id() == algo->id() && a->device() == algo->device()) return;
  }
  r.algos.push_back(std::move(algo));
}
template void register_algorithm<float>(std::unique_ptr<ConvAlgorithm<float>>);
template void register_algorithm<double>(std::unique_ptr<ConvAlgorithm<double>>);
template void register_algorithm<half>(std::unique_ptr<ConvAlgorithm<half>>);
template void register_algorithm<bfloat16>(std::unique_ptr<ConvAlgorithm<bfloat16>>);
}  // namespace detail

template std::vector<ConvAlgorithm<float>*> algorithms<float>(DeviceKind);
template std::vector<ConvAlgorithm<double>*> algorithms<double>(DeviceKind);
template ConvAlgorithm<float>* find_algorithm<float>(Algo, DeviceKind);
template ConvAlgorithm<double>* find_algorithm<double>(Algo, DeviceKind);
template std::vector<ConvAlgorithm<half>*> algorithms<half>(DeviceKind);
template ConvAlgorithm<half>* find_algorithm<half>(Algo, DeviceKind);
template std::vector<ConvAlgorithm<bfloat16>*> algorithms<bfloat16>(DeviceKind);
template ConvAlgorithm<bfloat16>* find_algorithm<bfloat16>(Algo, DeviceKind);

}  // namespace magmadnn::conv

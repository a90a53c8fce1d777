// The pooling registry: like algorithm.cpp, a function-local static so that
// registrations from static initializers in other translation units (the CPU
// and CUDA implementations) work whatever the initialization order.
#include "magmadnn/conv/pool_impl.h"

#include <algorithm>
#include <mutex>
#include <string_view>
#include <vector>

#include "magmadnn/backend/registry.h"

namespace magmadnn::conv {

namespace {
template <typename T>
struct PoolRegistry {
  std::mutex mu;
  std::vector<std::unique_ptr<PoolImpl<T>>> impls;
};
template <typename T>
PoolRegistry<T>& pool_registry() {
  static PoolRegistry<T> r;
  return r;
}
}  // namespace

template <typename T>
std::vector<PoolImpl<T>*> pool_impls(DeviceKind device) {
  if (device == DeviceKind::CUDA && !has_cuda_device()) return {};
  PoolRegistry<T>& r = pool_registry<T>();
  std::lock_guard lock(r.mu);
  std::vector<PoolImpl<T>*> out;
  for (auto& p : r.impls) {
    if (p->device() == device) out.push_back(p.get());
  }
  std::stable_partition(out.begin(), out.end(), [](auto* p) { return p->reference(); });
  return out;
}

template <typename T>
PoolImpl<T>* find_pool_impl(DeviceKind device) {
  const std::vector<PoolImpl<T>*> all = pool_impls<T>(device);
  return !all.empty() && all.front()->reference() ? all.front() : nullptr;
}

namespace detail {
template <typename T>
void register_pool_impl(std::unique_ptr<PoolImpl<T>> impl) {
  PoolRegistry<T>& r = pool_registry<T>();
  std::lock_guard lock(r.mu);
  for (auto& p : r.impls) {
    if (p->device() == impl->device() && std::string_view(p->name()) == impl->name()) return;
  }
  r.impls.push_back(std::move(impl));
}
template void register_pool_impl<float>(std::unique_ptr<PoolImpl<float>>);
template void register_pool_impl<double>(std::unique_ptr<PoolImpl<double>>);
}  // namespace detail

template PoolImpl<float>* find_pool_impl<float>(DeviceKind);
template PoolImpl<double>* find_pool_impl<double>(DeviceKind);
template std::vector<PoolImpl<float>*> pool_impls<float>(DeviceKind);
template std::vector<PoolImpl<double>*> pool_impls<double>(DeviceKind);

}  // namespace magmadnn::conv

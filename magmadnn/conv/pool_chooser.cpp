#include "magmadnn/conv/pool_chooser.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>

#include "magmadnn/core/determinism.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/types.h"

namespace magmadnn::conv {
namespace {

struct PoolState {
  std::mutex mu;
  std::map<std::string, PoolChoice> choices;
  std::string forced;
};
PoolState& pool_state() {
  static PoolState s;
  return s;
}

template <typename T>
std::string key_of(const Shape& x, const PoolParams& p, bool backward, DeviceKind device) {
  std::string k = std::string(device == DeviceKind::CPU ? "cpu" : "cuda") + " " + dtype_name(dtype_v<T>) +
                  (backward ? " backward " : " forward ");
  for (std::int64_t d : {x[0], x[1], x[2], x[3], p.kernel_h, p.kernel_w, p.pad_h, p.pad_w, p.stride_h, p.stride_w})
    k += std::to_string(d) + ",";
  return k + (p.mode == PoolMode::Max ? "max" : p.count_include_pad ? "avg_incl" : "avg_excl");
}

}  // namespace

// On host buffers: only the CPU has more than one implementation.
template <typename T>
std::vector<double> time_pool_impls(const std::vector<PoolImpl<T>*>& cands, const Shape& xs, const PoolParams& p,
                                    bool backward, int rounds) {
  const Shape ys = pool_output_shape(xs, p);
  std::vector<T> x(static_cast<std::size_t>(xs.numel())), dx(x.size());
  std::vector<T> y(static_cast<std::size_t>(ys.numel())), dy(y.size());
  std::uint64_t s = 12345;
  for (auto* v : {&x, &dy})
    for (T& e : *v) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      e = static_cast<T>(double(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
  std::vector<std::int32_t> argmax(y.size()), scratch(y.size());  // scratch: what timed forwards write
  std::int32_t* am = p.mode == PoolMode::Max ? argmax.data() : nullptr;
  cands.front()->forward(xs, p, x.data(), y.data(), am);  // the argmax a backward pass reads
  auto once = [&](PoolImpl<T>* c) {
    const auto t0 = std::chrono::steady_clock::now();
    if (backward) {
      c->backward(xs, p, x.data(), dy.data(), am, dx.data());
    } else {
      c->forward(xs, p, x.data(), y.data(), am ? scratch.data() : nullptr);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> best(cands.size(), std::numeric_limits<double>::infinity());
  for (PoolImpl<T>* c : cands) once(c);
  for (int round = 0; round < rounds; ++round)
    for (std::size_t i = 0; i < cands.size(); ++i) best[i] = std::min(best[i], once(cands[i]));
  return best;
}

namespace {

template <typename T>
PoolImpl<T>* by_name(DeviceKind device, const std::string& name, const Shape& xs, const PoolParams& p) {
  for (PoolImpl<T>* c : pool_impls<T>(device)) {
    if (name != c->name()) continue;
    MAGMADNN_CHECK(c->supports(xs, p), NotSupportedError,
                   "pooling: forced implementation '" << name << "' does not support input " << xs << " with window "
                                                      << p.kernel_h << "x" << p.kernel_w);
    return c;
  }
  MAGMADNN_THROW(NotSupportedError, "pooling: forced implementation '"
                                        << name << "' does not exist for " << dtype_name(dtype_v<T>) << " on the "
                                        << (device == DeviceKind::CPU ? "CPU" : "GPU") << " in this build");
}

}  // namespace

template <typename T>
PoolImpl<T>* choose_pool(const Shape& xs, const PoolParams& p, bool backward, DeviceKind device) {
  PoolState& st = pool_state();
  std::string forced;
  {
    std::lock_guard lock(st.mu);
    forced = st.forced;
  }
  if (forced.empty()) {
    const char* env = std::getenv("MAGMADNN_POOL_IMPL");
    if (env) forced = env;
  }
  if (!forced.empty()) return by_name<T>(device, forced, xs, p);

  std::vector<PoolImpl<T>*> cands = pool_impls<T>(device);
  std::erase_if(cands, [&](PoolImpl<T>* c) { return !c->supports(xs, p); });
  if (cands.empty()) return nullptr;
  if (cands.size() == 1 || device != DeviceKind::CPU) return find_pool_impl<T>(device);
  // Deterministic algorithms: no timing, the first registered (ours).
  if (deterministic_algorithms()) return cands.front();

  std::lock_guard lock(st.mu);  // held while timing, so a key is timed once
  const std::string key = key_of<T>(xs, p, backward, device);
  auto it = st.choices.find(key);
  if (it == st.choices.end()) {
    const std::vector<double> t = time_pool_impls<T>(cands, xs, p, backward);
    PoolChoice c;
    std::size_t best = 0;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      c.times.emplace_back(cands[i]->name(), t[i]);
      if (t[i] < t[best]) best = i;
    }
    c.name = cands[best]->name();
    it = st.choices.emplace(key, std::move(c)).first;
  }
  for (PoolImpl<T>* c : cands)
    if (it->second.name == c->name()) return c;
  return cands.front();
}

template <typename T>
std::optional<PoolChoice> cached_pool_choice(const Shape& xs, const PoolParams& p, bool backward, DeviceKind device) {
  std::lock_guard lock(pool_state().mu);
  auto it = pool_state().choices.find(key_of<T>(xs, p, backward, device));
  if (it == pool_state().choices.end()) return std::nullopt;
  return it->second;
}

void set_forced_pool_impl(const std::string& name) {
  std::lock_guard lock(pool_state().mu);
  pool_state().forced = name;
}

void clear_pool_choices() {
  std::lock_guard lock(pool_state().mu);
  pool_state().choices.clear();
}

template PoolImpl<float>* choose_pool<float>(const Shape&, const PoolParams&, bool, DeviceKind);
template PoolImpl<double>* choose_pool<double>(const Shape&, const PoolParams&, bool, DeviceKind);
template std::optional<PoolChoice> cached_pool_choice<float>(const Shape&, const PoolParams&, bool, DeviceKind);
template std::vector<double> time_pool_impls<float>(const std::vector<PoolImpl<float>*>&, const Shape&,
                                                    const PoolParams&, bool, int);
template std::vector<double> time_pool_impls<double>(const std::vector<PoolImpl<double>*>&, const Shape&,
                                                     const PoolParams&, bool, int);
template std::optional<PoolChoice> cached_pool_choice<double>(const Shape&, const PoolParams&, bool, DeviceKind);

}  // namespace magmadnn::conv

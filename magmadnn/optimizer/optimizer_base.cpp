#include "magmadnn/optimizer/optimizer_base.h"

#include <optional>

#include "magmadnn/compute/profiler.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::optimizer {
namespace {
// Runs f on leaving the scope, also by an exception.
template <typename F>
struct OnExit {
  F f;
  ~OnExit() { f(); }
};
template <typename F>
OnExit(F) -> OnExit<F>;
}  // namespace

template <typename T>
Optimizer<T>::Optimizer(double learning_rate) : base_lr_(learning_rate) {
  MAGMADNN_CHECK(learning_rate >= 0.0, ValueError, "optimizer: learning rate must be >= 0, got " << learning_rate);
}

template <typename T>
double Optimizer<T>::learning_rate() const {
  return schedule_ ? schedule_->lr(base_lr_, steps_) : base_lr_;
}

template <typename T>
void Optimizer<T>::set_weight_decay(double decay, WeightDecay mode) {
  MAGMADNN_CHECK(decay >= 0.0, ValueError, "optimizer: weight decay must be >= 0, got " << decay);
  decay_ = decay;
  decay_mode_ = mode;
}

template <typename T>
typename Optimizer<T>::ParamState& Optimizer<T>::state_of(const op::Expr<T>& var) {
  auto it = states_.find(var.get());
  if (it != states_.end()) return it->second;
  const Tensor<T>& p = op::as_variable(var, "optimizer").value();
  ParamState st{var.ptr(), var->get_name(), {}, {}};
  for (std::size_t i = 0; i < slot_names().size(); ++i) {
    Tensor<T> s(p.shape(), p.get_memory_type(), p.get_device_id());
    math::fill(s, T(0));
    st.slots.push_back(std::move(s));
  }
  order_.push_back(var.get());
  return states_.emplace(var.get(), std::move(st)).first->second;
}

template <typename T>
void Optimizer<T>::init_state(const std::vector<op::Expr<T>>& vars) {
  for (const auto& v : vars) state_of(v);
}

template <typename T>
std::vector<std::pair<std::string, Tensor<T>*>> Optimizer<T>::slots_of(const op::Expr<T>& var) {
  ParamState& st = state_of(var);
  const auto names = slot_names();
  std::vector<std::pair<std::string, Tensor<T>*>> out;
  for (std::size_t i = 0; i < st.slots.size(); ++i) out.emplace_back(names[i], &st.slots[i]);
  return out;
}

template <typename T>
void Optimizer<T>::minimize(const op::Expr<T>& loss, const std::vector<op::Expr<T>>& vars) {
  if (const auto u = in_place_update()) {
    op::backward_update<T>(loss, vars, *u);
    count_in_place_step();
    return;
  }
  op::GradTable<T> grads = op::compute_gradients<T>(loss, vars);
  step(vars, grads);
}

template <typename T>
std::optional<op::InPlaceUpdate<T>> Optimizer<T>::in_place_update() const {
  if (!update_is_plain_descent()) return std::nullopt;
  if (decay_ > 0.0 && decay_mode_ == WeightDecay::L2 && !l2_is_decoupled()) return std::nullopt;
  const double lr = learning_rate();
  return op::InPlaceUpdate<T>{static_cast<T>(-lr), static_cast<T>(1.0 - lr * decay_)};
}

template <typename T>
void Optimizer<T>::step(const std::vector<op::Expr<T>>& vars, op::GradTable<T>& grads) {
  const double lr = learning_rate();
  ++steps_;
  for (const auto& v : vars) {
    op::Variable<T>& var = op::as_variable(v, "optimizer");
    const Tensor<T>* g = grads.get(v);
    MAGMADNN_CHECK(g != nullptr, ValueError, "optimizer: no gradient for variable '" << var.get_name() << "'");
    Tensor<T>& p = var.value();  // marks the variable changed
    MAGMADNN_CHECK(g->shape() == p.shape(), ShapeError,
                   "optimizer: gradient " << g->shape() << " for variable '" << var.get_name() << "' of shape "
                                          << p.shape());
    ParamState& st = state_of(v);
    param_ = &p;
    param_cache_ = &var.low_precision_cache();
    const auto sliced = slice_sums_.find(v.get());
    slice_sum_ = sliced == slice_sums_.end() ? nullptr : &sliced->second;
    const OnExit forget{[this] { param_ = nullptr, param_cache_ = nullptr, slice_sum_ = nullptr; }};
    std::optional<op::Profiler::Scope> scope;
    if (op::Profiler::enabled()) scope.emplace("optimizer", "update", var.get_name(), op::detail::device_sync_of(p));
    if (decay_ > 0.0 && decay_mode_ == WeightDecay::L2 && !l2_is_decoupled()) {
      if (st.decayed.shape() != g->shape() || st.decayed.get_memory_type() != g->get_memory_type()) {
        st.decayed = Tensor<T>(g->shape(), g->get_memory_type(), g->get_device_id());
      }
      st.decayed.copy_from(*g);
      math::axpy(static_cast<T>(decay_), p, st.decayed);
      update(p, st.decayed, lr, steps_, st.slots);
    } else {
      if (decay_ > 0.0) {
        update_decayed(p, *g, lr, steps_, st.slots, static_cast<T>(1.0 - lr * decay_));
      } else {
        update(p, *g, lr, steps_, st.slots);
      }
    }
  }
}

template <typename T>
void Optimizer<T>::write_param(T alpha, const Tensor<T>& x, T beta, Tensor<T>& param) {
  if (param_cache_ != nullptr && &param == param_) {
    param_cache_->axpby(alpha, x, beta, param);
  } else {
    math::axpby(alpha, x, beta, param);
  }
}

template <typename T>
void Optimizer<T>::set_slice_sum(const op::Expr<T>& var, SliceSum sum) {
  op::as_variable(var, "optimizer::set_slice_sum");
  if (sum) {
    slice_sums_[var.get()] = std::move(sum);
  } else {
    slice_sums_.erase(var.get());
  }
}

template <typename T>
void Optimizer<T>::sum_over_slices(double* partial, std::size_t n) const {
  if (slice_sum_ != nullptr && *slice_sum_) (*slice_sum_)(partial, n);
}

template <typename T>
void Optimizer<T>::update_decayed(Tensor<T>& p, const Tensor<T>& g, double lr, std::int64_t t,
                                  std::vector<Tensor<T>>& slots, T keep) {
  math::unary(UnaryOp::Scale, p, p, keep);
  update(p, g, lr, t, slots);
}

template <typename T>
std::map<std::string, Tensor<T>*> Optimizer<T>::state() {
  std::map<std::string, Tensor<T>*> out;
  const auto names = slot_names();
  for (const auto* key : order_) {
    ParamState& st = states_.at(key);
    std::string base = st.name;
    for (int k = 1; out.count(base + "/" + (names.empty() ? "" : names[0])) && !names.empty(); ++k) {
      base = st.name + "#" + std::to_string(k);
    }
    for (std::size_t i = 0; i < names.size(); ++i) out[base + "/" + names[i]] = &st.slots[i];
  }
  return out;
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace magmadnn::optimizer

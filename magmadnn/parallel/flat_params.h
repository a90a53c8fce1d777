/// @file flat_params.h
/// FlatParams<T>: a network's parameters laid end to end in one host array,
/// the layout every strategy exchanges (one message instead of one per
/// tensor). Internal to distributed/.
///
/// Requires: the parameters' storage can be read and written from the host
/// (host_data(); managed memory syncs itself). Guarantees: parameter i
/// occupies [offset(i), offset(i) + count(i)) in the order given to the
/// constructor; write_values() marks every parameter changed, so the next
/// evaluation recomputes what depends on it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "magmadnn/compute/variable.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::distributed::detail {

/// Copies a tensor's elements to host memory at dst.
template <typename T>
void read_tensor(const Tensor<T>& t, T* dst) {
  const T* p = t.host_data();
  std::copy(p, p + t.size(), dst);
}

/// Overwrites a tensor's elements with the host values at src.
template <typename T>
void write_tensor(Tensor<T>& t, const T* src) {
  std::copy(src, src + t.size(), t.mutable_host_data());
}

template <typename T>
class FlatParams {
 public:
  FlatParams() = default;
  explicit FlatParams(std::vector<op::Var<T>> params) : params_(std::move(params)) {
    offsets_.reserve(params_.size());
    for (const auto& p : params_) {
      offsets_.push_back(total_);
      total_ += static_cast<std::size_t>(p->value().size());
    }
  }
  std::size_t num_params() const noexcept { return params_.size(); }
  std::size_t size() const noexcept { return total_; }
  std::size_t offset(std::size_t i) const { return offsets_.at(i); }
  std::size_t count(std::size_t i) const { return static_cast<std::size_t>(params_.at(i)->value().size()); }
  const std::vector<op::Var<T>>& params() const noexcept { return params_; }

  /// The parameters' values into flat[0, size()).
  void read_values(T* flat) const {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const op::Variable<T>& v = *params_[i];
      read_tensor(v.value(), flat + offsets_[i]);
    }
  }
  /// flat[0, size()) into the parameters.
  void write_values(const T* flat) {
    for (std::size_t i = 0; i < params_.size(); ++i) write_tensor(params_[i]->value(), flat + offsets_[i]);
  }

 private:
  std::vector<op::Var<T>> params_;
  std::vector<std::size_t> offsets_;
  std::size_t total_ = 0;
};

}  // namespace magmadnn::distributed::detail

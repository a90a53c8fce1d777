#include "magmadnn/compute/variable.h"

#include <sstream>

#include "magmadnn/core/errors.h"

namespace magmadnn::op {

namespace {
std::string pattern_string(const std::vector<std::int64_t>& p) {
  std::ostringstream os;
  os << '{';
  for (std::size_t i = 0; i < p.size(); ++i) os << (i ? ", " : "") << p[i];
  os << '}';
  return os.str();
}
}  // namespace

template <typename T>
Variable<T>::Variable(std::string name, Tensor<T> value, Role role)
    : Operation<T>(std::move(name), {}), role_(role) {
  this->output_ = std::move(value);
}

template <typename T>
Variable<T>::Variable(std::string name, std::vector<std::int64_t> pattern, memory_t mem, device_t device)
    : Operation<T>(std::move(name), {}), role_(Role::Placeholder), has_value_(false), pattern_(std::move(pattern)) {
  for (auto d : pattern_) {
    MAGMADNN_CHECK(d >= -1, ValueError,
                   "placeholder " << this->name_ << ": shape " << pattern_string(pattern_)
                                  << " may only use -1 for a free size");
  }
  // An empty tensor that remembers where batches must live.
  this->output_ = Tensor<T>(Shape{0}, mem, device);
}

template <typename T>
std::string Variable<T>::kind() const {
  switch (role_) {
    case Role::Constant: return "constant";
    case Role::Placeholder: return "placeholder";
    default: return "variable";
  }
}

template <typename T>
void Variable<T>::check_ready() const {
  MAGMADNN_CHECK(has_value_, ValueError,
                 "placeholder " << this->name_ << " (shape " << pattern_string(pattern_)
                                << ") has no value: call set_value() before evaluating");
}

template <typename T>
void Variable<T>::set_value(const Tensor<T>& value) {
  if (role_ == Role::Placeholder) {
    const auto& d = value.shape().dims();
    bool ok = static_cast<std::int64_t>(d.size()) == static_cast<std::int64_t>(pattern_.size());
    for (std::size_t i = 0; ok && i < d.size(); ++i) ok = pattern_[i] == -1 || pattern_[i] == d[i];
    MAGMADNN_CHECK(ok, ShapeError,
                   "placeholder " << this->name_ << ": value of shape " << value.shape()
                                  << " does not match " << pattern_string(pattern_));
    if (this->output_.shape() != value.shape()) {
      this->output_ = Tensor<T>(value.shape(), this->output_.get_memory_type(), this->output_.get_device_id());
    }
    has_value_ = true;
  } else {
    MAGMADNN_CHECK(value.shape() == this->output_.shape(), ShapeError,
                   this->kind() << " " << this->name_ << ": set_value with shape " << value.shape()
                                << ", expected " << this->output_.shape());
  }
  this->output_.copy_from(value);
  this->bump_version();
}

template <typename T>
Var<T> var(const std::string& name, const Shape& shape, const tensor_filler_t<T>& filler, memory_t mem) {
  return Var<T>(std::make_shared<Variable<T>>(name, Tensor<T>(shape, filler, mem)));
}

template <typename T>
Var<T> var(const std::string& name, const tensor_filler_t<T>& filler, memory_t mem) {
  return var<T>(name, Shape{1}, filler, mem);
}

template <typename T>
Var<T> var(const std::string& name, Tensor<T>* value) {
  MAGMADNN_CHECK(value != nullptr, ValueError, "op::var " << name << ": null tensor");
  return Var<T>(std::make_shared<Variable<T>>(name, value->view(value->shape())));
}

template <typename T>
Var<T> constant(const std::string& name, const Tensor<T>& value) {
  return Var<T>(std::make_shared<Variable<T>>(name, Tensor<T>(value), Variable<T>::Role::Constant));
}

template <typename T>
Var<T> constant(const std::string& name, const Shape& shape, const tensor_filler_t<T>& filler, memory_t mem) {
  return Var<T>(std::make_shared<Variable<T>>(name, Tensor<T>(shape, filler, mem), Variable<T>::Role::Constant));
}

template <typename T>
Var<T> scalar(const std::string& name, T value, memory_t mem) {
  return constant<T>(name, Shape{1}, tensor_filler_t<T>(CONSTANT, std::vector<T>{value}), mem);
}

template <typename T>
Var<T> placeholder(const std::string& name, std::vector<std::int64_t> shape, memory_t mem, device_t device) {
  return Var<T>(std::make_shared<Variable<T>>(name, std::move(shape), mem, device));
}

#define MAGMADNN_INSTANTIATE_VARIABLE(T)                                                            \
  template class Variable<T>;                                                                      \
  template Var<T> var(const std::string&, const Shape&, const tensor_filler_t<T>&, memory_t);       \
  template Var<T> var(const std::string&, const tensor_filler_t<T>&, memory_t);                     \
  template Var<T> var(const std::string&, Tensor<T>*);                                              \
  template Var<T> constant(const std::string&, const Tensor<T>&);                                   \
  template Var<T> constant(const std::string&, const Shape&, const tensor_filler_t<T>&, memory_t);  \
  template Var<T> scalar(const std::string&, T, memory_t);                                          \
  template Var<T> placeholder(const std::string&, std::vector<std::int64_t>, memory_t, device_t);
MAGMADNN_INSTANTIATE_VARIABLE(float)
MAGMADNN_INSTANTIATE_VARIABLE(double)

}  // namespace magmadnn::op

/// @file variable.h
/// Leaves of the graph: variables (trainable values), constants, and
/// placeholders (inputs whose batch size is set at evaluation time).
///
///   auto x = op::var<float>("x", NONE);                      // scalar {1}
///   auto c = op::var<float>("c", {CONSTANT, -2.0f});
///   auto W = op::var<float>("W", {6, 5}, {UNIFORM});
///   auto X = op::placeholder<float>("X", {-1, 784});          // batch set later
///   X->set_value(batch);                                       // any batch size
///
/// A variable's eval() returns its own tensor: writing through that pointer
/// changes the variable. Such writes are seen by the graph because eval() and
/// the non-const get_output_tensor() of a leaf count as a change; code that
/// keeps a pointer and writes later calls mark_changed() (optimizers do).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/compute/expr.h"
#include "magmadnn/tensor/filler.h"

namespace magmadnn::op {

template <typename T>
class Variable : public Operation<T> {
 public:
  enum class Role { Variable, Constant, Placeholder };

  /// A leaf holding `value` (moved in; a view keeps sharing its storage).
  Variable(std::string name, Tensor<T> value, Role role = Role::Variable);
  /// A placeholder: `pattern` gives the shape, -1 where any size is allowed.
  Variable(std::string name, std::vector<std::int64_t> pattern, memory_t mem, device_t device);

  std::string kind() const override;
  Role role() const noexcept { return role_; }
  bool has_value() const noexcept { return has_value_; }
  /// A placeholder's shape pattern (-1 where any size is allowed); for a
  /// variable or constant, its fixed shape.
  std::vector<std::int64_t> pattern() const {
    return role_ == Role::Placeholder ? pattern_ : this->output_.shape().dims();
  }

  /// Copies `value` into the variable. A variable or constant keeps its shape
  /// (ShapeError otherwise); a placeholder takes any shape matching its
  /// pattern, stored in its own memory type.
  void set_value(const Tensor<T>& value);
  /// Records that the tensor was modified in place, so dependents recompute.
  void mark_changed() noexcept { this->bump_version(); }
  /// The value, for in-place updates: counts as a change.
  Tensor<T>& value() {
    mark_changed();
    return this->output_;
  }
  const Tensor<T>& value() const { return this->output_; }

  void backward(const Tensor<T>&, const std::vector<bool>&, std::vector<Tensor<T>>&) override {}

 protected:
  Shape infer_shape(const std::vector<Shape>&) const override { return this->output_.shape(); }
  void forward() override {}
  void check_ready() const override;

 private:
  Role role_;
  bool has_value_ = true;
  std::vector<std::int64_t> pattern_;
};

/// The handle op::var returns: an Expr<T> whose operator-> reaches the
/// Variable API (set_value, mark_changed, ...). Converts to Variable<T>* for
/// v1 code (pinning, see expr.h). Let the handle go out of scope instead of
/// deleting it; `delete` is meant for raw pointers.
template <typename T>
class Var : public Expr<T> {
 public:
  Var() = default;
  explicit Var(std::shared_ptr<Variable<T>> v) : Expr<T>(OpPtr<T>(std::move(v))) {}

  Variable<T>* operator->() const { return static_cast<Variable<T>*>(this->checked()); }
  Variable<T>& operator*() const { return *operator->(); }
  Variable<T>* get() const noexcept { return static_cast<Variable<T>*>(this->node_.get()); }
  std::shared_ptr<Variable<T>> var_ptr() const { return std::static_pointer_cast<Variable<T>>(this->node_); }

  operator Variable<T>*() const {  // NOLINT: implicit by design (v1 code)
    if (this->node_) detail::pin_node(static_cast<const void*>(this->node_.get()), this->node_);
    return get();
  }
};

/// The Variable behind `e`, for code that updates parameters in place.
/// ValueError naming `who` when the handle is empty or the node is not a
/// Variable (its kind and name).
template <typename T>
Variable<T>& as_variable(const Expr<T>& e, const char* who) {
  MAGMADNN_CHECK(e.get() != nullptr, ValueError, who << ": empty variable handle");
  auto* v = dynamic_cast<Variable<T>*>(e.get());
  MAGMADNN_CHECK(v != nullptr, ValueError,
                 who << ": can only update variables, got " << e->kind() << " '" << e->get_name() << "'");
  return *v;
}

/// A variable of `shape` filled by `filler`, in `mem` memory.
template <typename T>
Var<T> var(const std::string& name, const Shape& shape, const tensor_filler_t<T>& filler, memory_t mem = MANAGED);
/// A scalar variable (shape {1}).
template <typename T>
Var<T> var(const std::string& name, const tensor_filler_t<T>& filler, memory_t mem = MANAGED);
/// v1: a variable over an existing tensor, sharing its storage (writes
/// through either are seen by both; the storage outlives the tensor object).
template <typename T>
Var<T> var(const std::string& name, Tensor<T>* value);

/// A constant (a leaf that optimizers are not meant to train).
template <typename T>
Var<T> constant(const std::string& name, const Tensor<T>& value);
template <typename T>
Var<T> constant(const std::string& name, const Shape& shape, const tensor_filler_t<T>& filler,
                memory_t mem = MANAGED);
/// v1: a scalar constant of shape {1}.
template <typename T>
Var<T> scalar(const std::string& name, T value, memory_t mem = MANAGED);

/// An input whose shape is fixed at set_value() time: `shape` may hold -1
/// for any size (typically the batch axis), e.g. {-1, 784}.
template <typename T>
Var<T> placeholder(const std::string& name, std::vector<std::int64_t> shape, memory_t mem = MANAGED,
                   device_t device = 0);

}  // namespace magmadnn::op

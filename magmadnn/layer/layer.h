/// @file layer.h
/// layer::Layer<T>: one block of a network (paper §2.3). A layer is built on
/// the output of the layer before it: it creates its parameters and the graph
/// nodes that compute its output, so a network is a chain of layers whose
/// last out() is the prediction.
///
///   auto in  = layer::input<float>(x);                 // x: op::var or placeholder
///   auto fc  = layer::fullyconnected(in->out(), 128);  // W {128, in}, b {128}
///   auto act = layer::activation(fc->out(), layer::RELU);
///
/// Writing your own layer: derive from Layer<T>, build the output in the
/// constructor from `input` with op:: functions, register trainable
/// variables with add_weight(), and call set_output(). See
/// docs/custom_layer.md. Model training uses nothing but this interface.
///
/// Ownership: layers are shared objects (like graph nodes, see
/// compute/expr.h). Factories return layer::Ref<L>, a shared handle that
/// also converts to `L*` for MagmaDNN v1 code (`std::vector<Layer<T>*>`):
/// that conversion pins the layer until `delete p` (which unpins through the
/// destroying operator delete below, never destroying a layer something else
/// still uses) or magmadnn_finalize(). A model keeps shared ownership of its
/// layers, so deleting a pointer the model also holds is always safe.
///
/// Train / eval mode: layers whose result differs (Dropout, BatchNorm) act on
/// set_training(); Model switches the whole network explicitly.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/compute/expr.h"
#include "magmadnn/compute/variable.h"

namespace magmadnn::layer {

template <typename T>
class Layer : public std::enable_shared_from_this<Layer<T>> {
 public:
  using value_type = T;
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  /// Kind of layer: "Input", "FullyConnected", "Conv2D", ... (for summaries).
  virtual std::string type_name() const = 0;

  /// The node that computes this layer's output.
  op::Expr<T> out() const { return output_; }
  op::Expr<T> get_output() const { return output_; }
  /// The node this layer was built on (empty for an input layer).
  op::Expr<T> get_input() const { return input_; }
  /// Shapes with the batch axis first, as currently known (the batch size is
  /// whatever the input holds; an unset placeholder reports its pattern's
  /// size 1 for the batch axis).
  Shape get_input_shape() const;
  Shape get_output_shape() const;

  /// Trainable variables, in creation order (weights before biases).
  const std::vector<op::Var<T>>& get_weights() const noexcept { return weights_; }
  /// Tensors that are not trained but belong in a checkpoint (running
  /// statistics of BatchNorm), with names unique within the layer.
  virtual std::vector<std::pair<std::string, Tensor<T>*>> get_state() { return {}; }
  /// Number of trainable scalars.
  std::int64_t num_params() const;

  /// Train (true) or eval (false) mode for this layer's own nodes.
  virtual void set_training(bool training);

  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& get_name() const noexcept { return name_; }

  /// `delete p` on a pointer from a Ref conversion unpins instead of
  /// destroying (see the file comment). Layers come only from
  /// std::make_shared (Ref / make_layer), which never uses delete.
  static void operator delete(Layer* p, std::destroying_delete_t) noexcept {
    op::detail::unpin_node(static_cast<const void*>(p));
  }

 protected:
  Layer(std::string name, op::Expr<T> input) : input_(std::move(input)), name_(std::move(name)) {}

  /// Registers a trainable variable (its name should be "<layer name>/<what>").
  void add_weight(op::Var<T> v) { weights_.push_back(std::move(v)); }
  void set_output(op::Expr<T> out) { output_ = std::move(out); }

  op::Expr<T> input_;
  op::Expr<T> output_;
  std::vector<op::Var<T>> weights_;
  std::string name_;
};

/// Shared handle to a layer of type L, as returned by the factories.
/// `->` reaches L's API; converting to `L*` (or a base such as Layer<T>*)
/// pins the layer for v1 code, and `delete` on the handle or on that pointer
/// unpins it.
template <class L>
class Ref {
 public:
  Ref() = default;
  explicit Ref(std::shared_ptr<L> p) : p_(std::move(p)) {}
  template <class U>
    requires std::is_convertible_v<U*, L*>
  Ref(const Ref<U>& other) : p_(other.ptr()) {}  // NOLINT: derived to base

  L* operator->() const {
    MAGMADNN_CHECK(p_ != nullptr, ValueError, "layer::Ref: empty layer handle");
    return p_.get();
  }
  L& operator*() const { return *operator->(); }
  L* get() const noexcept { return p_.get(); }
  const std::shared_ptr<L>& ptr() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }

  /// v1: pins and returns the raw pointer (also what `delete handle` uses).
  operator L*() const {  // NOLINT: implicit by design (v1 code)
    if (p_) op::detail::pin_node(base(), p_);
    return p_.get();
  }

 private:
  // The pin key is the Layer<T> base address, so `delete` through any
  // pointer type finds it (Layer's destroying delete receives Layer<T>*).
  const void* base() const noexcept {
    return static_cast<const void*>(static_cast<const Layer<typename L::value_type>*>(p_.get()));
  }
  std::shared_ptr<L> p_;
};

/// Creates a layer of type L (the only way layers are made).
template <class L, class... A>
Ref<L> make_layer(A&&... args) {
  return Ref<L>(std::make_shared<L>(std::forward<A>(args)...));
}

/// The shared layer behind a raw pointer (v1 code passes Layer<T>* around).
template <typename T>
std::shared_ptr<Layer<T>> share(Layer<T>* p) {
  MAGMADNN_CHECK(p != nullptr, ValueError, "layer: null layer pointer");
  return p->shared_from_this();
}

}  // namespace magmadnn::layer

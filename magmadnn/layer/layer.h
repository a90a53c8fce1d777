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
#include <optional>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/compute/expr.h"
#include "magmadnn/compute/variable.h"
#include "magmadnn/layer/sharding.h"
#include "magmadnn/tensor/filler.h"

namespace magmadnn::layer {

/// A fresh default layer name "<prefix>_<n>" (n counts from 1 per prefix in
/// this process), e.g. "fullyconnected_3". Thread-safe.
std::string make_layer_name(const std::string& prefix);
/// Restarts every prefix's count (so a program that builds the same network
/// twice, e.g. to load a checkpoint, gets the same names the second time).
void reset_layer_names();

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
  /// Shapes with the batch axis first, as currently known: the batch size is
  /// whatever the network's input holds now. Throws ValueError when the
  /// input is a placeholder without a value.
  Shape get_input_shape() const;
  Shape get_output_shape() const;
  /// v1: size of one axis (negative counts from the end).
  std::int64_t get_input_shape(std::int64_t axis) const { return get_input_shape()[axis]; }
  std::int64_t get_output_shape(std::int64_t axis) const { return get_output_shape()[axis]; }

  /// Trainable variables, in creation order (weights before biases).
  const std::vector<op::Var<T>>& get_weights() const noexcept { return weights_; }
  /// The same variables named "<layer name>/<key>" with the layer's current
  /// name (keys such as "W", "b", "gamma"): the stable names for checkpoints.
  std::vector<std::pair<std::string, op::Var<T>>> named_weights() const;
  /// Tensors that are not trained but belong in a checkpoint (running
  /// statistics of BatchNorm), named "<layer name>/<key>" like named_weights().
  virtual std::vector<std::pair<std::string, Tensor<T>*>> get_state() { return {}; }
  /// A layer whose weights are split over a model-parallel group says how
  /// (sharding.h): checkpoints hold its weights whole, under the names of
  /// the one-process layer it stands for. Empty (the default) for a layer
  /// whose weights are whole on this rank.
  virtual std::optional<Sharding> sharding() const { return std::nullopt; }
  /// Number of trainable scalars.
  std::int64_t num_params() const;
  std::int64_t get_num_params() const { return num_params(); }  ///< v1 name

  /// Train (true) or eval (false) mode. The default sets the mode on every
  /// graph node between this layer's input and its output, i.e. on the nodes
  /// the layer built itself, so a custom layer using op::dropout or
  /// op::batchnorm needs no override.
  virtual void set_training(bool training);
  bool is_training() const noexcept { return training_; }

  /// Renames the layer (named_weights() follows; the variables keep the
  /// names they were created with, which only matter for printing).
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& get_name() const noexcept { return name_; }

  /// `delete p` on a pointer from a Ref conversion unpins instead of
  /// destroying (see the file comment). Layers come only from
  /// std::make_shared (Ref / make_layer), which never uses delete.
  static void operator delete(Layer* p, std::destroying_delete_t) noexcept {
    op::detail::unpin_node(static_cast<const void*>(p));
  }

 protected:
  /// `name` empty: a default name from make_layer_name(default_prefix).
  Layer(std::string name, op::Expr<T> input, const std::string& default_prefix = "layer")
      : input_(std::move(input)), name_(name.empty() ? make_layer_name(default_prefix) : std::move(name)) {}

  /// Creates, registers and returns a trainable variable "<name>/<key>" of
  /// `shape` filled by `init`, in the memory of the network's input.
  op::Var<T> add_weight(const std::string& key, const Shape& shape, const tensor_filler_t<T>& init);
  /// Registers an existing variable under `key` (shared or given weights).
  void add_weight(const std::string& key, op::Var<T> v);
  /// Registers `v` under the part of its name after the last '/'.
  void add_weight(op::Var<T> v);
  void set_output(op::Expr<T> out) { output_ = std::move(out); }

  /// Shape of the input, which must be known now (layers with parameters
  /// size them from it). ValueError naming the layer otherwise.
  Shape known_input_shape() const;
  /// Memory type of the network's input (the first leaf below input_ that
  /// holds data, MANAGED when there is none): parameters are created there,
  /// so a network fed from HOST tensors stays on the host.
  memory_t input_memory() const;

  op::Expr<T> input_;
  op::Expr<T> output_;
  std::vector<op::Var<T>> weights_;
  std::vector<std::string> weight_keys_;
  std::string name_;
  bool training_ = true;
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

// Binary, unary, fused-unary-chain and add_n nodes.
#include <algorithm>

#include "magmadnn/compute/grad_utils.h"
#include "magmadnn/compute/nodes.h"

namespace magmadnn::op {

using detail::reduce_grad;

// -- BinaryNode -------------------------------------------------------------------
template <typename T>
BinaryNode<T>::BinaryNode(BinaryOp op, OpPtr<T> a, OpPtr<T> b)
    : Operation<T>("", {std::move(a), std::move(b)}), op_(op) {
  MAGMADNN_CHECK(op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Div,
                 NotSupportedError, "op::BinaryNode: unsupported binary op");
  this->name_ = kind();
}

template <typename T>
std::string BinaryNode<T>::kind() const {
  return op_name(op_);
}

template <typename T>
Shape BinaryNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const std::string k = kind();
  return detail::broadcast_for(k.c_str(), in[0], in[1]);
}

template <typename T>
void BinaryNode<T>::forward() {
  const std::string k = kind();
  Tensor<T>& out = this->output_buffer(detail::broadcast_for(k.c_str(), this->in(0).shape(), this->in(1).shape()),
                                       this->in(0));
  math::binary(op_, this->in(0), this->in(1), out);
}

template <typename T>
void BinaryNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  const Tensor<T>& a = this->in(0);
  const Tensor<T>& b = this->in(1);
  switch (op_) {
    case BinaryOp::Add:
      if (needed[0]) gin[0] = reduce_grad(g, a.shape());
      if (needed[1]) gin[1] = reduce_grad(g, b.shape());
      break;
    case BinaryOp::Sub:
      if (needed[0]) gin[0] = reduce_grad(g, a.shape());
      if (needed[1]) gin[1] = reduce_grad(math::unary(UnaryOp::Neg, g), b.shape());
      break;
    case BinaryOp::Mul:
      if (needed[0]) gin[0] = reduce_grad(math::product(g, b), a.shape());
      if (needed[1]) gin[1] = reduce_grad(math::product(g, a), b.shape());
      break;
    default:  // Div: d/da = g / b, d/db = -g * (a / b) / b = -g * out / b
      if (needed[0]) gin[0] = reduce_grad(math::div(g, b), a.shape());
      if (needed[1]) {
        Tensor<T> t = math::product(g, this->output_);
        math::div(t, b, t);
        gin[1] = reduce_grad(math::unary(UnaryOp::Neg, t), b.shape());
      }
  }
}

template <typename T>
bool BinaryNode<T>::gradient_is_grad_out(std::size_t i) const {
  const bool identity = op_ == BinaryOp::Add || (op_ == BinaryOp::Sub && i == 0);
  return identity && this->in(i).shape() == this->output_.shape();
}

// -- UnaryNode ---------------------------------------------------------------------
template <typename T>
UnaryNode<T>::UnaryNode(UnaryOp op, T p, OpPtr<T> x) : Operation<T>("", {std::move(x)}), op_(op), p_(p) {
  this->name_ = kind();
}

template <typename T>
std::string UnaryNode<T>::kind() const {
  // v1 names for the two ops whose graph nodes v1 programs know by name.
  if (op_ == UnaryOp::Neg) return "negative";
  if (op_ == UnaryOp::Scale) return "scalarproduct";
  return op_name(op_);
}

template <typename T>
void UnaryNode<T>::forward() {
  Tensor<T>& out = this->output_buffer(this->in(0).shape(), this->in(0));
  math::unary(op_, this->in(0), out, p_);
}

template <typename T>
void UnaryNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  if (!needed[0]) return;
  Tensor<T> dx(g.shape(), g.get_memory_type(), g.get_device_id());
  math::unary_backward(op_, this->in(0), this->output_, g, dx, p_);
  gin[0] = std::move(dx);
}

// -- UnaryChainNode -----------------------------------------------------------------
template <typename T>
UnaryChainNode<T>::UnaryChainNode(std::vector<Step> steps, OpPtr<T> x)
    : Operation<T>("fused_elementwise", {std::move(x)}), steps_(std::move(steps)) {
  MAGMADNN_CHECK(!steps_.empty(), ValueError, "fused_elementwise: no steps");
}

namespace {
// Elements per block of a host chain: small enough that a block stays in L2
// between steps (16K doubles = 128 KiB), large enough to amortise a call.
constexpr std::int64_t kChainBlock = std::int64_t{1} << 14;

template <typename T>
std::int64_t chain_block(const Tensor<T>& x) {
  // A GPU gains nothing from host-cache blocking and pays a launch per call.
  return x.on_device() ? std::max<std::int64_t>(x.size(), 1) : kChainBlock;
}
}  // namespace

template <typename T>
void UnaryChainNode<T>::forward() {
  const Tensor<T>& x = this->in(0);
  Tensor<T>& out = this->output_buffer(x.shape(), x);
  const std::int64_t n = x.size();
  if (n == 0) return;
  const Tensor<T> xf = x.view(Shape{n});
  const Tensor<T> of = out.view(Shape{n});
  const std::int64_t bs = chain_block(x);
  for (std::int64_t b = 0; b < n; b += bs) {
    const std::int64_t e = std::min(n, b + bs);
    Tensor<T> ob = of.slice(b, e);
    math::unary(steps_[0].op, xf.slice(b, e), ob, steps_[0].p);
    for (std::size_t i = 1; i < steps_.size(); ++i) math::unary(steps_[i].op, ob, ob, steps_[i].p);
  }
}

template <typename T>
void UnaryChainNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed,
                                 std::vector<Tensor<T>>& gin) {
  if (!needed[0]) return;
  const Tensor<T>& x = this->in(0);
  Tensor<T> dx(g.shape(), g.get_memory_type(), g.get_device_id());
  const std::int64_t n = x.size();
  const std::int64_t bs = std::min(chain_block(x), std::max<std::int64_t>(n, 1));
  const std::size_t k = steps_.size();
  // stage[i] holds the output of step i for the current block (i < k - 1).
  std::vector<Tensor<T>> stage;
  for (std::size_t i = 0; i + 1 < k; ++i) stage.emplace_back(Shape{bs}, x.get_memory_type(), x.get_device_id());
  const Tensor<T> xf = x.view(Shape{n}), yf = this->output_.view(Shape{n}), gf = g.view(Shape{n});
  const Tensor<T> dxf = dx.view(Shape{n});
  for (std::int64_t b = 0; b < n; b += bs) {
    const std::int64_t e = std::min(n, b + bs);
    // Step i reads xs[i] and writes xs[i + 1]: the block of x, the stages,
    // then the block of the output (views, no copies).
    std::vector<Tensor<T>> xs;
    xs.push_back(xf.slice(b, e));
    for (std::size_t i = 0; i + 1 < k; ++i) {
      xs.push_back(stage[i].slice(0, e - b));
      math::unary(steps_[i].op, xs[i], xs[i + 1], steps_[i].p);
    }
    xs.push_back(yf.slice(b, e));
    Tensor<T> d = dxf.slice(b, e);
    math::unary_backward(steps_[k - 1].op, xs[k - 1], xs[k], gf.slice(b, e), d, steps_[k - 1].p);
    for (std::size_t i = k - 1; i-- > 0;) math::unary_backward(steps_[i].op, xs[i], xs[i + 1], d, d, steps_[i].p);
  }
  gin[0] = std::move(dx);
}

// -- AddNNode --------------------------------------------------------------------------
template <typename T>
AddNNode<T>::AddNNode(std::vector<OpPtr<T>> xs) : Operation<T>("add_n", std::move(xs)) {
  MAGMADNN_CHECK(!this->inputs_.empty(), ValueError, "add_n: needs at least one input");
}

template <typename T>
Shape AddNNode<T>::infer_shape(const std::vector<Shape>& in) const {
  Shape s = in[0];
  for (std::size_t i = 1; i < in.size(); ++i) s = detail::broadcast_for("add_n", s, in[i]);
  return s;
}

template <typename T>
void AddNNode<T>::forward() {
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < this->inputs_.size(); ++i) shapes.push_back(this->in(i).shape());
  Tensor<T>& out = this->output_buffer(infer_shape(shapes), this->in(0));
  math::fill(out, T(0));
  for (std::size_t i = 0; i < this->inputs_.size(); ++i) math::add(out, this->in(i), out);
}

template <typename T>
void AddNNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  for (std::size_t i = 0; i < this->inputs_.size(); ++i) {
    if (needed[i]) gin[i] = reduce_grad(g, this->in(i).shape());
  }
}

template class BinaryNode<float>;
template class BinaryNode<double>;
template class UnaryNode<float>;
template class UnaryNode<double>;
template class UnaryChainNode<float>;
template class UnaryChainNode<double>;
template class AddNNode<float>;
template class AddNNode<double>;

}  // namespace magmadnn::op

// Matmul and linear (fully connected) nodes.
#include <type_traits>
#include <utility>

#include "magmadnn/compute/autocast.h"
#include "magmadnn/compute/grad_utils.h"
#include "magmadnn/compute/nodes.h"

namespace magmadnn::op {

// -- MatmulNode -------------------------------------------------------------------------
template <typename T>
MatmulNode<T>::MatmulNode(OpPtr<T> a, OpPtr<T> b, bool trans_a, bool trans_b)
    : Operation<T>("matmul", {std::move(a), std::move(b)}), ta_(trans_a), tb_(trans_b) {}

template <typename T>
Shape MatmulNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const Shape& a = in[0];
  const Shape& b = in[1];
  MAGMADNN_CHECK(a.ndim() == 2 && b.ndim() == 2, ShapeError,
                 "matmul: needs 2-D operands, got shapes " << a << " and " << b);
  const std::int64_t m = ta_ ? a[1] : a[0], ka = ta_ ? a[0] : a[1];
  const std::int64_t kb = tb_ ? b[1] : b[0], n = tb_ ? b[0] : b[1];
  MAGMADNN_CHECK(ka == kb, ShapeError,
                 "matmul: shapes " << a << (ta_ ? "^T" : "") << " and " << b << (tb_ ? "^T" : "")
                                   << " do not fit (inner sizes " << ka << " and " << kb << ")");
  return Shape{m, n};
}

namespace {
// Runs f(L()) when a node of element type T takes autocast's low-precision
// GEMM path now (T = float, L = bfloat16 or half); false otherwise.
template <typename T, typename F>
bool low_precision_gemm(F&& f) {
  if constexpr (std::is_same_v<T, float>) {
    return autocast::with_low_precision(autocast::OpKind::Gemm, std::forward<F>(f));
  } else {
    return false;
  }
}
}  // namespace

template <typename T>
void MatmulNode<T>::forward() {
  Tensor<T>& out = this->output_buffer(infer_shape({this->in(0).shape(), this->in(1).shape()}), this->in(0));
  if (low_precision_gemm<T>([&](auto l) {
        using L = decltype(l);
        math::matmul_mixed(1.f, this->inputs_[0]->template low_output<L>(), ta_,
                           this->inputs_[1]->template low_output<L>(), tb_, 0.f, out);
      })) {
    return;
  }
  math::matmul(T(1), this->in(0), ta_, this->in(1), tb_, T(0), out);
}

template <typename T>
void MatmulNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  // C = op(A) op(B). dop(A) = G op(B)^T, dop(B) = op(A)^T G; a transposed
  // operand receives the transpose of that. The same formulas in low
  // precision read the operands cast in forward (cached on their nodes) and
  // G cast once.
  auto grads = [&](const auto& a, const auto& b, const auto& gg, auto mm) {
    if (needed[0]) gin[0] = ta_ ? mm(b, gg, tb_, true) : mm(gg, b, false, !tb_);
    if (needed[1]) gin[1] = tb_ ? mm(gg, a, true, ta_) : mm(a, gg, !ta_, false);
  };
  if (low_precision_gemm<T>([&](auto l) {
        using L = decltype(l);
        grads(this->inputs_[0]->template low_output<L>(), this->inputs_[1]->template low_output<L>(),
              grad_low_.template get<L>(g), [](const Tensor<L>& x, const Tensor<L>& y, bool tx, bool ty) {
                return math::matmul_mixed(x, y, tx, ty);
              });
      })) {
    return;
  }
  grads(this->in(0), this->in(1), g,
        [](const Tensor<T>& x, const Tensor<T>& y, bool tx, bool ty) { return math::matmul(x, y, tx, ty); });
}

// -- LinearNode --------------------------------------------------------------------------
template <typename T>
LinearNode<T>::LinearNode(OpPtr<T> x, OpPtr<T> w, OpPtr<T> b, UnaryOp act)
    : Operation<T>("linear", b ? std::vector<OpPtr<T>>{std::move(x), std::move(w), std::move(b)}
                               : std::vector<OpPtr<T>>{std::move(x), std::move(w)}),
      act_(act) {
  check_supported("linear", act);
  this->name_ = kind();
}

template <typename T>
void LinearNode<T>::check_supported(const char* node, UnaryOp act) {
  MAGMADNN_CHECK(supports(act), NotSupportedError,
                 node << ": cannot apply " << op_name(act) << " (a linear node applies identity or one of "
                      << unary_op_names([](const UnaryOpInfo& r) { return supports(r.op); }) << ")");
}

template <typename T>
std::string LinearNode<T>::kind() const {
  return kind_of("linear", act_);
}

template <typename T>
Shape LinearNode<T>::infer_shape(const std::vector<Shape>& in) const {
  const Shape& x = in[0];
  const Shape& w = in[1];
  MAGMADNN_CHECK(x.ndim() == 2 && w.ndim() == 2 && x[1] == w[1], ShapeError,
                 "linear: input " << x << " and weight " << w << " do not fit (need {batch, in} and {out, in})");
  if (in.size() == 3) {
    MAGMADNN_CHECK(in[2].numel() == w[0] && (in[2].ndim() == 1 || (in[2].ndim() == 2 && in[2][0] == 1)),
                   ShapeError, "linear: bias " << in[2] << " must have one value per output unit (" << w[0] << ")");
  }
  return Shape{x[0], w[0]};
}

template <typename T>
void LinearNode<T>::forward() {
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < this->inputs_.size(); ++i) shapes.push_back(this->in(i).shape());
  Tensor<T>& out = this->output_buffer(infer_shape(shapes), this->in(0));
  // infer_shape accepts a {1, out} bias too; math::linear wants it flat.
  Tensor<T> bias;
  if (has_bias()) bias = this->in(2).view(Shape{this->in(2).size()});
  if (low_precision_gemm<T>([&](auto l) {
        using L = decltype(l);
        math::linear_mixed(this->inputs_[0]->template low_output<L>(), this->inputs_[1]->template low_output<L>(),
                           has_bias() ? &bias : nullptr, act_, 0.f, out);
      })) {
    return;
  }
  math::linear(this->in(0), this->in(1), has_bias() ? &bias : nullptr, act_, T(0), out);
}

template <typename T>
void LinearNode<T>::backward(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin) {
  std::vector<bool> applied(needed.size(), false);
  backward_into(g, needed, gin, std::vector<const typename Operation<T>::UpdateTarget*>(needed.size()), applied);
}

template <typename T>
void LinearNode<T>::backward_into(const Tensor<T>& g, const std::vector<bool>& needed, std::vector<Tensor<T>>& gin,
                                  const std::vector<const typename Operation<T>::UpdateTarget*>& targets,
                                  std::vector<bool>& applied) {
  // Gradient through the activation, from the output alone (supports()
  // admits only such activations): y is passed for both x and y.
  const bool bias_grad = has_bias() && needed[2];
  Tensor<T> dz, db;
  const auto new_db = [&] { db = Tensor<T>(this->in(2).shape(), g.get_memory_type(), g.get_device_id()); };
  const bool low = low_precision_gemm<T>([&](auto l) {
    using L = decltype(l);
    // W and x as cast for forward (cached on their nodes). dz is read only
    // by the two GEMMs, in L: through an activation, one pass writes it in
    // L (and the float bias gradient) with no float dz at all; without one
    // it is the incoming gradient, cast once.
    Tensor<L> dz_low;
    if (act_ != UnaryOp::Identity) {
      dz_low = Tensor<L>(g.shape(), g.get_memory_type(), g.get_device_id());
      if (bias_grad) new_db();
      math::unary_backward_low(act_, this->output_, g, dz_low, bias_grad ? &db : nullptr, T(0));
    } else {
      dz = g.view(g.shape());
    }
    const Tensor<L>& dz16 = act_ != UnaryOp::Identity ? dz_low : grad_low_.template get<L>(dz);
    const Tensor<L>& x16 = this->inputs_[0]->template low_output<L>();
    if (needed[0]) gin[0] = math::matmul_mixed(dz16, this->inputs_[1]->template low_output<L>());
    // W's update is not folded into oneDNN's GEMM as in float (a fold
    // cannot write W's low-precision copy, and with beta != 0 and a cast
    // after it measured slower). Where the backend has the kernel, the
    // product is made in row tiles, each consumed at once by the update that
    // writes W and its copy (LowPrecisionCache::gemm_update; CPU, bf16);
    // elsewhere the GEMM writes the gradient and the caller's update pass
    // writes W and its copy (LowPrecisionCache::axpby). Either way the next
    // forward casts no weight (bench_bf16_update, docs/notes/benchmarks-bf16.md).
    if (needed[1]) {
      const auto* t = targets[1];
      if (t != nullptr && t->low != nullptr && this->in(1).size() >= kFoldUpdateMinWeights &&
          t->low->gemm_update(t->alpha, dz16, true, x16, false, t->beta, *t->dst)) {
        applied[1] = true;
      } else {
        gin[1] = math::matmul_mixed(dz16, x16, true, false);
      }
    }
  });
  if (!low) {
    if (act_ == UnaryOp::Identity) {
      dz = g.view(g.shape());  // read-only alias; never handed out
    } else {
      dz = Tensor<T>(g.shape(), g.get_memory_type(), g.get_device_id());
      if (bias_grad) {
        // The bias gradient is dz's column sums: taken in the pass that
        // writes dz, rather than by a second pass re-reading it.
        new_db();
        math::unary_backward_colsum(act_, this->output_, g, dz, db, T(0));
      } else {
        math::unary_backward(act_, this->output_, this->output_, g, dz, T(0));
      }
    }
    if (needed[0]) gin[0] = math::matmul(dz, this->in(1));  // reads W: before any update of W
    if (needed[1] && targets[1] != nullptr && this->in(1).size() >= kFoldUpdateMinWeights) {
      // W = beta W + alpha dz^T x in one GEMM: no gradient buffer, no extra pass.
      const auto& t = *targets[1];
      math::matmul(t.alpha, dz, true, this->in(0), false, t.beta, *t.dst);
      applied[1] = true;
    } else if (needed[1]) {
      gin[1] = math::matmul(dz, this->in(0), true, false);
    }
  }
  if (bias_grad) {
    if (db.empty()) {
      db = math::sum(dz, 0);
      db.reshape(this->in(2).shape());
    }
    gin[2] = std::move(db);
  }
}

template class MatmulNode<float>;
template class MatmulNode<double>;
template class LinearNode<float>;
template class LinearNode<double>;

}  // namespace magmadnn::op

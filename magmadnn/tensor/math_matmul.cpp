// tensor/math: matrix products (matmul, linear).
#include <string>

#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::math {

template <typename T>
void matmul(T alpha, const Tensor<T>& a, bool trans_a, const Tensor<T>& b, bool trans_b, T beta, Tensor<T>& out) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const Shape& so = out.shape();
  MAGMADNN_CHECK(sa.ndim() == 2 && sb.ndim() == 2 && so.ndim() == 2, ShapeError,
                 "math::matmul: a " << sa << ", b " << sb << " and out " << so << " must all be 2-D");
  const std::int64_t m = trans_a ? sa.dims()[1] : sa.dims()[0];
  const std::int64_t k = trans_a ? sa.dims()[0] : sa.dims()[1];
  const std::int64_t kb = trans_b ? sb.dims()[1] : sb.dims()[0];
  const std::int64_t n = trans_b ? sb.dims()[0] : sb.dims()[1];
  MAGMADNN_CHECK(k == kb, ShapeError,
                 "math::matmul: inner sizes differ: a " << sa << (trans_a ? "^T" : "") << " (k=" << k << ") times b "
                                                       << sb << (trans_b ? "^T" : "") << " (k=" << kb << ")");
  MAGMADNN_CHECK(so.dims()[0] == m && so.dims()[1] == n, ShapeError,
                 "math::matmul: a " << sa << (trans_a ? "^T" : "") << " times b " << sb << (trans_b ? "^T" : "")
                                    << " is {" << m << ", " << n << "} but out is " << so);
  Backend& be = common_backend("matmul", a, b, out);
  if (out.size() == 0) return;
  // With k == 0 the inputs are empty and may have no storage at all.
  const T* pa = k > 0 ? a.data() : nullptr;
  const T* pb = k > 0 ? b.data() : nullptr;
  kernels<T>(be).gemm(trans_a, trans_b, m, n, k, alpha, pa, sa.dims()[1], pb, sb.dims()[1], beta,
                      out.mutable_data(), n);
}

template <typename T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b, bool trans_a, bool trans_b) {
  MAGMADNN_CHECK(a.ndim() == 2 && b.ndim() == 2, ShapeError,
                 "math::matmul: a " << a.shape() << " and b " << b.shape() << " must be 2-D");
  const std::int64_t m = a.shape().dims()[trans_a ? 1 : 0];
  const std::int64_t n = b.shape().dims()[trans_b ? 0 : 1];
  Tensor<T> out(Shape{m, n}, a.get_memory_type(), a.get_device_id());
  matmul(T(1), a, trans_a, b, trans_b, T(0), out);
  return out;
}

template <typename T>
void linear(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>* bias, UnaryOp act, T p, Tensor<T>& out) {
  const Shape& sx = x.shape();
  const Shape& sw = w.shape();
  const Shape& so = out.shape();
  const std::string sbias = bias ? bias->shape().to_string() : std::string("none");
  const bool dims_ok = sx.ndim() == 2 && sw.ndim() == 2 && so.ndim() == 2 && (!bias || bias->ndim() == 1);
  const bool ok = dims_ok && sx.dims()[1] == sw.dims()[1] && so.dims()[0] == sx.dims()[0] &&
                  so.dims()[1] == sw.dims()[0] && (!bias || bias->shape().dims()[0] == sw.dims()[0]);
  MAGMADNN_CHECK(ok, ShapeError,
                 "math::linear: x " << sx << ", w " << sw << ", bias " << sbias << " and out " << so
                                    << " do not fit (want x {batch, in}, w {out, in}, bias {out}, out {batch, out})");
  const auto takes = [](const UnaryOpInfo& r) { return r.op == UnaryOp::Identity || r.activation; };
  MAGMADNN_CHECK(takes(unary_op_info(act)), ValueError,
                 "math::linear: " << op_name(act) << " is not an activation (one of " << unary_op_names(takes)
                                  << ")");
  Backend& be = bias ? common_backend("linear", x, w, *bias, out) : common_backend("linear", x, w, out);
  if (out.size() == 0) return;
  const std::int64_t batch = sx.dims()[0], in = sx.dims()[1], nout = sw.dims()[0];
  const T* px = in > 0 ? x.data() : nullptr;
  const T* pw = in > 0 ? w.data() : nullptr;
  kernels<T>(be).gemm_bias_act(false, true, batch, nout, in, px, in, pw, in, bias ? bias->data() : nullptr, act, p,
                               out.mutable_data(), nout);
}

#define MAGMADNN_INSTANTIATE(T)                                                                              \
  template void matmul<T>(T, const Tensor<T>&, bool, const Tensor<T>&, bool, T, Tensor<T>&);                 \
  template Tensor<T> matmul<T>(const Tensor<T>&, const Tensor<T>&, bool, bool);                              \
  template void linear<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>*, UnaryOp, T, Tensor<T>&);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::math

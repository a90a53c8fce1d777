// tensor/math: matrix products (matmul, linear).
#include <string>

#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::math {

namespace {

struct GemmDims {
  std::int64_t m, n, k;
};

// Checks op(a) * op(b) -> out and returns its sizes; `what` names the caller.
GemmDims matmul_dims(const char* what, const Shape& sa, bool trans_a, const Shape& sb, bool trans_b,
                     const Shape& so) {
  MAGMADNN_CHECK(sa.ndim() == 2 && sb.ndim() == 2 && so.ndim() == 2, ShapeError,
                 what << ": a " << sa << ", b " << sb << " and out " << so << " must all be 2-D");
  const std::int64_t m = trans_a ? sa.dims()[1] : sa.dims()[0];
  const std::int64_t k = trans_a ? sa.dims()[0] : sa.dims()[1];
  const std::int64_t kb = trans_b ? sb.dims()[1] : sb.dims()[0];
  const std::int64_t n = trans_b ? sb.dims()[0] : sb.dims()[1];
  MAGMADNN_CHECK(k == kb, ShapeError,
                 what << ": inner sizes differ: a " << sa << (trans_a ? "^T" : "") << " (k=" << k << ") times b "
                      << sb << (trans_b ? "^T" : "") << " (k=" << kb << ")");
  MAGMADNN_CHECK(so.dims()[0] == m && so.dims()[1] == n, ShapeError,
                 what << ": a " << sa << (trans_a ? "^T" : "") << " times b " << sb << (trans_b ? "^T" : "")
                      << " is {" << m << ", " << n << "} but out is " << so);
  return {m, n, k};
}

// Checks x {batch, in}, w {out, in}, bias {out}, out {batch, out} and act.
void check_linear(const char* what, const Shape& sx, const Shape& sw, const Shape* sbias, UnaryOp act,
                  const Shape& so) {
  const std::string bias_str = sbias ? sbias->to_string() : std::string("none");
  const bool dims_ok = sx.ndim() == 2 && sw.ndim() == 2 && so.ndim() == 2 && (!sbias || sbias->ndim() == 1);
  const bool ok = dims_ok && sx.dims()[1] == sw.dims()[1] && so.dims()[0] == sx.dims()[0] &&
                  so.dims()[1] == sw.dims()[0] && (!sbias || sbias->dims()[0] == sw.dims()[0]);
  MAGMADNN_CHECK(ok, ShapeError,
                 what << ": x " << sx << ", w " << sw << ", bias " << bias_str << " and out " << so
                      << " do not fit (want x {batch, in}, w {out, in}, bias {out}, out {batch, out})");
  const auto takes = [](const UnaryOpInfo& r) { return r.op == UnaryOp::Identity || r.activation; };
  MAGMADNN_CHECK(takes(unary_op_info(act)), ValueError,
                 what << ": " << op_name(act) << " is not an activation (one of " << unary_op_names(takes) << ")");
}

}  // namespace

template <typename T>
void matmul(T alpha, const Tensor<T>& a, bool trans_a, const Tensor<T>& b, bool trans_b, T beta, Tensor<T>& out) {
  const auto [m, n, k] = matmul_dims("math::matmul", a.shape(), trans_a, b.shape(), trans_b, out.shape());
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  Backend& be = common_backend("matmul", a, b, out);
  if (out.size() == 0) return;
  // With k == 0 the inputs are empty and may have no storage at all.
  const T* pa = k > 0 ? a.data() : nullptr;
  const T* pb = k > 0 ? b.data() : nullptr;
  kernels<T>(be).gemm(trans_a, trans_b, m, n, k, alpha, pa, sa.dims()[1], pb, sb.dims()[1], beta,
                      out.mutable_data(), n);
}

template <typename T>
void matmul_drop_first_col(const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  MAGMADNN_CHECK(sa.ndim() == 2 && sb.ndim() == 2 && out.ndim() == 2 && sb[0] == sa[1] && sb[1] >= 1 &&
                     out.shape()[0] == sa[0] && out.shape()[1] == sb[1] - 1,
                 ShapeError,
                 "math::matmul_drop_first_col: a " << sa << " times b " << sb << " without its first column does "
                                                   << "not give out " << out.shape());
  Backend& be = common_backend("matmul_drop_first_col", a, b, out);
  if (out.size() == 0) return;
  const std::int64_t m = sa[0], k = sa[1], n = sb[1] - 1;
  if (k == 0) {
    kernels<T>(be).fill(out.mutable_data(), out.size(), T(0));
    return;
  }
  kernels<T>(be).gemm(false, false, m, n, k, T(1), a.data(), k, b.data() + 1, n + 1, T(0), out.mutable_data(), n);
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
  check_linear("math::linear", x.shape(), w.shape(), bias ? &bias->shape() : nullptr, act, out.shape());
  const Shape& sx = x.shape();
  const Shape& sw = w.shape();
  Backend& be = bias ? common_backend("linear", x, w, *bias, out) : common_backend("linear", x, w, out);
  if (out.size() == 0) return;
  const std::int64_t batch = sx.dims()[0], in = sx.dims()[1], nout = sw.dims()[0];
  const T* px = in > 0 ? x.data() : nullptr;
  const T* pw = in > 0 ? w.data() : nullptr;
  kernels<T>(be).gemm_bias_act(false, true, batch, nout, in, px, in, pw, in, bias ? bias->data() : nullptr, act, p,
                               out.mutable_data(), nout);
}

template <typename L>
void matmul_mixed(float alpha, const Tensor<L>& a, bool trans_a, const Tensor<L>& b, bool trans_b, float beta,
                  Tensor<float>& out) {
  const auto [m, n, k] = matmul_dims("math::matmul_mixed", a.shape(), trans_a, b.shape(), trans_b, out.shape());
  Backend& be = common_backend("matmul_mixed", a, b, out);
  if (out.size() == 0) return;
  const L* pa = k > 0 ? a.data() : nullptr;
  const L* pb = k > 0 ? b.data() : nullptr;
  kernels<float>(be).gemm_mixed(dtype_v<L>, trans_a, trans_b, m, n, k, alpha, pa, a.shape().dims()[1], pb,
                                b.shape().dims()[1], beta, out.mutable_data(), n);
}

template <typename L>
Tensor<float> matmul_mixed(const Tensor<L>& a, const Tensor<L>& b, bool trans_a, bool trans_b) {
  MAGMADNN_CHECK(a.ndim() == 2 && b.ndim() == 2, ShapeError,
                 "math::matmul_mixed: a " << a.shape() << " and b " << b.shape() << " must be 2-D");
  const std::int64_t m = a.shape().dims()[trans_a ? 1 : 0];
  const std::int64_t n = b.shape().dims()[trans_b ? 0 : 1];
  Tensor<float> out(Shape{m, n}, a.get_memory_type(), a.get_device_id());
  matmul_mixed(1.f, a, trans_a, b, trans_b, 0.f, out);
  return out;
}

template <typename L>
void linear_mixed(const Tensor<L>& x, const Tensor<L>& w, const Tensor<float>* bias, UnaryOp act, float p,
                  Tensor<float>& out) {
  check_linear("math::linear_mixed", x.shape(), w.shape(), bias ? &bias->shape() : nullptr, act, out.shape());
  Backend& be = bias ? common_backend("linear_mixed", x, w, *bias, out) : common_backend("linear_mixed", x, w, out);
  if (out.size() == 0) return;
  const std::int64_t batch = x.shape().dims()[0], in = x.shape().dims()[1], nout = w.shape().dims()[0];
  const L* px = in > 0 ? x.data() : nullptr;
  const L* pw = in > 0 ? w.data() : nullptr;
  kernels<float>(be).gemm_bias_act_mixed(dtype_v<L>, false, true, batch, nout, in, px, in, pw, in,
                                         bias ? bias->data() : nullptr, act, p, out.mutable_data(), nout);
}

template <typename L>
bool gemm_update(float alpha, const Tensor<L>& a, bool trans_a, const Tensor<L>& b, bool trans_b, float beta,
                 Tensor<float>& w, Tensor<L>* w16) {
  const auto [m, n, k] = matmul_dims("math::gemm_update", a.shape(), trans_a, b.shape(), trans_b, w.shape());
  MAGMADNN_CHECK(!w16 || (w16->shape() == w.shape() && w16->get_memory_type() == w.get_memory_type() &&
                          w16->get_device_id() == w.get_device_id()),
                 ShapeError, "math::gemm_update: w " << w.shape() << " and its " << dtype_name(dtype_v<L>) << " copy "
                                                     << w16->shape() << " differ in shape or memory");
  Backend& be = common_backend("gemm_update", a, b, w);
  if constexpr (std::is_same_v<L, bfloat16>) {
    if (!kernels<float>(be).has_gemm_update_bf16()) return false;
    if (w.size() == 0) return true;
    return kernels<float>(be).gemm_update_bf16(trans_a, trans_b, m, n, k, alpha, k > 0 ? a.data() : nullptr,
                                               a.shape().dims()[1], k > 0 ? b.data() : nullptr, b.shape().dims()[1],
                                               beta, w.mutable_data(), w16 ? w16->mutable_data() : nullptr);
  } else {
    (void)be, (void)alpha, (void)beta, (void)w16;
    return false;
  }
}

#define MAGMADNN_INSTANTIATE_MIXED(L)                                                                         \
  template void matmul_mixed<L>(float, const Tensor<L>&, bool, const Tensor<L>&, bool, float, Tensor<float>&); \
  template Tensor<float> matmul_mixed<L>(const Tensor<L>&, const Tensor<L>&, bool, bool);                     \
  template void linear_mixed<L>(const Tensor<L>&, const Tensor<L>&, const Tensor<float>*, UnaryOp, float,      \
                                Tensor<float>&);                                                             \
  template bool gemm_update<L>(float, const Tensor<L>&, bool, const Tensor<L>&, bool, float, Tensor<float>&,   \
                               Tensor<L>*);
MAGMADNN_INSTANTIATE_MIXED(bfloat16)
MAGMADNN_INSTANTIATE_MIXED(half)
#undef MAGMADNN_INSTANTIATE_MIXED

#define MAGMADNN_INSTANTIATE(T)                                                                              \
  template void matmul<T>(T, const Tensor<T>&, bool, const Tensor<T>&, bool, T, Tensor<T>&);                 \
  template Tensor<T> matmul<T>(const Tensor<T>&, const Tensor<T>&, bool, bool);                              \
  template void matmul_drop_first_col<T>(const Tensor<T>&, const Tensor<T>&, Tensor<T>&);                    \
  template void linear<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>*, UnaryOp, T, Tensor<T>&);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::math

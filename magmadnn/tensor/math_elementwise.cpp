// tensor/math: broadcasting, elementwise ops, fill and axpy.
#include <string>
#include <type_traits>

#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::math {
namespace {

// Whether `in` broadcasts to `out` (NumPy rules, aligned on the right).
bool broadcasts_to(const Shape& in, const Shape& out) {
  if (in.ndim() > out.ndim()) return false;
  const std::int64_t shift = out.ndim() - in.ndim();
  for (std::int64_t i = 0; i < in.ndim(); ++i) {
    const std::int64_t d = in.dims()[i];
    if (d != 1 && d != out.dims()[i + shift]) return false;
  }
  return true;
}

void fill_strides(const Shape& in, const Shape& out, std::int64_t* strides) {
  const std::int64_t shift = out.ndim() - in.ndim();
  const std::vector<std::int64_t> st = in.strides();
  for (std::int64_t i = 0; i < out.ndim(); ++i) {
    const std::int64_t j = i - shift;
    strides[i] = (j < 0 || in.dims()[j] == 1) ? 0 : st[j];
  }
}

}  // namespace

BroadcastDesc make_broadcast(const Shape& a, const Shape& b, const Shape& out_shape) {
  MAGMADNN_CHECK(broadcasts_to(a, out_shape) && broadcasts_to(b, out_shape), ShapeError,
                 "make_broadcast: shapes " << a << " and " << b << " do not broadcast to " << out_shape);
  MAGMADNN_CHECK(out_shape.ndim() <= BroadcastDesc::kMaxDims, ShapeError,
                 "make_broadcast: " << out_shape << " has more than " << BroadcastDesc::kMaxDims << " axes");
  BroadcastDesc d;
  d.ndim = static_cast<int>(out_shape.ndim());
  for (int i = 0; i < d.ndim; ++i) d.shape[i] = out_shape.dims()[i];
  fill_strides(a, out_shape, d.a_strides);
  fill_strides(b, out_shape, d.b_strides);
  return d;
}

template <typename T>
void binary(BinaryOp op, const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const Shape& so = out.shape();
  bool ok = false;
  try {
    ok = broadcast_shapes(sa, sb) == so;
  } catch (const ShapeError&) {
    ok = false;  // rethrown below with this function's name and out's shape
  }
  MAGMADNN_CHECK(ok, ShapeError,
                 "math::" << op_name(op) << ": a " << sa << " and b " << sb << " do not broadcast to out " << so);
  Backend& be = common_backend(op_name(op), a, b, out);
  if (out.size() == 0) return;
  const BroadcastDesc d = make_broadcast(sa, sb, so);
  kernels<T>(be).binary(op, a.data(), b.data(), out.mutable_data(), d);
}

template <typename T>
Tensor<T> binary(BinaryOp op, const Tensor<T>& a, const Tensor<T>& b) {
  Shape s;
  try {
    s = broadcast_shapes(a.shape(), b.shape());
  } catch (const ShapeError&) {
    MAGMADNN_THROW(ShapeError, "math::" << op_name(op) << ": a " << a.shape() << " and b " << b.shape()
                                        << " cannot be broadcast together");
  }
  Tensor<T> out(s, a.get_memory_type(), a.get_device_id());
  binary(op, a, b, out);
  return out;
}

template <typename T>
void unary(UnaryOp op, const Tensor<T>& x, Tensor<T>& y, T p) {
  MAGMADNN_CHECK(x.shape() == y.shape(), ShapeError,
                 "math::" << op_name(op) << ": x " << x.shape() << " and y " << y.shape() << " differ");
  Backend& be = common_backend(op_name(op), x, y);
  if (x.size() == 0) return;
  kernels<T>(be).unary(op, x.data(), y.mutable_data(), x.size(), p);
}

template <typename T>
Tensor<T> unary(UnaryOp op, const Tensor<T>& x, T p) {
  Tensor<T> y(x.shape(), x.get_memory_type(), x.get_device_id());
  unary(op, x, y, p);
  return y;
}

template <typename T>
void unary_backward(UnaryOp op, const Tensor<T>& x, const Tensor<T>& y, const Tensor<T>& dy, Tensor<T>& dx, T p) {
  const Shape& s = x.shape();
  MAGMADNN_CHECK(y.shape() == s && dy.shape() == s && dx.shape() == s, ShapeError,
                 "math::unary_backward(" << op_name(op) << "): x " << s << ", y " << y.shape() << ", dy "
                                         << dy.shape() << " and dx " << dx.shape() << " must have one shape");
  Backend& be = common_backend("unary_backward", x, y, dy, dx);
  if (x.size() == 0) return;
  kernels<T>(be).unary_backward(op, x.data(), y.data(), dy.data(), dx.mutable_data(), x.size(), p);
}

namespace {

// The arguments of a fused activation-and-bias gradient (unary_backward_colsum,
// unary_backward_low): y, dy and dx one 2-D shape, db (when given) one value
// per column, an activation whose derivative follows from its output.
template <typename T>
void check_colsum_args(const char* name, UnaryOp op, const Tensor<T>& y, const Tensor<T>& dy, const Shape& dx,
                       const Shape* db) {
  const Shape& s = y.shape();
  MAGMADNN_CHECK(s.ndim() == 2 && dy.shape() == s && dx == s, ShapeError,
                 "math::" << name << "(" << op_name(op) << "): y " << s << ", dy " << dy.shape() << " and dx " << dx
                          << " must be one 2-D shape");
  MAGMADNN_CHECK(!db || db->numel() == s[1], ShapeError,
                 "math::" << name << "(" << op_name(op) << "): db " << *db << " must have " << s[1]
                          << " elements, one per column of " << s);
  MAGMADNN_CHECK(grad_from_output(op), ValueError,
                 "math::" << name << ": the derivative of " << op_name(op) << " does not follow from its output alone");
}

}  // namespace

template <typename T>
void unary_backward_colsum(UnaryOp op, const Tensor<T>& y, const Tensor<T>& dy, Tensor<T>& dx, Tensor<T>& db, T p) {
  check_colsum_args("unary_backward_colsum", op, y, dy, dx.shape(), &db.shape());
  const Shape& s = y.shape();
  Backend& be = common_backend("unary_backward_colsum", y, dy, dx, db);
  kernels<T>(be).unary_backward_colsum(op, y.data(), dy.data(), dx.mutable_data(), db.mutable_data(), s[0], s[1], p);
}

template <typename T, typename L>
void unary_backward_low(UnaryOp op, const Tensor<T>& y, const Tensor<T>& dy, Tensor<L>& dx, Tensor<T>* db, T p) {
  check_colsum_args("unary_backward_low", op, y, dy, dx.shape(), db ? &db->shape() : nullptr);
  const Shape& s = y.shape();
  MAGMADNN_CHECK(dx.get_memory_type() == y.get_memory_type() && dx.get_device_id() == y.get_device_id(),
                 ValueError, "math::unary_backward_low: the " << dtype_name(dtype_v<L>) << " dx is not in y's memory");
  Backend& be = db ? common_backend("unary_backward_low", y, dy, *db) : common_backend("unary_backward_low", y, dy);
  if constexpr (std::is_same_v<L, bfloat16>) {
    if (kernels<T>(be).unary_backward_colsum_bf16(op, y.data(), dy.data(), dx.mutable_data(),
                                                  db ? db->mutable_data() : nullptr, s[0], s[1], p)) {
      return;
    }
  }
  Tensor<T> wide(s, y.get_memory_type(), y.get_device_id());
  if (db) {
    unary_backward_colsum(op, y, dy, wide, *db, p);
  } else {
    unary_backward(op, y, y, dy, wide, p);
  }
  be.convert(dtype_v<T>, wide.data(), dtype_v<L>, dx.mutable_data(), wide.size());
}

template <typename T>
void fill(Tensor<T>& x, T value) {
  Backend& be = backend_of(x);
  if (x.size() == 0) return;
  kernels<T>(be).fill(x.mutable_data(), x.size(), value);
}

template <typename T>
void axpy(T alpha, const Tensor<T>& x, Tensor<T>& y) {
  MAGMADNN_CHECK(x.size() == y.size(), ShapeError,
                 "math::axpy: x " << x.shape() << " and y " << y.shape() << " have different sizes");
  Backend& be = common_backend("axpy", x, y);
  if (x.size() == 0) return;
  kernels<T>(be).axpy(x.size(), alpha, x.data(), y.mutable_data());
}

template <typename T>
void axpby(T alpha, const Tensor<T>& x, T beta, Tensor<T>& y) {
  MAGMADNN_CHECK(x.size() == y.size(), ShapeError,
                 "math::axpby: x " << x.shape() << " and y " << y.shape() << " have different sizes");
  Backend& be = common_backend("axpby", x, y);
  if (x.size() == 0) return;
  kernels<T>(be).axpby(x.size(), alpha, x.data(), beta, y.mutable_data());
}

template <typename T, typename L>
void axpby(T alpha, const Tensor<T>& x, T beta, Tensor<T>& y, Tensor<L>& y16) {
  MAGMADNN_CHECK(x.size() == y.size() && y16.size() == y.size(), ShapeError,
                 "math::axpby: x " << x.shape() << ", y " << y.shape() << " and its " << dtype_name(dtype_v<L>)
                                   << " copy " << y16.shape() << " have different sizes");
  MAGMADNN_CHECK(y16.get_memory_type() == y.get_memory_type() && y16.get_device_id() == y.get_device_id(),
                 ValueError, "math::axpby: y's " << dtype_name(dtype_v<L>) << " copy is not in y's memory");
  Backend& be = common_backend("axpby", x, y);
  if (x.size() == 0) return;
  if constexpr (std::is_same_v<L, bfloat16>) {
    if (kernels<T>(be).axpby_bf16(x.size(), alpha, x.data(), beta, y.mutable_data(), y16.mutable_data())) return;
  }
  kernels<T>(be).axpby(x.size(), alpha, x.data(), beta, y.mutable_data());
  be.convert(dtype_v<T>, y.data(), dtype_v<L>, y16.mutable_data(), y.size());
}

#define MAGMADNN_INSTANTIATE(T)                                                                          \
  template void binary<T>(BinaryOp, const Tensor<T>&, const Tensor<T>&, Tensor<T>&);                     \
  template Tensor<T> binary<T>(BinaryOp, const Tensor<T>&, const Tensor<T>&);                            \
  template void unary<T>(UnaryOp, const Tensor<T>&, Tensor<T>&, T);                                      \
  template Tensor<T> unary<T>(UnaryOp, const Tensor<T>&, T);                                             \
  template void unary_backward<T>(UnaryOp, const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, Tensor<T>&, T); \
  template void unary_backward_colsum<T>(UnaryOp, const Tensor<T>&, const Tensor<T>&, Tensor<T>&, Tensor<T>&, T); \
  template void fill<T>(Tensor<T>&, T);                                                                  \
  template void axpy<T>(T, const Tensor<T>&, Tensor<T>&);                                                \
  template void axpby<T>(T, const Tensor<T>&, T, Tensor<T>&);                                            \
  template void axpby<T, bfloat16>(T, const Tensor<T>&, T, Tensor<T>&, Tensor<bfloat16>&);            \
  template void axpby<T, half>(T, const Tensor<T>&, T, Tensor<T>&, Tensor<half>&);                    \
  template void unary_backward_low<T, bfloat16>(UnaryOp, const Tensor<T>&, const Tensor<T>&, Tensor<bfloat16>&, \
                                                Tensor<T>*, T);                                               \
  template void unary_backward_low<T, half>(UnaryOp, const Tensor<T>&, const Tensor<T>&, Tensor<half>&,     \
                                            Tensor<T>*, T);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::math

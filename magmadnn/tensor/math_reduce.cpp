// tensor/math: reductions (reduce, sum_all, argmax, reduce_to_shape) and softmax.
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/dispatch.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::math {
namespace {

// [outer, axis, inner] sizes of `s` around axis `ax` (already normalised).
struct Split {
  std::int64_t outer = 1, axis = 1, inner = 1;
};

Split split_at(const Shape& s, std::int64_t ax) {
  Split r;
  for (std::int64_t i = 0; i < ax; ++i) r.outer *= s.dims()[i];
  r.axis = s.dims()[ax];
  for (std::int64_t i = ax + 1; i < s.ndim(); ++i) r.inner *= s.dims()[i];
  return r;
}

Shape without_axis(const Shape& s, std::int64_t ax, bool keepdims) {
  std::vector<std::int64_t> d = s.dims();
  if (keepdims) {
    d[ax] = 1;
  } else {
    d.erase(d.begin() + ax);
  }
  return Shape(d);
}

}  // namespace

template <typename T>
void reduce(ReduceOp op, const Tensor<T>& x, std::int64_t axis, Tensor<T>& out) {
  const std::int64_t ax = x.shape().normalize_axis(axis);
  const Shape dropped = without_axis(x.shape(), ax, false), kept = without_axis(x.shape(), ax, true);
  MAGMADNN_CHECK(out.shape() == dropped || out.shape() == kept, ShapeError,
                 "math::" << op_name(op) << ": reducing axis " << axis << " of x " << x.shape() << " gives "
                          << dropped << " (or " << kept << " with keepdims) but out is " << out.shape());
  MAGMADNN_CHECK(x.shape().dims()[ax] > 0 || op == ReduceOp::Sum || out.size() == 0, ValueError,
                 "math::" << op_name(op) << ": axis " << axis << " of x " << x.shape() << " is empty");
  Backend& be = common_backend(op_name(op), x, out);
  if (out.size() == 0) return;
  const Split sp = split_at(x.shape(), ax);
  if (sp.axis == 0) {
    kernels<T>(be).fill(out.mutable_data(), out.size(), T(0));
    return;
  }
  kernels<T>(be).reduce(op, x.data(), out.mutable_data(), sp.outer, sp.axis, sp.inner);
}

template <typename T>
Tensor<T> reduce(ReduceOp op, const Tensor<T>& x, std::int64_t axis, bool keepdims) {
  const std::int64_t ax = x.shape().normalize_axis(axis);
  Tensor<T> out(without_axis(x.shape(), ax, keepdims), x.get_memory_type(), x.get_device_id());
  reduce(op, x, axis, out);
  return out;
}

template <typename T>
T sum_all(const Tensor<T>& x) {
  Backend& be = backend_of(x);
  if (x.size() == 0) return T(0);
  Tensor<T> total(Shape{1}, x.get_memory_type(), x.get_device_id());
  kernels<T>(be).reduce(ReduceOp::Sum, x.data(), total.mutable_data(), 1, x.size(), 1);
  return total.get(0);
}

template <typename T>
Tensor<std::int64_t> argmax(const Tensor<T>& x, std::int64_t axis) {
  const std::int64_t ax = x.shape().normalize_axis(axis);
  MAGMADNN_CHECK(x.shape().dims()[ax] > 0, ShapeError,
                 "math::argmax: axis " << axis << " of x " << x.shape() << " is empty");
  Backend& be = backend_of(x);
  Tensor<std::int64_t> out(without_axis(x.shape(), ax, false), x.get_memory_type(), x.get_device_id());
  if (out.size() == 0) return out;
  const Split sp = split_at(x.shape(), ax);
  kernels<T>(be).argmax(x.data(), out.mutable_data(), sp.outer, sp.axis, sp.inner);
  return out;
}

// g's axes are grouped into maximal runs that are either all kept (out has
// the same size) or all summed (missing from out, or size 1 in out); each
// summed run is then one [outer, axis, inner] reduction. The common cases
// (a bias gradient {batch, n} -> {n}, or {n, 1} column sums) are one kernel.
template <typename T>
void reduce_to_shape(const Tensor<T>& g, Tensor<T>& out) {
  const Shape& sg = g.shape();
  const Shape& so = out.shape();
  bool ok = so.ndim() <= sg.ndim();
  const std::int64_t shift = sg.ndim() - so.ndim();
  for (std::int64_t i = 0; ok && i < so.ndim(); ++i) {
    const std::int64_t d = so.dims()[i];
    ok = d == 1 || d == sg.dims()[i + shift];
  }
  MAGMADNN_CHECK(ok, ShapeError,
                 "math::reduce_to_shape: out " << so << " does not broadcast to the gradient's shape " << sg);
  Backend& be = common_backend("reduce_to_shape", g, out);
  Kernels<T>& k = kernels<T>(be);
  if (out.size() == 0) return;
  if (g.size() == 0) {
    k.fill(out.mutable_data(), out.size(), T(0));
    return;
  }

  struct Run {
    std::int64_t size;
    bool summed;
  };
  std::vector<Run> runs;
  for (std::int64_t i = 0; i < sg.ndim(); ++i) {
    const std::int64_t d = sg.dims()[i];
    if (d == 1) continue;  // size 1 in g: kept and summed are the same
    const bool summed = i < shift || so.dims()[i - shift] == 1;
    if (!runs.empty() && runs.back().summed == summed) {
      runs.back().size *= d;
    } else {
      runs.push_back({d, summed});
    }
  }
  std::size_t remaining = 0;
  for (const Run& r : runs) remaining += r.summed ? 1 : 0;
  if (remaining == 0) {
    k.copy(g.data(), out.mutable_data(), g.size());
    return;
  }

  // Sum the runs from the left; intermediate results go to scratch tensors in
  // g's memory, the last one straight into out.
  Tensor<T> scratch;
  const T* src = g.data();
  std::int64_t outer = 1;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].summed) {
      outer *= runs[i].size;
      continue;
    }
    std::int64_t inner = 1;
    for (std::size_t j = i + 1; j < runs.size(); ++j) inner *= runs[j].size;
    --remaining;
    if (remaining == 0) {
      k.reduce(ReduceOp::Sum, src, out.mutable_data(), outer, runs[i].size, inner);
    } else {
      Tensor<T> next(Shape{outer * inner}, g.get_memory_type(), g.get_device_id());
      k.reduce(ReduceOp::Sum, src, next.mutable_data(), outer, runs[i].size, inner);
      scratch = std::move(next);
      src = scratch.data();
    }
  }
}

template <typename T>
void softmax(const Tensor<T>& x, Tensor<T>& y, bool log) {
  MAGMADNN_CHECK(x.ndim() >= 1 && x.shape() == y.shape(), ShapeError,
                 "math::" << (log ? "log_softmax" : "softmax") << ": x " << x.shape() << " and y " << y.shape()
                          << " must have one shape with at least one axis");
  Backend& be = common_backend(log ? "log_softmax" : "softmax", x, y);
  if (x.size() == 0) return;
  const std::int64_t cols = x.shape()[-1];
  kernels<T>(be).softmax(x.data(), y.mutable_data(), x.size() / cols, cols, log);
}

template <typename T>
void softmax_backward(const Tensor<T>& y, const Tensor<T>& dy, Tensor<T>& dx, bool log) {
  MAGMADNN_CHECK(y.ndim() >= 1 && dy.shape() == y.shape() && dx.shape() == y.shape(), ShapeError,
                 "math::softmax_backward: y " << y.shape() << ", dy " << dy.shape() << " and dx " << dx.shape()
                                              << " must have one shape with at least one axis");
  Backend& be = common_backend("softmax_backward", y, dy, dx);
  if (y.size() == 0) return;
  const std::int64_t cols = y.shape()[-1];
  kernels<T>(be).softmax_backward(y.data(), dy.data(), dx.mutable_data(), y.size() / cols, cols, log);
}

namespace {
void check_xent(const char* what, const Shape& a, const Shape& b, const Shape& c) {
  MAGMADNN_CHECK(a.ndim() == 2 && b == a && c == a, ShapeError,
                 "math::" << what << ": " << a << ", " << b << " and " << c
                          << " must be one {batch, classes} shape");
}
}  // namespace

template <typename T>
bool softmax_xent(const Tensor<T>& z, const Tensor<T>& y, Tensor<T>& logp, double& total) {
  check_xent("softmax_xent", z.shape(), y.shape(), logp.shape());
  Backend& be = common_backend("softmax_xent", z, y, logp);
  return kernels<T>(be).softmax_xent(z.data(), y.data(), logp.mutable_data(), z.shape()[0], z.shape()[1], &total);
}

template <typename T>
bool softmax_xent_backward(const Tensor<T>& logp, const Tensor<T>& y, Tensor<T>& dz, T s) {
  check_xent("softmax_xent_backward", logp.shape(), y.shape(), dz.shape());
  Backend& be = common_backend("softmax_xent_backward", logp, y, dz);
  return kernels<T>(be).softmax_xent_backward(logp.data(), y.data(), dz.mutable_data(), logp.shape()[0],
                                              logp.shape()[1], s);
}

#define MAGMADNN_INSTANTIATE(T)                                                       \
  template bool softmax_xent<T>(const Tensor<T>&, const Tensor<T>&, Tensor<T>&, double&); \
  template bool softmax_xent_backward<T>(const Tensor<T>&, const Tensor<T>&, Tensor<T>&, T); \
  template void reduce<T>(ReduceOp, const Tensor<T>&, std::int64_t, Tensor<T>&);      \
  template Tensor<T> reduce<T>(ReduceOp, const Tensor<T>&, std::int64_t, bool);       \
  template T sum_all<T>(const Tensor<T>&);                                            \
  template Tensor<std::int64_t> argmax<T>(const Tensor<T>&, std::int64_t);            \
  template void reduce_to_shape<T>(const Tensor<T>&, Tensor<T>&);                     \
  template void softmax<T>(const Tensor<T>&, Tensor<T>&, bool);                       \
  template void softmax_backward<T>(const Tensor<T>&, const Tensor<T>&, Tensor<T>&, bool);
MAGMADNN_INSTANTIATE(float)
MAGMADNN_INSTANTIATE(double)
#undef MAGMADNN_INSTANTIATE

}  // namespace magmadnn::math

/// @file grad_utils.h
/// Internal helpers shared by the ops' forward and backward passes.
#pragma once

#include <string>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::op::detail {

/// A fresh tensor of `shape` holding g summed back over broadcast axes (the
/// gradient of broadcasting); a deep copy when no axis was broadcast.
template <typename T>
Tensor<T> reduce_grad(const Tensor<T>& g, const Shape& shape) {
  if (g.shape() == shape) return Tensor<T>(g);
  Tensor<T> out(shape, g.get_memory_type(), g.get_device_id());
  math::reduce_to_shape(g, out);
  return out;
}

/// A fresh tensor of `shape` where g is broadcast (g's shape must broadcast
/// to `shape`): the gradient of a reduction.
template <typename T>
Tensor<T> expand_grad(const Tensor<T>& g, const Shape& shape) {
  Tensor<T> out(shape, g.get_memory_type(), g.get_device_id());
  math::fill(out, T(0));
  math::binary(BinaryOp::Add, out, g, out);
  return out;
}

/// broadcast_shapes, with the op's name in front of the error.
inline Shape broadcast_for(const char* op, const Shape& a, const Shape& b) {
  try {
    return broadcast_shapes(a, b);
  } catch (const ShapeError&) {
    MAGMADNN_THROW(ShapeError, op << ": shapes " << a << " and " << b << " cannot be broadcast");
  }
}

/// The scalar value of a {1}-shaped gradient (losses), read on the host.
template <typename T>
T scalar_of(const Tensor<T>& g) {
  return g.get(std::int64_t{0});
}

/// A tensor of `shape` filled with `v`, in the memory of `like`.
template <typename T>
Tensor<T> full_like(const Shape& shape, T v, const Tensor<T>& like) {
  Tensor<T> out(shape, like.get_memory_type(), like.get_device_id());
  math::fill(out, v);
  return out;
}

}  // namespace magmadnn::op::detail

/// @file pool_impl.h
/// Pooling kernels of one device kind (max and average, forward and
/// backward), found through a registry like the convolution algorithms so
/// the CPU code never includes a GPU header.
///
/// Pointers are dense NCHW arrays in the memory of the implementation's
/// device. `argmax` (Max mode only) holds, per output element, the flat index
/// within its input plane (h * W + w) of the chosen element; forward writes
/// it when not null and backward reads it when not null (otherwise backward
/// recomputes the maximum from x). Ties pick the first element in row-major
/// window order. Outputs are overwritten; dx is fully written (zeros where
/// no window reaches).
#pragma once

#include <cstdint>
#include <memory>

#include "magmadnn/backend/backend.h"
#include "magmadnn/conv/conv_params.h"

namespace magmadnn::conv {

template <typename T>
class PoolImpl {
 public:
  virtual ~PoolImpl() = default;
  virtual DeviceKind device() const noexcept = 0;
  /// y = pool(x); x has shape x_shape {N, C, H, W}.
  virtual void forward(const Shape& x_shape, const PoolParams& p, const T* x, T* y, std::int32_t* argmax) = 0;
  /// dx from dy (and x or argmax for Max).
  virtual void backward(const Shape& x_shape, const PoolParams& p, const T* x, const T* dy,
                        const std::int32_t* argmax, T* dx) = 0;
};

/// The implementation for a device kind, or nullptr when there is none.
template <typename T>
PoolImpl<T>* find_pool_impl(DeviceKind device);

namespace detail {
template <typename T>
void register_pool_impl(std::unique_ptr<PoolImpl<T>> impl);
}  // namespace detail

}  // namespace magmadnn::conv

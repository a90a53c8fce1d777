/// @file pool_impl.h
/// Pooling kernels of one device kind (max and average, forward and
/// backward), found through a registry like the convolution algorithms so
/// the CPU code never includes a GPU header. A device may have several: one
/// reference (ours: pool_cpu.cpp, pool_cuda.cu), which supports everything,
/// and others (oneDNN's on the CPU, float) that pool_chooser.h times against
/// it per problem.
///
/// Pointers are dense NCHW arrays in the memory of the implementation's
/// device. `argmax` (Max mode only) holds, per output element, the flat index
/// within its input plane (h * W + w) of the chosen element; forward writes
/// it when not null and backward reads it when not null (otherwise backward
/// recomputes the maximum from x). Ties pick the first element in row-major
/// window order. Outputs are overwritten; dx is fully written (zeros where
/// no window reaches). Every implementation keeps this argmax convention, so
/// a forward by one and a backward by another agree.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "magmadnn/backend/backend.h"
#include "magmadnn/conv/conv_params.h"

namespace magmadnn::conv {

template <typename T>
class PoolImpl {
 public:
  virtual ~PoolImpl() = default;
  virtual DeviceKind device() const noexcept = 0;
  /// Short name for tables and messages: "cpu", "cuda", "onednn".
  virtual const char* name() const noexcept = 0;
  /// The reference of its device: supports every problem.
  virtual bool reference() const noexcept { return true; }
  /// Whether this implementation computes pooling of x_shape with p.
  virtual bool supports(const Shape& x_shape, const PoolParams& p) const {
    (void)x_shape, (void)p;
    return true;
  }
  /// y = pool(x); x has shape x_shape {N, C, H, W}.
  virtual void forward(const Shape& x_shape, const PoolParams& p, const T* x, T* y, std::int32_t* argmax) = 0;
  /// dx from dy (and x or argmax for Max).
  virtual void backward(const Shape& x_shape, const PoolParams& p, const T* x, const T* dy,
                        const std::int32_t* argmax, T* dx) = 0;
};

/// The reference implementation for a device kind, or nullptr when there is none.
template <typename T>
PoolImpl<T>* find_pool_impl(DeviceKind device);
/// Every implementation for a device kind, the reference first.
template <typename T>
std::vector<PoolImpl<T>*> pool_impls(DeviceKind device);

namespace detail {
template <typename T>
void register_pool_impl(std::unique_ptr<PoolImpl<T>> impl);
}  // namespace detail

}  // namespace magmadnn::conv

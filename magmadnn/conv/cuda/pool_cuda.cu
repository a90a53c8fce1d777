// Max and average pooling on the GPU (PoolImpl<T> for DeviceKind::CUDA).
//
// Forward: one thread per output element scans its window. Backward is a
// gather, one thread per input element summing over the windows that contain
// it, so no atomics are needed and the result is deterministic (the same
// order on every run). Max pooling routes each window's gradient to the
// element recorded in argmax (or, without argmax, to the window's maximum
// found again from x); ties go to the first element in row-major window
// order, as on the CPU. Padding never wins a max and, unless
// count_include_pad, does not count in an average.
#include <memory>

#include "magmadnn/backend/cuda/cuda_common.cuh"
#include "magmadnn/conv/cuda/conv_context_cuda.h"
#include "magmadnn/conv/pool_impl.h"

namespace magmadnn::conv::cuda {
namespace {

using magmadnn::cuda::global_thread;
using magmadnn::cuda::grid_stride;

constexpr int kBlock = 256;

struct PoolGeo {
  std::int64_t H, W, P, Q, kh, kw, ph, pw, sh, sw;
  bool include_pad;
};

// Flat index (h * W + w) of the first maximum of the window starting at
// (h0, w0) within `plane`, or -1 if the window holds no input element.
template <typename T>
__device__ std::int32_t window_argmax(const T* plane, const PoolGeo& g, std::int64_t h0, std::int64_t w0) {
  std::int32_t arg = -1;
  T best = 0;
  for (std::int64_t r = 0; r < g.kh; ++r) {
    const std::int64_t h = h0 + r;
    if (h < 0 || h >= g.H) continue;
    for (std::int64_t s = 0; s < g.kw; ++s) {
      const std::int64_t w = w0 + s;
      if (w < 0 || w >= g.W) continue;
      const T v = plane[h * g.W + w];
      if (arg < 0 || v > best) best = v, arg = static_cast<std::int32_t>(h * g.W + w);
    }
  }
  return arg;
}

// Divisor of the average over the window starting at (h0, w0).
__device__ inline std::int64_t window_count(const PoolGeo& g, std::int64_t h0, std::int64_t w0) {
  if (g.include_pad) return g.kh * g.kw;
  const std::int64_t rows = min(h0 + g.kh, g.H) - max(h0, std::int64_t{0});
  const std::int64_t cols = min(w0 + g.kw, g.W) - max(w0, std::int64_t{0});
  return rows > 0 && cols > 0 ? rows * cols : 1;
}

template <typename T>
__global__ void max_forward(PoolGeo g, const T* __restrict__ x, T* __restrict__ y, std::int32_t* __restrict__ argmax,
                            std::int64_t total) {
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t q = i % g.Q, p = (i / g.Q) % g.P, plane = i / (g.Q * g.P);
    const T* xp = x + plane * g.H * g.W;
    const std::int32_t arg = window_argmax(xp, g, p * g.sh - g.ph, q * g.sw - g.pw);
    y[i] = arg >= 0 ? xp[arg] : T(0);
    if (argmax) argmax[i] = arg;
  }
}

template <typename T>
__global__ void avg_forward(PoolGeo g, const T* __restrict__ x, T* __restrict__ y, std::int64_t total) {
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t q = i % g.Q, p = (i / g.Q) % g.P, plane = i / (g.Q * g.P);
    const T* xp = x + plane * g.H * g.W;
    const std::int64_t h0 = p * g.sh - g.ph, w0 = q * g.sw - g.pw;
    T acc = 0;
    for (std::int64_t h = max(h0, std::int64_t{0}); h < min(h0 + g.kh, g.H); ++h)
      for (std::int64_t w = max(w0, std::int64_t{0}); w < min(w0 + g.kw, g.W); ++w) acc += xp[h * g.W + w];
    y[i] = acc / static_cast<T>(window_count(g, h0, w0));
  }
}

// The output rows (or columns) whose windows contain input row h: p with
// p*stride - pad <= h < p*stride - pad + k, clipped to [0, P).
__device__ inline void covering(std::int64_t h, std::int64_t k, std::int64_t pad, std::int64_t stride,
                                std::int64_t P, std::int64_t& lo, std::int64_t& hi) {
  const std::int64_t first = h + pad - k + 1;
  lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  hi = min((h + pad) / stride, P - 1);
}

template <typename T>
__global__ void pool_backward(PoolGeo g, bool is_max, const T* __restrict__ x, const T* __restrict__ dy,
                              const std::int32_t* __restrict__ argmax, T* __restrict__ dx, std::int64_t total) {
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t w = i % g.W, h = (i / g.W) % g.H, plane = i / (g.W * g.H);
    const std::int32_t me = static_cast<std::int32_t>(h * g.W + w);
    const T* dyp = dy + plane * g.P * g.Q;
    std::int64_t p0, p1, q0, q1;
    covering(h, g.kh, g.ph, g.sh, g.P, p0, p1);
    covering(w, g.kw, g.pw, g.sw, g.Q, q0, q1);
    T acc = 0;
    for (std::int64_t p = p0; p <= p1; ++p)
      for (std::int64_t q = q0; q <= q1; ++q) {
        const std::int64_t h0 = p * g.sh - g.ph, w0 = q * g.sw - g.pw;
        if (is_max) {
          const std::int32_t arg = argmax ? argmax[plane * g.P * g.Q + p * g.Q + q]
                                          : window_argmax(x + plane * g.H * g.W, g, h0, w0);
          if (arg == me) acc += dyp[p * g.Q + q];
        } else {
          acc += dyp[p * g.Q + q] / static_cast<T>(window_count(g, h0, w0));
        }
      }
    dx[i] = acc;
  }
}

PoolGeo geo_of(const Shape& xs, const PoolParams& p) {
  const Shape ys = pool_output_shape(xs, p);
  return {xs[2], xs[3], ys[2], ys[3], p.kernel_h, p.kernel_w, p.pad_h, p.pad_w, p.stride_h, p.stride_w,
          p.count_include_pad};
}

template <typename T>
class PoolCuda final : public PoolImpl<T> {
 public:
  DeviceKind device() const noexcept override { return DeviceKind::CUDA; }
  const char* name() const noexcept override { return "cuda"; }

  void forward(const Shape& xs, const PoolParams& p, const T* x, T* y, std::int32_t* argmax) override {
    const PoolGeo g = geo_of(xs, p);
    MAGMADNN_CHECK(g.H * g.W <= INT32_MAX, ShapeError,
                   "max pooling: a plane of " << xs << " has more elements than a 32-bit argmax index can hold");
    const std::int64_t total = xs[0] * xs[1] * g.P * g.Q;
    if (total == 0) return;
    ConvCall call;
    const Launch on = call.launch();
    if (p.mode == PoolMode::Max)
      max_forward<T><<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(g, x, y, argmax, total);
    else
      avg_forward<T><<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(g, x, y, total);
    MAGMADNN_KERNEL_CHECK();
    call.finish();
  }

  void backward(const Shape& xs, const PoolParams& p, const T* x, const T* dy, const std::int32_t* argmax,
                T* dx) override {
    const PoolGeo g = geo_of(xs, p);
    const std::int64_t total = xs.numel();
    if (total == 0) return;
    ConvCall call;
    const Launch on = call.launch();
    pool_backward<T><<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(g, p.mode == PoolMode::Max, x, dy, argmax, dx,
                                                                       total);
    MAGMADNN_KERNEL_CHECK();
    call.finish();
  }
};

const bool registered = [] {
  detail::register_pool_impl<float>(std::make_unique<PoolCuda<float>>());
  detail::register_pool_impl<double>(std::make_unique<PoolCuda<double>>());
  return true;
}();

}  // namespace
}  // namespace magmadnn::conv::cuda

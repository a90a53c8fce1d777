#include "magmadnn/conv/pool_blocked.h"

#include <algorithm>
#include <type_traits>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/conv/layout.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

void check_blocked(const Shape& x, int block, const char* what) {
  MAGMADNN_CHECK(x.ndim() == 4 && blockable(x, block) && cpu::walkable(x[1], block), ValueError,
                 what << ": x " << x << " cannot be held with a channel block of " << block);
}

// The walk of a {N, C, H, W} tensor in `layout`.
LaneWalk walk_of(const Shape& s, int layout) { return lane_walk(s[1], s[2] * s[3], layout); }

// f(image n, block index b) for every block of channels of every image: one
// task each, parallel where the tensor is large. The block starts at
// n * w.sample + b * w.block of a tensor walked by w.
template <typename F>
void for_planes(const Shape& x, const LaneWalk& w, F&& f) {
  const std::int64_t blocks = x[1] / w.lanes;
  cpu::parallel_for(x[0] * blocks, x.numel() > cpu::kParallelThreshold,
                    [&](std::int64_t t) { f(t / blocks, t % blocks); });
}

template <int B>
void mean_planes(const float* x, float* y, const Shape& s, const LaneWalk& w) {
  const std::int64_t r = s[2] * s[3], c = s[1];
  for_planes(s, w, [&](std::int64_t n, std::int64_t b) {
    const float* p = x + n * w.sample + b * w.block;
    float sum[B] = {};
    for (std::int64_t i = 0; i < r; ++i)
      for (int l = 0; l < B; ++l) sum[l] += p[i * w.pixel + l];
    for (int l = 0; l < B; ++l) y[n * c + b * B + l] = sum[l] / static_cast<float>(r);
  });
}

template <int B>
void spread_planes(const float* dy, float* dx, const Shape& s, const LaneWalk& w) {
  const std::int64_t r = s[2] * s[3], c = s[1];
  for_planes(s, w, [&](std::int64_t n, std::int64_t b) {
    float v[B];
    for (int l = 0; l < B; ++l) v[l] = dy[n * c + b * B + l] / static_cast<float>(r);
    float* p = dx + n * w.sample + b * w.block;
    for (std::int64_t i = 0; i < r; ++i)
      for (int l = 0; l < B; ++l) p[i * w.pixel + l] = v[l];
  });
}

// Max over each window of one channel block's plane, B lanes at once; x
// walked by wx, y and the argmax by wy (the same layout).
template <int B>
void max_planes(const float* x, float* y, std::int32_t* am, const Shape& xs, const Shape& ys, const PoolParams& p,
                const LaneWalk& wx, const LaneWalk& wy) {
  const std::int64_t h = xs[2], w = xs[3], oh = ys[2], ow = ys[3];
  for_planes(xs, wx, [&](std::int64_t n, std::int64_t blk) {
    const float* xp = x + n * wx.sample + blk * wx.block;
    const std::int64_t yo = n * wy.sample + blk * wy.block;
    for (std::int64_t i = 0; i < oh; ++i) {
      const std::int64_t h0 = std::max<std::int64_t>(i * p.stride_h - p.pad_h, 0);
      const std::int64_t h1 = std::min(i * p.stride_h - p.pad_h + p.kernel_h, h);
      for (std::int64_t j = 0; j < ow; ++j) {
        const std::int64_t w0 = std::max<std::int64_t>(j * p.stride_w - p.pad_w, 0);
        const std::int64_t w1 = std::min(j * p.stride_w - p.pad_w + p.kernel_w, w);
        float m[B];
        std::int32_t at[B];
        for (int l = 0; l < B; ++l)
          m[l] = xp[(h0 * w + w0) * wx.pixel + l], at[l] = static_cast<std::int32_t>(h0 * w + w0);
        for (std::int64_t a = h0; a < h1; ++a)
          for (std::int64_t b = w0; b < w1; ++b) {
            const float* v = xp + (a * w + b) * wx.pixel;
            const auto pos = static_cast<std::int32_t>(a * w + b);
            for (int l = 0; l < B; ++l) {
              const bool more = v[l] > m[l];
              m[l] = more ? v[l] : m[l];
              at[l] = more ? pos : at[l];
            }
          }
        const std::int64_t o = yo + (i * ow + j) * wy.pixel;
        for (int l = 0; l < B; ++l) y[o + l] = m[l];
        if (am)
          for (int l = 0; l < B; ++l) am[o + l] = at[l];
      }
    }
  });
}

// dx = 0, then each dy added at its window's argmax. dx walked by wx, dy
// and the argmax by wy.
template <int B>
void scatter_planes(const float* dy, const std::int32_t* am, float* dx, const Shape& xs, const Shape& ys,
                    const LaneWalk& wx, const LaneWalk& wy) {
  const std::int64_t r = xs[2] * xs[3], outs = ys[2] * ys[3];
  for_planes(xs, wx, [&](std::int64_t n, std::int64_t blk) {
    float* d = dx + n * wx.sample + blk * wx.block;
    for (std::int64_t i = 0; i < r; ++i) std::fill(d + i * wx.pixel, d + i * wx.pixel + B, 0.0f);
    const std::int64_t yo = n * wy.sample + blk * wy.block;
    for (std::int64_t o = 0; o < outs; ++o) {
      const float* g = dy + yo + o * wy.pixel;
      const std::int32_t* a = am + yo + o * wy.pixel;
      for (int l = 0; l < B; ++l) d[static_cast<std::int64_t>(a[l]) * wx.pixel + l] += g[l];
    }
  });
}

// f(std::integral_constant<int, B>{}) for the lanes B of walk w (8 or 16).
template <typename F>
void with_lanes(const LaneWalk& w, F&& f) {
  if (w.lanes == 8) {
    f(std::integral_constant<int, 8>{});
  } else {
    f(std::integral_constant<int, 16>{});
  }
}

}  // namespace

bool max_pool_blocked_supports(const Shape& x, const PoolParams& p, int block) noexcept {
  return p.mode == PoolMode::Max && x.ndim() == 4 && blockable(x, block) && cpu::walkable(x[1], block) &&
         p.kernel_h > 0 && p.kernel_w > 0 && p.stride_h > 0 && p.stride_w > 0 && p.pad_h >= 0 && p.pad_w >= 0 &&
         p.pad_h < p.kernel_h && p.pad_w < p.kernel_w && p.kernel_h <= x[2] + 2 * p.pad_h &&
         p.kernel_w <= x[3] + 2 * p.pad_w;
}

Tensor<float> max_pool_blocked(const Tensor<float>& x, const PoolParams& p, int block, Tensor<std::int32_t>* argmax) {
  const Shape& s = x.shape();
  MAGMADNN_CHECK(max_pool_blocked_supports(s, p, block), ValueError,
                 "max pooling (blocked): x " << s << " with a " << p.kernel_h << "x" << p.kernel_w
                                             << " window (padding " << p.pad_h << "," << p.pad_w
                                             << ") cannot be pooled with a channel block of " << block);
  MAGMADNN_CHECK(!x.on_device(), ValueError, "max pooling (blocked): the blocked layout is for host tensors");
  const Shape ys = pool_output_shape(s, p);
  Tensor<float> y(ys, x.get_memory_type(), x.get_device_id());
  std::int32_t* am = nullptr;
  if (argmax) {
    if (argmax->shape() != ys || argmax->on_device()) *argmax = Tensor<std::int32_t>(ys, x.get_memory_type(), 0);
    am = argmax->mutable_data();
  }
  const LaneWalk wx = walk_of(s, block), wy = walk_of(ys, block);
  with_lanes(wx, [&](auto b) { max_planes<decltype(b)::value>(x.data(), y.mutable_data(), am, s, ys, p, wx, wy); });
  return y;
}

Tensor<float> max_pool_blocked_backward(const Tensor<float>& dy, const Tensor<std::int32_t>& argmax,
                                        const Shape& x_shape, const PoolParams& p, int block) {
  MAGMADNN_CHECK(max_pool_blocked_supports(x_shape, p, block), ValueError,
                 "max pooling backward (blocked): x " << x_shape << " cannot be pooled with a channel block of "
                                                      << block);
  const Shape ys = pool_output_shape(x_shape, p);
  MAGMADNN_CHECK(dy.shape() == ys && argmax.shape() == ys && !dy.on_device() && !argmax.on_device(), ValueError,
                 "max pooling backward (blocked): dy " << dy.shape() << " and argmax " << argmax.shape()
                                                       << " must be host tensors of shape " << ys << " for x "
                                                       << x_shape);
  Tensor<float> dx(x_shape, dy.get_memory_type(), dy.get_device_id());
  const LaneWalk wx = walk_of(x_shape, block), wy = walk_of(ys, block);
  with_lanes(wx, [&](auto b) {
    scatter_planes<decltype(b)::value>(dy.data(), argmax.data(), dx.mutable_data(), x_shape, ys, wx, wy);
  });
  return dx;
}

bool is_global_average(const Shape& x, const PoolParams& p) noexcept {
  return x.ndim() == 4 && p.mode == PoolMode::Average && p.pad_h == 0 && p.pad_w == 0 && p.kernel_h == x[2] &&
         p.kernel_w == x[3];
}

Tensor<float> global_average_pool_blocked(const Tensor<float>& x, int block) {
  const Shape& s = x.shape();
  check_blocked(s, block, "global average pooling (blocked)");
  MAGMADNN_CHECK(!x.on_device(), ValueError, "global average pooling (blocked): the blocked layout is for host tensors");
  Tensor<float> y({s[0], s[1], 1, 1}, x.get_memory_type(), x.get_device_id());
  const LaneWalk w = walk_of(s, block);
  with_lanes(w, [&](auto b) { mean_planes<decltype(b)::value>(x.data(), y.mutable_data(), s, w); });
  return y;
}

Tensor<float> global_average_pool_blocked_backward(const Tensor<float>& dy, const Shape& x_shape, int block) {
  check_blocked(x_shape, block, "global average pooling backward (blocked)");
  MAGMADNN_CHECK(!dy.on_device(), ValueError,
                 "global average pooling backward (blocked): the blocked layout is for host tensors");
  MAGMADNN_CHECK(dy.shape() == Shape({x_shape[0], x_shape[1], 1, 1}), ValueError,
                 "global average pooling backward (blocked): dy " << dy.shape() << " does not fit x " << x_shape);
  Tensor<float> dx(x_shape, dy.get_memory_type(), dy.get_device_id());
  const LaneWalk w = walk_of(x_shape, block);
  with_lanes(w, [&](auto b) { spread_planes<decltype(b)::value>(dy.data(), dx.mutable_data(), x_shape, w); });
  return dx;
}

}  // namespace magmadnn::conv

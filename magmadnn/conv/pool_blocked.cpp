#include "magmadnn/conv/pool_blocked.h"

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/conv/layout.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

void check_blocked(const Shape& x, int block, const char* what) {
  MAGMADNN_CHECK((block == 8 || block == 16) && blockable(x, block), ValueError,
                 what << ": x " << x << " cannot be held with a channel block of " << block);
}

// f(plane, image n, first channel c0) for every block of channels of every
// image: one task each, parallel where the tensor is large.
template <typename F>
void for_planes(const Shape& x, int block, F&& f) {
  const std::int64_t blocks = x[1] / block;
  cpu::parallel_for(x[0] * blocks, x.numel() > cpu::kParallelThreshold,
                    [&](std::int64_t t) { f(t, t / blocks, (t % blocks) * block); });
}

template <int B>
void mean_planes(const float* x, float* y, const Shape& s) {
  const std::int64_t r = s[2] * s[3], c = s[1];
  for_planes(s, B, [&](std::int64_t t, std::int64_t n, std::int64_t c0) {
    const float* p = x + t * r * B;
    float sum[B] = {};
    for (std::int64_t i = 0; i < r; ++i)
      for (int l = 0; l < B; ++l) sum[l] += p[i * B + l];
    for (int l = 0; l < B; ++l) y[n * c + c0 + l] = sum[l] / static_cast<float>(r);
  });
}

template <int B>
void spread_planes(const float* dy, float* dx, const Shape& s) {
  const std::int64_t r = s[2] * s[3], c = s[1];
  for_planes(s, B, [&](std::int64_t t, std::int64_t n, std::int64_t c0) {
    float v[B];
    for (int l = 0; l < B; ++l) v[l] = dy[n * c + c0 + l] / static_cast<float>(r);
    float* p = dx + t * r * B;
    for (std::int64_t i = 0; i < r; ++i)
      for (int l = 0; l < B; ++l) p[i * B + l] = v[l];
  });
}

}  // namespace

bool is_global_average(const Shape& x, const PoolParams& p) noexcept {
  return x.ndim() == 4 && p.mode == PoolMode::Average && p.pad_h == 0 && p.pad_w == 0 && p.kernel_h == x[2] &&
         p.kernel_w == x[3];
}

Tensor<float> global_average_pool_blocked(const Tensor<float>& x, int block) {
  const Shape& s = x.shape();
  check_blocked(s, block, "global average pooling (blocked)");
  MAGMADNN_CHECK(!x.on_device(), ValueError, "global average pooling (blocked): the blocked layout is for host tensors");
  Tensor<float> y({s[0], s[1], 1, 1}, x.get_memory_type(), x.get_device_id());
  if (block == 8) {
    mean_planes<8>(x.data(), y.mutable_data(), s);
  } else {
    mean_planes<16>(x.data(), y.mutable_data(), s);
  }
  return y;
}

Tensor<float> global_average_pool_blocked_backward(const Tensor<float>& dy, const Shape& x_shape, int block) {
  check_blocked(x_shape, block, "global average pooling backward (blocked)");
  MAGMADNN_CHECK(!dy.on_device(), ValueError,
                 "global average pooling backward (blocked): the blocked layout is for host tensors");
  MAGMADNN_CHECK(dy.shape() == Shape({x_shape[0], x_shape[1], 1, 1}), ValueError,
                 "global average pooling backward (blocked): dy " << dy.shape() << " does not fit x " << x_shape);
  Tensor<float> dx(x_shape, dy.get_memory_type(), dy.get_device_id());
  if (block == 8) {
    spread_planes<8>(dy.data(), dx.mutable_data(), x_shape);
  } else {
    spread_planes<16>(dy.data(), dx.mutable_data(), x_shape);
  }
  return dx;
}

}  // namespace magmadnn::conv

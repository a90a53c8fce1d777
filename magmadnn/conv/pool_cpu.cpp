// Max and average pooling on the host, one (image, channel) plane per task.
#include <algorithm>
#include <cstring>
#include <limits>

#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/simd_clones.h"
#include "magmadnn/conv/pool_impl.h"

namespace magmadnn::conv {
namespace {

using magmadnn::cpu::parallel_for;

struct Plane {
  std::int64_t planes, h, w, oh, ow;
  Plane(const Shape& x, const PoolParams& p) {
    const Shape y = pool_output_shape(x, p);
    planes = x[0] * x[1], h = x[2], w = x[3], oh = y[2], ow = y[3];
  }
};

// 2x2 max windows with stride 2 and no padding (LeNet-5's, VGG's, most
// networks'): one plane without bounds checks, written so that GCC
// vectorises it, which the general loop below, with its clipped windows,
// defeats (LeNet-5's first pool: 0.15 ms a step of 64 images, most of a
// step's pooling). Ties and NaNs resolve as in the general loop: the first
// of (0,0), (0,1), (1,0), (1,1) that no later element is strictly greater than.
bool is_max2x2(const PoolParams& p) {
  return p.mode == PoolMode::Max && p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 &&
         p.pad_h == 0 && p.pad_w == 0;
}

template <typename T>
MAGMADNN_SIMD_CLONES void max2x2_plane(const T* xp, std::int64_t w, std::int64_t oh, std::int64_t ow, T* y,
                                       std::int32_t* argmax) {
  for (std::int64_t i = 0; i < oh; ++i) {
    const T* r0 = xp + 2 * i * w;
    const T* r1 = r0 + w;
    const auto row = static_cast<std::int32_t>(2 * i * w), down = static_cast<std::int32_t>(w);
    for (std::int64_t j = 0; j < ow; ++j) {
      // Masks and std::max (one maxss/maxps: b if b > best, else best), not
      // ?:, which GCC turns into branches in the loop's scalar remainder,
      // most of a row as short as LeNet-5's 14 or 5 outputs; on a trained
      // network's activations those mispredict (the pool ran 7x slower).
      T best = r0[2 * j];
      const T b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
      std::int32_t m = -static_cast<std::int32_t>(b > best);
      std::int32_t off = m & 1;
      best = std::max(best, b);
      m = -static_cast<std::int32_t>(c > best);
      off = (off & ~m) | (down & m);
      best = std::max(best, c);
      m = -static_cast<std::int32_t>(d > best);
      off = (off & ~m) | ((down + 1) & m);
      best = std::max(best, d);
      y[i * ow + j] = best;
      if (argmax) argmax[i * ow + j] = row + static_cast<std::int32_t>(2 * j) + off;
    }
  }
}

template <typename T>
class CpuPool final : public PoolImpl<T> {
 public:
  DeviceKind device() const noexcept override { return DeviceKind::CPU; }
  const char* name() const noexcept override { return "cpu"; }

  void forward(const Shape& xs, const PoolParams& p, const T* x, T* y, std::int32_t* argmax) override {
    const Plane g(xs, p);
    parallel_for(g.planes, g.planes * g.oh * g.ow * p.kernel_h * p.kernel_w > (1 << 15), [&](std::int64_t pl) {
      const T* xp = x + pl * g.h * g.w;
      if (is_max2x2(p)) {
        max2x2_plane(xp, g.w, g.oh, g.ow, y + pl * g.oh * g.ow, argmax ? argmax + pl * g.oh * g.ow : nullptr);
        return;
      }
      for (std::int64_t i = 0; i < g.oh; ++i) {
        for (std::int64_t j = 0; j < g.ow; ++j) {
          const std::int64_t h0 = i * p.stride_h - p.pad_h, w0 = j * p.stride_w - p.pad_w;
          const std::int64_t o = (pl * g.oh + i) * g.ow + j;
          if (p.mode == PoolMode::Max) {
            // Selects rather than branches: on real data which element wins
            // is unpredictable, and the mispredictions cost more than the
            // loads (a 2x2 pool of LeNet-5's first layer ran 5x slower).
            const std::int64_t a0 = std::max<std::int64_t>(h0, 0), b0 = std::max<std::int64_t>(w0, 0);
            T best = xp[a0 * g.w + b0];
            std::int64_t at = a0 * g.w + b0;
            for (std::int64_t a = a0; a < std::min(h0 + p.kernel_h, g.h); ++a)
              for (std::int64_t b = b0; b < std::min(w0 + p.kernel_w, g.w); ++b) {
                const T v = xp[a * g.w + b];
                const bool gt = v > best;
                best = gt ? v : best;
                at = gt ? a * g.w + b : at;
              }
            y[o] = best;
            if (argmax) argmax[o] = static_cast<std::int32_t>(at);
          } else {
            T sum = 0;
            std::int64_t count = 0;
            for (std::int64_t a = std::max<std::int64_t>(h0, 0); a < std::min(h0 + p.kernel_h, g.h); ++a)
              for (std::int64_t b = std::max<std::int64_t>(w0, 0); b < std::min(w0 + p.kernel_w, g.w); ++b)
                sum += xp[a * g.w + b], ++count;
            y[o] = sum / static_cast<T>(divisor(p, h0, w0, g, count));
          }
        }
      }
    });
  }

  void backward(const Shape& xs, const PoolParams& p, const T* x, const T* dy, const std::int32_t* argmax,
                T* dx) override {
    const Plane g(xs, p);
    parallel_for(g.planes, g.planes * g.oh * g.ow * p.kernel_h * p.kernel_w > (1 << 15), [&](std::int64_t pl) {
      const T* xp = x ? x + pl * g.h * g.w : nullptr;
      T* dxp = dx + pl * g.h * g.w;
      std::memset(dxp, 0, sizeof(T) * g.h * g.w);
      if (argmax && is_max2x2(p)) {  // windows that do not overlap: a plain scatter
        const std::int64_t o0 = pl * g.oh * g.ow;
        for (std::int64_t o = o0; o < o0 + g.oh * g.ow; ++o) dxp[argmax[o]] = dy[o];
        return;
      }
      for (std::int64_t i = 0; i < g.oh; ++i) {
        for (std::int64_t j = 0; j < g.ow; ++j) {
          const std::int64_t h0 = i * p.stride_h - p.pad_h, w0 = j * p.stride_w - p.pad_w;
          const std::int64_t o = (pl * g.oh + i) * g.ow + j;
          const std::int64_t a0 = std::max<std::int64_t>(h0, 0), a1 = std::min(h0 + p.kernel_h, g.h);
          const std::int64_t b0 = std::max<std::int64_t>(w0, 0), b1 = std::min(w0 + p.kernel_w, g.w);
          if (p.mode == PoolMode::Max) {
            std::int64_t at = argmax ? argmax[o] : -1;
            if (!argmax) {
              T best = T(0);
              for (std::int64_t a = a0; a < a1; ++a)
                for (std::int64_t b = b0; b < b1; ++b)
                  if (at < 0 || xp[a * g.w + b] > best) best = xp[a * g.w + b], at = a * g.w + b;
            }
            if (at >= 0) dxp[at] += dy[o];
          } else {
            const T share = dy[o] / static_cast<T>(divisor(p, h0, w0, g, (a1 - a0) * (b1 - b0)));
            for (std::int64_t a = a0; a < a1; ++a)
              for (std::int64_t b = b0; b < b1; ++b) dxp[a * g.w + b] += share;
          }
        }
      }
    });
  }

 private:
  // Average pooling's divisor: the valid elements, or (count_include_pad) the
  // window clipped to the padded image, as cuDNN and PyTorch do.
  static std::int64_t divisor(const PoolParams& p, std::int64_t h0, std::int64_t w0, const Plane& g,
                              std::int64_t valid) {
    if (!p.count_include_pad) return valid > 0 ? valid : 1;
    const std::int64_t hh = std::min(h0 + p.kernel_h, g.h + p.pad_h) - h0;
    const std::int64_t ww = std::min(w0 + p.kernel_w, g.w + p.pad_w) - w0;
    return hh * ww;
  }
};

struct PoolRegistrar {
  PoolRegistrar() {
    detail::register_pool_impl<float>(std::make_unique<CpuPool<float>>());
    detail::register_pool_impl<double>(std::make_unique<CpuPool<double>>());
  }
} const registrar;

}  // namespace
}  // namespace magmadnn::conv

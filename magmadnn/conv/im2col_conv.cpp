// im2col + GEMM: unfold each image's receptive fields into a
// (C/G * R * S) x (P * Q) matrix, then every pass is one GEMM per image and
// group. Supports every problem; the workspace is one unfolded image-group.
// A 1x1, stride-1, unpadded layer needs no unfolding: the image is the matrix.
#include <cstring>

#include "magmadnn/conv/cpu_conv_util.h"

namespace magmadnn::conv {
namespace {

using cpu_detail::gemm;
using cpu_detail::kParallelWork;
using magmadnn::cpu::parallel_for;

bool is_pointwise(const ConvProblem& pr) {
  const auto& g = pr.geom;
  return pr.r == 1 && pr.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}

// col[(c*R + r)*S + s][p*Q + q] = x[c, p*sh - ph + r*dh, q*sw - pw + s*dw] (0 outside), for cg channels.
template <typename T>
void im2col(const ConvProblem& pr, std::int64_t cg, const T* x, T* col) {
  const auto& g = pr.geom;
  const std::int64_t rows = cg * pr.r * pr.s;
  parallel_for(rows, rows * pr.p * pr.q > kParallelWork, [&](std::int64_t row) {
    const std::int64_t c = row / (pr.r * pr.s), r = (row / pr.s) % pr.r, s = row % pr.s;
    const T* xp = x + c * pr.h * pr.w;
    T* out = col + row * pr.p * pr.q;
    for (std::int64_t p = 0; p < pr.p; ++p) {
      const std::int64_t hi = p * g.stride_h - g.pad_h + r * g.dilation_h;
      T* o = out + p * pr.q;
      if (hi < 0 || hi >= pr.h) {
        std::memset(o, 0, sizeof(T) * pr.q);
        continue;
      }
      const T* xr = xp + hi * pr.w;
      const std::int64_t off = s * g.dilation_w - g.pad_w;
      for (std::int64_t q = 0; q < pr.q; ++q) {
        const std::int64_t wi = q * g.stride_w + off;
        o[q] = (wi >= 0 && wi < pr.w) ? xr[wi] : T(0);
      }
    }
  });
}

// dx[c, ...] += col folded back, for cg channels (each channel owns its plane, so channels run in parallel).
template <typename T>
void col2im(const ConvProblem& pr, std::int64_t cg, const T* col, T* dx) {
  const auto& g = pr.geom;
  parallel_for(cg, cg * pr.r * pr.s * pr.p * pr.q > kParallelWork, [&](std::int64_t c) {
    T* xp = dx + c * pr.h * pr.w;
    std::memset(xp, 0, sizeof(T) * pr.h * pr.w);
    for (std::int64_t r = 0; r < pr.r; ++r) {
      for (std::int64_t s = 0; s < pr.s; ++s) {
        const T* in = col + ((c * pr.r + r) * pr.s + s) * pr.p * pr.q;
        const std::int64_t off = s * g.dilation_w - g.pad_w;
        for (std::int64_t p = 0; p < pr.p; ++p) {
          const std::int64_t hi = p * g.stride_h - g.pad_h + r * g.dilation_h;
          if (hi < 0 || hi >= pr.h) continue;
          T* xr = xp + hi * pr.w;
          const T* ir = in + p * pr.q;
          for (std::int64_t q = 0; q < pr.q; ++q) {
            const std::int64_t wi = q * g.stride_w + off;
            if (wi >= 0 && wi < pr.w) xr[wi] += ir[q];
          }
        }
      }
    }
  });
}

template <typename T>
class Im2colConv final : public ConvAlgorithm<T> {
 public:
  Algo id() const noexcept override { return Algo::Im2colGemm; }
  DeviceKind device() const noexcept override { return DeviceKind::CPU; }
  bool supports(const ConvProblem&, Pass) const override { return true; }
  std::size_t workspace_bytes(const ConvProblem& pr, Pass pass) const override {
    if (is_pointwise(pr) && pass != Pass::BackwardData) return 0;
    return sizeof(T) * static_cast<std::size_t>(pr.c / pr.geom.groups * pr.r * pr.s * pr.p * pr.q);
  }

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws) override {
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G, crs = cg * pr.r * pr.s, pq = pr.p * pr.q;
    T* col = static_cast<T*>(ws);
    for (std::int64_t n = 0; n < pr.n; ++n) {
      for (std::int64_t gr = 0; gr < G; ++gr) {
        const T* xg = x + (n * pr.c + gr * cg) * pr.h * pr.w;
        const T* b = xg;
        if (!is_pointwise(pr)) {
          im2col(pr, cg, xg, col);
          b = col;
        }
        gemm<T>(false, false, kg, pq, crs, T(1), w + gr * kg * crs, crs, b, pq, T(0),
                y + (n * pr.k + gr * kg) * pq, pq);
      }
    }
    cpu_detail::add_bias(pr, bias, y);
  }

  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* ws) override {
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G, crs = cg * pr.r * pr.s, pq = pr.p * pr.q;
    T* col = static_cast<T*>(ws);
    for (std::int64_t n = 0; n < pr.n; ++n) {
      for (std::int64_t gr = 0; gr < G; ++gr) {
        T* dxg = dx + (n * pr.c + gr * cg) * pr.h * pr.w;
        const T* dyg = dy + (n * pr.k + gr * kg) * pq;
        if (is_pointwise(pr)) {
          gemm<T>(true, false, crs, pq, kg, T(1), w + gr * kg * crs, crs, dyg, pq, T(0), dxg, pq);
        } else {
          gemm<T>(true, false, crs, pq, kg, T(1), w + gr * kg * crs, crs, dyg, pq, T(0), col, pq);
          col2im(pr, cg, col, dxg);
        }
      }
    }
  }

  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* ws) override {
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G, crs = cg * pr.r * pr.s, pq = pr.p * pr.q;
    T* col = static_cast<T*>(ws);
    for (std::int64_t n = 0; n < pr.n; ++n) {
      for (std::int64_t gr = 0; gr < G; ++gr) {
        const T* xg = x + (n * pr.c + gr * cg) * pr.h * pr.w;
        const T* b = xg;
        if (!is_pointwise(pr)) {
          im2col(pr, cg, xg, col);
          b = col;
        }
        gemm<T>(false, true, kg, crs, pq, T(1), dy + (n * pr.k + gr * kg) * pq, pq, b, pq, n == 0 ? T(0) : T(1),
                dw + gr * kg * crs, crs);
      }
    }
    cpu_detail::bias_grad(pr, dy, db);
  }
};

const cpu_detail::Registrar<Im2colConv> registrar;

}  // namespace
}  // namespace magmadnn::conv

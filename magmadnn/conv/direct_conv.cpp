// The reference algorithm: each pass is the definition in conv_params.h,
// written as loops. Every other algorithm is tested against it, so it stays
// simple; accumulation is in double so that it is also the most accurate.
#include "magmadnn/conv/cpu_conv_util.h"

namespace magmadnn::conv {
namespace {

using cpu_detail::kParallelWork;
using magmadnn::cpu::parallel_for;

template <typename T>
class DirectConv final : public ConvAlgorithm<T> {
 public:
  Algo id() const noexcept override { return Algo::Direct; }
  DeviceKind device() const noexcept override { return DeviceKind::CPU; }
  bool supports(const ConvProblem&, Pass) const override { return true; }
  std::size_t workspace_bytes(const ConvProblem&, Pass) const override { return 0; }

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void*) override {
    const auto& g = pr.geom;
    const std::int64_t cg = pr.c / g.groups, kg = pr.k / g.groups;
    parallel_for(pr.n * pr.k, pr.macs() > kParallelWork, [&](std::int64_t nk) {
      const std::int64_t n = nk / pr.k, k = nk % pr.k, c0 = (k / kg) * cg;
      for (std::int64_t p = 0; p < pr.p; ++p) {
        for (std::int64_t q = 0; q < pr.q; ++q) {
          double acc = bias ? double(bias[k]) : 0.0;
          for (std::int64_t c = 0; c < cg; ++c) {
            const T* xp = x + ((n * pr.c + c0 + c) * pr.h) * pr.w;
            const T* wp = w + ((k * cg + c) * pr.r) * pr.s;
            for (std::int64_t r = 0; r < pr.r; ++r) {
              const std::int64_t hi = p * g.stride_h - g.pad_h + r * g.dilation_h;
              if (hi < 0 || hi >= pr.h) continue;
              for (std::int64_t s = 0; s < pr.s; ++s) {
                const std::int64_t wi = q * g.stride_w - g.pad_w + s * g.dilation_w;
                if (wi < 0 || wi >= pr.w) continue;
                acc += double(xp[hi * pr.w + wi]) * double(wp[r * pr.s + s]);
              }
            }
          }
          y[(nk * pr.p + p) * pr.q + q] = static_cast<T>(acc);
        }
      }
    });
  }

  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void*) override {
    const auto& g = pr.geom;
    const std::int64_t cg = pr.c / g.groups, kg = pr.k / g.groups;
    parallel_for(pr.n * pr.c, pr.macs() > kParallelWork, [&](std::int64_t nc) {
      const std::int64_t n = nc / pr.c, cc = nc % pr.c, grp = cc / cg, c = cc % cg;
      for (std::int64_t hi = 0; hi < pr.h; ++hi) {
        for (std::int64_t wi = 0; wi < pr.w; ++wi) {
          double acc = 0;
          for (std::int64_t r = 0; r < pr.r; ++r) {
            const std::int64_t ph = hi + g.pad_h - r * g.dilation_h;  // = p * stride_h
            if (ph < 0 || ph % g.stride_h) continue;
            const std::int64_t p = ph / g.stride_h;
            if (p >= pr.p) continue;
            for (std::int64_t s = 0; s < pr.s; ++s) {
              const std::int64_t qw = wi + g.pad_w - s * g.dilation_w;
              if (qw < 0 || qw % g.stride_w) continue;
              const std::int64_t q = qw / g.stride_w;
              if (q >= pr.q) continue;
              for (std::int64_t k = grp * kg; k < (grp + 1) * kg; ++k) {
                acc += double(dy[((n * pr.k + k) * pr.p + p) * pr.q + q]) *
                       double(w[((k * cg + c) * pr.r + r) * pr.s + s]);
              }
            }
          }
          dx[(nc * pr.h + hi) * pr.w + wi] = static_cast<T>(acc);
        }
      }
    });
  }

  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void*) override {
    const auto& g = pr.geom;
    const std::int64_t cg = pr.c / g.groups, kg = pr.k / g.groups;
    parallel_for(pr.k * cg, pr.macs() > kParallelWork, [&](std::int64_t kc) {
      const std::int64_t k = kc / cg, c = kc % cg, cc = (k / kg) * cg + c;
      for (std::int64_t r = 0; r < pr.r; ++r) {
        for (std::int64_t s = 0; s < pr.s; ++s) {
          double acc = 0;
          for (std::int64_t n = 0; n < pr.n; ++n) {
            const T* xp = x + (n * pr.c + cc) * pr.h * pr.w;
            const T* dyp = dy + (n * pr.k + k) * pr.p * pr.q;
            for (std::int64_t p = 0; p < pr.p; ++p) {
              const std::int64_t hi = p * g.stride_h - g.pad_h + r * g.dilation_h;
              if (hi < 0 || hi >= pr.h) continue;
              for (std::int64_t q = 0; q < pr.q; ++q) {
                const std::int64_t wi = q * g.stride_w - g.pad_w + s * g.dilation_w;
                if (wi < 0 || wi >= pr.w) continue;
                acc += double(xp[hi * pr.w + wi]) * double(dyp[p * pr.q + q]);
              }
            }
          }
          dw[(kc * pr.r + r) * pr.s + s] = static_cast<T>(acc);
        }
      }
    });
    cpu_detail::bias_grad(pr, dy, db);
  }
};

const cpu_detail::Registrar<DirectConv> registrar;

}  // namespace
}  // namespace magmadnn::conv

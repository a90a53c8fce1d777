// FFT convolution on the CPU with FFTW, for stride-1, undilated layers. It
// pays off for large kernels, whose direct cost grows with R * S while the
// FFT's does not.
//
// Each plane is zero-padded to Lh x Lw >= (H + 2 pad) x (W + 2 pad), so the
// circular products below equal the linear ones on every kept element:
//   forward:          Y[n,k]  = sum_c X[n,c] conj(W[k,c])   (correlation)
//   backward data:    DX[n,c] = sum_k DY[n,k] W[k,c]        (convolution)
//   backward filter:  DW[k,c] = sum_n conj(DY[n,k]) X[n,c]  (correlation)
// The spectra are stored frequency-major ([f][n][c], r2c written with a
// stride), so the sum over channels at each frequency is one complex GEMM
// (OpenBLAS ?gemm with its conjugate-transpose option). Images go in blocks
// so the spectra of a block stay within a bounded workspace.
//
// FFTW planning is not thread-safe, so plans are made under a mutex and
// cached per (size, stride, direction); executing a plan on new arrays is
// thread-safe, so planes are transformed in parallel, one plan per plane.
#include <fftw3.h>

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "magmadnn/conv/cpu_conv_util.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

using cpu_detail::align64;
using magmadnn::cpu::parallel_for;

template <typename T>
struct Fftw;
template <>
struct Fftw<double> {
  using plan_t = fftw_plan;
  static plan_t r2c(int lh, int lw, double* in, void* out, int ostride) {
    int n[2] = {lh, lw};
    return fftw_plan_many_dft_r2c(2, n, 1, in, nullptr, 1, 0, static_cast<fftw_complex*>(out), nullptr, ostride, 0,
                                  FFTW_ESTIMATE | FFTW_UNALIGNED);
  }
  static plan_t c2r(int lh, int lw, void* in, double* out, int istride) {
    int n[2] = {lh, lw};
    return fftw_plan_many_dft_c2r(2, n, 1, static_cast<fftw_complex*>(in), nullptr, istride, 0, out, nullptr, 1, 0,
                                  FFTW_ESTIMATE | FFTW_UNALIGNED);
  }
  static void exec_r2c(plan_t p, double* in, void* out) {
    fftw_execute_dft_r2c(p, in, static_cast<fftw_complex*>(out));
  }
  static void exec_c2r(plan_t p, void* in, double* out) {
    fftw_execute_dft_c2r(p, static_cast<fftw_complex*>(in), out);
  }
  static void destroy(plan_t p) { fftw_destroy_plan(p); }
  static void cgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const void* a, int lda,
                    const void* b, int ldb, bool accumulate, void* c, int ldc) {
    const double one[2] = {1, 0}, beta[2] = {accumulate ? 1.0 : 0.0, 0};
    cblas_zgemm(CblasRowMajor, ta, tb, m, n, k, one, a, lda, b, ldb, beta, c, ldc);
  }
};
template <>
struct Fftw<float> {
  using plan_t = fftwf_plan;
  static plan_t r2c(int lh, int lw, float* in, void* out, int ostride) {
    int n[2] = {lh, lw};
    return fftwf_plan_many_dft_r2c(2, n, 1, in, nullptr, 1, 0, static_cast<fftwf_complex*>(out), nullptr, ostride,
                                   0, FFTW_ESTIMATE | FFTW_UNALIGNED);
  }
  static plan_t c2r(int lh, int lw, void* in, float* out, int istride) {
    int n[2] = {lh, lw};
    return fftwf_plan_many_dft_c2r(2, n, 1, static_cast<fftwf_complex*>(in), nullptr, istride, 0, out, nullptr, 1,
                                   0, FFTW_ESTIMATE | FFTW_UNALIGNED);
  }
  static void exec_r2c(plan_t p, float* in, void* out) {
    fftwf_execute_dft_r2c(p, in, static_cast<fftwf_complex*>(out));
  }
  static void exec_c2r(plan_t p, void* in, float* out) {
    fftwf_execute_dft_c2r(p, static_cast<fftwf_complex*>(in), out);
  }
  static void destroy(plan_t p) { fftwf_destroy_plan(p); }
  static void cgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const void* a, int lda,
                    const void* b, int ldb, bool accumulate, void* c, int ldc) {
    const float one[2] = {1, 0}, beta[2] = {accumulate ? 1.0f : 0.0f, 0};
    cblas_cgemm(CblasRowMajor, ta, tb, m, n, k, one, a, lda, b, ldb, beta, c, ldc);
  }
};

// Plans per (Lh, Lw, stride, inverse), made once under a lock and never
// destroyed before exit.
template <typename T>
class PlanCache {
 public:
  using plan_t = typename Fftw<T>::plan_t;
  static PlanCache& get() {
    static PlanCache c;
    return c;
  }
  plan_t plan(bool inverse, int lh, int lw, int stride, T* real, void* cpx) {
    std::lock_guard lock(mu_);
    auto key = std::make_tuple(inverse, lh, lw, stride);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    plan_t p = inverse ? Fftw<T>::c2r(lh, lw, cpx, real, stride) : Fftw<T>::r2c(lh, lw, real, cpx, stride);
    MAGMADNN_CHECK(p != nullptr, NotSupportedError,
                   "fft conv: FFTW could not plan a " << lh << "x" << lw << " transform with stride " << stride);
    plans_.emplace(key, p);
    return p;
  }
  ~PlanCache() {
    for (auto& [k, p] : plans_) Fftw<T>::destroy(p);
  }

 private:
  std::mutex mu_;
  std::map<std::tuple<bool, int, int, int>, plan_t> plans_;
};

// Smallest even size >= n whose only prime factors are 2, 3, 5 and 7 (FFTW's fast sizes).
std::int64_t fft_size(std::int64_t n) {
  for (std::int64_t m = n + (n & 1);; m += 2) {
    std::int64_t r = m;
    for (int f : {2, 3, 5, 7})
      while (r % f == 0) r /= f;
    if (r == 1) return m;
  }
}

template <typename T>
struct Geometry {
  std::int64_t lh, lw, fw, f;  // padded plane, complex columns, complex elements per plane
  std::int64_t nb;             // images per block
  std::int64_t threads;
  std::size_t filt_bytes, xblk_bytes, yblk_bytes, scratch_bytes;
  static constexpr std::size_t kBlockBudget = std::size_t{64} << 20;

  explicit Geometry(const ConvProblem& pr) {
    lh = fft_size(pr.h + 2 * pr.geom.pad_h);
    lw = fft_size(pr.w + 2 * pr.geom.pad_w);
    fw = lw / 2 + 1;
    f = lh * fw;
    const std::size_t cpx = 2 * sizeof(T);
    const std::size_t per_image = cpx * f * (pr.c + pr.k);
    nb = std::clamp<std::int64_t>(static_cast<std::int64_t>(kBlockBudget / per_image), 1, pr.n);
    threads = omp_get_max_threads();
    filt_bytes = align64(cpx * f * pr.k * (pr.c / pr.geom.groups));
    xblk_bytes = align64(cpx * f * nb * pr.c);
    yblk_bytes = align64(cpx * f * nb * pr.k);
    scratch_bytes = align64(sizeof(T) * lh * lw);
  }
  std::size_t total() const { return filt_bytes + xblk_bytes + yblk_bytes + scratch_bytes * threads; }
};

template <typename T>
class FftConv final : public ConvAlgorithm<T> {
  using F = Fftw<T>;

 public:
  Algo id() const noexcept override { return Algo::FFT; }
  DeviceKind device() const noexcept override { return DeviceKind::CPU; }
  bool supports(const ConvProblem& pr, Pass) const override {
    const auto& g = pr.geom;
    return g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1;
  }
  std::size_t workspace_bytes(const ConvProblem& pr, Pass) const override { return Geometry<T>(pr).total(); }

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws) override {
    Work wk(pr, ws);
    filter_spectra(pr, wk, w);
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    for (std::int64_t n0 = 0; n0 < pr.n; n0 += wk.g.nb) {
      const std::int64_t nb = std::min(wk.g.nb, pr.n - n0);
      spectra(wk, x + n0 * pr.c * pr.h * pr.w, nb * pr.c, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w, wk.X);
      for (std::int64_t f = 0; f < wk.g.f; ++f) {
        for (std::int64_t g = 0; g < G; ++g) {
          F::cgemm(CblasNoTrans, CblasConjTrans, int(nb), int(kg), int(cg), cpx(wk.X, f * nb * pr.c + g * cg),
                   int(pr.c), cpx(wk.W, (f * pr.k + g * kg) * cg), int(cg), false,
                   cpx(wk.Y, f * nb * pr.k + g * kg), int(pr.k));
        }
      }
      planes(wk, wk.Y, nb * pr.k, y + n0 * pr.k * pr.p * pr.q, pr.p, pr.q, 0, 0, [&](std::int64_t plane) {
        return bias ? bias[plane % pr.k] : T(0);
      });
    }
  }

  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* ws) override {
    Work wk(pr, ws);
    filter_spectra(pr, wk, w);
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    for (std::int64_t n0 = 0; n0 < pr.n; n0 += wk.g.nb) {
      const std::int64_t nb = std::min(wk.g.nb, pr.n - n0);
      spectra(wk, dy + n0 * pr.k * pr.p * pr.q, nb * pr.k, pr.p, pr.q, 0, 0, wk.Y);
      for (std::int64_t f = 0; f < wk.g.f; ++f) {
        for (std::int64_t g = 0; g < G; ++g) {
          F::cgemm(CblasNoTrans, CblasNoTrans, int(nb), int(cg), int(kg), cpx(wk.Y, f * nb * pr.k + g * kg),
                   int(pr.k), cpx(wk.W, (f * pr.k + g * kg) * cg), int(cg), false,
                   cpx(wk.X, f * nb * pr.c + g * cg), int(pr.c));
        }
      }
      planes(wk, wk.X, nb * pr.c, dx + n0 * pr.c * pr.h * pr.w, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w,
             [](std::int64_t) { return T(0); });
    }
  }

  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* ws) override {
    Work wk(pr, ws);
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    for (std::int64_t n0 = 0; n0 < pr.n; n0 += wk.g.nb) {
      const std::int64_t nb = std::min(wk.g.nb, pr.n - n0);
      spectra(wk, x + n0 * pr.c * pr.h * pr.w, nb * pr.c, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w, wk.X);
      spectra(wk, dy + n0 * pr.k * pr.p * pr.q, nb * pr.k, pr.p, pr.q, 0, 0, wk.Y);
      for (std::int64_t f = 0; f < wk.g.f; ++f) {
        for (std::int64_t g = 0; g < G; ++g) {
          F::cgemm(CblasConjTrans, CblasNoTrans, int(kg), int(cg), int(nb), cpx(wk.Y, f * nb * pr.k + g * kg),
                   int(pr.k), cpx(wk.X, f * nb * pr.c + g * cg), int(pr.c), n0 > 0,
                   cpx(wk.W, (f * pr.k + g * kg) * cg), int(cg));
        }
      }
    }
    planes(wk, wk.W, pr.k * cg, dw, pr.r, pr.s, 0, 0, [](std::int64_t) { return T(0); });
    cpu_detail::bias_grad(pr, dy, db);
  }

 private:
  struct Work {
    Geometry<T> g;
    T *W, *X, *Y;
    unsigned char* scratch;
    Work(const ConvProblem& pr, void* ws) : g(pr) {
      auto* b = static_cast<unsigned char*>(ws);
      W = reinterpret_cast<T*>(b);
      X = reinterpret_cast<T*>(b + g.filt_bytes);
      Y = reinterpret_cast<T*>(b + g.filt_bytes + g.xblk_bytes);
      scratch = b + g.filt_bytes + g.xblk_bytes + g.yblk_bytes;
    }
    T* thread_scratch() const { return reinterpret_cast<T*>(scratch + g.scratch_bytes * omp_get_thread_num()); }
  };
  static T* cpx(T* base, std::int64_t complex_offset) { return base + 2 * complex_offset; }

  // out[f][plane] = rfft2 of each of `count` planes (ih x iw, placed at (ph, pw) in a zero Lh x Lw plane).
  void spectra(const Work& wk, const T* in, std::int64_t count, std::int64_t ih, std::int64_t iw, std::int64_t ph,
               std::int64_t pw, T* out) {
    const auto plan = PlanCache<T>::get().plan(false, int(wk.g.lh), int(wk.g.lw), int(count), wk.thread_scratch(), out);
    const bool par = count > 1 && wk.g.threads > 1;
#pragma omp parallel for schedule(static) if (par)
    for (std::int64_t pl = 0; pl < count; ++pl) {
      T* s = wk.thread_scratch();
      std::memset(s, 0, sizeof(T) * wk.g.lh * wk.g.lw);
      const T* src = in + pl * ih * iw;
      for (std::int64_t i = 0; i < ih; ++i) std::memcpy(s + (i + ph) * wk.g.lw + pw, src + i * iw, sizeof(T) * iw);
      F::exec_r2c(plan, s, cpx(out, pl));
    }
  }

  // out[plane] = crop (oh x ow from (ph, pw)) of irfft2 of in[f][plane], scaled, plus offset(plane).
  template <typename Off>
  void planes(const Work& wk, T* in, std::int64_t count, T* out, std::int64_t oh, std::int64_t ow, std::int64_t ph,
              std::int64_t pw, Off offset) {
    const auto plan = PlanCache<T>::get().plan(true, int(wk.g.lh), int(wk.g.lw), int(count), wk.thread_scratch(), in);
    const T scale = T(1) / static_cast<T>(wk.g.lh * wk.g.lw);
    const bool par = count > 1 && wk.g.threads > 1;
#pragma omp parallel for schedule(static) if (par)
    for (std::int64_t pl = 0; pl < count; ++pl) {
      T* s = wk.thread_scratch();
      F::exec_c2r(plan, cpx(in, pl), s);
      const T b = offset(pl);
      T* dst = out + pl * oh * ow;
      for (std::int64_t i = 0; i < oh; ++i) {
        const T* row = s + (i + ph) * wk.g.lw + pw;
        for (std::int64_t j = 0; j < ow; ++j) dst[i * ow + j] = row[j] * scale + b;
      }
    }
  }

  // W[f][k][c] = rfft2 of each filter plane.
  void filter_spectra(const ConvProblem& pr, const Work& wk, const T* w) {
    spectra(wk, w, pr.k * (pr.c / pr.geom.groups), pr.r, pr.s, 0, 0, wk.W);
  }
};

const cpu_detail::Registrar<FftConv> registrar;

}  // namespace
}  // namespace magmadnn::conv

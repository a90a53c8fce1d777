#include "magmadnn/conv/cuda/fft_cuda.h"

#include <cufft.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "magmadnn/backend/cuda/cuda_common.cuh"
#include "magmadnn/conv/cuda/conv_context_cuda.h"
#include "magmadnn/conv/cuda/conv_kernels_cuda.h"

#define MAGMADNN_CUFFT_CHECK(expr)                                                                            \
  do {                                                                                                       \
    const cufftResult magmadnn_fft_ = (expr);                                                                \
    if (magmadnn_fft_ != CUFFT_SUCCESS)                                                                      \
      ::magmadnn::cuda::detail::throw_status("cuFFT", #expr,                                                 \
                                             "cufftResult " + std::to_string(static_cast<int>(magmadnn_fft_)), \
                                             __FILE__, __LINE__);                                            \
  } while (0)

namespace magmadnn::conv::cuda {

std::int64_t fft_size(std::int64_t x) {
  for (std::int64_t n = std::max<std::int64_t>(x, 1);; ++n) {
    std::int64_t m = n;
    for (std::int64_t f : {2, 3, 5, 7})
      while (m % f == 0) m /= f;
    if (m == 1) return n;
  }
}

namespace {

using magmadnn::cuda::global_thread;
using magmadnn::cuda::grid_stride;

template <typename T>
using cx = std::conditional_t<std::is_same_v<T, float>, cufftComplex, cufftDoubleComplex>;

template <typename C>
__device__ inline C cmul(C a, C b) {  // a * b
  return {a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}
template <typename C>
__device__ inline C cmul_conj(C a, C b) {  // a * conj(b)
  return {a.x * b.x + a.y * b.y, a.y * b.x - a.x * b.y};
}

constexpr int kBlock = 256;
constexpr std::size_t kAlign = 256;
std::size_t align_up(std::size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

// dst {batch, l1, l2} = src {batch, h, w} placed at (oh, ow), zeros elsewhere.
template <typename T>
__global__ void pad_kernel(const T* __restrict__ src, std::int64_t batch, std::int64_t h, std::int64_t w,
                           T* __restrict__ dst, std::int64_t l1, std::int64_t l2, std::int64_t oh, std::int64_t ow) {
  const std::int64_t total = batch * l1 * l2;
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t j = i % l2, k = (i / l2) % l1, b = i / (l1 * l2);
    const std::int64_t si = k - oh, sj = j - ow;
    dst[i] = (si >= 0 && si < h && sj >= 0 && sj < w) ? src[(b * h + si) * w + sj] : T(0);
  }
}

// dst {batch, h, w} = scale * src {batch, l1, l2} read from (oh, ow).
template <typename T>
__global__ void crop_kernel(const T* __restrict__ src, std::int64_t batch, std::int64_t l1, std::int64_t l2,
                            std::int64_t oh, std::int64_t ow, T* __restrict__ dst, std::int64_t h, std::int64_t w,
                            T scale) {
  const std::int64_t total = batch * h * w;
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t j = i % w, k = (i / w) % h, b = i / (h * w);
    dst[i] = scale * src[(b * l1 + k + oh) * l2 + j + ow];
  }
}

// Y[b][k][f] = sum_c X[b][g*cg + c][f] * conj(Wh[k][c][f]).
template <typename C>
__global__ void forward_product(const C* __restrict__ X, const C* __restrict__ Wh, C* __restrict__ Y,
                                std::int64_t images, std::int64_t Cn, std::int64_t K, std::int64_t G, std::int64_t F) {
  const std::int64_t cg = Cn / G, kg = K / G, total = images * K * F;
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t f = i % F, k = (i / F) % K, b = i / (F * K);
    const C* x = X + (b * Cn + (k / kg) * cg) * F + f;
    const C* w = Wh + k * cg * F + f;
    C acc{0, 0};
    for (std::int64_t c = 0; c < cg; ++c) {
      const C t = cmul_conj(x[c * F], w[c * F]);
      acc.x += t.x, acc.y += t.y;
    }
    Y[i] = acc;
  }
}

// DX[b][c][f] = sum_kk DY[b][g*kg + kk][f] * Wh[g*kg + kk][c % cg][f].
template <typename C>
__global__ void backward_data_product(const C* __restrict__ DY, const C* __restrict__ Wh, C* __restrict__ DX,
                                      std::int64_t images, std::int64_t Cn, std::int64_t K, std::int64_t G,
                                      std::int64_t F) {
  const std::int64_t cg = Cn / G, kg = K / G, total = images * Cn * F;
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t f = i % F, c = (i / F) % Cn, b = i / (F * Cn);
    const std::int64_t k0 = (c / cg) * kg;
    const C* dy = DY + (b * K + k0) * F + f;
    const C* w = Wh + (k0 * cg + c % cg) * F + f;
    C acc{0, 0};
    for (std::int64_t kk = 0; kk < kg; ++kk) {
      const C t = cmul(dy[kk * F], w[kk * cg * F]);
      acc.x += t.x, acc.y += t.y;
    }
    DX[i] = acc;
  }
}

// DW[k][c][f] (+)= sum_b X[b][g*cg + c][f] * conj(DY[b][k][f]).
template <typename C>
__global__ void backward_filter_product(const C* __restrict__ X, const C* __restrict__ DY, C* __restrict__ DW,
                                        std::int64_t images, std::int64_t Cn, std::int64_t K, std::int64_t G,
                                        std::int64_t F, bool accumulate) {
  const std::int64_t cg = Cn / G, kg = K / G, total = K * cg * F;
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t f = i % F, c = (i / F) % cg, k = i / (F * cg);
    const std::int64_t cin = (k / kg) * cg + c;
    C acc = accumulate ? DW[i] : C{0, 0};
    for (std::int64_t b = 0; b < images; ++b) {
      const C t = cmul_conj(X[(b * Cn + cin) * F + f], DY[(b * K + k) * F + f]);
      acc.x += t.x, acc.y += t.y;
    }
    DW[i] = acc;
  }
}

// -- cuFFT plans ------------------------------------------------------------------------

struct PlanKey {
  int device;
  std::int64_t l1, l2, batch;
  bool f64, inverse;
  bool operator==(const PlanKey&) const = default;
};
struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const noexcept {
    std::size_t h = std::hash<std::int64_t>{}(k.l1);
    for (std::int64_t v : {k.l2, k.batch, std::int64_t{k.device} << 2 | std::int64_t{k.f64} << 1 | k.inverse})
      h ^= std::hash<std::int64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
  }
};
struct Plan {
  cufftHandle handle = 0;
  std::size_t work = 0;
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (handle) cufftDestroy(handle);
  }
};

// Plans of all devices. A device's plans are only used and evicted inside a
// ConvCall on that device, which holds the device's lock, so eviction never
// destroys a plan in use; the mutex guards the map itself.
class Plans {
 public:
  static Plans& instance() {
    // Never destroyed: at exit the CUDA context may be gone before a static
    // destructor could call cufftDestroy.
    static Plans* plans = new Plans;
    return *plans;
  }

  Plan& get(const PlanKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
    if (plans_.size() >= kMaxPlans) {
      for (auto it = plans_.begin(); it != plans_.end();)
        it = it->first.device == key.device ? plans_.erase(it) : std::next(it);
    }
    auto plan = std::make_unique<Plan>();
    MAGMADNN_CUFFT_CHECK(cufftCreate(&plan->handle));
    MAGMADNN_CUFFT_CHECK(cufftSetAutoAllocation(plan->handle, 0));  // work area from the backend's pool
    long long dims[2] = {key.l1, key.l2};
    const cufftType type = key.f64 ? (key.inverse ? CUFFT_Z2D : CUFFT_D2Z) : (key.inverse ? CUFFT_C2R : CUFFT_R2C);
    MAGMADNN_CUFFT_CHECK(cufftMakePlanMany64(plan->handle, 2, dims, nullptr, 1, 0, nullptr, 1, 0, type, key.batch,
                                             &plan->work));
    return *plans_.emplace(key, std::move(plan)).first->second;
  }

 private:
  static constexpr std::size_t kMaxPlans = 64;
  std::mutex mutex_;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans_;
};

// Runs transforms of one pass, growing one work area as plans need it.
template <typename T>
class Transformer {
 public:
  Transformer(ConvCall& call, std::int64_t l1, std::int64_t l2) : call_(call), l1_(l1), l2_(l2) {}

  void forward(T* real, cx<T>* spec, std::int64_t batch) {
    Plan& p = prepare(batch, false);
    if constexpr (std::is_same_v<T, float>)
      MAGMADNN_CUFFT_CHECK(cufftExecR2C(p.handle, real, spec));
    else
      MAGMADNN_CUFFT_CHECK(cufftExecD2Z(p.handle, real, spec));
  }
  /// Unnormalised inverse (scale by 1 / (l1 l2) afterwards); overwrites spec.
  void inverse(cx<T>* spec, T* real, std::int64_t batch) {
    Plan& p = prepare(batch, true);
    if constexpr (std::is_same_v<T, float>)
      MAGMADNN_CUFFT_CHECK(cufftExecC2R(p.handle, spec, real));
    else
      MAGMADNN_CUFFT_CHECK(cufftExecZ2D(p.handle, spec, real));
  }

 private:
  Plan& prepare(std::int64_t batch, bool inverse) {
    Plan& p = Plans::instance().get({call_.device(), l1_, l2_, batch, std::is_same_v<T, double>, inverse});
    if (p.work > work_bytes_) {
      work_ = call_.scratch(p.work);
      work_bytes_ = p.work;
    }
    MAGMADNN_CUFFT_CHECK(cufftSetStream(p.handle, call_.stream()));
    if (p.work > 0) MAGMADNN_CUFFT_CHECK(cufftSetWorkArea(p.handle, work_));
    return p;
  }

  ConvCall& call_;
  std::int64_t l1_, l2_;
  void* work_ = nullptr;
  std::size_t work_bytes_ = 0;
};

// Where each buffer of a pass lives in the workspace (the same layout serves
// all three passes; see fft_cuda.h).
template <typename T>
struct Layout {
  std::int64_t l1 = 0, l2 = 0, freq = 0, block = 1;
  std::size_t filt = 0, real = 0, spec_c = 0, spec_k = 0, total = 0;  // byte offsets and size
};

template <typename T>
Layout<T> layout_of(const ConvProblem& pr) {
  Layout<T> L;
  L.l1 = fft_size(pr.h + 2 * pr.geom.pad_h);
  L.l2 = fft_size(pr.w + 2 * pr.geom.pad_w);
  L.freq = L.l1 * (L.l2 / 2 + 1);
  const std::int64_t lr = L.l1 * L.l2, kc = pr.k * (pr.c / pr.geom.groups);
  const std::size_t ct = sizeof(cx<T>);
  const std::size_t per_image =
      sizeof(T) * static_cast<std::size_t>(std::max(pr.c, pr.k) * lr) + ct * static_cast<std::size_t>((pr.c + pr.k) * L.freq);
  L.block = images_per_block(pr, per_image);
  const std::size_t filt_bytes = align_up(ct * static_cast<std::size_t>(kc * L.freq));
  const std::size_t real_bytes = align_up(sizeof(T) * static_cast<std::size_t>(std::max(kc, L.block * std::max(pr.c, pr.k)) * lr));
  const std::size_t c_bytes = align_up(ct * static_cast<std::size_t>(L.block * pr.c * L.freq));
  const std::size_t k_bytes = align_up(ct * static_cast<std::size_t>(L.block * pr.k * L.freq));
  L.filt = 0;
  L.real = filt_bytes;
  L.spec_c = L.real + real_bytes;
  L.spec_k = L.spec_c + c_bytes;
  L.total = L.spec_k + k_bytes;
  return L;
}

template <typename T>
struct Buffers {
  cx<T>* filt;  // K x C/G spectra of the filters (or of dw)
  T* real;      // padded real signals and inverse-transform outputs
  cx<T>* spec_c;  // spectra with C channels per image (x, dx)
  cx<T>* spec_k;  // spectra with K channels per image (y, dy)
};

template <typename T>
Buffers<T> carve(const Layout<T>& L, void* ws) {
  auto* b = static_cast<char*>(ws);
  return {reinterpret_cast<cx<T>*>(b + L.filt), reinterpret_cast<T*>(b + L.real),
          reinterpret_cast<cx<T>*>(b + L.spec_c), reinterpret_cast<cx<T>*>(b + L.spec_k)};
}

template <typename T>
void pad(const T* src, std::int64_t batch, std::int64_t h, std::int64_t w, T* dst, const Layout<T>& L,
         std::int64_t oh, std::int64_t ow, const Launch& on) {
  const std::int64_t total = batch * L.l1 * L.l2;
  pad_kernel<T><<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(src, batch, h, w, dst, L.l1, L.l2, oh, ow);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void crop(const T* src, std::int64_t batch, const Layout<T>& L, std::int64_t oh, std::int64_t ow, T* dst,
          std::int64_t h, std::int64_t w, const Launch& on) {
  const std::int64_t total = batch * h * w;
  const T scale = T(1) / static_cast<T>(L.l1 * L.l2);
  crop_kernel<T><<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(src, batch, L.l1, L.l2, oh, ow, dst, h, w, scale);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void check_supported(const FftCuda<T>& a, const ConvProblem& pr, Pass pass) {
  MAGMADNN_CHECK(a.supports(pr, pass), NotSupportedError,
                 "convolution algorithm fft (CUDA) does not support " << pass_name(pass) << " of " << pr.to_string()
                                                                      << " (it needs stride 1 and dilation 1)");
}

}  // namespace

template <typename T>
bool FftCuda<T>::supports(const ConvProblem& pr, Pass) const {
  const ConvParams& g = pr.geom;
  return g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1;
}

template <typename T>
std::size_t FftCuda<T>::workspace_bytes(const ConvProblem& pr, Pass) const {
  return layout_of<T>(pr).total;
}

template <typename T>
void FftCuda<T>::forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* workspace) {
  check_supported(*this, pr, Pass::Forward);
  ConvCall call;
  const Layout<T> L = layout_of<T>(pr);
  const Buffers<T> B = carve(L, workspace ? workspace : call.scratch(L.total));
  const Launch on = call.launch();
  Transformer<T> fft(call, L.l1, L.l2);
  const std::int64_t kc = pr.k * (pr.c / pr.geom.groups);
  pad(w, kc, pr.r, pr.s, B.real, L, 0, 0, on);
  fft.forward(B.real, B.filt, kc);
  for (std::int64_t n0 = 0; n0 < pr.n; n0 += L.block) {
    const std::int64_t nb = std::min(L.block, pr.n - n0);
    pad(x + n0 * pr.c * pr.h * pr.w, nb * pr.c, pr.h, pr.w, B.real, L, pr.geom.pad_h, pr.geom.pad_w, on);
    fft.forward(B.real, B.spec_c, nb * pr.c);
    const std::int64_t total = nb * pr.k * L.freq;
    forward_product<<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(B.spec_c, B.filt, B.spec_k, nb, pr.c, pr.k,
                                                                       pr.geom.groups, L.freq);
    MAGMADNN_KERNEL_CHECK();
    fft.inverse(B.spec_k, B.real, nb * pr.k);
    crop(B.real, nb * pr.k, L, 0, 0, y + n0 * pr.k * pr.p * pr.q, pr.p, pr.q, on);
  }
  add_bias(bias, y, pr.n, pr.k, pr.p * pr.q, on);
  call.finish();
}

template <typename T>
void FftCuda<T>::backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* workspace) {
  check_supported(*this, pr, Pass::BackwardData);
  ConvCall call;
  const Layout<T> L = layout_of<T>(pr);
  const Buffers<T> B = carve(L, workspace ? workspace : call.scratch(L.total));
  const Launch on = call.launch();
  Transformer<T> fft(call, L.l1, L.l2);
  const std::int64_t kc = pr.k * (pr.c / pr.geom.groups);
  pad(w, kc, pr.r, pr.s, B.real, L, 0, 0, on);
  fft.forward(B.real, B.filt, kc);
  for (std::int64_t n0 = 0; n0 < pr.n; n0 += L.block) {
    const std::int64_t nb = std::min(L.block, pr.n - n0);
    pad(dy + n0 * pr.k * pr.p * pr.q, nb * pr.k, pr.p, pr.q, B.real, L, 0, 0, on);
    fft.forward(B.real, B.spec_k, nb * pr.k);
    const std::int64_t total = nb * pr.c * L.freq;
    backward_data_product<<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(B.spec_k, B.filt, B.spec_c, nb, pr.c,
                                                                             pr.k, pr.geom.groups, L.freq);
    MAGMADNN_KERNEL_CHECK();
    fft.inverse(B.spec_c, B.real, nb * pr.c);
    crop(B.real, nb * pr.c, L, pr.geom.pad_h, pr.geom.pad_w, dx + n0 * pr.c * pr.h * pr.w, pr.h, pr.w, on);
  }
  call.finish();
}

template <typename T>
void FftCuda<T>::backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* workspace) {
  check_supported(*this, pr, Pass::BackwardFilter);
  ConvCall call;
  const Layout<T> L = layout_of<T>(pr);
  const Buffers<T> B = carve(L, workspace ? workspace : call.scratch(L.total));
  const Launch on = call.launch();
  Transformer<T> fft(call, L.l1, L.l2);
  const std::int64_t kc = pr.k * (pr.c / pr.geom.groups);
  for (std::int64_t n0 = 0; n0 < pr.n; n0 += L.block) {
    const std::int64_t nb = std::min(L.block, pr.n - n0);
    pad(x + n0 * pr.c * pr.h * pr.w, nb * pr.c, pr.h, pr.w, B.real, L, pr.geom.pad_h, pr.geom.pad_w, on);
    fft.forward(B.real, B.spec_c, nb * pr.c);
    pad(dy + n0 * pr.k * pr.p * pr.q, nb * pr.k, pr.p, pr.q, B.real, L, 0, 0, on);
    fft.forward(B.real, B.spec_k, nb * pr.k);
    const std::int64_t total = kc * L.freq;
    backward_filter_product<<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(
        B.spec_c, B.spec_k, B.filt, nb, pr.c, pr.k, pr.geom.groups, L.freq, n0 > 0);
    MAGMADNN_KERNEL_CHECK();
  }
  fft.inverse(B.filt, B.real, kc);
  crop(B.real, kc, L, 0, 0, dw, pr.r, pr.s, on);
  bias_grad(dy, db, pr.n, pr.k, pr.p * pr.q, on);
  call.finish();
}

template class FftCuda<float>;
template class FftCuda<double>;

namespace {
const bool registered = [] {
  detail::register_algorithm<float>(std::make_unique<FftCuda<float>>());
  detail::register_algorithm<double>(std::make_unique<FftCuda<double>>());
  return true;
}();
}  // namespace

}  // namespace magmadnn::conv::cuda

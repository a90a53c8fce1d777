// FFT convolution on the CPU with FFTW, for stride-1, undilated layers. It
// pays off for large kernels, whose direct cost grows with R * S while the
// FFT's does not.
//
// Each plane is zero-padded to Lh x Lw >= (H + 2 pad) x (W + 2 pad), so the
// circular products below equal the linear ones on every kept element:
//   forward:          Y[n,k]  = sum_c X[n,c] conj(W[k,c])   (correlation)
//   backward data:    DX[n,c] = sum_k DY[n,k] W[k,c]        (convolution)
//   backward filter:  DW[k,c] = sum_n conj(DY[n,k]) X[n,c]  (correlation)
//
// Products. Spectra are kept for the Lh x (Lw/2 + 1) frequencies of a real
// plane, frequency-major, with real and imaginary parts split, so that at
// each frequency and group the complex product is one real product of twice
// the size:
//   forward:  [Yr Yi] = [Xr Xi] [[Wr^T, -Wi^T], [Wi^T, Wr^T]]
//   data:     [DXr DXi] = [DYr DYi] [[Wr, Wi], [-Wi, Wr]]
//   filter:   P = [DYr DYi]^T [Xr Xi], then DWr = P00 + P11, DWi = P01 - P10
// The filter transform writes its spectrum straight into the 2x2 block matrix
// the pass needs, and DY of the filter pass is stored transposed, so no
// operand is transposed. Every (frequency, group) matrix is dense and they
// follow each other at one stride, so each pass is ONE strided batched
// product (cpu::gemm_strided_batched: a single oneDNN batched matmul for
// float, threaded over the batch; thousands of separately threaded small
// cgemm calls cost far more than their arithmetic). oneDNN only takes its
// fast batched kernel for dense batch-major operands, hence this layout.
//
// Transforms. FFTW's real-to-complex transforms of 64-point rows took about
// twice as long per plane as complex transforms of two planes at once (its
// SIMD kernels are mostly complex ones), so two real planes go through one
// complex transform as its real and imaginary parts; their spectra are
// separated afterwards with Z(k) +- conj(Z(-k)) (which doubles them: the
// inverse scales by 1/4 more), and an inverse packs two spectra, completed
// by Hermitian symmetry, into one complex plane whose real and imaginary
// parts are the two results. The 2-D transform is done as its 1-D passes: rows that are all
// zero (padding, most of a small filter) skip the forward row pass, and rows
// that are cropped away skip the inverse row pass.
//
// Planes go in groups of up to kMaxGroup per thread through a per-thread
// buffer: a group is packed and transformed there with contiguous strides,
// then moved to or from the frequency-major slabs through a small tile, so
// that both sides of that transpose are contiguous. (FFTW writing straight
// into the slabs, with the number of planes as its output stride, put every
// element on its own cache line.) Buffer planes and rows are padded to 64
// bytes, so every pointer FFTW gets has the alignment it was planned with,
// and planes to an odd number of cache lines, so a group's planes do not all
// fall into one cache set.
//
// Images go in blocks so the spectra of a block stay within a bounded
// workspace, which also holds the per-thread buffers. FFTW planning is not
// thread-safe and may overwrite its arrays, so plans are made under a mutex
// on scratch arrays and cached (see kMeasurePoints for the planner flag);
// executing a plan on new arrays of the same alignment is thread-safe, so
// the groups of planes are transformed in parallel.
#include <fftw3.h>

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "magmadnn/backend/cpu/cpu_gemm.h"
#include "magmadnn/conv/cpu_conv_util.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

using cpu_detail::align64;

// Plans are made on, and executed only with, 64-byte aligned arrays.
constexpr std::size_t kAlign = 64;
// FFTW_MEASURE times candidate plans (tens of ms per plan for large planes)
// and for some sizes (72, say) finds ones much faster than FFTW_ESTIMATE's;
// it is used where a call transforms at least this many points, so that the
// planning is repaid; smaller calls (and tests) plan with FFTW_ESTIMATE.
constexpr std::int64_t kMeasurePoints = std::int64_t{1} << 20;

template <typename T>
struct Fftw;
template <>
struct Fftw<double> {
  using plan_t = fftw_plan;
  using iodim = fftw_iodim64;
  static plan_t plan(const iodim* dim, const iodim* how, double* io, int sign, unsigned flags) {
    auto* c = reinterpret_cast<fftw_complex*>(io);
    return fftw_plan_guru64_dft(1, dim, 2, how, c, c, sign, flags);
  }
  static void exec(plan_t p, double* io) {
    auto* c = reinterpret_cast<fftw_complex*>(io);
    fftw_execute_dft(p, c, c);
  }
  static void* alloc(std::size_t bytes) { return fftw_malloc(bytes); }
  static void release(void* p) { fftw_free(p); }
  static void destroy(plan_t p) { fftw_destroy_plan(p); }
};
template <>
struct Fftw<float> {
  using plan_t = fftwf_plan;
  using iodim = fftwf_iodim64;
  static plan_t plan(const iodim* dim, const iodim* how, float* io, int sign, unsigned flags) {
    auto* c = reinterpret_cast<fftwf_complex*>(io);
    return fftwf_plan_guru64_dft(1, dim, 2, how, c, c, sign, flags);
  }
  static void exec(plan_t p, float* io) {
    auto* c = reinterpret_cast<fftwf_complex*>(io);
    fftwf_execute_dft(p, c, c);
  }
  static void* alloc(std::size_t bytes) { return fftwf_malloc(bytes); }
  static void release(void* p) { fftwf_free(p); }
  static void destroy(plan_t p) { fftwf_destroy_plan(p); }
};

// n elements of `elem` bytes, rounded up to whole cache lines; with `odd`, to
// an odd number of them, so that arrays that many elements apart fall in
// different cache sets, where a power-of-two distance would put all of them
// in one.
std::int64_t lines(std::int64_t n, std::size_t elem, bool odd) {
  std::int64_t l = static_cast<std::int64_t>((n * elem + kAlign - 1) / kAlign);
  if (odd) l += 1 - l % 2;
  return l * static_cast<std::int64_t>(kAlign / elem);
}

// The in-place 1-D passes over a group of `pairs` complex planes, each lh
// rows of lwp (lw used), cdist complex elements apart: the row transforms of
// `rows` consecutive rows, or the column transforms of all lw columns.
struct PlanKey {
  bool columns, inverse, measure;
  std::int64_t lh, lw, rows, pairs;
  auto tie() const { return std::tie(columns, inverse, measure, lh, lw, rows, pairs); }
  bool operator<(const PlanKey& o) const { return tie() < o.tie(); }
};

// Plans made once under a lock and never destroyed before exit.
template <typename T>
class PlanCache {
 public:
  using plan_t = typename Fftw<T>::plan_t;
  static PlanCache& get() {
    static PlanCache c;
    return c;
  }
  plan_t plan(const PlanKey& key) {
    std::lock_guard lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    plan_t p = make(key);
    MAGMADNN_CHECK(p != nullptr, NotSupportedError,
                   "fft conv: FFTW could not plan " << (key.columns ? "column" : "row") << " transforms of "
                                                    << key.pairs << " " << key.lh << "x" << key.lw << " planes");
    plans_.emplace(key, p);
    return p;
  }
  ~PlanCache() {
    for (auto& [k, p] : plans_) Fftw<T>::destroy(p);
  }

 private:
  struct Release {
    void operator()(void* p) const noexcept { Fftw<T>::release(p); }
  };

  // Planning overwrites its array, so it runs on scratch of the real size.
  static plan_t make(const PlanKey& k) {
    using D = typename Fftw<T>::iodim;
    const std::int64_t lwp = lines(k.lw, 2 * sizeof(T), false), cdist = lines(k.lh * lwp, 2 * sizeof(T), true);
    std::unique_ptr<void, Release> buf(Fftw<T>::alloc(sizeof(T) * 2 * k.pairs * cdist));
    MAGMADNN_CHECK(buf != nullptr, Error, "fft conv: out of host memory while planning");
    const int sign = k.inverse ? FFTW_BACKWARD : FFTW_FORWARD;
    const unsigned flags = k.measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    if (k.columns) {
      const D dim{k.lh, lwp, lwp};
      const D how[2] = {{k.pairs, cdist, cdist}, {k.lw, 1, 1}};
      return Fftw<T>::plan(&dim, how, static_cast<T*>(buf.get()), sign, flags);
    }
    const D dim{k.lw, 1, 1};
    const D how[2] = {{k.pairs, cdist, cdist}, {k.rows, lwp, lwp}};
    return Fftw<T>::plan(&dim, how, static_cast<T*>(buf.get()), sign, flags);
  }

  std::mutex mu_;
  std::map<PlanKey, plan_t> plans_;
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

// Planes per transform group (an even number): enough to amortise a plan's
// call and to move whole cache lines to and from the slabs, few enough that
// a group's buffer stays in the core's L2.
constexpr std::int64_t kMaxGroup = 32;
constexpr std::size_t kGroupBytes = std::size_t{768} << 10;

// Per-thread buffers in the workspace: one per thread this process may use,
// fixed at first use so that the size a caller queried (workspace_bytes) and
// the size a pass assumes always agree, even if the OpenMP thread count
// changes in between; the passes never run more threads than this.
int buffer_threads() {
  static const int n = std::max({1, omp_get_num_procs(), omp_get_max_threads()});
  return n;
}

template <typename T>
struct Geometry {
  std::int64_t lh, lw, fw, f;  // padded plane, kept columns of a real plane's spectrum, frequencies
  std::int64_t lwp, cdist;     // buffer row and plane strides (complex elements)
  std::int64_t pg;             // planes per transform group
  std::int64_t nb;             // images per block
  std::int64_t threads;
  std::size_t filt_bytes, xblk_bytes, yblk_bytes, buf_bytes;
  static constexpr std::size_t kBlockBudget = std::size_t{64} << 20;

  explicit Geometry(const ConvProblem& pr) {
    lh = fft_size(pr.h + 2 * pr.geom.pad_h);
    lw = fft_size(pr.w + 2 * pr.geom.pad_w);
    fw = lw / 2 + 1;
    f = lh * fw;
    lwp = lines(lw, 2 * sizeof(T), false);
    cdist = lines(lh * lwp, 2 * sizeof(T), true);
    const std::size_t pair_bytes = 2 * sizeof(T) * cdist;
    pg = 2 * std::clamp<std::int64_t>(static_cast<std::int64_t>(kGroupBytes / pair_bytes), 1, kMaxGroup / 2);
    if (pg >= 16) pg -= pg % 8;  // whole runs of 8 or 16 channels
    const std::size_t cpx = 2 * sizeof(T);
    const std::size_t per_image = cpx * f * (pr.c + pr.k);
    nb = std::clamp<std::int64_t>(static_cast<std::int64_t>(kBlockBudget / per_image), 1, pr.n);
    threads = buffer_threads();
    // The filter area holds a 2x2 block matrix of real products per group.
    filt_bytes = align64(2 * cpx * f * pr.k * (pr.c / pr.geom.groups));
    xblk_bytes = align64(cpx * f * nb * pr.c);
    yblk_bytes = align64(cpx * f * nb * pr.k);
    buf_bytes = align64(pair_bytes * (pg / 2));
  }
  std::size_t total() const { return kAlign + filt_bytes + xblk_bytes + yblk_bytes + buf_bytes * threads; }
};

// Where one plane's spectrum lives in a frequency slab: its real and imaginary
// parts at re1 and im1; with Twin also (re, -im) at re2 and im2 (the second
// copy in a 2x2 block matrix), and a gather reads re1 + re2, im1 - im2.
struct Slots {
  std::int64_t re1, im1, re2, im2;
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
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G, nf = wk.g.f;
    // B[f][g] = [[Wr^T, -Wi^T], [Wi^T, Wr^T]], 2cg x 2kg; planes taken in (g, c, k) order, so that a
    // group's are runs of a row.
    transform<true>(wk, pr.k * cg, pr.r, pr.s, 0, 0, wk.W, G * 4 * cg * kg, [&](std::int64_t q, Slots& s) {
      const std::int64_t kk = q % kg, gc = q / kg, c = gc % cg, g = gc / cg;
      const std::int64_t b = g * 4 * cg * kg;
      s = {b + c * 2 * kg + kk, b + (cg + c) * 2 * kg + kk, b + (cg + c) * 2 * kg + kg + kk, b + c * 2 * kg + kg + kk};
      return w + ((g * kg + kk) * cg + c) * pr.r * pr.s;
    });
    for (std::int64_t n0 = 0; n0 < pr.n; n0 += wk.g.nb) {
      const std::int64_t nb = std::min(wk.g.nb, pr.n - n0);
      const T* xb = x + n0 * pr.c * pr.h * pr.w;
      transform<false>(wk, nb * pr.c, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w, wk.X, nb * 2 * pr.c,
                       [&](std::int64_t q, Slots& s) {
                         s = row_slots(q, pr.c, cg, nb);
                         return xb + q * pr.h * pr.w;
                       });
      // Y[f][g] (nb x 2kg) = X[f][g] (nb x 2cg) B[f][g].
      cpu::gemm_strided_batched(false, false, nb, 2 * kg, 2 * cg, T(1), wk.X, 2 * cg, nb * 2 * cg, wk.W, 2 * kg,
                                4 * cg * kg, T(0), wk.Y, 2 * kg, nb * 2 * kg, nf * G);
      T* yb = y + n0 * pr.k * pr.p * pr.q;
      inverse<false>(wk, nb * pr.k, pr.p, pr.q, 0, 0, wk.Y, nb * 2 * pr.k, [&](std::int64_t q, Slots& s) {
        s = row_slots(q, pr.k, kg, nb);
        return Out{yb + q * pr.p * pr.q, bias ? bias[q % pr.k] : T(0)};
      });
    }
  }

  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* ws) override {
    Work wk(pr, ws);
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G, nf = wk.g.f;
    // M[f][g] = [[Wr, Wi], [-Wi, Wr]], 2kg x 2cg.
    transform<true>(wk, pr.k * cg, pr.r, pr.s, 0, 0, wk.W, G * 4 * cg * kg, [&](std::int64_t q, Slots& s) {
      s = block_slots(q, cg, kg);
      return w + q * pr.r * pr.s;
    });
    for (std::int64_t n0 = 0; n0 < pr.n; n0 += wk.g.nb) {
      const std::int64_t nb = std::min(wk.g.nb, pr.n - n0);
      const T* dyb = dy + n0 * pr.k * pr.p * pr.q;
      transform<false>(wk, nb * pr.k, pr.p, pr.q, 0, 0, wk.Y, nb * 2 * pr.k, [&](std::int64_t q, Slots& s) {
        s = row_slots(q, pr.k, kg, nb);
        return dyb + q * pr.p * pr.q;
      });
      // DX[f][g] (nb x 2cg) = DY[f][g] (nb x 2kg) M[f][g].
      cpu::gemm_strided_batched(false, false, nb, 2 * cg, 2 * kg, T(1), wk.Y, 2 * kg, nb * 2 * kg, wk.W, 2 * cg,
                                4 * cg * kg, T(0), wk.X, 2 * cg, nb * 2 * cg, nf * G);
      T* dxb = dx + n0 * pr.c * pr.h * pr.w;
      inverse<false>(wk, nb * pr.c, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w, wk.X, nb * 2 * pr.c,
                     [&](std::int64_t q, Slots& s) {
                       s = row_slots(q, pr.c, cg, nb);
                       return Out{dxb + q * pr.h * pr.w, T(0)};
                     });
    }
  }

  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* ws) override {
    Work wk(pr, ws);
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G, nf = wk.g.f;
    for (std::int64_t n0 = 0; n0 < pr.n; n0 += wk.g.nb) {
      const std::int64_t nb = std::min(wk.g.nb, pr.n - n0);
      const T* xb = x + n0 * pr.c * pr.h * pr.w;
      transform<false>(wk, nb * pr.c, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w, wk.X, nb * 2 * pr.c,
                       [&](std::int64_t q, Slots& s) {
                         s = row_slots(q, pr.c, cg, nb);
                         return xb + q * pr.h * pr.w;
                       });
      // DY^T[f][g] = [g][re, im][k][n] (2kg x nb); planes taken in (k, n) order, so that a group's are
      // runs of a row.
      const T* dyb = dy + n0 * pr.k * pr.p * pr.q;
      transform<false>(wk, nb * pr.k, pr.p, pr.q, 0, 0, wk.Y, nb * 2 * pr.k, [&](std::int64_t q, Slots& s) {
        const std::int64_t n = q % nb, k = q / nb, g = k / kg, kk = k % kg;
        const std::int64_t re = g * 2 * kg * nb + kk * nb + n;
        s = {re, re + kg * nb, 0, 0};
        return dyb + (n * pr.k + k) * pr.p * pr.q;
      });
      // P[f][g] (2kg x 2cg) = DY^T[f][g] (2kg x nb) X[f][g] (nb x 2cg), summed over the image blocks.
      cpu::gemm_strided_batched(false, false, 2 * kg, 2 * cg, nb, T(1), wk.Y, nb, 2 * kg * nb, wk.X, 2 * cg,
                                nb * 2 * cg, n0 > 0 ? T(1) : T(0), wk.W, 2 * cg, 4 * cg * kg, nf * G);
    }
    inverse<true>(wk, pr.k * cg, pr.r, pr.s, 0, 0, wk.W, G * 4 * cg * kg, [&](std::int64_t q, Slots& s) {
      s = block_slots(q, cg, kg);
      return Out{dw + q * pr.r * pr.s, T(0)};
    });
    cpu_detail::bias_grad(pr, dy, db);
  }

 private:
  struct Work {
    Geometry<T> g;
    T *W, *X, *Y;
    unsigned char* bufs;
    Work(const ConvProblem& pr, void* ws) : g(pr) {
      // Aligned up within the kAlign bytes of slack in total().
      const auto addr = reinterpret_cast<std::uintptr_t>(ws);
      auto* b = static_cast<unsigned char*>(ws) + ((kAlign - addr % kAlign) % kAlign);
      W = reinterpret_cast<T*>(b);
      X = reinterpret_cast<T*>(b + g.filt_bytes);
      Y = reinterpret_cast<T*>(b + g.filt_bytes + g.xblk_bytes);
      bufs = b + g.filt_bytes + g.xblk_bytes + g.yblk_bytes;
    }
    // Thread t's buffer: pg / 2 complex planes.
    T* buf(int t) const { return reinterpret_cast<T*>(bufs + g.buf_bytes * t); }
  };
  struct Out {
    T* plane;
    T offset;
  };

  // Plane q = n * C + c of a block of nb images, in slabs [g][n][re, im][c within the group].
  static Slots row_slots(std::int64_t q, std::int64_t C, std::int64_t cg, std::int64_t nb) {
    const std::int64_t n = q / C, c = q % C, g = c / cg, j = c % cg;
    const std::int64_t re = g * nb * 2 * cg + n * 2 * cg + j;
    return {re, re + cg, 0, 0};
  }
  // Filter plane q = k * cg + c in the 2kg x 2cg block matrix [[A, B], [-B, A]] of its group.
  static Slots block_slots(std::int64_t q, std::int64_t cg, std::int64_t kg) {
    const std::int64_t c = q % cg, k = q / cg, g = k / kg, kk = k % kg;
    const std::int64_t b = g * 4 * cg * kg;
    const std::int64_t re1 = b + kk * 2 * cg + c, re2 = b + (kg + kk) * 2 * cg + cg + c;
    return {re1, re1 + cg, re2, re2 - cg};
  }

  // Runs body(thread, q0, np) over the groups of `count` planes, in parallel
  // when there is more than one group.
  template <typename Body>
  static void over_groups(const Work& wk, std::int64_t count, Body body) {
    const std::int64_t pg = wk.g.pg, groups = (count + pg - 1) / pg;
    // Never more threads than buffers, whatever omp_set_num_threads said since.
    const int threads = static_cast<int>(std::min<std::int64_t>({wk.g.threads, groups, omp_get_max_threads()}));
    if (threads <= 1) {
      for (std::int64_t i = 0; i < groups; ++i) body(0, i * pg, std::min(pg, count - i * pg));
      return;
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t i = 0; i < groups; ++i) body(omp_get_thread_num(), i * pg, std::min(pg, count - i * pg));
  }

  // Row and column plans for full groups and for the last one.
  struct Plans {
    std::array<typename F::plan_t, 2> rows, cols;
  };
  static Plans plans(const Geometry<T>& g, std::int64_t count, std::int64_t rows, bool inverse) {
    const std::int64_t last = count % g.pg == 0 ? g.pg : count % g.pg;
    const bool measure = count * g.lh * g.lw >= kMeasurePoints;
    auto& cache = PlanCache<T>::get();
    Plans p;
    for (int i = 0; i < 2; ++i) {
      const std::int64_t pairs = (i == 0 ? g.pg : last + 1) / 2;
      p.rows[i] = cache.plan({false, inverse, measure, g.lh, g.lw, rows, pairs});
      p.cols[i] = cache.plan({true, inverse, measure, g.lh, g.lw, 0, pairs});
    }
    return p;
  }

  // For q < count: the spectrum of the plane at(q, slots) returns (ih x iw,
  // placed at (ph, pw) in a zero Lh x Lw plane), doubled, written to
  // out[f * stride + slots].
  template <bool Twin, typename At>
  void transform(const Work& wk, std::int64_t count, std::int64_t ih, std::int64_t iw, std::int64_t ph,
                 std::int64_t pw, T* out, std::int64_t stride, At at) {
    const auto& g = wk.g;
    const Plans pl = plans(g, count, ih, false);
    over_groups(wk, count, [&](int t, std::int64_t q0, std::int64_t np) {
      T* z = wk.buf(t);
      std::array<Slots, kMaxGroup> slots;
      std::array<const T*, kMaxGroup + 1> src{};
      for (std::int64_t j = 0; j < np; ++j) src[j] = at(q0 + j, slots[j]);
      pack(g, src.data(), np, ih, iw, ph, pw, z);
      const int which = np == g.pg ? 0 : 1;
      F::exec(pl.rows[which], z + ph * 2 * g.lwp);
      F::exec(pl.cols[which], z);
      scatter<Twin>(g, z, np, slots.data(), out, stride);
    });
  }

  // For q < count: the crop (oh x ow from (ph, pw)) of the inverse transform
  // of the spectrum in[f * stride + slots], scaled (the doubling of both
  // factors undone), plus an offset, written to the plane at(q, slots)
  // returns.
  template <bool Twin, typename At>
  void inverse(const Work& wk, std::int64_t count, std::int64_t oh, std::int64_t ow, std::int64_t ph,
               std::int64_t pw, const T* in, std::int64_t stride, At at) {
    const auto& g = wk.g;
    const Plans pl = plans(g, count, oh, true);
    const T scale = T(1) / static_cast<T>(4 * g.lh * g.lw);
    over_groups(wk, count, [&](int t, std::int64_t q0, std::int64_t np) {
      T* z = wk.buf(t);
      std::array<Slots, kMaxGroup> slots;
      std::array<Out, kMaxGroup> outs;
      for (std::int64_t j = 0; j < np; ++j) outs[j] = at(q0 + j, slots[j]);
      gather<Twin>(g, in, stride, np, slots.data(), z);
      const int which = np == g.pg ? 0 : 1;
      F::exec(pl.cols[which], z);
      F::exec(pl.rows[which], z + ph * 2 * g.lwp);
      unpack(g, z, np, oh, ow, ph, pw, scale, outs.data());
    });
  }

  // Buffer plane p = src[2p] + i src[2p + 1] (zero when null), each ih x iw
  // placed at (ph, pw) in a zero Lh x Lw plane.
  static void pack(const Geometry<T>& g, const T* const* src, std::int64_t np, std::int64_t ih, std::int64_t iw,
                   std::int64_t ph, std::int64_t pw, T* z) {
    const std::int64_t crow = 2 * g.lwp;
    for (std::int64_t p = 0; 2 * p < np; ++p) {
      T* zp = z + p * 2 * g.cdist;
      const T* a = src[2 * p];
      const T* b = src[2 * p + 1];
      std::fill(zp, zp + ph * crow, T(0));
      std::fill(zp + (ph + ih) * crow, zp + g.lh * crow, T(0));
      for (std::int64_t i = 0; i < ih; ++i, a += iw) {
        T* row = zp + (ph + i) * crow;
        T* d = row + 2 * pw;
        std::fill(row, d, T(0));
        if (b) {
          for (std::int64_t x = 0; x < iw; ++x) d[2 * x] = a[x], d[2 * x + 1] = b[x];
          b += iw;
        } else {
          for (std::int64_t x = 0; x < iw; ++x) d[2 * x] = a[x], d[2 * x + 1] = T(0);
        }
        std::fill(d + 2 * iw, row + 2 * g.lw, T(0));
      }
    }
  }

  // outs[j].plane = scale * (the oh x ow crop from (ph, pw) of the real part
  // of buffer plane j / 2 for even j, of its imaginary part for odd j) +
  // outs[j].offset.
  static void unpack(const Geometry<T>& g, const T* z, std::int64_t np, std::int64_t oh, std::int64_t ow,
                     std::int64_t ph, std::int64_t pw, T scale, const Out* outs) {
    const std::int64_t crow = 2 * g.lwp;
    for (std::int64_t j = 0; j < np; ++j) {
      const T b = outs[j].offset;
      T* dst = outs[j].plane;
      const T* src = z + (j / 2) * 2 * g.cdist + ph * crow + 2 * pw + j % 2;
      for (std::int64_t i = 0; i < oh; ++i, dst += ow, src += crow) {
        for (std::int64_t x = 0; x < ow; ++x) dst[x] = src[2 * x] * scale + b;
      }
    }
  }

  // The group's planes cut into runs, planes whose slots all advance by one
  // from one plane to the next, so that a run moves as contiguous stretches.
  struct Runs {
    std::array<std::int64_t, kMaxGroup + 1> start;
    std::int64_t n = 0;
  };
  template <bool Twin>
  static Runs runs(const Slots* s, std::int64_t np) {
    Runs r;
    for (std::int64_t j = 0; j < np; ++j) {
      const bool cont = j > 0 && s[j].re1 == s[j - 1].re1 + 1 && s[j].im1 == s[j - 1].im1 + 1 &&
                        (!Twin || (s[j].re2 == s[j - 1].re2 + 1 && s[j].im2 == s[j - 1].im2 + 1));
      if (!cont) r.start[r.n++] = j;
    }
    r.start[r.n] = np;
    return r;
  }

  // The transposes between a group's buffer (plane-major) and the slabs
  // (frequency-major) go through a tile of kTile frequencies x kMaxGroup
  // planes that stays in L1: the slab side moves whole runs of the group's
  // planes at one frequency, so it is contiguous and vectorises.
  static constexpr std::int64_t kTile = 16;
  struct Tile {
    alignas(kAlign) T re[kTile][kMaxGroup];
    alignas(kAlign) T im[kTile][kMaxGroup];
  };
  // Buffer offsets of the frequencies f0 + t of a tile and of their mirrors
  // -(f0 + t); own[t]: the mirror is in a column a real plane's spectrum
  // keeps (columns 0 and Lw/2).
  static std::int64_t tile_offsets(const Geometry<T>& g, std::int64_t f0, std::int64_t* at, std::int64_t* mirror,
                                   bool* own) {
    const std::int64_t tc = std::min(kTile, g.f - f0);
    for (std::int64_t t = 0; t < tc; ++t) {
      const std::int64_t r = (f0 + t) / g.fw, c = (f0 + t) % g.fw;
      at[t] = 2 * (r * g.lwp + c);
      mirror[t] = 2 * ((g.lh - r) % g.lh * g.lwp + (g.lw - c) % g.lw);
      own[t] = c == 0 || 2 * c == g.lw;
    }
    return tc;
  }

  // One frequency of the run of planes j0 <= j < j1. Its length is made a
  // constant where it can (the loops then compile to whole-vector moves); the
  // rest goes plane by plane through each plane's own slots, because GCC
  // turns a copy loop of variable length into a call to memmove, which costs
  // more than the copy for the short runs of grouped layers.
  template <bool Twin, std::int64_t N>
  static void put_n(T* o, const Slots& s, const T* re, const T* im) {
    T* __restrict re1 = o + s.re1;
    T* __restrict im1 = o + s.im1;
    for (std::int64_t j = 0; j < N; ++j) re1[j] = re[j];
    for (std::int64_t j = 0; j < N; ++j) im1[j] = im[j];
    if constexpr (Twin) {
      T* __restrict re2 = o + s.re2;
      T* __restrict im2 = o + s.im2;
      for (std::int64_t j = 0; j < N; ++j) re2[j] = re[j];
      for (std::int64_t j = 0; j < N; ++j) im2[j] = -im[j];
    }
  }
  template <bool Twin>
  static void put_run(T* o, const Slots* s, std::int64_t j0, std::int64_t j1, const T* re, const T* im) {
    std::int64_t j = j0;
    for (; j + 32 <= j1; j += 32) put_n<Twin, 32>(o, s[j], re + j, im + j);
    for (; j + 16 <= j1; j += 16) put_n<Twin, 16>(o, s[j], re + j, im + j);
    for (; j + 4 <= j1; j += 4) put_n<Twin, 4>(o, s[j], re + j, im + j);
    for (; j < j1; ++j) {
      o[s[j].re1] = re[j];
      o[s[j].im1] = im[j];
      if constexpr (Twin) {
        o[s[j].re2] = re[j];
        o[s[j].im2] = -im[j];
      }
    }
  }
  template <bool Twin, std::int64_t N>
  static void get_n(const T* a, const Slots& s, T* __restrict re, T* __restrict im) {
    const T* re1 = a + s.re1;
    const T* im1 = a + s.im1;
    if constexpr (Twin) {
      const T* re2 = a + s.re2;
      const T* im2 = a + s.im2;
      for (std::int64_t j = 0; j < N; ++j) re[j] = re1[j] + re2[j];
      for (std::int64_t j = 0; j < N; ++j) im[j] = im1[j] - im2[j];
    } else {
      for (std::int64_t j = 0; j < N; ++j) re[j] = re1[j];
      for (std::int64_t j = 0; j < N; ++j) im[j] = im1[j];
    }
  }
  template <bool Twin>
  static void get_run(const T* a, const Slots* s, std::int64_t j0, std::int64_t j1, T* re, T* im) {
    std::int64_t j = j0;
    for (; j + 32 <= j1; j += 32) get_n<Twin, 32>(a, s[j], re + j, im + j);
    for (; j + 16 <= j1; j += 16) get_n<Twin, 16>(a, s[j], re + j, im + j);
    for (; j + 4 <= j1; j += 4) get_n<Twin, 4>(a, s[j], re + j, im + j);
    for (; j < j1; ++j) {
      re[j] = Twin ? a[s[j].re1] + a[s[j].re2] : a[s[j].re1];
      im[j] = Twin ? a[s[j].im1] - a[s[j].im2] : a[s[j].im1];
    }
  }

  // out[f * stride + slots[j]] = doubled spectrum j of the group at frequency
  // f: with Z the transform of buffer plane p, 2 X_2p = Z(f) + conj(Z(-f))
  // and 2 X_2p+1 = -i (Z(f) - conj(Z(-f))).
  template <bool Twin>
  static void scatter(const Geometry<T>& g, const T* z, std::int64_t np, const Slots* s, T* out,
                      std::int64_t stride) {
    const std::int64_t cplane = 2 * g.cdist;
    const Runs rs = runs<Twin>(s, np);
    Tile tile;
    std::array<std::int64_t, kTile> at, mirror;
    std::array<bool, kTile> own;
    for (std::int64_t f0 = 0; f0 < g.f; f0 += kTile) {
      const std::int64_t tc = tile_offsets(g, f0, at.data(), mirror.data(), own.data());
      for (std::int64_t p = 0; 2 * p < np; ++p) {
        const T* zp = z + p * cplane;
        const std::int64_t j = 2 * p;
        for (std::int64_t t = 0; t < tc; ++t) {
          const T* z1 = zp + at[t];
          const T* z2 = zp + mirror[t];
          tile.re[t][j] = z1[0] + z2[0];
          tile.im[t][j] = z1[1] - z2[1];
          tile.re[t][j + 1] = z1[1] + z2[1];  // unused past np
          tile.im[t][j + 1] = z2[0] - z1[0];
        }
      }
      for (std::int64_t t = 0; t < tc; ++t) {
        T* o = out + (f0 + t) * stride;
        for (std::int64_t i = 0; i < rs.n; ++i)
          put_run<Twin>(o, s, rs.start[i], rs.start[i + 1], tile.re[t], tile.im[t]);
      }
    }
  }

  // Buffer plane p = X_2p + i X_2p+1 (X_2p+1 = 0 past np) for the spectra
  // X_j = in[f * stride + slots[j]] (Twin: re1 + re2, im1 - im2), completed
  // by X(-f) = conj(X(f)) to the columns a real plane's spectrum leaves out.
  template <bool Twin>
  static void gather(const Geometry<T>& g, const T* in, std::int64_t stride, std::int64_t np, const Slots* s,
                     T* z) {
    const std::int64_t cplane = 2 * g.cdist;
    const Runs rs = runs<Twin>(s, np);
    Tile tile;
    std::array<std::int64_t, kTile> at, mirror;
    std::array<bool, kTile> own;
    for (std::int64_t f0 = 0; f0 < g.f; f0 += kTile) {
      const std::int64_t tc = tile_offsets(g, f0, at.data(), mirror.data(), own.data());
      for (std::int64_t t = 0; t < tc; ++t) {
        const T* a = in + (f0 + t) * stride;
        T* re = tile.re[t];
        T* im = tile.im[t];
        for (std::int64_t i = 0; i < rs.n; ++i) get_run<Twin>(a, s, rs.start[i], rs.start[i + 1], re, im);
        if (np % 2) re[np] = im[np] = T(0);
      }
      for (std::int64_t p = 0; 2 * p < np; ++p) {
        T* zp = z + p * cplane;
        const std::int64_t j = 2 * p;
        for (std::int64_t t = 0; t < tc; ++t) {
          const T ar = tile.re[t][j], ai = tile.im[t][j], br = tile.re[t][j + 1], bi = tile.im[t][j + 1];
          zp[at[t]] = ar - bi;
          zp[at[t] + 1] = ai + br;
          if (!own[t]) {
            zp[mirror[t]] = ar + bi;
            zp[mirror[t] + 1] = br - ai;
          }
        }
      }
    }
  }
};

const cpu_detail::Registrar<FftConv> registrar;

}  // namespace
}  // namespace magmadnn::conv

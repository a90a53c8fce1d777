// Sliding-window convolution for layers with few channels per group (a
// network's first layers: LeNet-5's 1 -> 6 and 6 -> 16, a stem on RGB).
//
// Why our own: with C = 1 a convolution is 25 multiply-adds per output, and
// the GEMM-shaped methods (im2col, oneDNN's direct kernels, which block over
// channels) spend most of their time moving data for a reduction that short:
// oneDNN ran LeNet-5's first layer at about 35 GFLOP/s here. This kernel
// instead vectorises along an output row, keeps a block of output channels
// times a few vectors of that row in registers, and walks the taps: every
// input vector loaded feeds all channels of the block, and no data is
// rearranged beyond one zero-padded copy of the input. The chooser times it
// beside the others, so it is used only where it wins.
//
// The three passes share two kernels:
//   forward          y  = sliding(pad(x), w)
//   backward_data    dx = sliding(pad(dy), w rotated 180 degrees, channels swapped)
//                    (stride 1: the data gradient is the "full" correlation)
//   backward_filter  dw = sum over images and rows of dy (x) shifted rows of pad(x)
// Each output element is summed by one thread in a fixed order, so results
// do not depend on the thread count.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <utility>

#include "magmadnn/conv/cpu_conv_util.h"
#include "magmadnn/conv/sliding_geometry.h"
#include "magmadnn/core/errors.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(MAGMADNN_NO_SIMD_CLONES)
#define MAGMADNN_SLIDING_ISAS 1
#endif

// The kernels, once per instruction set (sliding_kernels.inc says why).
namespace magmadnn::conv::sliding {
using magmadnn::cpu::parallel_for;
#ifdef MAGMADNN_SLIDING_ISAS
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
namespace v4 {
// 32 zmm registers, one vector each.
constexpr int kNativeBytes = 64;
constexpr int kRowVectors = 4;                                        // NV <= 4
constexpr int max_out_block(int nv) { return nv <= 2 ? 8 : 6; }       // KB x NV: 16-24 accumulators
constexpr int kMaxTapBlock = 8;                                       // SB <= 8
constexpr int max_filter_block(int sb) { return std::min(8, 29 / (sb + 1)); }  // KB x (SB + 1) <= 29
constexpr int kChannelTaps = 25;  // + one dy vector: 26 of 32
#include "magmadnn/conv/sliding_kernels.inc"
}  // namespace v4
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
namespace v3 {
// 16 ymm registers, two per 64-byte vector. A block's accumulators, the
// vectors it loads and a broadcast must fit, or GCC keeps accumulators on
// the stack inside the loop.
constexpr int kNativeBytes = 32;
constexpr int kRowVectors = 1;
constexpr int max_out_block(int) { return 6; }     // 12 + 2 (x) + 1 (w) of 16
constexpr int kMaxTapBlock = 6;
constexpr int max_filter_block(int) { return 1; }  // 12 + 2 (dy), x read by the FMAs
constexpr int kChannelTaps = 6;                    // 12 + 2 (dy) + 1 (x) of 16
#include "magmadnn/conv/sliding_kernels.inc"
}  // namespace v3
#pragma GCC pop_options
#endif
namespace base {
// 16 xmm registers, four per vector.
constexpr int kNativeBytes = 16;
constexpr int kRowVectors = 1;
constexpr int max_out_block(int) { return 2; }  // 8 + 4 + 1 of 16
constexpr int kMaxTapBlock = 2;
constexpr int max_filter_block(int) { return 1; }
constexpr int kChannelTaps = 2;
#include "magmadnn/conv/sliding_kernels.inc"
}  // namespace base

namespace {
enum class Isa { V4, V3, Base };
std::atomic<int> isa_cap{4};
Isa isa() {
#ifdef MAGMADNN_SLIDING_ISAS
  static const int best = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return 4;
    if (__builtin_cpu_supports("x86-64-v3")) return 3;
    return 0;
  }();
  const int level = std::min(best, isa_cap.load(std::memory_order_relaxed));
  return level >= 4 ? Isa::V4 : level >= 3 ? Isa::V3 : Isa::Base;
#else
  return Isa::Base;
#endif
}
}  // namespace

void set_isa_cap(int level) { isa_cap.store(level, std::memory_order_relaxed); }

#ifdef MAGMADNN_SLIDING_ISAS
#define MAGMADNN_SLIDING_DISPATCH(call) \
  switch (isa()) {                      \
    case Isa::V4: return v4::call;      \
    case Isa::V3: return v3::call;      \
    case Isa::Base: return base::call;  \
  }
#else
#define MAGMADNN_SLIDING_DISPATCH(call) return base::call;
#endif

template <typename T>
void forward(const Geo& g, const T* in, const T* w, const T* bias, T* out, bool relu) {
  MAGMADNN_SLIDING_DISPATCH(forward<T>(g, in, w, bias, out, relu))
}
template <typename T>
void filter(const Geo& g, const T* in, const T* dy, std::int64_t dy_row, T* dw) {
  MAGMADNN_SLIDING_DISPATCH(filter<T>(g, in, dy, dy_row, dw))
}
template <typename T>
void filter_channels(const Geo& g, const T* in, const T* dyt, std::int64_t chunks, T* part) {
  MAGMADNN_SLIDING_DISPATCH(filter_channels<T>(g, in, dyt, chunks, part))
}
#undef MAGMADNN_SLIDING_DISPATCH

namespace {
std::atomic<int> filter_kernel_forced{0};
}
void set_filter_kernel(FilterKernel k) { filter_kernel_forced.store(static_cast<int>(k), std::memory_order_relaxed); }
FilterKernel filter_kernel_for(std::int64_t out_channels, std::int64_t out_cols, std::int64_t lanes) {
  const auto forced = static_cast<FilterKernel>(filter_kernel_forced.load(std::memory_order_relaxed));
  if (forced != FilterKernel::Auto) return forced;
  // Lanes doing useful work: out_cols of each row's vectors, or out_channels
  // of each channel block's. Ties go to the channels: no horizontal sums.
  auto round = [lanes](std::int64_t v) { return (v + lanes - 1) / lanes * lanes; };
  return out_channels * round(out_cols) >= out_cols * round(out_channels) ? FilterKernel::Channels
                                                                           : FilterKernel::Rows;
}

}  // namespace magmadnn::conv::sliding

namespace magmadnn::conv {
namespace {

using cpu_detail::align64;
using magmadnn::cpu::parallel_for;
using sliding::Geo;

// Above this many input channels per group a GEMM-based method wins (each
// tap's input vector is then reused over too few output channels to matter),
// so the chooser need not time this one.
constexpr std::int64_t kMaxChannels = 16;

// dst[plane][pt + i][pl + j] = src[plane][i][j], zeros elsewhere (rows of wp).
template <typename T>
void pad_planes(const T* src, std::int64_t planes, std::int64_t h, std::int64_t w, std::int64_t pt, std::int64_t pl,
                std::int64_t hp, std::int64_t wp, T* dst) {
  parallel_for(planes, planes * hp * wp > cpu_detail::kParallelWork, [&](std::int64_t i) {
    T* d = dst + i * hp * wp;
    std::memset(d, 0, sizeof(T) * static_cast<std::size_t>(hp * wp));
    for (std::int64_t y = 0; y < h; ++y)
      std::memcpy(d + (pt + y) * wp + pl, src + (i * h + y) * w, sizeof(T) * static_cast<std::size_t>(w));
  });
}

std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// Carves consecutive 64-byte aligned arrays out of a workspace.
template <typename T>
class Carve {
 public:
  explicit Carve(void* ws) : at_(static_cast<char*>(ws)) {}
  T* take(std::int64_t elems) {
    T* p = reinterpret_cast<T*>(at_);
    at_ += bytes(elems);
    return p;
  }
  static std::size_t bytes(std::int64_t elems) { return align64(sizeof(T) * static_cast<std::size_t>(elems)); }

 private:
  char* at_;
};

template <typename T>
class SlidingConv final : public ConvAlgorithm<T> {
  static constexpr std::int64_t L = sliding::kLanes<T>;
  using C = Carve<T>;

 public:
  Algo id() const noexcept override { return Algo::Sliding; }
  DeviceKind device() const noexcept override { return DeviceKind::CPU; }

  bool supports(const ConvProblem& pr, Pass pass) const override {
    const auto& g = pr.geom;
    if (g.stride_h != 1 || g.stride_w != 1 || g.dilation_h != 1 || g.dilation_w != 1) return false;
    if (pass == Pass::BackwardData)  // the full correlation needs pad <= kernel - 1
      return pr.k / g.groups <= kMaxChannels && g.pad_h < pr.r && g.pad_w < pr.s;
    return pr.c / g.groups <= kMaxChannels;
  }
  // The channel-vectorised filter kernel transposes dy into vectors of
  // output channels anyway, so it reads a blocked dy as cheaply as an NCHW
  // one: a first layer (NCHW x of few channels) feeding a blocked network
  // then needs no reorder of dy.
  bool reads_blocked(const ConvProblem& pr, Pass pass) const override {
    return pass == Pass::BackwardFilter && pr.x_block == 0 && pr.y_block > 0 && channels_kernel(pr);
  }

  std::size_t workspace_bytes(const ConvProblem& pr, Pass pass) const override {
    const std::int64_t wsize = pr.k * (pr.c / pr.geom.groups) * pr.r * pr.s;
    switch (pass) {
      case Pass::Forward: {
        const Geo g = fwd_geo(pr);
        return C::bytes(pr.n * pr.c * g.hp * g.wp);
      }
      case Pass::BackwardData: {
        const Geo g = data_geo(pr);
        return C::bytes(pr.n * pr.k * g.hp * g.wp) + C::bytes(wsize);
      }
      case Pass::BackwardFilter: {
        if (channels_kernel(pr)) {
          const Geo g = channel_geo(pr);
          const bool pad = pr.geom.pad_h || pr.geom.pad_w;
          const std::int64_t kpad = g.groups * round_up(g.co, L);
          return (pad ? C::bytes(pr.n * pr.c * g.hp * g.wp) : 0) + C::bytes(pr.n * kpad * pr.p * pr.q) +
                 C::bytes(chunks(g) * kpad * g.ci * pr.r * pr.s);
        }
        const Geo g = fwd_geo(pr);
        return C::bytes(pr.n * pr.c * g.hp * g.wp) + C::bytes(pr.n * pr.k * pr.p * round_up(pr.q, L));
      }
    }
    return 0;
  }

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws) override {
    run_forward(pr, x, w, bias, y, ws, false);
  }
  bool forward_relu(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws) override {
    run_forward(pr, x, w, bias, y, ws, true);
    return true;
  }

  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* ws) override {
    const Geo g = data_geo(pr);
    C carve(ws);
    T* dyp = carve.take(pr.n * pr.k * g.hp * g.wp);
    const std::int64_t cg = pr.c / pr.geom.groups, kg = pr.k / pr.geom.groups, rs = pr.r * pr.s;
    T* wr = carve.take(pr.k * cg * rs);
    pad_planes(dy, pr.n * pr.k, pr.p, pr.q, pr.r - 1 - pr.geom.pad_h, pr.s - 1 - pr.geom.pad_w, g.hp, g.wp, dyp);
    // The data gradient's filters: wr[grp*cg + c, k, r, s] = w[grp*kg + k, c, R-1-r, S-1-s].
    for (std::int64_t grp = 0; grp < pr.geom.groups; ++grp)
      for (std::int64_t c = 0; c < cg; ++c)
        for (std::int64_t k = 0; k < kg; ++k)
          for (std::int64_t t = 0; t < rs; ++t)
            wr[((grp * cg + c) * kg + k) * rs + t] = w[((grp * kg + k) * cg + c) * rs + (rs - 1 - t)];
    sliding::forward<T>(g, dyp, wr, nullptr, dx, false);
  }

  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* ws) override {
    if (channels_kernel(pr)) {
      backward_filter_channels(pr, x, dy, dw, ws);
      if (pr.y_block != 0) {
        cpu_detail::bias_grad_blocked(pr, dy, db);
      } else {
        cpu_detail::bias_grad(pr, dy, db);
      }
      return;
    }
    MAGMADNN_CHECK(!pr.blocked(), NotSupportedError,
                   "conv sliding: the row filter kernel reads NCHW only, not " << pr.to_string());
    const Geo g = fwd_geo(pr);
    const std::int64_t dy_row = round_up(pr.q, L);
    C carve(ws);
    T* xp = carve.take(pr.n * pr.c * g.hp * g.wp);
    T* dyp = carve.take(pr.n * pr.k * pr.p * dy_row);
    pad_planes(x, pr.n * pr.c, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w, g.hp, g.wp, xp);
    pad_planes(dy, pr.n * pr.k, pr.p, pr.q, 0, 0, pr.p, dy_row, dyp);
    sliding::filter<T>(g, xp, dyp, dy_row, dw);
    cpu_detail::bias_grad(pr, dy, db);
  }

 private:
  // Rows of wp hold whole vectors past the last output column, plus the taps.
  // The input's `rows` real rows start after `pad_top` rows of zeros.
  static Geo geo(std::int64_t n, std::int64_t groups, std::int64_t ci, std::int64_t co, const ConvProblem& pr,
                 std::int64_t out_h, std::int64_t out_w, std::int64_t pad_top, std::int64_t rows) {
    const std::int64_t wp = round_up(out_w, L) + pr.s - 1;
    return Geo{n, groups, ci, co, pr.r, pr.s, out_h, out_w, rows + 2 * pad_top, wp, pad_top, pad_top + rows};
  }
  static Geo fwd_geo(const ConvProblem& pr) {
    const auto& g = pr.geom;
    return geo(pr.n, g.groups, pr.c / g.groups, pr.k / g.groups, pr, pr.p, pr.q, g.pad_h, pr.h);
  }
  static Geo data_geo(const ConvProblem& pr) {
    const auto& g = pr.geom;
    return geo(pr.n, g.groups, pr.k / g.groups, pr.c / g.groups, pr, pr.h, pr.w, pr.r - 1 - g.pad_h, pr.p);
  }

  static bool channels_kernel(const ConvProblem& pr) {
    return sliding::filter_kernel_for(pr.k / pr.geom.groups, pr.q, L) == sliding::FilterKernel::Channels;
  }
  // The channel-vectorised filter kernel reads the input as it is, or padded
  // without the row kernel's whole vectors past the last column.
  static Geo channel_geo(const ConvProblem& pr) {
    const auto& g = pr.geom;
    return Geo{pr.n, g.groups, pr.c / g.groups, pr.k / g.groups, pr.r, pr.s, pr.p, pr.q,
               pr.h + 2 * g.pad_h, pr.w + 2 * g.pad_w, g.pad_h, g.pad_h + pr.h};
  }
  // Image slices summed apart, then added in slice order: enough tasks for a
  // few threads even when the layer has few input channels, and a number
  // fixed by the shape alone, so that results do not depend on the threads.
  static std::int64_t chunks(const Geo& g) {
    const std::int64_t blocks = g.groups * ((g.co + L - 1) / L) * g.ci;
    return std::clamp<std::int64_t>((16 + blocks - 1) / blocks, 1, g.n);
  }

  void backward_filter_channels(const ConvProblem& pr, const T* x, const T* dy, T* dw, void* ws) {
    const Geo g = channel_geo(pr);
    const std::int64_t kblocks = (g.co + L - 1) / L, pq = pr.p * pr.q, taps = pr.r * pr.s, nch = chunks(g);
    C carve(ws);
    const T* in = x;
    if (pr.geom.pad_h || pr.geom.pad_w) {
      T* xp = carve.take(pr.n * pr.c * g.hp * g.wp);
      pad_planes(x, pr.n * pr.c, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w, g.hp, g.wp, xp);
      in = xp;
    }
    T* dyt = carve.take(pr.n * g.groups * kblocks * L * pq);
    T* part = carve.take(nch * g.groups * kblocks * L * g.ci * taps);
    // dyt[grp, kb, n, pos, lane] = dy[n, grp*co + kb*L + lane, pos], zero past co.
    // In dy's layout with channel block b (1 for NCHW), channel ch's plane
    // starts at (n * K/b + ch/b) * pq * b + ch % b, its pixels b apart.
    const std::int64_t planes = g.groups * kblocks * pr.n, b = pr.y_block != 0 ? pr.y_block : 1;
    parallel_for(planes, pr.n * pr.k * pq > cpu_detail::kParallelWork, [&](std::int64_t i) {
      const std::int64_t n = i % pr.n, kb = (i / pr.n) % kblocks, grp = i / (pr.n * kblocks);
      const std::int64_t k0 = kb * L, lanes = std::min<std::int64_t>(L, g.co - k0);
      T* dst = dyt + i * pq * L;
      const T* src[L];
      for (std::int64_t l = 0; l < lanes; ++l) {
        const std::int64_t ch = grp * g.co + k0 + l;
        src[l] = dy + (n * (pr.k / b) + ch / b) * pq * b + ch % b;
      }
      for (std::int64_t pos = 0; pos < pq; ++pos)
        for (std::int64_t l = 0; l < L; ++l) dst[pos * L + l] = l < lanes ? src[l][pos * b] : T(0);
    });
    sliding::filter_channels<T>(g, in, dyt, nch, part);
    const std::int64_t slice = g.groups * kblocks * g.ci * taps * L;
    parallel_for(pr.k, pr.k * g.ci * taps * nch > cpu_detail::kParallelWork, [&](std::int64_t k) {
      const std::int64_t grp = k / g.co, kb = (k % g.co) / L, lane = (k % g.co) % L;
      for (std::int64_t c = 0; c < g.ci; ++c)
        for (std::int64_t t = 0; t < taps; ++t) {
          const std::int64_t at = (((grp * kblocks + kb) * g.ci + c) * taps + t) * L + lane;
          T sum = part[at];
          for (std::int64_t ch = 1; ch < nch; ++ch) sum += part[ch * slice + at];
          dw[(k * g.ci + c) * taps + t] = sum;
        }
    });
  }

  void run_forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws, bool relu) {
    const Geo g = fwd_geo(pr);
    T* xp = static_cast<T*>(ws);
    pad_planes(x, pr.n * pr.c, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w, g.hp, g.wp, xp);
    sliding::forward<T>(g, xp, w, bias, y, relu);
  }
};

const cpu_detail::Registrar<SlidingConv> registrar;

}  // namespace
}  // namespace magmadnn::conv

// Winograd F(MxM, 3x3) (Lavin & Gray) for 3x3, stride-1, undilated layers,
// with M = 2 (alpha = 4) and M = 4 (alpha = 6).
//
// All three passes run in the Winograd domain so that the bulk of the work is
// alpha^2 GEMMs per block of tiles, which run at GEMM speed:
//  forward:          Y = A^T [ (G g G^T) . (B^T d B) ] A, the elementwise
//                    product summed over channels being, at each of the
//                    alpha^2 positions, a (K x C) * (C x tiles) GEMM;
//  backward data:    the forward algorithm applied to dy with the filters
//                    rotated by 180 degrees and transposed per group, and
//                    padding 2 - pad (negative padding crops);
//  backward filter:  the adjoint of the forward: dU = sum over tiles of
//                    (A dY A^T) . (B^T d B), a (K x tiles) * (tiles x C) GEMM
//                    per position, then dg = G^T dU G.
// Tiles are processed in blocks sized so that the transformed tiles of a block
// stay within a few MiB; the workspace is the transformed filters plus one
// block.
//
// Blocked problems (float, F(2x2) only): all three passes go to the fused
// kernels of winograd_blocked.h, which read and write the channel-blocked
// layouts directly.
#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>

#include "magmadnn/backend/cpu/cpu_gemm.h"
#include "magmadnn/backend/cpu/simd_clones.h"
#include "magmadnn/conv/cpu_conv_util.h"
#include "magmadnn/conv/winograd_blocked.h"
#include "magmadnn/conv/winograd_transform.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

using cpu_detail::align64;
using magmadnn::cpu::parallel_for;
using winograd::sandwich;

// Where the tiles of one "forward-shaped" convolution are: an input of
// n x ci x ih x iw, an output of oh x ow, the input origin of tile (i, j)
// at (i*M - ph, j*M - pw).
struct Tiling {
  std::int64_t n, ih, iw, oh, ow, ph, pw, th, tw;
  std::int64_t tiles() const { return n * th * tw; }
  struct Pos {
    std::int64_t n, i, j;
  };
  Pos pos(std::int64_t t) const {
    const std::int64_t per_img = th * tw;
    return {t / per_img, (t % per_img) / tw, t % tw};
  }
  // The tile after p, without pos()'s divisions (they cost more than a tile's gather).
  void next(Pos& p) const {
    if (++p.j < tw) return;
    p.j = 0;
    if (++p.i < th) return;
    p.i = 0;
    ++p.n;
  }
};

// The transformed-domain buffers V, Mo, Z are [position][channel][tile], so
// the tiles of one channel and position are contiguous. The transforms work on
// L consecutive tiles at once (one vector register of T): pixels are gathered
// into (or scattered from) [row][column][lane] one lane at a time, which is
// plain copying, and all arithmetic is on whole vectors (winograd::sandwich).
//
// Tried and measured slower (2026-11-21): loading whole image rows into a
// strip per run of tiles within one tile row, then reading lanes at stride M.
// Rows of 8 or 14 tiles (32x32 and 56x56 images) leave a 16-lane vector half
// or 7/8 used, and the partial stores cost more than the per-lane gather.
template <typename T, int M>
struct Winograd {
  static constexpr int A = M + 2;
  static constexpr int AA = A * A;
  static constexpr int L = 64 / static_cast<int>(sizeof(T));
  using Mx = winograd::Matrices<M>;
  static constexpr auto ATt = Mx::AT.transposed();
  static constexpr auto Gt = Mx::G.transposed();

  // out[pos * stride] = (G g G^T)[pos] for a 3x3 filter g (r, s), read through (rs, ss) strides.
  static void filter_transform(const T* g, std::int64_t rs, std::int64_t ss, T* out, std::int64_t stride) {
    double in[3][3][1], u[A][A][1];
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) in[r][s][0] = double(g[r * rs + s * ss]);
    sandwich<Mx::G, Mx::G>(in, u);
    for (int i = 0; i < AA; ++i) out[i * stride] = static_cast<T>(u[i / A][i % A][0]);
  }

  // dw (3x3, contiguous) = G^T dU G, dU[pos] read at u[pos * stride].
  static void filter_grad_transform(const T* u, std::int64_t stride, T* dw) {
    double in[A][A][1], g[3][3][1];
    for (int i = 0; i < AA; ++i) in[i / A][i % A][0] = double(u[i * stride]);
    sandwich<Gt, Gt>(in, g);
    for (int i = 0; i < 9; ++i) dw[i] = static_cast<T>(g[i / 3][i % 3][0]);
  }

  // d[a][b][l] = plane[h0 + a][w0 + b] (zero outside the h x w plane) for lane l.
  template <int R>
  static void gather_lane(const T* plane, std::int64_t h, std::int64_t w, std::int64_t h0, std::int64_t w0, int l,
                          T (&d)[R][R][L]) {
    if (h0 >= 0 && w0 >= 0 && h0 + R <= h && w0 + R <= w) {
      const T* row = plane + h0 * w + w0;
      for (int a = 0; a < R; ++a, row += w)
        for (int b = 0; b < R; ++b) d[a][b][l] = row[b];
      return;
    }
    for (int a = 0; a < R; ++a) {
      const std::int64_t hi = h0 + a;
      for (int b = 0; b < R; ++b) {
        const std::int64_t wi = w0 + b;
        d[a][b][l] = (hi >= 0 && hi < h && wi >= 0 && wi < w) ? plane[hi * w + wi] : T(0);
      }
    }
  }

  template <int R>
  static void zero_lane(int l, T (&d)[R][R][L]) {
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < R; ++b) d[a][b][l] = T(0);
  }

  // dst[pos * stride + l] = src[pos][l] for the first cnt lanes.
  static void store_lanes(const T (&src)[A][A][L], int cnt, T* dst, std::int64_t stride) {
    for (int a = 0; a < A; ++a)
      for (int b = 0; b < A; ++b) {
        T* o = dst + (a * A + b) * stride;
        if (cnt == L) {
          for (int l = 0; l < L; ++l) o[l] = src[a][b][l];
        } else {
          for (int l = 0; l < cnt; ++l) o[l] = src[a][b][l];
        }
      }
  }

  // V[pos][c][t - t0] = (B^T d B)[pos] for channel c0 + c of x and tiles t0 + [tb, tb + L) within the block.
  MAGMADNN_SIMD_CLONES
  static void input_block(const Tiling& tl, const T* x, std::int64_t ctot, std::int64_t c0, std::int64_t ci,
                          std::int64_t c, std::int64_t t0, std::int64_t nb, std::int64_t tb, T* V) {
    const int cnt = static_cast<int>(std::min<std::int64_t>(L, nb - tb));
    alignas(64) T d[A][A][L];
    auto p = tl.pos(t0 + tb);
    for (int l = 0; l < L; ++l, tl.next(p)) {
      if (l >= cnt) {
        zero_lane(l, d);
      } else {
        gather_lane(x + (p.n * ctot + c0 + c) * tl.ih * tl.iw, tl.ih, tl.iw, p.i * M - tl.ph, p.j * M - tl.pw, l, d);
      }
    }
    alignas(64) T v[A][A][L];
    sandwich<Mx::BT, Mx::BT>(d, v);
    store_lanes(v, cnt, V + c * nb + tb, ci * nb);
  }

  // Z[pos][k][t - t0] = (A dy A^T)[pos] for the M x M tiles of dy (zeros beyond oh x ow)
  // of channel k0 + k and tiles t0 + [tb, tb + L) within the block.
  MAGMADNN_SIMD_CLONES
  static void grad_output_block(const Tiling& tl, const T* dy, std::int64_t ktot, std::int64_t k0,
                                std::int64_t co, std::int64_t k, std::int64_t t0, std::int64_t nb, std::int64_t tb,
                                T* Z) {
    const int cnt = static_cast<int>(std::min<std::int64_t>(L, nb - tb));
    alignas(64) T e[M][M][L];
    auto p = tl.pos(t0 + tb);
    for (int l = 0; l < L; ++l, tl.next(p)) {
      if (l >= cnt) {
        zero_lane(l, e);
      } else {
        gather_lane(dy + (p.n * ktot + k0 + k) * tl.oh * tl.ow, tl.oh, tl.ow, p.i * M, p.j * M, l, e);
      }
    }
    alignas(64) T z[A][A][L];
    sandwich<ATt, ATt>(e, z);
    store_lanes(z, cnt, Z + k * nb + tb, co * nb);
  }

  // y[n, k0 + k, tile] = (A^T m A) (+ bias) for tiles t0 + [tb, tb + L) within the block,
  // m read from Mo[pos][k][t - t0].
  MAGMADNN_SIMD_CLONES
  static void output_block(const Tiling& tl, const T* Mo, std::int64_t ktot, std::int64_t k0, std::int64_t co,
                           std::int64_t k, std::int64_t t0, std::int64_t nb, std::int64_t tb, const T* bias,
                           T* y) {
    const int cnt = static_cast<int>(std::min<std::int64_t>(L, nb - tb));
    alignas(64) T m[A][A][L];
    const T* in = Mo + k * nb + tb;
    const std::int64_t stride = co * nb;
    for (int a = 0; a < A; ++a)
      for (int b = 0; b < A; ++b) {
        const T* src = in + (a * A + b) * stride;
        for (int l = 0; l < L; ++l) m[a][b][l] = l < cnt ? src[l] : T(0);
      }
    alignas(64) T r[M][M][L];
    sandwich<Mx::AT, Mx::AT>(m, r);
    const T bv = bias ? bias[k0 + k] : T(0);
    auto p = tl.pos(t0 + tb);
    for (int l = 0; l < cnt; ++l, tl.next(p)) {
      T* yp = y + (p.n * ktot + k0 + k) * tl.oh * tl.ow;
      for (int a = 0; a < M; ++a) {
        const std::int64_t ho = p.i * M + a;
        if (ho >= tl.oh) break;
        for (int b = 0; b < M; ++b) {
          const std::int64_t wo = p.j * M + b;
          if (wo < tl.ow) yp[ho * tl.ow + wo] = r[a][b][l] + bv;
        }
      }
    }
  }

  // The three passes over a block of nb tiles, parallel over (channel, group of L tiles).
  static void input_transform(const Tiling& tl, const T* x, std::int64_t ctot, std::int64_t c0, std::int64_t ci,
                              std::int64_t t0, std::int64_t nb, T* V) {
    const std::int64_t groups = (nb + L - 1) / L;
    parallel_for(ci * groups, ci * nb > 64, [&](std::int64_t cg) {
      input_block(tl, x, ctot, c0, ci, cg / groups, t0, nb, (cg % groups) * L, V);
    });
  }
  static void output_transform(const Tiling& tl, const T* Mo, std::int64_t ktot, std::int64_t k0, std::int64_t co,
                               std::int64_t t0, std::int64_t nb, const T* bias, T* y) {
    const std::int64_t groups = (nb + L - 1) / L;
    parallel_for(co * groups, co * nb > 64, [&](std::int64_t kg) {
      output_block(tl, Mo, ktot, k0, co, kg / groups, t0, nb, (kg % groups) * L, bias, y);
    });
  }
  static void grad_output_transform(const Tiling& tl, const T* dy, std::int64_t ktot, std::int64_t k0,
                                    std::int64_t co, std::int64_t t0, std::int64_t nb, T* Z) {
    const std::int64_t groups = (nb + L - 1) / L;
    parallel_for(co * groups, co * nb > 64, [&](std::int64_t kg) {
      grad_output_block(tl, dy, ktot, k0, co, kg / groups, t0, nb, (kg % groups) * L, Z);
    });
  }

  // Tiles per block: the transformed block (ci + co channels at alpha^2
  // positions) within ~8 MiB, so it is still in cache when the GEMMs read it.
  static std::int64_t block_tiles(std::int64_t tiles, std::int64_t ci, std::int64_t co) {
    const std::int64_t per_tile = AA * (ci + co) * static_cast<std::int64_t>(sizeof(T));
    const std::int64_t b = std::max<std::int64_t>(32, (std::int64_t{8} << 20) / per_tile) / L * L;
    return std::min(tiles, b);
  }
  static std::size_t workspace(std::int64_t groups, std::int64_t tiles, std::int64_t ci, std::int64_t co) {
    const std::int64_t nb = block_tiles(tiles, ci, co);
    return align64(sizeof(T) * groups * AA * ci * co) + align64(sizeof(T) * AA * ci * nb) +
           align64(sizeof(T) * AA * co * nb);
  }

  // A forward-shaped convolution with the filters already transformed:
  // U[g][pos][co][ci]; x has ci*G channels, y co*G.
  static void run_forward(const Tiling& tl, std::int64_t G, std::int64_t ci, std::int64_t co, const T* U,
                          const T* x, const T* bias, T* y, T* V, T* Mo) {
    const std::int64_t tiles = tl.tiles(), nbmax = block_tiles(tiles, ci, co);
    for (std::int64_t t0 = 0; t0 < tiles; t0 += nbmax) {
      const std::int64_t nb = std::min(nbmax, tiles - t0);
      for (std::int64_t g = 0; g < G; ++g) {
        input_transform(tl, x, ci * G, g * ci, ci, t0, nb, V);
        const T* Ug = U + g * AA * co * ci;
        cpu::gemm_strided_batched(false, false, co, nb, ci, T(1), Ug, ci, co * ci, V, nb, ci * nb, T(0), Mo, nb,
                                  co * nb, AA);
        output_transform(tl, Mo, co * G, g * co, co, t0, nb, bias, y);
      }
    }
  }

  // dU[g][pos][kg][cg] = sum over tiles of (A dy A^T)[pos] (B^T x B)[pos]^T (x has cg*G channels).
  static void run_filter_grad(const Tiling& tl, std::int64_t G, std::int64_t cg, std::int64_t kg, const T* x,
                              const T* dy, T* dU, T* V, T* Z) {
    const std::int64_t tiles = tl.tiles(), nbmax = block_tiles(tiles, cg, kg);
    for (std::int64_t t0 = 0; t0 < tiles; t0 += nbmax) {
      const std::int64_t nb = std::min(nbmax, tiles - t0);
      for (std::int64_t g = 0; g < G; ++g) {
        input_transform(tl, x, cg * G, g * cg, cg, t0, nb, V);
        grad_output_transform(tl, dy, kg * G, g * kg, kg, t0, nb, Z);
        cpu::gemm_strided_batched(false, true, kg, cg, nb, T(1), Z, nb, kg * nb, V, nb, cg * nb,
                                  t0 == 0 ? T(0) : T(1), dU + g * AA * kg * cg, cg, kg * cg, AA);
      }
    }
  }
};

template <typename T, int M>
class WinogradConv final : public ConvAlgorithm<T> {
  using W = Winograd<T, M>;

 public:
  Algo id() const noexcept override { return M == 2 ? Algo::WinogradF2x2 : Algo::WinogradF4x4; }
  DeviceKind device() const noexcept override { return DeviceKind::CPU; }
  bool supports(const ConvProblem& pr, Pass) const override {
    const auto& g = pr.geom;
    return pr.r == 3 && pr.s == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1;
  }
  bool reads_blocked(const ConvProblem& pr, Pass pass) const override {
    return supports(pr, pass) && blocked_geometry(pr, pass) != std::nullopt;
  }
  std::size_t workspace_bytes(const ConvProblem& pr, Pass pass) const override {
    if (pr.blocked()) {
      const auto geo = blocked_geometry(pr, pass);
      if (!geo) return 0;  // not taken: forced, it throws
      return pass == Pass::BackwardFilter ? winograd_blocked::filter_pass_bytes(*geo)
                                          : winograd_blocked::filter_bytes(pr.c, pr.k);
    }
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    if (pass == Pass::BackwardData) return W::workspace(G, data_tiling(pr).tiles(), kg, cg);
    return W::workspace(G, fwd_tiling(pr).tiles(), cg, kg);
  }

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws) override {
    if (pr.blocked()) {
      run_blocked(pr, Pass::Forward, x, w, bias, false, y, ws);
      return;
    }
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    const Tiling tl = fwd_tiling(pr);
    // The lambdas copy U in: Clang before 16 cannot capture a structured binding.
    auto [U, V, Mo] = carve(ws, G, tl.tiles(), cg, kg);
    // U[g][pos][k][c] from w[g*kg + k][c]
    parallel_for(pr.k * cg, pr.k * cg > 256, [&, U = U](std::int64_t kc) {
      const std::int64_t k = kc / cg, c = kc % cg, g = k / kg, kk = k % kg;
      W::filter_transform(w + kc * 9, 3, 1, U + ((g * W::AA) * kg + kk) * cg + c, kg * cg);
    });
    W::run_forward(tl, G, cg, kg, U, x, bias, y, V, Mo);
  }

  // Only the blocked kernel applies the ReLU as it writes y.
  bool forward_relu(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws) override {
    if (!pr.blocked()) return false;
    run_blocked(pr, Pass::Forward, x, w, bias, true, y, ws);
    return true;
  }

  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* ws) override {
    if (pr.blocked()) {
      run_blocked(pr, Pass::BackwardData, dy, w, nullptr, false, dx, ws);
      return;
    }
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    const Tiling tl = data_tiling(pr);
    auto [U, V, Mo] = carve(ws, G, tl.tiles(), kg, cg);
    // U[g][pos][c][k] from w[g*kg + k][c] rotated by 180 degrees.
    parallel_for(pr.k * cg, pr.k * cg > 256, [&, U = U](std::int64_t kc) {
      const std::int64_t k = kc / cg, c = kc % cg, g = k / kg, kk = k % kg;
      W::filter_transform(w + kc * 9 + 8, -3, -1, U + ((g * W::AA) * cg + c) * kg + kk, cg * kg);
    });
    W::run_forward(tl, G, kg, cg, U, dy, nullptr, dx, V, Mo);
  }

  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* ws) override {
    if (pr.blocked()) {
      const winograd_blocked::Geometry geo = checked_geometry(pr, Pass::BackwardFilter);
      if constexpr (std::is_same_v<T, float>) {
        winograd_blocked::run_filter(geo, x, dy, dw, ws);
        cpu_detail::bias_grad_blocked(pr, dy, db);
      }
      return;
    }
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    const Tiling tl = fwd_tiling(pr);
    auto [dU, V, Z] = carve(ws, G, tl.tiles(), cg, kg);
    W::run_filter_grad(tl, G, cg, kg, x, dy, dU, V, Z);
    // dw[k][c] = G^T dU G
    parallel_for(pr.k * cg, pr.k * cg > 256, [&, dU = dU](std::int64_t kc) {
      const std::int64_t k = kc / cg, c = kc % cg, g = k / kg, kk = k % kg;
      W::filter_grad_transform(dU + ((g * W::AA) * kg + kk) * cg + c, kg * cg, dw + kc * 9);
    });
    cpu_detail::bias_grad(pr, dy, db);
  }

 private:
  // The blocked kernels' view of `pass` (the data pass is a forward pass
  // from dy, with the filters rotated and padding 2 - pad; the filter pass
  // sees the forward geometry), or none where they do not apply: double,
  // F(4x4), groups, or a layout they cannot read.
  static std::optional<winograd_blocked::Geometry> blocked_geometry(const ConvProblem& pr, Pass pass) {
    if (!std::is_same_v<T, float> || M != 2 || pr.geom.groups != 1) return std::nullopt;
    const auto& g = pr.geom;
    const winograd_blocked::Geometry geo =
        pass != Pass::BackwardData
            ? winograd_blocked::Geometry{pr.n, pr.c, pr.k, pr.h, pr.w, pr.p, pr.q, g.pad_h, g.pad_w, pr.x_block,
                                         pr.y_block}
            : winograd_blocked::Geometry{pr.n, pr.k, pr.c, pr.p, pr.q, pr.h, pr.w, 2 - g.pad_h, 2 - g.pad_w,
                                         pr.y_block, pr.x_block};
    if (!winograd_blocked::applies(geo)) return std::nullopt;
    return geo;
  }
  // blocked_geometry(), or NotSupportedError naming the pass and problem.
  winograd_blocked::Geometry checked_geometry(const ConvProblem& pr, Pass pass) const {
    const auto geo = blocked_geometry(pr, pass);
    MAGMADNN_CHECK(geo.has_value(), NotSupportedError,
                   "conv " << algo_name(id()) << ": the " << pass_name(pass) << " pass does not read "
                           << pr.to_string());
    return *geo;
  }
  // The forward (with the ReLU or not) or data pass of a blocked problem.
  void run_blocked(const ConvProblem& pr, Pass pass, const T* in, const T* w, const T* bias, bool relu, T* out,
                   void* ws) {
    const winograd_blocked::Geometry geo = checked_geometry(pr, pass);
    if constexpr (std::is_same_v<T, float>) {
      auto* U = static_cast<float*>(ws);
      winograd_blocked::transform_filters(w, pr.k, pr.c, pass == Pass::BackwardData, U);
      winograd_blocked::run(geo, U, in, bias, relu, out);
    }
  }

  static Tiling fwd_tiling(const ConvProblem& pr) {
    return {pr.n, pr.h, pr.w, pr.p, pr.q, pr.geom.pad_h, pr.geom.pad_w, (pr.p + M - 1) / M, (pr.q + M - 1) / M};
  }
  // dx = forward(dy, rotated w) with padding 2 - pad.
  static Tiling data_tiling(const ConvProblem& pr) {
    return {pr.n, pr.p, pr.q, pr.h, pr.w, 2 - pr.geom.pad_h, 2 - pr.geom.pad_w, (pr.h + M - 1) / M,
            (pr.w + M - 1) / M};
  }
  struct Parts {
    T *u, *v, *m;
  };
  static Parts carve(void* ws, std::int64_t G, std::int64_t tiles, std::int64_t ci, std::int64_t co) {
    const std::int64_t nb = W::block_tiles(tiles, ci, co);
    auto* base = static_cast<unsigned char*>(ws);
    T* u = reinterpret_cast<T*>(base);
    base += align64(sizeof(T) * G * W::AA * ci * co);
    T* v = reinterpret_cast<T*>(base);
    base += align64(sizeof(T) * W::AA * ci * nb);
    return {u, v, reinterpret_cast<T*>(base)};
  }
};

template <typename T>
using WinogradF2 = WinogradConv<T, 2>;
template <typename T>
using WinogradF4 = WinogradConv<T, 4>;
const cpu_detail::Registrar<WinogradF2> registrar2;
const cpu_detail::Registrar<WinogradF4> registrar4;

}  // namespace
}  // namespace magmadnn::conv

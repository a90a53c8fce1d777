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
#include <algorithm>
#include <cstring>

#include "magmadnn/conv/cpu_conv_util.h"

namespace magmadnn::conv {
namespace {

using cpu_detail::align64;
using cpu_detail::gemm;
using magmadnn::cpu::parallel_for;

template <int M>
struct Mat;
template <>
struct Mat<2> {
  static constexpr double BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static constexpr double AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};
template <>
struct Mat<4> {
  static constexpr double BT[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                      {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
  static constexpr double G[6][3] = {{1.0 / 4, 0, 0},
                                     {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                     {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                     {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                     {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                     {0, 0, 1}};
  static constexpr double AT[4][6] = {
      {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
};

// Where the tiles of one "forward-shaped" convolution are: an input of
// n x ci x ih x iw, an output of oh x ow, the input origin of tile (i, j)
// at (i*M - ph, j*M - pw).
struct Tiling {
  std::int64_t n, ih, iw, oh, ow, ph, pw, th, tw;
  std::int64_t tiles() const { return n * th * tw; }
};

template <typename T, int M>
struct Winograd {
  static constexpr int A = M + 2;
  static constexpr int AA = A * A;
  using Mx = Mat<M>;

  // out[pos * stride] = (G g G^T)[pos] for a 3x3 filter g (r, s), read through (rs, ss) strides.
  static void filter_transform(const T* g, std::int64_t rs, std::int64_t ss, T* out, std::int64_t stride) {
    double tmp[A][3];
    for (int i = 0; i < A; ++i)
      for (int s = 0; s < 3; ++s) {
        double acc = 0;
        for (int r = 0; r < 3; ++r) acc += Mx::G[i][r] * double(g[r * rs + s * ss]);
        tmp[i][s] = acc;
      }
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j) {
        double acc = 0;
        for (int s = 0; s < 3; ++s) acc += tmp[i][s] * Mx::G[j][s];
        out[(i * A + j) * stride] = static_cast<T>(acc);
      }
  }

  // V[pos][c][t - t0] = (B^T d B)[pos] for channels [c0, c0 + ci) of x and tiles [t0, t0 + nb).
  static void input_transform(const Tiling& tl, const T* x, std::int64_t ctot, std::int64_t c0, std::int64_t ci,
                              std::int64_t t0, std::int64_t nb, T* V) {
    const std::int64_t per_img = tl.th * tl.tw;
    parallel_for(ci * nb, ci * nb > 64, [&](std::int64_t ct) {
      const std::int64_t c = ct / nb, tb = ct % nb, t = t0 + tb;
      const std::int64_t n = t / per_img, i = (t % per_img) / tl.tw, j = t % tl.tw;
      const T* xp = x + (n * ctot + c0 + c) * tl.ih * tl.iw;
      const std::int64_t h0 = i * M - tl.ph, w0 = j * M - tl.pw;
      T d[A][A];
      const bool inside = h0 >= 0 && w0 >= 0 && h0 + A <= tl.ih && w0 + A <= tl.iw;
#pragma GCC unroll 6
      for (int a = 0; a < A; ++a) {
        const std::int64_t hi = h0 + a;
#pragma GCC unroll 6
        for (int b = 0; b < A; ++b) {
          const std::int64_t wi = w0 + b;
          d[a][b] = (inside || (hi >= 0 && hi < tl.ih && wi >= 0 && wi < tl.iw)) ? xp[hi * tl.iw + wi] : T(0);
        }
      }
      T tmp[A][A];
#pragma GCC unroll 6
      for (int a = 0; a < A; ++a)
#pragma GCC unroll 6
        for (int b = 0; b < A; ++b) {
          T acc = 0;
#pragma GCC unroll 6
          for (int k = 0; k < A; ++k) acc += T(Mx::BT[a][k]) * d[k][b];
          tmp[a][b] = acc;
        }
      T* out = V + c * nb + tb;
      const std::int64_t stride = ci * nb;
#pragma GCC unroll 6
      for (int a = 0; a < A; ++a)
#pragma GCC unroll 6
        for (int b = 0; b < A; ++b) {
          T acc = 0;
#pragma GCC unroll 6
          for (int k = 0; k < A; ++k) acc += tmp[a][k] * T(Mx::BT[b][k]);
          out[(a * A + b) * stride] = acc;
        }
    });
  }

  // y[n, k0 + k, tile] = (A^T m A) (+ bias) for k < co, m gathered from Mo[pos][k][t - t0].
  static void output_transform(const Tiling& tl, const T* Mo, std::int64_t ktot, std::int64_t k0, std::int64_t co,
                               std::int64_t t0, std::int64_t nb, const T* bias, T* y) {
    const std::int64_t per_img = tl.th * tl.tw;
    parallel_for(co * nb, co * nb > 64, [&](std::int64_t kt) {
      const std::int64_t k = kt / nb, tb = kt % nb, t = t0 + tb;
      const std::int64_t n = t / per_img, i = (t % per_img) / tl.tw, j = t % tl.tw;
      const T* in = Mo + k * nb + tb;
      const std::int64_t stride = co * nb;
      T m[A][A];
#pragma GCC unroll 6
      for (int a = 0; a < A; ++a)
#pragma GCC unroll 6
        for (int b = 0; b < A; ++b) m[a][b] = in[(a * A + b) * stride];
      T tmp[M][A];
#pragma GCC unroll 6
      for (int a = 0; a < M; ++a)
#pragma GCC unroll 6
        for (int b = 0; b < A; ++b) {
          T acc = 0;
#pragma GCC unroll 6
          for (int kk = 0; kk < A; ++kk) acc += T(Mx::AT[a][kk]) * m[kk][b];
          tmp[a][b] = acc;
        }
      const T bv = bias ? bias[k0 + k] : T(0);
      T* yp = y + (n * ktot + k0 + k) * tl.oh * tl.ow;
      for (int a = 0; a < M; ++a) {
        const std::int64_t ho = i * M + a;
        if (ho >= tl.oh) break;
#pragma GCC unroll 6
        for (int b = 0; b < M; ++b) {
          const std::int64_t wo = j * M + b;
          T acc = bv;
#pragma GCC unroll 6
          for (int kk = 0; kk < A; ++kk) acc += tmp[a][kk] * T(Mx::AT[b][kk]);
          if (wo < tl.ow) yp[ho * tl.ow + wo] = acc;
        }
      }
    });
  }

  // Z[pos][k][t - t0] = (A dy A^T)[pos] for the M x M tile of dy (zeros beyond oh x ow).
  static void grad_output_transform(const Tiling& tl, const T* dy, std::int64_t ktot, std::int64_t k0,
                                    std::int64_t co, std::int64_t t0, std::int64_t nb, T* Z) {
    const std::int64_t per_img = tl.th * tl.tw;
    parallel_for(co * nb, co * nb > 64, [&](std::int64_t kt) {
      const std::int64_t k = kt / nb, tb = kt % nb, t = t0 + tb;
      const std::int64_t n = t / per_img, i = (t % per_img) / tl.tw, j = t % tl.tw;
      const T* yp = dy + (n * ktot + k0 + k) * tl.oh * tl.ow;
      T e[M][M];
      for (int a = 0; a < M; ++a)
        for (int b = 0; b < M; ++b) {
          const std::int64_t ho = i * M + a, wo = j * M + b;
          e[a][b] = (ho < tl.oh && wo < tl.ow) ? yp[ho * tl.ow + wo] : T(0);
        }
      T tmp[A][M];
#pragma GCC unroll 6
      for (int a = 0; a < A; ++a)
#pragma GCC unroll 6
        for (int b = 0; b < M; ++b) {
          T acc = 0;
#pragma GCC unroll 6
          for (int kk = 0; kk < M; ++kk) acc += T(Mx::AT[kk][a]) * e[kk][b];
          tmp[a][b] = acc;
        }
      T* out = Z + k * nb + tb;
      const std::int64_t stride = co * nb;
#pragma GCC unroll 6
      for (int a = 0; a < A; ++a)
#pragma GCC unroll 6
        for (int b = 0; b < A; ++b) {
          T acc = 0;
#pragma GCC unroll 6
          for (int kk = 0; kk < M; ++kk) acc += tmp[a][kk] * T(Mx::AT[kk][b]);
          out[(a * A + b) * stride] = acc;
        }
    });
  }

  // Tiles per block: the transformed block (ci + co channels at alpha^2
  // positions) within ~8 MiB, so it is still in cache when the GEMMs read it.
  static std::int64_t block_tiles(std::int64_t tiles, std::int64_t ci, std::int64_t co) {
    const std::int64_t per_tile = AA * (ci + co) * static_cast<std::int64_t>(sizeof(T));
    const std::int64_t b = std::max<std::int64_t>(32, (std::int64_t{8} << 20) / per_tile);
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
        for (int pos = 0; pos < AA; ++pos) {
          gemm<T>(false, false, co, nb, ci, T(1), Ug + pos * co * ci, ci, V + pos * ci * nb, nb, T(0),
                  Mo + pos * co * nb, nb);
        }
        output_transform(tl, Mo, co * G, g * co, co, t0, nb, bias, y);
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
  std::size_t workspace_bytes(const ConvProblem& pr, Pass pass) const override {
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    if (pass == Pass::BackwardData) return W::workspace(G, data_tiling(pr).tiles(), kg, cg);
    return W::workspace(G, fwd_tiling(pr).tiles(), cg, kg);
  }

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws) override {
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    const Tiling tl = fwd_tiling(pr);
    auto [U, V, Mo] = carve(ws, G, tl.tiles(), cg, kg);
    // U[g][pos][k][c] from w[g*kg + k][c]
    parallel_for(pr.k * cg, pr.k * cg > 256, [&](std::int64_t kc) {
      const std::int64_t k = kc / cg, c = kc % cg, g = k / kg, kk = k % kg;
      W::filter_transform(w + kc * 9, 3, 1, U + ((g * W::AA) * kg + kk) * cg + c, kg * cg);
    });
    W::run_forward(tl, G, cg, kg, U, x, bias, y, V, Mo);
  }

  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* ws) override {
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    const Tiling tl = data_tiling(pr);
    auto [U, V, Mo] = carve(ws, G, tl.tiles(), kg, cg);
    // U[g][pos][c][k] from w[g*kg + k][c] rotated by 180 degrees.
    parallel_for(pr.k * cg, pr.k * cg > 256, [&](std::int64_t kc) {
      const std::int64_t k = kc / cg, c = kc % cg, g = k / kg, kk = k % kg;
      W::filter_transform(w + kc * 9 + 8, -3, -1, U + ((g * W::AA) * cg + c) * kg + kk, cg * kg);
    });
    W::run_forward(tl, G, kg, cg, U, dy, nullptr, dx, V, Mo);
  }

  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* ws) override {
    const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
    const Tiling tl = fwd_tiling(pr);
    const std::int64_t tiles = tl.tiles(), nbmax = W::block_tiles(tiles, cg, kg);
    auto [dU, V, Z] = carve(ws, G, tiles, cg, kg);
    for (std::int64_t t0 = 0; t0 < tiles; t0 += nbmax) {
      const std::int64_t nb = std::min(nbmax, tiles - t0);
      for (std::int64_t g = 0; g < G; ++g) {
        W::input_transform(tl, x, pr.c, g * cg, cg, t0, nb, V);
        W::grad_output_transform(tl, dy, pr.k, g * kg, kg, t0, nb, Z);
        T* dUg = dU + g * W::AA * kg * cg;
        for (int pos = 0; pos < W::AA; ++pos) {
          gemm<T>(false, true, kg, cg, nb, T(1), Z + pos * kg * nb, nb, V + pos * cg * nb, nb,
                  t0 == 0 ? T(0) : T(1), dUg + pos * kg * cg, cg);
        }
      }
    }
    // dw[k][c] = G^T dU G
    parallel_for(pr.k * cg, pr.k * cg > 256, [&](std::int64_t kc) {
      const std::int64_t k = kc / cg, c = kc % cg, g = k / kg, kk = k % kg;
      const T* u = dU + ((g * W::AA) * kg + kk) * cg + c;
      const std::int64_t stride = kg * cg;
      double tmp[3][W::A];
      for (int r = 0; r < 3; ++r)
        for (int j = 0; j < W::A; ++j) {
          double acc = 0;
          for (int i = 0; i < W::A; ++i) acc += Mat<M>::G[i][r] * double(u[(i * W::A + j) * stride]);
          tmp[r][j] = acc;
        }
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) {
          double acc = 0;
          for (int j = 0; j < W::A; ++j) acc += tmp[r][j] * Mat<M>::G[j][s];
          dw[kc * 9 + r * 3 + s] = static_cast<T>(acc);
        }
    });
    cpu_detail::bias_grad(pr, dy, db);
  }

 private:
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

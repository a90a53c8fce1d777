// Winograd F(2x2, 3x3) on the GPU (Lavin & Gray): each 2x2 output tile is
// A^T [ (G g G^T) .* (B^T d B) ] A, summed over input channels. The channel
// sum of the 16 element-wise products is 16 GEMMs (one per tile element),
// run as one strided-batched cuBLAS call per group:
//   U[e] {K, C/G}  transformed filters      (once per call)
//   V[e] {C, T}    transformed input tiles  (T = tiles of a block of images)
//   M[e] {K, T} = U[e] V[e]                 then the output transform
//
// Backward data of a 3x3, stride-1 convolution with padding p is the forward
// convolution of dy with the flipped, channel-swapped filter and padding
// 2 - p, so it runs through the same forward when the padding is at most 2.
// Backward filter has no Winograd form here: it is computed by Im2colCuda
// inside the same call (documented in winograd_cuda.h).
#include "magmadnn/conv/cuda/winograd_cuda.h"

#include <algorithm>
#include <memory>

#include "magmadnn/backend/cuda/cuda_common.cuh"
#include "magmadnn/conv/cuda/conv_kernels_cuda.h"

namespace magmadnn::conv::cuda {
namespace {

using magmadnn::cuda::global_thread;
using magmadnn::cuda::grid_stride;

constexpr int kBlock = 256;
constexpr std::size_t kAlign = 256;

std::size_t align_up(std::size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

struct Tiles {
  std::int64_t th, tw;  // tiles per image along each axis
};
Tiles tiles_of(const ConvProblem& pr) { return {(pr.p + 1) / 2, (pr.q + 1) / 2}; }

// U[e][k][c] = (G g G^T)[e] for each filter g = w[k][c] (3x3).
template <typename T>
__global__ void filter_transform(const T* __restrict__ w, T* __restrict__ u, std::int64_t kc) {
  for (std::int64_t i = global_thread(); i < kc; i += grid_stride()) {
    const T* g = w + i * 9;
    T t[4][3];  // G g
    for (int j = 0; j < 3; ++j) {
      const T a = g[j], b = g[3 + j], c = g[6 + j];
      t[0][j] = a;
      t[1][j] = T(0.5) * (a + b + c);
      t[2][j] = T(0.5) * (a - b + c);
      t[3][j] = c;
    }
    for (int r = 0; r < 4; ++r) {  // (G g) G^T
      const T a = t[r][0], b = t[r][1], c = t[r][2];
      u[(r * 4 + 0) * kc + i] = a;
      u[(r * 4 + 1) * kc + i] = T(0.5) * (a + b + c);
      u[(r * 4 + 2) * kc + i] = T(0.5) * (a - b + c);
      u[(r * 4 + 3) * kc + i] = c;
    }
  }
}

// V[e][c][t] = (B^T d B)[e] for the 4x4 input patch d of tile t of channel c.
template <typename T>
__global__ void input_transform(const T* __restrict__ x, T* __restrict__ v, std::int64_t images, std::int64_t C,
                                std::int64_t H, std::int64_t W, std::int64_t ph, std::int64_t pw, std::int64_t th,
                                std::int64_t tw) {
  const std::int64_t tiles = images * th * tw, total = C * tiles;
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t tx = i % tw, ty = (i / tw) % th, c = (i / (tw * th)) % C, b = i / (tw * th * C);
    const T* plane = x + (b * C + c) * H * W;
    const std::int64_t h0 = 2 * ty - ph, w0 = 2 * tx - pw;
    T d[4][4];
    for (int r = 0; r < 4; ++r)
      for (int s = 0; s < 4; ++s) {
        const std::int64_t h = h0 + r, ww = w0 + s;
        d[r][s] = (h >= 0 && h < H && ww >= 0 && ww < W) ? plane[h * W + ww] : T(0);
      }
    T t[4][4];  // B^T d
    for (int s = 0; s < 4; ++s) {
      t[0][s] = d[0][s] - d[2][s];
      t[1][s] = d[1][s] + d[2][s];
      t[2][s] = d[2][s] - d[1][s];
      t[3][s] = d[1][s] - d[3][s];
    }
    const std::int64_t t_index = (b * th + ty) * tw + tx;
    T* out = v + c * tiles + t_index;
    const std::int64_t e_stride = C * tiles;
    for (int r = 0; r < 4; ++r) {  // (B^T d) B
      out[(r * 4 + 0) * e_stride] = t[r][0] - t[r][2];
      out[(r * 4 + 1) * e_stride] = t[r][1] + t[r][2];
      out[(r * 4 + 2) * e_stride] = t[r][2] - t[r][1];
      out[(r * 4 + 3) * e_stride] = t[r][1] - t[r][3];
    }
  }
}

// y tile = A^T m A (+ bias), clipped at the bottom and right edges.
template <typename T>
__global__ void output_transform(const T* __restrict__ m, const T* __restrict__ bias, T* __restrict__ y,
                                 std::int64_t images, std::int64_t K, std::int64_t P, std::int64_t Q,
                                 std::int64_t th, std::int64_t tw) {
  const std::int64_t tiles = images * th * tw, total = K * tiles;
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t tx = i % tw, ty = (i / tw) % th, k = (i / (tw * th)) % K, b = i / (tw * th * K);
    const std::int64_t t_index = (b * th + ty) * tw + tx;
    const T* in = m + k * tiles + t_index;
    const std::int64_t e_stride = K * tiles;
    T a[4][4];
    for (int e = 0; e < 16; ++e) a[e / 4][e % 4] = in[e * e_stride];
    T t[2][4];  // A^T a
    for (int s = 0; s < 4; ++s) {
      t[0][s] = a[0][s] + a[1][s] + a[2][s];
      t[1][s] = a[1][s] - a[2][s] - a[3][s];
    }
    const T bk = bias ? bias[k] : T(0);
    T* plane = y + (b * K + k) * P * Q;
    for (int r = 0; r < 2; ++r) {
      const std::int64_t p = 2 * ty + r;
      if (p >= P) continue;
      const T o[2] = {t[r][0] + t[r][1] + t[r][2], t[r][1] - t[r][2] - t[r][3]};
      for (int s = 0; s < 2; ++s) {
        const std::int64_t q = 2 * tx + s;
        if (q < Q) plane[p * Q + q] = o[s] + bk;
      }
    }
  }
}

// The problem whose forward pass is the backward data of `pr`.
ConvProblem transposed_problem(const ConvProblem& pr) {
  ConvProblem t = pr;
  t.c = pr.k, t.h = pr.p, t.w = pr.q;
  t.k = pr.c, t.p = pr.h, t.q = pr.w;
  t.geom.pad_h = pr.r - 1 - pr.geom.pad_h;
  t.geom.pad_w = pr.s - 1 - pr.geom.pad_w;
  return t;
}

template <typename T>
std::size_t filter_bytes(const ConvProblem& pr) {
  return align_up(sizeof(T) * 16 * static_cast<std::size_t>(pr.k * (pr.c / pr.geom.groups)));
}
template <typename T>
std::size_t tile_bytes_per_image(const ConvProblem& pr) {
  const Tiles t = tiles_of(pr);
  return sizeof(T) * 16 * static_cast<std::size_t>((pr.c + pr.k) * t.th * t.tw);
}
template <typename T>
std::size_t forward_bytes(const ConvProblem& pr) {
  const std::size_t per = tile_bytes_per_image<T>(pr);
  // V and M are aligned separately: one extra alignment unit each.
  return filter_bytes<T>(pr) + static_cast<std::size_t>(images_per_block(pr, per)) * per + 2 * kAlign;
}

}  // namespace

template <typename T>
bool WinogradCuda<T>::supports(const ConvProblem& pr, Pass pass) const {
  const ConvParams& g = pr.geom;
  const bool shape = pr.r == 3 && pr.s == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 &&
                     g.dilation_w == 1;
  if (!shape) return false;
  if (pass == Pass::BackwardData) return g.pad_h <= 2 && g.pad_w <= 2;
  return true;
}

template <typename T>
std::size_t WinogradCuda<T>::workspace_bytes(const ConvProblem& pr, Pass pass) const {
  switch (pass) {
    case Pass::Forward: return forward_bytes<T>(pr);
    case Pass::BackwardData: {
      const ConvProblem t = transposed_problem(pr);
      return align_up(sizeof(T) * static_cast<std::size_t>(pr.k * (pr.c / pr.geom.groups) * 9)) +
             forward_bytes<T>(t);
    }
    case Pass::BackwardFilter: return im2col_.workspace_bytes(pr, pass);
  }
  return 0;
}

template <typename T>
void WinogradCuda<T>::forward_in(ConvCall& call, const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y,
                                 void* ws) {
  if (!ws) ws = call.scratch(forward_bytes<T>(pr));
  const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
  const Tiles tl = tiles_of(pr);
  const std::int64_t block = images_per_block(pr, tile_bytes_per_image<T>(pr));
  auto* base = static_cast<char*>(ws);
  T* u = reinterpret_cast<T*>(base);
  T* v = reinterpret_cast<T*>(base + filter_bytes<T>(pr));
  const std::size_t v_bytes = align_up(sizeof(T) * 16 * static_cast<std::size_t>(pr.c * block * tl.th * tl.tw));
  T* m = reinterpret_cast<T*>(base + filter_bytes<T>(pr) + v_bytes);
  const Launch on = call.launch();

  const std::int64_t kc = pr.k * cg;
  filter_transform<T><<<on.grid(kc, kBlock), kBlock, 0, on.stream>>>(w, u, kc);
  MAGMADNN_KERNEL_CHECK();
  for (std::int64_t n0 = 0; n0 < pr.n; n0 += block) {
    const std::int64_t nb = std::min(block, pr.n - n0);
    const std::int64_t tiles = nb * tl.th * tl.tw;
    input_transform<T><<<on.grid(pr.c * tiles, kBlock), kBlock, 0, on.stream>>>(
        x + n0 * pr.c * pr.h * pr.w, v, nb, pr.c, pr.h, pr.w, pr.geom.pad_h, pr.geom.pad_w, tl.th, tl.tw);
    MAGMADNN_KERNEL_CHECK();
    for (std::int64_t g = 0; g < G; ++g) {
      gemm_batched<T>(call.blas(), false, false, kg, tiles, cg, T(1), u + g * kg * cg, cg, kc, v + g * cg * tiles,
                      tiles, pr.c * tiles, T(0), m + g * kg * tiles, tiles, pr.k * tiles, 16);
    }
    output_transform<T><<<on.grid(pr.k * tiles, kBlock), kBlock, 0, on.stream>>>(
        m, bias, y + n0 * pr.k * pr.p * pr.q, nb, pr.k, pr.p, pr.q, tl.th, tl.tw);
    MAGMADNN_KERNEL_CHECK();
  }
}

template <typename T>
void WinogradCuda<T>::forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* workspace) {
  check(pr, Pass::Forward);
  ConvCall call;
  forward_in(call, pr, x, w, bias, y, workspace);
  call.finish();
}

template <typename T>
void WinogradCuda<T>::backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* workspace) {
  check(pr, Pass::BackwardData);
  ConvCall call;
  if (!workspace) workspace = call.scratch(workspace_bytes(pr, Pass::BackwardData));
  const ConvProblem t = transposed_problem(pr);
  T* wt = static_cast<T*>(workspace);
  const std::size_t wt_bytes = align_up(sizeof(T) * static_cast<std::size_t>(pr.k * (pr.c / pr.geom.groups) * 9));
  flip_filter(pr, w, wt, call.launch());
  forward_in(call, t, dy, wt, nullptr, dx, static_cast<char*>(workspace) + wt_bytes);
  call.finish();
}

template <typename T>
void WinogradCuda<T>::backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* workspace) {
  check(pr, Pass::BackwardFilter);
  ConvCall call;
  im2col_.backward_filter_in(call, pr, x, dy, dw, db, workspace);
  call.finish();
}

template <typename T>
void WinogradCuda<T>::check(const ConvProblem& pr, Pass pass) const {
  MAGMADNN_CHECK(supports(pr, pass), NotSupportedError,
                 "convolution algorithm winograd_f2x2 (CUDA) does not support " << pass_name(pass) << " of "
                     << pr.to_string()
                     << " (it needs a 3x3 filter, stride 1, dilation 1, and padding <= 2 for backward_data)");
}

template class WinogradCuda<float>;
template class WinogradCuda<double>;

namespace {
const bool registered = [] {
  detail::register_algorithm<float>(std::make_unique<WinogradCuda<float>>());
  detail::register_algorithm<double>(std::make_unique<WinogradCuda<double>>());
  return true;
}();
}  // namespace

}  // namespace magmadnn::conv::cuda

#include "magmadnn/conv/cuda/conv_kernels_cuda.h"

#include <algorithm>

#include "magmadnn/backend/cuda/cuda_common.cuh"

namespace magmadnn::conv::cuda {
namespace {

using magmadnn::cuda::global_thread;
using magmadnn::cuda::grid_stride;

// Geometry in a kernel-argument-friendly form (ConvProblem holds a string-less
// POD too, but a flat struct keeps the device code independent of it).
struct Geo {
  std::int64_t C, H, W, K, R, S, P, Q, ph, pw, sh, sw, dh, dw, G;
};
Geo geo_of(const ConvProblem& p) {
  return {p.c, p.h, p.w, p.k, p.r, p.s, p.p, p.q, p.geom.pad_h, p.geom.pad_w, p.geom.stride_h, p.geom.stride_w,
          p.geom.dilation_h, p.geom.dilation_w, p.geom.groups};
}

template <typename T>
__global__ void im2col_kernel(Geo g, const T* __restrict__ x, std::int64_t total, T* __restrict__ col) {
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    std::int64_t t = i;
    const std::int64_t q = t % g.Q; t /= g.Q;
    const std::int64_t p = t % g.P; t /= g.P;
    const std::int64_t s = t % g.S; t /= g.S;
    const std::int64_t r = t % g.R; t /= g.R;
    const std::int64_t bc = t;  // image * C + channel
    const std::int64_t h = p * g.sh - g.ph + r * g.dh;
    const std::int64_t w = q * g.sw - g.pw + s * g.dw;
    col[i] = (h >= 0 && h < g.H && w >= 0 && w < g.W) ? x[(bc * g.H + h) * g.W + w] : T(0);
  }
}

template <typename T>
__global__ void col2im_kernel(Geo g, const T* __restrict__ col, std::int64_t total, T* __restrict__ dx) {
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    const std::int64_t w = i % g.W;
    const std::int64_t h = (i / g.W) % g.H;
    const std::int64_t bc = i / (g.W * g.H);
    T acc = 0;
    for (std::int64_t r = 0; r < g.R; ++r) {
      const std::int64_t hp = h + g.ph - r * g.dh;
      if (hp < 0 || hp % g.sh != 0 || hp / g.sh >= g.P) continue;
      const std::int64_t p = hp / g.sh;
      for (std::int64_t s = 0; s < g.S; ++s) {
        const std::int64_t wq = w + g.pw - s * g.dw;
        if (wq < 0 || wq % g.sw != 0 || wq / g.sw >= g.Q) continue;
        acc += col[(((bc * g.R + r) * g.S + s) * g.P + p) * g.Q + wq / g.sw];
      }
    }
    dx[i] = acc;
  }
}

template <typename T>
__global__ void add_bias_kernel(const T* __restrict__ bias, T* __restrict__ y, std::int64_t total, std::int64_t k,
                                std::int64_t plane) {
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) y[i] += bias[(i / plane) % k];
}

// One block per output channel (striding when there are more than 65535).
template <typename T>
__global__ void bias_grad_kernel(const T* __restrict__ dy, T* __restrict__ db, std::int64_t n, std::int64_t k,
                                 std::int64_t plane) {
  __shared__ T scratch[32];
  for (std::int64_t kk = blockIdx.x; kk < k; kk += gridDim.x) {
    T acc = 0;
    for (std::int64_t j = threadIdx.x; j < n * plane; j += blockDim.x) {
      const std::int64_t img = j / plane, e = j % plane;
      acc += dy[(img * k + kk) * plane + e];
    }
    acc = magmadnn::cuda::block_reduce(acc, magmadnn::cuda::SumOp{}, T(0), scratch);
    if (threadIdx.x == 0) db[kk] = acc;
  }
}

template <typename T>
__global__ void flip_filter_kernel(Geo g, const T* __restrict__ w, T* __restrict__ wt, std::int64_t total) {
  const std::int64_t kg = g.K / g.G, cg = g.C / g.G;
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    // i indexes wt {C, K/G, R, S}
    const std::int64_t s = i % g.S;
    const std::int64_t r = (i / g.S) % g.R;
    const std::int64_t kk = (i / (g.S * g.R)) % kg;
    const std::int64_t c = i / (g.S * g.R * kg);
    const std::int64_t grp = c / cg, cc = c % cg;
    wt[i] = w[(((grp * kg + kk) * cg + cc) * g.R + (g.R - 1 - r)) * g.S + (g.S - 1 - s)];
  }
}

constexpr int kBlock = 256;

}  // namespace

template <typename T>
void im2col(const ConvProblem& pr, const T* x, std::int64_t images, T* col, const Launch& on) {
  const std::int64_t total = images * pr.c * pr.r * pr.s * pr.p * pr.q;
  if (total == 0) return;
  im2col_kernel<T><<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(geo_of(pr), x, total, col);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void col2im(const ConvProblem& pr, const T* col, std::int64_t images, T* dx, const Launch& on) {
  const std::int64_t total = images * pr.c * pr.h * pr.w;
  if (total == 0) return;
  col2im_kernel<T><<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(geo_of(pr), col, total, dx);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void add_bias(const T* bias, T* y, std::int64_t n, std::int64_t k, std::int64_t plane, const Launch& on) {
  const std::int64_t total = n * k * plane;
  if (total == 0 || bias == nullptr) return;
  add_bias_kernel<T><<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(bias, y, total, k, plane);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void bias_grad(const T* dy, T* db, std::int64_t n, std::int64_t k, std::int64_t plane, const Launch& on) {
  if (k == 0 || db == nullptr) return;
  bias_grad_kernel<T><<<magmadnn::cuda::grid_rows(k), kBlock, 0, on.stream>>>(dy, db, n, k, plane);
  MAGMADNN_KERNEL_CHECK();
}

template <typename T>
void flip_filter(const ConvProblem& pr, const T* w, T* wt, const Launch& on) {
  const std::int64_t total = pr.k * (pr.c / pr.geom.groups) * pr.r * pr.s;
  if (total == 0) return;
  flip_filter_kernel<T><<<on.grid(total, kBlock), kBlock, 0, on.stream>>>(geo_of(pr), w, wt, total);
  MAGMADNN_KERNEL_CHECK();
}

template <>
void gemm_batched<float>(cublasHandle_t h, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                         float alpha, const float* A, std::int64_t lda, std::int64_t sa, const float* B,
                         std::int64_t ldb, std::int64_t sb, float beta, float* C, std::int64_t ldc, std::int64_t sc,
                         std::int64_t batch) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B first, m and n swapped.
  MAGMADNN_CUBLAS_CHECK(cublasSgemmStridedBatched_64(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                      n, m, k, &alpha, B, ldb, sb, A, lda, sa, &beta, C, ldc, sc,
                                                      batch));
}

template <>
void gemm_batched<double>(cublasHandle_t h, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                          double alpha, const double* A, std::int64_t lda, std::int64_t sa, const double* B,
                          std::int64_t ldb, std::int64_t sb, double beta, double* C, std::int64_t ldc,
                          std::int64_t sc, std::int64_t batch) {
  MAGMADNN_CUBLAS_CHECK(cublasDgemmStridedBatched_64(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                      n, m, k, &alpha, B, ldb, sb, A, lda, sa, &beta, C, ldc, sc,
                                                      batch));
}

std::int64_t images_per_block(const ConvProblem& pr, std::size_t per_image) {
  constexpr std::size_t kCap = std::size_t{256} << 20;
  if (per_image == 0) return std::max<std::int64_t>(pr.n, 1);
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(kCap / per_image), 1, std::max<std::int64_t>(pr.n, 1));
}

#define MAGMADNN_CONV_KERNELS(T)                                                                               \
  template void im2col<T>(const ConvProblem&, const T*, std::int64_t, T*, const Launch&);                    \
  template void col2im<T>(const ConvProblem&, const T*, std::int64_t, T*, const Launch&);                    \
  template void add_bias<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t, const Launch&);          \
  template void bias_grad<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t, const Launch&);         \
  template void flip_filter<T>(const ConvProblem&, const T*, T*, const Launch&);
MAGMADNN_CONV_KERNELS(float)
MAGMADNN_CONV_KERNELS(double)
#undef MAGMADNN_CONV_KERNELS

}  // namespace magmadnn::conv::cuda

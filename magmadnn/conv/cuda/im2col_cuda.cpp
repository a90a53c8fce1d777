#include "magmadnn/conv/cuda/im2col_cuda.h"

#include <algorithm>
#include <memory>

#include "magmadnn/conv/cuda/conv_kernels_cuda.h"

namespace magmadnn::conv::cuda {

bool is_pointwise(const ConvProblem& pr) {
  const ConvParams& g = pr.geom;
  return pr.r == 1 && pr.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}

namespace {

template <typename T>
std::size_t col_bytes_per_image(const ConvProblem& pr) {
  return sizeof(T) * static_cast<std::size_t>(pr.c * pr.r * pr.s * pr.p * pr.q);
}

template <typename T>
T* column_buffer(ConvCall& call, const ConvProblem& pr, void* ws) {
  if (ws) return static_cast<T*>(ws);
  const std::int64_t block = images_per_block(pr, col_bytes_per_image<T>(pr));
  return static_cast<T*>(call.scratch(static_cast<std::size_t>(block) * col_bytes_per_image<T>(pr)));
}

}  // namespace

template <typename T>
std::size_t Im2colCuda<T>::workspace_bytes(const ConvProblem& pr, Pass) const {
  if (is_pointwise(pr)) return 0;
  const std::size_t per = col_bytes_per_image<T>(pr);
  return static_cast<std::size_t>(images_per_block(pr, per)) * per;
}

template <typename T>
void Im2colCuda<T>::forward_in(ConvCall& call, const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y,
                               void* ws) {
  const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
  const std::int64_t pq = pr.p * pr.q, crs = cg * pr.r * pr.s;
  const bool direct = is_pointwise(pr);
  T* col = direct ? nullptr : column_buffer<T>(call, pr, ws);
  const std::int64_t block = direct ? pr.n : images_per_block(pr, col_bytes_per_image<T>(pr));
  for (std::int64_t n0 = 0; n0 < pr.n; n0 += block) {
    const std::int64_t nb = std::min(block, pr.n - n0);
    const T* cols = x + n0 * pr.c * pr.h * pr.w;
    if (!direct) {
      im2col(pr, cols, nb, col, call.launch());
      cols = col;
    }
    for (std::int64_t g = 0; g < G; ++g) {
      gemm_batched<T>(call.blas(), false, false, kg, pq, crs, T(1), w + g * kg * crs, crs, 0, cols + g * crs * pq, pq,
                      pr.c * pr.r * pr.s * pq, T(0), y + n0 * pr.k * pq + g * kg * pq, pq, pr.k * pq, nb);
    }
  }
  add_bias(bias, y, pr.n, pr.k, pq, call.launch());
}

template <typename T>
void Im2colCuda<T>::backward_data_in(ConvCall& call, const ConvProblem& pr, const T* dy, const T* w, T* dx, void* ws) {
  const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
  const std::int64_t pq = pr.p * pr.q, crs = cg * pr.r * pr.s;
  const bool direct = is_pointwise(pr);
  T* col = direct ? nullptr : column_buffer<T>(call, pr, ws);
  const std::int64_t block = direct ? pr.n : images_per_block(pr, col_bytes_per_image<T>(pr));
  for (std::int64_t n0 = 0; n0 < pr.n; n0 += block) {
    const std::int64_t nb = std::min(block, pr.n - n0);
    T* dcol = direct ? dx + n0 * pr.c * pr.h * pr.w : col;
    for (std::int64_t g = 0; g < G; ++g) {
      gemm_batched<T>(call.blas(), true, false, crs, pq, kg, T(1), w + g * kg * crs, crs, 0,
                      dy + n0 * pr.k * pq + g * kg * pq, pq, pr.k * pq, T(0), dcol + g * crs * pq, pq,
                      pr.c * pr.r * pr.s * pq, nb);
    }
    if (!direct) col2im(pr, col, nb, dx + n0 * pr.c * pr.h * pr.w, call.launch());
  }
}

template <typename T>
void Im2colCuda<T>::backward_filter_in(ConvCall& call, const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db,
                                       void* ws) {
  const std::int64_t G = pr.geom.groups, cg = pr.c / G, kg = pr.k / G;
  const std::int64_t pq = pr.p * pr.q, crs = cg * pr.r * pr.s;
  const bool direct = is_pointwise(pr);
  T* col = direct ? nullptr : column_buffer<T>(call, pr, ws);
  const std::int64_t block = direct ? pr.n : images_per_block(pr, col_bytes_per_image<T>(pr));
  for (std::int64_t n0 = 0; n0 < pr.n; n0 += block) {
    const std::int64_t nb = std::min(block, pr.n - n0);
    const T* cols = x + n0 * pr.c * pr.h * pr.w;
    if (!direct) {
      im2col(pr, cols, nb, col, call.launch());
      cols = col;
    }
    // One GEMM per image, batched over the groups; the first overwrites dw.
    for (std::int64_t b = 0; b < nb; ++b) {
      const T beta = (n0 + b == 0) ? T(0) : T(1);
      gemm_batched<T>(call.blas(), false, true, kg, crs, pq, T(1), dy + (n0 + b) * pr.k * pq, pq, kg * pq,
                      cols + b * pr.c * pr.r * pr.s * pq, pq, crs * pq, beta, dw, crs, kg * crs, G);
    }
  }
  bias_grad(dy, db, pr.n, pr.k, pq, call.launch());
}

template <typename T>
void Im2colCuda<T>::forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* workspace) {
  ConvCall call;
  forward_in(call, pr, x, w, bias, y, workspace);
  call.finish();
}

template <typename T>
void Im2colCuda<T>::backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* workspace) {
  ConvCall call;
  backward_data_in(call, pr, dy, w, dx, workspace);
  call.finish();
}

template <typename T>
void Im2colCuda<T>::backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* workspace) {
  ConvCall call;
  backward_filter_in(call, pr, x, dy, dw, db, workspace);
  call.finish();
}

template class Im2colCuda<float>;
template class Im2colCuda<double>;

namespace {
// Registration constructs the object only; nothing touches the GPU until a pass runs.
const bool registered = [] {
  detail::register_algorithm<float>(std::make_unique<Im2colCuda<float>>());
  detail::register_algorithm<double>(std::make_unique<Im2colCuda<double>>());
  return true;
}();
}  // namespace

}  // namespace magmadnn::conv::cuda

// Row-wise softmax / log-softmax and their gradients.
//
// The row maximum is subtracted before exponentiating, so exp() never
// overflows (inputs of 1000 are fine) and at least one term of the sum is 1,
// so log(sum) is finite. Row sums of floats accumulate in double.
#include <cmath>
#include <type_traits>
#include <vector>

#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"

namespace magmadnn::cpu {
namespace {

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;

// Rows are independent; thread over them once the whole matrix is large
// enough (exp makes each element a few tens of cycles).
inline bool parallel_rows(std::int64_t rows, std::int64_t cols) {
  return rows > 1 && rows * cols > kParallelThreshold / 8;
}

}  // namespace

template <typename T>
void CpuKernels<T>::softmax(const T* x, T* y, std::int64_t rows, std::int64_t cols, bool log) {
  if (rows == 0 || cols == 0) return;
  parallel_for(rows, parallel_rows(rows, cols), [=](std::int64_t r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    T mx = xr[0];
    for (std::int64_t j = 1; j < cols; ++j) mx = xr[j] > mx ? xr[j] : mx;
    Acc<T> sum = 0;
    if (log) {
      for (std::int64_t j = 0; j < cols; ++j) sum += std::exp(xr[j] - mx);
      const T shift = mx + static_cast<T>(std::log(sum));
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) yr[j] = xr[j] - shift;
    } else {
      // y is written as it is read, so y may alias x.
      for (std::int64_t j = 0; j < cols; ++j) {
        const T e = std::exp(xr[j] - mx);
        yr[j] = e;
        sum += e;
      }
      const T inv = static_cast<T>(Acc<T>(1) / sum);
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) yr[j] *= inv;
    }
  });
}

// softmax:     dx = y * (dy - sum(dy * y))
// log-softmax: dx = dy - exp(y) * sum(dy)
template <typename T>
void CpuKernels<T>::softmax_backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t cols,
                                     bool log) {
  if (rows == 0 || cols == 0) return;
  parallel_for(rows, parallel_rows(rows, cols), [=](std::int64_t r) {
    const T* yr = y + r * cols;
    const T* gr = dy + r * cols;
    T* dr = dx + r * cols;
    Acc<T> s = 0;
    if (log) {
#pragma omp simd reduction(+ : s)
      for (std::int64_t j = 0; j < cols; ++j) s += gr[j];
      const T st = static_cast<T>(s);
      for (std::int64_t j = 0; j < cols; ++j) dr[j] = gr[j] - std::exp(yr[j]) * st;
    } else {
#pragma omp simd reduction(+ : s)
      for (std::int64_t j = 0; j < cols; ++j) s += Acc<T>(gr[j]) * Acc<T>(yr[j]);
      const T st = static_cast<T>(s);
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) dr[j] = yr[j] * (gr[j] - st);
    }
  });
}

// Softmax cross-entropy: the log-softmax of a row and its dot product with
// the row's targets in one visit, instead of log-softmax, an elementwise
// product into a temporary and a whole-matrix sum (three passes, one
// allocation). Each row's term goes into its own slot and the slots are
// added in row order afterwards, so the total does not depend on the
// number of threads.
template <typename T>
bool CpuKernels<T>::softmax_xent(const T* z, const T* y, T* logp, std::int64_t rows, std::int64_t cols,
                                 double* total) {
  *total = 0;
  if (rows == 0 || cols == 0) return true;
  std::vector<double> row_dot(static_cast<std::size_t>(rows));
  double* dots = row_dot.data();
  parallel_for(rows, parallel_rows(rows, cols), [=](std::int64_t r) {
    const T* zr = z + r * cols;
    const T* yr = y + r * cols;
    T* lr = logp + r * cols;
    T mx = zr[0];
    for (std::int64_t j = 1; j < cols; ++j) mx = zr[j] > mx ? zr[j] : mx;
    Acc<T> sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) sum += std::exp(zr[j] - mx);
    const T shift = mx + static_cast<T>(std::log(sum));
    double dot = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const T l = zr[j] - shift;
      lr[j] = l;
      dot += double(yr[j]) * double(l);
    }
    dots[r] = dot;
  });
  double t = 0;
  for (std::int64_t r = 0; r < rows; ++r) t += dots[r];
  *total = t;
  return true;
}

// d/dz of -sum_j y_j log softmax(z)_j is softmax(z) * sum_j y_j - y.
template <typename T>
bool CpuKernels<T>::softmax_xent_backward(const T* logp, const T* y, T* dz, std::int64_t rows, std::int64_t cols,
                                          T s) {
  if (rows == 0 || cols == 0) return true;
  parallel_for(rows, parallel_rows(rows, cols), [=](std::int64_t r) {
    const T* lr = logp + r * cols;
    const T* yr = y + r * cols;
    T* dr = dz + r * cols;
    Acc<T> ys = 0;
#pragma omp simd reduction(+ : ys)
    for (std::int64_t j = 0; j < cols; ++j) ys += yr[j];
    const T ysum = static_cast<T>(ys);
    for (std::int64_t j = 0; j < cols; ++j) dr[j] = s * (std::exp(lr[j]) * ysum - yr[j]);
  });
  return true;
}

template void CpuKernels<float>::softmax(const float*, float*, std::int64_t, std::int64_t, bool);
template void CpuKernels<double>::softmax(const double*, double*, std::int64_t, std::int64_t, bool);
template void CpuKernels<float>::softmax_backward(const float*, const float*, float*, std::int64_t, std::int64_t,
                                                  bool);
template void CpuKernels<double>::softmax_backward(const double*, const double*, double*, std::int64_t,
                                                   std::int64_t, bool);
template bool CpuKernels<float>::softmax_xent(const float*, const float*, float*, std::int64_t, std::int64_t,
                                              double*);
template bool CpuKernels<double>::softmax_xent(const double*, const double*, double*, std::int64_t, std::int64_t,
                                               double*);
template bool CpuKernels<float>::softmax_xent_backward(const float*, const float*, float*, std::int64_t,
                                                       std::int64_t, float);
template bool CpuKernels<double>::softmax_xent_backward(const double*, const double*, double*, std::int64_t,
                                                        std::int64_t, double);

}  // namespace magmadnn::cpu

/// @file im2col_cuda.h
/// Im2colCuda: convolution on the GPU as patch unfolding plus cuBLAS GEMMs.
/// Supports every problem (stride, padding, dilation, groups).
///
///   forward          per block of images: col = im2col(x); per group one
///                    strided-batched GEMM over the images, y_g = w_g * col_g
///   backward_data    col_g = w_g^T * dy_g (batched over the images), then
///                    dx = col2im(col), a gather with no atomics
///   backward_filter  dw_g = sum over images of dy_g * col_g^T (GEMMs
///                    accumulating with beta = 1), db by a per-channel reduction
///
/// A 1x1 filter with stride 1 and no padding needs no unfolding: x itself is
/// the column matrix and no workspace is used. Otherwise the workspace is the
/// column buffer of one block of images (blocks are sized to stay near
/// 256 MiB; at least one image).
///
/// Declared in a header because WinogradCuda computes its backward filter
/// with this algorithm inside its own call.
#pragma once

#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/cuda/conv_context_cuda.h"

namespace magmadnn::conv::cuda {

template <typename T>
class Im2colCuda final : public ConvAlgorithm<T> {
 public:
  Algo id() const noexcept override { return Algo::Im2colGemm; }
  DeviceKind device() const noexcept override { return DeviceKind::CUDA; }
  bool supports(const ConvProblem&, Pass) const override { return true; }
  std::size_t workspace_bytes(const ConvProblem& pr, Pass pass) const override;

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* workspace) override;
  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* workspace) override;
  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* workspace) override;

  /// The passes inside a running ConvCall (for algorithms that delegate);
  /// `workspace` may be null, then scratch comes from the call.
  void forward_in(ConvCall& call, const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws);
  void backward_data_in(ConvCall& call, const ConvProblem& pr, const T* dy, const T* w, T* dx, void* ws);
  void backward_filter_in(ConvCall& call, const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* ws);
};

/// True when x is its own column matrix (1x1 filter, stride 1, no padding).
bool is_pointwise(const ConvProblem& pr);

}  // namespace magmadnn::conv::cuda

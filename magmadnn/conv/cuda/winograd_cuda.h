/// @file winograd_cuda.h
/// WinogradCuda: Winograd F(2x2, 3x3) convolution on the GPU.
///
/// Supports: 3x3 filters, stride 1, dilation 1, any padding and groups.
///   forward          filter, input-tile and output-tile transforms in CUDA
///                    kernels; the channel sums as 16 batched cuBLAS GEMMs
///   backward_data    the forward Winograd of dy with the flipped,
///                    channel-swapped filter and padding 2 - pad (so it needs
///                    pad_h, pad_w <= 2; supports() says false otherwise)
///   backward_filter  not a Winograd computation: delegated to Im2colCuda
///                    inside the same call (exact to GEMM rounding; timing it
///                    times im2col), so that forcing this algorithm for a
///                    layer still trains.
/// Workspace: the 16 transformed filters plus the transformed input and
/// product tiles of one block of images (blocks near 256 MiB).
#pragma once

#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/cuda/im2col_cuda.h"

namespace magmadnn::conv::cuda {

template <typename T>
class WinogradCuda final : public ConvAlgorithm<T> {
 public:
  Algo id() const noexcept override { return Algo::WinogradF2x2; }
  DeviceKind device() const noexcept override { return DeviceKind::CUDA; }
  bool supports(const ConvProblem& pr, Pass pass) const override;
  std::size_t workspace_bytes(const ConvProblem& pr, Pass pass) const override;

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* workspace) override;
  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* workspace) override;
  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* workspace) override;

 private:
  void forward_in(ConvCall& call, const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* ws);
  /// NotSupportedError naming the problem when supports() is false.
  void check(const ConvProblem& pr, Pass pass) const;

  Im2colCuda<T> im2col_;
};

}  // namespace magmadnn::conv::cuda

/// @file algorithm.h
/// One way of computing a convolution (paper §2.2; dMath's timed choice).
///
/// Every algorithm computes the three passes of the same problem:
///   forward:          y  = conv(x, w) (+ bias)
///   backward_data:    dx = d(loss)/dx given dy
///   backward_filter:  dw = d(loss)/dw given dy (and db = sum of dy over N, P, Q)
/// and says which problems it supports. An algorithm that does not support a
/// problem is never called for it: the chooser skips it, and forcing it
/// raises NotSupportedError naming the algorithm and the problem.
///
/// Pointers are dense NCHW arrays (or, in a blocked problem, which an
/// algorithm is given only where reads_blocked() says it takes it, the
/// blocked layouts of conv/layout.h) in the memory of the algorithm's
/// device (host for DeviceKind::CPU, device memory for CUDA); the workspace
/// is at least workspace_bytes() bytes of that memory, or null when that
/// is 0.
/// Outputs are overwritten, never accumulated into; they do not alias inputs.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/backend/backend.h"
#include "magmadnn/conv/conv_params.h"

namespace magmadnn::conv {

/// Algorithm identities. Auto asks the chooser.
enum class Algo : std::uint8_t {
  Auto,
  Direct,        ///< the reference: loops straight from the definition
  Im2colGemm,    ///< unfold patches, one GEMM per group and image block
  WinogradF2x2,  ///< Winograd F(2x2, 3x3): 3x3, stride 1, dilation 1
  WinogradF4x4,  ///< Winograd F(4x4, 3x3): 3x3, stride 1, dilation 1
  FFT,           ///< FFTW (CPU) / cuFFT (GPU): stride 1, dilation 1, large kernels pay off
  OneDNN,        ///< oneDNN's convolution primitives (CPU, float only): oneDNN picks layout and kernel
  CuDNN,         ///< cuDNN v9 (GPU only): cuDNN picks its own kernel
  Sliding,       ///< vectorised along output rows (CPU): stride 1, dilation 1, at most 16 input channels per group
};
/// "direct", "im2col", "winograd_f2x2", "winograd_f4x4", "fft", "onednn", "cudnn", "sliding", "auto".
const char* algo_name(Algo a) noexcept;
/// Inverse of algo_name; ValueError listing the valid names otherwise.
Algo parse_algo(const std::string& name);

enum class Pass : std::uint8_t { Forward, BackwardData, BackwardFilter };
/// "forward", "backward_data", "backward_filter".
const char* pass_name(Pass p) noexcept;

template <typename T>
class ConvAlgorithm {
 public:
  virtual ~ConvAlgorithm() = default;
  virtual Algo id() const noexcept = 0;
  virtual DeviceKind device() const noexcept = 0;
  /// Whether this algorithm computes `pass` of `prob`. Cheap; no allocation.
  virtual bool supports(const ConvProblem& prob, Pass pass) const = 0;
  /// Whether it takes the layouts of a blocked problem (prob.blocked()) for
  /// `pass`, where it supports() the problem. The default: NCHW only.
  virtual bool reads_blocked(const ConvProblem& prob, Pass pass) const {
    (void)prob, (void)pass;
    return false;
  }
  /// Scratch memory needed for `pass` of `prob`, in bytes.
  virtual std::size_t workspace_bytes(const ConvProblem& prob, Pass pass) const = 0;

  /// y {N,K,P,Q} = conv(x, w) + bias (bias {K} or null).
  virtual void forward(const ConvProblem& prob, const T* x, const T* w, const T* bias, T* y,
                       void* workspace) = 0;
  /// y = max(conv(x, w) + bias, 0) in one pass where the algorithm can fuse
  /// the ReLU into the convolution: returns true when it did. False (the
  /// default) means nothing was computed and the caller runs forward() and
  /// a ReLU of its own. Same workspace as forward().
  virtual bool forward_relu(const ConvProblem& prob, const T* x, const T* w, const T* bias, T* y, void* workspace) {
    (void)prob, (void)x, (void)w, (void)bias, (void)y, (void)workspace;
    return false;
  }
  /// dx {N,C,H,W} from dy {N,K,P,Q} and w.
  virtual void backward_data(const ConvProblem& prob, const T* dy, const T* w, T* dx, void* workspace) = 0;
  /// dw {K,C/G,R,S} from x and dy; db {K} = sum of dy over N, P, Q when db is not null.
  virtual void backward_filter(const ConvProblem& prob, const T* x, const T* dy, T* dw, T* db,
                               void* workspace) = 0;
};

/// The algorithms available for T on a device kind, in a fixed order
/// (Direct first). GPU algorithms are listed only when a GPU backend exists.
/// T is float or double, or half or bfloat16, for which only cuDNN exists
/// (GPU only).
template <typename T>
std::vector<ConvAlgorithm<T>*> algorithms(DeviceKind device);
/// One algorithm, or nullptr if it does not exist for that device kind
/// (e.g. CuDNN on the CPU, FFT in a build without FFTW).
template <typename T>
ConvAlgorithm<T>* find_algorithm(Algo id, DeviceKind device);

namespace detail {
/// Called once by each algorithm's translation unit (through a static
/// registrar) so the registry knows it without a central list of includes.
template <typename T>
void register_algorithm(std::unique_ptr<ConvAlgorithm<T>> algo);
}  // namespace detail

}  // namespace magmadnn::conv

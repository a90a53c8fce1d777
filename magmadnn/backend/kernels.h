/// @file kernels.h
/// The arithmetic every backend implements, for one element type T.
///
/// Contract for every method:
///  - pointers are in the backend's own memory space (host memory for the
///    CPU backend, device memory of the current device for CUDA) and point to
///    dense row-major arrays; outputs may alias inputs only where stated;
///  - sizes are element counts (64-bit); a size of 0 is a no-op;
///  - work is ordered on the backend's stream: results are visible to later
///    calls on the same backend, and to the host after Backend::synchronize;
///  - arguments are validated by the caller (tensor/math), so kernels only
///    assert internal invariants.
/// Kernels<T> exists for T = float and double on every backend.
#pragma once

#include <cstddef>
#include <cstdint>

#include "magmadnn/core/half.h"
#include "magmadnn/core/types.h"

namespace magmadnn {

/// Elementwise functions y = f(x; p). `p` is the scalar parameter where one is
/// used (Pow: exponent, LeakyRelu: negative slope, Scale: factor, AddScalar:
/// addend); other ops ignore it. What each op is (name, domain, what its
/// derivative reads, whether it is an activation, where it fuses) is its row
/// in unary_op_table.h; docs/adding_an_op.md lists the steps for a new one.
enum class UnaryOp : std::uint8_t {
  Identity, Neg, Exp, Log, Sigmoid, Relu, Tanh, Abs, Sqrt, Square, Reciprocal,
  Pow, Scale, AddScalar, LeakyRelu, Gelu, Softplus
};
/// The number of UnaryOp values. A new op goes last in the enum and moves
/// this to it; the op table then has one row too few and fails to compile.
inline constexpr std::size_t kUnaryOpCount = static_cast<std::size_t>(UnaryOp::Softplus) + 1;

/// Elementwise functions out = a (op) b, with NumPy broadcasting.
enum class BinaryOp : std::uint8_t { Add, Sub, Mul, Div, Pow, Max, Min };

/// Reductions along one axis.
enum class ReduceOp : std::uint8_t { Sum, Mean, Max, Min };

/// Lower-case names for messages and test names ("add", "product", "sum",
/// "sigmoid", ...); a UnaryOp's is its op-table name.
const char* op_name(BinaryOp op) noexcept;
const char* op_name(UnaryOp op) noexcept;
const char* op_name(ReduceOp op) noexcept;

/// Broadcast description for binary(): the output is `ndim` axes of `shape`;
/// `a_strides` / `b_strides` give each input's stride per output axis, 0 on a
/// broadcast axis. Built by tensor/math from two Shapes.
struct BroadcastDesc {
  static constexpr int kMaxDims = 8;
  int ndim = 0;
  std::int64_t shape[kMaxDims] = {};
  std::int64_t a_strides[kMaxDims] = {};
  std::int64_t b_strides[kMaxDims] = {};
  std::int64_t numel() const noexcept {
    std::int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
};

/// Throws NotSupportedError for a backend (or element type) without mixed
/// precision GEMMs whose operands are `operands` (bf16 or f16).
[[noreturn]] void no_mixed_gemm(dtype operands);

template <typename T>
class Kernels {
 public:
  virtual ~Kernels() = default;

  /// x[i] = value for i < n.
  virtual void fill(T* x, std::int64_t n, T value) = 0;
  /// y[i] = x[i]. May not alias.
  virtual void copy(const T* x, T* y, std::int64_t n) = 0;

  /// y = f(x; p) elementwise. y may alias x.
  virtual void unary(UnaryOp op, const T* x, T* y, std::int64_t n, T p) = 0;
  /// dx = dy * f'(x; p) elementwise, given x and y = f(x; p). An op reads y
  /// exactly when its op-table row says GradFrom::Y (grad_reads_y), else x;
  /// callers may pass null for the one it does not read. dx may alias dy.
  virtual void unary_backward(UnaryOp op, const T* x, const T* y, const T* dy, T* dx, std::int64_t n, T p) = 0;

  /// out = a (op) b with broadcasting per `d`. out has d.numel() elements and
  /// may alias an input of the same shape as out.
  virtual void binary(BinaryOp op, const T* a, const T* b, T* out, const BroadcastDesc& d) = 0;

  /// y = alpha * x + y (BLAS axpy).
  virtual void axpy(std::int64_t n, T alpha, const T* x, T* y) = 0;
  /// y = alpha * x + beta * y. The default is a scale then an axpy (two
  /// passes over y); a backend overrides it with one pass.
  virtual void axpby(std::int64_t n, T alpha, const T* x, T beta, T* y) {
    if (beta != T(1)) unary(UnaryOp::Scale, y, y, n, beta);
    axpy(n, alpha, x, y);
  }
  /// axpby that also writes y's new values rounded to bfloat16 (nearest
  /// even, as Backend::convert rounds) into y16, in the same pass: a
  /// parameter update that keeps the parameter's bf16 copy current (mixed
  /// precision, op::LowPrecisionCache). Returns false, having written nothing, on a
  /// backend (or for a T) without the fused kernel; math::axpby then makes
  /// two passes.
  virtual bool axpby_bf16(std::int64_t /*n*/, T /*alpha*/, const T* /*x*/, T /*beta*/, T* /*y*/,
                          bfloat16* /*y16*/) {
    return false;
  }

  /// Row-major C = alpha * op(A) * op(B) + beta * C with op(A) m x k,
  /// op(B) k x n, C m x n; lda/ldb/ldc are row strides of the stored matrices.
  virtual void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                    const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
                    std::int64_t ldc) = 0;

  /// Fused C = act(op(A) * op(B) + bias) in one pass over C, where bias has n
  /// elements (one per output column) or is null, and act is Identity or an
  /// activation (p is its parameter). The op table's cpu_epilogue /
  /// cuda_epilogue columns say where the GEMM library applies act itself;
  /// elsewhere one pass over C follows the product.
  virtual void gemm_bias_act(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                             const T* A, std::int64_t lda, const T* B, std::int64_t ldb, const T* bias,
                             UnaryOp act, T p, T* C, std::int64_t ldc) = 0;

  /// Mixed precision (autocast's GEMMs): gemm and gemm_bias_act with A and
  /// B of element type `ab` (dtype::bf16 or dtype::f16, the run's low
  /// precision), C and bias in T; products accumulate in float. The default
  /// throws NotSupportedError: a backend overrides these for the operand
  /// types it computes (the CPU: bf16 through oneDNN; CUDA: bf16 and f16
  /// through cublasGemmEx), for T = float.
  virtual void gemm_mixed(dtype ab, bool /*trans_a*/, bool /*trans_b*/, std::int64_t /*m*/, std::int64_t /*n*/,
                          std::int64_t /*k*/, T /*alpha*/, const void* /*A*/, std::int64_t /*lda*/,
                          const void* /*B*/, std::int64_t /*ldb*/, T /*beta*/, T* /*C*/, std::int64_t /*ldc*/) {
    no_mixed_gemm(ab);
  }
  virtual void gemm_bias_act_mixed(dtype ab, bool /*trans_a*/, bool /*trans_b*/, std::int64_t /*m*/,
                                   std::int64_t /*n*/, std::int64_t /*k*/, const void* /*A*/, std::int64_t /*lda*/,
                                   const void* /*B*/, std::int64_t /*ldb*/, const T* /*bias*/, UnaryOp /*act*/,
                                   T /*p*/, T* /*C*/, std::int64_t /*ldc*/) {
    no_mixed_gemm(ab);
  }
  /// A weight-gradient product applied as it is made: W = beta * W + alpha
  /// * op(A) op(B) for bf16 A and B (float accumulation), W m x n, row-major
  /// and contiguous, and, when W16 is not null, W's new values rounded to
  /// bfloat16 (nearest even, as a cast gives) into W16. The product is never
  /// stored whole: each row tile of it is consumed by its update while it is
  /// still in cache. The update of each element is axpby's own expression.
  /// Returns false, having written nothing, on a backend (or for a T)
  /// without the kernel; has_gemm_update_bf16() says so before any pointer
  /// is taken (taking W's moves its write stamp, and on a GPU may move it).
  virtual bool has_gemm_update_bf16() const noexcept { return false; }
  virtual bool gemm_update_bf16(bool /*trans_a*/, bool /*trans_b*/, std::int64_t /*m*/, std::int64_t /*n*/,
                                std::int64_t /*k*/, T /*alpha*/, const bfloat16* /*A*/, std::int64_t /*lda*/,
                                const bfloat16* /*B*/, std::int64_t /*ldb*/, T /*beta*/, T* /*W*/,
                                bfloat16* /*W16*/) {
    return false;
  }

  /// Views x as [outer, axis, inner] and reduces the middle axis into
  /// y[outer, inner].
  virtual void reduce(ReduceOp op, const T* x, T* y, std::int64_t outer, std::int64_t axis,
                      std::int64_t inner) = 0;
  /// The activation and bias gradients of a fused linear layer in one pass
  /// over a rows x cols matrix: dx = dy * f'(y; p) for an op whose
  /// derivative follows from its output y (grad_from_output), and
  /// db[j] = sum over i of dx[i][j]. dx may alias dy. The default makes the
  /// two passes (unary_backward, then a column sum by reduce); a backend
  /// overrides it to read y and dy once.
  virtual void unary_backward_colsum(UnaryOp op, const T* y, const T* dy, T* dx, T* db, std::int64_t rows,
                                     std::int64_t cols, T p) {
    unary_backward(op, y, y, dy, dx, rows * cols, p);
    reduce(ReduceOp::Sum, dx, db, 1, rows, cols);
  }
  /// unary_backward_colsum for a linear layer whose weight GEMMs read their
  /// operands in bfloat16 (mixed precision): writes dx rounded to bfloat16
  /// (nearest even, the bits a cast of the float dx gives) instead of the
  /// float dx, and the float db from the unrounded values, or no db when db
  /// is null. db's bits equal unary_backward_colsum's. Returns false, having
  /// written nothing, on a backend (or for a T) without the fused kernel;
  /// math::unary_backward_low then makes the float pass and a conversion.
  virtual bool unary_backward_colsum_bf16(UnaryOp /*op*/, const T* /*y*/, const T* /*dy*/, bfloat16* /*dx*/,
                                          T* /*db*/, std::int64_t /*rows*/, std::int64_t /*cols*/, T /*p*/) {
    return false;
  }
  /// Index of the maximum along the middle axis of [outer, axis, inner]
  /// (first one on ties) into idx[outer, inner].
  virtual void argmax(const T* x, std::int64_t* idx, std::int64_t outer, std::int64_t axis,
                      std::int64_t inner) = 0;

  /// Row-wise softmax (or log-softmax) of a rows x cols matrix, numerically
  /// stable (max subtracted). y may alias x.
  virtual void softmax(const T* x, T* y, std::int64_t rows, std::int64_t cols, bool log) = 0;
  /// Softmax cross-entropy's forward in one pass per row, for a rows x cols
  /// matrix of logits z and targets y: writes logp = log_softmax(z) and
  /// sets *total = sum over i, j of y[i][j] * logp[i][j] (a host value,
  /// accumulated in double). Returns false, having written nothing, on a
  /// backend without the fused kernel; the caller then composes it from
  /// softmax, a product and a sum.
  virtual bool softmax_xent(const T* /*z*/, const T* /*y*/, T* /*logp*/, std::int64_t /*rows*/,
                            std::int64_t /*cols*/, double* /*total*/) {
    return false;
  }
  /// Its gradient with respect to z, scaled: dz = s * (exp(logp) * sum_j
  /// y[i][j] - y) row by row. false, as above, without the fused kernel.
  virtual bool softmax_xent_backward(const T* /*logp*/, const T* /*y*/, T* /*dz*/, std::int64_t /*rows*/,
                                     std::int64_t /*cols*/, T /*s*/) {
    return false;
  }
  /// Batch normalisation over x viewed as {n, c, r} (r: the positions after
  /// the channel axis), with an optional residual input and ReLU after it:
  /// y = f((x - mean) * gamma * invstd + beta + skip), f = ReLU or identity.
  /// Training (running_mean null): mean and the biased var are the batch's,
  /// per channel, summed in double; inference: mean and var are the running
  /// ones (copied out). Writes mean, var and invstd = 1 / sqrt(var + eps)
  /// ({c} each). Returns false, having written nothing, on a backend without
  /// the fused kernel; math::batchnorm_forward then composes it.
  struct BatchNormForward {
    const T* x;
    const T* skip;  ///< null: no residual input
    T* y;
    std::int64_t n, c, r;
    const T* gamma;
    const T* beta;
    T eps;
    bool relu;
    const T* running_mean;  ///< with running_var: inference; null: batch statistics
    const T* running_var;
    T* mean;
    T* var;
    T* invstd;
  };
  virtual bool batchnorm_forward(const BatchNormForward& /*a*/) { return false; }
  /// The gradients of batchnorm_forward given g = dL/dy: dgamma, dbeta ({c})
  /// and, where not null, dx and dskip (the gradient after the ReLU). y is
  /// the forward output (read for the ReLU's mask; null without ReLU).
  /// `training`: mean and invstd are the batch's, so dx has their terms.
  struct BatchNormBackward {
    const T* x;
    const T* y;
    const T* g;
    std::int64_t n, c, r;
    const T* gamma;
    const T* mean;
    const T* invstd;
    bool training;
    T* dx;     ///< may be null
    T* dskip;  ///< may be null
    T* dgamma;
    T* dbeta;
  };
  virtual bool batchnorm_backward(const BatchNormBackward& /*a*/) { return false; }
  /// Gradient of softmax / log-softmax given its output y and dy.
  virtual void softmax_backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t cols,
                                bool log) = 0;

  /// y[perm-permuted] = x: y's axis i is x's axis perm[i]. `shape` is x's.
  virtual void permute(const T* x, T* y, int ndim, const std::int64_t* shape, const int* perm) = 0;

  /// SHM-Learn-Dist §4.2's ShiftRight realignment, out of place: y
  /// {rows, cols + 1} is x {rows, cols} with `lead` before each row (row i
  /// of y is [lead, x[i, 0], ..., x[i, cols - 1]]). x and y may not alias.
  /// The default is one fill and one copy per row (any backend, slow where
  /// a call costs a launch); the CPU overrides it with one threaded pass.
  virtual void shift_right(const T* x, T* y, std::int64_t rows, std::int64_t cols, T lead) {
    for (std::int64_t i = 0; i < rows; ++i) {
      fill(y + i * (cols + 1), 1, lead);
      copy(x + i * cols, y + i * (cols + 1) + 1, cols);
    }
  }
  /// §4.3's ShiftLeft: y {rows, cols} is x {rows, cols + 1} without its
  /// first column. x and y may not alias. Default and override as above.
  virtual void shift_left(const T* x, T* y, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t i = 0; i < rows; ++i) copy(x + i * (cols + 1) + 1, y + i * cols, cols);
  }

  /// x[i] = a + (b - a) * U[0,1) from Philox(seed, stream) at element i.
  virtual void fill_uniform(T* x, std::int64_t n, T a, T b, std::uint64_t seed, std::uint64_t stream) = 0;
  /// x[i] = mean + std * N(0,1) from Philox(seed, stream) at element i (Box-Muller).
  virtual void fill_normal(T* x, std::int64_t n, T mean, T std, std::uint64_t seed, std::uint64_t stream) = 0;
};

}  // namespace magmadnn

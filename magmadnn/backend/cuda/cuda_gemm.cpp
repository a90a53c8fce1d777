// Matrix products on the GPU.
//
// Row-major to column-major: cuBLAS is column-major, and a row-major m x n
// matrix with row stride ld is, read column-major, its n x m transpose with
// the same ld. So row-major C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T: B goes first, A second, with m and n swapped.
//
// gemm: cublas{S,D}gemm (64-bit-size API), or for float under precision tf32
// (core/thread_precision.h) cublasGemmEx with TF32 tensor-core compute.
// gemm_mixed / gemm_bias_act_mixed (autocast's bf16 and fp16): cublasGemmEx
// with bf16 or IEEE half operands, float accumulation and float output.
// gemm_bias_act: one cuBLASLt matmul (TF32 compute likewise)
// whose epilogue adds the bias and applies the activation where the op table
// (unary_op_table.h, cuda_epilogue) says cuBLASLt has it, else the plain
// product followed by one bias+activation kernel.
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "magmadnn/backend/cuda/cuda_check.h"
#include "magmadnn/backend/cuda/cuda_kernels.h"
#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/core/thread_precision.h"

namespace magmadnn::cuda {
namespace {

// A matrix with one column (column-major) never steps by its leading
// dimension, and callers may then pass any stride; cuBLAS still insists on
// ld >= rows, so raise it where it is irrelevant.
// Likewise ld < 1 for an empty or single-row matrix (the CPU backend clamps it too).
std::int64_t fix_ld(std::int64_t ld, std::int64_t rows, std::int64_t cols) {
  const std::int64_t need = rows > 1 ? rows : 1;
  if (ld >= need) return ld;
  return (cols <= 1 || rows <= 1) ? need : ld;
}

cublasOperation_t op_of(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The cuBLASLt epilogue of an op whose table row has cuda_epilogue.
cublasLtEpilogue_t lt_epilogue(UnaryOp act, bool bias) {
  switch (act) {
    case UnaryOp::Identity: return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case UnaryOp::Relu: return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    default:
      MAGMADNN_THROW(NotSupportedError, "gemm_bias_act: the op table gives " << op_name(act)
                                            << " a cuBLASLt epilogue, but cuda_gemm.cpp maps none for it");
  }
}

// -- cuBLASLt plans ---------------------------------------------------------------

struct LtDescFree {
  void operator()(cublasLtMatmulDescOpaque_t* d) const noexcept { cublasLtMatmulDescDestroy(d); }
};
struct LtLayoutFree {
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const noexcept { cublasLtMatrixLayoutDestroy(l); }
};
struct LtPrefFree {
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const noexcept { cublasLtMatmulPreferenceDestroy(p); }
};
using UniqueLtDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDescFree>;
using UniqueLtLayout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtLayoutFree>;
using UniqueLtPref = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtPrefFree>;

struct LtKey {
  int device;
  bool f64, tf32, ta, tb;
  std::int64_t m, n, k, lda, ldb, ldc;
  int epilogue;
  unsigned align_a, align_b, align_c;  // alignment the chosen algorithm may assume
  bool operator==(const LtKey&) const = default;
};

struct LtKeyHash {
  std::size_t operator()(const LtKey& k) const noexcept {
    std::size_t h = 0;
    auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    for (std::int64_t v : {k.m, k.n, k.k, k.lda, k.ldb, k.ldc}) mix(std::hash<std::int64_t>{}(v));
    mix(static_cast<std::size_t>(k.device) << 8 | std::size_t(k.tf32) << 3 | std::size_t(k.f64) << 2 |
        std::size_t(k.ta) << 1 | std::size_t(k.tb));
    mix(static_cast<std::size_t>(k.epilogue) << 32 | k.align_a << 20 | k.align_b << 10 | k.align_c);
    return h;
  }
};

struct LtPlan {
  bool usable = false;  // false: cuBLASLt has no algorithm for this problem, use the fallback
  UniqueLtDesc desc;
  UniqueLtLayout x, y, d;  // first operand (our B), second (our A), output (C)
  cublasLtMatmulAlgo_t algo{};
};

// Largest power of two (up to 256) dividing the address: the heuristic
// otherwise assumes 256-byte alignment, which views at an offset break.
unsigned alignment_of(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  unsigned al = 256;
  while (al > 1 && (a % al) != 0) al >>= 1;
  return al;
}

bool unsupported(cublasStatus_t st) { return st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE; }

class LtPlans {
 public:
  static LtPlans& instance() {
    static LtPlans plans;
    return plans;
  }

  // Runs the matmul under the cache lock (the cached descriptor carries the
  // bias pointer of this call). Returns false when there is no plan.
  template <typename T>
  bool run(const DeviceContext& c, const LtKey& key, const T* A, const T* B, const T* bias, T* C) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      if (plans_.size() >= kMaxPlans) plans_.clear();  // shapes churn (varying batch sizes): start over
      it = plans_.emplace(key, make_plan<T>(c, key)).first;
    }
    LtPlan& plan = *it->second;
    if (!plan.usable) return false;
    if (bias) {
      const void* bp = bias;
      MAGMADNN_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
    }
    const T one = 1, zero = 0;
    const cublasStatus_t st =
        cublasLtMatmul(c.lt.get(), plan.desc.get(), &one, B, plan.x.get(), A, plan.y.get(), &zero, C, plan.d.get(), C,
                       plan.d.get(), &plan.algo, c.lt_workspace.get(), c.lt_workspace_bytes, c.stream.get());
    if (unsupported(st)) {  // rejected before anything ran: the fallback overwrites C (beta = 0)
      plan.usable = false;
      return false;
    }
    MAGMADNN_CUBLAS_CHECK(st);
    return true;
  }

 private:
  static constexpr std::size_t kMaxPlans = 1024;

  template <typename T>
  static std::unique_ptr<LtPlan> make_plan(const DeviceContext& c, const LtKey& key) {
    constexpr bool f64 = std::is_same_v<T, double>;
    const cudaDataType_t type = f64 ? CUDA_R_64F : CUDA_R_32F;
    // Plain FP32 (no TF32) accumulation, as the CPU backend and cublasSgemm's
    // default, unless the run asked for TF32 (key.tf32: float data only).
    const cublasComputeType_t compute =
        f64 ? CUBLAS_COMPUTE_64F : (key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
    auto plan = std::make_unique<LtPlan>();

    cublasLtMatmulDesc_t desc = nullptr;
    MAGMADNN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, compute, type));
    plan->desc.reset(desc);
    const cublasOperation_t opx = op_of(key.tb), opy = op_of(key.ta);
    MAGMADNN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opx, sizeof opx));
    MAGMADNN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opy, sizeof opy));
    const auto epi = static_cast<cublasLtEpilogue_t>(key.epilogue);
    MAGMADNN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));

    // Column-major shapes as stored (before the op).
    cublasLtMatrixLayout_t l = nullptr;
    MAGMADNN_CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&l, type, key.tb ? key.k : key.n, key.tb ? key.n : key.k, key.ldb));
    plan->x.reset(l);
    MAGMADNN_CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&l, type, key.ta ? key.m : key.k, key.ta ? key.k : key.m, key.lda));
    plan->y.reset(l);
    MAGMADNN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, key.n, key.m, key.ldc));
    plan->d.reset(l);

    cublasLtMatmulPreference_t p = nullptr;
    MAGMADNN_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
    UniqueLtPref pref(p);
    const std::uint64_t ws = c.lt_workspace_bytes;
    MAGMADNN_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    const std::uint32_t ax = key.align_b, ay = key.align_a, ac = key.align_c;  // x is B, y is A
    MAGMADNN_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &ax, sizeof ax));
    MAGMADNN_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ay, sizeof ay));
    MAGMADNN_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac));
    MAGMADNN_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac));

    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(c.lt.get(), desc, plan->x.get(), plan->y.get(),
                                                             plan->d.get(), plan->d.get(), p, 1, &result, &found);
    // NOT_SUPPORTED / INVALID_VALUE (e.g. an epilogue cuBLASLt lacks for
    // double) is an answer, not an error: the fallback computes the same thing.
    if (unsupported(st) || found == 0 || result.state != CUBLAS_STATUS_SUCCESS) return plan;
    MAGMADNN_CUBLAS_CHECK(st);
    plan->algo = result.algo;
    plan->usable = true;
    return plan;
  }

  std::mutex mutex_;
  std::unordered_map<LtKey, std::unique_ptr<LtPlan>, LtKeyHash> plans_;
};

template <typename T>
void blas_gemm(const DeviceContext& c, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
               const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  const std::int64_t ldx = fix_ld(ldb, tb ? k : n, tb ? n : k);
  const std::int64_t ldy = fix_ld(lda, ta ? m : k, ta ? k : m);
  const std::int64_t ldd = fix_ld(ldc, n, m);
  if constexpr (std::is_same_v<T, float>) {
    if (tf32_math()) {
      // Float in and out, products on TF32 tensor cores (10-bit mantissa
      // inputs, float accumulation): precision "tf32".
      MAGMADNN_CUBLAS_CHECK(cublasGemmEx_64(c.blas.get(), op_of(tb), op_of(ta), n, m, k, &alpha, B, CUDA_R_32F, ldx,
                                            A, CUDA_R_32F, ldy, &beta, C, CUDA_R_32F, ldd,
                                            CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      return;
    }
    MAGMADNN_CUBLAS_CHECK(
        cublasSgemm_64(c.blas.get(), op_of(tb), op_of(ta), n, m, k, &alpha, B, ldx, A, ldy, &beta, C, ldd));
  } else {
    MAGMADNN_CUBLAS_CHECK(
        cublasDgemm_64(c.blas.get(), op_of(tb), op_of(ta), n, m, k, &alpha, B, ldx, A, ldy, &beta, C, ldd));
  }
}

// Row-major C = alpha op(A) op(B) + beta C with bf16 or half A and B,
// float C: cublasGemmEx with float compute. Products of two bf16 or two half
// values are exact in float, so only the accumulation order differs from a
// float GEMM on the rounded operands; CUBLAS_COMPUTE_32F lets cuBLAS use
// tensor cores for these input types without lowering the accumulation.
void blas_gemm_mixed(const DeviceContext& c, dtype ab, bool ta, bool tb, std::int64_t m, std::int64_t n,
                     std::int64_t k, float alpha, const void* A, std::int64_t lda, const void* B, std::int64_t ldb,
                     float beta, float* C, std::int64_t ldc) {
  MAGMADNN_CHECK(ab == dtype::bf16 || ab == dtype::f16, NotSupportedError,
                 "gemm: mixed-precision operands must be bfloat16 or float16, not " << dtype_name(ab));
  const cudaDataType_t t = ab == dtype::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  MAGMADNN_CUBLAS_CHECK(cublasGemmEx_64(c.blas.get(), op_of(tb), op_of(ta), n, m, k, &alpha, B, t,
                                        fix_ld(ldb, tb ? k : n, tb ? n : k), A, t, fix_ld(lda, ta ? m : k, ta ? k : m),
                                        &beta, C, CUDA_R_32F, fix_ld(ldc, n, m), CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT));
}

}  // namespace

template <typename T>
void CudaKernels<T>::gemm_mixed(dtype ab, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                                const void* A, std::int64_t lda, const void* B, std::int64_t ldb, T beta, T* C,
                                std::int64_t ldc) {
  if constexpr (!std::is_same_v<T, float>) {
    Kernels<T>::gemm_mixed(ab, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);  // throws: float only
  } else {
    if (m <= 0 || n <= 0) return;
    blas_gemm_mixed(contexts_.current(), ab, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

// The product, then one bias + activation pass: cuBLASLt's low-precision-in,
// float-out epilogues are not used yet (the float path's plans are keyed for
// one type).
template <typename T>
void CudaKernels<T>::gemm_bias_act_mixed(dtype ab, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                         const void* A, std::int64_t lda, const void* B, std::int64_t ldb,
                                         const T* bias, UnaryOp act, T p, T* C, std::int64_t ldc) {
  if constexpr (!std::is_same_v<T, float>) {
    Kernels<T>::gemm_bias_act_mixed(ab, ta, tb, m, n, k, A, lda, B, ldb, bias, act, p, C, ldc);  // throws
  } else {
    if (m <= 0 || n <= 0) return;
    const DeviceContext& c = contexts_.current();
    blas_gemm_mixed(c, ab, ta, tb, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
    bias_act_on_device<float>(C, m, n, ldc, bias, act, p, c);
  }
}

template <typename T>
void CudaKernels<T>::gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* A,
                          std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  // k == 0 is C = beta * C; cuBLAS handles it (and beta == 0 then writes zeros).
  blas_gemm(contexts_.current(), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <typename T>
void CudaKernels<T>::gemm_bias_act(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* A,
                                   std::int64_t lda, const T* B, std::int64_t ldb, const T* bias, UnaryOp act, T p,
                                   T* C, std::int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const DeviceContext& c = contexts_.current();
  if (k <= 0) {  // empty product: C = act(bias)
    MAGMADNN_CUDA_CHECK(cudaMemset2DAsync(C, static_cast<std::size_t>(ldc) * sizeof(T), 0,
                                          static_cast<std::size_t>(n) * sizeof(T), static_cast<std::size_t>(m),
                                          c.stream.get()));
    bias_act_on_device<T>(C, m, n, ldc, bias, act, p, c);
    return;
  }
  // Identity without a bias is a plain product: cublas{S,D}gemm below.
  if (unary_op_info(act).cuda_epilogue && (bias || act != UnaryOp::Identity)) {
    const cublasLtEpilogue_t epi = lt_epilogue(act, bias != nullptr);
    const LtKey key{c.device,
                    std::is_same_v<T, double>,
                    std::is_same_v<T, float> && tf32_math(),
                    ta,
                    tb,
                    m,
                    n,
                    k,
                    fix_ld(lda, ta ? m : k, ta ? k : m),
                    fix_ld(ldb, tb ? k : n, tb ? n : k),
                    fix_ld(ldc, n, m),
                    static_cast<int>(epi),
                    alignment_of(A),
                    alignment_of(B),
                    std::min(alignment_of(C), bias ? alignment_of(bias) : 256u)};
    if (LtPlans::instance().run<T>(c, key, A, B, bias, C)) return;
  }
  blas_gemm<T>(c, ta, tb, m, n, k, T(1), A, lda, B, ldb, T(0), C, ldc);
  bias_act_on_device<T>(C, m, n, ldc, bias, act, p, c);
}

template void CudaKernels<float>::gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, float, const float*,
                                       std::int64_t, const float*, std::int64_t, float, float*, std::int64_t);
template void CudaKernels<double>::gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, double, const double*,
                                        std::int64_t, const double*, std::int64_t, double, double*, std::int64_t);
template void CudaKernels<float>::gemm_bias_act(bool, bool, std::int64_t, std::int64_t, std::int64_t, const float*,
                                                std::int64_t, const float*, std::int64_t, const float*, UnaryOp, float,
                                                float*, std::int64_t);
template void CudaKernels<double>::gemm_bias_act(bool, bool, std::int64_t, std::int64_t, std::int64_t, const double*,
                                                 std::int64_t, const double*, std::int64_t, const double*, UnaryOp,
                                                 double, double*, std::int64_t);

template void CudaKernels<float>::gemm_mixed(dtype, bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                                             const void*, std::int64_t, const void*, std::int64_t, float, float*,
                                             std::int64_t);
template void CudaKernels<double>::gemm_mixed(dtype, bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                                              const void*, std::int64_t, const void*, std::int64_t, double, double*,
                                              std::int64_t);
template void CudaKernels<float>::gemm_bias_act_mixed(dtype, bool, bool, std::int64_t, std::int64_t, std::int64_t,
                                                      const void*, std::int64_t, const void*, std::int64_t,
                                                      const float*, UnaryOp, float, float*, std::int64_t);
template void CudaKernels<double>::gemm_bias_act_mixed(dtype, bool, bool, std::int64_t, std::int64_t, std::int64_t,
                                                       const void*, std::int64_t, const void*, std::int64_t,
                                                       const double*, UnaryOp, double, double*, std::int64_t);

}  // namespace magmadnn::cuda

// Matrix products on the host.
//
// float: oneDNN matmul primitives. Creating a primitive costs far more than a
// small product (it JIT-compiles), so primitives are cached per problem
// (m, n, k, layouts, alpha != 1, beta, bias, activation); a training loop
// creates its primitives in the first step and reuses them afterwards.
// Transposes are expressed as strides in the memory descriptors, so no
// operand is copied. alpha is a run-time output scale (one primitive serves
// every alpha), beta a `sum` post-op, the activation an eltwise post-op.
// Products under ~48^3 multiply-adds skip oneDNN (see small_problem).
// Mixed precision (gemm_mixed, gemm_bias_act_mixed; bf16 operands only): the
// same primitives with bf16 A and B descriptors, float C and bias; oneDNN
// accumulates in float.
//
// double: oneDNN 2.6 cannot do f64 at all: its memory::data_type has only
// f32, f16, bf16, s32, s8 and u8; oneDNN 3.7 has f64 but makes no f64 matmul
// on the CPU (checked with Debian 13's 3.7.2 on Zen 3). So double goes to OpenBLAS dgemm, followed
// by one OpenMP pass over C that adds the bias and applies the activation.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "magmadnn/backend/cpu/blas.h"
#include "magmadnn/backend/cpu/cpu_gemm.h"
#include "magmadnn/backend/cpu/cpu_kernels.h"
#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/onednn_compat.h"
#include "magmadnn/backend/cpu/thread_buffer.h"
#include "magmadnn/backend/cpu/unary_dispatch.h"
#include "magmadnn/backend/scalar_ops.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::cpu {
namespace {

int blas_int(std::int64_t v, const char* what) {
  MAGMADNN_CHECK(v >= 0 && v <= INT_MAX, ValueError,
                 "gemm: " << what << " = " << v << " does not fit OpenBLAS's 32-bit integers");
  return static_cast<int>(v);
}

template <typename T>
void blas_gemm_impl(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* A,
                    std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  const CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE opb = tb ? CblasTrans : CblasNoTrans;
  // BLAS rejects a leading dimension smaller than 1 even when the matrix is
  // empty or a single column.
  const int ia = std::max(1, blas_int(lda, "lda")), ib = std::max(1, blas_int(ldb, "ldb"));
  const int ic = std::max(1, blas_int(ldc, "ldc"));
  const int im = blas_int(m, "m"), in = blas_int(n, "n"), ik = blas_int(k, "k");
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, opa, opb, im, in, ik, alpha, A, ia, B, ib, beta, C, ic);
  } else {
    cblas_dgemm(CblasRowMajor, opa, opb, im, in, ik, alpha, A, ia, B, ib, beta, C, ic);
  }
}

// C[i, j] = f(C[i, j] + bias[j]) over an m x n matrix with row stride ldc,
// one read and one write of C. f is chosen outside the loops so each row loop
// is a single vectorisable expression.
template <typename T, typename F>
inline void epilogue_rows(T* C, std::int64_t i0, std::int64_t i1, std::int64_t n, std::int64_t ldc, const T* bias,
                          F f) {
  for (std::int64_t i = i0; i < i1; ++i) {
    T* row = C + i * ldc;
    if (bias) {
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) row[j] = f(row[j] + bias[j]);
    } else {
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) row[j] = f(row[j]);
    }
  }
}

// Small products skip the parallel region entirely: even an if(false) one
// costs a few hundred nanoseconds, more than the whole pass.
template <typename T, typename F>
void epilogue(T* C, std::int64_t m, std::int64_t n, std::int64_t ldc, const T* bias, F f) {
  if (m < 2 || m * n <= kParallelThreshold / 8) {
    epilogue_rows(C, 0, m, n, ldc, bias, f);
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < m; ++i) epilogue_rows(C, i, i + 1, n, ldc, bias, f);
}

// The activation is scalar_ops.h's, made a compile-time constant so that its
// switch folds away inside the row loop.
template <typename T>
void bias_act_pass(T* C, std::int64_t m, std::int64_t n, std::int64_t ldc, const T* bias, UnaryOp act, T p) {
  if (act == UnaryOp::Identity && !bias) return;
  with_unary_op(act, [=](auto c) {
    constexpr UnaryOp OP = decltype(c)::value;
    epilogue(C, m, n, ldc, bias, [p](T v) { return ops::unary(OP, v, p); });
  });
}

// -- oneDNN (float) --------------------------------------------------------------

struct MatmulKey {
  std::int64_t m, n, k, lda, ldb, ldc;
  bool ta, tb, scaled, bias;
  float beta;
  UnaryOp act;
  float act_p;
  // A strided batch of products (batch > 1): operand i starts stride_* elements after operand i - 1.
  std::int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  // A and B are bfloat16 (C and the bias stay float; oneDNN accumulates in float).
  bool bf16 = false;
  bool operator==(const MatmulKey&) const = default;
};

struct MatmulKeyHash {
  std::size_t operator()(const MatmulKey& key) const noexcept {
    std::size_t h = 0;
    auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    for (std::int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc, key.batch, key.stride_a, key.stride_b,
                           key.stride_c})
      mix(std::hash<std::int64_t>{}(v));
    mix((std::size_t(key.ta) << 0) | (std::size_t(key.tb) << 1) | (std::size_t(key.scaled) << 2) |
        (std::size_t(key.bias) << 3) | (std::size_t(key.bf16) << 4) | (std::size_t(key.act) << 5));
    mix(std::hash<float>{}(key.beta));
    mix(std::hash<float>{}(key.act_p));
    return h;
  }
};

struct CachedMatmul {
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md, bias_md, scratch_md;
};

// Maps an activation to its oneDNN eltwise post-op; false when there is none.
bool eltwise_of(UnaryOp act, float p, dnnl::algorithm* alg, float* alpha) {
  *alpha = 0.f;
  switch (act) {
    case UnaryOp::Relu: *alg = dnnl::algorithm::eltwise_relu; return true;
    case UnaryOp::LeakyRelu: *alg = dnnl::algorithm::eltwise_relu; *alpha = p; return true;
    case UnaryOp::Sigmoid: *alg = dnnl::algorithm::eltwise_logistic; return true;
    case UnaryOp::Tanh: *alg = dnnl::algorithm::eltwise_tanh; return true;
    case UnaryOp::Gelu: *alg = dnnl::algorithm::eltwise_gelu_erf; return true;
    default: return false;
  }
}

// C *= beta over an m x n matrix with row stride ldc, on the threads when
// large: how a beta the `sum` post-op would apply slowly (or a one-off beta)
// is applied before the beta = 1 primitive.
void scale_pass(float* C, std::int64_t m, std::int64_t n, std::int64_t ldc, float beta) {
  epilogue(C, m, n, ldc, static_cast<const float*>(nullptr),
           [beta](float v) { return ops::unary(UnaryOp::Scale, v, beta); });
}

template <typename F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// oneDNN 3.7.2's matmul (brgemm; f32 and bf16, AVX-512 and AMX alike) reads
// a single-row source (m = 1) as if its k stride were 1: op(A) stored as one
// column of a larger matrix (transposed, strides {1, lda}, lda > 1) gave the
// product of the wrong elements, 0.25 for 0.75 in a 1 x 2 by 2 x 4 product
// reproduced outside magmadnn on Debian 13 (oneDNN 2.6 reads it right; a B
// column with n = 1 is read right by both). Such a row is packed first: k
// elements per product, next to the product's k x n multiply-adds.
struct PackedRowTag {};
const void* pack_single_row(MatmulKey& key, const void* A) {
  if (key.m != 1 || !key.ta || key.lda == 1) return A;
  const std::size_t elem = key.bf16 ? sizeof(bfloat16) : sizeof(float);
  auto* dst = static_cast<unsigned char*>(thread_buffer<PackedRowTag>(
      elem * static_cast<std::size_t>(key.batch * key.k), "gemm: packing a strided single row"));
  const auto* src = static_cast<const unsigned char*>(A);
  for (std::int64_t b = 0; b < key.batch; ++b)
    for (std::int64_t p = 0; p < key.k; ++p)
      std::memcpy(dst + (b * key.k + p) * elem, src + (b * key.stride_a + p * key.lda) * elem, elem);
  key.ta = false;
  key.lda = key.k;
  if (key.batch > 1) key.stride_a = key.k;
  return dst;
}

class OnednnMatmul {
 public:
  static OnednnMatmul& instance() {
    static OnednnMatmul inst;
    return inst;
  }

  // A and B are float, or bfloat16 when key.bf16.
  void run(MatmulKey key, float alpha, const void* A, const void* B, const float* bias, float* C) {
    A = pack_single_row(key, A);
    const CachedMatmul& mm = get(key);
    // One stream per thread: a oneDNN stream is not meant to be driven from
    // several threads at once, and a CPU stream is cheap to create.
    thread_local dnnl::stream stream(engine_);
    using dnnl::memory;
    memory a(mm.a_md, engine_, const_cast<void*>(A));
    memory b(mm.b_md, engine_, const_cast<void*>(B));
    memory c(mm.c_md, engine_, C);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
    if (key.bias) args.emplace(DNNL_ARG_BIAS, memory(mm.bias_md, engine_, const_cast<float*>(bias)));
    if (key.scaled) {
      static const memory::desc scale_md = onednn_compat::scale_desc();  // made once (3.x allocates a desc)
      static const int scale_arg = onednn_compat::scale_arg();
      args.emplace(scale_arg, memory(scale_md, engine_, &alpha));
    }
    const std::size_t scratch_bytes = mm.scratch_md.get_size();
    if (scratch_bytes > 0) args.emplace(DNNL_ARG_SCRATCHPAD, memory(mm.scratch_md, engine_, scratch(scratch_bytes)));
    mm.prim.execute(stream, args);
    stream.wait();
  }

  std::size_t cache_size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cache_.size();
  }

  /// Whether `key` (beta not 0 or 1) deserves a primitive of its own: true
  /// when the previous product of the same shape had the same beta. beta is
  /// compiled into a primitive (a `sum` post-op scale), so a beta that
  /// changes every call (weight decay under a learning-rate schedule) would
  /// otherwise create a primitive per call and grow the cache without bound.
  bool beta_is_steady(const MatmulKey& key) {
    MatmulKey shape = key;
    shape.beta = 1.f;
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, fresh] = last_beta_.try_emplace(shape, key.beta);
    if (fresh) return false;
    const bool same = it->second == key.beta;
    it->second = key.beta;
    return same;
  }

  /// Whether a steady beta (not 0 or 1) is applied faster by the `sum`
  /// post-op than by a pass C *= beta before the beta = 1 primitive.
  /// Why measure: oneDNN 2.6's gemm:jit takes a slow path for a sum scale
  /// other than 1 on AVX2 (528 x 784 x 100, 2 threads: 0.86-1.10 ms against
  /// 0.60-0.68 ms for the pass plus the beta = 1 product), while on AVX-512
  /// the post-op costs next to nothing. Each shape is timed once, on a copy
  /// of C (the caller's C is never written twice), and the answer kept.
  bool sum_post_op_pays(const MatmulKey& key, float alpha, const void* A, const void* B, const float* C) {
    const GemmBetaPath forced = beta_path_.load();
    if (forced != GemmBetaPath::Measure) return forced == GemmBetaPath::SumPostOp;
    // The two ways may round differently; a timed pick could then differ
    // between reruns. The fixed rule takes the pass, which costs a few
    // percent of the product where the post-op is fast and saves a third
    // where it is slow.
    if (deterministic_algorithms()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = beta_choice_.find(key);
      if (it != beta_choice_.end()) return it->second;
    }
    std::vector<float> copy(C, C + (key.m - 1) * key.ldc + key.n);  // a single product (batch 1), m, n > 0
    MatmulKey plain = key;
    plain.beta = 1.f;
    auto post_op = [&] { run(key, alpha, A, B, nullptr, copy.data()); };
    auto pass = [&] {
      scale_pass(copy.data(), key.m, key.n, key.ldc, key.beta);
      run(plain, alpha, A, B, nullptr, copy.data());
    };
    post_op();  // creates the primitives outside the timing
    pass();
    double best_post_op = 1e30, best_pass = 1e30;
    for (int r = 0; r < 3; ++r) {  // interleaved, so a slow moment of the machine hits both
      best_post_op = std::min(best_post_op, seconds(post_op));
      best_pass = std::min(best_pass, seconds(pass));
    }
    const bool pays = best_post_op <= best_pass;
    std::lock_guard<std::mutex> lock(mutex_);
    beta_choice_.emplace(key, pays);
    ++beta_measurements_;
    return pays;
  }

  void set_beta_path(GemmBetaPath path) { beta_path_.store(path); }

  std::size_t beta_measurements() {
    std::lock_guard<std::mutex> lock(mutex_);
    return beta_measurements_;
  }

 private:
  OnednnMatmul() : engine_(dnnl::engine::kind::cpu, 0) {}

  // A per-thread scratchpad (user scratchpad mode): primitives may then run
  // concurrently from several threads without sharing oneDNN's global one.
  struct ScratchTag {};
  static void* scratch(std::size_t bytes) { return thread_buffer<ScratchTag>(bytes, "gemm: oneDNN scratchpad"); }

  const CachedMatmul& get(const MatmulKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return *it->second;
    auto created = create(key);
    return *cache_.emplace(key, std::move(created)).first->second;
  }

  std::unique_ptr<CachedMatmul> create(const MatmulKey& key) const {
    using dnnl::memory;
    using dims = memory::dims;
    const auto f32 = memory::data_type::f32;
    const auto ab = key.bf16 ? memory::data_type::bf16 : f32;
    // op(A) is m x k: stored row-major either as m x k (strides lda, 1) or as
    // k x m, which read as m x k has strides (1, lda). Likewise for B.
    auto out = std::make_unique<CachedMatmul>();
    if (key.batch == 1) {
      out->a_md = memory::desc({key.m, key.k}, ab, key.ta ? dims{1, key.lda} : dims{key.lda, 1});
      out->b_md = memory::desc({key.k, key.n}, ab, key.tb ? dims{1, key.ldb} : dims{key.ldb, 1});
      out->c_md = memory::desc({key.m, key.n}, f32, dims{key.ldc, 1});
      if (key.bias) out->bias_md = memory::desc({1, key.n}, f32, dims{key.n, 1});
    } else {
      // A batch is one 3-D matmul whose leading dimension has the batch strides.
      out->a_md = memory::desc({key.batch, key.m, key.k}, ab,
                               key.ta ? dims{key.stride_a, 1, key.lda} : dims{key.stride_a, key.lda, 1});
      out->b_md = memory::desc({key.batch, key.k, key.n}, ab,
                               key.tb ? dims{key.stride_b, 1, key.ldb} : dims{key.stride_b, key.ldb, 1});
      out->c_md = memory::desc({key.batch, key.m, key.n}, f32, dims{key.stride_c, key.ldc, 1});
    }

    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (key.scaled) onednn_compat::set_runtime_scale(attr);  // never with a bias: see the header
    dnnl::post_ops po;
    if (key.beta != 0.f) onednn_compat::append_sum(po, key.beta);
    dnnl::algorithm alg;
    float alg_alpha;
    if (eltwise_of(key.act, key.act_p, &alg, &alg_alpha)) onednn_compat::append_eltwise(po, alg, alg_alpha, 0.f);
    attr.set_post_ops(po);

    try {
      const dnnl::matmul::primitive_desc pd = onednn_compat::matmul_pd(
          engine_, out->a_md, out->b_md, key.bias ? &out->bias_md : nullptr, out->c_md, attr);
      out->scratch_md = pd.scratchpad_desc();
      out->prim = dnnl::matmul(pd);
    } catch (const dnnl::error& e) {
      MAGMADNN_THROW(DeviceError, "gemm: oneDNN could not create a " << (key.bf16 ? "bf16 " : "")
                                                                     << "matmul for m=" << key.m << " n=" << key.n
                                                                              << " k=" << key.k << ": " << e.what());
    }
    return out;
  }

  dnnl::engine engine_;
  std::mutex mutex_;
  std::unordered_map<MatmulKey, std::unique_ptr<CachedMatmul>, MatmulKeyHash> cache_;
  std::unordered_map<MatmulKey, float, MatmulKeyHash> last_beta_;  // keyed with beta = 1
  std::unordered_map<MatmulKey, bool, MatmulKeyHash> beta_choice_;  // steady beta: does the post-op pay?
  std::size_t beta_measurements_ = 0;
  std::atomic<GemmBetaPath> beta_path_{GemmBetaPath::Measure};
};

// Below about 48^3 multiply-adds a oneDNN execution costs more in fixed
// overhead (~1.2 us measured: memory objects, argument map, its parallel
// region) than OpenBLAS takes for the whole product, single-threaded; such
// products go to OpenBLAS plus the epilogue pass.
constexpr std::int64_t kSmallGemm = 48 * 48 * 48;
inline bool small_problem(std::int64_t m, std::int64_t n, std::int64_t k) { return m * n * k <= kSmallGemm; }

// C = beta * C (k == 0: the product is empty). beta == 0 overwrites, so NaNs
// in an uninitialised C do not survive, as with BLAS.
template <typename T>
void scale_c(T* C, std::int64_t m, std::int64_t n, std::int64_t ldc, T beta) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
}

// C = alpha op(A) op(B) + beta C through oneDNN; A and B are float, or
// bfloat16 when `bf16`.
void onednn_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const void* A,
                 std::int64_t lda, const void* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc, bool bf16) {
  MatmulKey key{m, n, k, lda, ldb, ldc, ta, tb, alpha != 1.f, false, beta, UnaryOp::Identity, 0.f};
  key.bf16 = bf16;
  OnednnMatmul& mm = OnednnMatmul::instance();
  if (beta != 0.f && beta != 1.f &&
      !(mm.beta_is_steady(key) && mm.sum_post_op_pays(key, alpha, A, B, C))) {
    // A beta seen once, or one the sum post-op applies slowly: C *= beta
    // (over the threads), then the beta = 1 primitive.
    scale_pass(C, m, n, ldc, beta);
    key.beta = 1.f;
  }
  mm.run(key, alpha, A, B, nullptr, C);
}

// C = act(op(A) op(B) + bias) through oneDNN, the activation as a post-op
// where oneDNN has it and as a pass over C otherwise.
void onednn_gemm_bias_act(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* A,
                          std::int64_t lda, const void* B, std::int64_t ldb, const float* bias, UnaryOp act, float p,
                          float* C, std::int64_t ldc, bool bf16) {
  dnnl::algorithm alg;
  float unused;
  const bool fused = act == UnaryOp::Identity || eltwise_of(act, p, &alg, &unused);
  // Only LeakyRelu reads p; keying on it elsewhere would split the cache.
  MatmulKey key{m, n, k, lda, ldb, ldc, ta, tb, false, bias != nullptr, 0.f,
                fused ? act : UnaryOp::Identity, act == UnaryOp::LeakyRelu ? p : 0.f};
  key.bf16 = bf16;
  OnednnMatmul::instance().run(key, 1.f, A, B, bias, C);
  if (!fused) bias_act_pass(C, m, n, ldc, static_cast<const float*>(nullptr), act, p);
}

}  // namespace

void blas_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* A,
               std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  blas_gemm_impl(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

void blas_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* A,
               std::int64_t lda, const double* B, std::int64_t ldb, double beta, double* C, std::int64_t ldc) {
  blas_gemm_impl(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

std::size_t onednn_matmul_cache_size() { return OnednnMatmul::instance().cache_size(); }

void set_gemm_beta_path(GemmBetaPath path) { OnednnMatmul::instance().set_beta_path(path); }

std::size_t gemm_beta_measurements() { return OnednnMatmul::instance().beta_measurements(); }

template <typename T>
void CpuKernels<T>::gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* A,
                         std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == T(0)) {
    scale_c(C, m, n, ldc, beta);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (!small_problem(m, n, k)) {
      onednn_gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, false);
      return;
    }
  }
  blas_gemm_impl(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <typename T>
void CpuKernels<T>::gemm_bias_act(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* A,
                                  std::int64_t lda, const T* B, std::int64_t ldb, const T* bias, UnaryOp act, T p,
                                  T* C, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    scale_c(C, m, n, ldc, T(0));
    bias_act_pass(C, m, n, ldc, bias, act, p);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (!small_problem(m, n, k)) {
      onednn_gemm_bias_act(ta, tb, m, n, k, A, lda, B, ldb, bias, act, p, C, ldc, false);
      return;
    }
  }
  blas_gemm_impl(ta, tb, m, n, k, T(1), A, lda, B, ldb, T(0), C, ldc);
  bias_act_pass(C, m, n, ldc, bias, act, p);
}

template <typename T>
void gemm_strided_batched_impl(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                               const T* A, std::int64_t lda, std::int64_t stride_a, const T* B, std::int64_t ldb,
                               std::int64_t stride_b, T beta, T* C, std::int64_t ldc, std::int64_t stride_c,
                               std::int64_t batch) {
  MAGMADNN_CHECK(batch >= 0, ValueError, "gemm_strided_batched: batch = " << batch << " is negative");
  if (batch == 0 || m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    // One oneDNN call for the whole batch, so its fixed cost is paid once:
    // the small-product cut-off applies to the batch's total work.
    if (batch > 1 && k > 0 && alpha != 0.f && !small_problem(m * batch, n, k)) {
      MatmulKey key{m, n, k, lda, ldb, ldc, ta, tb, alpha != 1.f, false, beta, UnaryOp::Identity, 0.f};
      key.batch = batch;
      key.stride_a = stride_a;
      key.stride_b = stride_b;
      key.stride_c = stride_c;
      OnednnMatmul::instance().run(key, alpha, A, B, nullptr, C);
      return;
    }
  }
  CpuKernels<T> kern;
  for (std::int64_t i = 0; i < batch; ++i) {
    kern.gemm(ta, tb, m, n, k, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta, C + i * stride_c, ldc);
  }
}

void gemm_strided_batched(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                          const float* A, std::int64_t lda, std::int64_t stride_a, const float* B, std::int64_t ldb,
                          std::int64_t stride_b, float beta, float* C, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch) {
  gemm_strided_batched_impl(ta, tb, m, n, k, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
                            batch);
}
void gemm_strided_batched(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                          const double* A, std::int64_t lda, std::int64_t stride_a, const double* B, std::int64_t ldb,
                          std::int64_t stride_b, double beta, double* C, std::int64_t ldc, std::int64_t stride_c,
                          std::int64_t batch) {
  gemm_strided_batched_impl(ta, tb, m, n, k, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
                            batch);
}

// Whether oneDNN makes bf16 matmuls on this CPU: oneDNN 2.6 needs AVX-512
// for them (it emulates bf16 on AVX-512 cores without AVX512_BF16) and has
// none for AVX2 machines such as AMD's Zen 3; neither has oneDNN 3.7 there
// (checked with Debian 13's 3.7.2). Asked once, of a 2x2x2 product.
bool bf16_matmul_native() {
  static const bool native = [] {
    using dnnl::memory;
    const memory::desc ab({2, 2}, memory::data_type::bf16, memory::format_tag::ab);
    const memory::desc c({2, 2}, memory::data_type::f32, memory::format_tag::ab);
    try {
      onednn_compat::matmul_pd(dnnl::engine(dnnl::engine::kind::cpu, 0), ab, ab, nullptr, c);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return native;
}

namespace {

// Without a native bf16 matmul, the operands are widened to float (exactly:
// every bf16 value is a float) and the float primitive runs: the result of a
// bf16 product with float accumulation, at float speed plus the widening.
// Each calling thread widens into its own buffers (gemm_update calls this
// from several), one operand stored as rows x cols at stride ld, packed.
struct WidenATag {};
struct WidenBTag {};
template <typename Tag>
const float* widen(const void* src, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  auto* dst = static_cast<float*>(thread_buffer<Tag>(sizeof(float) * static_cast<std::size_t>(rows * cols),
                                                     "gemm: widening a bf16 operand"));
  const auto* s = static_cast<const bfloat16*>(src);
  // Over the threads when large (inside gemm_update's own parallel region
  // this runs on the calling thread alone: nested regions are off).
  parallel_for(rows, rows * cols > kParallelThreshold, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < cols; ++j) dst[i * cols + j] = static_cast<float>(s[i * ld + j]);
  });
  return dst;
}

// Calls gemm(A, lda, B, ldb, bf16) with the operands as they are where
// oneDNN has bf16 matmuls, else widened to float.
template <typename Gemm>
void with_bf16_operands(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* A,
                        std::int64_t lda, const void* B, std::int64_t ldb, Gemm&& gemm) {
  if (bf16_matmul_native()) return gemm(A, lda, B, ldb, true);
  const float* a = ta ? widen<WidenATag>(A, k, m, lda) : widen<WidenATag>(A, m, k, lda);
  const float* b = tb ? widen<WidenBTag>(B, n, k, ldb) : widen<WidenBTag>(B, k, n, ldb);
  gemm(a, ta ? m : k, b, tb ? k : n, false);
}

}  // namespace

// bf16 operands always go to oneDNN: OpenBLAS has no bf16 GEMM, and the
// small-product shortcut would need float copies of A and B. f16 operands
// are not computed on the CPU (core/precision.cpp says why).
template <typename T>
void CpuKernels<T>::gemm_mixed(dtype ab, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                               const void* A, std::int64_t lda, const void* B, std::int64_t ldb, T beta, T* C,
                               std::int64_t ldc) {
  if constexpr (!std::is_same_v<T, float>) {
    no_mixed_gemm(ab);
  } else {
    if (ab != dtype::bf16) no_mixed_gemm(ab);
    if (m == 0 || n == 0) return;
    if (k == 0 || alpha == 0.f) {
      scale_c(C, m, n, ldc, beta);
      return;
    }
    with_bf16_operands(ta, tb, m, n, k, A, lda, B, ldb,
                       [&](const void* a, std::int64_t la, const void* b, std::int64_t lb, bool bf16) {
                         onednn_gemm(ta, tb, m, n, k, alpha, a, la, b, lb, beta, C, ldc, bf16);
                       });
  }
}

template <typename T>
void CpuKernels<T>::gemm_bias_act_mixed(dtype ab, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                        const void* A, std::int64_t lda, const void* B, std::int64_t ldb,
                                        const T* bias, UnaryOp act, T p, T* C, std::int64_t ldc) {
  if constexpr (!std::is_same_v<T, float>) {
    no_mixed_gemm(ab);
  } else {
    if (ab != dtype::bf16) no_mixed_gemm(ab);
    if (m == 0 || n == 0) return;
    if (k == 0) {
      scale_c(C, m, n, ldc, 0.f);
      bias_act_pass(C, m, n, ldc, bias, act, p);
      return;
    }
    with_bf16_operands(ta, tb, m, n, k, A, lda, B, ldb,
                       [&](const void* a, std::int64_t la, const void* b, std::int64_t lb, bool bf16) {
                         onednn_gemm_bias_act(ta, tb, m, n, k, a, la, b, lb, bias, act, p, C, ldc, bf16);
                       });
  }
}

template void CpuKernels<float>::gemm_mixed(dtype, bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                                            const void*, std::int64_t, const void*, std::int64_t, float, float*,
                                            std::int64_t);
template void CpuKernels<double>::gemm_mixed(dtype, bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                                             const void*, std::int64_t, const void*, std::int64_t, double, double*,
                                             std::int64_t);
template void CpuKernels<float>::gemm_bias_act_mixed(dtype, bool, bool, std::int64_t, std::int64_t, std::int64_t,
                                                     const void*, std::int64_t, const void*, std::int64_t,
                                                     const float*, UnaryOp, float, float*, std::int64_t);
template void CpuKernels<double>::gemm_bias_act_mixed(dtype, bool, bool, std::int64_t, std::int64_t, std::int64_t,
                                                      const void*, std::int64_t, const void*, std::int64_t,
                                                      const double*, UnaryOp, double, double*, std::int64_t);
template void CpuKernels<float>::gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, float, const float*,
                                      std::int64_t, const float*, std::int64_t, float, float*, std::int64_t);
template void CpuKernels<double>::gemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, double, const double*,
                                       std::int64_t, const double*, std::int64_t, double, double*, std::int64_t);
template void CpuKernels<float>::gemm_bias_act(bool, bool, std::int64_t, std::int64_t, std::int64_t, const float*,
                                               std::int64_t, const float*, std::int64_t, const float*, UnaryOp,
                                               float, float*, std::int64_t);
template void CpuKernels<double>::gemm_bias_act(bool, bool, std::int64_t, std::int64_t, std::int64_t, const double*,
                                                std::int64_t, const double*, std::int64_t, const double*, UnaryOp,
                                                double, double*, std::int64_t);

}  // namespace magmadnn::cpu

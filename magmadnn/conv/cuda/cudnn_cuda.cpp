// Convolution through cuDNN's v9 legacy-compatible API (cudnn_cnn_v9.h:
// cudnnConvolutionForward / BackwardData / BackwardFilter), which is present
// in cuDNN 9.19 and takes care of groups, dilation and its own kernel choice.
//
// Kernel choice: cudnnGet*Algorithm_v7 heuristics (no trial runs, no hidden
// allocations), taking the first algorithm that succeeds and needs at most
// kMaxWorkspace (see pick); under deterministic algorithms
// (core/determinism.h) only those cuDNN reports as CUDNN_DETERMINISTIC, since
// some backward kernels sum with atomics in whatever order their blocks
// finish. Float and double compute in FMA math: TF32
// tensor-core math would differ from the CPU algorithms by ~1e-3 relative.
// Half stores half and accumulates in float (cuDNN's "pseudo half"
// configuration): its inputs already carry 2^-11 relative rounding, so
// tensor-core math costs it nothing in accuracy and is what makes half worth
// having. Bfloat16 likewise (CUDNN_DATA_BFLOAT16 with float compute, which
// cuDNN runs on compute capability 8.0 and later). The choice, the
// descriptors and the workspace size are cached per device, element type and
// problem.
#include "magmadnn/core/config.h"

#if MAGMADNN_HAVE_CUDNN

#include <algorithm>
#include <climits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "magmadnn/backend/registry.h"
#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/cuda/conv_context_cuda.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/core/half.h"
#include "magmadnn/core/thread_precision.h"
#include "magmadnn/core/types.h"

namespace magmadnn::conv::cuda {
namespace {

constexpr std::size_t kMaxWorkspace = std::size_t{1} << 30;

struct TensorDescFree {
  void operator()(cudnnTensorStruct* d) const noexcept { cudnnDestroyTensorDescriptor(d); }
};
struct FilterDescFree {
  void operator()(cudnnFilterStruct* d) const noexcept { cudnnDestroyFilterDescriptor(d); }
};
struct ConvDescFree {
  void operator()(cudnnConvolutionStruct* d) const noexcept { cudnnDestroyConvolutionDescriptor(d); }
};
using TensorDesc = std::unique_ptr<cudnnTensorStruct, TensorDescFree>;
using FilterDesc = std::unique_ptr<cudnnFilterStruct, FilterDescFree>;
using ConvDesc = std::unique_ptr<cudnnConvolutionStruct, ConvDescFree>;

template <typename T>
constexpr cudnnDataType_t data_type() {
  if constexpr (std::is_same_v<T, double>) return CUDNN_DATA_DOUBLE;
  else if constexpr (std::is_same_v<T, half>) return CUDNN_DATA_HALF;
  else if constexpr (std::is_same_v<T, bfloat16>) return CUDNN_DATA_BFLOAT16;
  else return CUDNN_DATA_FLOAT;
}
// The type sums are accumulated in (the descriptor's compute type).
template <typename T>
constexpr cudnnDataType_t compute_type() {
  return std::is_same_v<T, double> ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}
// Half and bfloat16: stored in 16 bits, accumulated in float.
template <typename T>
constexpr bool low_precision = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
// alpha and beta are float for half, bfloat16 and float data, double for double.
template <typename T>
using Scale = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Math types acceptable for T, most wanted first. Float under precision
// tf32 (core/thread_precision.h) wants default math, which lets cuDNN use
// TF32 tensor cores; otherwise FMA math, the strict FP32 the CPU computes.
template <typename T>
std::vector<cudnnMathType_t> math_order() {
  if constexpr (low_precision<T>) return {CUDNN_TENSOR_OP_MATH, CUDNN_DEFAULT_MATH, CUDNN_FMA_MATH};
  else if (std::is_same_v<T, float> && tf32_math()) return {CUDNN_DEFAULT_MATH, CUDNN_FMA_MATH};
  else return {CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH};
}

TensorDesc tensor4d(cudnnDataType_t dt, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  cudnnTensorDescriptor_t d = nullptr;
  MAGMADNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
  TensorDesc owned(d);
  MAGMADNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, dt, int(n), int(c), int(h), int(w)));
  return owned;
}

// What cuDNN needs for one problem, and its choice per pass.
struct CudnnPlan {
  TensorDesc x, y, bias;
  FilterDesc w;
  ConvDesc conv;
  bool chosen[3] = {false, false, false};
  int algo[3] = {0, 0, 0};
  cudnnMathType_t math[3] = {CUDNN_FMA_MATH, CUDNN_FMA_MATH, CUDNN_FMA_MATH};
  std::size_t work[3] = {0, 0, 0};
};

// The fastest usable entry (the list is sorted by expected speed) in the
// first math type of `order` that has one. For float that is FMA math, then
// default math, which on Ampere and later may use TF32 (float results may then
// differ from the CPU by ~1e-3); for half, tensor-core math first. Under
// deterministic algorithms, only entries that give the same bits every run.
template <typename Perf>
const Perf* pick(const std::vector<Perf>& perf, int got, const std::vector<cudnnMathType_t>& order) {
  const bool same_bits = deterministic_algorithms();
  for (cudnnMathType_t want : order) {
    for (int i = 0; i < got; ++i) {
      const Perf& p = perf[static_cast<std::size_t>(i)];
      if (same_bits && p.determinism != CUDNN_DETERMINISTIC) continue;
      if (p.status == CUDNN_STATUS_SUCCESS && p.memory <= kMaxWorkspace && p.mathType == want) return &p;
    }
  }
  return nullptr;
}

template <typename T>
std::unique_ptr<CudnnPlan> make_plan(const ConvProblem& pr) {
  constexpr cudnnDataType_t dt = data_type<T>();
  auto plan = std::make_unique<CudnnPlan>();
  plan->x = tensor4d(dt, pr.n, pr.c, pr.h, pr.w);
  plan->y = tensor4d(dt, pr.n, pr.k, pr.p, pr.q);
  plan->bias = tensor4d(dt, 1, pr.k, 1, 1);
  cudnnFilterDescriptor_t f = nullptr;
  MAGMADNN_CUDNN_CHECK(cudnnCreateFilterDescriptor(&f));
  plan->w.reset(f);
  MAGMADNN_CUDNN_CHECK(cudnnSetFilter4dDescriptor(f, dt, CUDNN_TENSOR_NCHW, int(pr.k), int(pr.c / pr.geom.groups),
                                                  int(pr.r), int(pr.s)));
  cudnnConvolutionDescriptor_t c = nullptr;
  MAGMADNN_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&c));
  plan->conv.reset(c);
  const ConvParams& g = pr.geom;
  MAGMADNN_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(c, int(g.pad_h), int(g.pad_w), int(g.stride_h),
                                                       int(g.stride_w), int(g.dilation_h), int(g.dilation_w),
                                                       CUDNN_CROSS_CORRELATION, compute_type<T>()));
  MAGMADNN_CUDNN_CHECK(cudnnSetConvolutionGroupCount(c, int(g.groups)));
  // The heuristics list only algorithms the descriptor's math type allows.
  const cudnnMathType_t widest = low_precision<T>                               ? CUDNN_TENSOR_OP_MATH
                                 : std::is_same_v<T, float> && tf32_math() ? CUDNN_DEFAULT_MATH
                                                                           : CUDNN_FMA_MATH;
  MAGMADNN_CUDNN_CHECK(cudnnSetConvolutionMathType(c, widest));
  for (cudnnMathType_t& m : plan->math) m = widest;
  return plan;
}

[[noreturn]] void no_algorithm(const ConvProblem& pr, Pass pass, dtype t) {
  MAGMADNN_THROW(NotSupportedError, "cuDNN offers no " << (deterministic_algorithms() ? "deterministic " : "")
                                                       << dtype_name(t) << " algorithm within "
                                                       << (kMaxWorkspace >> 20) << " MiB of workspace for "
                                                       << pass_name(pass) << " of " << pr.to_string());
}

// Fills in the plan's choice for `pass` (the handle must be the call's).
template <typename T>
void choose(cudnnHandle_t h, CudnnPlan& plan, const ConvProblem& pr, Pass pass) {
  const std::vector<cudnnMathType_t> order = math_order<T>();
  const int i = static_cast<int>(pass);
  if (plan.chosen[i]) return;
  int max = 0, got = 0;
  switch (pass) {
    case Pass::Forward: {
      MAGMADNN_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(max));
      MAGMADNN_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, plan.x.get(), plan.w.get(), plan.conv.get(),
                                                                  plan.y.get(), max, &got, perf.data()));
      const auto* p = pick(perf, got, order);
      if (!p) no_algorithm(pr, pass, dtype_v<T>);
      plan.algo[i] = p->algo, plan.math[i] = p->mathType;
      MAGMADNN_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), p->mathType));
      MAGMADNN_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, plan.x.get(), plan.w.get(), plan.conv.get(),
                                                                   plan.y.get(), p->algo, &plan.work[i]));
      break;
    }
    case Pass::BackwardData: {
      MAGMADNN_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(max));
      MAGMADNN_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, plan.w.get(), plan.y.get(), plan.conv.get(),
                                                                       plan.x.get(), max, &got, perf.data()));
      const auto* p = pick(perf, got, order);
      if (!p) no_algorithm(pr, pass, dtype_v<T>);
      plan.algo[i] = p->algo, plan.math[i] = p->mathType;
      MAGMADNN_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), p->mathType));
      MAGMADNN_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, plan.w.get(), plan.y.get(), plan.conv.get(), plan.x.get(), p->algo, &plan.work[i]));
      break;
    }
    case Pass::BackwardFilter: {
      MAGMADNN_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(max));
      MAGMADNN_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          h, plan.x.get(), plan.y.get(), plan.conv.get(), plan.w.get(), max, &got, perf.data()));
      const auto* p = pick(perf, got, order);
      if (!p) no_algorithm(pr, pass, dtype_v<T>);
      plan.algo[i] = p->algo, plan.math[i] = p->mathType;
      MAGMADNN_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), p->mathType));
      MAGMADNN_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, plan.x.get(), plan.y.get(), plan.conv.get(), plan.w.get(), p->algo, &plan.work[i]));
      break;
    }
  }
  plan.chosen[i] = true;
}

// "device dtype problem": to_string names every size and the whole geometry;
// " tf32" when float may use TF32 (a plan's math types depend on it);
// " det" under deterministic algorithms (so is its choice).
std::string plan_key(int device, dtype t, const ConvProblem& pr) {
  return std::to_string(device) + " " + dtype_name(t) + " " + pr.to_string() +
         (t == dtype::f32 && tf32_math() ? " tf32" : "") + (deterministic_algorithms() ? " det" : "");
}

// Plans of all devices; a device's plans are used and evicted only inside a
// ConvCall on that device (which holds its lock). Never destroyed (see fft_cuda.cu).
class Plans {
 public:
  static Plans& instance() {
    static Plans* plans = new Plans;
    return *plans;
  }
  template <typename T>
  CudnnPlan& get(ConvCall& call, const ConvProblem& pr, Pass pass) {
    const std::string key = plan_key(call.device(), dtype_v<T>, pr);
    const std::string prefix = std::to_string(call.device()) + " ";
    CudnnPlan* plan = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = plans_.find(key);
      if (it == plans_.end()) {
        if (plans_.size() >= kMaxPlans) {
          for (auto e = plans_.begin(); e != plans_.end();)
            e = e->first.starts_with(prefix) ? plans_.erase(e) : std::next(e);
        }
        it = plans_.emplace(key, make_plan<T>(pr)).first;
      }
      plan = it->second.get();
    }
    choose<T>(call.dnn(), *plan, pr, pass);
    return *plan;
  }

 private:
  static constexpr std::size_t kMaxPlans = 256;
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<CudnnPlan>> plans_;
};

bool fits_int(const ConvProblem& pr) {
  // The legacy descriptors take int sizes, and cuDNN's NCHW kernels index
  // tensors with 32-bit offsets.
  const std::int64_t lim = INT_MAX;
  const std::int64_t most = std::max({pr.n * pr.c * pr.h * pr.w, pr.n * pr.k * pr.p * pr.q,
                                      pr.k * (pr.c / pr.geom.groups) * pr.r * pr.s});
  return most <= lim;
}

template <typename T>
class CudnnConv final : public ConvAlgorithm<T> {
 public:
  Algo id() const noexcept override { return Algo::CuDNN; }
  DeviceKind device() const noexcept override { return DeviceKind::CUDA; }
  bool supports(const ConvProblem& pr, Pass) const override { return fits_int(pr); }

  std::size_t workspace_bytes(const ConvProblem& pr, Pass pass) const override {
    if (!has_cuda_device() || !fits_int(pr)) return 0;
    ConvCall call;
    const std::size_t bytes = Plans::instance().get<T>(call, pr, pass).work[static_cast<int>(pass)];
    call.finish();
    return bytes;
  }

  void forward(const ConvProblem& pr, const T* x, const T* w, const T* bias, T* y, void* workspace) override {
    check(pr, Pass::Forward);
    ConvCall call;
    CudnnPlan& p = Plans::instance().get<T>(call, pr, Pass::Forward);
    const int i = static_cast<int>(Pass::Forward);
    void* ws = work_area(call, p, i, workspace);
    const Scale<T> one = 1, zero = 0;
    MAGMADNN_CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv.get(), p.math[i]));
    MAGMADNN_CUDNN_CHECK(cudnnConvolutionForward(call.dnn(), &one, p.x.get(), x, p.w.get(), w, p.conv.get(),
                                                 static_cast<cudnnConvolutionFwdAlgo_t>(p.algo[i]), ws, p.work[i],
                                                 &zero, p.y.get(), y));
    if (bias) MAGMADNN_CUDNN_CHECK(cudnnAddTensor(call.dnn(), &one, p.bias.get(), bias, &one, p.y.get(), y));
    call.finish();
  }

  void backward_data(const ConvProblem& pr, const T* dy, const T* w, T* dx, void* workspace) override {
    check(pr, Pass::BackwardData);
    ConvCall call;
    CudnnPlan& p = Plans::instance().get<T>(call, pr, Pass::BackwardData);
    const int i = static_cast<int>(Pass::BackwardData);
    void* ws = work_area(call, p, i, workspace);
    const Scale<T> one = 1, zero = 0;
    MAGMADNN_CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv.get(), p.math[i]));
    MAGMADNN_CUDNN_CHECK(cudnnConvolutionBackwardData(call.dnn(), &one, p.w.get(), w, p.y.get(), dy, p.conv.get(),
                                                      static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo[i]), ws,
                                                      p.work[i], &zero, p.x.get(), dx));
    call.finish();
  }

  void backward_filter(const ConvProblem& pr, const T* x, const T* dy, T* dw, T* db, void* workspace) override {
    check(pr, Pass::BackwardFilter);
    ConvCall call;
    CudnnPlan& p = Plans::instance().get<T>(call, pr, Pass::BackwardFilter);
    const int i = static_cast<int>(Pass::BackwardFilter);
    void* ws = work_area(call, p, i, workspace);
    const Scale<T> one = 1, zero = 0;
    MAGMADNN_CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv.get(), p.math[i]));
    MAGMADNN_CUDNN_CHECK(cudnnConvolutionBackwardFilter(call.dnn(), &one, p.x.get(), x, p.y.get(), dy, p.conv.get(),
                                                        static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo[i]), ws,
                                                        p.work[i], &zero, p.w.get(), dw));
    if (db) MAGMADNN_CUDNN_CHECK(cudnnConvolutionBackwardBias(call.dnn(), &one, p.y.get(), dy, &zero, p.bias.get(), db));
    call.finish();
  }

 private:
  // The caller's workspace when given (it holds workspace_bytes()), else the pool's.
  static void* work_area(ConvCall& call, const CudnnPlan& p, int i, void* given) {
    return given ? given : call.scratch(p.work[i]);
  }
  void check(const ConvProblem& pr, Pass pass) const {
    MAGMADNN_CHECK(supports(pr, pass), NotSupportedError,
                   "convolution algorithm cudnn does not support " << pass_name(pass) << " of " << pr.to_string()
                                                                   << ": a tensor has more than 2^31-1 elements");
  }
};

const bool registered = [] {
  detail::register_algorithm<float>(std::make_unique<CudnnConv<float>>());
  detail::register_algorithm<double>(std::make_unique<CudnnConv<double>>());
  detail::register_algorithm<half>(std::make_unique<CudnnConv<half>>());
  detail::register_algorithm<bfloat16>(std::make_unique<CudnnConv<bfloat16>>());
  return true;
}();

}  // namespace
}  // namespace magmadnn::conv::cuda

#endif  // MAGMADNN_HAVE_CUDNN

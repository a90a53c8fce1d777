// GPU convolution algorithms (im2col+GEMM, Winograd F(2x2,3x3), cuFFT,
// cuDNN) and GPU pooling, each checked against the CPU reference: the Direct
// algorithm in double on the same inputs (converted from T exactly). Random
// problems cover stride, padding, dilation and groups within what each
// algorithm supports; all three passes, float and double, and half through
// cuDNN.
//
// Without a GPU every case skips with the reason, except the check that the
// CUDA registrations stay invisible (and cost nothing) on such a machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/backend/registry.h"
#include "magmadnn/conv/algorithm.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/pool_impl.h"
#include "magmadnn/core/config.h"
#include "magmadnn/core/errors.h"
#include "support/gpu.h"

using namespace magmadnn;
using namespace magmadnn::conv;

namespace {

// Device memory from the CUDA backend's pool, freed on scope exit.
class DeviceBuf {
 public:
  explicit DeviceBuf(std::size_t bytes)
      : bytes_(bytes), p_(bytes ? cuda_backend().allocate(bytes, 0) : nullptr) {}
  ~DeviceBuf() {
    if (p_) cuda_backend().deallocate(p_, bytes_, 0);
  }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;

  template <typename T>
  static DeviceBuf from(const std::vector<T>& v) {
    DeviceBuf d(v.size() * sizeof(T));
    if (d.bytes_) cuda_backend().copy(d.p_, v.data(), d.bytes_, CopyKind::HostToDevice, 0);
    return d;
  }
  DeviceBuf(DeviceBuf&& o) noexcept : bytes_(o.bytes_), p_(std::exchange(o.p_, nullptr)) {}

  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> v(bytes_ / sizeof(T));
    if (bytes_) cuda_backend().copy(v.data(), p_, bytes_, CopyKind::DeviceToHost, 0);
    return v;
  }

 private:
  std::size_t bytes_;
  void* p_;
};

template <typename T>
std::vector<T> random_vector(std::int64_t n, std::mt19937& gen) {
  std::normal_distribution<double> d(0.0, 1.0);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& e : v) e = static_cast<T>(d(gen));
  return v;
}

std::vector<double> widen(const auto& v) { return std::vector<double>(v.begin(), v.end()); }

// |got - want| <= tol * (1 + max |want|) everywhere; reports the worst element.
template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1, worst = 0;
  std::size_t at = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(static_cast<double>(got[i]) - want[i]);
    if (!(e <= worst)) worst = e, at = i;  // also catches NaN
  }
  EXPECT_LE(worst, tol * scale) << what << ": worst element " << at << " got " << static_cast<double>(got[at])
                                << " want " << want[at];
}

template <typename T>
double tolerance() {
  // Half: the inputs are exact in both runs (the reference widens the same
  // half values), so only the rounding of each result to half (2^-11
  // relative) and float accumulation remain.
  if constexpr (std::is_same_v<T, half>) return 2e-3;
  else return std::is_same_v<T, float> ? 3e-5 : 1e-11;
}

struct Limits {
  bool only_3x3 = false, unit_stride = false, unit_dilation = false;
};

Limits limits_of(Algo a) {
  switch (a) {
    case Algo::WinogradF2x2: return {true, true, true};
    case Algo::FFT: return {false, true, true};
    default: return {};
  }
}

// A random valid problem within the algorithm's limits.
ConvProblem random_problem(std::mt19937& gen, const Limits& lim) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  for (;;) {
    const std::int64_t g = pick(1, 3) == 3 ? 2 : 1;
    const std::int64_t n = pick(1, 3), c = g * pick(1, 3), k = g * pick(1, 4);
    const std::int64_t h = pick(3, 11), w = pick(3, 11);
    const std::int64_t r = lim.only_3x3 ? 3 : pick(1, 4), s = lim.only_3x3 ? 3 : pick(1, 4);
    ConvParams geo;
    geo.pad_h = pick(0, 2), geo.pad_w = pick(0, 2);
    geo.stride_h = lim.unit_stride ? 1 : pick(1, 2), geo.stride_w = lim.unit_stride ? 1 : pick(1, 3);
    geo.dilation_h = lim.unit_dilation ? 1 : pick(1, 2), geo.dilation_w = lim.unit_dilation ? 1 : pick(1, 2);
    geo.groups = g;
    try {
      return make_problem(Shape{n, c, h, w}, Shape{k, c / g, r, s}, geo);
    } catch (const ShapeError&) {
      // kernel larger than the padded image: draw again
    }
  }
}

// The three passes of `pr` through the GPU algorithm in T and Direct in
// double on the CPU, compared; counts the passes `gpu` supports and ran.
template <typename T>
void check_problem(ConvAlgorithm<T>& gpu, const ConvProblem& pr, std::mt19937& gen, int& passes_run) {
  ConvAlgorithm<double>* ref = find_algorithm<double>(Algo::Direct, DeviceKind::CPU);
  ASSERT_NE(ref, nullptr) << "the CPU Direct algorithm is not registered";
  const auto x = random_vector<T>(pr.x_shape().numel(), gen);
  const auto w = random_vector<T>(pr.w_shape().numel(), gen);
  const auto b = random_vector<T>(pr.k, gen);
  const auto dy = random_vector<T>(pr.y_shape().numel(), gen);
  const std::string where = std::string(algo_name(gpu.id())) + " " + pr.to_string();
  auto host_ws = [&](Pass p) { return std::vector<char>(ref->workspace_bytes(pr, p) + 1); };

  if (gpu.supports(pr, Pass::Forward)) {
    std::vector<double> want(static_cast<std::size_t>(pr.y_shape().numel()));
    auto ws = host_ws(Pass::Forward);
    const auto xd = widen(x), wd = widen(w), bd = widen(b);
    ref->forward(pr, xd.data(), wd.data(), bd.data(), want.data(), ws.data());
    DeviceBuf X = DeviceBuf::from(x), W = DeviceBuf::from(w), B = DeviceBuf::from(b);
    DeviceBuf Y(want.size() * sizeof(T)), WS(gpu.workspace_bytes(pr, Pass::Forward));
    gpu.forward(pr, X.as<T>(), W.as<T>(), B.as<T>(), Y.as<T>(), WS.as<void>());
    expect_close(Y.download<T>(), want, tolerance<T>(), where + " forward");
    ++passes_run;
  }
  if (gpu.supports(pr, Pass::BackwardData)) {
    std::vector<double> want(static_cast<std::size_t>(pr.x_shape().numel()));
    auto ws = host_ws(Pass::BackwardData);
    const auto dyd = widen(dy), wd = widen(w);
    ref->backward_data(pr, dyd.data(), wd.data(), want.data(), ws.data());
    DeviceBuf DY = DeviceBuf::from(dy), W = DeviceBuf::from(w);
    // Filled with garbage first: dx must be overwritten, not accumulated into.
    DeviceBuf DX = DeviceBuf::from(random_vector<T>(pr.x_shape().numel(), gen));
    DeviceBuf WS(gpu.workspace_bytes(pr, Pass::BackwardData));
    gpu.backward_data(pr, DY.as<T>(), W.as<T>(), DX.as<T>(), WS.as<void>());
    expect_close(DX.download<T>(), want, tolerance<T>(), where + " backward_data");
    ++passes_run;
  }
  if (gpu.supports(pr, Pass::BackwardFilter)) {
    std::vector<double> want_w(static_cast<std::size_t>(pr.w_shape().numel())), want_b(static_cast<std::size_t>(pr.k));
    auto ws = host_ws(Pass::BackwardFilter);
    const auto xd = widen(x), dyd = widen(dy);
    ref->backward_filter(pr, xd.data(), dyd.data(), want_w.data(), want_b.data(), ws.data());
    DeviceBuf X = DeviceBuf::from(x), DY = DeviceBuf::from(dy);
    DeviceBuf DW = DeviceBuf::from(random_vector<T>(pr.w_shape().numel(), gen));
    DeviceBuf DB = DeviceBuf::from(random_vector<T>(pr.k, gen));
    DeviceBuf WS(gpu.workspace_bytes(pr, Pass::BackwardFilter));
    gpu.backward_filter(pr, X.as<T>(), DY.as<T>(), DW.as<T>(), DB.as<T>(), WS.as<void>());
    expect_close(DW.download<T>(), want_w, tolerance<T>(), where + " backward_filter dw");
    expect_close(DB.download<T>(), want_b, tolerance<T>(), where + " backward_filter db");
    ++passes_run;
  }
}

template <typename T>
void check_algorithm(Algo id, int problems, std::uint32_t seed) {
  ConvAlgorithm<T>* gpu = find_algorithm<T>(id, DeviceKind::CUDA);
  ASSERT_NE(gpu, nullptr) << algo_name(id) << " is not registered for CUDA";
  EXPECT_EQ(gpu->device(), DeviceKind::CUDA);
  std::mt19937 gen(seed);
  int passes_run = 0;
  for (int i = 0; i < problems; ++i) {
    const ConvProblem pr = random_problem(gen, limits_of(id));
    check_problem<T>(*gpu, pr, gen, passes_run);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Every generated problem is within the algorithm's limits, so (bar
  // Winograd's backward data with padding > 2, never drawn) all passes ran.
  EXPECT_EQ(passes_run, 3 * problems) << algo_name(id);
}

}  // namespace

TEST(ConvCuda, RegistrationIsInvisibleWithoutGpu) {
  // The registrars ran at load time; they must not have needed a device, and
  // the registry must hide them when there is none.
  if (has_cuda_device()) {
    for (Algo a : {Algo::Im2colGemm, Algo::WinogradF2x2, Algo::FFT}) {
      EXPECT_NE(find_algorithm<float>(a, DeviceKind::CUDA), nullptr) << algo_name(a);
      EXPECT_NE(find_algorithm<double>(a, DeviceKind::CUDA), nullptr) << algo_name(a);
    }
#if MAGMADNN_HAVE_CUDNN
    EXPECT_NE(find_algorithm<float>(Algo::CuDNN, DeviceKind::CUDA), nullptr);
    EXPECT_NE(find_algorithm<half>(Algo::CuDNN, DeviceKind::CUDA), nullptr);
#endif
    EXPECT_NE(find_pool_impl<float>(DeviceKind::CUDA), nullptr);
  } else {
    EXPECT_TRUE(algorithms<float>(DeviceKind::CUDA).empty());
    EXPECT_TRUE(algorithms<double>(DeviceKind::CUDA).empty());
    EXPECT_TRUE(algorithms<half>(DeviceKind::CUDA).empty());
    EXPECT_EQ(find_pool_impl<float>(DeviceKind::CUDA), nullptr);
    EXPECT_NE(find_algorithm<double>(Algo::Direct, DeviceKind::CPU), nullptr);
  }
}

#define MAGMADNN_CONV_CUDA_CASE(NAME, ALGO, SEED)              \
  TEST(ConvCuda, NAME##Float) {                                \
    MAGMADNN_REQUIRE_GPU();                                    \
    check_algorithm<float>(ALGO, 12, SEED);                    \
  }                                                            \
  TEST(ConvCuda, NAME##Double) {                               \
    MAGMADNN_REQUIRE_GPU();                                    \
    check_algorithm<double>(ALGO, 12, SEED + 1);               \
  }

MAGMADNN_CONV_CUDA_CASE(Im2colMatchesDirect, Algo::Im2colGemm, 101)
MAGMADNN_CONV_CUDA_CASE(WinogradMatchesDirect, Algo::WinogradF2x2, 202)
MAGMADNN_CONV_CUDA_CASE(FftMatchesDirect, Algo::FFT, 303)
#if MAGMADNN_HAVE_CUDNN
MAGMADNN_CONV_CUDA_CASE(CudnnMatchesDirect, Algo::CuDNN, 404)

TEST(ConvCuda, CudnnHalfMatchesDirect) {
  MAGMADNN_REQUIRE_GPU();
  check_algorithm<half>(Algo::CuDNN, 12, 505);
}

TEST(ConvCuda, HalfTensorsRunThroughTheChooser) {
  // The tensor API end to end in half: the chooser measures (filling its
  // random buffers through float), picks cuDNN, and the result matches the
  // float convolution of the same half values.
  MAGMADNN_REQUIRE_GPU();
  ConvParams pad1;
  pad1.pad_h = pad1.pad_w = 1;
  std::mt19937 gen(12);
  const auto xv = random_vector<half>(2 * 3 * 9 * 9, gen), wv = random_vector<half>(4 * 3 * 3 * 3, gen);
  Tensor<half> x({2, 3, 9, 9}, HOST), w({4, 3, 3, 3}, HOST);
  std::copy(xv.begin(), xv.end(), x.mutable_data());
  std::copy(wv.begin(), wv.end(), w.mutable_data());
  const Tensor<half> y = conv2d_forward<half>(x.to(DEVICE), w.to(DEVICE), nullptr, pad1);
  ASSERT_TRUE(y.on_device());
  const auto choice = cached_choice<half>(make_problem(x.shape(), w.shape(), pad1), Pass::Forward, DeviceKind::CUDA);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->algo, Algo::CuDNN);
  const Tensor<float> want = conv2d_forward<float>(x.cast<float>(), w.cast<float>(), nullptr, pad1, Algo::Direct);
  const Tensor<float> got = y.to(HOST).cast<float>();
  std::vector<double> want_v(want.data(), want.data() + want.size());
  expect_close(std::vector<float>(got.data(), got.data() + got.size()), want_v, tolerance<half>(), "half forward");
}
#endif

TEST(ConvCuda, LargerProblemsSpanSeveralBlocksAndFastPaths) {
  // A 1x1 filter takes im2col's no-unfold path; a bigger batch and image
  // exercise larger GEMMs and FFT sizes that are not powers of two.
  MAGMADNN_REQUIRE_GPU();
  std::mt19937 gen(7);
  int passes = 0;
  ConvParams one;
  const ConvProblem pointwise = make_problem(Shape{4, 8, 13, 9}, Shape{6, 8, 1, 1}, one);
  check_problem<float>(*find_algorithm<float>(Algo::Im2colGemm, DeviceKind::CUDA), pointwise, gen, passes);
  ConvParams pad1;
  pad1.pad_h = pad1.pad_w = 1;
  const ConvProblem big = make_problem(Shape{8, 16, 30, 27}, Shape{12, 16, 3, 3}, pad1);
  for (Algo a : {Algo::Im2colGemm, Algo::WinogradF2x2, Algo::FFT})
    check_problem<double>(*find_algorithm<double>(a, DeviceKind::CUDA), big, gen, passes);
  EXPECT_EQ(passes, 12);
}

TEST(ConvCuda, WinogradRejectsWhatItCannotCompute) {
  MAGMADNN_REQUIRE_GPU();
  ConvAlgorithm<float>* wino = find_algorithm<float>(Algo::WinogradF2x2, DeviceKind::CUDA);
  ASSERT_NE(wino, nullptr);
  ConvParams strided;
  strided.stride_h = 2;
  const ConvProblem pr = make_problem(Shape{1, 2, 8, 8}, Shape{2, 2, 3, 3}, strided);
  EXPECT_FALSE(wino->supports(pr, Pass::Forward));
  EXPECT_THROW(wino->forward(pr, nullptr, nullptr, nullptr, nullptr, nullptr), NotSupportedError);
  ConvParams pad3;
  pad3.pad_h = 3;
  const ConvProblem wide = make_problem(Shape{1, 2, 8, 8}, Shape{2, 2, 3, 3}, pad3);
  EXPECT_TRUE(wino->supports(wide, Pass::Forward));
  EXPECT_FALSE(wino->supports(wide, Pass::BackwardData));
  EXPECT_FALSE(find_algorithm<float>(Algo::FFT, DeviceKind::CUDA)->supports(pr, Pass::Forward));
}

TEST(ConvCuda, ChooserPicksAWorkingGpuAlgorithm) {
  MAGMADNN_REQUIRE_GPU();
  ConvParams pad1;
  pad1.pad_h = pad1.pad_w = 1;
  const ConvProblem pr = make_problem(Shape{2, 4, 12, 12}, Shape{8, 4, 3, 3}, pad1);
  std::mt19937 gen(11);
  int passes = 0;
  for (Pass p : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
    ConvAlgorithm<float>& a = choose<float>(pr, p, DeviceKind::CUDA);
    EXPECT_EQ(a.device(), DeviceKind::CUDA) << pass_name(p);
    EXPECT_TRUE(a.supports(pr, p)) << algo_name(a.id());
  }
  check_problem<float>(choose<float>(pr, Pass::Forward, DeviceKind::CUDA), pr, gen, passes);
  EXPECT_GE(passes, 1);
}

// -- pooling ---------------------------------------------------------------------------------------

namespace {

template <typename T>
void check_pool(const Shape& xs, const PoolParams& p, std::vector<T> x, std::mt19937& gen) {
  PoolImpl<T>* gpu = find_pool_impl<T>(DeviceKind::CUDA);
  PoolImpl<double>* cpu = find_pool_impl<double>(DeviceKind::CPU);
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(cpu, nullptr);
  const Shape ys = pool_output_shape(xs, p);
  const auto xd = widen(x);
  std::vector<double> y_ref(static_cast<std::size_t>(ys.numel()));
  std::vector<std::int32_t> arg_ref(y_ref.size());
  cpu->forward(xs, p, xd.data(), y_ref.data(), arg_ref.data());
  const auto dy = random_vector<T>(ys.numel(), gen);
  const auto dyd = widen(dy);
  std::vector<double> dx_ref(static_cast<std::size_t>(xs.numel()));
  cpu->backward(xs, p, xd.data(), dyd.data(), p.mode == PoolMode::Max ? arg_ref.data() : nullptr, dx_ref.data());

  const std::string what = std::string(p.mode == PoolMode::Max ? "max" : "avg") + " pool of " + xs.to_string() +
                           " window " + std::to_string(p.kernel_h) + "x" + std::to_string(p.kernel_w) + " stride " +
                           std::to_string(p.stride_h) + "," + std::to_string(p.stride_w) + " pad " +
                           std::to_string(p.pad_h) + "," + std::to_string(p.pad_w) +
                           (p.count_include_pad ? " incl-pad" : "");
  DeviceBuf X = DeviceBuf::from(x), DY = DeviceBuf::from(dy);
  DeviceBuf Y(y_ref.size() * sizeof(T)), ARG(arg_ref.size() * sizeof(std::int32_t));
  gpu->forward(xs, p, X.as<T>(), Y.as<T>(), p.mode == PoolMode::Max ? ARG.as<std::int32_t>() : nullptr);
  expect_close(Y.download<T>(), y_ref, tolerance<T>(), what + " forward");
  if (p.mode == PoolMode::Max) EXPECT_EQ(ARG.download<std::int32_t>(), arg_ref) << what << " argmax";

  DeviceBuf DX = DeviceBuf::from(random_vector<T>(xs.numel(), gen));  // must be fully overwritten
  gpu->backward(xs, p, X.as<T>(), DY.as<T>(), p.mode == PoolMode::Max ? ARG.as<std::int32_t>() : nullptr,
                DX.as<T>());
  expect_close(DX.download<T>(), dx_ref, tolerance<T>(), what + " backward");
  if (p.mode == PoolMode::Max) {  // and without argmax: the maximum is found again from x
    DeviceBuf DX2 = DeviceBuf::from(random_vector<T>(xs.numel(), gen));
    gpu->backward(xs, p, X.as<T>(), DY.as<T>(), nullptr, DX2.as<T>());
    expect_close(DX2.download<T>(), dx_ref, tolerance<T>(), what + " backward without argmax");
  }
}

template <typename T>
void check_pool_random(std::uint32_t seed) {
  std::mt19937 gen(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  for (int i = 0; i < 24; ++i) {
    PoolParams p;
    p.mode = i % 2 ? PoolMode::Average : PoolMode::Max;
    p.count_include_pad = (i / 2) % 2 == 1;
    p.kernel_h = pick(1, 4), p.kernel_w = pick(1, 4);
    p.stride_h = pick(1, 3), p.stride_w = pick(1, 3);
    p.pad_h = pick(0, p.kernel_h - 1), p.pad_w = pick(0, p.kernel_w - 1);
    const Shape xs{pick(1, 3), pick(1, 4), pick(4, 12), pick(4, 12)};
    check_pool<T>(xs, p, random_vector<T>(xs.numel(), gen), gen);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace

TEST(PoolCuda, MatchesCpuFloat) {
  MAGMADNN_REQUIRE_GPU();
  check_pool_random<float>(5);
}

TEST(PoolCuda, MatchesCpuDouble) {
  MAGMADNN_REQUIRE_GPU();
  check_pool_random<double>(6);
}

TEST(PoolCuda, MaxTiesPickTheFirstElementLikeTheCpu) {
  MAGMADNN_REQUIRE_GPU();
  std::mt19937 gen(9);
  PoolParams p;  // overlapping 3x3 windows over a constant image: every window is one big tie
  p.kernel_h = p.kernel_w = 3;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  const Shape xs{2, 3, 7, 6};
  check_pool<float>(xs, p, std::vector<float>(static_cast<std::size_t>(xs.numel()), 1.5f), gen);
}

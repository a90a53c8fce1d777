// Every CPU algorithm against Direct, all three passes, on hand-picked and
// random shapes (odd sizes, padding, stride, dilation, groups), in double and
// float. Also the problem validation and the registry.
#include <gtest/gtest.h>

#include <sstream>

#include "conv_test_util.h"
#include "magmadnn/conv/sliding_geometry.h"
#include "magmadnn/core/errors.h"

using namespace convtest;

namespace {

struct Case {
  std::int64_t n, c, h, w, k, r, s, ph, pw, sh, sw, dh, dw, g;
};

ConvProblem problem(const Case& c) {
  ConvParams g;
  g.pad_h = c.ph, g.pad_w = c.pw, g.stride_h = c.sh, g.stride_w = c.sw;
  g.dilation_h = c.dh, g.dilation_w = c.dw, g.groups = c.g;
  return make_problem(Shape{c.n, c.c, c.h, c.w}, Shape{c.k, c.c / c.g, c.r, c.s}, g);
}

std::vector<Case> fixed_cases() {
  return {
      {2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},     // odd sizes, 3x3, pad 1
      {1, 4, 11, 6, 6, 3, 3, 0, 2, 1, 1, 1, 1, 2},    // groups, asymmetric padding
      {2, 2, 8, 8, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1},     // padding 3 > 2
      {3, 5, 9, 10, 4, 5, 5, 2, 1, 1, 1, 1, 1, 1},    // 5x5
      {2, 4, 13, 11, 6, 3, 2, 1, 0, 2, 3, 1, 1, 2},   // strides, groups
      {2, 3, 12, 12, 5, 3, 3, 2, 1, 1, 1, 2, 3, 1},   // dilation
      {1, 6, 9, 9, 6, 1, 1, 0, 0, 1, 1, 1, 1, 3},     // pointwise, groups
      {2, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4},   // 3x3 with groups 4
      {1, 2, 17, 15, 3, 7, 7, 3, 3, 1, 1, 1, 1, 1},   // 7x7
      {1, 1, 3, 3, 1, 3, 3, 0, 0, 1, 1, 1, 1, 1},     // one output
      {5, 16, 14, 14, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1},  // several tiles, several images
  };
}

// Random problems (deterministic): any geometry whose output is not empty.
std::vector<Case> random_cases(int count) {
  std::vector<Case> out;
  std::uint64_t s = 2024;
  auto next = [&](std::int64_t lo, std::int64_t hi) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<std::int64_t>((s >> 33) % static_cast<std::uint64_t>(hi - lo + 1));
  };
  while (static_cast<int>(out.size()) < count) {
    Case c;
    c.g = next(1, 3);
    c.n = next(1, 3), c.c = c.g * next(1, 3), c.k = c.g * next(1, 3);
    c.h = next(3, 14), c.w = next(3, 14);
    const bool winograd_like = next(0, 1) == 1;
    c.r = winograd_like ? 3 : next(1, 5), c.s = winograd_like ? 3 : next(1, 5);
    c.ph = next(0, 3), c.pw = next(0, 3);
    c.sh = winograd_like ? 1 : next(1, 3), c.sw = winograd_like ? 1 : next(1, 3);
    c.dh = winograd_like ? 1 : next(1, 2), c.dw = winograd_like ? 1 : next(1, 2);
    if (conv_out_size(c.h, c.r, c.ph, c.sh, c.dh) < 1 || conv_out_size(c.w, c.s, c.pw, c.sw, c.dw) < 1) continue;
    out.push_back(c);
  }
  return out;
}

template <typename T>
void compare_all(const std::vector<Case>& cases, double tol_default, double tol_wino4, int* compared) {
  ConvAlgorithm<T>* direct = find_algorithm<T>(Algo::Direct, DeviceKind::CPU);
  ASSERT_NE(direct, nullptr);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const ConvProblem pr = problem(cases[i]);
    const Passes<T> ref = run_all(*direct, pr, 100 + i);
    for (ConvAlgorithm<T>* a : algorithms<T>(DeviceKind::CPU)) {
      if (a->id() == Algo::Direct) continue;
      const Passes<T> got = run_all(*a, pr, 100 + i);
      const double tol = a->id() == Algo::WinogradF4x4 ? tol_wino4 : tol_default;
      const std::string what = std::string(algo_name(a->id())) + " on " + pr.to_string();
      if (a->supports(pr, Pass::Forward)) {
        EXPECT_LE(rel_err(got.y, ref.y), tol) << "forward, " << what;
        ++*compared;
      }
      if (a->supports(pr, Pass::BackwardData)) {
        EXPECT_LE(rel_err(got.dx, ref.dx), tol) << "backward data, " << what;
        ++*compared;
      }
      if (a->supports(pr, Pass::BackwardFilter)) {
        EXPECT_LE(rel_err(got.dw, ref.dw), tol) << "backward filter, " << what;
        EXPECT_LE(rel_err(got.db, ref.db), tol) << "bias gradient, " << what;
        ++*compared;
      }
    }
  }
}

}  // namespace

TEST(ConvAlgorithms, RegistryListsTheCpuAlgorithmsInOrder) {
  auto algos = algorithms<double>(DeviceKind::CPU);
  ASSERT_GE(algos.size(), 4u);
  EXPECT_EQ(algos[0]->id(), Algo::Direct);
  EXPECT_EQ(algos[1]->id(), Algo::Im2colGemm);
  EXPECT_NE(find_algorithm<float>(Algo::WinogradF2x2, DeviceKind::CPU), nullptr);
  EXPECT_NE(find_algorithm<float>(Algo::WinogradF4x4, DeviceKind::CPU), nullptr);
#if MAGMADNN_HAVE_FFTW
  EXPECT_NE(find_algorithm<double>(Algo::FFT, DeviceKind::CPU), nullptr);
#endif
  EXPECT_EQ(find_algorithm<double>(Algo::CuDNN, DeviceKind::CPU), nullptr);
  for (auto* a : algos) EXPECT_EQ(a->device(), DeviceKind::CPU);
}

TEST(ConvAlgorithms, SupportedShapes) {
  auto* w4 = find_algorithm<double>(Algo::WinogradF4x4, DeviceKind::CPU);
  EXPECT_TRUE(w4->supports(problem({1, 2, 8, 8, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1}), Pass::Forward));
  EXPECT_FALSE(w4->supports(problem({1, 2, 8, 8, 2, 5, 5, 1, 1, 1, 1, 1, 1, 1}), Pass::Forward));
  EXPECT_FALSE(w4->supports(problem({1, 2, 8, 8, 2, 3, 3, 1, 1, 2, 2, 1, 1, 1}), Pass::BackwardData));
  EXPECT_FALSE(w4->supports(problem({1, 2, 8, 8, 2, 3, 3, 2, 2, 1, 1, 2, 2, 1}), Pass::BackwardFilter));
  if (auto* fft = find_algorithm<double>(Algo::FFT, DeviceKind::CPU)) {
    EXPECT_TRUE(fft->supports(problem({1, 2, 9, 9, 2, 7, 7, 3, 3, 1, 1, 1, 1, 1}), Pass::Forward));
    EXPECT_FALSE(fft->supports(problem({1, 2, 9, 9, 2, 3, 3, 3, 3, 2, 2, 1, 1, 1}), Pass::Forward));
  }
}

TEST(ConvAlgorithms, EveryAlgorithmMatchesDirectInDouble) {
  int compared = 0;
  compare_all<double>(fixed_cases(), 1e-10, 1e-10, &compared);
  EXPECT_GE(compared, 60);  // fixed cases x algorithms x passes actually compared
}

TEST(ConvAlgorithms, EveryAlgorithmMatchesDirectOnRandomShapesInDouble) {
  int compared = 0;
  compare_all<double>(random_cases(24), 1e-10, 1e-10, &compared);
  EXPECT_GE(compared, 100);
}

TEST(ConvAlgorithms, EveryAlgorithmMatchesDirectInFloat) {
  int compared = 0;
  // Winograd F(4x4)'s transforms have entries up to 8 and 1/24, so float loses ~3 digits more.
  compare_all<float>(fixed_cases(), 2e-5, 2e-3, &compared);
  compare_all<float>(random_cases(12), 2e-5, 2e-3, &compared);
  EXPECT_GE(compared, 100);
}

// Sliding's blocking edges, against Direct: rows of 1, 16, 17 and 70 columns
// (a partial vector, several 4-vector chunks), output-channel counts that
// leave partial blocks (5, 10, 15), kernels wider than its 8-tap block (9, 11),
// groups, and padding up to the kernel's size less one (the most its data
// gradient takes). The LeNet-5 layers are among them.
TEST(ConvAlgorithms, SlidingMatchesDirectAcrossItsBlockingEdges) {
  const std::vector<Case> cases = {
      {4, 1, 28, 28, 6, 5, 5, 2, 2, 1, 1, 1, 1, 1},    // LeNet-5 conv1
      {4, 6, 14, 14, 16, 5, 5, 0, 0, 1, 1, 1, 1, 1},   // LeNet-5 conv2
      {2, 3, 9, 70, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},     // 70 columns: 5 vectors, two chunks
      {2, 2, 6, 17, 10, 3, 3, 0, 1, 1, 1, 1, 1, 1},    // 17 columns, blocks of 10
      {1, 2, 5, 18, 15, 1, 1, 0, 0, 1, 1, 1, 1, 1},    // 1x1, 16-column output plus 2, 15 channels
      {2, 4, 7, 24, 6, 3, 9, 1, 8, 1, 1, 1, 1, 2},     // 9 taps wide (8 + 1), groups, pad = S - 1
      {1, 3, 12, 20, 4, 11, 11, 10, 5, 1, 1, 1, 1, 1},  // 11x11, pad = R - 1
      {3, 16, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1},     // 16 channels, the most it takes
  };
  for (const int isa : {4, 3, 0}) {  // AVX-512, AVX2 and baseline kernels, as far as this CPU has them
    sliding::set_isa_cap(isa);
    for (const auto fk : {sliding::FilterKernel::Rows, sliding::FilterKernel::Channels}) {
      sliding::set_filter_kernel(fk);
      for (const bool dbl : {true, false}) {
        for (const Case& c : cases) {
          const ConvProblem pr = problem(c);
          auto check = [&](auto zero) {
            using T = decltype(zero);
            ConvAlgorithm<T>* sl = find_algorithm<T>(Algo::Sliding, DeviceKind::CPU);
            ASSERT_NE(sl, nullptr);
            for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter})
              EXPECT_TRUE(sl->supports(pr, pass)) << pass_name(pass) << " " << pr.to_string();
            const Passes<T> ref = run_all(*find_algorithm<T>(Algo::Direct, DeviceKind::CPU), pr, 7);
            const Passes<T> got = run_all(*sl, pr, 7);
            const double tol = dbl ? 1e-12 : 2e-6;
            const std::string what = pr.to_string() + ", isa level " + std::to_string(isa) +
                                     (fk == sliding::FilterKernel::Rows ? ", row" : ", channel") + " filter kernel";
            EXPECT_LE(rel_err(got.y, ref.y), tol) << "forward " << what;
            EXPECT_LE(rel_err(got.dx, ref.dx), tol) << "backward data " << what;
            EXPECT_LE(rel_err(got.dw, ref.dw), tol) << "backward filter " << what;
            EXPECT_LE(rel_err(got.db, ref.db), tol) << "bias gradient " << what;
          };
          if (dbl) check(0.0);
          else check(0.0f);
        }
      }
    }
  }
  sliding::set_isa_cap(4);
  sliding::set_filter_kernel(sliding::FilterKernel::Auto);
  // Outside its shapes: strides, dilation, 17 channels per group, and a data
  // gradient whose padding exceeds the kernel's size less one.
  auto* sl = find_algorithm<float>(Algo::Sliding, DeviceKind::CPU);
  EXPECT_FALSE(sl->supports(problem({1, 2, 9, 9, 2, 3, 3, 1, 1, 2, 1, 1, 1, 1}), Pass::Forward));
  EXPECT_FALSE(sl->supports(problem({1, 2, 9, 9, 2, 3, 3, 1, 1, 1, 1, 1, 2, 1}), Pass::BackwardFilter));
  EXPECT_FALSE(sl->supports(problem({1, 17, 9, 9, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1}), Pass::Forward));
  EXPECT_TRUE(sl->supports(problem({1, 32, 9, 9, 2, 3, 3, 1, 1, 1, 1, 1, 1, 2}), Pass::Forward));
  EXPECT_FALSE(sl->supports(problem({1, 2, 9, 9, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1}), Pass::BackwardData));
  EXPECT_FALSE(sl->supports(problem({1, 2, 9, 9, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1}), Pass::BackwardData));
  EXPECT_TRUE(sl->supports(problem({1, 2, 9, 9, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1}), Pass::Forward));
}

// The channel-vectorised filter kernel past one block of output channels:
// 20 and 34 per group (a full block and a partial one), taps split into
// several blocks (7x9, 1x13), a single image, and padding, on every
// instruction set. Only the filter pass: the others take at most 16.
TEST(ConvAlgorithms, SlidingChannelFilterKernelCoversChannelAndTapBlocks) {
  const std::vector<Case> cases = {
      {2, 3, 8, 9, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {1, 4, 12, 14, 68, 7, 9, 3, 4, 1, 1, 1, 1, 2},
      {3, 2, 5, 20, 17, 1, 13, 0, 6, 1, 1, 1, 1, 1},
  };
  sliding::set_filter_kernel(sliding::FilterKernel::Channels);
  for (const int isa : {4, 3, 0}) {
    sliding::set_isa_cap(isa);
    for (const Case& c : cases) {
      const ConvProblem pr = problem(c);
      auto check = [&](auto zero, double tol) {
        using T = decltype(zero);
        ConvAlgorithm<T>* sl = find_algorithm<T>(Algo::Sliding, DeviceKind::CPU);
        ASSERT_TRUE(sl->supports(pr, Pass::BackwardFilter)) << pr.to_string();
        const Passes<T> ref = run_all(*find_algorithm<T>(Algo::Direct, DeviceKind::CPU), pr, 11);
        const Passes<T> got = run_all(*sl, pr, 11);
        const std::string what = pr.to_string() + ", isa level " + std::to_string(isa);
        EXPECT_LE(rel_err(got.dw, ref.dw), tol) << what;
        EXPECT_LE(rel_err(got.db, ref.db), tol) << what;
      };
      check(0.0, 1e-12);
      check(0.0f, 2e-6);
    }
  }
  sliding::set_isa_cap(4);
  sliding::set_filter_kernel(sliding::FilterKernel::Auto);
  // Auto: LeNet-5's conv2 (16 channels, 10 columns) takes the channel kernel,
  // its conv1 (6 channels, 28 columns) the row kernel.
  EXPECT_EQ(sliding::filter_kernel_for(16, 10, 16), sliding::FilterKernel::Channels);
  EXPECT_EQ(sliding::filter_kernel_for(6, 28, 16), sliding::FilterKernel::Rows);
}

// The fused ReLU equals the plain forward pass clipped at zero, bit for bit
// (the same sums, then max(y, 0)), and clips something.
TEST(ConvAlgorithms, SlidingForwardReluIsTheForwardPassClipped) {
  const ConvProblem pr = problem({3, 2, 11, 37, 7, 3, 5, 1, 2, 1, 1, 1, 1, 1});
  auto* sl = find_algorithm<float>(Algo::Sliding, DeviceKind::CPU);
  const auto x = random_vec<float>(pr.x_shape().numel(), 1), w = random_vec<float>(pr.w_shape().numel(), 2);
  const auto b = random_vec<float>(pr.k, 3);
  std::vector<float> y(pr.y_shape().numel()), yr(y.size(), 7.0f);
  std::vector<unsigned char> ws(sl->workspace_bytes(pr, Pass::Forward));
  sl->forward(pr, x.data(), w.data(), b.data(), y.data(), ws.data());
  ASSERT_TRUE(sl->forward_relu(pr, x.data(), w.data(), b.data(), yr.data(), ws.data()));
  std::size_t clipped = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(yr[i], y[i] > 0 ? y[i] : 0.0f) << i;
    clipped += y[i] < 0;
  }
  EXPECT_GT(clipped, y.size() / 4);
}

TEST(ConvAlgorithms, DirectMatchesAHandComputedValue) {
  // x = 1..9 in a 3x3 plane, w = [[1, 0], [0, -1]]: y[p, q] = x[p, q] - x[p+1, q+1] = -4 everywhere.
  const ConvProblem pr = problem({1, 1, 3, 3, 1, 2, 2, 0, 0, 1, 1, 1, 1, 1});
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 0, 0, -1}, b = {0.5}, y(4);
  find_algorithm<double>(Algo::Direct, DeviceKind::CPU)->forward(pr, x.data(), w.data(), b.data(), y.data(), nullptr);
  for (double v : y) EXPECT_DOUBLE_EQ(v, -3.5);
}

TEST(ConvProblem, ValidationNamesTheShapes) {
  ConvParams g;
  try {
    make_problem(Shape{2, 3, 8, 8}, Shape{4, 2, 3, 3}, g);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("{2, 3, 8, 8}"), std::string::npos) << m;
    EXPECT_NE(m.find("{4, 2, 3, 3}"), std::string::npos) << m;
  }
  EXPECT_THROW(make_problem(Shape{2, 3, 2, 2}, Shape{4, 3, 5, 5}, g), ShapeError);  // empty output
  EXPECT_THROW(make_problem(Shape{2, 3, 8}, Shape{4, 3, 3, 3}, g), ShapeError);     // not 4-D
  g.groups = 2;
  EXPECT_THROW(make_problem(Shape{2, 3, 8, 8}, Shape{4, 1, 3, 3}, g), ShapeError);  // 3 channels, 2 groups
  g = {};
  g.pad_h = 1, g.stride_h = 2, g.dilation_w = 2;
  const ConvProblem pr = make_problem(Shape{1, 1, 8, 9}, Shape{1, 1, 3, 3}, g);
  EXPECT_EQ(pr.p, 4);  // (8 + 2 - 3) / 2 + 1
  EXPECT_EQ(pr.q, 5);  // 9 - 2*2 = 5
  EXPECT_EQ(pr.to_string(), "n1 c1 h8 w9 k1 r3 s3 pad1,0 str2,1 dil1,2 g1");
  EXPECT_DOUBLE_EQ(pr.macs(), 4.0 * 5 * 9);
}

TEST(ConvAlgo, NamesRoundTrip) {
  for (Algo a : {Algo::Auto, Algo::Direct, Algo::Im2colGemm, Algo::WinogradF2x2, Algo::WinogradF4x4, Algo::FFT,
                 Algo::CuDNN}) {
    EXPECT_EQ(parse_algo(algo_name(a)), a);
  }
  EXPECT_STREQ(pass_name(Pass::BackwardFilter), "backward_filter");
}

// The chooser: the timing rounds, measured choice and cache, forcing by argument, API and
// environment, errors for bad and unsupported forced algorithms, the cache
// file round trip, and the workspace limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/timing.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/core/errors.h"

using namespace magmadnn;
using namespace magmadnn::conv;

namespace {

ConvProblem p3x3() {
  ConvParams g;
  g.pad_h = g.pad_w = 1;
  return make_problem(Shape{2, 8, 12, 12}, Shape{8, 8, 3, 3}, g);
}
ConvProblem p5x5() { return make_problem(Shape{1, 2, 9, 9}, Shape{2, 2, 5, 5}, ConvParams{}); }

// Leaves the chooser as it found it: no force, no file, default limit, empty cache.
class Chooser : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }
  static void reset() {
    unsetenv("MAGMADNN_CONV_ALGO");
    set_forced_algorithm(Algo::Auto);
    set_cache_file("");
    set_workspace_limit(std::size_t{1} << 30);
    clear_choices();
  }
  std::string tmp(const char* name) {
    auto p = std::filesystem::temp_directory_path() / (std::string("magmadnn_conv_") + name + "_" +
                                                        std::to_string(::getpid()));
    std::filesystem::remove(p);
    return p.string();
  }
};

}  // namespace

TEST_F(Chooser, MeasuresOnceAndPicksTheFastestCandidate) {
  const ConvProblem pr = p3x3();
  EXPECT_FALSE(cached_choice<double>(pr, Pass::Forward, DeviceKind::CPU).has_value());
  ConvAlgorithm<double>& a = choose<double>(pr, Pass::Forward, DeviceKind::CPU);
  auto c = cached_choice<double>(pr, Pass::Forward, DeviceKind::CPU);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->source, Choice::Source::Measured);
  EXPECT_EQ(c->algo, a.id());
  // Every CPU algorithm supports this small 3x3 problem (Direct too: it is small).
  EXPECT_EQ(c->times.size(), algorithms<double>(DeviceKind::CPU).size());
  for (auto& [algo, t] : c->times) {
    EXPECT_GT(t, 0.0);
    EXPECT_LE(c->seconds, t) << algo_name(algo);
  }
  // Other passes and types are separate keys.
  EXPECT_FALSE(cached_choice<double>(pr, Pass::BackwardData, DeviceKind::CPU).has_value());
  EXPECT_FALSE(cached_choice<float>(pr, Pass::Forward, DeviceKind::CPU).has_value());
  // A second call is served from the cache (same object, no new entry).
  EXPECT_EQ(&choose<double>(pr, Pass::Forward, DeviceKind::CPU), &a);
}

// Deterministic algorithms: a fixed order, nothing timed or cached. float
// takes oneDNN (supports every problem here); double, which oneDNN does not
// compute, takes FFT on a 5x5 kernel and Winograd F(4x4) on a 3x3 one.
TEST_F(Chooser, DeterministicPicksByAFixedOrderWithoutTiming) {
  const DeterministicScope on(true);
  EXPECT_EQ(choose<float>(p3x3(), Pass::Forward, DeviceKind::CPU).id(), Algo::OneDNN);
  EXPECT_EQ(choose<float>(p5x5(), Pass::BackwardFilter, DeviceKind::CPU).id(), Algo::OneDNN);
  EXPECT_EQ(choose<double>(p5x5(), Pass::Forward, DeviceKind::CPU).id(), Algo::FFT);
  EXPECT_EQ(choose<double>(p3x3(), Pass::BackwardData, DeviceKind::CPU).id(), Algo::WinogradF4x4);
  EXPECT_FALSE(cached_choice<float>(p3x3(), Pass::Forward, DeviceKind::CPU).has_value());
  EXPECT_FALSE(cached_choice<double>(p5x5(), Pass::Forward, DeviceKind::CPU).has_value());
  // A force still wins over the fixed order.
  EXPECT_EQ(choose<float>(p3x3(), Pass::Forward, DeviceKind::CPU, 0, Algo::Im2colGemm).id(), Algo::Im2colGemm);
}

TEST_F(Chooser, DirectIsNotTimedOnLargeProblems) {
  ConvParams g;
  g.pad_h = g.pad_w = 1;
  const ConvProblem big = make_problem(Shape{8, 32, 32, 32}, Shape{32, 32, 3, 3}, g);
  ASSERT_GT(big.macs(), kDirectTimingMacs);
  choose<float>(big, Pass::Forward, DeviceKind::CPU);
  auto c = cached_choice<float>(big, Pass::Forward, DeviceKind::CPU);
  ASSERT_TRUE(c.has_value());
  for (auto& [algo, t] : c->times) EXPECT_NE(algo, Algo::Direct);
  EXPECT_NE(c->algo, Algo::Direct);
}

TEST_F(Chooser, ForcingByArgumentApiAndEnvironment) {
  const ConvProblem pr = p3x3();
  EXPECT_EQ(choose<double>(pr, Pass::Forward, DeviceKind::CPU, 0, Algo::WinogradF2x2).id(), Algo::WinogradF2x2);
  set_forced_algorithm(Algo::Im2colGemm);
  EXPECT_EQ(forced_algorithm(), Algo::Im2colGemm);
  EXPECT_EQ(choose<double>(pr, Pass::BackwardData, DeviceKind::CPU).id(), Algo::Im2colGemm);
  // The argument beats the API force.
  EXPECT_EQ(choose<double>(pr, Pass::Forward, DeviceKind::CPU, 0, Algo::Direct).id(), Algo::Direct);
  set_forced_algorithm(Algo::Auto);
  setenv("MAGMADNN_CONV_ALGO", "winograd_f4x4", 1);
  EXPECT_EQ(forced_algorithm(), Algo::WinogradF4x4);
  EXPECT_EQ(choose<float>(pr, Pass::BackwardFilter, DeviceKind::CPU).id(), Algo::WinogradF4x4);
  // The API force beats the environment.
  set_forced_algorithm(Algo::Direct);
  EXPECT_EQ(choose<float>(pr, Pass::BackwardFilter, DeviceKind::CPU).id(), Algo::Direct);
  // Forced choices are not cached.
  EXPECT_FALSE(cached_choice<float>(pr, Pass::BackwardFilter, DeviceKind::CPU).has_value());
}

TEST_F(Chooser, BadAlgorithmNameIsAValueErrorListingTheNames) {
  try {
    parse_algo("winograd");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'winograd'"), std::string::npos) << m;
    EXPECT_NE(m.find("winograd_f4x4"), std::string::npos) << m;
    EXPECT_NE(m.find("im2col"), std::string::npos) << m;
  }
  setenv("MAGMADNN_CONV_ALGO", "fastest-please", 1);
  try {
    choose<double>(p3x3(), Pass::Forward, DeviceKind::CPU);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("MAGMADNN_CONV_ALGO"), std::string::npos) << e.what();
  }
}

TEST_F(Chooser, UnsupportedForcedAlgorithmNamesAlgorithmAndProblem) {
  const ConvProblem pr = p5x5();
  try {
    choose<double>(pr, Pass::Forward, DeviceKind::CPU, 0, Algo::WinogradF4x4);
    FAIL() << "expected NotSupportedError";
  } catch (const NotSupportedError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("winograd_f4x4"), std::string::npos) << m;
    EXPECT_NE(m.find(pr.to_string()), std::string::npos) << m;
  }
  EXPECT_THROW(choose<double>(pr, Pass::Forward, DeviceKind::CPU, 0, Algo::CuDNN), NotSupportedError);
  set_forced_algorithm(Algo::WinogradF2x2);
  EXPECT_THROW(choose<float>(pr, Pass::BackwardData, DeviceKind::CPU), NotSupportedError);
}

TEST_F(Chooser, CacheFileRoundTrip) {
  const std::string path = tmp("cache");
  set_cache_file(path);
  EXPECT_EQ(cache_file(), path);
  const ConvProblem pr = p3x3();
  const Algo first = choose<double>(pr, Pass::BackwardFilter, DeviceKind::CPU).id();
  {
    std::ifstream in(path);
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_NE(line.find(pr.to_string()), std::string::npos) << line;
    EXPECT_NE(line.find("backward_filter"), std::string::npos) << line;
    EXPECT_NE(line.find(algo_name(first)), std::string::npos) << line;
  }
  clear_choices();  // a new process, as far as the cache is concerned
  EXPECT_EQ(choose<double>(pr, Pass::BackwardFilter, DeviceKind::CPU).id(), first);
  auto c = cached_choice<double>(pr, Pass::BackwardFilter, DeviceKind::CPU);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->source, Choice::Source::CacheFile);

  // A file naming another algorithm is obeyed (proof that it is read, not re-measured).
  const std::string forced_path = tmp("forced");
  {
    std::ofstream out(forced_path);
    out << "cpu\tfloat64\tforward\t" << pr.to_string() << "\twinograd_f2x2\t0.5\n";
  }
  set_cache_file(forced_path);
  EXPECT_EQ(choose<double>(pr, Pass::Forward, DeviceKind::CPU).id(), Algo::WinogradF2x2);
  // A smaller batch of that layer (an epoch's last) takes the file's choice too, unmeasured.
  ConvProblem last = pr;
  last.n = 1;
  EXPECT_EQ(choose<double>(last, Pass::Forward, DeviceKind::CPU).id(), Algo::WinogradF2x2);
  auto lc = cached_choice<double>(last, Pass::Forward, DeviceKind::CPU);
  ASSERT_TRUE(lc.has_value());
  EXPECT_EQ(lc->source, Choice::Source::CacheFile);
  EXPECT_TRUE(lc->times.empty());

  std::filesystem::remove(path);
  std::filesystem::remove(forced_path);
}

TEST_F(Chooser, MalformedCacheFileIsAnIOErrorNamingFileAndLine) {
  const std::string path = tmp("bad");
  {
    std::ofstream out(path);
    out << "# comment\n" << "cpu\tfloat64\tforward\tn1 c1\n";
  }
  set_cache_file(path);
  try {
    choose<double>(p3x3(), Pass::Forward, DeviceKind::CPU);
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST_F(Chooser, EnvironmentNamesTheCacheFile) {
  const std::string path = tmp("env");
  setenv("MAGMADNN_CONV_CACHE", path.c_str(), 1);
  reset_cache_file();  // SetUp's set_cache_file("") overrode the environment
  EXPECT_EQ(cache_file(), path);
  choose<float>(p5x5(), Pass::Forward, DeviceKind::CPU);
  EXPECT_TRUE(std::filesystem::exists(path));
  unsetenv("MAGMADNN_CONV_CACHE");
  std::filesystem::remove(path);
}

TEST_F(Chooser, WorkspaceLimitExcludesCandidates) {
  set_workspace_limit(0);
  // Only Direct needs no workspace for a 3x3 layer.
  EXPECT_EQ(choose<double>(p3x3(), Pass::Forward, DeviceKind::CPU).id(), Algo::Direct);
  auto c = cached_choice<double>(p3x3(), Pass::Forward, DeviceKind::CPU);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->times.size(), 1u);
  EXPECT_EQ(workspace_limit(), 0u);
}

TEST_F(Chooser, SmallerBatchOfAMeasuredLayerReusesItsChoice) {
  ConvProblem big = p3x3();
  const Algo first = choose<double>(big, Pass::Forward, DeviceKind::CPU).id();
  ConvProblem last = big;
  last.n = std::max<std::int64_t>(1, big.n / 2);  // an epoch's partial last batch
  EXPECT_EQ(choose<double>(last, Pass::Forward, DeviceKind::CPU).id(), first);
  auto c = cached_choice<double>(last, Pass::Forward, DeviceKind::CPU);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->algo, first);
  // A larger batch than any measured is measured afresh.
  ConvProblem larger = big;
  larger.n = big.n * 2;
  choose<double>(larger, Pass::Forward, DeviceKind::CPU);
  auto l = cached_choice<double>(larger, Pass::Forward, DeviceKind::CPU);
  ASSERT_TRUE(l.has_value());
  EXPECT_FALSE(l->times.empty());
}

namespace {

// A stand-in algorithm that takes a set time per call, counts its calls and
// looks at the inputs it is timed on. It sleeps rather than spins: a spin
// sharing a CPU with another test's process was stretched past a ratio by
// the scheduler's time slices, in the same call of every attempt (CI's
// bare-Debian run), while a sleeper is woken on time.
class Paced : public ConvAlgorithm<float> {
 public:
  Paced(Algo id, double ms) : id_(id), ms_(ms) {}
  Algo id() const noexcept override { return id_; }
  DeviceKind device() const noexcept override { return DeviceKind::CPU; }
  bool supports(const ConvProblem&, Pass) const override { return true; }
  std::size_t workspace_bytes(const ConvProblem&, Pass) const override { return 0; }
  void forward(const ConvProblem& pr, const float* x, const float*, const float*, float*, void*) override {
    ++calls;
    const std::int64_t n = pr.x_shape().numel();
    lo = *std::min_element(x, x + n), hi = *std::max_element(x, x + n);
    zeros = std::count(x, x + n, 0.0f);
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms_));
  }
  void backward_data(const ConvProblem&, const float*, const float*, float*, void*) override {}
  void backward_filter(const ConvProblem&, const float*, const float*, float*, float*, void*) override {}
  int calls = 0;
  float lo = 0, hi = 0;
  std::int64_t zeros = -1;

 private:
  Algo id_;
  double ms_;
};

}  // namespace

// After min_rounds, a candidate 1.25x the leader or slower stops being
// timed (settle_ratio), while one within 25% goes on to max_rounds; the
// 2x drop applies from the first round. Each candidate has one warm-up.
// The paces only lengthen under load, and a preemption in the wrong call
// moves a candidate across a ratio, so one attempt in three must give the
// exact counts. The paces are tens of milliseconds: at 2 ms a CI machine
// under ASan and a load of 11 on 2 cores gave [2 2 2 2] three times (the
// pass over the input, instrumented, and the preemptions outweighed the
// sleeps).
TEST(TimingRounds, AClearWinnerEndsTheRoundsEarlyAndCloseOnesGoOn) {
  constexpr double ms = 10.0;  // the pace unit
  // A problem with an x of 8 * 3 * 33 * 33 = 26,136 values: several tiles of the filled pattern.
  const ConvProblem pr = make_problem(Shape{8, 3, 33, 33}, Shape{4, 3, 3, 3}, ConvParams{});
  const TimingRounds rounds{.max_rounds = 5, .min_rounds = 2, .drop_ratio = 2.0, .settle_ratio = 1.25};
  std::string seen;
  bool exact = false;
  for (int attempt = 0; attempt < 3 && !exact; ++attempt) {
    Paced lead(Algo::Direct, 2.0 * ms), close(Algo::Im2colGemm, 2.1 * ms), behind(Algo::FFT, 3.1 * ms),
        far(Algo::OneDNN, 6.0 * ms);
    const auto t = time_algorithms<float>({&lead, &close, &behind, &far}, pr, Pass::Forward, DeviceKind::CPU, 0,
                                          rounds);
    for (std::size_t i = 0; i < t.size(); ++i) ASSERT_TRUE(t[i].has_value()) << i;
    // warm-up + 5 rounds; within 25%: every round; warm-up + the 2 rounds
    // before settling; warm-up + 1 round (2x behind after the first).
    exact = lead.calls == 6 && close.calls == 6 && behind.calls == 3 && far.calls == 2;
    seen += " [" + std::to_string(lead.calls) + " " + std::to_string(close.calls) + " " +
            std::to_string(behind.calls) + " " + std::to_string(far.calls) + "]";
    // The inputs are numbers in [-1, 1), none of them zero, and not one value repeated.
    EXPECT_GE(lead.lo, -1.0f);
    EXPECT_LT(lead.hi, 1.0f);
    EXPECT_LT(lead.lo, -0.9f);
    EXPECT_GT(lead.hi, 0.9f);
    EXPECT_EQ(lead.zeros, 0);
  }
  EXPECT_TRUE(exact) << "calls (lead close behind far) per attempt:" << seen << "; expected [6 6 3 2]";
  // Without settle_ratio, a 1.55x candidate is timed in every round (the
  // same three attempts: one slow call of the leader's can push it past 2x).
  std::string seen_plain;
  bool every_round = false;
  for (int attempt = 0; attempt < 3 && !every_round; ++attempt) {
    Paced lead(Algo::Direct, 2.0 * ms), behind(Algo::FFT, 3.1 * ms);
    (void)time_algorithms<float>({&lead, &behind}, pr, Pass::Forward, DeviceKind::CPU, 0,
                                 TimingRounds{.max_rounds = 4, .min_rounds = 2, .drop_ratio = 2.0});
    every_round = behind.calls == 5;
    seen_plain += " " + std::to_string(behind.calls);
  }
  EXPECT_TRUE(every_round) << "calls of the 1.55x candidate per attempt:" << seen_plain << "; expected 5";
}

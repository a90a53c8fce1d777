// The "ps" strategy's phase times (magmadnn/parallel/ps_strategy.h,
// SHM-Learn-Dist §6): over a short training on 3 ranks as threads of this
// process, every step is counted, gathering and broadcasting take time on
// every rank, averaging on the server, and the three add up to the
// strategy's communication seconds.
#include <cmath>
#include <exception>
#include <thread>

#include "magmadnn/comm/thread_communicator.h"
#include "magmadnn/parallel/ps_strategy.h"
#include "magmadnn/parallel/strategy_registry.h"
#include "strategy_test_util.h"

namespace {

using namespace magmadnn;
using namespace stest;

TEST(PsPhases, GatheringAveragingAndBroadcastingAddUpToTheCommunication) {
  constexpr int kRanks = 3;
  constexpr std::int64_t kGlobalBatch = 24, kRows = 96;
  auto group = distributed::make_thread_group(kRanks);
  std::vector<distributed::PsPhaseTiming> phases(kRanks);
  std::vector<distributed::StepTiming> timings(kRanks);
  std::vector<std::exception_ptr> errors(kRanks);
  // The networks are built here, one after the other (the seed is global);
  // attach gives every rank the server's weights.
  std::vector<std::unique_ptr<model::NeuralNetwork<double>>> nets;
  std::vector<Tensor<double>> xs, ys;
  Tensor<double> x, y;
  blobs<double>(kRows, 6, 3, x, y, 5);
  for (int r = 0; r < kRanks; ++r) {
    set_seed(11 + static_cast<unsigned>(r));
    model::nn_params_t p{kGlobalBatch / kRanks, 2, 0.1};
    p.shuffle = false;
    nets.push_back(std::make_unique<model::NeuralNetwork<double>>(mlp<double>(6, {8}, 3), optimizer::CROSS_ENTROPY,
                                                                  optimizer::SGD, p));
    xs.push_back(shard(x, kGlobalBatch, kRanks, r));
    ys.push_back(shard(y, kGlobalBatch, kRanks, r));
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      const auto i = static_cast<std::size_t>(r);
      try {
        distributed::PsStrategy<double> ps(group[i], {});
        ps.attach(*nets[i]);
        model::FitOptions<double> fo;
        nets[i]->fit(xs[i], ys[i], fo);
        ps.finalize();
        phases[i] = ps.phases();
        timings[i] = ps.timing();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (int r = 0; r < kRanks; ++r) {
    const auto& p = phases[static_cast<std::size_t>(r)];
    const auto& t = timings[static_cast<std::size_t>(r)];
    EXPECT_EQ(p.steps, 2 * kRows / kGlobalBatch) << "rank " << r;
    EXPECT_EQ(p.steps, t.steps) << "rank " << r;
    EXPECT_GT(p.gathering_seconds, 0.0) << "rank " << r;
    EXPECT_GT(p.broadcasting_seconds, 0.0) << "rank " << r;
    if (r == 0) EXPECT_GT(p.averaging_seconds, 0.0);
    EXPECT_NEAR(p.gathering_seconds + p.averaging_seconds + p.broadcasting_seconds, t.comm_seconds,
                1e-9 * (1.0 + t.comm_seconds))
        << "rank " << r;
  }
}

}  // namespace

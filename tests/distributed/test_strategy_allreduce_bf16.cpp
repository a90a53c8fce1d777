// The "allreduce-bf16" strategy (magmadnn/parallel/allreduce_bf16_strategy.h)
// against "allreduce": the gradients it exchanges are the float exchange's
// within bfloat16 rounding at every step, a short training run ends at
// nearly the same loss, and it hands the communicator half the bytes
// (a quarter for double). On 2 and 4 ranks: the launcher's ranks under
// mpirun (label mpi), else that many ranks as threads of this process
// (ThreadCommunicator, label cpu). Also: its rounding is to nearest even,
// it is in the registry with allreduce's traits, and a run config selects it.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <thread>

#include "magmadnn/comm/local_communicator.h"
#include "magmadnn/comm/thread_communicator.h"
#include "magmadnn/parallel/allreduce_bf16_strategy.h"
#include "magmadnn/parallel/flat_params.h"
#include "magmadnn/parallel/strategy_registry.h"
#include "magmadnn/run/run_training.h"
#include "strategy_test_util.h"

namespace {

using namespace magmadnn;
using namespace stest;
using distributed::Communicator;
using distributed::RequestPtr;

constexpr double kBf16Roundoff = 1.0 / 256.0;  // 2^-8: bfloat16 keeps 8 significant bits

// Forwards every call to `inner`; counts what this rank hands to iallreduce.
class CountingCommunicator final : public Communicator {
 public:
  explicit CountingCommunicator(std::shared_ptr<Communicator> inner) : inner_(std::move(inner)) {
    timeout_ = inner_->timeout();
  }
  std::uint64_t allreduce_bytes() const noexcept { return bytes_; }
  std::uint64_t allreduce_calls() const noexcept { return calls_; }

  int rank() const noexcept override { return inner_->rank(); }
  int size() const noexcept override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  bool supports(distributed::Place p) const noexcept override { return inner_->supports(p); }
  RequestPtr iallreduce(distributed::Buffer b, distributed::ReduceOp op) override {
    bytes_ += b.bytes();
    ++calls_;
    return inner_->iallreduce(b, op);
  }
  RequestPtr ibroadcast(distributed::Buffer b, int root) override { return inner_->ibroadcast(b, root); }
  RequestPtr ireduce_scatter(distributed::ConstBuffer s, distributed::Buffer r, distributed::ReduceOp op) override {
    return inner_->ireduce_scatter(s, r, op);
  }
  RequestPtr iallgather(distributed::ConstBuffer s, distributed::Buffer r) override { return inner_->iallgather(s, r); }
  RequestPtr igather(distributed::ConstBuffer s, distributed::Buffer r, int root) override {
    return inner_->igather(s, r, root);
  }
  RequestPtr iscatter(distributed::ConstBuffer s, distributed::Buffer r, int root) override {
    return inner_->iscatter(s, r, root);
  }
  RequestPtr ireduce(distributed::Buffer b, distributed::ReduceOp op, int root) override {
    return inner_->ireduce(b, op, root);
  }
  RequestPtr isend(distributed::ConstBuffer b, int dest, int tag) override { return inner_->isend(b, dest, tag); }
  RequestPtr irecv(distributed::Buffer b, int source, int tag) override { return inner_->irecv(b, source, tag); }
  void barrier() override { inner_->barrier(); }

 private:
  std::shared_ptr<Communicator> inner_;
  std::atomic<std::uint64_t> bytes_{0}, calls_{0};  // the strategy calls from its communication thread
};

// The rank counts to check: the launcher's under mpirun, else 2 and 4 as threads.
std::vector<int> rank_counts() {
  const int world = strategy_world()->size();
  return world > 1 ? std::vector<int>{world} : std::vector<int>{2, 4};
}

// The communicators of this process for `ranks` ranks: the world's alone
// (this process is one of them) when it has that many, else one per rank
// of a new thread group.
std::vector<std::shared_ptr<Communicator>> local_ranks(int ranks) {
  auto world = strategy_world();
  if (world->size() > 1) {
    EXPECT_EQ(world->size(), ranks);
    return {world};
  }
  auto group = distributed::make_thread_group(ranks);
  return std::vector<std::shared_ptr<Communicator>>(group.begin(), group.end());
}

// Runs body(comms[i], i) for every communicator of local_ranks(), each on
// a thread of its own when there are several; rethrows what one threw.
void on_local_ranks(const std::vector<std::shared_ptr<Communicator>>& comms,
                    const std::function<void(std::shared_ptr<Communicator>, std::size_t)>& body) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < comms.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        body(comms[i], i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

template <typename T>
std::unique_ptr<model::NeuralNetwork<T>> make_net(std::int64_t batch, unsigned epochs, double lr) {
  set_seed(11);
  model::nn_params_t p{batch, epochs, lr};
  p.shuffle = false;
  return std::make_unique<model::NeuralNetwork<T>>(mlp<T>(16, {32, 16}, 4), optimizer::CROSS_ENTROPY, optimizer::SGD,
                                                   p);
}

// Nets are built before the rank threads start: seeding is global.
template <typename T>
std::vector<std::unique_ptr<model::NeuralNetwork<T>>> make_nets(int count, std::int64_t batch, unsigned epochs,
                                                                double lr) {
  std::vector<std::unique_ptr<model::NeuralNetwork<T>>> nets;
  for (int i = 0; i < count; ++i) nets.push_back(make_net<T>(batch, epochs, lr));
  return nets;
}

// Small buckets: the two hidden weight matrices are reduced in place, the
// biases and the last layer packed, so both kinds of bucket are exchanged.
distributed::StrategyOptions small_buckets() {
  distributed::StrategyOptions o;
  o.in_place_bytes = 1024;
  o.first_bucket_bytes = 256;
  o.bucket_bytes = 1024;
  return o;
}

void set_weights(model::NeuralNetwork<double>& net, const std::vector<double>& w) {
  distributed::detail::FlatParams<double>(net.parameters()).write_values(w.data());
}

// The rows of this rank's part of global batch `step` (local batch rows each).
Tensor<double> rows(const Tensor<double>& t, std::int64_t step, int ranks, int rank, std::int64_t local) {
  const std::int64_t width = t.size() / t.shape()[0], first = (step * ranks + rank) * local;
  const std::vector<double> all = t.to_vector();
  std::vector<double> out(all.begin() + first * width, all.begin() + (first + local) * width);
  return Tensor<double>::from_vector({local, width}, out);
}

TEST(AllreduceBf16, RoundsToNearestEvenAndNarrowsOnlyGradientSums) {
  auto exchange = distributed::bf16_gradient_exchange(std::make_shared<distributed::LocalCommunicator>());
  EXPECT_EQ(exchange->backend(), "local+bf16");
  // Near 1 the bfloat16 spacing is 2^-7: ties go to the even neighbour.
  const float u = std::ldexp(1.0f, -8);
  std::vector<float> v = {1 + u, 1 + 3 * u, 1 + u + std::ldexp(1.0f, -20), -(1 + u), 1e-40f, 3.0e38f};
  const std::vector<float> want = {1.0f, 1 + 4 * u, 1 + 2 * u, -1.0f, static_cast<float>(bfloat16(1e-40f)),
                                   static_cast<float>(bfloat16(3.0e38f))};
  exchange->allreduce(distributed::host_buffer(v.data(), v.size()), distributed::ReduceOp::sum);
  EXPECT_EQ(v, want);
  EXPECT_GT(want[4], 0.0f);  // a subnormal is kept
  std::vector<float> special = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::signaling_NaN()};
  exchange->allreduce(distributed::host_buffer(special.data(), special.size()), distributed::ReduceOp::sum);
  EXPECT_TRUE(std::isnan(special[0]));
  EXPECT_EQ(special[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(special[2]));
  std::vector<double> d = {1.0 + 1.0 / 512.0};
  exchange->allreduce(distributed::host_buffer(d.data(), d.size()), distributed::ReduceOp::avg);
  EXPECT_EQ(d[0], 1.0);
  // A maximum and a broadcast go through at full precision.
  std::vector<float> m = {1 + u};
  exchange->allreduce(distributed::host_buffer(m.data(), m.size()), distributed::ReduceOp::max);
  exchange->broadcast(distributed::host_buffer(m.data(), m.size()), 0);
  EXPECT_EQ(m[0], 1 + u);
  EXPECT_THROW(distributed::bf16_gradient_exchange(nullptr), ValueError);
}

TEST(AllreduceBf16, RegisteredWithAllreducesTraits) {
  const distributed::StrategyEntry& e = distributed::strategy_entry("allreduce-bf16");
  const distributed::StrategyTraits& a = distributed::strategy_entry("allreduce").traits;
  EXPECT_EQ(e.traits.same_gradients_every_step, a.same_gradients_every_step);
  EXPECT_EQ(e.traits.serves_model_parallel, a.serves_model_parallel);
  EXPECT_EQ(e.traits.server_trains_no_data, a.server_trains_no_data);
  EXPECT_EQ(e.traits.reports_staleness, a.reports_staleness);
  EXPECT_EQ(distributed::default_strategy().name, "allreduce");
  auto s = distributed::make_strategy<float>("allreduce-bf16", strategy_world());
  EXPECT_EQ(s->name(), "allreduce-bf16");
  EXPECT_NE(dynamic_cast<distributed::AllreduceStrategy<float>*>(s.get()), nullptr);  // its no_sync too
}

// A run config selects it, for plain data parallelism ("data": every rank
// ends with the same weights) and, under mpirun, for a hybrid plan
// ("model": the dense layers split over the ranks, their gradients summed;
// building it is collective, and seeding is global, so not as threads of
// one process); every rank scores the test split alike.
TEST(AllreduceBf16, SelectedByTheRunConfigForDataAndHybridPlans) {
  for (const char* parallel : {"data", "model"}) {
    if (std::string(parallel) == "model" && strategy_world()->size() == 1) continue;
    run::Json j;
    j["layers"] = run::Json::array({{{"type", "flatten"}},
                                    {{"type", "dense"}, {"units", 16}, {"activation", "relu"}},
                                    {{"type", "dense"}, {"units", 4}, {"activation", "softmax"}}});
    j["distributed"] = {{"strategy", "allreduce-bf16"}, {"parallel", parallel}};
    j["data"] = {{"dataset", "synthetic"}, {"shape", {1, 4, 4}}, {"classes", 4}, {"train_samples", 40},
                 {"test_samples", 12}};
    j["epochs"] = 1;
    j["batch_size"] = 12;
    const run::TrainSpec spec = run::parse_config(j);
    EXPECT_EQ(spec.distributed.strategy, "allreduce-bf16");
    const auto comms = local_ranks(rank_counts().front());
    std::vector<std::unique_ptr<run::TrainingRun>> runs;  // built one at a time: seeding is global
    for (const auto& c : comms) runs.push_back(std::make_unique<run::TrainingRun>(spec, c));
    on_local_ranks(comms, [&](std::shared_ptr<Communicator> comm, std::size_t i) {
      run::RunOptions o;
      o.communicator = comm;
      const run::RunResult result = runs[i]->run(o);
      EXPECT_TRUE(std::isfinite(result.test.loss)) << parallel;
      std::int64_t loss_bits = 0;
      std::memcpy(&loss_bits, &result.test.loss, sizeof loss_bits);
      EXPECT_TRUE(same_on_all_ranks(*comm, loss_bits)) << parallel;
      if (std::string(parallel) == "data") {
        EXPECT_TRUE(same_on_all_ranks(*comm, weight_hash(runs[i]->network())));
      }
    });
  }
}

using DoubleNets = std::vector<std::unique_ptr<model::NeuralNetwork<double>>>;

// One rank's side of the per-step check: three copies of the network at the
// same weights take one step each on this rank's part of the global batch,
// under allreduce, under allreduce-bf16 and alone (its local gradient, for
// the bound); then all three move to the float run's weights.
void per_step_check(std::shared_ptr<Communicator> comm, int rank, DoubleNets& nets, double& worst_ratio) {
  const int n = comm->size();
  constexpr std::int64_t kLocal = 8, kSteps = 4;
  constexpr double kLr = 0.1;
  Tensor<double> x, y;
  blobs<double>(kSteps * kLocal * n, 16, 4, x, y, 3);
  auto count_f = std::make_shared<CountingCommunicator>(comm), count_b = std::make_shared<CountingCommunicator>(comm);
  auto f = distributed::make_strategy<double>("allreduce", count_f, small_buckets());
  auto b = distributed::make_strategy<double>("allreduce-bf16", count_b, small_buckets());
  f->attach(*nets[0]);
  b->attach(*nets[1]);
  ASSERT_GE(dynamic_cast<distributed::AllreduceStrategy<double>&>(*b).num_buckets(), 3u);
  std::vector<double> w = weights(*nets[0]);
  for (std::int64_t s = 0; s < kSteps; ++s) {
    const Tensor<double> xs = rows(x, s, n, rank, kLocal), ys = rows(y, s, n, rank, kLocal);
    std::vector<std::vector<double>> g;
    for (auto& net : nets) {
      set_weights(*net, w);
      net->fit(xs, ys);
      const std::vector<double> after = weights(*net);
      g.emplace_back(w.size());
      for (std::size_t i = 0; i < w.size(); ++i) g.back()[i] = (w[i] - after[i]) / kLr;
    }
    // The mean over ranks of |local gradient|: the magnitude the bound scales.
    std::vector<double> mag(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) mag[i] = std::abs(g[2][i]) / n;
    comm->allreduce(distributed::host_buffer(mag.data(), mag.size()), distributed::ReduceOp::sum);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double diff = std::abs(g[1][i] - g[0][i]), unit = kBf16Roundoff * mag[i];
      EXPECT_LE(diff, n * unit * (1 + 1e-6) + 1e-12) << "step " << s << " element " << i << " on " << n << " ranks";
      if (unit > 1e-9) worst_ratio = std::max(worst_ratio, diff / unit);
    }
    w = weights(*nets[0]);
  }
  // Double gradients as bfloat16: a quarter of the bytes, the same collectives.
  EXPECT_EQ(count_b->allreduce_calls(), count_f->allreduce_calls());
  EXPECT_EQ(4 * count_b->allreduce_bytes(), count_f->allreduce_bytes());
}

TEST(AllreduceBf16, EveryStepsGradientIsTheFloatExchangesWithinBf16Rounding) {
  for (int n : rank_counts()) {
    const auto comms = local_ranks(n);
    std::vector<DoubleNets> nets;
    for (std::size_t i = 0; i < comms.size(); ++i) nets.push_back(make_nets<double>(3, 8, 1, 0.1));
    std::vector<double> worst(comms.size(), 0.0);
    on_local_ranks(comms, [&](std::shared_ptr<Communicator> comm, std::size_t i) {
      per_step_check(comm, comm->rank(), nets[i], worst[i]);
    });
    // Not vacuous: the gradients really went through bfloat16 (a float
    // exchange would differ by about 2^-24, a ratio near 2^-16).
    for (double r : worst) EXPECT_GT(r, 0.1) << n << " ranks";
    if (strategy_world()->rank() == 0) {
      std::printf("allreduce-bf16 on %d ranks: largest gradient difference %.3f x 2^-8 x mean |g| (bound %d)\n", n,
                  worst[0], n);
    }
  }
}

TEST(AllreduceBf16, TrainsToTheFloatLossWithHalfTheBytes) {
  constexpr std::int64_t kLocal = 8;
  constexpr unsigned kEpochs = 3;
  for (int n : rank_counts()) {
    const auto comms = local_ranks(n);
    std::vector<std::vector<std::unique_ptr<model::NeuralNetwork<float>>>> nets;
    for (std::size_t i = 0; i < comms.size(); ++i) nets.push_back(make_nets<float>(2, kLocal, kEpochs, 0.1));
    std::vector<double> loss_f(comms.size()), loss_b(comms.size());
    on_local_ranks(comms, [&](std::shared_ptr<Communicator> comm, std::size_t i) {
      const int rank = comm->rank();
      Tensor<float> x, y;
      blobs<float>(12 * kLocal * n, 16, 4, x, y, 7);
      const Tensor<float> xs = shard(x, kLocal * n, n, rank), ys = shard(y, kLocal * n, n, rank);
      std::vector<std::shared_ptr<CountingCommunicator>> counts;
      double* loss[2] = {&loss_f[i], &loss_b[i]};
      const char* names[2] = {"allreduce", "allreduce-bf16"};
      for (int k = 0; k < 2; ++k) {
        counts.push_back(std::make_shared<CountingCommunicator>(comm));
        auto s = distributed::make_strategy<float>(names[k], counts.back());
        s->attach(*nets[i][static_cast<std::size_t>(k)]);
        nets[i][static_cast<std::size_t>(k)]->fit(xs, ys);
        *loss[k] = nets[i][static_cast<std::size_t>(k)]->evaluate(x, y).loss;
        EXPECT_TRUE(same_on_all_ranks(*comm, weight_hash(*nets[i][static_cast<std::size_t>(k)]))) << names[k];
      }
      // Float gradients as bfloat16: exactly half the bytes (no headers), the same collectives.
      EXPECT_GT(counts[0]->allreduce_bytes(), 0u);
      EXPECT_EQ(counts[1]->allreduce_calls(), counts[0]->allreduce_calls());
      EXPECT_EQ(2 * counts[1]->allreduce_bytes(), counts[0]->allreduce_bytes());
    });
    for (std::size_t r = 0; r < comms.size(); ++r) {
      EXPECT_LT(loss_f[r], 1.0) << "the float run did not train";
      EXPECT_NEAR(loss_b[r], loss_f[r], 0.005 * loss_f[r]) << n << " ranks";
      if (strategy_world()->rank() == 0 && r == 0) {
        std::printf("allreduce-bf16 on %d ranks: final loss %.6f (allreduce %.6f)\n", n, loss_b[r], loss_f[r]);
      }
    }
  }
}

}  // namespace

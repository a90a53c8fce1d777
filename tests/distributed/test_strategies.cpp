// Data-parallel strategies on 1, 2 and 4 ranks: gradient averaging equals
// one process on the global batch, the ring is bit-identical run to run,
// every rank holds the same weights after every step, weight averaging with
// k = 1 is gradient averaging for plain SGD, ASGD with bound 0 is
// synchronous and never exceeds its bound, and the allreduce strategy starts
// communicating before the backward pass ends.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "magmadnn/parallel/allreduce_strategy.h"
#include "magmadnn/comm/local_communicator.h"
#include "magmadnn/parallel/ring_strategy.h"
#include "magmadnn/parallel/strategy_registry.h"
#include "strategy_test_util.h"

namespace {

using namespace magmadnn;
using namespace stest;
using distributed::StrategyOptions;
using Net = model::NeuralNetwork<double>;

constexpr std::int64_t kSamples = 96, kGlobalBatch = 24, kDim = 6, kClasses = 3;
constexpr double kTol = 1e-9;  // double: only the summation order differs

struct Optim {
  optimizer::optimizer_t kind = optimizer::SGD;
  double momentum = 0.0;
  const char* label = "sgd";
};
const Optim kPlainSgd{optimizer::SGD, 0.0, "sgd"};
const Optim kMomentum{optimizer::SGD, 0.9, "momentum"};
const Optim kAdam{optimizer::ADAM, 0.0, "adam"};

std::unique_ptr<Net> make_net(const Optim& o, std::int64_t batch, unsigned epochs, unsigned seed,
                              const std::vector<std::int64_t>& hidden = {12, 8}, std::int64_t in = kDim,
                              std::int64_t classes = kClasses) {
  set_seed(seed);
  model::nn_params_t p{batch, epochs, o.kind == optimizer::ADAM ? 0.01 : 0.1};
  p.momentum = o.momentum;
  p.shuffle = false;
  return std::make_unique<Net>(mlp<double>(in, hidden, classes), optimizer::CROSS_ENTROPY, o.kind, p);
}

void data(Tensor<double>& x, Tensor<double>& y) { blobs<double>(kSamples, kDim, kClasses, x, y, 5); }

// One process trained on the whole global batch: what gradient averaging
// must reproduce. Seed 11 is rank 0's, whose weights every strategy starts from.
std::vector<double> oracle(const Optim& o, std::int64_t batch = kGlobalBatch, unsigned epochs = 2) {
  Tensor<double> x, y;
  data(x, y);
  auto net = make_net(o, batch, epochs, 11);
  net->fit(x, y);
  return weights(*net);
}

struct Result {
  std::vector<double> weights;
  bool same_every_step = true;
  distributed::StepTiming timing;
  distributed::StalenessStats staleness;
};

struct Plan {
  std::string strategy;
  Optim optim = kPlainSgd;
  StrategyOptions options;
  bool check_every_step = true;
  unsigned epochs = 2;
  std::int64_t global_batch = kGlobalBatch;
  int micro_steps = 1;  // allreduce: steps per exchange (no_sync in between)
  std::function<void(int rank)> after_each_step;
  bool collective_each_epoch = false;  // as a training run's metrics summed across ranks
};

// Trains with a strategy, each rank on its part of every global batch (ASGD:
// the workers share the batch, the server does not train on data).
Result train(const Plan& s) {
  auto comm = strategy_world();
  const int n = comm->size(), r = comm->rank();
  const bool asgd = s.strategy == "asgd";
  const int parts = asgd && n > 1 ? n - 1 : n;
  const int part = asgd && n > 1 ? std::max(0, r - 1) : r;
  Tensor<double> x, y;
  data(x, y);
  const Tensor<double> xs = shard(x, s.global_batch, parts, part), ys = shard(y, s.global_batch, parts, part);
  // A seed per rank: attach must replace every rank's weights with rank 0's.
  auto net = make_net(s.optim, s.global_batch / parts / s.micro_steps, s.epochs, 11 + 1000 * static_cast<unsigned>(r));
  auto strategy = distributed::make_strategy<double>(s.strategy, comm, s.options);
  strategy->attach(*net);

  Result out;
  auto cb = std::make_shared<model::LambdaCallback<double>>();
  cb->batch_end = [&](Net& m, const model::BatchLogs& logs) {
    if (s.after_each_step) s.after_each_step(r);
    if (s.micro_steps > 1) {
      auto& ar = dynamic_cast<distributed::AllreduceStrategy<double>&>(*strategy);
      ar.set_sync((logs.batch + 2) % s.micro_steps == 0);
      if ((logs.batch + 1) % s.micro_steps != 0) return;  // the ranks differ until the exchange
    }
    if (s.check_every_step && !same_on_all_ranks(*comm, weight_hash(m))) out.same_every_step = false;
  };
  cb->epoch_end = [&](Net&, const model::EpochRecord& rec) {
    if (s.collective_each_epoch) {
      EXPECT_TRUE(same_on_all_ranks(*comm, rec.epoch)) << "ranks at different epochs";
    }
  };
  if (s.micro_steps > 1) dynamic_cast<distributed::AllreduceStrategy<double>&>(*strategy).set_sync(s.micro_steps == 1);
  model::FitOptions<double> fo;
  fo.callbacks.push_back(cb);
  net->fit(xs, ys, fo);
  strategy->finalize();
  out.weights = weights(*net);
  out.timing = strategy->timing();
  out.staleness = strategy->staleness();
  EXPECT_TRUE(same_on_all_ranks(*comm, weight_hash(*net))) << s.strategy << ": ranks differ after finalize";
  return out;
}

TEST(Strategies, TheWorldIsEveryRankTheLauncherStarted) {
  const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (launched == nullptr) launched = std::getenv("PMI_SIZE");
  EXPECT_EQ(strategy_world()->size(), launched != nullptr ? std::atoi(launched) : 1);
}

TEST(Strategies, GradientAveragingEqualsOneProcessOnTheGlobalBatch) {
  for (const char* name : {"allreduce", "ring", "ps"}) {
    for (const Optim& o : {kPlainSgd, kMomentum, kAdam}) {
      Plan s;
      s.strategy = name;
      s.optim = o;
      s.options.bucket_bytes = 256;  // several buckets
      const Result got = train(s);
      EXPECT_TRUE(got.same_every_step) << name << "/" << o.label << ": ranks' weights differed after a step";
      EXPECT_LT(max_rel_diff(got.weights, oracle(o)), kTol) << name << "/" << o.label;
      EXPECT_EQ(got.timing.steps, 8) << name;
    }
  }
}

TEST(Strategies, RingAndPsAreBitIdenticalRunToRun) {
  for (const char* name : {"ring", "ps"}) {
    Plan s;
    s.strategy = name;
    s.optim = kMomentum;
    const Result a = train(s), b = train(s);
    EXPECT_EQ(a.weights, b.weights) << name;
  }
}

TEST(Strategies, AllreduceAndPsAgreeWithTheRingOracle) {
  Plan s;
  s.strategy = "ring";
  s.optim = kAdam;
  const std::vector<double> ring = train(s).weights;
  for (const char* name : {"allreduce", "ps"}) {
    s.strategy = name;
    EXPECT_LT(max_rel_diff(train(s).weights, ring), kTol) << name;
  }
}

TEST(Strategies, WeightAveragingEveryStepIsGradientAveragingForPlainSgd) {
  Plan s;
  s.strategy = "weight-avg";
  s.options.average_every = 1;
  const Result got = train(s);
  EXPECT_TRUE(got.same_every_step);
  EXPECT_LT(max_rel_diff(got.weights, oracle(kPlainSgd)), kTol);
}

TEST(Strategies, WeightAveragingEveryKStepsEndsEqualAcrossRanks) {
  Plan s;
  s.strategy = "weight-avg";
  s.optim = kMomentum;
  s.options.average_every = 3;  // 8 steps: averages after 3 and 6, finalize averages the last 2
  s.check_every_step = false;
  const Result got = train(s);  // train() checks the ranks agree after finalize
  EXPECT_EQ(got.timing.steps, 8);
  if (strategy_world()->size() > 1) {
    EXPECT_GT(max_rel_diff(got.weights, oracle(kMomentum)), kTol) << "local steps should drift from the oracle";
  }
}

TEST(Strategies, AsgdWithStalenessBoundZeroIsSynchronous) {
  Plan s;
  s.strategy = "asgd";
  s.options.staleness_bound = 0;
  s.check_every_step = false;  // the workers hold the server's weights of their last reply
  s.collective_each_epoch = true;
  const Result got = train(s);
  EXPECT_EQ(got.timing.steps, 8) << "the server serves as many steps as the workers take";
  EXPECT_LT(max_rel_diff(got.weights, oracle(kPlainSgd)), kTol);
  EXPECT_EQ(got.staleness.max, 0);
  auto comm = strategy_world();
  if (comm->size() > 1 && comm->rank() == 0) {
    EXPECT_EQ(got.staleness.gradients, 8 * (comm->size() - 1)) << "every worker gradient applied once";
  }
}

TEST(Strategies, AsgdStalenessNeverExceedsTheBound) {
  for (int bound : {1, 3}) {
    Plan s;
    s.strategy = "asgd";
    s.options.staleness_bound = bound;
    s.check_every_step = false;
    s.epochs = 3;
    s.collective_each_epoch = true;  // the server's epochs end with the workers'
    // Rank 1 is slow, so the others run ahead as far as the bound lets them.
    s.after_each_step = [](int rank) {
      if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };
    const Result got = train(s);
    EXPECT_LE(got.staleness.max, bound);
    EXPECT_LE(got.staleness.mean, static_cast<double>(got.staleness.max));
    EXPECT_GE(got.staleness.mean, 0.0);
  }
}

// Gradients reduced where they lie (every parameter, or the two large
// weights beside packed buckets) average exactly as packed copies do.
TEST(Strategies, AllreduceInPlaceBucketsEqualOneProcess) {
  for (const std::size_t in_place : {std::size_t{0}, std::size_t{500}}) {
    for (const Optim& o : {kPlainSgd, kMomentum}) {
      Plan s;
      s.strategy = "allreduce";
      s.optim = o;
      s.options.in_place_bytes = in_place;
      const Result got = train(s);
      EXPECT_TRUE(got.same_every_step) << "in_place_bytes " << in_place << "/" << o.label;
      EXPECT_LT(max_rel_diff(got.weights, oracle(o)), kTol) << "in_place_bytes " << in_place << "/" << o.label;
    }
  }
}

TEST(Strategies, AllreduceNoSyncAccumulatesLikeOneStepOnTheUnionBatch) {
  for (const std::size_t in_place : {std::size_t{0}, std::size_t{500}, std::size_t{1} << 20}) {
    Plan s;
    s.strategy = "allreduce";
    s.micro_steps = 2;  // two micro-batches per exchange
    s.options.bucket_bytes = 256;
    s.options.in_place_bytes = in_place;
    const Result got = train(s);
    EXPECT_TRUE(got.same_every_step) << "in_place_bytes " << in_place;
    EXPECT_LT(max_rel_diff(got.weights, oracle(kPlainSgd)), kTol) << "in_place_bytes " << in_place;
  }
}

// 6 -> 12 -> 8 -> 3 in double: W1 (576 bytes) and W2 (768) reach 500 bytes
// and are buckets of their own, in the order backward finishes them; the
// four small tensors share one packed bucket, which closes (and launches)
// last, when W1's bias, its last member, is ready.
TEST(Strategies, AllreduceGivesLargeParametersBucketsOfTheirOwn) {
  auto net = make_net(kPlainSgd, kGlobalBatch, 1, 14);
  StrategyOptions o;
  o.in_place_bytes = 500;
  distributed::AllreduceStrategy<double> strategy(strategy_world(), o);
  strategy.attach(*net);
  EXPECT_EQ(strategy.num_buckets(), 3u);
}

// A model smaller than one bucket still gets a first bucket of its own,
// closed at first_bucket_bytes (the output layer's 3 x 8 weights and bias).
TEST(Strategies, AllreduceClosesTheFirstBucketEarly) {
  auto net = make_net(kPlainSgd, kGlobalBatch, 1, 14);
  StrategyOptions o;
  o.first_bucket_bytes = 200;
  distributed::AllreduceStrategy<double> strategy(strategy_world(), o);
  strategy.attach(*net);
  EXPECT_EQ(strategy.num_buckets(), 2u);
}

TEST(Strategies, AllreduceStartsBucketsBeforeTheBackwardPassEnds) {
  auto comm = strategy_world();
  // A backward pass of some milliseconds, so that even oversubscribed the
  // communication thread gets a core before it ends.
  const std::int64_t in = 256, classes = 10, batch = 128, steps_run = 6;
  Tensor<double> x, y;
  blobs<double>(batch * steps_run, in, classes, x, y, 9);
  auto net = make_net(kPlainSgd, batch, 1, 12, {512, 512, 512}, in, classes);
  StrategyOptions o;
  o.bucket_bytes = 1;  // one bucket per parameter
  o.record_timeline = true;
  distributed::AllreduceStrategy<double> strategy(comm, o);
  strategy.attach(*net);
  EXPECT_EQ(strategy.num_buckets(), net->parameters().size());
  using Kind = distributed::TimelineEvent::Kind;
  int steps_overlapped = 0, steps = 0;
  auto cb = std::make_shared<model::LambdaCallback<double>>();
  cb->batch_end = [&](Net&, const model::BatchLogs&) {
    ++steps;
    const auto& events = strategy.timeline();
    double backward_end = -1.0;
    std::vector<double> launched(strategy.num_buckets(), -1.0), completed(strategy.num_buckets(), -1.0);
    for (const auto& e : events) {
      if (e.kind == Kind::backward_end) backward_end = e.seconds;
      if (e.kind == Kind::launch) launched.at(static_cast<std::size_t>(e.index)) = e.seconds;
      if (e.kind == Kind::complete) completed.at(static_cast<std::size_t>(e.index)) = e.seconds;
    }
    ASSERT_GE(backward_end, 0.0);
    ASSERT_EQ(events.back().kind, Kind::step_end);
    for (std::size_t b = 0; b < launched.size(); ++b) {
      EXPECT_GE(launched[b], 0.0) << "bucket " << b << " never started";
      EXPECT_GE(completed[b], launched[b]) << "bucket " << b;
      if (b > 0) EXPECT_GE(launched[b], launched[b - 1]) << "buckets start in order";
    }
    if (launched[0] < backward_end) ++steps_overlapped;
  };
  model::FitOptions<double> fo;
  fo.callbacks.push_back(cb);
  net->fit(x, y, fo);
  const distributed::StepTiming& t = strategy.timing();
  if (comm->rank() == 0) {
    std::printf("[ overlap  ] %d ranks, %zu buckets: %d of %d steps started a bucket before backward ended; "
                "compute %.1f ms, communication %.1f ms, of which overlapped %.1f ms\n",
                comm->size(), strategy.num_buckets(), steps_overlapped, steps, 1e3 * t.compute_seconds,
                1e3 * t.comm_seconds, 1e3 * t.overlapped_seconds);
  }
  EXPECT_EQ(steps, steps_run);
  EXPECT_GE(steps_overlapped, 1) << "no step started a bucket before its backward pass ended";
  EXPECT_GT(strategy.timing().overlapped_seconds, 0.0);
  EXPECT_LE(strategy.timing().overlapped_seconds, strategy.timing().comm_seconds);
  EXPECT_GT(strategy.timing().compute_seconds, 0.0);
}

// MagmaDNN v1's spelling: a caller-owned DistMomentumSGD handed to the v1
// constructor, on make_communicator("auto"), trains as gradient averaging
// with momentum on the union of the ranks' batches.
TEST(Strategies, DistMomentumSgdIsV1sEntryPointOnTheAllreduceStrategy) {
  auto comm = strategy_world();
  const int n = comm->size(), r = comm->rank();
  Tensor<double> x, y;
  data(x, y);
  Tensor<double> xs = shard(x, kGlobalBatch, n, r), ys = shard(y, kGlobalBatch, n, r);
  set_seed(11 + 1000 * static_cast<unsigned>(r));
  const auto owned = mlp<double>(kDim, {12, 8}, kClasses);
  std::vector<layer::Layer<double>*> layers;
  for (const auto& l : owned) layers.push_back(l.get());
  model::nn_params_t params{kGlobalBatch / n, 2, 0.1};
  params.momentum = 0.9;
  params.shuffle = false;
  auto dist = std::make_unique<optimizer::DistMomentumSGD<double>>(params.learning_rate, params.momentum);
  optimizer::Optimizer<double>* optim = dist.get();
  {
    model::NeuralNetwork<double> model(layers, optimizer::CROSS_ENTROPY, optim, params);
    ASSERT_NE(dist->strategy(), nullptr);
    EXPECT_EQ(dist->strategy()->name(), "allreduce");
    EXPECT_EQ(dist->strategy()->communicator().size(), n);
    model::metric_t metrics;
    model.fit(&xs, &ys, metrics, false);
    EXPECT_LT(max_rel_diff(weights(model), oracle(kMomentum)), kTol);
    EXPECT_TRUE(same_on_all_ranks(*comm, weight_hash(model)));
    EXPECT_EQ(dist->strategy()->timing().steps, 8);
  }
  EXPECT_DOUBLE_EQ(dist->get_momentum(), 0.9);
}

// One local rank whose k-th allreduce fails, as a broken link would.
class FailingCommunicator final : public distributed::Communicator {
 public:
  explicit FailingCommunicator(int fail_at) : fail_at_(fail_at) {}
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  std::string backend() const override { return "failing"; }
  bool supports(distributed::Place p) const noexcept override { return local_.supports(p); }
  distributed::RequestPtr iallreduce(distributed::Buffer b, distributed::ReduceOp op) override {
    if (++calls_ == fail_at_) MAGMADNN_THROW(CommError, "allreduce number " << calls_ << " lost its peer");
    return local_.iallreduce(b, op);
  }
  distributed::RequestPtr ibroadcast(distributed::Buffer b, int root) override { return local_.ibroadcast(b, root); }
  distributed::RequestPtr ireduce_scatter(distributed::ConstBuffer s, distributed::Buffer r,
                                          distributed::ReduceOp op) override {
    return local_.ireduce_scatter(s, r, op);
  }
  distributed::RequestPtr iallgather(distributed::ConstBuffer s, distributed::Buffer r) override {
    return local_.iallgather(s, r);
  }
  distributed::RequestPtr igather(distributed::ConstBuffer s, distributed::Buffer r, int root) override {
    return local_.igather(s, r, root);
  }
  distributed::RequestPtr iscatter(distributed::ConstBuffer s, distributed::Buffer r, int root) override {
    return local_.iscatter(s, r, root);
  }
  distributed::RequestPtr ireduce(distributed::Buffer b, distributed::ReduceOp op, int root) override {
    return local_.ireduce(b, op, root);
  }
  distributed::RequestPtr isend(distributed::ConstBuffer b, int dest, int tag) override {
    return local_.isend(b, dest, tag);
  }
  distributed::RequestPtr irecv(distributed::Buffer b, int source, int tag) override {
    return local_.irecv(b, source, tag);
  }
  void barrier() override {}

 private:
  distributed::LocalCommunicator local_;
  int fail_at_, calls_ = 0;
};

TEST(Strategies, AFailedExchangeOnTheCommunicationThreadIsRethrownFromTheStep) {
  Tensor<double> x, y;
  data(x, y);
  auto net = make_net(kPlainSgd, kGlobalBatch, 1, 13);
  StrategyOptions o;
  o.bucket_bytes = 256;
  distributed::AllreduceStrategy<double> strategy(std::make_shared<FailingCommunicator>(5), o);
  strategy.attach(*net);
  ASSERT_GE(strategy.num_buckets(), 2u);  // so the 5th allreduce falls in the second or a later step
  const std::vector<double> before = weights(*net);
  try {
    net->fit(x, y);
    ADD_FAILURE() << "the failed allreduce went unnoticed";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce number 5"), std::string::npos) << e.what();
  }
  EXPECT_GE(strategy.timing().steps, 1);
  EXPECT_NE(weights(*net), before);
}

// Every built-in registers itself from its own .cpp (the shared library's
// static initializers): all five are there, in the order messages list them,
// with the traits the run asks for instead of names. A strategy added in its
// own files (test_strategy_*.cpp tests it) may stand anywhere between them.
TEST(Strategies, RegistryHoldsTheBuiltInsWithTheirTraits) {
  const std::vector<std::string> builtin = {"allreduce", "weight-avg", "ps", "asgd", "ring"};
  const std::vector<std::string> all = distributed::strategy_names();
  std::vector<std::string> builtins_listed;
  for (const std::string& n : all) {
    if (std::find(builtin.begin(), builtin.end(), n) != builtin.end()) builtins_listed.push_back(n);
  }
  EXPECT_EQ(builtins_listed, builtin);
  EXPECT_EQ(distributed::default_strategy().name, "allreduce");
  using distributed::StrategyTraits;
  const auto traits = [](const char* name) { return distributed::strategy_entry(name).traits; };
  const auto flags = [](const StrategyTraits& t) {
    return std::vector<bool>{t.same_gradients_every_step, t.serves_model_parallel, t.server_trains_no_data,
                             t.reports_staleness};
  };
  EXPECT_EQ(flags(traits("allreduce")), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(flags(traits("weight-avg")), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(flags(traits("ps")), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(flags(traits("asgd")), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(flags(traits("ring")), (std::vector<bool>{true, false, false, false}));
  // strategy_names_where: the names whose traits say so, by order.
  const auto where = [](auto pred) { return distributed::strategy_names_where(pred); };
  const auto expect_where = [&](auto pred) {
    std::vector<std::string> want;
    for (const std::string& n : all) {
      if (pred(distributed::strategy_entry(n).traits)) want.push_back(n);
    }
    return want;
  };
  const auto same = [](const StrategyTraits& t) { return t.same_gradients_every_step; };
  const auto serves = [](const StrategyTraits& t) { return t.serves_model_parallel; };
  EXPECT_EQ(where(same), expect_where(same));
  EXPECT_EQ(where(serves), expect_where(serves));
  for (const distributed::StrategyEntry* e : distributed::strategies()) {
    EXPECT_FALSE(e->help.empty()) << e->name;
    EXPECT_EQ(distributed::find_strategy(e->name), e);
  }
  EXPECT_EQ(distributed::find_strategy("hogwild"), nullptr);
  EXPECT_THROW(distributed::register_strategy({"ring", "a second ring", 99, {}, nullptr, nullptr}), ValueError);
  EXPECT_THROW(distributed::StrategyRegistrar<distributed::RingStrategy>({"ring", "a second ring", 99, {}}), ValueError);
  // The same declaration again (a translation unit linked twice, as the
  // fuzzers link instrumented copies beside the library) is ignored.
  const distributed::StrategyEntry ring = *distributed::find_strategy("ring");
  EXPECT_NO_THROW(distributed::register_strategy(ring));
  EXPECT_EQ(distributed::strategy_names(), all);
}

TEST(Strategies, FactoryKnowsTheNamesAndRejectsBadOptions) {
  auto comm = strategy_world();
  const auto names = distributed::strategy_names();
  ASSERT_EQ(names.front(), "allreduce");
  for (const auto& n : names) EXPECT_EQ(distributed::make_strategy<float>(n, comm)->name(), n);
  try {
    distributed::make_strategy<float>("hogwild", comm);
    ADD_FAILURE() << "an unknown name was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("hogwild"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("weight-avg"), std::string::npos);
  }
  StrategyOptions bad;
  bad.average_every = 0;
  EXPECT_THROW(distributed::make_strategy<float>("weight-avg", comm, bad), ValueError);
  bad = {};
  bad.server_rank = comm->size();
  EXPECT_THROW(distributed::make_strategy<double>("ps", comm, bad), ValueError);
  bad = {};
  bad.first_bucket_bytes = 0;
  EXPECT_THROW(distributed::make_strategy<double>("allreduce", comm, bad), ValueError);
  bad = {};
  bad.staleness_bound = -1;
  EXPECT_THROW(distributed::make_strategy<double>("asgd", comm, bad), ValueError);
}

}  // namespace

// Pipelines in one process: S ranks as S threads (ThreadCommunicator), each
// a stage, against the one-process network trained on whole batches, step
// for step; the schedules; the cuts and the refusals.
#include <gmock/gmock.h>

#include <tuple>

#include "magmadnn/comm/thread_communicator.h"
#include "magmadnn/parallel/pipeline/cuts.h"
#include "pipeline_support.h"
#include "support/thread_ranks.h"

namespace {
using namespace ptest;

// The S pipelines of one group, built one after another after the same seed.
std::vector<std::unique_ptr<pl::Pipeline<float>>> build(const Factories& f, const std::vector<std::int64_t>& sample,
                                                        int stages, pl::PipelineOptions o, std::uint64_t seed,
                                                        std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  auto comms = distributed::make_thread_group(stages);
  std::vector<std::unique_ptr<pl::Pipeline<float>>> pipes;
  for (int r = 0; r < stages; ++r) {
    comms[r]->set_timeout(timeout);
    set_seed(seed);
    pipes.push_back(std::make_unique<pl::Pipeline<float>>(comms[r], f, sample, make_optimizer(), o));
  }
  return pipes;
}

// The message of the ValueError `fn` throws ("" when none).
template <typename F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

// One step on every stage at once; the first error is rethrown.
std::vector<double> step_all(std::vector<std::unique_ptr<pl::Pipeline<float>>>& pipes, const Tensor<float>& x,
                             const Tensor<float>& y) {
  std::vector<double> losses(pipes.size());
  test::on_thread_ranks(static_cast<int>(pipes.size()), [&](int r) { losses[r] = pipes[r]->train_step(x, y); });
  return losses;
}

struct Case {
  const char* net;
  int stages;
  pl::Schedule schedule;
  int micro;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.net << " at " << c.stages << " stages, " << pl::schedule_name(c.schedule) << ", " << c.micro
      << " micro-batches";
}

class PipelineEqualsOneProcess : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineEqualsOneProcess, StepForStep) {
  const Case c = GetParam();
  const bool lenet = std::string(c.net) == "lenet5";
  const Factories f = lenet ? lenet5() : mlp();
  const std::vector<std::int64_t> sample = lenet ? std::vector<std::int64_t>{1, 28, 28} : std::vector<std::int64_t>{20};
  const std::int64_t classes = lenet ? 10 : 4, batch = 16;
  pl::PipelineOptions o;
  o.micro_batches = c.micro;
  o.schedule = c.schedule;
  auto pipes = build(f, sample, c.stages, o, 7);
  Reference ref(f, sample, classes, 7);
  for (int r = 0; r < c.stages; ++r) ASSERT_TRUE(weights_close(pipes[r]->local(), pipes[r]->first()[r], ref, 0, "initial"));
  for (int step = 0; step < 3; ++step) {
    Tensor<float> x, y;
    make_batch(batch, sample, classes, 100 + step, x, y);
    const std::vector<double> losses = step_all(pipes, x, y);
    const double want = ref.step(x, y);
    for (double l : losses) EXPECT_NEAR(l, want, 1e-5 * std::max(1.0, std::abs(want))) << "step " << step;
    for (int r = 0; r < c.stages; ++r)
      ASSERT_TRUE(weights_close(pipes[r]->local(), pipes[r]->first()[r], ref, 2e-5, "step " + std::to_string(step)));
  }
  // What a stage kept: 1F1B at most S - s micro-batches, GPipe all of them.
  for (int r = 0; r < c.stages; ++r) {
    const int want = c.schedule == pl::Schedule::gpipe ? c.micro : std::min(c.stages - r, c.micro);
    EXPECT_EQ(pipes[r]->last_step().peak_in_flight, want) << "stage " << r;
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* net : {"mlp", "lenet5"})
    for (int s : {2, 4})
      for (pl::Schedule sch : {pl::Schedule::gpipe, pl::Schedule::one_f_one_b})
        for (int m : {1, 2, 4, 8}) cases.push_back({net, s, sch, m});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Threads, PipelineEqualsOneProcess, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.net) + "_s" + std::to_string(i.param.stages) + "_" +
                                  pl::schedule_name(i.param.schedule) + "_m" + std::to_string(i.param.micro);
                         });

// BatchNorm in a pipeline: each micro-batch normalised by its own
// statistics, the running statistics updated once per micro-batch (the
// forwards run again leave them alone): the reference is one process that
// steps on the micro-batches' summed gradients, not on the whole batch.
TEST(PipelineBatchNorm, PerMicroBatchStatisticsAsDocumented) {
  const Factories f{dense(16),
                    [](const op::Expr<float>& x) { return layer::batchnorm<float>(x).ptr(); },
                    act(layer::RELU), dense(12), act(layer::RELU), dense(4), act(layer::SOFTMAX)};
  for (pl::Schedule sch : {pl::Schedule::gpipe, pl::Schedule::one_f_one_b}) {
    SCOPED_TRACE(pl::schedule_name(sch));
    pl::PipelineOptions o;
    o.micro_batches = 4;
    o.schedule = sch;
    o.first = {0, 2};  // the BatchNorm on stage 0, which runs forwards again under both schedules
    auto pipes = build(f, {20}, 2, o, 3);
    Reference ref(f, {20}, 4, 3), whole(f, {20}, 4, 3);
    double apart = 0;
    for (int step = 0; step < 3; ++step) {
      Tensor<float> x, y;
      make_batch(16, {20}, 4, 300 + step, x, y);
      step_all(pipes, x, y);
      ref.step_micro(x, y, 4);
      whole.step(x, y);
      EXPECT_GT(pipes[0]->last_step().recomputes, 0);
      for (int r = 0; r < 2; ++r) {
        ASSERT_TRUE(weights_close(pipes[r]->local(), pipes[r]->first()[r], ref, 2e-5, "step " + std::to_string(step)));
        ASSERT_TRUE(state_close(pipes[r]->local(), pipes[r]->first()[r], ref, 1e-6));
      }
      const auto a = pipes[0]->local().layers()[0]->get_weights()[0]->value().to_vector();
      const auto b = whole.layers[0]->get_weights()[0]->value().to_vector();
      for (std::size_t i = 0; i < a.size(); ++i) apart = std::max(apart, double(std::abs(a[i] - b[i])));
    }
    EXPECT_GT(apart, 1e-4) << "with BatchNorm the pipeline does not equal one process on whole batches";
  }
}

// Data parallelism over pipelines: S stages x R replicas as S x R threads
// (a thread group per replica for its pipeline, one per stage for its
// replicas), against one process on the whole batch, step for step.
TEST(PipelineReplicas, StagesTimesReplicasEqualOneProcess) {
  for (auto [stages, reps, net] : {std::tuple{2, 2, "mlp"}, std::tuple{2, 2, "lenet5"}, std::tuple{1, 3, "mlp"},
                                   std::tuple{4, 2, "mlp"}}) {
    SCOPED_TRACE(std::to_string(stages) + " stages x " + std::to_string(reps) + " replicas, " + net);
    const bool lenet = std::string(net) == "lenet5";
    const Factories f = lenet ? lenet5() : mlp();
    const std::vector<std::int64_t> sample = lenet ? std::vector<std::int64_t>{1, 28, 28} : std::vector<std::int64_t>{20};
    const std::int64_t classes = lenet ? 10 : 4;
    std::vector<std::vector<std::shared_ptr<distributed::ThreadCommunicator>>> pipe_groups, data_groups;
    for (int r = 0; r < reps; ++r) pipe_groups.push_back(distributed::make_thread_group(stages));
    for (int s = 0; s < stages; ++s) data_groups.push_back(distributed::make_thread_group(reps));
    std::vector<std::unique_ptr<pl::Pipeline<float>>> pipes;  // rank r * stages + s
    for (int r = 0; r < reps; ++r)
      for (int s = 0; s < stages; ++s) {
        pl::PipelineOptions o;
        o.micro_batches = 2;
        o.replicas = data_groups[s][r];
        set_seed(7);
        pipes.push_back(std::make_unique<pl::Pipeline<float>>(pipe_groups[r][s], f, sample, make_optimizer(), o));
      }
    Reference ref(f, sample, classes, 7);
    for (int step = 0; step < 3; ++step) {
      Tensor<float> x, y;
      make_batch(12 * reps, sample, classes, 400 + step, x, y);
      const std::vector<double> losses = step_all(pipes, x, y);
      const double want = ref.step(x, y);
      for (double l : losses) EXPECT_NEAR(l, want, 1e-5 * std::max(1.0, std::abs(want)));
      for (std::size_t k = 0; k < pipes.size(); ++k)
        ASSERT_TRUE(weights_close(pipes[k]->local(), pipes[k]->first()[pipes[k]->stage()], ref, 2e-5,
                                  "step " + std::to_string(step) + ", rank " + std::to_string(k)));
    }
    EXPECT_THAT(error_of([&] { pipes[0]->train_step(Tensor<float>({5 * reps + 1, 20}, {ZERO}, HOST), Tensor<float>()); }),
                ::testing::HasSubstr(std::to_string(reps) + " replicas do not divide the batch of"));
  }
}

TEST(PipelineSchedule, EachMicroBatchOnceForwardBeforeBackward) {
  for (pl::Schedule sch : {pl::Schedule::gpipe, pl::Schedule::one_f_one_b})
    for (int stages : {1, 2, 3, 4})
      for (int s = 0; s < stages; ++s)
        for (int m : {1, 2, 5, 8}) {
          const auto a = pl::stage_actions(sch, s, stages, m);
          ASSERT_EQ(a.size(), 2u * m);
          std::vector<int> fwd(m, -1), bwd(m, -1);
          for (int i = 0; i < static_cast<int>(a.size()); ++i) (a[i].forward ? fwd : bwd)[a[i].micro] = i;
          for (int k = 0; k < m; ++k) EXPECT_TRUE(fwd[k] >= 0 && bwd[k] > fwd[k]) << "micro-batch " << k;
          const int peak = pl::peak_in_flight(a);
          EXPECT_EQ(peak, sch == pl::Schedule::gpipe ? m : std::min(stages - s, m));
        }
}

TEST(PipelineSchedule, OneFOneBOnTheLastStageAlternates) {
  const auto a = pl::stage_actions(pl::Schedule::one_f_one_b, 3, 4, 3);
  const std::vector<pl::Action> want{{true, 0}, {false, 0}, {true, 1}, {false, 1}, {true, 2}, {false, 2}};
  EXPECT_EQ(a, want);
  EXPECT_THROW(pl::parse_schedule("interleaved"), ValueError);
  EXPECT_EQ(pl::parse_schedule("1f1b"), pl::Schedule::one_f_one_b);
}

// LeNet-5's costs: by parameters the 120-unit layer outweighs the rest,
// so stage 0 takes everything up to it; by estimated flops the first
// convolution is 29% of the forward and stage 0 takes it alone. The pipeline still equals
// one process whichever cut it takes.
TEST(PipelineCuts, LeNet5ByParametersAndByFlops) {
  pl::PipelineOptions o;
  o.micro_batches = 2;
  auto by_params = build(lenet5(), {1, 28, 28}, 2, o, 7);
  EXPECT_EQ(by_params[0]->first(), (std::vector<int>{0, 8}));  // stage 1: dense 84, dense 10 and their activations
  o.balance = pl::Balance::flops;
  auto by_flops = build(lenet5(), {1, 28, 28}, 2, o, 7);
  EXPECT_EQ(by_flops[0]->first(), (std::vector<int>{0, 3}));  // stage 0: the first convolution, ReLU, pool
  EXPECT_DOUBLE_EQ(by_flops[0]->facts()[0].flops, 2.0 * 156 * 28 * 28 + 6 * 28 * 28);  // 5x5x6 + 6 bias
  EXPECT_DOUBLE_EQ(by_flops[0]->facts()[7].flops, 2.0 * (400 * 120 + 120) + 120);
  Reference ref(lenet5(), {1, 28, 28}, 10, 7);
  Tensor<float> x, y;
  make_batch(16, {1, 28, 28}, 10, 9, x, y);
  step_all(by_flops, x, y);
  ref.step(x, y);
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(weights_close(by_flops[r]->local(), by_flops[r]->first()[r], ref, 2e-5, "flops"));
  EXPECT_EQ(pl::parse_balance("flops"), pl::Balance::flops);
  EXPECT_EQ(pl::parse_balance("time"), pl::Balance::time);
  EXPECT_STREQ(pl::balance_name(pl::Balance::time), "time");
  try {
    pl::parse_balance("seconds");
    ADD_FAILURE() << "\"seconds\" was taken for a balance";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("expected \"parameters\", \"flops\" or \"time\""), std::string::npos) << e.what();
  }
}

TEST(PipelineCuts, BalancedByCost) {
  EXPECT_EQ(pl::balanced_cuts({1, 1, 1, 1}, 2), (std::vector<int>{0, 2}));
  EXPECT_EQ(pl::balanced_cuts({10, 1, 1, 1, 10}, 2), (std::vector<int>{0, 2}));
  EXPECT_EQ(pl::balanced_cuts({1, 100, 1, 1, 1}, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(pl::balanced_cuts({5, 5, 5}, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_THROW(pl::balanced_cuts({1, 1}, 3), ValueError);
}

TEST(PipelineRefuses, MoreStagesThanLayersOrRanks) {
  const Factories two{dense(8), dense(4)};
  auto comms = distributed::make_thread_group(3);
  EXPECT_THAT(error_of([&] { pl::Pipeline<float>(comms[0], two, {20}, make_optimizer(), {}); }),
              ::testing::HasSubstr("3 stages but the network has only 2 layers"));
  pl::PipelineOptions o;
  o.first = {0, 4};
  EXPECT_THAT(error_of([&] { pl::Pipeline<float>(comms[0], mlp(), {20}, make_optimizer(), o); }),
              ::testing::HasSubstr("2 stages need 2 ranks (one per stage), the run has 3"));
}

TEST(PipelineRefuses, MicroBatchesThatDoNotDivideTheBatch) {
  pl::PipelineOptions o;
  o.micro_batches = 3;
  auto pipes = build(mlp(), {20}, 2, o, 7);
  Tensor<float> x, y;
  make_batch(16, {20}, 4, 1, x, y);
  EXPECT_THAT(error_of([&] { step_all(pipes, x, y); }),
              ::testing::HasSubstr("3 micro-batches do not divide the batch of 16"));
  o.micro_batches = 0;
  auto comms = distributed::make_thread_group(2);
  EXPECT_THAT(error_of([&] { pl::Pipeline<float>(comms[0], mlp(), {20}, make_optimizer(), o); }),
              ::testing::HasSubstr("micro_batches must be >= 1"));
}

TEST(PipelineRefuses, BadCutsAndDropout) {
  EXPECT_THAT(error_of([] { pl::check_cuts({0, 3, 3}, 8); }), ::testing::HasSubstr("stage 2 starts at layer 3"));
  EXPECT_THAT(error_of([] { pl::check_cuts({1, 3}, 8); }), ::testing::HasSubstr("must start at layer 0"));
  EXPECT_THAT(error_of([] { pl::check_cuts({0, 8}, 8); }), ::testing::HasSubstr("the network has 8 layers"));
  Factories f = mlp();
  f[2] = [](const op::Expr<float>& x) { return layer::dropout<float>(x, 0.5f).ptr(); };
  auto comms = distributed::make_thread_group(2);
  EXPECT_THAT(error_of([&] { pl::Pipeline<float>(comms[0], f, {20}, make_optimizer(), {}); }),
              ::testing::HasSubstr("is a dropout layer"));
}

TEST(PipelineRefuses, ACutInsideAResidualBranch) {
  // 0 conv, 1 relu, 2 conv, 3 add(1, 2), 4 dense: layer 3 reads layer 1.
  const std::vector<std::vector<int>> reads{{}, {0}, {1}, {1, 2}, {3}};
  EXPECT_NO_THROW(pl::check_no_crossing({0, 4}, reads));
  EXPECT_NO_THROW(pl::check_no_crossing({0, 2}, reads));  // the branch starts at the cut: layer 1 crosses once
  EXPECT_THAT(error_of([&] { pl::check_no_crossing({0, 3}, reads); }),
              ::testing::HasSubstr("layer 3 (stage 1) reads layer 1 (stage 0): the cut before layer 3 is inside a branch"));
}

// A stage that never takes its step: the stage waiting for it names itself,
// the micro-batch, what it waited for and from which stage.
TEST(PipelineWatchdog, AMissingStageIsNamedWithItsMicroBatch) {
  pl::PipelineOptions o;
  o.micro_batches = 2;
  Tensor<float> x, y;
  make_batch(16, {20}, 4, 1, x, y);
  for (int alive : {0, 1}) {
    auto pipes = build(mlp(), {20}, 2, o, 7, std::chrono::milliseconds(300));
    std::string e;
    try {
      pipes[alive]->train_step(x, y);
    } catch (const CommError& err) {
      e = err.what();
    }
    const std::string want = alive == 0 ? "pipeline stage 0 (step 0) waiting for micro-batch 0's gradient from stage 1"
                                        : "pipeline stage 1 (step 0) waiting for micro-batch 0's activations from stage 0";
    EXPECT_THAT(e, ::testing::HasSubstr(want));
  }
}

}  // namespace

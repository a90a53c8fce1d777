// Pipelines across processes: the world's ranks are the stages (mpirun -np
// S; one local rank when run directly: a pipeline of one stage), against
// the one-process network each rank trains on its own, step for step.
#include <gtest/gtest.h>

#include "pipeline_support.h"

std::shared_ptr<magmadnn::distributed::Communicator> strategy_world();

namespace {
using namespace ptest;

// Trains 3 steps against the one-process network; `first` receives the cuts.
void run_case(bool lenet, pl::Schedule schedule, int micro, pl::Balance balance = pl::Balance::parameters,
              std::vector<int>* first = nullptr) {
  const auto world = strategy_world();
  const Factories f = lenet ? lenet5() : mlp();
  const std::vector<std::int64_t> sample = lenet ? std::vector<std::int64_t>{1, 28, 28} : std::vector<std::int64_t>{20};
  const std::int64_t classes = lenet ? 10 : 4, batch = 16;
  pl::PipelineOptions o;
  o.micro_batches = micro;
  o.schedule = schedule;
  o.balance = balance;
  set_seed(11);
  pl::Pipeline<float> pipe(world, f, sample, make_optimizer(), o);
  Reference ref(f, sample, classes, 11);
  const int s = world->rank();
  for (int step = 0; step < 3; ++step) {
    Tensor<float> x, y;
    make_batch(batch, sample, classes, 200 + step, x, y);
    const double got = pipe.train_step(x, y);
    const double want = ref.step(x, y);
    EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, std::abs(want))) << "step " << step;
    ASSERT_TRUE(weights_close(pipe.local(), pipe.first()[s], ref, 2e-5, "step " + std::to_string(step)));
  }
  const int kept = schedule == pl::Schedule::gpipe ? micro : std::min(world->size() - s, micro);
  EXPECT_EQ(pipe.last_step().peak_in_flight, kept);
  if (first != nullptr) *first = pipe.first();
}

TEST(PipelineWorld, MlpGPipe4) { run_case(false, pl::Schedule::gpipe, 4); }
TEST(PipelineWorld, Mlp1F1B8) { run_case(false, pl::Schedule::one_f_one_b, 8); }
TEST(PipelineWorld, LeNet5GPipe2) { run_case(true, pl::Schedule::gpipe, 2); }
TEST(PipelineWorld, LeNet51F1B4) { run_case(true, pl::Schedule::one_f_one_b, 4); }

// Cuts by measured time: stage 0 times the layers and sends the costs, so
// every rank holds rank 0's cuts whatever its own clock says, and the
// pipeline trains as one process does.
TEST(PipelineWorld, LeNet5CutByTime) {
  std::vector<int> first;
  run_case(true, pl::Schedule::one_f_one_b, 2, pl::Balance::time, &first);
  std::vector<int> root = first;
  strategy_world()->broadcast(distributed::host_buffer(root.data(), root.size()), 0);
  EXPECT_EQ(first, root);
  EXPECT_EQ(first.size(), static_cast<std::size_t>(strategy_world()->size()));
}

}  // namespace

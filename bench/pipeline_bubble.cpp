// The pipeline's bubble and kept memory (parallel/pipeline/pipeline.h):
// a chain of S equal stages (each one dense layer of W units and its ReLU;
// the last adds a 10-unit head), trained on batches of B rows in M
// micro-batches under GPipe and 1F1B, stage s on rank s. Per schedule and
// M it prints, over `steps` steps after 2 warm-up steps: the median step
// time, each stage's idle fraction (1 - busy / step, busy being its own
// forward and backward passes, forwards run again included) averaged over
// the stages, GPipe's theory (S - 1) / (M + S - 1), the most micro-batches
// a stage kept and the most bytes of kept inputs (stage 0). Rank 0 prints;
// the (schedule, M) cases alternate, each measured in `rounds` rounds.
//   mpirun -np S ./bench_pipeline_bubble [W=512] [B=256] [steps=10] [rounds=3]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "magmadnn.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/parallel/pipeline/pipeline.h"

using namespace magmadnn;
namespace pl = distributed::pipeline;

namespace {

struct Sample {
  double step_s = 0, idle = 0, peak_bytes = 0, peak_in_flight = 0;
};

std::vector<pl::LayerFactory<float>> chain(int stages, std::int64_t width) {
  std::vector<pl::LayerFactory<float>> f;
  for (int s = 0; s < stages; ++s) {
    f.push_back([width](const op::Expr<float>& x) { return layer::fullyconnected<float>(x, width).ptr(); });
    f.push_back([](const op::Expr<float>& x) { return layer::activation<float>(x, layer::RELU).ptr(); });
  }
  f.push_back([](const op::Expr<float>& x) { return layer::fullyconnected<float>(x, 10).ptr(); });
  return f;
}

// `steps` timed steps (after 2 untimed ones); the medians over the steps.
Sample measure(std::shared_ptr<distributed::Communicator> comm, pl::Schedule sch, int micro, std::int64_t width,
               std::int64_t batch, int steps) {
  pl::PipelineOptions o;
  o.micro_batches = micro;
  o.schedule = sch;
  for (int s = 0; s < comm->size(); ++s) o.first.push_back(2 * s);
  set_seed(1);
  pl::Pipeline<float> pipe(comm, chain(comm->size(), width), {width},
                           std::make_shared<optimizer::GradientDescent<float>>(0.01), o);
  Tensor<float> x({batch, width}, {UNIFORM, {-1.0f, 1.0f}}, HOST), y({batch, 10}, {ZERO}, HOST);
  for (std::int64_t i = 0; i < batch; ++i) y.set({i, i % 10}, 1.0f);
  std::vector<double> step, idle;
  Sample out;
  for (int k = 0; k < steps + 2; ++k) {
    pipe.train_step(x, y);
    const pl::StepStats& st = pipe.last_step();
    double mine[2] = {st.wall_s, st.wall_s > 0 ? 1.0 - st.busy_s / st.wall_s : 0.0};
    std::vector<double> all(2 * static_cast<std::size_t>(comm->size()));
    comm->allgather(distributed::host_buffer(static_cast<const double*>(mine), 2),
                    distributed::host_buffer(all.data(), all.size()));
    if (k < 2) continue;
    double wall = 0, mean_idle = 0;
    for (int s = 0; s < comm->size(); ++s) wall = std::max(wall, all[2 * s]), mean_idle += all[2 * s + 1];
    step.push_back(wall);
    idle.push_back(mean_idle / comm->size());
    if (comm->rank() == 0) out.peak_bytes = static_cast<double>(st.peak_stash_bytes);
    if (comm->rank() == 0) out.peak_in_flight = st.peak_in_flight;
  }
  std::sort(step.begin(), step.end());
  std::sort(idle.begin(), idle.end());
  out.step_s = step[step.size() / 2];
  out.idle = idle[idle.size() / 2];
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t width = argc > 1 ? std::atoll(argv[1]) : 512;
  const std::int64_t batch = argc > 2 ? std::atoll(argv[2]) : 256;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 10;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 3;
  std::shared_ptr<distributed::Communicator> comm = distributed::make_communicator("auto");
  const int S = comm->size();
  const std::vector<int> micros{1, 2, 4, 8};
  const std::vector<pl::Schedule> schedules{pl::Schedule::gpipe, pl::Schedule::one_f_one_b};
  std::vector<std::vector<Sample>> got(schedules.size() * micros.size());
  for (int r = 0; r < rounds; ++r)  // the cases alternate; a round reverses the order every other time
    for (std::size_t i = 0; i < got.size(); ++i) {
      const std::size_t c = r % 2 ? got.size() - 1 - i : i;
      got[c].push_back(measure(comm, schedules[c / micros.size()], micros[c % micros.size()], width, batch, steps));
    }
  if (comm->rank() != 0) return 0;
  std::printf("%d stages, dense %lld x %lld per stage, batch %lld, medians of %d rounds x %d steps\n", S,
              static_cast<long long>(width), static_cast<long long>(width), static_cast<long long>(batch), rounds,
              steps);
  std::printf("schedule  M  step_ms  idle  theory  kept_micro  kept_bytes(stage0)\n");
  for (std::size_t c = 0; c < got.size(); ++c) {
    auto& v = got[c];
    std::sort(v.begin(), v.end(), [](const Sample& a, const Sample& b) { return a.step_s < b.step_s; });
    const Sample& m = v[v.size() / 2];
    const int M = micros[c % micros.size()];
    std::printf("%-8s %2d  %7.2f  %.3f  %.3f   %d  %.0f\n", pl::schedule_name(schedules[c / micros.size()]), M,
                1e3 * m.step_s, m.idle, double(S - 1) / (M + S - 1), static_cast<int>(m.peak_in_flight), m.peak_bytes);
  }
  return 0;
}

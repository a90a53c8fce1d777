// How much of a strategy's communication hides behind the backward pass:
// trains the MagmaDNN paper's MLP (784 -> N x 528 sigmoid -> 10, float) on
// random data at a global batch split over the ranks, and prints each
// rank's split of the steps into compute, communication and the overlapped
// part (Strategy::timing()), after a few warm-up steps.
//   mpirun -np 2 ./bench_strategy_overlap [N=4] [strategy=allreduce] [bucket_mb=25] [steps=60] [global_batch=100]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "magmadnn.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/parallel/strategy_registry.h"

using namespace magmadnn;

int main(int argc, char** argv) {
  const int hidden_layers = argc > 1 ? std::atoi(argv[1]) : 4;
  const std::string name = argc > 2 ? argv[2] : distributed::default_strategy().name;
  const double bucket_mb = argc > 3 ? std::atof(argv[3]) : 25.0;
  const int steps = argc > 4 ? std::atoi(argv[4]) : 60;
  const int global_batch = argc > 5 ? std::atoi(argv[5]) : 100;
  const int warmup = 5;

  std::shared_ptr<distributed::Communicator> comm = distributed::make_communicator("auto");
  const int ranks = comm->size(), rank = comm->rank();
  const std::int64_t local = global_batch / ranks;

  set_seed(1);
  auto x_ph = op::placeholder<float>("x", {-1, 784});
  x_ph->set_value(Tensor<float>({1, 784}, {ZERO}));
  std::vector<std::shared_ptr<layer::Layer<float>>> layers;
  auto in = layer::input<float>(x_ph);
  layers.push_back(in.ptr());
  op::Expr<float> out = in->out();
  for (int i = 0; i < hidden_layers; ++i) {
    auto fc = layer::fullyconnected<float>(out, 528, true);
    auto act = layer::activation<float>(fc->out(), layer::SIGMOID);
    layers.push_back(fc.ptr());
    layers.push_back(act.ptr());
    out = act->out();
  }
  auto fc = layer::fullyconnected<float>(out, 10, true);
  auto sm = layer::activation<float>(fc->out(), layer::SOFTMAX);
  layers.push_back(fc.ptr());
  layers.push_back(sm.ptr());
  layers.push_back(layer::output<float>(sm->out()).ptr());
  model::nn_params_t p{local, 1, 0.05};
  p.shuffle = false;
  model::NeuralNetwork<float> net(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, p);

  distributed::StrategyOptions o;
  o.bucket_bytes = static_cast<std::size_t>(bucket_mb * (1 << 20));
  auto strategy = distributed::make_strategy<float>(name, comm, o);
  strategy->attach(net);

  Tensor<float> x({local * (steps + warmup), 784}, {UNIFORM, {0.0f, 1.0f}});
  std::vector<float> yv(static_cast<std::size_t>(local * (steps + warmup) * 10), 0.0f);
  for (std::int64_t i = 0; i < local * (steps + warmup); ++i) yv[static_cast<std::size_t>(i * 10 + i % 10)] = 1.0f;
  Tensor<float> y = Tensor<float>::from_vector({local * (steps + warmup), 10}, yv);

  distributed::StepTiming at_warmup;
  auto cb = std::make_shared<model::LambdaCallback<float>>();
  cb->batch_end = [&](model::NeuralNetwork<float>&, const model::BatchLogs& logs) {
    if (logs.batch + 1 == warmup) at_warmup = strategy->timing();
  };
  model::FitOptions<float> fo;
  fo.callbacks.push_back(cb);
  const auto t0 = std::chrono::steady_clock::now();
  net.fit(x, y, fo);
  strategy->finalize();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  distributed::StepTiming t = strategy->timing();
  t.steps -= at_warmup.steps;
  t.compute_seconds -= at_warmup.compute_seconds;
  t.comm_seconds -= at_warmup.comm_seconds;
  t.overlapped_seconds -= at_warmup.overlapped_seconds;
  const double per = 1e3 / static_cast<double>(t.steps);
  std::printf("rank %d/%d %s N=%d bucket %.2f MB: %lld steps, per step compute %.2f ms, comm %.2f ms, "
              "overlapped %.2f ms (%.0f%% hidden), exposed %.2f ms; fit %.2f s\n",
              rank, ranks, name.c_str(), hidden_layers, bucket_mb, static_cast<long long>(t.steps),
              per * t.compute_seconds, per * t.comm_seconds, per * t.overlapped_seconds,
              t.comm_seconds > 0 ? 100.0 * t.overlapped_seconds / t.comm_seconds : 0.0, per * t.exposed_seconds(),
              wall);
  return 0;
}

// One training step of the wide MLP of issue 17 (784 -> 4096 -> 4096 -> 10,
// ReLU, softmax, float SGD) model-parallel against data-parallel, with the
// bytes each rank sends into collectives per step.
//  - model: fc1 column-parallel, fc2 row-parallel (layer/parallel_fully_
//    connected.h), fc3 replicated; every rank runs the whole global batch
//    on its 1/P of the two big weights;
//  - data: plain layers, the allreduce strategy (bucketed, overlapped with
//    backward), every rank runs global_batch / P samples on all the weights.
// The communicator is wrapped in a counter, so the volume is measured, not
// derived. Prints the median step time after warm-up.
//   mpirun -np 2 ./bench_model_parallel_mlp model|data [steps=20] [global_batch=64]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "magmadnn.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/parallel/allreduce_strategy.h"

using namespace magmadnn;
using distributed::Buffer;
using distributed::ConstBuffer;
using CommOp = distributed::ReduceOp;
using distributed::RequestPtr;

namespace {

// Forwards every call to `inner` and counts the bytes this rank hands to
// collectives (the reduce / gather input, not what the algorithm moves on
// the wire: a ring allreduce of n bytes sends about 2 n (P - 1) / P).
class CountingCommunicator final : public distributed::Communicator {
 public:
  explicit CountingCommunicator(std::shared_ptr<distributed::Communicator> inner) : inner_(std::move(inner)) {
    timeout_ = inner_->timeout();
  }
  std::uint64_t bytes() const noexcept { return bytes_; }
  std::uint64_t calls() const noexcept { return calls_; }

  int rank() const noexcept override { return inner_->rank(); }
  int size() const noexcept override { return inner_->size(); }
  std::string backend() const override { return inner_->backend(); }
  bool supports(distributed::Place p) const noexcept override { return inner_->supports(p); }
  RequestPtr iallreduce(Buffer b, CommOp op) override { return count(b.bytes()), inner_->iallreduce(b, op); }
  RequestPtr ibroadcast(Buffer b, int root) override { return count(b.bytes()), inner_->ibroadcast(b, root); }
  RequestPtr ireduce_scatter(ConstBuffer s, Buffer r, CommOp op) override {
    return count(s.bytes()), inner_->ireduce_scatter(s, r, op);
  }
  RequestPtr iallgather(ConstBuffer s, Buffer r) override { return count(s.bytes()), inner_->iallgather(s, r); }
  RequestPtr igather(ConstBuffer s, Buffer r, int root) override { return count(s.bytes()), inner_->igather(s, r, root); }
  RequestPtr iscatter(ConstBuffer s, Buffer r, int root) override {
    return count(r.bytes()), inner_->iscatter(s, r, root);
  }
  RequestPtr ireduce(Buffer b, CommOp op, int root) override { return count(b.bytes()), inner_->ireduce(b, op, root); }
  RequestPtr isend(ConstBuffer b, int dest, int tag) override { return count(b.bytes()), inner_->isend(b, dest, tag); }
  RequestPtr irecv(Buffer b, int source, int tag) override { return inner_->irecv(b, source, tag); }
  void barrier() override { inner_->barrier(); }

 private:
  void count(std::size_t n) noexcept { bytes_ += n, ++calls_; }
  std::shared_ptr<distributed::Communicator> inner_;
  std::atomic<std::uint64_t> bytes_{0}, calls_{0};  // the allreduce strategy calls from its own thread
};

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "model";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  const std::int64_t global_batch = argc > 3 ? std::atoll(argv[3]) : 64;
  const int warmup = 3;
  if (mode != "model" && mode != "data") {
    std::fprintf(stderr, "usage: %s model|data [steps] [global_batch]\n", argv[0]);
    return 2;
  }
  auto counter = std::make_shared<CountingCommunicator>(distributed::make_communicator("auto"));
  const int ranks = counter->size(), rank = counter->rank();
  const bool model_parallel = mode == "model";
  const std::int64_t batch = model_parallel ? global_batch : global_batch / ranks;

  set_seed(1);
  auto x_ph = op::placeholder<float>("x", {-1, 784});
  x_ph->set_value(Tensor<float>({1, 784}, {ZERO}));
  std::vector<std::shared_ptr<layer::Layer<float>>> layers;
  auto push = [&](auto ref) {
    layers.push_back(ref.ptr());
    return ref->out();
  };
  op::Expr<float> h = push(layer::input<float>(x_ph));
  if (model_parallel) {
    h = push(layer::column_parallel_fc<float>(h, 4096, counter));
    h = push(layer::activation<float>(h, layer::RELU));
    h = push(layer::row_parallel_fc<float>(h, 4096, counter));
  } else {
    h = push(layer::fullyconnected<float>(h, 4096, true));
    h = push(layer::activation<float>(h, layer::RELU));
    h = push(layer::fullyconnected<float>(h, 4096, true));
  }
  h = push(layer::activation<float>(h, layer::RELU));
  h = push(layer::fullyconnected<float>(h, 10, true));
  h = push(layer::activation<float>(h, layer::SOFTMAX));
  push(layer::output<float>(h));
  model::nn_params_t p{batch, 1, 0.01};
  p.shuffle = false;
  model::NeuralNetwork<float> net(layers, optimizer::CROSS_ENTROPY, optimizer::SGD, p);
  std::unique_ptr<distributed::Strategy<float>> strategy;
  if (!model_parallel) {
    strategy = std::make_unique<distributed::AllreduceStrategy<float>>(counter, distributed::StrategyOptions{});
    strategy->attach(net);
  }

  const std::int64_t n = batch * (steps + warmup);
  Tensor<float> x({n, 784}, {UNIFORM, {0.0f, 1.0f}});
  std::vector<float> yv(static_cast<std::size_t>(n * 10), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) yv[static_cast<std::size_t>(i * 10 + i % 10)] = 1.0f;
  Tensor<float> y = Tensor<float>::from_vector({n, 10}, yv);

  std::vector<double> step_ms;
  std::uint64_t bytes_at_warmup = 0;
  auto last = std::chrono::steady_clock::now();
  auto cb = std::make_shared<model::LambdaCallback<float>>();
  cb->batch_end = [&](model::NeuralNetwork<float>&, const model::BatchLogs& logs) {
    const auto now = std::chrono::steady_clock::now();
    if (logs.batch >= warmup) step_ms.push_back(std::chrono::duration<double, std::milli>(now - last).count());
    if (logs.batch + 1 == warmup) bytes_at_warmup = counter->bytes();
    last = now;
  };
  model::FitOptions<float> fo;
  fo.callbacks.push_back(cb);
  net.fit(x, y, fo);
  const std::uint64_t bytes = counter->bytes() - bytes_at_warmup;
  if (strategy) strategy->finalize();

  std::sort(step_ms.begin(), step_ms.end());
  std::int64_t weights = 0;
  for (const auto& v : net.parameters()) weights += v->output().size();
  std::printf("rank %d/%d mode=%s global_batch=%lld local_batch=%lld median_step=%.2f ms "
              "sent_per_step=%.3f MB weights_here=%.2f MB\n",
              rank, ranks, mode.c_str(), static_cast<long long>(global_batch), static_cast<long long>(batch),
              step_ms.empty() ? 0.0 : step_ms[step_ms.size() / 2],
              static_cast<double>(bytes) / steps / 1e6, static_cast<double>(weights) * 4 / 1e6);
  return 0;
}

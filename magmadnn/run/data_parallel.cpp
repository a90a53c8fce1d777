#include "magmadnn/run/data_parallel.h"

#include "magmadnn/run/across_ranks.h"

namespace magmadnn::run {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

DataParallel::DataParallel(std::shared_ptr<distributed::Communicator> comm, const DistributedSpec& spec,
                           model::NeuralNetwork<float>& net)
    : comm_(std::move(comm)), net_(net) {
  MAGMADNN_CHECK(comm_ != nullptr, ValueError, "DataParallel: no communicator");
  MAGMADNN_CHECK(spec.strategy == "allreduce", NotSupportedError,
                 "DataParallel: strategy \"" << spec.strategy
                                             << "\" is not built in yet; only the interim allreduce adapter is");
  // ---- ADAPTER: replaced by make_strategy(spec.strategy, comm_, options)->attach(net) once it lands.
  broadcast_weights(*comm_, net_);
  net_.set_gradient_hook([this](const std::vector<op::Var<float>>&, std::vector<Tensor<float>*>& grads) {
    const auto t0 = Clock::now();
    comm_->set_step(net_.optimizer().step_count());  // quoted by the watchdog
    std::vector<distributed::RequestPtr> pending;
    for (Tensor<float>* g : grads) {
      pending.push_back(comm_->iallreduce(
          distributed::host_buffer(g->mutable_host_data(), static_cast<std::size_t>(g->size())),
          distributed::ReduceOp::avg));
    }
    distributed::wait_all(pending);
    communication_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  });
}

DataParallel::~DataParallel() { net_.set_gradient_hook({}); }

Json DataParallel::timing(double train_seconds) const {
  Json j;
  j["compute_seconds"] = train_seconds - communication_seconds_;
  j["communication_seconds"] = communication_seconds_;
  j["overlapped_seconds"] = 0.0;
  return j;
}

}  // namespace magmadnn::run

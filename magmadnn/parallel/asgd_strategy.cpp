#include "magmadnn/parallel/asgd_strategy.h"

#include <algorithm>
#include <array>
#include <limits>
#include <sstream>
#include <thread>
#include "magmadnn/parallel/strategy_registry.h"

namespace magmadnn::distributed {

namespace {
// Point-to-point tags of the protocol.
constexpr int kTagRequest = 7200;  // worker -> server: {kind, version}
constexpr int kTagGradient = 7201; // worker -> server: the gradient
constexpr int kTagReply = 7202;    // server -> worker: {version, staleness}
constexpr int kTagWeights = 7203;  // server -> worker: the weights
constexpr std::int64_t kPush = 0, kDone = 1;
constexpr std::int64_t kFinished = std::numeric_limits<std::int64_t>::max();

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

template <typename T>
void AsgdStrategy<T>::attach(model::NeuralNetwork<T>& net) {
  this->broadcast_initial_state(net);
  step_mark_ = std::chrono::steady_clock::now();
  model::TrainingPlugin<T>::attach(net);
  if (this->comm_->size() == 1) return;  // nobody to serve: plain local training, timed (after_update)
  net_ = &net;
  layout_ = detail::FlatParams<T>(net.parameters());
  flat_.assign(layout_.size(), T(0));
  grads_.assign(layout_.num_params(), nullptr);
  if (is_server()) {
    for (const auto& p : layout_.params()) {
      exprs_.push_back(p);
      table_.set(p, Tensor<T>(p->value()));
    }
  }
}

template <typename T>
void AsgdStrategy<T>::backward_finished(const std::vector<Tensor<T>*>& grads) {
  if (is_server()) {
    serve_step();
    return;
  }
  grads_ = grads;
  work();
}

template <typename T>
void AsgdStrategy<T>::after_update() {
  if (this->comm_->size() > 1) return;
  StepTiming step;
  step.steps = 1;
  const auto now = std::chrono::steady_clock::now();
  step.compute_seconds = seconds(now - step_mark_);
  step_mark_ = now;
  this->record_step(step);
}

template <typename T>
void AsgdStrategy<T>::count_staleness(std::int64_t s) {
  ++staleness_count_;
  staleness_sum_ += static_cast<double>(s);
  staleness_max_ = std::max(staleness_max_, s);
}

template <typename T>
StalenessStats AsgdStrategy<T>::staleness() const {
  StalenessStats s;
  s.gradients = staleness_count_;
  s.max = staleness_max_;
  s.mean = staleness_count_ > 0 ? staleness_sum_ / static_cast<double>(staleness_count_) : 0.0;
  return s;
}

template <typename T>
void AsgdStrategy<T>::apply(const T* gradient, T scale) {
  for (std::size_t i = 0; i < exprs_.size(); ++i) {
    Tensor<T>& g = *table_.get(exprs_[i]);
    T* dst = g.mutable_host_data();
    const T* src = gradient + layout_.offset(i);
    for (std::int64_t j = 0; j < g.size(); ++j) dst[j] = src[j] * scale;
  }
  // The rate and step number of the global step: W gradients make one
  // round, as one averaged step would in a synchronous run.
  optimizer::Optimizer<T>& opt = net_->optimizer();
  opt.set_step_count(step_base_ + std::min(global_step(), server_steps_));
  opt.step(exprs_, table_);
}

template <typename T>
void AsgdStrategy<T>::work() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < grads_.size(); ++i) {
    MAGMADNN_CHECK(grads_[i] != nullptr, ValueError, "AsgdStrategy: gradient " << i << " was not handed over");
    detail::read_tensor(*grads_[i], flat_.data() + layout_.offset(i));
    grads_[i] = nullptr;
  }
  Communicator& comm = *this->comm_;
  const int server = this->options_.server_rank;
  comm.set_step(this->timing().steps);
  std::array<std::int64_t, 2> request{kPush, version_};
  comm.send(host_buffer(static_cast<const std::int64_t*>(request.data()), 2), server, kTagRequest);
  comm.send(host_buffer(static_cast<const T*>(flat_.data()), flat_.size()), server, kTagGradient);
  std::array<std::int64_t, 2> reply{};
  comm.recv(host_buffer(reply.data(), 2), server, kTagReply);
  comm.recv(host_buffer(flat_.data(), flat_.size()), server, kTagWeights);
  layout_.write_values(flat_.data());
  version_ = reply[0];
  count_staleness(reply[1]);
  const auto t1 = Clock::now();
  StepTiming step;
  step.steps = 1;
  step.compute_seconds = seconds(t0 - step_mark_);
  step.comm_seconds = seconds(t1 - t0);
  step_mark_ = t1;
  this->record_step(step);
}

template <typename T>
std::int64_t AsgdStrategy<T>::global_step() const {
  return *std::min_element(clock_.begin(), clock_.end());
}

template <typename T>
void AsgdStrategy<T>::no_progress(const char* what, std::int64_t target) const {
  std::ostringstream behind;
  for (std::size_t w = 0; w < clock_.size(); ++w) {
    if (static_cast<int>(w) != this->options_.server_rank && clock_[w] < target)
      behind << (behind.tellp() > 0 ? ", " : "") << w << " (at step " << clock_[w] << ")";
  }
  MAGMADNN_THROW(CommError, "asgd server (rank " << this->options_.server_rank << "): " << what << ": no message for "
                                                 << this->comm_->timeout().count() << " ms from worker rank(s) "
                                                 << behind.str()
                                                 << (target == kFinished ? std::string("; waiting for them to finish")
                                                                         : "; waiting for step " + std::to_string(target)));
}

template <typename T>
bool AsgdStrategy<T>::serve_once(bool finishing) {
  Communicator& comm = *this->comm_;
  const int ranks = comm.size();
  const T scale = T(1) / static_cast<T>(ranks - 1);
  bool progressed = false;
  for (int w = 0; w < ranks; ++w) {
    const auto u = static_cast<std::size_t>(w);
    if (!pending_[u] || !pending_[u]->test()) continue;
    progressed = true;
    pending_[u].reset();
    if (header_[u][0] == kDone) {
      clock_[u] = kFinished;
      continue;
    }
    MAGMADNN_CHECK(!finishing, CommError,
                   "asgd server (rank " << this->options_.server_rank << "): worker rank " << w
                                        << " sent a gradient for its step " << clock_[u] + 1 << " after the server's last step "
                                        << server_steps_ << "; every rank must take the same number of steps");
    comm.recv(host_buffer(incoming_.data(), incoming_.size()), w, kTagGradient);
    const std::int64_t stale = global_step() - header_[u][1];
    count_staleness(stale);
    last_staleness_[u] = stale;
    apply(incoming_.data(), scale);
    ++clock_[u];
    waiting_[u] = true;
    pending_[u] = comm.irecv(host_buffer(header_[u].data(), 2), w, kTagRequest);
  }
  // Answer every worker the bound lets go on: one that has completed c
  // steps gets weights once the global step is at least c - bound.
  const std::int64_t g = global_step(), bound = this->options_.staleness_bound;
  bool read = false;
  for (int w = 0; w < ranks; ++w) {
    const auto u = static_cast<std::size_t>(w);
    if (!waiting_[u] || (g != kFinished && g < clock_[u] - bound)) continue;
    if (!read) {
      layout_.read_values(flat_.data());
      read = true;
    }
    std::array<std::int64_t, 2> reply{g, last_staleness_[u]};
    comm.send(host_buffer(static_cast<const std::int64_t*>(reply.data()), 2), w, kTagReply);
    comm.send(host_buffer(static_cast<const T*>(flat_.data()), flat_.size()), w, kTagWeights);
    waiting_[u] = false;
    progressed = true;
  }
  return progressed;
}

template <typename T>
void AsgdStrategy<T>::start_serving() {
  Communicator& comm = *this->comm_;
  const int ranks = comm.size(), server = this->options_.server_rank;
  const auto n = static_cast<std::size_t>(ranks);
  clock_.assign(n, 0);
  clock_[static_cast<std::size_t>(server)] = kFinished;
  last_staleness_.assign(n, 0);
  waiting_.assign(n, false);
  header_.assign(n, {});
  pending_.resize(n);
  incoming_.resize(flat_.size());
  step_base_ = net_->optimizer().step_count();  // after a resume: the checkpoint's
  for (int w = 0; w < ranks; ++w) {
    const auto u = static_cast<std::size_t>(w);
    if (w != server) pending_[u] = comm.irecv(host_buffer(header_[u].data(), 2), w, kTagRequest);
  }
}

template <typename T>
void AsgdStrategy<T>::serve_step() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (auto& g : grads_) g = nullptr;  // the server's own gradient is not used
  Communicator& comm = *this->comm_;
  if (clock_.empty()) start_serving();
  // This step of the server ends once every worker has completed as many.
  const std::int64_t target = ++server_steps_;
  comm.set_step(target - 1);
  auto last_progress = Clock::now();
  for (;;) {
    const bool progressed = serve_once(false);
    if (global_step() >= target) break;
    if (progressed) {
      last_progress = Clock::now();
    } else {
      if (Clock::now() - last_progress > comm.timeout()) no_progress("serving a step", target);
      std::this_thread::sleep_for(this->options_.poll_interval);
    }
  }
  net_->optimizer().set_step_count(step_base_ + target);  // every worker has completed `target` steps
  StepTiming step;
  step.steps = 1;
  step.compute_seconds = seconds(t0 - step_mark_);
  step_mark_ = Clock::now();
  step.comm_seconds = seconds(step_mark_ - t0);
  this->record_step(step);
}

template <typename T>
void AsgdStrategy<T>::finalize() {
  if (this->comm_->size() == 1 || finalized_) return;
  finalized_ = true;
  Communicator& comm = *this->comm_;
  const int server = this->options_.server_rank;
  if (!is_server()) {
    std::array<std::int64_t, 2> request{kDone, version_};
    comm.send(host_buffer(static_cast<const std::int64_t*>(request.data()), 2), server, kTagRequest);
  } else {
    using Clock = std::chrono::steady_clock;
    if (clock_.empty()) start_serving();  // no training step was taken
    auto last_progress = Clock::now();
    while (global_step() != kFinished) {
      if (serve_once(true)) {
        last_progress = Clock::now();
      } else {
        if (Clock::now() - last_progress > comm.timeout()) no_progress("waiting for the workers to finish", kFinished);
        std::this_thread::sleep_for(this->options_.poll_interval);
      }
    }
    layout_.read_values(flat_.data());
  }
  comm.broadcast(host_buffer(flat_.data(), flat_.size()), server);
  if (!is_server()) layout_.write_values(flat_.data());
}

template <typename T>
void AsgdStrategy<T>::synchronize() {
  if (this->comm_->size() == 1) return;
  MAGMADNN_CHECK(!finalized_, ValueError, "AsgdStrategy::synchronize after finalize");
  Communicator& comm = *this->comm_;
  const int server = this->options_.server_rank;
  // Between the server's steps every worker has completed server_steps_
  // steps and has its reply: the weights now hold every gradient so far.
  std::int64_t version = server_steps_;
  if (is_server()) layout_.read_values(flat_.data());
  comm.broadcast(host_buffer(&version, 1), server);
  comm.broadcast(host_buffer(flat_.data(), flat_.size()), server);
  if (!is_server()) {
    layout_.write_values(flat_.data());
    version_ = version;
  }
}

template class AsgdStrategy<float>;
template class AsgdStrategy<double>;

namespace {
const StrategyRegistrar<AsgdStrategy> registrar(
    {"asgd",
     "asynchronous SGD against rank 0 (which trains on no data), staleness at most distributed.staleness steps",
     40, {.server_trains_no_data = true, .reports_staleness = true}});
}  // namespace

}  // namespace magmadnn::distributed

#include "magmadnn/distributed/asgd_strategy.h"

#include <algorithm>
#include <array>
#include <limits>
#include <thread>

namespace magmadnn::distributed {

namespace {
// Point-to-point tags of the protocol.
constexpr int kTagRequest = 7200;  // worker -> server: {kind, version}
constexpr int kTagGradient = 7201; // worker -> server: the gradient
constexpr int kTagReply = 7202;    // server -> worker: {version, staleness}
constexpr int kTagWeights = 7203;  // server -> worker: the weights
constexpr std::int64_t kPush = 0, kDone = 1;

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

template <typename T>
void AsgdStrategy<T>::attach(model::NeuralNetwork<T>& net) {
  this->broadcast_initial_state(net);
  step_mark_ = std::chrono::steady_clock::now();
  if (this->comm_->size() == 1) return;  // nobody to serve: plain local training
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
  typename model::NeuralNetwork<T>::GradientReadyHooks hooks;
  hooks.ready = [this](std::size_t i, const op::Var<T>&, Tensor<T>& g) { grads_.at(i) = &g; };
  hooks.finish = [this] { is_server() ? serve() : work(); };
  hooks.apply_update = [] { return false; };
  net.set_gradient_ready_hooks(std::move(hooks));
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
  net_->optimizer().step(exprs_, table_);
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
void AsgdStrategy<T>::serve() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (auto& g : grads_) g = nullptr;  // the server's own gradient is not used
  Communicator& comm = *this->comm_;
  const int ranks = comm.size(), server = this->options_.server_rank;
  const std::int64_t bound = this->options_.staleness_bound;
  const T scale = T(1) / static_cast<T>(ranks - 1);
  constexpr std::int64_t kFinished = std::numeric_limits<std::int64_t>::max();

  std::vector<std::int64_t> clock(static_cast<std::size_t>(ranks), 0);  // steps pushed; kFinished when done
  std::vector<std::int64_t> last_staleness(static_cast<std::size_t>(ranks), 0);
  std::vector<bool> waiting(static_cast<std::size_t>(ranks), false);
  std::vector<std::array<std::int64_t, 2>> header(static_cast<std::size_t>(ranks));
  std::vector<RequestPtr> pending(static_cast<std::size_t>(ranks));
  std::vector<T> incoming(flat_.size());
  int running = ranks - 1;
  for (int w = 0; w < ranks; ++w) {
    if (w == server) {
      clock[static_cast<std::size_t>(w)] = kFinished;
      continue;
    }
    pending[static_cast<std::size_t>(w)] = comm.irecv(host_buffer(header[static_cast<std::size_t>(w)].data(), 2), w, kTagRequest);
  }
  const auto global_step = [&] { return *std::min_element(clock.begin(), clock.end()); };

  while (running > 0) {
    bool progressed = false;
    for (int w = 0; w < ranks; ++w) {
      const auto u = static_cast<std::size_t>(w);
      if (!pending[u] || !pending[u]->test()) continue;
      progressed = true;
      pending[u].reset();
      if (header[u][0] == kDone) {
        clock[u] = kFinished;
        --running;
        continue;
      }
      comm.recv(host_buffer(incoming.data(), incoming.size()), w, kTagGradient);
      const std::int64_t s = global_step() - header[u][1];
      count_staleness(s);
      last_staleness[u] = s;
      comm.set_step(staleness_count_);
      apply(incoming.data(), scale);
      ++clock[u];
      waiting[u] = true;
      pending[u] = comm.irecv(host_buffer(header[u].data(), 2), w, kTagRequest);
    }
    // Answer every worker the bound lets go on: one that has completed c
    // steps gets weights once the global step is at least c - bound.
    const std::int64_t g = global_step();
    bool read = false;
    for (int w = 0; w < ranks; ++w) {
      const auto u = static_cast<std::size_t>(w);
      if (!waiting[u] || (g != kFinished && g < clock[u] - bound)) continue;
      if (!read) {
        layout_.read_values(flat_.data());
        read = true;
      }
      std::array<std::int64_t, 2> reply{g, last_staleness[u]};
      comm.send(host_buffer(static_cast<const std::int64_t*>(reply.data()), 2), w, kTagReply);
      comm.send(host_buffer(static_cast<const T*>(flat_.data()), flat_.size()), w, kTagWeights);
      waiting[u] = false;
      progressed = true;
    }
    if (!progressed) std::this_thread::sleep_for(this->options_.poll_interval);
  }
  served_ = true;
  net_->stop_training();
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
    MAGMADNN_CHECK(served_, ValueError,
                   "AsgdStrategy::finalize: the server rank " << server << " finalized without having served "
                                                              "(call fit on every rank first)");
    layout_.read_values(flat_.data());
  }
  comm.broadcast(host_buffer(flat_.data(), flat_.size()), server);
  if (!is_server()) layout_.write_values(flat_.data());
}

template class AsgdStrategy<float>;
template class AsgdStrategy<double>;

}  // namespace magmadnn::distributed

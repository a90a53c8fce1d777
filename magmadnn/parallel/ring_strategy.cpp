#include "magmadnn/parallel/ring_strategy.h"

#include "magmadnn/parallel/flat_params.h"
#include "magmadnn/parallel/strategy_registry.h"

namespace magmadnn::distributed {

template <typename T>
void ring_allreduce_mean(Communicator& comm, T* data, std::size_t count, int tag) {
  const std::size_t n = static_cast<std::size_t>(comm.size());
  if (n == 1) return;
  const std::size_t r = static_cast<std::size_t>(comm.rank());
  const int right = static_cast<int>((r + 1) % n), left = static_cast<int>((r + n - 1) % n);
  const auto begin = [&](std::size_t c) { return count * c / n; };
  const auto size = [&](std::size_t c) { return begin(c + 1) - begin(c); };
  std::vector<T> incoming(count / n + 1);
  // Exchanges one chunk with the neighbours: ours to the right, theirs from
  // the left into `incoming`.
  const auto shift = [&](std::size_t send_chunk, std::size_t recv_chunk) {
    RequestPtr rx = comm.irecv(host_buffer(incoming.data(), size(recv_chunk)), left, tag);
    RequestPtr tx = comm.isend(host_buffer(static_cast<const T*>(data + begin(send_chunk)), size(send_chunk)), right, tag);
    rx->wait();
    tx->wait();
  };
  // Reduce-scatter: after step s, chunk (r - s - 1) holds the sum of s + 2
  // ranks' values, accumulated in ring order from the chunk's own rank.
  for (std::size_t s = 0; s + 1 < n; ++s) {
    const std::size_t send_chunk = (r + n - s) % n, recv_chunk = (r + n - s - 1) % n;
    shift(send_chunk, recv_chunk);
    T* acc = data + begin(recv_chunk);
    for (std::size_t j = 0; j < size(recv_chunk); ++j) acc[j] = incoming[j] + acc[j];
  }
  // This rank now owns chunk r + 1, summed over every rank.
  const std::size_t own = (r + 1) % n;
  const T ranks = static_cast<T>(n);
  for (std::size_t j = begin(own); j < begin(own) + size(own); ++j) data[j] /= ranks;
  // Allgather: pass the finished chunks around.
  for (std::size_t s = 0; s + 1 < n; ++s) {
    const std::size_t send_chunk = (r + 1 + n - s) % n, recv_chunk = (r + n - s) % n;
    shift(send_chunk, recv_chunk);
    std::copy(incoming.begin(), incoming.begin() + static_cast<std::ptrdiff_t>(size(recv_chunk)),
              data + begin(recv_chunk));
  }
}

template <typename T>
void RingStrategy<T>::attach(model::NeuralNetwork<T>& net) {
  this->broadcast_initial_state(net);
  detail::FlatParams<T> layout(net.parameters());
  grads_.assign(layout.num_params(), nullptr);
  flat_.assign(layout.size(), T(0));
  model::TrainingPlugin<T>::attach(net);
  step_mark_ = std::chrono::steady_clock::now();
}

template <typename T>
void RingStrategy<T>::on_finish() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  std::size_t at = 0;
  for (Tensor<T>* g : grads_) {
    MAGMADNN_CHECK(g != nullptr, ValueError, "RingStrategy: a gradient was not handed over before finish");
    detail::read_tensor(*g, flat_.data() + at);
    at += static_cast<std::size_t>(g->size());
  }
  this->comm_->set_step(this->timing().steps);
  ring_allreduce_mean(*this->comm_, flat_.data(), flat_.size());
  at = 0;
  for (Tensor<T>*& g : grads_) {
    detail::write_tensor(*g, flat_.data() + at);
    at += static_cast<std::size_t>(g->size());
    g = nullptr;
  }
  const auto t1 = Clock::now();
  StepTiming step;
  step.steps = 1;
  step.compute_seconds = std::chrono::duration<double>(t0 - step_mark_).count();
  step.comm_seconds = std::chrono::duration<double>(t1 - t0).count();
  step_mark_ = t1;
  this->record_step(step);
}

template void ring_allreduce_mean<float>(Communicator&, float*, std::size_t, int);
template void ring_allreduce_mean<double>(Communicator&, double*, std::size_t, int);
template class RingStrategy<float>;
template class RingStrategy<double>;

namespace {
const StrategyRegistrar<RingStrategy> registrar(
    {"ring", "the gradient average over a fixed-order ring: bit-identical run to run, no overlap", 50,
     {.same_gradients_every_step = true}});
}  // namespace

}  // namespace magmadnn::distributed

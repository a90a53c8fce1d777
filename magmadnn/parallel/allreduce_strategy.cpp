#include "magmadnn/parallel/allreduce_strategy.h"

#include <algorithm>
#include <utility>

#include "magmadnn/parallel/flat_params.h"
#include "magmadnn/parallel/strategy_registry.h"

namespace magmadnn::distributed {

namespace {
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

template <typename T>
AllreduceStrategy<T>::AllreduceStrategy(std::shared_ptr<Communicator> comm, StrategyOptions options)
    : Strategy<T>(std::move(comm), options), attach_time_(Clock::now()), step_mark_(attach_time_) {
  thread_ = std::thread([this] { comm_loop(); });
}

template <typename T>
AllreduceStrategy<T>::~AllreduceStrategy() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_comm_.notify_all();
  thread_.join();
}

template <typename T>
void AllreduceStrategy<T>::run_on_comm_thread(const std::function<void()>& task) {
  std::unique_lock<std::mutex> lock(mutex_);
  task_ = task;
  task_done_ = false;
  task_error_ = nullptr;
  wake_comm_.notify_all();
  wake_caller_.wait(lock, [&] { return task_done_; });
  if (task_error_) std::rethrow_exception(task_error_);
}

template <typename T>
void AllreduceStrategy<T>::attach(model::NeuralNetwork<T>& net) {
  MAGMADNN_CHECK(buckets_.empty() && grads_.empty(), ValueError,
                 "AllreduceStrategy::attach: this strategy is attached already (one strategy per network)");
  run_on_comm_thread([&] { this->broadcast_initial_state(net); });

  // A hybrid plan's mask: the strategy's own indices are those of the
  // exchanged parameters; the hooks' are the network's.
  const std::size_t n = net.parameters().size();
  own_index_.assign(n, kNotExchanged);
  for (std::size_t i = 0, k = 0; i < n; ++i) {
    if (this->options_.exchange.empty() || this->options_.exchange.at(i)) own_index_[i] = k++;
  }
  lay_out_buckets(this->exchanged_parameters(net));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    full_.assign(buckets_.size(), false);
  }

  this->gradient_scale_ = this->options_.sum_gradients ? 1.0 : 1.0 / static_cast<double>(this->comm_->size());
  model::TrainingPlugin<T>::attach(net);
  step_mark_ = Clock::now();
}

template <typename T>
void AllreduceStrategy<T>::gradient_ready(std::size_t i, const op::Var<T>&, Tensor<T>& g) {
  MAGMADNN_CHECK(i < own_index_.size(), ValueError, "AllreduceStrategy: gradient index " << i << " out of range");
  if (own_index_[i] != kNotExchanged) on_ready(own_index_[i], g);
}

template <typename T>
void AllreduceStrategy<T>::backward_finished(const std::vector<Tensor<T>*>&) {
  on_finish();
}

template <typename T>
void AllreduceStrategy<T>::lay_out_buckets(const std::vector<op::Var<T>>& params) {
  // Reverse parameter order: the backward pass finishes the last layer's
  // gradients first, so the first buckets can start early. A packed bucket
  // takes its place in the launch order when it closes (when its last
  // member is ready), after the in-place buckets met before that.
  const std::size_t n = params.size();
  slot_.assign(n, 0);
  bucket_of_.assign(n, 0);
  grads_.assign(n, nullptr);
  std::size_t total = 0;
  std::vector<std::size_t> packing;  // the open packed bucket's parameters
  std::size_t packed_count = 0;
  const auto close_packed = [&] {
    if (packing.empty()) return;
    Bucket b;
    b.begin = total;
    for (std::size_t k : packing) {
      slot_[k] = total;
      bucket_of_[k] = buckets_.size();
      total += static_cast<std::size_t>(params[k]->value().size());
    }
    b.count = packed_count;
    b.members = packing.size();
    buckets_.push_back(std::move(b));
    packing.clear();
    packed_count = 0;
  };
  for (std::size_t k = n; k-- > 0;) {
    const std::size_t count = static_cast<std::size_t>(params[k]->value().size());
    if (count * sizeof(T) >= this->options_.in_place_bytes) {
      Bucket b;
      b.begin = total;
      b.count = count;
      b.members = 1;
      b.in_place = true;
      slot_[k] = total;
      bucket_of_[k] = buckets_.size();
      total += count;
      buckets_.push_back(std::move(b));
      continue;
    }
    packing.push_back(k);
    packed_count += count;
    const std::size_t cap = buckets_.empty() ? std::min(this->options_.first_bucket_bytes, this->options_.bucket_bytes)
                                             : this->options_.bucket_bytes;
    if (packed_count * sizeof(T) >= cap) close_packed();
  }
  close_packed();
  // Packed buckets read their copies here; in-place ones use their range
  // only to accumulate no_sync steps.
  flat_.assign(total, T(0));
  for (Bucket& b : buckets_) {
    if (!b.in_place) b.data = flat_.data() + b.begin;
  }
}

template <typename T>
void AllreduceStrategy<T>::finalize() {
  // Every step already left the same averaged gradients, hence the same
  // weights, on every rank: nothing to exchange.
}

template <typename T>
void AllreduceStrategy<T>::event(TimelineEvent::Kind kind, int index, Clock::time_point at) {
  if (this->options_.record_timeline) live_timeline_.push_back({kind, index, seconds(at - attach_time_)});
}

template <typename T>
void AllreduceStrategy<T>::on_ready(std::size_t i, Tensor<T>& grad) {
  const auto now = Clock::now();
  MAGMADNN_CHECK(i < grads_.size(), ValueError, "AllreduceStrategy: gradient index " << i << " out of range");
  if (readies_++ == 0) step_syncs_ = sync_;
  grads_[i] = &grad;
  Bucket& bucket = buckets_[bucket_of_[i]];
  T* acc = flat_.data() + slot_[i];
  T* g = grad.mutable_host_data();
  const std::size_t n = static_cast<std::size_t>(grad.size());
  if (!step_syncs_) {
    // no_sync: this step only adds to the local sum.
    if (accumulated_ == 0) {
      std::copy(g, g + n, acc);
    } else {
      for (std::size_t j = 0; j < n; ++j) acc[j] += g[j];
    }
    return;
  }
  // The bucket's input: the mean over the accumulated steps and this one,
  // in the gradient itself (in place) or in the packed copy.
  T* dst = bucket.in_place ? g : acc;
  if (accumulated_ == 0) {
    if (dst != g) std::copy(g, g + n, dst);
  } else {
    const T scale = T(1) / static_cast<T>(accumulated_ + 1);
    for (std::size_t j = 0; j < n; ++j) dst[j] = (acc[j] + g[j]) * scale;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  event(TimelineEvent::Kind::ready, static_cast<int>(i), now);
  if (bucket.in_place) bucket.data = g;
  if (++bucket.filled == bucket.members) {
    full_[bucket_of_[i]] = true;
    wake_comm_.notify_all();
  }
}

template <typename T>
void AllreduceStrategy<T>::on_finish() {
  const auto backward_end = Clock::now();
  StepTiming step;
  step.steps = 1;
  step.compute_seconds = seconds(backward_end - step_mark_);
  if (readies_ == 0) step_syncs_ = sync_;  // a network without parameters
  MAGMADNN_CHECK(step_syncs_ || this->options_.exchange.empty(), ValueError,
                 "AllreduceStrategy: set_sync(false) with an exchange mask: the parameters left out would not "
                 "accumulate their gradients");
  if (!step_syncs_) {
    ++accumulated_;
    readies_ = 0;
    step_mark_ = Clock::now();
    this->record_step(step);
    return;
  }
  MAGMADNN_CHECK(readies_ == grads_.size(), ValueError,
                 "AllreduceStrategy: " << readies_ << " of " << grads_.size()
                                       << " gradients were handed over before the backward pass ended");
  std::unique_lock<std::mutex> lock(mutex_);
  event(TimelineEvent::Kind::backward_end, -1, backward_end);
  backward_done_ = true;
  wake_comm_.notify_all();
  wake_caller_.wait(lock, [&] { return comm_done_; });
  if (error_) std::rethrow_exception(error_);
  lock.unlock();

  for (std::size_t i = 0; i < grads_.size(); ++i) {
    if (!buckets_[bucket_of_[i]].in_place) detail::write_tensor(*grads_[i], flat_.data() + slot_[i]);
  }

  // Communication time: the union of the buckets' [launch, completion]
  // intervals (they are launched in order); overlapped: its part before the
  // backward pass ended.
  Clock::time_point cover_end{};
  for (const Bucket& b : buckets_) {
    const auto from = std::max(b.launched, cover_end);
    if (b.completed > from) {
      step.comm_seconds += seconds(b.completed - from);
      if (from < backward_end) step.overlapped_seconds += seconds(std::min(b.completed, backward_end) - from);
      cover_end = b.completed;
    }
  }
  const auto end = Clock::now();

  lock.lock();
  event(TimelineEvent::Kind::step_end, -1, end);
  for (Bucket& b : buckets_) {
    b.filled = 0;
    b.done = false;
    b.request.reset();
  }
  std::fill(full_.begin(), full_.end(), false);
  next_launch_ = 0;
  backward_done_ = false;
  comm_done_ = false;
  if (this->options_.record_timeline) this->timeline_.swap(live_timeline_);
  live_timeline_.clear();
  lock.unlock();
  readies_ = 0;
  accumulated_ = 0;
  step_mark_ = end;
  this->record_step(step);
}

template <typename T>
void AllreduceStrategy<T>::comm_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  std::size_t in_flight = 0;
  for (;;) {
    if (stop_) return;
    if (task_) {
      const std::function<void()> task = std::move(task_);
      task_ = nullptr;
      lock.unlock();
      std::exception_ptr failed;
      try {
        task();
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      task_error_ = failed;
      task_done_ = true;
      wake_caller_.notify_all();
      continue;
    }
    const bool launchable = next_launch_ < buckets_.size() && full_[next_launch_];
    if (!comm_done_ && !error_ && (launchable || backward_done_ || in_flight > 0)) {
      try {
        // Start the full buckets, strictly in bucket order, so every rank
        // issues the same collectives in the same order.
        while (next_launch_ < buckets_.size() && full_[next_launch_]) {
          const std::size_t b = next_launch_++;
          lock.unlock();
          Bucket& bucket = buckets_[b];
          if (b == 0) this->comm_->set_step(this->timing().steps);
          bucket.launched = Clock::now();
          // A sum: the backward pass was seeded with 1 / ranks.
          bucket.request = this->comm_->iallreduce(host_buffer(bucket.data, bucket.count), ReduceOp::sum);
          ++in_flight;
          lock.lock();
          event(TimelineEvent::Kind::launch, static_cast<int>(b), bucket.launched);
        }
        const std::size_t launched = next_launch_;
        const bool last_round = backward_done_ && launched == buckets_.size();
        lock.unlock();
        // Drive progress: test() is what moves Open MPI's non-blocking
        // collectives along; once backward is over, block in wait() (which
        // the communicator's watchdog bounds).
        for (std::size_t b = 0; b < launched; ++b) {
          Bucket& bucket = buckets_[b];
          if (bucket.done) continue;
          if (last_round) {
            bucket.request->wait();
          } else if (!bucket.request->test()) {
            continue;
          }
          bucket.done = true;
          bucket.completed = Clock::now();
          --in_flight;
          lock.lock();
          event(TimelineEvent::Kind::complete, static_cast<int>(b), bucket.completed);
          lock.unlock();
        }
        lock.lock();
        if (last_round) {
          comm_done_ = true;
          wake_caller_.notify_all();
        }
      } catch (...) {
        if (!lock.owns_lock()) lock.lock();
        error_ = std::current_exception();
        in_flight = 0;
        comm_done_ = true;
        wake_caller_.notify_all();
      }
    }
    if (stop_ || task_) continue;
    const auto has_work = [&] {
      return stop_ || task_ ||
             (!comm_done_ && !error_ &&
              ((next_launch_ < buckets_.size() && full_[next_launch_]) || backward_done_));
    };
    if (in_flight > 0) {
      wake_comm_.wait_for(lock, this->options_.poll_interval, has_work);
    } else {
      wake_comm_.wait(lock, has_work);
    }
  }
}

template class AllreduceStrategy<float>;
template class AllreduceStrategy<double>;

namespace {
const StrategyRegistrar<AllreduceStrategy> registrar(
    {"allreduce", "gradients averaged in buckets that overlap the backward pass (one communication thread)", 10,
     {.same_gradients_every_step = true, .serves_model_parallel = true}});
}  // namespace

}  // namespace magmadnn::distributed

/// @file allreduce_strategy.h
/// AllreduceStrategy<T> ("allreduce", the default): synchronous data
/// parallelism with gradients averaged over all ranks, overlapped with the
/// backward pass (PyTorch DDP's buckets, Horovod's background thread).
///
/// How: at attach the parameters are laid into buckets in reverse
/// parameter order (the order the backward pass finishes gradients). A
/// parameter of at least StrategyOptions::in_place_bytes is a bucket of its
/// own, reduced where its gradient lies; smaller ones are packed together,
/// a packed bucket closing at about bucket_bytes (the first one:
/// first_bucket_bytes). The backward pass is seeded with 1 / ranks
/// (TrainingPlugin::Part::gradient_scale), so the allreduce sums and leaves
/// the mean with no division pass. gradient_ready copies a small gradient
/// into its packed bucket; when a bucket is complete it is handed to the
/// one communication thread, which starts its non-blocking allreduce and
/// keeps calling test() on every request in flight while backward runs,
/// since Open MPI makes no progress on its own. backward_finished waits for every
/// bucket and copies the packed means back; the optimizer step then runs on
/// every rank with the same averaged gradients.
///
/// Not final: a variant that changes only how the buckets travel derives
/// from it, passing a decorating communicator, and overrides name().
///
/// With StrategyOptions::exchange only the parameters it names are
/// bucketed and reduced (gradient_ready returns at once for the others); with
/// sum_gradients the seed is 1 and the allreduce leaves the sum.
///
/// Requires: a Communicator safe to call from a thread other than the one
/// that created it, one thread at a time (MPI_THREAD_SERIALIZED or better).
/// Guarantees: from construction to destruction only the communication
/// thread calls the communicator (attach's broadcast runs on it too), so
/// the caller's thread never races it; buckets start in bucket order on
/// every rank, whatever order their gradients complete in, so collectives
/// match across ranks; a failed exchange is rethrown from backward_finished (and
/// every later step) as the CommError it was.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "magmadnn/parallel/strategy.h"

namespace magmadnn::distributed {

template <typename T>
class AllreduceStrategy : public Strategy<T> {
 public:
  AllreduceStrategy(std::shared_ptr<Communicator> comm, StrategyOptions options);
  ~AllreduceStrategy() override;

  std::string name() const override { return "allreduce"; }
  void attach(model::NeuralNetwork<T>& net) override;
  void finalize() override;
  bool wants_gradients() const override { return true; }
  void gradient_ready(std::size_t index, const op::Var<T>& param, Tensor<T>& grad) override;
  void backward_finished(const std::vector<Tensor<T>*>& grads) override;
  bool apply_update() override { return step_syncs_; }

  /// PyTorch DDP's no_sync, as a switch set between steps: while off, a
  /// step only adds its gradients to a local sum (no exchange, no optimizer
  /// step); the next step with sync on exchanges the mean over those steps
  /// and its own, then updates, as one step on the union of their batches.
  void set_sync(bool on) noexcept { sync_ = on; }
  bool sync() const noexcept { return sync_; }
  /// How many buckets the parameters were laid into (valid after attach).
  std::size_t num_buckets() const noexcept { return buckets_.size(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Bucket {
    std::size_t begin = 0, count = 0;  // its range of flat_
    std::size_t members = 0;  // parameters in it
    bool in_place = false;    // one parameter, reduced in its gradient tensor
    T* data = nullptr;        // what this step's allreduce reduces
    std::size_t filled = 0;   // of its parameters, ready this step
    RequestPtr request;
    Clock::time_point launched, completed;
    bool done = false;
  };

  void lay_out_buckets(const std::vector<op::Var<T>>& params);
  void on_ready(std::size_t i, Tensor<T>& grad);
  void on_finish();
  void run_on_comm_thread(const std::function<void()>& task);
  void comm_loop();
  void event(TimelineEvent::Kind kind, int index, Clock::time_point at);

  static constexpr std::size_t kNotExchanged = static_cast<std::size_t>(-1);
  std::vector<std::size_t> own_index_;  // network parameter -> exchanged parameter, or kNotExchanged
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> slot_;       // parameter -> first element in flat_ (packed: its bucket's copy;
                                        // in place: where no_sync steps accumulate it)
  std::vector<std::size_t> bucket_of_;  // parameter -> bucket
  std::vector<Tensor<T>*> grads_;       // this step's gradient tensors
  std::vector<T> flat_;
  bool sync_ = true;
  bool step_syncs_ = true;  // sync_ as the step began
  int accumulated_ = 0;     // no_sync steps summed in flat_
  std::size_t readies_ = 0;
  Clock::time_point attach_time_, step_mark_;
  std::vector<TimelineEvent> live_timeline_;

  // Shared with the communication thread, under mutex_.
  std::mutex mutex_;
  std::condition_variable wake_comm_, wake_caller_;
  std::vector<bool> full_;  // bucket b's gradients are all in flat_
  std::size_t next_launch_ = 0;
  bool backward_done_ = false, comm_done_ = false, stop_ = false;
  std::function<void()> task_;  // a call to run on the communication thread
  bool task_done_ = false;
  std::exception_ptr error_, task_error_;
  std::thread thread_;
};

}  // namespace magmadnn::distributed

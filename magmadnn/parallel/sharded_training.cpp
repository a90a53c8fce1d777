#include "magmadnn/parallel/sharded_training.h"

#include "magmadnn/comm/broadcast_text.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/data/shard.h"
#include "magmadnn/parallel/layer_state.h"

namespace magmadnn::distributed {

template <typename T>
ShardedTraining<T>::ShardedTraining(std::shared_ptr<Communicator> comm, Strategy<T>& strategy, ShardOptions options)
    : comm_(std::move(comm)), strategy_(strategy), options_(options) {
  MAGMADNN_CHECK(comm_ != nullptr, ValueError, "ShardedTraining: no communicator");
  MAGMADNN_CHECK(options_.server_rank >= -1 && options_.server_rank < comm_->size(), ValueError,
                 "ShardedTraining: server rank " << options_.server_rank << " of " << comm_->size() << " ranks");
}

template <typename T>
void ShardedTraining<T>::attach(model::NeuralNetwork<T>& net) {
  strategy_.attach(net);
  net_ = &net;
  model::TrainingPlugin<T>::attach(net);
}

template <typename T>
typename ShardedTraining<T>::Part ShardedTraining<T>::part(std::int64_t rows) const {
  Part p = strategy_.part(rows);
  const int size = comm_->size(), rank = comm_->rank(), server = options_.server_rank;
  if (size == 1 || options_.replicated) return p;
  if (rank == server) return Part{0, 0, false, 1.0};
  const int trainers = server >= 0 ? size - 1 : size;
  const int trainer = server < 0 ? rank : rank - (rank > server ? 1 : 0);
  const data::RowRange mine = data::shard_rows(rows, trainer, trainers);
  p.begin = mine.begin;
  p.count = mine.count;
  // Weighted by the slice's share, so that the plain average over the
  // trainers is the global batch's mean gradient when slices differ by a row.
  if (rows > 0) p.gradient_scale *= static_cast<double>(trainers * mine.count) / static_cast<double>(rows);
  return p;
}

template <typename T>
void ShardedTraining<T>::epoch_end() {
  if (comm_->size() == 1) return;
  MAGMADNN_CHECK(net_ != nullptr, ValueError, "ShardedTraining: epoch_end before attach");
  strategy_.synchronize();
  // The server's layer state never saw data: the first trainer's stands for the model.
  broadcast_layer_state(*comm_, *net_, options_.server_rank == 0 ? 1 : 0);
}

template <typename T>
void ShardedTraining<T>::sum_metrics(std::vector<double>& sums) {
  if (comm_->size() > 1 && !sums.empty()) comm_->allreduce(host_buffer(sums.data(), sums.size()), ReduceOp::sum);
}

// Every rank hears rank 0's outcome. Why: the others would otherwise run on
// into the next step's collective, which rank 0 never joins, and fail only
// when a watchdog fires, naming a timeout rather than the full disk.
template <typename T>
void ShardedTraining<T>::agree_on_checkpoint(const std::exception_ptr& failure, const std::string& path) {
  std::string why;
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
      why = "an exception that is not a std::exception";
    }
    if (why.empty()) why = "(no message)";
  }
  broadcast_text(*comm_, why, 0);
  if (failure) std::rethrow_exception(failure);
  MAGMADNN_CHECK(why.empty(), IOError,
                 "rank " << comm_->rank() << ": rank 0 could not write the checkpoint " << path
                         << ", so every rank stops here (a checkpoint written before is intact): " << why);
}

template class ShardedTraining<float>;
template class ShardedTraining<double>;

}  // namespace magmadnn::distributed

#include "magmadnn/parallel/layers/parallel_fully_connected.h"

#include <cstdint>

#include "magmadnn/compute/shape_ops.h"
#include "magmadnn/parallel/model_parallel/group_tensor.h"
#include "magmadnn/parallel/model_parallel/root_rng.h"
#include "magmadnn/parallel/model_parallel/weight_group.h"

namespace magmadnn::layer {
namespace {


// The input width the whole layer sees: with a split input each rank knows
// only its share, so the shares are summed (and checked to be the shards
// that shard_of assigns).
std::int64_t whole_width(distributed::Communicator& group, std::int64_t local, bool split, const std::string& name) {
  if (!split || group.size() == 1) return local;
  std::int64_t total = local;
  group.allreduce(distributed::host_buffer(&total, 1), distributed::ReduceOp::sum);  // not a matrix block: a width
  const auto s = shard_of(total, group.size(), group.rank());
  MAGMADNN_CHECK(s.extent == local, ShapeError,
                 "layer::row_parallel_fc " << name << ": rank " << group.rank() << " receives " << local
                                           << " input features, but its shard of the " << total << " in all is "
                                           << s.extent << " (the input must come split as shard_of splits it)");
  return total;
}

}  // namespace

template <typename T>
ParallelFullyConnectedLayer<T>::ParallelFullyConnectedLayer(op::Expr<T> x, std::int64_t units, ModelSplit split,
                                                            distributed::mp::GroupPtr group, Options options,
                                                            std::string name)
    : Layer<T>(std::move(name), std::move(x), split == ModelSplit::column ? "column_parallel_fc" : "row_parallel_fc"),
      split_(split),
      group_(std::move(group)),
      units_(units) {
  const char* what = split == ModelSplit::column ? "layer::column_parallel_fc " : "layer::row_parallel_fc ";
  MAGMADNN_CHECK(group_ != nullptr, ValueError, what << this->name_ << ": needs a communicator for its group");
  MAGMADNN_CHECK(this->input_, ValueError, what << this->name_ << ": empty input handle");
  const int p = group_->size(), r = group_->rank();
  const Shape in = this->known_input_shape();
  MAGMADNN_CHECK(in.ndim() >= 2, ShapeError, what << this->name_ << ": input must be {batch, features...}, got " << in);
  op::Expr<T> xin = in.ndim() > 2 ? op::flatten(this->input_) : this->input_;
  const bool split_input = split == ModelSplit::row && options.input_is_split;
  in_features_ = whole_width(*group_, in.numel() / in[0], split_input, this->name_);
  const std::int64_t parts = split == ModelSplit::column ? units_ : in_features_;
  MAGMADNN_CHECK(parts >= p, ValueError,
                 what << this->name_ << ": " << parts << (split == ModelSplit::column ? " units" : " input features")
                      << " cannot be split over " << p << " ranks (each needs at least one)");
  shard_ = shard_of(parts, p, r);

  distributed::mp::adopt_root_rng(*group_);
  const memory_t mem = this->input_memory();
  {
    // The whole initial W, drawn as FullyConnectedLayer draws it, lives only
    // for this block: the layer keeps its slice.
    const Tensor<T> full(full_weight_shape(), options.weight_init, mem);
    if (split == ModelSplit::column) {
      w_ = this->add_weight("W", Shape{shard_.extent, in_features_}, {NONE});
      w_->value().copy_from(full.slice(shard_.offset, shard_.offset + shard_.extent));
    } else {
      w_ = this->add_weight("W", Shape{units_, shard_.extent}, {NONE});
      w_->value().copy_from(distributed::mp::take_columns(full, shard_));
    }
  }
  if (options.use_bias) b_ = this->add_weight("b", Shape{split == ModelSplit::column ? shard_.extent : units_}, {ZERO});

  this->set_output(split == ModelSplit::column
                       ? distributed::mp::column_parallel_linear<T>(xin, w_, b_, group_, units_, options.gather_output)
                       : distributed::mp::row_parallel_linear<T>(xin, w_, b_, group_, options.input_is_split));
}

template <typename T>
std::optional<Sharding> ParallelFullyConnectedLayer<T>::sharding() const {
  const bool column = split_ == ModelSplit::column;
  Sharding s{distributed::mp::weight_group(group_), "FullyConnected", {{full_weight_shape(), column ? 0 : 1, shard_}}};
  if (b_) s.weights.push_back(column ? WeightSplit{Shape{units_}, 0, shard_} : WeightSplit{Shape{units_}, -1, {}});
  return s;
}

template class ParallelFullyConnectedLayer<float>;
template class ParallelFullyConnectedLayer<double>;

}  // namespace magmadnn::layer

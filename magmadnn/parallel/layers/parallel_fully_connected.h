/// @file parallel_fully_connected.h
/// layer::ParallelFullyConnectedLayer<T>: a fully connected layer whose
/// weight is split over a model-parallel group of P ranks (Megatron-LM), so
/// each rank stores and updates 1/P of it (the shard sizes differ by at
/// most one row or column when P does not divide the size).
///
///  - ModelSplit::column: rank r holds output units shard_of(units, P, r)
///    (rows of W {units, in}, and those entries of b). The input is whole
///    on every rank; the output is this rank's units, or all of them with
///    gather_output.
///  - ModelSplit::row: rank r holds input features shard_of(in, P, r)
///    (columns of W), and the whole b. The input is this rank's features
///    (input_is_split, i.e. straight from a column-parallel layer without
///    gather_output) or whole; the output is whole and the same on every
///    rank.
///
///   auto h  = layer::column_parallel_fc<float>(x, 4096, group);   // split output
///   auto a  = layer::activation<float>(h->out(), layer::RELU);     // per column
///   auto y  = layer::row_parallel_fc<float>(a->out(), 4096, group); // whole output
///
/// The collectives and their autodiff are model_parallel/parallel_linear.h's.
///
/// Initialization equals the single-process FullyConnected layer's: the
/// generator state is taken from rank 0 (a broadcast), every rank draws the
/// whole initial W exactly as FullyConnectedLayer would (same stream, same
/// fan-in and fan-out), keeps its slice and frees the rest; b starts at zero.
/// So a P-rank network and a one-process network built in the same order
/// start from the same weights and, fed the same batches, train alike.
///
/// Requires: every rank of `group` builds the same layers in the same
/// order (construction is collective: it broadcasts the generator state,
/// and a row layer with input_is_split sums the input widths); at least one
/// unit (column) or input feature (row) per rank. Guarantees: get_weight()
/// holds only this rank's slice; full_weight_shape() is the whole W.
#pragma once

#include <cstdint>

#include "magmadnn/parallel/model_parallel/parallel_linear.h"
#include "magmadnn/layer/layer.h"

namespace magmadnn::layer {

/// Which dimension of W {units, in} a ParallelFullyConnectedLayer splits.
enum class ModelSplit { column, row };

template <typename T>
class ParallelFullyConnectedLayer : public Layer<T> {
 public:
  struct Options {
    bool use_bias = true;
    tensor_filler_t<T> weight_init{GLOROT};
    /// Column split: allgather the output so the next layer sees every unit.
    bool gather_output = false;
    /// Row split: the input arrives holding only this rank's features.
    bool input_is_split = true;
  };

  ParallelFullyConnectedLayer(op::Expr<T> x, std::int64_t units, ModelSplit split, distributed::mp::GroupPtr group,
                              Options options, std::string name = "");

  std::string type_name() const override {
    return split_ == ModelSplit::column ? "ColumnParallelFullyConnected" : "RowParallelFullyConnected";
  }
  /// Column: W and b cut along axis 0 (output units); row: W along axis 1
  /// (input features), b whole. Stands for a FullyConnected layer.
  std::optional<Sharding> sharding() const override;
  ModelSplit split() const noexcept { return split_; }
  std::int64_t units() const noexcept { return units_; }
  /// The whole layer's input width (not this rank's share of it).
  std::int64_t in_features() const noexcept { return in_features_; }
  /// The whole W: {units, in_features}.
  Shape full_weight_shape() const { return Shape{units_, in_features_}; }
  /// This rank's rows (column split) or columns (row split) of W.
  Shard weight_shard() const noexcept { return shard_; }
  distributed::Communicator& group() const noexcept { return *group_; }
  bool has_bias() const noexcept { return static_cast<bool>(b_); }
  /// This rank's slice: {shard, in} (column) or {units, shard} (row).
  const op::Var<T>& get_weight() const noexcept { return w_; }
  /// This rank's slice of b (column) or the whole b (row); empty without one.
  const op::Var<T>& get_bias() const noexcept { return b_; }

 private:
  ModelSplit split_;
  distributed::mp::GroupPtr group_;
  std::int64_t units_ = 0, in_features_ = 0;
  Shard shard_;
  op::Var<T> w_, b_;
};

/// A column-parallel layer (output units split over `group`).
template <typename T>
Ref<ParallelFullyConnectedLayer<T>> column_parallel_fc(const op::Expr<T>& x, std::int64_t units,
                                                       distributed::mp::GroupPtr group, bool gather_output = false,
                                                       bool use_bias = true,
                                                       const tensor_filler_t<T>& weight_init = {GLOROT}) {
  typename ParallelFullyConnectedLayer<T>::Options o;
  o.use_bias = use_bias, o.weight_init = weight_init, o.gather_output = gather_output;
  return make_layer<ParallelFullyConnectedLayer<T>>(x, units, ModelSplit::column, std::move(group), o);
}

/// A row-parallel layer (input features split over `group`).
template <typename T>
Ref<ParallelFullyConnectedLayer<T>> row_parallel_fc(const op::Expr<T>& x, std::int64_t units,
                                                    distributed::mp::GroupPtr group, bool input_is_split = true,
                                                    bool use_bias = true,
                                                    const tensor_filler_t<T>& weight_init = {GLOROT}) {
  typename ParallelFullyConnectedLayer<T>::Options o;
  o.use_bias = use_bias, o.weight_init = weight_init, o.input_is_split = input_is_split;
  return make_layer<ParallelFullyConnectedLayer<T>>(x, units, ModelSplit::row, std::move(group), o);
}

}  // namespace magmadnn::layer

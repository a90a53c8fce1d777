/// @file sharding.h
/// layer::Sharding: how a layer split over a model-parallel group holds its
/// weights, so that code outside the layer (checkpoints, whole-tensor norms
/// of LARS and LAMB) can put the whole tensors together and cut them apart
/// again without knowing the layer or the communication under it.
///
/// A split layer stands for a one-process layer (a column-parallel fully
/// connected layer for a FullyConnected, a channel-parallel convolution for
/// a Conv2D): `whole_type` is that layer's type_name(), and each of its
/// weights is either whole on every rank or cut along one axis, rank r of
/// `group` holding indices shard_of(whole[axis], size, r) of it
/// (core/shard.h).
///
/// Why an interface here: the model (checkpoints) sits below the parallel
/// code in the layering (docs/design.md), so it sees the group only as what
/// it must do with split weights; parallel/ implements it over a
/// Communicator.
///
/// Guarantees (of a layer that returns one from Layer::sharding()): one
/// WeightSplit per get_weights() entry, in that order; a split weight's
/// tensor has the shape of `whole` with axis `axis` cut to `shard.extent`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/core/shape.h"
#include "magmadnn/core/shard.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::layer {

/// The group a split layer's weights are spread over. Every member but
/// size() and rank() is a collective: every rank of the group calls it, in
/// the same order, with the same whole shapes (a mismatch or a missing rank
/// is the communicator's CommError).
class WeightGroup {
 public:
  virtual ~WeightGroup() = default;
  virtual int size() const noexcept = 0;
  virtual int rank() const noexcept = 0;
  /// values[0..n) = their sum over the group, on every rank.
  virtual void sum(double* values, std::size_t n) = 0;
  /// The tensor of shape `whole` whose axis `axis` is cut into every rank's
  /// `part` (shard_of order), on every rank.
  virtual Tensor<float> gather(const Tensor<float>& part, const Shape& whole, std::int64_t axis) = 0;
  virtual Tensor<double> gather(const Tensor<double>& part, const Shape& whole, std::int64_t axis) = 0;
  /// This rank's part of `whole` (local: no communication).
  virtual Tensor<float> cut(const Tensor<float>& whole, std::int64_t axis, Shard shard) const = 0;
  virtual Tensor<double> cut(const Tensor<double>& whole, std::int64_t axis, Shard shard) const = 0;
};

/// One weight of a split layer.
struct WeightSplit {
  Shape whole;             ///< the one-process layer's tensor
  std::int64_t axis = -1;  ///< the axis cut over the group; -1: whole on every rank
  Shard shard;             ///< this rank's indices of that axis
  bool split() const noexcept { return axis >= 0; }
};

struct Sharding {
  std::shared_ptr<WeightGroup> group;
  std::string whole_type;            ///< type_name() of the one-process layer
  std::vector<WeightSplit> weights;  ///< one per get_weights() entry
};

}  // namespace magmadnn::layer

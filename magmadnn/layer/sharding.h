/// @file sharding.h
/// layer::Sharding: how a layer split over a model-parallel group holds its
/// weights, so that code outside the layer (checkpoints) can put the whole
/// tensors together and cut them apart again without knowing the layer.
///
/// A split layer stands for a one-process layer (a column-parallel fully
/// connected layer for a FullyConnected, a channel-parallel convolution for
/// a Conv2D): `whole_type` is that layer's type_name(), and each of its
/// weights is either whole on every rank or cut along one axis, rank r of
/// `group` holding indices shard_of(whole[axis], size, r) of it
/// (distributed/model_parallel/shard.h).
///
/// Guarantees (of a layer that returns one from Layer::sharding()): one
/// WeightSplit per get_weights() entry, in that order; a split weight's
/// tensor has the shape of `whole` with axis `axis` cut to `shard.extent`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/distributed/model_parallel/shard.h"
#include "magmadnn/core/shape.h"

namespace magmadnn::distributed {
class Communicator;
}

namespace magmadnn::layer {

/// One weight of a split layer.
struct WeightSplit {
  Shape whole;                   ///< the one-process layer's tensor
  std::int64_t axis = -1;        ///< the axis cut over the group; -1: whole on every rank
  distributed::mp::Shard shard;  ///< this rank's indices of that axis
  bool split() const noexcept { return axis >= 0; }
};

struct Sharding {
  std::shared_ptr<distributed::Communicator> group;
  std::string whole_type;             ///< type_name() of the one-process layer
  std::vector<WeightSplit> weights;   ///< one per get_weights() entry
};

}  // namespace magmadnn::layer

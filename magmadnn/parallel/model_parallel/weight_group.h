/// @file weight_group.h
/// layer::WeightGroup (layer/sharding.h) over a Communicator: what the
/// split layers hand the model so that checkpoints and whole-tensor norms
/// reach the group without the model knowing communicators.
///
/// Requires: a non-null communicator whose ranks are the layer's group.
/// Guarantees: gather is group_tensor.h's allgather_axis, cut its
/// take_axis, sum its sum_over_group (gather and sum are dMath calls, cut
/// is local).
#pragma once

#include <memory>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/layer/sharding.h"

namespace magmadnn::distributed::mp {

std::shared_ptr<layer::WeightGroup> weight_group(std::shared_ptr<Communicator> comm);

}  // namespace magmadnn::distributed::mp

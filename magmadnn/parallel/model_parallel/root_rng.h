/// @file root_rng.h
/// How the model-parallel layers start from the same weights as their
/// single-process counterparts: before drawing, every rank of the group
/// adopts rank 0's generator state (dMath §2.3: seeds come from rank 0), so
/// each draws the whole initial weight exactly as one process would and
/// keeps its slice.
///
/// Requires: every rank of the group calls it at the same point of building
/// the network (it is a broadcast). Guarantees: afterwards the generator
/// state (core/random.h: seed and stream counter) is rank 0's on every
/// rank; with one rank, nothing happens.
#pragma once

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed::mp {

void adopt_root_rng(Communicator& group);

}  // namespace magmadnn::distributed::mp

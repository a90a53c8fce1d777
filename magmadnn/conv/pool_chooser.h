/// @file pool_chooser.h
/// Picks the pooling implementation for a problem by timing, as chooser.h
/// does for convolutions.
///
/// On the first use of a (input shape, pooling parameters, pass, element
/// type, device), every implementation of the device that supports the
/// problem (pool_impl.h) runs on random data: one warm-up each, then five
/// interleaved rounds; the fastest run decides. With a single candidate (the
/// reference, e.g. for double or on the GPU) nothing is timed. Forward is
/// timed with an argmax to fill (max pooling, as training does) and backward
/// from that argmax, so a pass is timed as the graph runs it.
///
/// Forcing: set_forced_pool_impl(name), else MAGMADNN_POOL_IMPL=<name>
/// ("cpu", "onednn", "cuda"); a name the device does not have, or an
/// implementation that does not support the problem, is a NotSupportedError
/// naming it. Choices live in memory only (pooling is measured in well under
/// a millisecond).
///
/// Thread safety: all functions may be called from any thread.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/conv/pool_impl.h"

namespace magmadnn::conv {

/// What was measured for one pooling problem and pass.
struct PoolChoice {
  std::string name;  ///< the implementation picked
  /// Seconds per call of every implementation timed, reference first (empty when nothing was timed).
  std::vector<std::pair<std::string, double>> times;
};

/// The implementation to run pooling of x_shape with p: its backward pass
/// when `backward`, else its forward. nullptr when the device has none.
template <typename T>
PoolImpl<T>* choose_pool(const Shape& x_shape, const PoolParams& p, bool backward, DeviceKind device);

/// The choice choose_pool made for a key, if it made one (forced picks are not kept).
template <typename T>
std::optional<PoolChoice> cached_pool_choice(const Shape& x_shape, const PoolParams& p, bool backward,
                                             DeviceKind device);

/// Times host implementations (all for the CPU, all supporting the problem)
/// as choose_pool does: a warm-up each, then `rounds` interleaved rounds.
/// Returns each one's fastest run in seconds, in order.
template <typename T>
std::vector<double> time_pool_impls(const std::vector<PoolImpl<T>*>& impls, const Shape& x_shape, const PoolParams& p,
                                    bool backward, int rounds = 5);

/// Forces an implementation by name for every later pick; "" removes the force.
void set_forced_pool_impl(const std::string& name);
/// Forgets every measured choice.
void clear_pool_choices();

}  // namespace magmadnn::conv

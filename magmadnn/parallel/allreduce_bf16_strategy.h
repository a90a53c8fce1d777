/// @file allreduce_bf16_strategy.h
/// AllreduceBf16Strategy<T> ("allreduce-bf16"): the allreduce strategy
/// (allreduce_strategy.h: buckets overlapped with the backward pass, one
/// communication thread) with the gradients sent as bfloat16, half the
/// bytes of float (a quarter of double) on the wire, and accumulated in
/// float or wider by the communicator (dMath §4.2: "reduced precision data
/// types enable even better scaling ... by reducing data transfer size").
/// Selected like any strategy: "distributed": {"strategy": "allreduce-bf16"}
/// in the run config, or `magmadnn train --strategy allreduce-bf16`.
///
/// How: it is AllreduceStrategy<T> itself, built on the communicator
/// decorator bf16_gradient_exchange(comm), the one thing that differs. The
/// decorator's iallreduce of a host float or double buffer (a bucket)
/// rounds the bucket to a bfloat16 copy (to nearest even, as
/// bfloat16(float); a double is rounded to float first), starts the wrapped
/// communicator's iallreduce of that copy, and when the request completes
/// (test() true, or wait()) writes the reduced values back, widened, where
/// the bucket lies. The mean needs no pass of its own: the allreduce
/// strategy seeds the backward pass with 1 / ranks, so the gradients are
/// scaled before they are rounded (exactly, for a power-of-two rank count)
/// and the sum of the copies is the mean. The copies come from a pool, so a
/// step allocates nothing once the buckets have been seen.
///
/// Accuracy: each rank's gradient is rounded once (relative error at most
/// 2^-8, bfloat16's unit roundoff); the ThreadCommunicator sums the copies
/// in double and rounds the sum once more; MpiCommunicator combines two
/// partial sums at a time in float and rounds each to bfloat16, at most
/// ranks - 1 roundings. So element i of the exchanged gradient is within
/// about ranks * 2^-8 * mean_r |g_r[i]| of the float exchange's (g_r: rank
/// r's gradient); the exponent range is float's, so nothing overflows or
/// flushes that float would keep. Every rank receives the same bits, so
/// the traits are allreduce's (loss scaling across ranks and model-parallel
/// plans are served as by allreduce).
///
/// Requires: what AllreduceStrategy requires. The watchdog is the wrapped
/// communicator's: set its timeout, not the decorator's. Guarantees: what
/// AllreduceStrategy guarantees, with gradients as above; only iallreduce
/// of host float or double buffers with sum or avg is narrowed, every other
/// call (attach's broadcast of the weights, device buffers, max/min) is
/// forwarded unchanged, so the ranks start from rank 0's exact weights.
#pragma once

#include <memory>
#include <string>

#include "magmadnn/parallel/allreduce_strategy.h"

namespace magmadnn::distributed {

/// A communicator that forwards every call to `inner`, except that an
/// iallreduce of a host f32 or f64 buffer with ReduceOp::sum or avg is sent
/// as bfloat16 (rounded to nearest even) and written back widened when the
/// request completes. rank(), size() and supports() are inner's; backend()
/// is inner's with "+bf16". ValueError for a null `inner`.
std::shared_ptr<Communicator> bf16_gradient_exchange(std::shared_ptr<Communicator> inner);

template <typename T>
class AllreduceBf16Strategy final : public AllreduceStrategy<T> {
 public:
  /// AllreduceStrategy<T> on bf16_gradient_exchange(comm), with the same
  /// options (and the same ValueErrors for bad ones).
  AllreduceBf16Strategy(std::shared_ptr<Communicator> comm, StrategyOptions options);

  std::string name() const override { return "allreduce-bf16"; }
};

}  // namespace magmadnn::distributed

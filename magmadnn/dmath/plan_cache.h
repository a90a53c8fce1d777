/// @file plan_cache.h
/// The plans of dmath's operations, made once per combination of layouts
/// and reused by every later call (dMath §3.3's cached metadata). A
/// training step repeats the same redistributions and products with the
/// same layouts, so after the first step no rank works out runs, message
/// sizes or GEMM algorithms again.
///
/// Plans were never exchanged (each rank derives them from the layouts it
/// already knows), so the cache saves each rank's own planning work, which
/// for a redistribution is a walk over every block boundary of both layouts
/// and every pair of ranks. The identifier of a plan is the description of
/// its layouts (Layout::str), the flags and the group's size and rank; equal
/// descriptions mean equal layouts, so a plan is never reused for layouts
/// it was not made for.
///
/// Guarantees: thread-safe; at most kMaxPlans plans of each kind are kept
/// (the oldest are dropped past that, so a program that keeps making new
/// layouts does not grow without bound); stats() counts every plan made and
/// every reuse since the last reset.
#pragma once

#include <cstdint>

namespace magmadnn::distributed::dmath {

struct PlanStats {
  std::uint64_t made = 0;    ///< plans worked out (cache misses)
  std::uint64_t reused = 0;  ///< calls served by a kept plan
};

inline constexpr std::size_t kMaxPlans = 4096;

/// This process's counts, over redistributions and GEMMs together.
PlanStats plan_stats() noexcept;
/// Drops every kept plan and zeroes the counts.
void reset_plan_cache() noexcept;

}  // namespace magmadnn::distributed::dmath

/// @file counter_rng.h
/// Stateless random numbers for the search: a draw is a pure function of
/// (seed, counter, stream), so trial i's parameters depend on (seed, i) alone,
/// whatever else was drawn before, by whom or in what order. (The idea of a
/// counter-based generator, as in Random123; the mixing is SplitMix64's
/// finalizer applied three times.)
///
/// Guarantees: uniform01 returns a double in [0, 1) with 53 random bits, the
/// same on every platform for the same arguments.
#pragma once

#include <cstdint>

namespace magmadnn::tune {

/// SplitMix64's output function: a bijection of 64-bit words with good avalanche.
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// A uniform draw in [0, 1) for (seed, counter, stream); stream tells apart
/// the draws of one counter (one per search dimension).
constexpr double uniform01(std::uint64_t seed, std::uint64_t counter, std::uint64_t stream) noexcept {
  const std::uint64_t h = mix64(mix64(mix64(seed) ^ counter) ^ (stream * 0xd1b54a32d192ed03ULL));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace magmadnn::tune

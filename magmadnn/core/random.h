/// @file random.h
/// The single source of randomness in magmadnn.
///
/// Every random fill, dropout mask and shuffle draws from Philox under one
/// global seed (`set_seed`). Each consumer takes a fresh *stream* number from
/// a global counter, so two tensors never share "random" values, and the same
/// program with the same seed repeats bit for bit. In distributed runs rank 0's
/// seed is broadcast so that every rank agrees (dMath §2.3).
#pragma once

#include <cstdint>

namespace magmadnn {

/// Default seed of a fresh process (runs repeat unless a seed is set).
inline constexpr std::uint64_t kDefaultSeed = 0x6d61676d61646e6eull;

/// Sets the global seed and restarts the stream counter.
void set_seed(std::uint64_t seed);
/// The current global seed.
std::uint64_t get_seed();
/// Reserves and returns the next stream number (thread-safe).
std::uint64_t next_random_stream();

/// The whole generator state: enough to resume a run exactly (checkpoints).
struct RngState {
  std::uint64_t seed;
  std::uint64_t next_stream;
};
RngState get_rng_state();
void set_rng_state(const RngState& s);

}  // namespace magmadnn

/// @file sample_rng.h
/// SampleRng: a small counter-based generator over Philox for the data
/// pipeline (shuffles and augmentation).
///
/// Its draws are a pure function of (key, stream, draw number), so a batch
/// prepared by any thread, in any order, gets the same random numbers: the
/// DataLoader derives the stream from (epoch) for the shuffle and from
/// (epoch, sample index) for augmentation. Not thread-safe: one per task.
#pragma once

#include <cstdint>

#include "magmadnn/core/philox.h"

namespace magmadnn::data {

class SampleRng {
 public:
  SampleRng(std::uint64_t key, std::uint64_t stream) noexcept : key_(key), stream_(stream) {}

  /// A uniform 32-bit integer.
  std::uint32_t next_u32() noexcept {
    if (pos_ == 4) {
      block_ = philox::block(key_, counter_++, stream_);
      pos_ = 0;
    }
    return block_.v[pos_++];
  }
  /// Uniform in [0, 1).
  double uniform() noexcept { return philox::to_unit_double(next_u32(), next_u32()); }
  /// Uniform integer in [0, n) for n >= 1 (multiply-shift: no division, and
  /// a bias below n / 2^64, negligible for data-set sizes).
  std::uint64_t uniform_int(std::uint64_t n) noexcept {
    const std::uint64_t x = (std::uint64_t(next_u32()) << 32) | next_u32();
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
  }
  /// True with probability p.
  bool bernoulli(double p) noexcept { return uniform() < p; }

 private:
  std::uint64_t key_, stream_;
  std::uint64_t counter_ = 0;
  philox::u32x4 block_{};
  int pos_ = 4;
};

}  // namespace magmadnn::data

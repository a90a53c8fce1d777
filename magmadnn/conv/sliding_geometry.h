/// @file sliding_geometry.h
/// Internal to the sliding-window convolution (sliding_conv.cpp): the
/// problem its kernels see, and how they block it. The kernels themselves
/// are in sliding_kernels.inc, compiled once per instruction set.
#pragma once

#include <array>
#include <cstdint>

namespace magmadnn::conv::sliding {

/// Bytes per vector in every build: 16 floats or 8 doubles. The AVX2 and
/// baseline builds split a vector into 2 or 4 registers, so padding and
/// blocking are the same on every machine.
inline constexpr int kVectorBytes = 64;
template <typename T>
inline constexpr std::int64_t kLanes = kVectorBytes / static_cast<int>(sizeof(T));

/// One correlation with stride 1 over an input already zero-padded on every
/// side: out[n, g*co + k, p, q] = sum over c < ci, r < R, s < S of
/// in[n, g*ci + c, p + r, q + s] * w[g*co + k, c, r, s]. Input rows are wp
/// long, which leaves room for whole vectors past the last output column.
struct Geo {
  std::int64_t n, groups, ci, co, r, s;
  std::int64_t p, q;    ///< output rows and columns
  std::int64_t hp, wp;  ///< padded input rows and row length
  std::int64_t in_channels() const { return groups * ci; }
  std::int64_t out_channels() const { return groups * co; }
};

/// Output-channel block widths the kernels are compiled for. A partial block
/// repeats its last channel rather than branching, and stores only the real
/// ones.
inline constexpr std::array<int, 6> kBlocks = {1, 2, 3, 4, 6, 8};

/// The block for `channels` when at most `max_block` fit the registers: as
/// few blocks as that allows, then the narrowest width covering them.
/// Returns an index into kBlocks.
inline int block_index(std::int64_t channels, int max_block) {
  const std::int64_t nblocks = (channels + max_block - 1) / max_block;
  const std::int64_t want = (channels + nblocks - 1) / nblocks;
  for (int i = 0; i < static_cast<int>(kBlocks.size()); ++i)
    if (kBlocks[static_cast<std::size_t>(i)] >= want) return i;
  return static_cast<int>(kBlocks.size()) - 1;
}

/// Forward-shaped kernel: KB output channels x NV vectors of a row (NV <= 4)
/// as accumulators, 16-24 of AVX-512's 32 registers.
constexpr int max_out_block(int nv) { return nv <= 2 ? 8 : 6; }
/// Filter kernel: KB channels x SB taps of accumulators plus KB vectors of
/// dy live at once.
constexpr int max_filter_block(int sb) { return (29 / (sb + 1)) < 8 ? 29 / (sb + 1) : 8; }
inline constexpr int kMaxTapBlock = 8;

/// Caps the instruction set the kernels run with: 4 (x86-64-v4, AVX-512),
/// 3 (x86-64-v3, AVX2) or 0 (the baseline), so that tests reach every
/// version on one machine. The default is the best the CPU has; a cap above
/// it changes nothing.
void set_isa_cap(int level);

}  // namespace magmadnn::conv::sliding

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
  /// Padded input rows [live_begin, live_end) hold data; the others are all
  /// zero padding, and the forward kernel skips the taps that would read
  /// them (the data gradient's full correlation pads dy by the kernel's
  /// height less one on both sides: on LeNet-5's conv2, 29% of its taps).
  std::int64_t live_begin = 0, live_end = hp;
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

/// How large a block each kernel takes depends on the register file, so
/// sliding_conv.cpp defines the limits in each instruction set's namespace
/// (kRowVectors, max_out_block, kMaxTapBlock, max_filter_block,
/// kChannelTaps): the tests reach every version, the layouts stay the same.

/// Caps the instruction set the kernels run with: 4 (x86-64-v4, AVX-512),
/// 3 (x86-64-v3, AVX2) or 0 (the baseline), so that tests reach every
/// version on one machine. The default is the best the CPU has; a cap above
/// it changes nothing.
void set_isa_cap(int level);

/// The backward filter pass has two kernels: Rows vectorises along dy's rows
/// (one horizontal sum per tap), Channels along output channels (dy
/// transposed first). Auto picks the one whose vectors hold more useful
/// lanes; the others force one, so that tests reach both.
enum class FilterKernel { Auto, Rows, Channels };
void set_filter_kernel(FilterKernel k);
/// The kernel for a pass with this many output channels per group and
/// output columns, at `lanes` values per vector.
FilterKernel filter_kernel_for(std::int64_t out_channels, std::int64_t out_cols, std::int64_t lanes);

}  // namespace magmadnn::conv::sliding

/// @file lane_walk.h
/// How the CPU kernels of the channel-blocked and channels-last activation
/// layouts (conv/layout.h defines them; the batch normalisation and pooling
/// kernels read them) find an element. Here, below conv/, so that the
/// kernels and tensor/'s checked entry points can use it.
///
/// A layout value is a channel block B (8 or 16: oneDNN's nChwBc) or
/// kChannelsLast (NHWC). Both hold, at every pixel, runs of `lanes`
/// adjacent channels, which a kernel handles as one vector.
#pragma once

#include <cstdint>

namespace magmadnn::cpu {

/// The layout value (in place of a block) for channels last, NHWC.
inline constexpr int kChannelsLast = -1;
/// The channels a kernel handles at once in the channels-last layout.
inline constexpr int kChannelsLastLanes = 16;

/// The walk of a {N, C, R} tensor (R = H * W pixels) in a layout: channel c
/// of sample n at pixel i is at
///   n * sample + (c / lanes) * block + i * pixel + c % lanes.
/// Blocked with B: lanes B, block R * B, pixel B; channels last: lanes
/// kChannelsLastLanes, block kChannelsLastLanes, pixel C.
struct LaneWalk {
  int lanes;
  std::int64_t sample, block, pixel;
};

/// Whether `layout` can hold `c` channels: a block of 8 or 16 dividing c,
/// or channels last with c a multiple of kChannelsLastLanes.
inline bool walkable(std::int64_t c, int layout) {
  const int lanes = layout == kChannelsLast ? kChannelsLastLanes : layout;
  return (lanes == 8 || lanes == 16) && c > 0 && c % lanes == 0;
}

/// The walk of `c` channels of `r` pixels in `layout`. Requires walkable(c, layout).
inline LaneWalk lane_walk(std::int64_t c, std::int64_t r, int layout) {
  if (layout == kChannelsLast) return {kChannelsLastLanes, c * r, kChannelsLastLanes, c};
  return {layout, c * r, r * layout, layout};
}

}  // namespace magmadnn::cpu

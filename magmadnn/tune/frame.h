/// @file frame.h
/// Length-prefixed frames on a stream socket: a 4-byte little-endian length,
/// then that many bytes. The local worker processes' wire format.
///
/// Guarantees: write_frame never raises SIGPIPE (MSG_NOSIGNAL) and throws
/// CommError when the peer is gone; read_frame returns nullopt on a clean
/// end of stream before a frame starts, and throws CommError on a frame cut
/// short or an I/O error. Both retry on EINTR and short transfers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace magmadnn::tune {

/// The largest frame accepted (a trial with its train config and curve is a few KiB).
inline constexpr std::uint32_t kMaxFrame = 64u << 20;

void write_frame(int fd, const std::string& payload);
std::optional<std::string> read_frame(int fd);

}  // namespace magmadnn::tune

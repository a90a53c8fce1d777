#include "magmadnn/tune/frame.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "magmadnn/core/errors.h"

namespace magmadnn::tune {
namespace {

void send_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    MAGMADNN_CHECK(k > 0, CommError, "tune: cannot send a frame on fd " << fd << ": " << std::strerror(errno));
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

// Reads exactly n bytes; false on end of stream before the first byte.
bool recv_all(int fd, char* p, std::size_t n, bool first) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t k = ::read(fd, p + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    MAGMADNN_CHECK(k >= 0, CommError, "tune: cannot read a frame on fd " << fd << ": " << std::strerror(errno));
    if (k == 0) {
      if (first && got == 0) return false;
      MAGMADNN_THROW(CommError, "tune: the peer on fd " << fd << " closed in the middle of a frame");
    }
    got += static_cast<std::size_t>(k);
  }
  return true;
}

}  // namespace

void write_frame(int fd, const std::string& payload) {
  MAGMADNN_CHECK(payload.size() <= kMaxFrame, CommError, "tune: a frame of " << payload.size() << " bytes is too large");
  const auto n = static_cast<std::uint32_t>(payload.size());
  std::string wire(4 + payload.size(), '\0');
  for (int i = 0; i < 4; ++i) wire[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  std::memcpy(wire.data() + 4, payload.data(), payload.size());
  send_all(fd, wire.data(), wire.size());  // one send: a frame is never interleaved with another
}

std::optional<std::string> read_frame(int fd) {
  unsigned char head[4];
  if (!recv_all(fd, reinterpret_cast<char*>(head), 4, true)) return std::nullopt;
  const std::uint32_t n = head[0] | (head[1] << 8) | (head[2] << 16) | (static_cast<std::uint32_t>(head[3]) << 24);
  MAGMADNN_CHECK(n <= kMaxFrame, CommError, "tune: a frame announces " << n << " bytes, more than the limit");
  std::string payload(n, '\0');
  if (n > 0) recv_all(fd, payload.data(), n, false);
  return payload;
}

}  // namespace magmadnn::tune

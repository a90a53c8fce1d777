#include "magmadnn/comm/broadcast_text.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace magmadnn::distributed {

void broadcast_text(Communicator& comm, std::string& text, int root) {
  if (comm.size() == 1) return;
  std::int64_t length = comm.rank() == root ? static_cast<std::int64_t>(text.size()) : 0;
  comm.broadcast(host_buffer(&length, 1), root);
  const auto bytes = static_cast<std::size_t>(length);
  // Rounded up without bytes + 7, which GCC 14 sees wrap for sizes near
  // SIZE_MAX and then warns of an oversized memcpy (-Wstringop-overflow).
  std::vector<std::int64_t> words(bytes / 8 + (bytes % 8 != 0), 0);
  if (comm.rank() == root && bytes > 0) std::memcpy(words.data(), text.data(), bytes);
  if (!words.empty()) comm.broadcast(host_buffer(words.data(), words.size()), root);
  if (comm.rank() != root) text.assign(reinterpret_cast<const char*>(words.data()), bytes);
}

}  // namespace magmadnn::distributed

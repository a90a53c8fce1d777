// Which host each rank is on (host_layout), and the choice between the flat
// and the hierarchical allreduce (allreduce_communicator).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/comm/hierarchical_communicator.h"

namespace magmadnn::distributed {
namespace {

// FNV-1a, 64 bits, never 0 (0 stands for "no name").
std::int64_t name_hash(const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : static_cast<std::int64_t>(h);
}

std::string given_name(const std::string& host_name) {
  if (!host_name.empty()) return host_name;
  const char* env = std::getenv("MAGMADNN_HOST");
  return env != nullptr ? std::string(env) : std::string();
}

}  // namespace

int HostLayout::hosts() const noexcept { return static_cast<int>(std::set<int>(leader.begin(), leader.end()).size()); }

int HostLayout::largest_host() const noexcept {
  std::map<int, int> count;
  int most = 0;
  for (int l : leader) most = std::max(most, ++count[l]);
  return most;
}

std::string HostLayout::describe() const {
  std::map<int, int> count;
  for (int l : leader) ++count[l];
  std::ostringstream os;
  os << count.size() << (count.size() == 1 ? " host (" : " hosts (");
  const char* sep = "";
  for (const auto& [l, n] : count) {
    os << sep << n;
    sep = " + ";
  }
  os << (leader.size() == 1 ? " rank)" : " ranks)");
  return os.str();
}

HostLayout host_layout(Communicator& comm, const std::string& host_name) {
  // Both keys on every rank, so that every rank makes the same calls: the
  // lowest rank of its shared-memory group, and the hash of its name.
  const int me = comm.rank();
  std::unique_ptr<Communicator> node = split_shared_memory(comm);
  std::vector<std::int32_t> node_ranks(static_cast<std::size_t>(node->size()));
  const std::int32_t mine = me;
  node->allgather(host_buffer(&mine, 1), host_buffer(node_ranks.data(), node_ranks.size()));
  const std::string name = given_name(host_name);
  const std::int64_t keys[2] = {*std::min_element(node_ranks.begin(), node_ranks.end()),
                                name.empty() ? 0 : name_hash(name)};
  std::vector<std::int64_t> all(2 * static_cast<std::size_t>(comm.size()));
  comm.allgather(host_buffer(keys, 2), host_buffer(all.data(), all.size()));

  const std::size_t n = static_cast<std::size_t>(comm.size());
  std::size_t named = 0;
  for (std::size_t r = 0; r < n; ++r) named += all[2 * r + 1] != 0 ? 1 : 0;
  MAGMADNN_CHECK(named == 0 || named == n, ValueError,
                 "host_layout: " << named << " of " << n << " ranks name their host (MAGMADNN_HOST) and the others do "
                                 "not; set it for every rank or for none");
  HostLayout layout;
  layout.leader.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    if (named == 0) {
      layout.leader[r] = static_cast<int>(all[2 * r]);
      continue;
    }
    std::size_t first = 0;
    while (all[2 * first + 1] != all[2 * r + 1]) ++first;
    layout.leader[r] = static_cast<int>(first);
  }
  return layout;
}

const std::vector<std::string>& allreduce_modes() {
  static const std::vector<std::string> modes{"auto", "flat", "hierarchical"};
  return modes;
}

std::shared_ptr<Communicator> allreduce_communicator(std::shared_ptr<Communicator> flat, const std::string& mode) {
  MAGMADNN_CHECK(flat != nullptr, ValueError, "allreduce_communicator: null communicator");
  MAGMADNN_CHECK(std::find(allreduce_modes().begin(), allreduce_modes().end(), mode) != allreduce_modes().end(),
                 ValueError, "allreduce_communicator: unknown mode \"" << mode << "\" (known: auto, flat, hierarchical)");
  if (mode == "flat") return flat;
  if (mode == "auto") {
    // The backend is the same on every rank, so every rank returns here alike.
    if (flat->size() == 1 || flat->backend() != "mpi") return flat;
    HostLayout layout = host_layout(*flat);
    if (layout.hosts() < 2 || layout.largest_host() < 2) return flat;
    return std::make_shared<HierarchicalCommunicator>(std::move(flat), std::move(layout));
  }
  HostLayout layout = host_layout(*flat);
  return std::make_shared<HierarchicalCommunicator>(std::move(flat), std::move(layout));
}

}  // namespace magmadnn::distributed

// The MPI program that tests/netns runs on ranks in separate network
// namespaces and, for comparison, on ranks that share memory.
//
// Each rank prints where it runs (processor name and its IPv4 addresses other
// than loopback), then sums a buffer of integer-valued doubles across the
// ranks with MPI_Allreduce, `rounds` times. Integer values keep every partial
// sum exact, so the result cannot depend on the order in which a transport or
// an algorithm adds the contributions: a run over TCP and a run over shared
// memory must print the same hash, and every rank checks each element
// against its closed form. Exit status 0 means every check passed.
//   netns_allreduce [count] [rounds]
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// Checked MPI call (main sets MPI_ERRORS_RETURN, so errors reach it): a
// failure prints the call, file, line and MPI's message, then aborts the job.
// This is a test program, not library code; MPI_Abort is the one way to take
// the other ranks down with it.
#define NETNS_MPI_CHECK(call)                                                    \
  do {                                                                           \
    const int netns_rc_ = (call);                                                \
    if (netns_rc_ != MPI_SUCCESS) {                                              \
      char netns_msg_[MPI_MAX_ERROR_STRING];                                     \
      int netns_len_ = 0;                                                        \
      MPI_Error_string(netns_rc_, netns_msg_, &netns_len_);                      \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,  \
                   netns_msg_);                                                  \
      MPI_Abort(MPI_COMM_WORLD, 2);                                              \
    }                                                                            \
  } while (0)

namespace {

// Rank r's contribution to element i: an integer in [-500, 499].
double contribution(std::int64_t i, int r) { return static_cast<double>((i * 31 + r * 17) % 1000 - 500); }

std::string ipv4_addresses() {
  std::string out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "?";
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (ntohl(in->sin_addr.s_addr) >> 24 == 127) continue;
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    if (!out.empty()) out += ',';
    out += std::string(a->ifa_name) + '=' + text;
  }
  freeifaddrs(list);
  return out.empty() ? "none" : out;
}

// FNV-1a over the bytes of the result: equal hashes mean bit-identical sums.
std::uint64_t fnv1a(const std::vector<double>& v) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t k = 0; k < v.size() * sizeof(double); ++k) {
    h ^= p[k];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  NETNS_MPI_CHECK(MPI_Init(&argc, &argv));
  NETNS_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int rank = 0;
  int size = 1;
  NETNS_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  NETNS_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  const std::int64_t count = argc > 1 ? std::atoll(argv[1]) : (1 << 20);
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 4;
  if (count <= 0 || rounds <= 0) {
    if (rank == 0) std::fprintf(stderr, "usage: netns_allreduce [count > 0] [rounds > 0]\n");
    MPI_Finalize();
    return 2;
  }

  char name[MPI_MAX_PROCESSOR_NAME];
  int name_len = 0;
  NETNS_MPI_CHECK(MPI_Get_processor_name(name, &name_len));
  std::printf("rank %d of %d: processor %s, addresses %s\n", rank, size, name,
              ipv4_addresses().c_str());
  std::fflush(stdout);

  std::vector<double> send(static_cast<std::size_t>(count));
  std::vector<double> sum(send.size());
  for (std::int64_t i = 0; i < count; ++i) send[i] = contribution(i, rank);
  const double t0 = MPI_Wtime();
  for (int round = 0; round < rounds; ++round)
    NETNS_MPI_CHECK(MPI_Allreduce(send.data(), sum.data(), static_cast<int>(count), MPI_DOUBLE,
                                  MPI_SUM, MPI_COMM_WORLD));
  const double seconds = MPI_Wtime() - t0;

  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    double expected = 0;
    for (int r = 0; r < size; ++r) expected += contribution(i, r);
    if (sum[i] != expected) ++wrong;
  }
  std::int64_t wrong_total = 0;
  NETNS_MPI_CHECK(MPI_Allreduce(&wrong, &wrong_total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
  if (rank == 0) {
    std::printf("allreduce: %d ranks, %lld doubles x %d rounds (%lld bytes per rank per round) in %.3f s\n",
                size, static_cast<long long>(count), rounds,
                static_cast<long long>(count * sizeof(double)), seconds);
    std::printf("result hash %016llx, wrong elements %lld\n",
                static_cast<unsigned long long>(fnv1a(sum)), static_cast<long long>(wrong_total));
  }
  NETNS_MPI_CHECK(MPI_Finalize());
  return wrong_total == 0 ? 0 : 1;
}

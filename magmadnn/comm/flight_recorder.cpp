#include "magmadnn/comm/flight_recorder.h"

#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace magmadnn::distributed::flight {
namespace {

struct Entry {
  std::atomic<std::uint64_t> gen{0};  // index + 1 of the collective held; 0: empty
  std::uint32_t comm = 0;
  std::uint64_t seq = 0;
  char op[24] = {};
  std::uint64_t bytes = 0;
  std::int64_t step = -1;
  std::int64_t start_us = 0;
  std::atomic<std::int64_t> end_us{0};
};

// Everything a dump reads is allocated here, before any signal handler can
// run, so that the handler allocates nothing.
struct State {
  std::size_t capacity = 256;
  std::unique_ptr<Entry[]> ring;
  std::atomic<std::uint64_t> head{0};
  std::atomic<int> rank{0}, size{1};
  std::atomic<std::uint32_t> comms{0};
  char dir[4096] = ".";
  bool dir_from_env = false;
  char host[256] = {};

  State() {
    if (const char* k = std::getenv("MAGMADNN_FLIGHT_RECORDER"); k != nullptr && *k != '\0')
      capacity = static_cast<std::size_t>(std::max(0L, std::strtol(k, nullptr, 10)));
    if (capacity > 0) ring = std::make_unique<Entry[]>(capacity);
    if (const char* d = std::getenv("MAGMADNN_FLIGHT_DIR"); d != nullptr && *d != '\0') {
      std::strncpy(dir, d, sizeof dir - 1);
      dir_from_env = true;
    }
    gethostname(host, sizeof host - 1);
  }
};

// Never destroyed: a signal handler or abort_job may run while the process
// exits, after static destructors (a rank that returned from main and is
// then stopped by its launcher wrote a garbage rank number before).
State& state() {
  static State* const s = new State();
  return *s;
}

std::int64_t now_us() noexcept {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000 + t.tv_nsec / 1000;
}

// `v` in decimal, written into `buf` (24 bytes: room for any int64 and its
// terminator); returns where the digits start. No allocation, no locale.
const char* decimal(std::int64_t v, char (&buf)[24]) noexcept {
  char* p = buf + sizeof buf;
  *--p = '\0';
  const bool negative = v < 0;
  std::uint64_t u = negative ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  do {
    *--p = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (negative) *--p = '-';
  return p;
}

// A buffered writer of JSON text to a file descriptor, from a signal
// handler: no allocation, no stdio, no locale.
class SafeWriter {
 public:
  explicit SafeWriter(int fd) : fd_(fd) {}
  ~SafeWriter() { flush(); }
  void text(const char* s) {
    while (*s) put(*s++);
  }
  // A JSON string's contents: quotes, backslashes and control bytes escaped.
  void escaped(const char* s, std::size_t max) {
    for (std::size_t i = 0; i < max && s[i] != '\0'; ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c == '"' || c == '\\') put('\\');
      put(c < 0x20 ? ' ' : static_cast<char>(c));
    }
  }
  void number(std::int64_t v) {
    char digits[24];
    text(decimal(v, digits));
  }
  void flush() {
    std::size_t done = 0;
    while (done < used_) {
      const ssize_t w = ::write(fd_, buf_ + done, used_ - done);
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    used_ = 0;
  }

 private:
  void put(char c) {
    if (used_ == sizeof buf_) flush();
    buf_[used_++] = c;
  }
  int fd_;
  char buf_[4096];
  std::size_t used_ = 0;
};

// DIR/flight.rank<R>.json, then `suffix`, into `out` (a fixed buffer), without allocating.
void path_into(const State& s, char* out, std::size_t size, const char* suffix = "") {
  char rank[24];
  std::size_t used = 0;
  auto add = [&](const char* t) {
    while (*t && used + 1 < size) out[used++] = *t++;
  };
  add(s.dir);
  add("/flight.rank");
  add(decimal(s.rank.load(), rank));
  add(".json");
  add(suffix);
  out[used] = '\0';
}

void write_entry(SafeWriter& w, const Entry& e) {
  w.text("{\"comm\":");
  w.number(e.comm);
  w.text(",\"seq\":");
  w.number(static_cast<std::int64_t>(e.seq));
  w.text(",\"op\":\"");
  w.escaped(e.op, sizeof e.op);
  w.text("\",\"bytes\":");
  w.number(static_cast<std::int64_t>(e.bytes));
  w.text(",\"step\":");
  w.number(e.step);
  w.text(",\"start_us\":");
  w.number(e.start_us);
  w.text(",\"end_us\":");
  const std::int64_t end = e.end_us.load(std::memory_order_acquire);
  if (end == 0) w.text("null");
  else w.number(end);
  w.text("}");
}

void write_record(SafeWriter& w, State& s, const char* reason) {
  const std::uint64_t head = s.head.load(std::memory_order_acquire);
  w.text("{\"format\":\"magmadnn-flight-recorder-1\",\"rank\":");
  w.number(s.rank.load());
  w.text(",\"size\":");
  w.number(s.size.load());
  w.text(",\"pid\":");
  w.number(::getpid());
  w.text(",\"host\":\"");
  w.escaped(s.host, sizeof s.host);
  w.text("\",\"reason\":\"");
  w.escaped(reason, 200);
  w.text("\",\"dumped_us\":");
  w.number(now_us());
  w.text(",\"capacity\":");
  w.number(static_cast<std::int64_t>(s.capacity));
  w.text(",\"recorded\":");
  w.number(static_cast<std::int64_t>(head));
  w.text(",\"entries\":[");
  bool first = true;
  for (std::uint64_t i = head > s.capacity ? head - s.capacity : 0; i < head; ++i) {
    const Entry& e = s.ring[i % s.capacity];
    if (e.gen.load(std::memory_order_acquire) != i + 1) continue;  // being written, or overwritten
    if (!first) w.text(",\n");
    first = false;
    write_entry(w, e);
  }
  w.text("]}\n");
}

std::atomic<bool> g_installed{false};
std::atomic<bool> g_in_signal{false};
std::atomic<bool> g_dumped{false};  // a record was written
struct sigaction g_previous[NSIG];
constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};

const char* signal_reason(int sig) noexcept {
  switch (sig) {
    case SIGSEGV: return "signal SIGSEGV";
    case SIGBUS: return "signal SIGBUS";
    case SIGFPE: return "signal SIGFPE";
    case SIGILL: return "signal SIGILL";
    case SIGABRT: return "signal SIGABRT";
    case SIGTERM: return "signal SIGTERM (the launcher stopped this rank)";
    default: return "signal";
  }
}

void on_signal(int sig) {
  // A record already written (abort_job, before the launcher's SIGTERM) has
  // the better reason and the same collectives: keep it.
  if (!g_in_signal.exchange(true) && !g_dumped.load()) dump(signal_reason(sig));
  sigaction(sig, &g_previous[sig], nullptr);
  raise(sig);
}

}  // namespace

std::int64_t begin(std::uint32_t comm, std::uint64_t seq, const char* op, std::uint64_t bytes,
                   std::int64_t step) noexcept {
  State& s = state();
  if (s.capacity == 0) return -1;
  const std::uint64_t index = s.head.fetch_add(1, std::memory_order_acq_rel);
  Entry& e = s.ring[index % s.capacity];
  e.gen.store(0, std::memory_order_release);  // a dump skips it while it changes
  e.comm = comm;
  e.seq = seq;
  std::strncpy(e.op, op, sizeof e.op - 1);
  e.bytes = bytes;
  e.step = step;
  e.start_us = now_us();
  e.end_us.store(0, std::memory_order_relaxed);
  e.gen.store(index + 1, std::memory_order_release);
  return static_cast<std::int64_t>(index);
}

void end(std::int64_t slot) noexcept {
  State& s = state();
  if (slot < 0 || s.capacity == 0) return;
  const auto index = static_cast<std::uint64_t>(slot);
  Entry& e = s.ring[index % s.capacity];
  if (e.gen.load(std::memory_order_acquire) == index + 1) e.end_us.store(now_us(), std::memory_order_release);
}

void set_world(int rank, int size) noexcept {
  state().rank = rank;
  state().size = size;
}

void set_flight_dir(const std::string& dir) {
  State& s = state();
  if (s.dir_from_env || dir.empty()) return;
  std::strncpy(s.dir, dir.c_str(), sizeof s.dir - 1);
}

std::uint32_t next_comm_id() noexcept { return state().comms.fetch_add(1); }

bool dump(const char* reason) noexcept {
  State& s = state();
  // One process alone has no one to diverge from: no file to litter its folder.
  if (s.capacity == 0 || s.size.load() <= 1) return false;
  char path[4200];
  path_into(s, path, sizeof path);
  // Written aside and renamed (both async-signal-safe): a rank killed while
  // writing (the launcher's SIGKILL after its SIGTERM) leaves a .part file,
  // never a record cut short under the record's name.
  char part[4210];
  path_into(s, part, sizeof part, ".part");
  const int fd = ::open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  {
    SafeWriter w(fd);
    write_record(w, s, reason);
  }
  ::close(fd);
  if (::rename(part, path) != 0) return false;
  g_dumped = true;
  return true;
}

std::string dump_path() {
  State& s = state();
  if (s.capacity == 0) return "";
  char path[4200];
  path_into(s, path, sizeof path);
  return path;
}

void install_signal_handlers() noexcept {
  if (state().capacity == 0 || g_installed.exchange(true)) return;
  for (int sig : kSignals) {
    struct sigaction a {};
    a.sa_handler = on_signal;
    sigemptyset(&a.sa_mask);
    sigaction(sig, &a, &g_previous[sig]);
  }
}

std::size_t capacity() noexcept { return state().capacity; }

void reset_for_testing() {
  State& s = state();
  s.~State();
  new (&s) State();
  g_dumped = false;
}

}  // namespace magmadnn::distributed::flight

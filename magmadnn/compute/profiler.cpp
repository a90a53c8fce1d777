#include "magmadnn/compute/profiler.h"

#include <algorithm>
#include <atomic>
#include <iomanip>
#include <map>
#include <mutex>
#include <ostream>
#include <sstream>
#include <tuple>

namespace magmadnn::op {
namespace {

std::atomic<bool> g_enabled{false};

struct Table {
  std::mutex mu;
  std::map<std::tuple<std::string, std::string, std::string>, ProfileEntry> rows;
};
Table& table() {
  static Table t;
  return t;
}

}  // namespace

void Profiler::enable(bool on) noexcept { g_enabled.store(on, std::memory_order_relaxed); }
bool Profiler::enabled() noexcept { return g_enabled.load(std::memory_order_relaxed); }

void Profiler::reset() {
  Table& t = table();
  std::lock_guard lock(t.mu);
  t.rows.clear();
}

void Profiler::add(const std::string& phase, const std::string& kind, const std::string& name, double seconds) {
  Table& t = table();
  std::lock_guard lock(t.mu);
  ProfileEntry& e = t.rows[{phase, kind, name}];
  if (e.calls == 0) {
    e.phase = phase;
    e.kind = kind;
    e.name = name;
  }
  ++e.calls;
  e.seconds += seconds;
}

std::vector<ProfileEntry> Profiler::entries() {
  std::vector<ProfileEntry> out;
  {
    Table& t = table();
    std::lock_guard lock(t.mu);
    for (const auto& [k, e] : t.rows) out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return out;
}

double Profiler::print(std::ostream& os, std::int64_t steps) {
  const auto rows = entries();
  double total = 0;
  for (const auto& e : rows) total += e.seconds;
  const double per = steps > 0 ? 1e3 / static_cast<double>(steps) : 0.0;
  os << std::left << std::setw(10) << "phase" << std::setw(22) << "op" << std::setw(26) << "node" << std::right
     << std::setw(9) << "calls" << std::setw(12) << "total ms" << std::setw(12) << "ms/step" << std::setw(8) << "%"
     << "\n";
  auto fixed = [](double v, int prec) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(prec) << v;
    return s.str();
  };
  for (const auto& e : rows) {
    os << std::left << std::setw(10) << e.phase << std::setw(22) << e.kind.substr(0, 21) << std::setw(26)
       << e.name.substr(0, 25) << std::right << std::setw(9) << e.calls << std::setw(12) << fixed(e.seconds * 1e3, 1)
       << std::setw(12) << (steps > 0 ? fixed(e.seconds * per, 3) : "-") << std::setw(8)
       << fixed(total > 0 ? 100.0 * e.seconds / total : 0.0, 1) << "\n";
  }
  os << std::left << std::setw(58) << "total profiled" << std::right << std::setw(21) << fixed(total * 1e3, 1)
     << std::setw(12) << (steps > 0 ? fixed(total * per, 3) : "-") << "\n";
  return total;
}

Profiler::Scope::Scope(const char* phase, const std::string& kind, const std::string& name,
                       std::function<void()> sync)
    : on_(enabled()), phase_(phase) {
  if (!on_) return;
  kind_ = kind;
  name_ = name;
  sync_ = std::move(sync);
  if (sync_) sync_();
  t0_ = std::chrono::steady_clock::now();
}

Profiler::Scope::~Scope() {
  if (!on_) return;
  try {
    if (sync_) sync_();
    add(phase_, kind_, name_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  } catch (...) {
    // A failed synchronise already surfaced (or will) from the op itself;
    // a destructor must not throw.
  }
}

}  // namespace magmadnn::op

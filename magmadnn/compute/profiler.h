/// @file profiler.h
/// op::Profiler: where the time of training goes, per operation.
///
/// What it is for: answering "what is in the way" for a training step. When
/// enabled, every node's forward computation, every node's backward step, the
/// optimizer update and the model's own per-step work (feeding a batch,
/// reading the loss) are timed and summed under a key (phase, op kind, node
/// name). `magmadnn train --profile` prints the table; so can a program:
///
///   op::Profiler::enable();
///   model.fit(...);
///   op::Profiler::print(std::cout, steps);
///
/// Requires: nothing; disabled (the default) it costs one relaxed atomic load
/// per node evaluation. Guarantees: when a device tensor is involved the
/// scope synchronises the device before reading the clock, so GPU times are
/// the kernels' and not their launch (this slows the run being profiled, as
/// any per-op GPU profile does). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace magmadnn::op {

/// One row of the profile: the sum over all calls of one key.
struct ProfileEntry {
  std::string phase;  ///< "forward", "backward", "optimizer", "step"
  std::string kind;   ///< op kind ("linear", "sigmoid", ...) or a step part ("feed", "loss")
  std::string name;   ///< node name, or empty
  std::uint64_t calls = 0;
  double seconds = 0.0;
};

class Profiler {
 public:
  static void enable(bool on = true) noexcept;
  static bool enabled() noexcept;
  /// Forgets every entry.
  static void reset();
  /// Adds one timed call.
  static void add(const std::string& phase, const std::string& kind, const std::string& name, double seconds);
  /// Entries, most time first.
  static std::vector<ProfileEntry> entries();
  /// A table: phase, op, name, calls, total ms, ms per step, share of the
  /// profiled total; `steps` (> 0) divides the totals into per-step figures.
  /// Returns the profiled total in seconds.
  static double print(std::ostream& os, std::int64_t steps);

  /// Turns profiling off for its lifetime (restoring the previous state), for
  /// work that does not belong in a profile, such as validation inside fit.
  class Pause {
   public:
    Pause() noexcept : was_(enabled()) { enable(false); }
    ~Pause() { enable(was_); }
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    bool was_;
  };

  /// Times its lifetime under a key when the profiler is enabled (checked at
  /// construction). `sync`, if set, runs before each clock read (a device
  /// synchronise for GPU work).
  class Scope {
   public:
    Scope(const char* phase, const std::string& kind, const std::string& name,
          std::function<void()> sync = nullptr);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    bool on_;
    const char* phase_;
    std::string kind_, name_;
    std::function<void()> sync_;
    std::chrono::steady_clock::time_point t0_;
  };
};

namespace detail {
/// The name a profile shows for a node: its own name when it was given one,
/// else (a default name, the op's kind) the name of its first leaf input,
/// so that e.g. a fused layer reads "linear_sigmoid  fc1/W".
template <typename Node>
std::string profile_label(const Node& n) {
  if (n.get_name() != n.kind()) return n.get_name();
  for (const auto& in : n.get_inputs()) {
    if (in->get_inputs().empty()) return in->get_name();
  }
  return n.get_name();
}

/// The synchronise a Profiler::Scope needs for work on t's side: null for
/// host tensors, the device's synchronise for device tensors.
template <typename Tensor>
std::function<void()> device_sync_of(const Tensor& t) {
  if (!t.on_device()) return nullptr;
  return [&t] { backend_of(t).synchronize(t.get_device_id()); };
}
}  // namespace detail

}  // namespace magmadnn::op

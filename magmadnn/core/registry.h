/// @file registry.h
/// NamedRegistry<Entry>: the list of the things of one kind that the code
/// may name (data-parallel strategies, searchers, tune objectives), each
/// declared once by the file that implements it. Lists (messages, --help,
/// choices) show the entries by increasing order, so where a new entry
/// appears does not depend on the order in which translation units
/// initialise. Built-ins register from a static initializer in their own
/// .cpp file (as conv/direct_conv.cpp does), so the registry object lives in
/// a function-local static of the registering module (see the users).
///
/// An entry is any struct with `name`, `help` and `order` members.
///
/// Requires: entries are added before they are asked for (static
/// initialisation, or before the first use); names are unique.
/// Guarantees: add() of a name already present with another help or order
/// throws ValueError naming it (the identical declaration is ignored);
/// an entry's address never changes once added (entries are never removed),
/// so callers may keep `const Entry*`; every member is thread-safe.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "magmadnn/core/errors.h"

namespace magmadnn {

template <class Entry>
class NamedRegistry {
 public:
  explicit NamedRegistry(std::string what) : what_(std::move(what)) {}

  /// Adds `e`. The same declaration again (same name, help and order: one
  /// translation unit linked twice, as the fuzzers link instrumented copies
  /// of the readers beside the library's) is ignored; another entry of a
  /// name already present is a ValueError.
  const Entry& add(Entry e) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& p : entries_) {
      if (p->name != e.name) continue;
      MAGMADNN_CHECK(p->help == e.help && p->order == e.order, ValueError,
                     what_ << " '" << e.name << "' is registered twice");
      return *p;
    }
    auto owned = std::make_unique<const Entry>(std::move(e));
    const Entry& ref = *owned;
    // Stable: among equal orders, the first registered stays first.
    const auto at = std::upper_bound(entries_.begin(), entries_.end(), ref.order,
                                     [](int order, const auto& p) { return order < p->order; });
    entries_.insert(at, std::move(owned));
    return ref;
  }
  /// Every entry, by increasing order.
  std::vector<const Entry*> entries() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<const Entry*> out;
    for (const auto& p : entries_) out.push_back(p.get());
    return out;
  }
  /// The entry called `name`; nullptr if there is none.
  const Entry* find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& p : entries_) {
      if (p->name == name) return p.get();
    }
    return nullptr;
  }
  /// The names of the entries, by increasing order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry* e : entries()) out.push_back(e->name);
    return out;
  }

 private:
  std::string what_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<const Entry>> entries_;
};

/// `names` as prose: "a", "a or b", "a, b or c" (`last` instead of " or "
/// before the last); each name wrapped in `quote` on both sides.
inline std::string names_text(const std::vector<std::string>& names, const std::string& last = " or ",
                              const std::string& quote = "") {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) s += i + 1 == names.size() ? last : std::string(", ");
    s += quote + names[i] + quote;
  }
  return s;
}

}  // namespace magmadnn

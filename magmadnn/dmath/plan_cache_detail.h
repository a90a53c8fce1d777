/// @file plan_cache_detail.h
/// The cache behind plan_cache.h: a map from identifier to a shared,
/// immutable plan, one per plan type. Internal to dmath.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "magmadnn/dmath/plan_cache.h"

namespace magmadnn::distributed::dmath::detail {

/// Counts shared by every plan type.
void count_plan(bool reused) noexcept;

template <typename Plan>
class PlanStore {
 public:
  /// The plan kept under `key`, or make() kept under it.
  template <typename Make>
  std::shared_ptr<const Plan> get(const std::string& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto it = plans_.find(key);
      if (it != plans_.end()) {
        count_plan(true);
        return it->second;
      }
    }
    // Made outside the lock: planning may be long, and two threads making
    // the same plan at once only waste work.
    auto plan = std::make_shared<const Plan>(make());
    std::lock_guard<std::mutex> lock(mutex_);
    count_plan(false);
    if (plans_.emplace(key, plan).second) {
      order_.push_back(key);
      if (order_.size() > kMaxPlans) {
        plans_.erase(order_.front());
        order_.pop_front();
      }
    }
    return plan;
  }
  void clear() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    plans_.clear();
    order_.clear();
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Plan>> plans_;
  std::deque<std::string> order_;  // insertion order, for dropping the oldest
};

/// Registers a store's clear() with reset_plan_cache().
void on_reset(void (*clear)() noexcept);

/// The process's one store of plans of type Plan, emptied by
/// reset_plan_cache().
template <typename Plan>
PlanStore<Plan>& plan_store() {
  static PlanStore<Plan> store;
  static const bool registered = (on_reset([]() noexcept { plan_store<Plan>().clear(); }), true);
  (void)registered;
  return store;
}

}  // namespace magmadnn::distributed::dmath::detail

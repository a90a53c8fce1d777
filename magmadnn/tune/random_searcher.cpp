#include "magmadnn/tune/random_searcher.h"

#include "magmadnn/tune/settings.h"

namespace magmadnn::tune {

RandomSearcher::RandomSearcher(const Json& j, const std::string& where, const SearchContext& context)
    : Searcher(context) {
  const Settings s(j, where, {"type", "trials", "seconds", "target_accuracy"});
  max_trials_ = s.integer("trials", 0, 1, 1'000'000'000);
  max_seconds_ = s.number("seconds", 0.0, 1e-3, 1e9);
  if (s.has("target_accuracy")) target_ = s.number("target_accuracy", 0.0, 0.0, 1.0);
  if (max_trials_ == 0 && max_seconds_ == 0)
    throw run::ConfigError(where, "a random search needs a budget: \"trials\", \"seconds\" or both "
                                  "(target_accuracy alone may never be met)");
}

Proposal RandomSearcher::next(double elapsed) {
  if (reached_ || (max_trials_ > 0 && next_ >= max_trials_) || (max_seconds_ > 0 && elapsed >= max_seconds_)) return {};
  const std::int64_t i = next_++;
  return propose(make_trial(i, i, 0, ctx_.space.random_point(ctx_.seed, static_cast<std::uint64_t>(i))));
}

void RandomSearcher::report(const TrialRecord& r) {
  if (target_ && r.status == "ok" && r.outcome.accuracy >= *target_) reached_ = true;
}

Json RandomSearcher::describe() const {
  Json j{{"type", "random"}};
  if (max_trials_ > 0) j["trials"] = max_trials_;
  if (max_seconds_ > 0) j["seconds"] = max_seconds_;
  if (target_) j["target_accuracy"] = *target_;
  j["target_reached"] = reached_;
  return j;
}

namespace {
const SearcherRegistrar<RandomSearcher> registrar(
    {"random", "random points until \"trials\" have started, \"seconds\" have passed or \"target_accuracy\" is reached", 20});
}  // namespace

}  // namespace magmadnn::tune

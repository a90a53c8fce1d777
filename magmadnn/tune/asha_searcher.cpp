#include "magmadnn/tune/asha_searcher.h"

#include <algorithm>

#include "magmadnn/tune/settings.h"

namespace magmadnn::tune {

AshaSearcher::AshaSearcher(const Json& j, const std::string& where, const SearchContext& context)
    : Searcher(context) {
  const Settings s(j, where, {"type", "configs", "min_epochs", "max_epochs", "eta"});
  if (!s.has("configs")) throw run::ConfigError(s.at("configs"), "missing (how many configurations to start)");
  configs_ = s.integer("configs", 0, 1, 1'000'000);
  const std::int64_t lo = s.integer("min_epochs", 1, 1, run::limits::epochs.max);
  if (!s.has("max_epochs")) throw run::ConfigError(s.at("max_epochs"), "missing (the epochs of the top rung)");
  const std::int64_t hi = s.integer("max_epochs", 0, lo, run::limits::epochs.max);
  eta_ = s.integer("eta", 3, 2, 1000);
  for (std::int64_t e = lo; e < hi; e *= eta_) rungs_.push_back(e);
  rungs_.push_back(hi);
  finished_.resize(rungs_.size());
  promoted_.resize(rungs_.size());
}

Proposal AshaSearcher::next(double) {
  // Promotions first, from the highest rung down: the deepest work is the most informative.
  for (std::size_t k = rungs_.size() - 1; k-- > 0;) {
    std::vector<Finished> ranked;
    for (const Finished& f : finished_[k])
      if (f.objective) ranked.push_back(f);
    std::stable_sort(ranked.begin(), ranked.end(), [this](const Finished& a, const Finished& b) {
      return ctx_.objective.better(a.objective, b.objective);
    });
    const std::size_t top = finished_[k].size() / static_cast<std::size_t>(eta_);
    for (std::size_t i = 0; i < std::min(top, ranked.size()); ++i) {
      const std::int64_t c = ranked[i].config;
      if (promoted_[k].count(c) != 0) continue;
      promoted_[k].insert(c);
      ++running_;
      return propose(make_trial(next_index_++, c, static_cast<int>(k + 1), params_.at(c), rungs_[k + 1]));
    }
  }
  if (next_config_ < configs_) {
    const std::int64_t c = next_config_++;
    params_[c] = ctx_.space.random_point(ctx_.seed, static_cast<std::uint64_t>(c));
    ++running_;
    return propose(make_trial(next_index_++, c, 0, params_[c], rungs_[0]));
  }
  return {running_ > 0 ? Proposal::Kind::wait : Proposal::Kind::done, {}};
}

void AshaSearcher::report(const TrialRecord& r) {
  --running_;
  const auto k = static_cast<std::size_t>(r.trial.rung);
  finished_.at(k).push_back({r.trial.config, r.status == "ok" ? r.objective : std::nullopt});
  if (r.status == "ok") {
    int& top = top_rung_[r.trial.config];
    top = std::max(top, r.trial.rung);
    highest_ = std::max(highest_, r.trial.rung);
  }
}

Json AshaSearcher::describe() const {
  return {{"type", "asha"}, {"configs", configs_}, {"eta", eta_}, {"rungs", rungs_}};
}

std::string AshaSearcher::final_status(const TrialRecord& r) const {
  if (r.status != "ok") return r.status;
  const auto it = top_rung_.find(r.trial.config);
  const int top = it == top_rung_.end() ? r.trial.rung : it->second;
  return top + 1 < static_cast<int>(rungs_.size()) ? "pruned" : "ok";
}

bool AshaSearcher::competes(const TrialRecord& r) const { return r.trial.rung == highest_; }

namespace {
const SearcherRegistrar<AshaSearcher> registrar(
    {"asha", "asynchronous successive halving: the top 1/eta of each rung train on, for eta times more epochs", 30});
}  // namespace

}  // namespace magmadnn::tune

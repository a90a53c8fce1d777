#include "magmadnn/tune/grid_searcher.h"

#include "magmadnn/tune/settings.h"

namespace magmadnn::tune {

GridSearcher::GridSearcher(const Json& j, const std::string& where, const SearchContext& context)
    : Searcher(context) {
  Settings(j, where, {"type"});
  for (std::size_t k = 0; k < ctx_.space.dims.size(); ++k)
    if (!ctx_.space.dims[k].finite())
      throw run::ConfigError("space[" + std::to_string(k) + "]",
                             std::string("a grid needs values, a range or a choice; ") +
                                 kind_name(ctx_.space.dims[k].kind) + " has no points (use a random or asha searcher)");
  size_ = ctx_.space.grid_size();
}

Proposal GridSearcher::next(double) {
  if (next_ >= size_) return {};
  const auto i = static_cast<std::int64_t>(next_++);
  return propose(make_trial(i, i, 0, ctx_.space.grid_point(static_cast<std::uint64_t>(i))));
}

namespace {
const SearcherRegistrar<GridSearcher> registrar(
    {"grid", "every point of the space once, in grid order (the last dimension fastest)", 10});
}  // namespace

}  // namespace magmadnn::tune

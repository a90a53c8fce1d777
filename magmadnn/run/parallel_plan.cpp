#include "magmadnn/run/parallel_plan.h"

#include "magmadnn/core/registry.h"
#include "magmadnn/parallel/strategy_registry.h"
#include "magmadnn/run/layer_kinds.h"

namespace magmadnn::run {
namespace {

// The value that decides a dense or conv2d layer's layout.
const std::string& choice_of(const TrainSpec& spec, const LayerSpec& l) {
  return l.parallel.empty() ? spec.distributed.parallel : l.parallel;
}

bool wants_model(const TrainSpec& spec, const LayerSpec& l) {
  const std::string& c = choice_of(spec, l);
  return c == "model" || (c == "auto" && l.type == "dense");
}

// The dense layer that layer i pairs with (Megatron): the next dense layer
// wanting a split, reached through elementwise activations only, so that
// layer i's split output columns can go straight into it. -1 if none.
std::int64_t pair_partner(const TrainSpec& spec, std::size_t i) {
  const auto& ls = spec.layers;
  if (ls[i].activation == "softmax") return -1;  // a softmax needs every column
  for (std::size_t j = i + 1; j < ls.size(); ++j) {
    if (ls[j].type == "dense") return wants_model(spec, ls[j]) ? static_cast<std::int64_t>(j) : -1;
    if (ls[j].type != "activation" || ls[j].activation == "softmax") return -1;
  }
  return -1;
}

// Whether the first layer with a layout runs on batch shards, so the input
// is cut at once and the layers before it (a flatten) run on shards too.
bool starts_data_parallel(const TrainSpec& spec) {
  for (const LayerSpec& l : spec.layers) {
    if (l.type == "conv2d") return choice_of(spec, l) != "model";
    if (l.type == "dense") return choice_of(spec, l) == "data";
  }
  return false;
}

enum class Activations { shards, whole, split };  // what the layer about to be built receives

// What a hybrid plan cannot serve: a dropout on whole-batch activations,
// and a strategy that cannot serve model-parallel layers.
void refuse_unserved(const TrainSpec& spec, const ParallelPlan& plan) {
  const auto& ls = spec.layers;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    if (ls[i].type == "dropout" && plan.layers[i].placement != Placement::data) {
      // Right after a data-parallel dense or conv2d layer each rank holds its
      // own rows: a dropout there draws its own mask (not after the last layer).
      auto data_layer = [&](std::size_t k) {
        return (ls[k].type == "dense" || ls[k].type == "conv2d") && plan.layers[k].placement == Placement::data;
      };
      std::string spots;
      for (std::size_t k = i; k-- > 0;)
        if (data_layer(k)) {
          spots = "layers[" + std::to_string(k) + "]";
          break;
        }
      for (std::size_t k = i + 1; k + 1 < ls.size(); ++k)
        if (data_layer(k)) {
          spots += (spots.empty() ? "" : " or after ") + ("layers[" + std::to_string(k) + "]");
          break;
        }
      throw ConfigError("layers[" + std::to_string(i) + "]",
                        "dropout on whole-batch activations (after a model-parallel layer) is not supported: every "
                        "rank would have to draw the same mask; " +
                            (spots.empty() ? std::string("the network has no data-parallel layer (before the last) "
                                                         "to put it after: add a dense layer with \"parallel\": "
                                                         "\"data\" and put the dropout right after it, or remove it")
                                           : "move it right after " + spots +
                                                 " (data-parallel, where each rank holds its own rows)"));
    }
  }
  const distributed::StrategyEntry* strategy = distributed::find_strategy(spec.distributed.strategy);
  if (strategy == nullptr || !strategy->traits.serves_model_parallel) {
    const std::vector<std::string> serving =
        distributed::strategy_names_where([](const distributed::StrategyTraits& t) { return t.serves_model_parallel; });
    throw ConfigError("distributed.strategy",
                      "the plan has model-parallel layers, which only the " + names_text(serving) +
                          " strategy serves (it sums the data-parallel layers' gradients and leaves the split weights "
                          "alone); got \"" +
                          spec.distributed.strategy + "\"");
  }
}

}  // namespace

const char* placement_name(Placement p) noexcept {
  switch (p) {
    case Placement::data: return "data";
    case Placement::replicated: return "replicated";
    case Placement::column: return "column";
    case Placement::column_gathered: return "column_gathered";
    case Placement::row: return "row";
    case Placement::split_columns: return "split_columns";
    case Placement::channels: return "channels";
  }
  return "?";
}

bool is_model_parallel(Placement p) noexcept {
  return p == Placement::column || p == Placement::column_gathered || p == Placement::row ||
         p == Placement::channels;
}

const char* transition_name(Transition t) noexcept {
  switch (t) {
    case Transition::none: return "none";
    case Transition::gather_batch: return "gather_batch";
    case Transition::scatter_batch: return "scatter_batch";
  }
  return "?";
}

bool ParallelPlan::hybrid() const noexcept {
  for (const LayerPlan& l : layers) {
    if (is_model_parallel(l.placement)) return true;
  }
  return false;
}

ParallelPlan plan_parallel(const TrainSpec& spec) {
  const auto& ls = spec.layers;
  ParallelPlan plan;
  plan.layers.resize(ls.size());
  // Laid out as if hybrid (the input whole on every rank); a plan that ends
  // without a model-parallel layer is replaced by plain data parallelism.
  Activations at = Activations::whole;
  if (starts_data_parallel(spec)) {
    plan.before_input = Transition::scatter_batch;
    at = Activations::shards;
  }
  std::int64_t row_partner = -1;  // the layer that closes the open pair
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const LayerSpec& l = ls[i];
    LayerPlan& p = plan.layers[i];
    const auto need_whole = [&] {
      if (at == Activations::shards) p.before = Transition::gather_batch;
      at = Activations::whole;
    };
    const auto need_shards = [&] {
      if (at == Activations::whole) p.before = Transition::scatter_batch;
      at = Activations::shards;
    };
    if (l.type == "dense" && static_cast<std::int64_t>(i) == row_partner) {
      p.placement = Placement::row;  // `at` is split: the pair's columns
      at = Activations::whole;
      row_partner = -1;
    } else if (l.type == "dense" && wants_model(spec, l)) {
      const std::int64_t partner = pair_partner(spec, i);
      if (partner >= 0) {
        need_whole();
        p.placement = Placement::column;
        at = Activations::split;
        row_partner = partner;
      } else if (choice_of(spec, l) == "model") {
        need_whole();
        p.placement = Placement::column_gathered;
      } else if (at == Activations::whole) {
        p.placement = Placement::replicated;  // auto, unpaired, after a model-parallel section
      } else {
        p.placement = Placement::data;  // auto, unpaired, inside a data-parallel section
      }
    } else if (l.type == "conv2d" && choice_of(spec, l) == "model") {
      need_whole();
      p.placement = Placement::channels;
    } else if (l.type == "dense" || l.type == "conv2d") {
      need_shards();
      p.placement = Placement::data;
    } else if (at == Activations::split) {
      p.placement = Placement::split_columns;  // only activations sit inside a pair (pair_partner)
    } else if (at == Activations::whole) {
      p.placement = Placement::replicated;
    } else {
      p.placement = Placement::data;
    }
  }
  if (!plan.hybrid()) return ParallelPlan{std::vector<LayerPlan>(ls.size()), Transition::none, Transition::none};
  if (is_graph_network(ls)) {
    // The plan walks the list as one chain of activations; a graph's
    // branches would need their own transitions.
    for (std::size_t i = 0; i < ls.size(); ++i) {
      if (!is_model_parallel(plan.layers[i].placement)) continue;
      const std::string at = "layers[" + std::to_string(i) + "]";
      throw ConfigError(ls[i].parallel.empty() ? std::string("distributed.parallel") : at + ".parallel",
                        at + " (" + ls[i].type + ") would be model-parallel, but hybrid plans serve chains of "
                        "layers only, and this network has branches (\"inputs\", add, concat): its layers train "
                        "data-parallel (\"parallel\": \"data\")");
    }
  }
  if (at == Activations::shards) plan.before_loss = Transition::gather_batch;

  refuse_unserved(spec, plan);
  return plan;
}

Json plan_to_json(const TrainSpec& spec, const ParallelPlan& plan) {
  Json layers = Json::array();
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    Json o;
    o["layer"] = spec.layers.at(i).type;
    o["placement"] = placement_name(plan.layers[i].placement);
    if (plan.layers[i].before != Transition::none) o["before"] = transition_name(plan.layers[i].before);
    layers.push_back(std::move(o));
  }
  Json j;
  j["hybrid"] = plan.hybrid();
  j["before_input"] = transition_name(plan.before_input);
  j["layers"] = std::move(layers);
  j["before_loss"] = transition_name(plan.before_loss);
  return j;
}

}  // namespace magmadnn::run

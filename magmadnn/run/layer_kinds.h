/// @file layer_kinds.h
/// The registry of the layer kinds a run config may name: one entry per
/// kind holds its name, one line of help, the settings it reads, how many
/// inputs it takes, whether it chooses a layout over the ranks ("parallel"),
/// and three functions: read its settings from the config, write them back,
/// and build it. parse_config, to_json and build_network read this table
/// and nothing else, so a new kind is one entry (and its test).
///
/// Graph networks: a layer may carry a "name" and name the layers it reads
/// in "inputs" (default: the layer before it in the list); "input" names the
/// network's input. `add` and `concat` join branches, so residual,
/// bottleneck and inception blocks are compositions of plain layers
/// (docs/networks.md). check_layer_graph() refuses, naming the layer, an
/// input name no earlier layer has, a cycle, a layer that comes before a
/// layer it reads, a wrong number of inputs, and a layer whose output no
/// layer reads (only the last layer is the network's output). Shapes are
/// checked when the network is built (build_network): an add of unequal
/// shapes, or a concat whose inputs differ outside the channels, is a
/// ConfigError naming the layer and the two inputs that disagree.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/layer/layer.h"
#include "magmadnn/run/config_object.h"
#include "magmadnn/run/parallel_plan.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

/// What a kind's factory builds on. The factory appends the layers it makes
/// to `chain` (push) and returns the output the next layers read.
struct LayerBuild {
  std::vector<std::shared_ptr<layer::Layer<float>>>& chain;
  const LayerSpec& spec;
  const LayerPlan& plan;
  const std::string& where;  ///< "layers[3]", for messages
  /// The network is split over `group` (a hybrid plan on more than one rank).
  bool split = false;
  std::shared_ptr<distributed::Communicator> group;
  /// The outputs the layer reads, in the order of spec.inputs, and their names.
  std::vector<op::Expr<float>> inputs;
  std::vector<std::string> input_names;
  /// Appends the activation `name` ("none": nothing) after `x` (build_network
  /// moves the hybrid plan's last gather before a final activation).
  std::function<op::Expr<float>(op::Expr<float> x, const std::string& name)> activate;

  const op::Expr<float>& input() const { return inputs.front(); }
  template <class L>
  op::Expr<float> push(const layer::Ref<L>& ref) {
    chain.push_back(ref.ptr());
    return ref->out();
  }
};

struct LayerKind {
  std::string name;
  std::string help;               ///< one line, for docs and --help
  std::vector<std::string> keys;  ///< its settings, besides "type", "name" and "inputs"
  bool has_layout = false;        ///< reads "parallel" (run/parallel_plan.h)
  int min_inputs = 1, max_inputs = 1;  ///< max -1: any number
  void (*parse)(const ConfigObject& o, LayerSpec& l) = nullptr;
  void (*write)(const LayerSpec& l, Json& out) = nullptr;
  op::Expr<float> (*build)(LayerBuild& b) = nullptr;
};

/// Every kind, in the order messages list them.
const std::vector<LayerKind>& layer_kinds();
/// The kind called `name`; nullptr if there is none.
const LayerKind* find_layer_kind(const std::string& name);
std::vector<std::string> layer_kind_names();

/// The name the network's input goes by in "inputs".
inline constexpr const char* kNetworkInputName = "input";

/// The indices of the layers layer `i` reads (-1: the network's input), by
/// its inputs or, without them, the layer before it. Requires a spec that
/// passed check_layer_graph.
std::vector<std::int64_t> layer_inputs(const std::vector<LayerSpec>& layers, std::size_t i);
/// Whether any layer names its inputs or joins branches (a graph, not a chain).
bool is_graph_network(const std::vector<LayerSpec>& layers);
/// Checks names and inputs (see the file comment); ConfigError naming the layer.
void check_layer_graph(const std::vector<LayerSpec>& layers);

}  // namespace magmadnn::run

#include "magmadnn/run/layer_kinds.h"

#include <map>
#include <sstream>

#include "magmadnn/parallel/model_parallel/batch_ops.h"
#include "magmadnn/layer/layers.h"
#include "magmadnn/parallel/layers/parallel_conv2d.h"
#include "magmadnn/parallel/layers/parallel_fully_connected.h"
#include "magmadnn/layer/merge_layers.h"

namespace magmadnn::run {
namespace {

// "none" and every layer activation, by the names the op table gives them.
const std::vector<std::string>& activation_choices() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v{"none"};
    for (layer::activation_t a : layer::all_activations()) v.emplace_back(layer::activation_name(a));
    return v;
  }();
  return names;
}

// The activation a dense or conv2d layer is initialised for: "none" as
// sigmoid (Glorot).
layer::activation_t init_activation(const std::string& name) {
  return name == "none" ? layer::SIGMOID : layer::activation_from_name(name);
}

// "(N, 64, 56, 56)": a shape with the batch axis left free.
std::string batch_shape_text(const Shape& s) {
  std::ostringstream os;
  os << "(N";
  for (std::int64_t k = 1; k < s.ndim(); ++k) os << ", " << s[k];
  os << ")";
  return os.str();
}

// -- settings ----------------------------------------------------------------------------------

void parse_dense(const ConfigObject& o, LayerSpec& l) {
  if (!o.has("units")) throw ConfigError(o.at("units"), "missing (a dense layer needs its number of units)");
  l.units = o.integer("units", 0, limits::units);
  l.activation = o.choice("activation", "none", activation_choices());
  l.bias = o.boolean("bias", true);
  l.fold_bias = o.boolean("fold_bias", false);
  if (l.fold_bias && !l.bias) {
    throw ConfigError(o.at("fold_bias"), "true needs \"bias\": true (there is no bias to fold into the weights)");
  }
  l.parallel = o.choice("parallel", "", parallel_choices());
}
void write_dense(const LayerSpec& l, Json& o) {
  o["units"] = l.units;
  o["activation"] = l.activation;
  o["bias"] = l.bias;
  if (l.fold_bias) o["fold_bias"] = true;  // written only when set, like batchnorm's gamma_init
}

void parse_conv2d(const ConfigObject& o, LayerSpec& l) {
  if (!o.has("filters")) throw ConfigError(o.at("filters"), "missing (a conv2d layer needs its output channels)");
  if (!o.has("kernel")) throw ConfigError(o.at("kernel"), "missing (a conv2d layer needs its kernel size)");
  l.filters = o.integer("filters", 0, limits::filters);
  l.kernel = o.pair("kernel", {}, limits::window);
  l.padding = o.pair("padding", {0, 0}, limits::padding);
  l.stride = o.pair("stride", {1, 1}, limits::window);
  l.dilation = o.pair("dilation", {1, 1}, limits::window);
  l.activation = o.choice("activation", "none", activation_choices());
  l.bias = o.boolean("bias", true);
  l.parallel = o.choice("parallel", "", parallel_choices());
}
void write_conv2d(const LayerSpec& l, Json& o) {
  o["filters"] = l.filters;
  o["kernel"] = l.kernel;
  o["padding"] = l.padding;
  o["stride"] = l.stride;
  o["dilation"] = l.dilation;
  o["activation"] = l.activation;
  o["bias"] = l.bias;
}

void parse_pool(const ConfigObject& o, LayerSpec& l) {
  l.mode = o.choice("mode", "max", {"max", "average"});
  l.kernel = o.pair("kernel", {2, 2}, limits::window);
  l.padding = o.pair("padding", {0, 0}, limits::padding);
  l.stride = o.pair("stride", l.kernel, limits::window);
}
void write_pool(const LayerSpec& l, Json& o) {
  o["mode"] = l.mode;
  o["kernel"] = l.kernel;
  o["padding"] = l.padding;
  o["stride"] = l.stride;
}

void parse_global_pool(const ConfigObject& o, LayerSpec& l) { l.mode = o.choice("mode", "average", {"max", "average"}); }
void write_mode(const LayerSpec& l, Json& o) { o["mode"] = l.mode; }

void parse_residual(const ConfigObject& o, LayerSpec& l) {
  if (!o.has("filters")) throw ConfigError(o.at("filters"), "missing (a residual block needs its output channels)");
  l.filters = o.integer("filters", 0, limits::filters);
  l.stride = o.pair("stride", {1, 1}, limits::window);
}
void write_residual(const LayerSpec& l, Json& o) {
  o["filters"] = l.filters;
  o["stride"] = l.stride;
}

void parse_dropout(const ConfigObject& o, LayerSpec& l) { l.rate = o.number("rate", 0.5, 0.0, 1.0, /*hi_open=*/true); }
void write_dropout(const LayerSpec& l, Json& o) { o["rate"] = l.rate; }

void parse_activation(const ConfigObject& o, LayerSpec& l) {
  if (!o.has("function")) {
    throw ConfigError(o.at("function"), "missing (one of " + quoted_list(activation_choices()) + ")");
  }
  l.activation = o.choice("function", "none", activation_choices());
}
void write_activation(const LayerSpec& l, Json& o) { o["function"] = l.activation; }

void parse_nothing(const ConfigObject&, LayerSpec&) {}
// gamma_init: the scale's initial value; 0 starts a residual branch's last
// normalisation at zero (Goyal et al. 2017; torchvision's zero_init_residual).
void parse_batchnorm(const ConfigObject& o, LayerSpec& l) { l.gamma_init = o.number("gamma_init", 1.0, 0.0, 1e6); }
void write_batchnorm(const LayerSpec& l, Json& o) {
  if (l.gamma_init != 1.0) o["gamma_init"] = l.gamma_init;
}
void write_nothing(const LayerSpec&, Json&) {}

void parse_input(const ConfigObject& o, LayerSpec& l) {
  if (!o.has("shape")) return;
  const Json& v = o.get("shape");
  bool ok = v.is_array() && !v.empty() && v.size() <= 4;
  for (std::size_t k = 0; ok && k < v.size(); ++k) ok = in_range(v[k], limits::units);
  if (!ok) {
    throw ConfigError(o.at("shape"), "expected the sample shape without the batch axis, 1 to 4 integers in [1, " +
                                         std::to_string(limits::units.max) + "] ([3, 224, 224]), got " + v.dump());
  }
  for (const Json& d : v) l.shape.push_back(d.get<std::int64_t>());
}
void write_input(const LayerSpec& l, Json& o) {
  if (!l.shape.empty()) o["shape"] = l.shape;
}

void parse_merge(const ConfigObject& o, LayerSpec& l) { l.activation = o.choice("activation", "none", activation_choices()); }
void write_merge(const LayerSpec& l, Json& o) { o["activation"] = l.activation; }

// -- building ----------------------------------------------------------------------------------

op::Expr<float> build_dense(LayerBuild& b) {
  const LayerSpec& l = b.spec;
  const Placement p = b.plan.placement;
  op::Expr<float> x = b.input();
  if (b.split && p != Placement::data && p != Placement::replicated) {
    if (l.fold_bias) {
      throw ConfigError(b.where + ".fold_bias",
                        "not available on a model-parallel dense layer (it splits W and b over the ranks); set "
                        "\"parallel\": \"data\" on this layer or drop fold_bias");
    }
    const auto init = layer::init_for<float>(init_activation(l.activation));
    if (p == Placement::row) {
      x = b.push(layer::row_parallel_fc<float>(x, l.units, b.group, /*input_is_split=*/true, l.bias, init));
    } else {
      x = b.push(layer::column_parallel_fc<float>(x, l.units, b.group, p == Placement::column_gathered, l.bias, init));
    }
  } else {
    const layer::BiasForm form =
        !l.bias ? layer::BiasForm::none : l.fold_bias ? layer::BiasForm::folded : layer::BiasForm::separate;
    x = b.push(layer::fullyconnected<float>(x, l.units, form, layer::init_for<float>(init_activation(l.activation))));
  }
  return b.activate(x, l.activation);  // elementwise: on this rank's columns when split
}

op::Expr<float> build_conv2d(LayerBuild& b) {
  const LayerSpec& l = b.spec;
  const auto init = layer::init_for<float>(init_activation(l.activation));
  op::Expr<float> x;
  if (b.split && b.plan.placement == Placement::channels) {
    // On the whole batch (the plan gathered it); the output channels are
    // gathered too, so what follows sees the plain layer's output.
    x = b.push(layer::channel_parallel_conv2d<float>(b.input(), {l.kernel[0], l.kernel[1]}, l.filters, b.group,
                                                     {l.padding[0], l.padding[1]}, {l.stride[0], l.stride[1]},
                                                     {l.dilation[0], l.dilation[1]}, /*gather_output=*/true, l.bias,
                                                     init));
  } else {
    x = b.push(layer::conv2d<float>(b.input(), {l.kernel[0], l.kernel[1]}, l.filters, {l.padding[0], l.padding[1]},
                                    {l.stride[0], l.stride[1]}, {l.dilation[0], l.dilation[1]},
                                    /*use_cross_correlation=*/true, l.bias, init));
  }
  return b.activate(x, l.activation);
}

op::Expr<float> build_pool(LayerBuild& b) {
  const LayerSpec& l = b.spec;
  return b.push(layer::pooling<float>(b.input(), {l.kernel[0], l.kernel[1]}, {l.padding[0], l.padding[1]},
                                      {l.stride[0], l.stride[1]}, l.mode == "max" ? MAX_POOL : AVERAGE_POOL));
}

op::Expr<float> build_global_pool(LayerBuild& b) {
  const Shape s = b.input()->get_output_shape();
  MAGMADNN_CHECK(s.ndim() == 4, ShapeError, "global_pool needs {N, C, H, W} input, got " << s);
  return b.push(layer::pooling<float>(b.input(), {s[2], s[3]}, {0, 0}, {s[2], s[3]},
                                      b.spec.mode == "max" ? MAX_POOL : AVERAGE_POOL));
}

op::Expr<float> build_residual(LayerBuild& b) {
  return b.push(layer::residual<float>(b.input(), b.spec.filters, {b.spec.stride[0], b.spec.stride[1]}));
}
op::Expr<float> build_flatten(LayerBuild& b) { return b.push(layer::flatten<float>(b.input())); }
op::Expr<float> build_dropout(LayerBuild& b) {
  return b.push(layer::dropout<float>(b.input(), static_cast<float>(b.spec.rate)));
}
op::Expr<float> build_batchnorm(LayerBuild& b) {
  auto bn = layer::batchnorm<float>(b.input());
  if (b.spec.gamma_init != 1.0) {
    Tensor<float>& gamma = bn->get_gamma()->value();
    for (std::int64_t k = 0; k < gamma.size(); ++k) gamma.set(k, static_cast<float>(b.spec.gamma_init));
  }
  return b.push(bn);
}
op::Expr<float> build_activation(LayerBuild& b) { return b.activate(b.input(), b.spec.activation); }

op::Expr<float> build_input(LayerBuild& b) {
  const std::vector<std::int64_t> d = b.input()->get_output_shape().dims();
  const std::vector<std::int64_t> got(d.begin() + 1, d.end());
  if (!b.spec.shape.empty() && got != b.spec.shape) {
    throw ConfigError(b.where + ".shape", "the network takes samples of " + Json(b.spec.shape).dump() +
                                              ", but the data's are " + Json(got).dump() +
                                              " (a network for other images: use data of its shape, e.g. "
                                              "\"dataset\": \"synthetic\", or another preset)");
  }
  return b.input();
}

// The first input whose shape differs from input 0's on the axes `same`
// says to compare; ConfigError naming both.
void check_merge_shapes(const LayerBuild& b, bool all_axes) {
  const Shape s0 = b.inputs[0]->get_output_shape();
  for (std::size_t i = 1; i < b.inputs.size(); ++i) {
    const Shape s = b.inputs[i]->get_output_shape();
    bool ok = s.ndim() == s0.ndim() && (all_axes || s0.ndim() >= 2);
    for (std::int64_t k = 0; ok && k < s0.ndim(); ++k) ok = (!all_axes && k == 1) || k == 0 || s[k] == s0[k];
    if (!ok) {
      throw ConfigError(b.where, "input " + Json(b.input_names[i]).dump() + " is " + batch_shape_text(s) +
                                     " but input " + Json(b.input_names[0]).dump() + " is " + batch_shape_text(s0) +
                                     (all_axes ? " (an add needs equal shapes)"
                                               : " (a concat needs equal sizes on every axis but the channels)"));
    }
  }
}

op::Expr<float> build_add(LayerBuild& b) {
  check_merge_shapes(b, true);
  return b.activate(b.push(layer::add<float>(b.inputs)), b.spec.activation);
}
op::Expr<float> build_concat(LayerBuild& b) {
  check_merge_shapes(b, false);
  return b.activate(b.push(layer::concat<float>(b.inputs)), b.spec.activation);
}

}  // namespace

const std::vector<LayerKind>& layer_kinds() {
  static const std::vector<LayerKind> kinds = {
      {"dense", "fully connected: units, activation, bias, fold_bias", {"units", "activation", "bias", "fold_bias"},
       true, 1, 1,
       parse_dense, write_dense, build_dense},
      {"conv2d", "2-D convolution: filters, kernel, padding, stride, dilation, activation, bias",
       {"filters", "kernel", "padding", "stride", "dilation", "activation", "bias"}, true, 1, 1, parse_conv2d,
       write_conv2d, build_conv2d},
      {"pool", "max or average pooling: mode, kernel, padding, stride (default: the kernel)",
       {"mode", "kernel", "padding", "stride"}, false, 1, 1, parse_pool, write_pool, build_pool},
      {"global_pool", "pooling over the whole H x W: mode (average)", {"mode"}, false, 1, 1, parse_global_pool,
       write_mode, build_global_pool},
      {"flatten", "{N, C, H, W} -> {N, C*H*W}", {}, false, 1, 1, parse_nothing, write_nothing, build_flatten},
      {"dropout", "dropout in training: rate", {"rate"}, false, 1, 1, parse_dropout, write_dropout, build_dropout},
      {"batchnorm", "batch normalisation (per channel on 4-D input): gamma_init", {"gamma_init"}, false, 1, 1,
       parse_batchnorm, write_batchnorm, build_batchnorm},
      {"residual", "a ResNet basic block (shorthand): filters, stride", {"filters", "stride"}, false, 1, 1,
       parse_residual, write_residual, build_residual},
      {"activation", "an activation function: function", {"function"}, false, 1, 1, parse_activation,
       write_activation, build_activation},
      {"input", "the network's input, first only: shape (checked against the data)", {"shape"}, false, 1, 1,
       parse_input, write_input, build_input},
      {"add", "the sum of two or more inputs of equal shape: activation after", {"activation"}, false, 2, -1,
       parse_merge, write_merge, build_add},
      {"concat", "two or more inputs joined along the channels (axis 1): activation after", {"activation"}, false,
       2, -1, parse_merge, write_merge, build_concat},
  };
  return kinds;
}

const LayerKind* find_layer_kind(const std::string& name) {
  for (const LayerKind& k : layer_kinds()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::vector<std::string> layer_kind_names() {
  std::vector<std::string> names;
  for (const LayerKind& k : layer_kinds()) names.push_back(k.name);
  return names;
}

namespace {

using NameIndex = std::map<std::string, std::size_t>;

NameIndex name_index(const std::vector<LayerSpec>& ls) {
  NameIndex index;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    if (!ls[i].name.empty()) index.emplace(ls[i].name, i);
  }
  return index;
}

// The layers `i` reads; a name no layer has is skipped (check_layer_graph
// reports it), the network's input is -1.
std::vector<std::int64_t> inputs_of(const std::vector<LayerSpec>& ls, const NameIndex& index, std::size_t i) {
  if (ls[i].inputs.empty()) return {static_cast<std::int64_t>(i) - 1};
  std::vector<std::int64_t> out;
  for (const std::string& n : ls[i].inputs) {
    const auto it = index.find(n);
    if (it != index.end()) out.push_back(static_cast<std::int64_t>(it->second));
    else if (n == kNetworkInputName) out.push_back(-1);
  }
  return out;
}

std::string label(const std::vector<LayerSpec>& ls, std::size_t i) {
  const std::string at = "layers[" + std::to_string(i) + "]";
  return ls[i].name.empty() ? at : at + " " + Json(ls[i].name).dump();
}

// A path from `from` down its inputs to `to`, or empty (depth-first).
bool path_to(const std::vector<LayerSpec>& ls, const NameIndex& index, std::size_t from, std::size_t to,
             std::vector<bool>& seen, std::vector<std::size_t>& path) {
  path.push_back(from);
  if (from == to) return true;
  seen[from] = true;
  for (std::int64_t j : inputs_of(ls, index, from)) {
    if (j >= 0 && !seen[static_cast<std::size_t>(j)] &&
        path_to(ls, index, static_cast<std::size_t>(j), to, seen, path)) {
      return true;
    }
  }
  path.pop_back();
  return false;
}

void check_names(const std::vector<LayerSpec>& ls) {
  NameIndex first;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const LayerSpec& l = ls[i];
    const std::string at = "layers[" + std::to_string(i) + "]";
    if (l.type == "input" && i != 0) {
      throw ConfigError(at + ".type", "an input layer comes first in the list, or not at all");
    }
    if (l.type == "input" && !l.inputs.empty()) {
      throw ConfigError(at + ".inputs", "an input layer reads the data, no other layer");
    }
    if (l.name.empty()) continue;
    if (l.name == kNetworkInputName && l.type != "input") {
      throw ConfigError(at + ".name", "\"input\" names the network's input in \"inputs\"; choose another name");
    }
    const auto [it, fresh] = first.emplace(l.name, i);
    if (!fresh) {
      throw ConfigError(at + ".name", Json(l.name).dump() + " is also the name of layers[" +
                                          std::to_string(it->second) + "] (names must differ)");
    }
  }
}

void check_inputs(const std::vector<LayerSpec>& ls, const NameIndex& index, std::size_t i) {
  const LayerSpec& l = ls[i];
  const LayerKind& kind = *find_layer_kind(l.type);
  const auto n = static_cast<int>(l.inputs.empty() ? 1 : l.inputs.size());
  if (n < kind.min_inputs || (kind.max_inputs >= 0 && n > kind.max_inputs)) {
    const std::string want = kind.max_inputs < 0 ? "at least " + std::to_string(kind.min_inputs) + " inputs"
                                                 : std::to_string(kind.min_inputs) + " input";
    throw ConfigError("layers[" + std::to_string(i) + "].inputs",
                      "a" + std::string(l.type == "add" || l.type == "input" ? "n " : " ") + l.type +
                          " layer reads " + want + ", got " + std::to_string(n) +
                          (l.inputs.empty() ? " (no \"inputs\": the layer before it)" : ""));
  }
  for (std::size_t k = 0; k < l.inputs.size(); ++k) {
    const std::string& name = l.inputs[k];
    const std::string at = "layers[" + std::to_string(i) + "].inputs[" + std::to_string(k) + "]";
    const auto it = index.find(name);
    if (it == index.end()) {
      if (name == kNetworkInputName) continue;
      throw ConfigError(at, "no layer is named " + Json(name).dump() + " (\"input\" is the network's input)");
    }
    const std::size_t j = it->second;
    if (j == i) throw ConfigError(at, Json(name).dump() + " is this layer itself: a cycle");
    if (j < i) continue;
    std::vector<bool> seen(ls.size(), false);
    std::vector<std::size_t> path;
    if (path_to(ls, index, j, i, seen, path)) {
      std::string cycle = label(ls, i);
      for (std::size_t p : path) cycle += " -> " + label(ls, p);
      throw ConfigError(at, Json(name).dump() + " reads this layer: a cycle (" + cycle + ", each reading the next)");
    }
    throw ConfigError(at, Json(name).dump() + " is layers[" + std::to_string(j) +
                              "], after this layer: list every layer after the layers it reads");
  }
}

}  // namespace

std::vector<std::int64_t> layer_inputs(const std::vector<LayerSpec>& layers, std::size_t i) {
  return inputs_of(layers, name_index(layers), i);
}

bool is_graph_network(const std::vector<LayerSpec>& layers) {
  for (const LayerSpec& l : layers) {
    const LayerKind* k = find_layer_kind(l.type);
    if (!l.inputs.empty() || (k && k->max_inputs != 1)) return true;
  }
  return false;
}

void check_layer_graph(const std::vector<LayerSpec>& ls) {
  check_names(ls);
  const NameIndex index = name_index(ls);
  for (std::size_t i = 0; i < ls.size(); ++i) check_inputs(ls, index, i);
  std::vector<int> readers(ls.size(), 0);
  for (std::size_t i = 0; i < ls.size(); ++i) {
    for (std::int64_t j : inputs_of(ls, index, i)) {
      if (j >= 0) ++readers[static_cast<std::size_t>(j)];
    }
  }
  for (std::size_t i = 0; i + 1 < ls.size(); ++i) {
    if (readers[i] == 0) {
      throw ConfigError("layers[" + std::to_string(i) + "]",
                        label(ls, i) + " is read by no layer (only the last layer, layers[" +
                            std::to_string(ls.size() - 1) + "], is the network's output): name it in a later "
                            "layer's \"inputs\", or remove it");
    }
  }
}

}  // namespace magmadnn::run

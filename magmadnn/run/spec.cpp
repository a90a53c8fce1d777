#include "magmadnn/run/spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "magmadnn/layer/activation_layer.h"
#include "magmadnn/optimizer/factory.h"
#include "magmadnn/optimizer/large_batch_lr.h"
#include "magmadnn/run/parallel_plan.h"

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
const std::vector<std::string> kLayerTypes = {"dense",     "conv2d",      "pool",     "global_pool", "flatten",
                                               "dropout",   "batchnorm",   "residual", "activation"};

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + Json(n).dump();
  return s;
}

// An integer of JSON (signed or unsigned) inside [r.min, r.max].
bool in_range(const Json& v, IntRange r) {
  if (v.is_number_unsigned()) {
    const std::uint64_t x = v.get<std::uint64_t>();
    return x <= static_cast<std::uint64_t>(r.max) && (r.min <= 0 || x >= static_cast<std::uint64_t>(r.min));
  }
  if (!v.is_number_integer()) return false;
  const std::int64_t x = v.get<std::int64_t>();
  return x >= r.min && x <= r.max;
}

std::string range_text(IntRange r) {
  return "an integer in [" + std::to_string(r.min) + ", " + std::to_string(r.max) + "]";
}

// A view of one JSON object under a path. Construction rejects keys outside
// `allowed`, so every reader below only sees keys it knows.
class Obj {
 public:
  Obj(const Json& j, std::string path, const std::vector<std::string>& allowed, const std::string& what)
      : j_(j), path_(std::move(path)) {
    if (!j.is_object()) throw ConfigError(path_, "expected an object, got " + j.dump());
    for (const auto& [key, value] : j.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        throw ConfigError(at(key), "unknown key in " + what + " (allowed: " + quoted_list(allowed) + ")");
      }
    }
  }

  std::string at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const std::string& key) const { return j_.contains(key); }
  const Json& get(const std::string& key) const { return j_.at(key); }

  std::int64_t integer(const std::string& key, std::int64_t def, IntRange r) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!in_range(v, r)) throw ConfigError(at(key), "expected " + range_text(r) + ", got " + v.dump());
    return v.get<std::int64_t>();
  }

  std::uint64_t seed(const std::string& key, std::uint64_t def) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    throw ConfigError(at(key), "expected a non-negative integer, got " + v.dump());
  }

  // A bound as the shortest text that reads back as the same double, so a
  // limit is printed exactly (16777216, never 1.67772e+07).
  static std::string exact(double x) {
    char buf[40];
    for (int digits = 6; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, x);
      if (std::strtod(buf, nullptr) == x) break;
    }
    return buf;
  }

  // A finite number in [lo, hi] (hi_open: [lo, hi)).
  double number(const std::string& key, double def, double lo, double hi, bool hi_open = false) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_number()) throw ConfigError(at(key), "expected a number, got " + v.dump());
    const double x = v.get<double>();
    const bool ok = std::isfinite(x) && x >= lo && (hi_open ? x < hi : x <= hi);
    if (!ok) {
      std::ostringstream os;
      os << "expected a number in [" << exact(lo) << ", ";
      if (std::isinf(hi)) os << "inf)"; else os << exact(hi) << (hi_open ? ")" : "]");
      os << ", got " << v.dump();
      throw ConfigError(at(key), os.str());
    }
    return x;
  }

  double positive(const std::string& key, double def) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0) {
      throw ConfigError(at(key), "expected a positive number, got " + v.dump());
    }
    return v.get<double>();
  }

  bool boolean(const std::string& key, bool def) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_boolean()) throw ConfigError(at(key), "expected true or false, got " + v.dump());
    return v.get<bool>();
  }

  std::string string(const std::string& key, const std::string& def) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_string()) throw ConfigError(at(key), "expected a string, got " + v.dump());
    return v.get<std::string>();
  }

  std::string choice(const std::string& key, const std::string& def, const std::vector<std::string>& options) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (!v.is_string() || std::find(options.begin(), options.end(), v.get<std::string>()) == options.end()) {
      throw ConfigError(at(key), "expected one of " + quoted_list(options) + ", got " + v.dump());
    }
    return v.get<std::string>();
  }

  // A 2-D window given as one integer (square) or [h, w].
  std::vector<std::int64_t> pair(const std::string& key, std::vector<std::int64_t> def, IntRange r) const {
    if (!has(key)) return def;
    const Json& v = get(key);
    if (in_range(v, r)) return {v.get<std::int64_t>(), v.get<std::int64_t>()};
    if (v.is_array() && v.size() == 2 && in_range(v[0], r) && in_range(v[1], r)) {
      return {v[0].get<std::int64_t>(), v[1].get<std::int64_t>()};
    }
    throw ConfigError(at(key), "expected " + range_text(r) + " or [h, w] of such integers, got " + v.dump());
  }

 private:
  const Json& j_;
  std::string path_;
};

LayerSpec parse_layer(const Json& j, const std::string& path) {
  if (!j.is_object()) throw ConfigError(path, "expected a layer object, got " + j.dump());
  if (!j.contains("type")) throw ConfigError(path + ".type", "missing (one of " + quoted_list(kLayerTypes) + ")");
  const Json& t = j.at("type");
  if (!t.is_string() || std::find(kLayerTypes.begin(), kLayerTypes.end(), t.get<std::string>()) == kLayerTypes.end()) {
    throw ConfigError(path + ".type", "expected one of " + quoted_list(kLayerTypes) + ", got " + t.dump());
  }
  LayerSpec l;
  l.type = t.get<std::string>();
  const std::string what = "a " + l.type + " layer";
  const bool has_layout = l.type == "dense" || l.type == "conv2d";
  if (!has_layout && j.contains("parallel")) {
    throw ConfigError(path + ".parallel", "only dense and conv2d layers choose a layout; " + what +
                                              " has no weights to split and runs on its input's layout");
  }
  if (l.type == "dense") {
    Obj o(j, path, {"type", "parallel", "units", "activation", "bias"}, what);
    if (!o.has("units")) throw ConfigError(o.at("units"), "missing (a dense layer needs its number of units)");
    l.units = o.integer("units", 0, limits::units);
    l.activation = o.choice("activation", "none", activation_choices());
    l.bias = o.boolean("bias", true);
    l.parallel = o.choice("parallel", "", parallel_choices());
  } else if (l.type == "conv2d") {
    Obj o(j, path, {"type", "parallel", "filters", "kernel", "padding", "stride", "dilation", "activation", "bias"},
          what);
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
  } else if (l.type == "pool") {
    Obj o(j, path, {"type", "mode", "kernel", "padding", "stride"}, what);
    l.mode = o.choice("mode", "max", {"max", "average"});
    l.kernel = o.pair("kernel", {2, 2}, limits::window);
    l.padding = o.pair("padding", {0, 0}, limits::padding);
    l.stride = o.pair("stride", l.kernel, limits::window);
  } else if (l.type == "global_pool") {
    Obj o(j, path, {"type", "mode"}, what);
    l.mode = o.choice("mode", "average", {"max", "average"});
  } else if (l.type == "residual") {
    Obj o(j, path, {"type", "filters", "stride"}, what);
    if (!o.has("filters")) throw ConfigError(o.at("filters"), "missing (a residual block needs its output channels)");
    l.filters = o.integer("filters", 0, limits::filters);
    l.stride = o.pair("stride", {1, 1}, limits::window);
  } else if (l.type == "dropout") {
    Obj o(j, path, {"type", "rate"}, what);
    l.rate = o.number("rate", 0.5, 0.0, 1.0, /*hi_open=*/true);
  } else if (l.type == "activation") {
    Obj o(j, path, {"type", "function"}, what);
    if (!o.has("function")) {
      throw ConfigError(o.at("function"), "missing (one of " + quoted_list(activation_choices()) + ")");
    }
    l.activation = o.choice("function", "none", activation_choices());
  } else {  // flatten, batchnorm: no settings
    Obj o(j, path, {"type"}, what);
  }
  return l;
}

}  // namespace

const std::vector<std::string>& parallel_choices() {
  static const std::vector<std::string> names = {"data", "model", "auto"};
  return names;
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"allreduce", "weight-avg", "ps", "asgd", "ring"};
  return names;
}

bool loss_scaling_enabled(const LossScalingSpec& spec, Precision precision) {
  return spec.mode == "on" || (spec.mode == "auto" && precision == Precision::FP16);
}

TrainSpec parse_config(const Json& j) {
  const Obj root(j, "",
                 {"name", "layers", "loss", "optimizer", "schedule", "data", "early_stopping", "distributed",
                  "batch_growth", "epochs", "batch_size", "seed", "deterministic", "test_every_epoch", "precision",
                  "loss_scaling"},
                 "the config");
  TrainSpec s;
  s.name = root.string("name", s.name);
  // The name becomes the run folder's name (runs/<name>-<date>-<time>): one
  // plain path component, never a way out of runs/ or a hidden file.
  const bool plain = !s.name.empty() && s.name.size() <= 100 && s.name[0] != '.' &&
                     std::all_of(s.name.begin(), s.name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                     });
  if (!plain) {
    throw ConfigError("name", "expected 1 to 100 letters, digits, '-', '_' or '.' (not starting with '.'), got " +
                                  Json(s.name).dump());
  }
  if (!root.has("layers")) throw ConfigError("layers", "missing (a config needs at least one layer)");
  const Json& layers = root.get("layers");
  if (!layers.is_array() || layers.empty()) {
    throw ConfigError("layers", "expected a non-empty array of layers, got " + layers.dump());
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    s.layers.push_back(parse_layer(layers[i], "layers[" + std::to_string(i) + "]"));
  }
  s.loss = root.choice("loss", s.loss, {"cross_entropy", "mse"});
  s.epochs = root.integer("epochs", s.epochs, limits::epochs);
  s.batch_size = root.integer("batch_size", s.batch_size, limits::batch_size);
  s.seed = root.seed("seed", s.seed);
  s.deterministic = root.boolean("deterministic", s.deterministic);
  s.test_every_epoch = root.boolean("test_every_epoch", s.test_every_epoch);
  s.precision = parse_precision(root.choice("precision", "fp32", {"fp32", "bf16", "fp16", "tf32"}));
  if (root.has("loss_scaling")) {
    const Obj o(root.get("loss_scaling"), "loss_scaling", {"mode", "init_scale", "growth_interval"},
                "the loss scaling");
    auto& l = s.loss_scaling;
    l.mode = o.choice("mode", l.mode, {"auto", "on", "off"});
    l.init_scale = o.number("init_scale", l.init_scale, 1.0, 16777216.0);
    l.growth_interval = o.integer("growth_interval", l.growth_interval, limits::growth_interval);
  }

  if (root.has("optimizer")) {
    const Obj o(root.get("optimizer"), "optimizer",
                {"type", "learning_rate", "momentum", "nesterov", "weight_decay", "beta1", "beta2", "epsilon", "rho",
                 "trust_coefficient", "exclude_vectors"},
                "the optimizer");
    auto& p = s.optimizer;
    p.type = o.choice("type", p.type, optimizer::kind_names());
    p.learning_rate = o.positive("learning_rate", p.learning_rate);
    p.momentum = o.number("momentum", p.momentum, 0.0, 1.0, true);
    p.nesterov = o.boolean("nesterov", p.nesterov);
    p.weight_decay = o.number("weight_decay", p.weight_decay, 0.0, INFINITY);
    p.beta1 = o.number("beta1", p.beta1, 0.0, 1.0, true);
    p.beta2 = o.number("beta2", p.beta2, 0.0, 1.0, true);
    p.epsilon = o.positive("epsilon", p.epsilon);
    p.rho = o.number("rho", p.rho, 0.0, 1.0, true);
    p.trust_coefficient = o.positive("trust_coefficient", p.trust_coefficient);
    p.exclude_vectors = o.boolean("exclude_vectors", p.exclude_vectors);
    if (p.nesterov && p.momentum == 0.0) {
      throw ConfigError("optimizer.nesterov", "true needs a positive optimizer.momentum");
    }
  }
  if (root.has("schedule")) {
    const Obj o(root.get("schedule"), "schedule",
                {"type", "step_epochs", "gamma", "min_lr", "warmup_epochs", "lr_scaling", "base_batch"},
                "the schedule");
    auto& p = s.schedule;
    p.type = o.choice("type", p.type, {"constant", "step", "exponential", "cosine"});
    p.step_epochs = o.positive("step_epochs", p.step_epochs);
    p.gamma = o.positive("gamma", p.gamma);
    p.min_lr = o.number("min_lr", p.min_lr, 0.0, INFINITY);
    p.warmup_epochs = o.number("warmup_epochs", p.warmup_epochs, 0.0, INFINITY);
    p.lr_scaling = o.choice("lr_scaling", p.lr_scaling, optimizer::lr_scaling_names());
    p.base_batch = o.integer("base_batch", p.base_batch, limits::batch_size);
  }
  if (s.schedule.base_batch == 0) s.schedule.base_batch = s.batch_size;
  if (root.has("batch_growth")) {
    const Obj o(root.get("batch_growth"), "batch_growth", {"factor", "every_epochs", "max"}, "batch growth");
    auto& g = s.batch_growth;
    g.enabled = true;
    g.factor = o.integer("factor", g.factor, limits::growth_factor);
    g.every_epochs = o.integer("every_epochs", g.every_epochs, limits::epochs);
    if (!o.has("max")) throw ConfigError(o.at("max"), "missing (the largest batch the growth may reach)");
    g.max = o.integer("max", g.max, limits::growth_max);
    if (g.max < s.batch_size) {
      throw ConfigError(o.at("max"), "expected at least batch_size (" + std::to_string(s.batch_size) + "), got " +
                                         std::to_string(g.max));
    }
  }
  if (root.has("data")) {
    const Json& data = root.get("data");
    if (data.is_object() && data.contains("validation")) {
      throw ConfigError("data.validation", "replaced by data.val_split (the fraction of the training set held out for "
                                           "validation; the test split is no longer used for it)");
    }
    const Obj o(data, "data", {"dataset", "dir", "limit_train", "limit_test", "val_split"}, "the data");
    auto& p = s.data;
    p.dataset = o.choice("dataset", p.dataset, {"fashion-mnist", "mnist", "idx"});
    p.dir = o.string("dir", p.dir);
    if (p.dir.empty()) throw ConfigError("data.dir", "expected a directory, got \"\"");
    p.limit_train = o.integer("limit_train", p.limit_train, limits::samples);
    p.limit_test = o.integer("limit_test", p.limit_test, limits::samples);
    p.val_split = o.number("val_split", p.val_split, 0.0, 1.0, /*hi_open=*/true);
  }
  if (root.has("early_stopping")) {
    const Obj o(root.get("early_stopping"), "early_stopping", {"patience", "monitor", "min_delta", "restore_best"},
                "early stopping");
    auto& e = s.early_stopping;
    e.enabled = true;
    e.patience = o.integer("patience", e.patience, limits::patience);
    e.monitor = o.choice("monitor", e.monitor, {"val_loss", "val_accuracy"});
    e.min_delta = o.number("min_delta", e.min_delta, 0.0, INFINITY);
    e.restore_best = o.boolean("restore_best", e.restore_best);
    if (s.data.val_split == 0.0) {
      throw ConfigError("early_stopping", "monitors " + e.monitor + ", which needs data.val_split > 0");
    }
  }
  if (root.has("distributed")) {
    const Obj o(root.get("distributed"), "distributed",
                {"strategy", "parallel", "bucket_mb", "average_every", "staleness", "watchdog_s"},
                "the distributed settings");
    auto& d = s.distributed;
    d.strategy = o.choice("strategy", d.strategy, strategy_names());
    d.parallel = o.choice("parallel", d.parallel, parallel_choices());
    d.bucket_mb = o.number("bucket_mb", d.bucket_mb, 0.0, 4096.0);
    if (d.bucket_mb == 0.0) {
      throw ConfigError("distributed.bucket_mb", "expected a number in (0, 4096], got " + o.get("bucket_mb").dump());
    }
    d.average_every = o.integer("average_every", d.average_every, limits::average_every);
    d.staleness = o.integer("staleness", d.staleness, limits::staleness);
    d.watchdog_s = o.number("watchdog_s", d.watchdog_s, 0.0, 86400.0);
    if (d.watchdog_s == 0.0) {
      throw ConfigError("distributed.watchdog_s", "expected a number in (0, 86400], got " + o.get("watchdog_s").dump());
    }
  }
  // A layout the ranks cannot serve is a config error, whatever the rank count.
  plan_parallel(s);
  return s;
}

namespace {

// Walks a JSON text to find where a number too large for a double sits: the
// DOM parser's error for it carries neither the path nor the position.
class PathTracker : public nlohmann::json_sax<Json> {
 public:
  std::string where;  // "path (line L, column C)" of the failure

  explicit PathTracker(const std::string& text) : text_(text) {}
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& k) override {
    frames_.back().key = k;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception&) override {
    std::string p;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      // The value being read is the next element of the innermost array.
      if (f.array) {
        p += '[';
        p += std::to_string(f.index + (i + 1 == frames_.size() ? 1 : 0));
        p += ']';
      } else {
        if (!p.empty()) p += '.';
        p += f.key;
      }
    }
    std::size_t line = 1, column = 1;
    const std::size_t start = position >= token.size() ? position - token.size() : 0;  // the token's first byte
    for (std::size_t i = 0; i < start && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    where = (p.empty() ? std::string("config") : p) + " (line " + std::to_string(line) + ", column " +
            std::to_string(column) + ")";
    return false;
  }

 private:
  struct Frame {
    bool array;
    std::int64_t index = -1;  // arrays: the element last started
    std::string key;          // objects: the key last read
  };
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  bool open(bool array) {
    value();
    frames_.push_back(Frame{array, -1, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }
  const std::string& text_;
  std::vector<Frame> frames_;
};

// Deeper documents are refused before parsing: nesting costs the parser, the
// destructor and dump() stack depth, and 50,000 levels overflowed it.
constexpr int kMaxJsonDepth = 1000;

void check_json_depth(const std::string& text, const std::string& path) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw ConfigError("", "config file " + path + " nests arrays/objects more than " +
                                  std::to_string(kMaxJsonDepth) + " levels deep (at byte offset " +
                                  std::to_string(i) + ")");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

}  // namespace

Json read_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError("", "config file " + path + " is a directory, not a JSON file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("", "cannot open config file " + path);
  std::string text;
  try {
    std::ostringstream buf;
    buf << in.rdbuf();
    text = buf.str();
  } catch (const std::exception&) {
    throw ConfigError("", "cannot read config file " + path);
  }
  check_json_depth(text, path);
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw ConfigError("", "invalid JSON in " + path + ": " + e.what());
  } catch (const Json::out_of_range&) {
    // The one out_of_range the parser raises: a number beyond a double's range (1e999).
    PathTracker t(text);
    Json::sax_parse(text, &t);
    throw ConfigError("", "invalid JSON in " + path + ": " + t.where + ": number out of range");
  } catch (const Json::exception& e) {  // nothing else is known to escape the parser; name it all the same
    throw ConfigError("", "invalid JSON in " + path + ": " + e.what());
  }
  if (!j.is_object()) {
    std::string got = j.dump();
    if (got.size() > 60) got = got.substr(0, 57) + "...";
    throw ConfigError("", "expected an object in " + path + ", got " + got);
  }
  return j;
}

Json to_json(const TrainSpec& s) {
  Json layers = Json::array();
  for (const auto& l : s.layers) {
    Json o;
    o["type"] = l.type;
    if (l.type == "dense") {
      o["units"] = l.units;
      o["activation"] = l.activation;
      o["bias"] = l.bias;
    } else if (l.type == "conv2d") {
      o["filters"] = l.filters;
      o["kernel"] = l.kernel;
      o["padding"] = l.padding;
      o["stride"] = l.stride;
      o["dilation"] = l.dilation;
      o["activation"] = l.activation;
      o["bias"] = l.bias;
    } else if (l.type == "pool") {
      o["mode"] = l.mode;
      o["kernel"] = l.kernel;
      o["padding"] = l.padding;
      o["stride"] = l.stride;
    } else if (l.type == "global_pool") {
      o["mode"] = l.mode;
    } else if (l.type == "residual") {
      o["filters"] = l.filters;
      o["stride"] = l.stride;
    } else if (l.type == "dropout") {
      o["rate"] = l.rate;
    } else if (l.type == "activation") {
      o["function"] = l.activation;
    }
    if (!l.parallel.empty()) o["parallel"] = l.parallel;
    layers.push_back(std::move(o));
  }
  Json j;
  j["name"] = s.name;
  j["layers"] = std::move(layers);
  j["loss"] = s.loss;
  const auto& p = s.optimizer;
  j["optimizer"] = {{"type", p.type},       {"learning_rate", p.learning_rate}, {"momentum", p.momentum},
                    {"nesterov", p.nesterov}, {"weight_decay", p.weight_decay},   {"beta1", p.beta1},
                    {"beta2", p.beta2},       {"epsilon", p.epsilon},
                    {"rho", p.rho},           {"trust_coefficient", p.trust_coefficient},
                    {"exclude_vectors", p.exclude_vectors}};
  const auto& c = s.schedule;
  j["schedule"] = {{"type", c.type},
                   {"step_epochs", c.step_epochs},
                   {"gamma", c.gamma},
                   {"min_lr", c.min_lr},
                   {"warmup_epochs", c.warmup_epochs},
                   {"lr_scaling", c.lr_scaling},
                   {"base_batch", c.base_batch}};
  const auto& d = s.data;
  j["data"] = {{"dataset", d.dataset},
               {"dir", d.dir},
               {"limit_train", d.limit_train},
               {"limit_test", d.limit_test},
               {"val_split", d.val_split}};
  if (s.early_stopping.enabled) {
    const auto& e = s.early_stopping;
    j["early_stopping"] = {
        {"patience", e.patience}, {"monitor", e.monitor}, {"min_delta", e.min_delta}, {"restore_best", e.restore_best}};
  }
  const auto& dist = s.distributed;
  j["distributed"] = {{"strategy", dist.strategy},
                      {"bucket_mb", dist.bucket_mb},
                      {"average_every", dist.average_every},
                      {"staleness", dist.staleness},
                      {"watchdog_s", dist.watchdog_s}};
  // Written only when not the default, so configs from before hybrid plans
  // read back unchanged.
  if (dist.parallel != DistributedSpec{}.parallel) j["distributed"]["parallel"] = dist.parallel;
  if (s.batch_growth.enabled) {
    const auto& g = s.batch_growth;
    j["batch_growth"] = {{"factor", g.factor}, {"every_epochs", g.every_epochs}, {"max", g.max}};
  }
  j["epochs"] = s.epochs;
  j["batch_size"] = s.batch_size;
  j["seed"] = s.seed;
  if (s.deterministic) j["deterministic"] = true;
  if (s.test_every_epoch) j["test_every_epoch"] = true;
  if (s.precision != Precision::FP32) j["precision"] = precision_name(s.precision);
  if (s.loss_scaling != LossScalingSpec{}) {
    const auto& l = s.loss_scaling;
    j["loss_scaling"] = {{"mode", l.mode}, {"init_scale", l.init_scale}, {"growth_interval", l.growth_interval}};
  }
  return j;
}

void merge_json(Json& base, const Json& patch) {
  if (!base.is_object() || !patch.is_object()) {
    base = patch;
    return;
  }
  for (const auto& [key, value] : patch.items()) {
    if (base.contains(key) && base[key].is_object() && value.is_object()) {
      merge_json(base[key], value);
    } else {
      base[key] = value;
    }
  }
}

}  // namespace magmadnn::run

#include "magmadnn/run/spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "magmadnn/parallel/strategy_registry.h"
#include "magmadnn/optimizer/factory.h"
#include "magmadnn/optimizer/large_batch_lr.h"
#include "magmadnn/run/config_object.h"
#include "magmadnn/run/layer_kinds.h"
#include "magmadnn/run/parallel_plan.h"
#include "magmadnn/run/pipeline_config.h"
#include "magmadnn/run/spec_fields.h"

namespace magmadnn::run {
namespace {

using Obj = ConfigObject;

// A layer name: what other layers' "inputs" call it (and what summaries show).
bool plain_layer_name(const std::string& n) {
  return !n.empty() && n.size() <= 100 && std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

void parse_graph_keys(const Obj& o, LayerSpec& l) {
  l.name = o.string("name", "");
  if (o.has("name") && !plain_layer_name(l.name)) {
    throw ConfigError(o.at("name"), "expected 1 to 100 letters, digits, '-', '_' or '.', got " + o.get("name").dump());
  }
  if (!o.has("inputs")) return;
  const Json& v = o.get("inputs");
  bool ok = v.is_array() && !v.empty();
  for (std::size_t k = 0; ok && k < v.size(); ++k) ok = v[k].is_string();
  if (!ok) throw ConfigError(o.at("inputs"), "expected a non-empty array of layer names, got " + v.dump());
  for (const Json& n : v) l.inputs.push_back(n.get<std::string>());
}

LayerSpec parse_layer(const Json& j, const std::string& path) {
  const std::vector<std::string> types = layer_kind_names();
  if (!j.is_object()) throw ConfigError(path, "expected a layer object, got " + j.dump());
  if (!j.contains("type")) throw ConfigError(path + ".type", "missing (one of " + quoted_list(types) + ")");
  const Json& t = j.at("type");
  const LayerKind* kind = t.is_string() ? find_layer_kind(t.get<std::string>()) : nullptr;
  if (kind == nullptr) throw ConfigError(path + ".type", "expected one of " + quoted_list(types) + ", got " + t.dump());
  LayerSpec l;
  l.type = kind->name;
  const std::string what = "a" + std::string(l.type == "add" || l.type == "input" || l.type == "activation" ? "n " : " ") +
                           l.type + " layer";
  if (!kind->has_layout && j.contains("parallel")) {
    throw ConfigError(path + ".parallel", "only dense and conv2d layers choose a layout; " + what +
                                              " has no weights to split and runs on its input's layout");
  }
  std::vector<std::string> allowed{"type", "name", "inputs"};
  if (kind->has_layout) allowed.push_back("parallel");
  allowed.insert(allowed.end(), kind->keys.begin(), kind->keys.end());
  const Obj o(j, path, allowed, what);
  parse_graph_keys(o, l);
  kind->parse(o, l);
  return l;
}

// The keys of "dataset": "folder" (data/image_folder.h).
void parse_folder(const Obj& o, DataSpec& p) {
  const bool folder = p.dataset == "folder";
  for (const char* key : {"train", "test", "mean", "std", "augment", "min_scale", "center_crop", "on_error", "verify",
                          "decode_threads"}) {
    if (!folder && o.has(key)) {
      throw ConfigError(o.at(key), "only \"dataset\": \"folder\" takes it (the image folders' options)");
    }
  }
  if (!folder) return;
  if (o.has("dir")) throw ConfigError(o.at("dir"), "\"dataset\": \"folder\" reads the folders \"train\" and \"test\", not \"dir\"");
  for (const char* key : {"train", "test"}) {
    if (!o.has(key)) {
      throw ConfigError(o.at(key), "missing (the folder of " + std::string(key) +
                                       " images: one sub-folder per class holding .jpg, .jpeg or .png files)");
    }
    const std::string dir = o.string(key, "");
    if (dir.empty()) throw ConfigError(o.at(key), "expected a directory, got \"\"");
    (std::string(key) == "train" ? p.train_dir : p.test_dir) = dir;
  }
  for (auto [key, values] : {std::pair{"mean", &p.mean}, std::pair{"std", &p.std}}) {
    if (!o.has(key)) continue;
    const Json& v = o.get(key);
    bool ok = v.is_number() || (v.is_array() && (v.size() == 1 || v.size() == 3));
    std::vector<double> got;
    for (const Json& x : v.is_array() ? v : Json::array({v})) {
      ok = ok && x.is_number() && std::isfinite(x.get<double>()) && (std::string(key) == "mean" || x.get<double>() > 0);
      if (ok) got.push_back(x.get<double>());
    }
    if (!ok) {
      throw ConfigError(o.at(key), std::string("expected a ") + (std::string(key) == "std" ? "positive " : "") +
                                       "number or an array of 1 or 3 such numbers (one per channel), got " + v.dump());
    }
    *values = got;
  }
  p.augment = o.boolean("augment", p.augment);
  p.min_scale = o.number("min_scale", p.min_scale, 0.0, 1.0);
  p.center_crop = o.number("center_crop", p.center_crop, 0.0, 1.0);
  for (auto [key, x] : {std::pair{"min_scale", p.min_scale}, std::pair{"center_crop", p.center_crop}}) {
    if (x == 0.0) throw ConfigError(o.at(key), "expected a number in (0, 1], got 0");
  }
  p.on_error = o.choice("on_error", p.on_error, {"skip", "refuse"});
  p.verify = o.boolean("verify", p.verify);
  p.decode_threads = o.integer("decode_threads", p.decode_threads, limits::decode_threads);
}

void check_folder_shape(const Obj& o, const DataSpec& p) {
  if (p.dataset != "folder") return;
  const std::size_t channels = p.shape.size() == 3 ? static_cast<std::size_t>(p.shape[0]) : 0;
  if (p.shape.size() != 3 || (channels != 1 && channels != 3)) {
    throw ConfigError(o.at("shape"), "expected [C, H, W] with C 1 (grey) or 3 (RGB) for image folders, got " +
                                         Json(p.shape).dump());
  }
  for (auto [key, v] : {std::pair{"mean", &p.mean}, std::pair{"std", &p.std}}) {
    if (v->size() != 1 && v->size() != channels) {
      throw ConfigError(o.at(key), std::to_string(v->size()) + " values for images of " + std::to_string(channels) +
                                       " channel" + (channels == 1 ? "" : "s") + " (give 1 or " +
                                       std::to_string(channels) + ")");
    }
  }
}

void parse_data(const Obj& o, DataSpec& p) {
  p.dataset = o.choice("dataset", p.dataset, dataset_names());
  const bool synthetic = p.dataset == "synthetic";
  if (p.dataset.rfind("cifar", 0) == 0 && !o.has("dir")) {
    throw ConfigError(o.at("dir"), "missing (the folder of the " + p.dataset + " binary files: " +
                                       (p.dataset == "cifar10" ? "data_batch_1.bin .. data_batch_5.bin, test_batch.bin"
                                                               : "train.bin, test.bin") + ")");
  }
  p.dir = o.string("dir", p.dir);
  if (p.dir.empty()) throw ConfigError("data.dir", "expected a directory, got \"\"");
  p.limit_train = o.integer("limit_train", p.limit_train, limits::samples);
  p.limit_test = o.integer("limit_test", p.limit_test, limits::samples);
  p.val_split = o.number("val_split", p.val_split, 0.0, 1.0, /*hi_open=*/true);
  const bool folder = p.dataset == "folder";
  for (const char* key : {"shape", "classes", "train_samples", "test_samples"}) {
    if (!synthetic && !(folder && std::string(key) == "shape") && o.has(key)) {
      throw ConfigError(o.at(key), std::string("only \"dataset\": \"synthetic\"") +
                                       (std::string(key) == "shape" ? " and \"folder\" take it" : " takes it") +
                                       " (the " + p.dataset + (folder ? " data's classes are its sub-folders)"
                                                                      : " files say their own shape and classes)"));
    }
  }
  parse_folder(o, p);
  if (o.has("shape")) {
    const Json& v = o.get("shape");
    bool ok = v.is_array() && !v.empty() && v.size() <= 3;
    std::int64_t numel = 1;
    for (std::size_t k = 0; ok && k < v.size(); ++k) {
      ok = in_range(v[k], limits::window);
      if (ok) numel *= v[k].get<std::int64_t>();
    }
    if (!ok || numel > (std::int64_t{1} << 28)) {
      throw ConfigError(o.at("shape"), "expected one sample's shape, 1 to 3 integers in [1, 65536] of at most 2^28 "
                                       "values ([3, 224, 224]), got " + v.dump());
    }
    p.shape = v.get<std::vector<std::int64_t>>();
  }
  p.classes = o.integer("classes", p.classes, limits::classes);
  p.train_samples = o.integer("train_samples", p.train_samples, limits::synthetic_samples);
  p.test_samples = o.integer("test_samples", p.test_samples, limits::synthetic_samples);
  check_folder_shape(o, p);
}

}  // namespace

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"fashion-mnist", "mnist", "idx", "cifar10", "cifar100", "synthetic", "folder"};
  return names;
}

const std::vector<std::string>& parallel_choices() {
  static const std::vector<std::string> names = {"data", "model", "auto"};
  return names;
}

std::string default_strategy_name() { return distributed::default_strategy().name; }

bool loss_scaling_enabled(const LossScalingSpec& spec, Precision precision) {
  return spec.mode == "on" || (spec.mode == "auto" && precision == Precision::FP16);
}

namespace {

void parse_layers(const Obj& root, TrainSpec& s) {
  if (!root.has("layers")) throw ConfigError("layers", "missing (a config needs at least one layer)");
  const Json& layers = root.get("layers");
  if (!layers.is_array() || layers.empty()) {
    throw ConfigError("layers", "expected a non-empty array of layers, got " + layers.dump());
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    s.layers.push_back(parse_layer(layers[i], "layers[" + std::to_string(i) + "]"));
  }
  check_layer_graph(s.layers);
}

void parse_data_object(const Json& data, TrainSpec& s) {
  if (data.is_object() && data.contains("validation")) {
    throw ConfigError("data.validation", "replaced by data.val_split (the fraction of the training set held out for "
                                         "validation; the test split is no longer used for it)");
  }
  parse_data(Obj(data, "data", field_keys("data"), "the data"), s.data);
}

// What one key cannot check alone, once every key is read.
void check_across_keys(TrainSpec& s) {
  if (s.optimizer.nesterov && s.optimizer.momentum == 0.0) {
    throw ConfigError("optimizer.nesterov", "true needs a positive optimizer.momentum");
  }
  if (s.schedule.base_batch == 0) s.schedule.base_batch = s.batch_size;
  const BatchGrowthSpec& g = s.batch_growth;
  if (g.enabled && g.max == 0) throw ConfigError("batch_growth.max", "missing (the largest batch the growth may reach)");
  if (g.enabled && g.max < s.batch_size) {
    throw ConfigError("batch_growth.max", "expected at least batch_size (" + std::to_string(s.batch_size) + "), got " +
                                              std::to_string(g.max));
  }
  if (s.early_stopping.enabled && s.data.val_split == 0.0) {
    throw ConfigError("early_stopping", "monitors " + s.early_stopping.monitor + ", which needs data.val_split > 0");
  }
}

}  // namespace

// Every key through its entry of the field table (spec_fields.h), in the
// table's order; layers and data through their own readers.
TrainSpec parse_config(const Json& j) {
  const Obj root(j, "", field_keys(""), "the config");
  TrainSpec s;
  for (const SpecField& f : spec_fields()) {
    if (!f.group.empty()) continue;
    if (f.key == "layers") {
      parse_layers(root, s);
    } else if (f.key == "data") {
      if (root.has("data")) parse_data_object(root.get("data"), s);
    } else if (f.accepts.kind != Accepts::Kind::object) {
      f.read(root, s);
    } else if (root.has(f.key)) {
      const Obj o(root.get(f.key), f.key, field_keys(f.key), f.what);
      if (f.read) f.read(o, s);  // the object's presence: early stopping, batch growth
      read_fields(o, f.key, s);
    }
  }
  check_across_keys(s);
  // A layout the ranks cannot serve is a config error, whatever the rank count.
  plan_parallel(s);
  check_pipeline_config(s);
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

namespace {

Json layers_json(const TrainSpec& s) {
  Json layers = Json::array();
  for (const auto& l : s.layers) {
    Json o;
    o["type"] = l.type;
    // Written only when set, so a chain's config reads as before.
    if (!l.name.empty()) o["name"] = l.name;
    if (!l.inputs.empty()) o["inputs"] = l.inputs;
    find_layer_kind(l.type)->write(l, o);
    if (!l.parallel.empty()) o["parallel"] = l.parallel;
    layers.push_back(std::move(o));
  }
  return layers;
}

// The data keys of the spec's data set: those of folder or synthetic data
// only for them.
Json data_json(const DataSpec& d) {
  Json j = {{"dataset", d.dataset}, {"dir", d.dir}, {"limit_train", d.limit_train}, {"limit_test", d.limit_test},
            {"val_split", d.val_split}};
  if (d.dataset == "folder") {
    j.erase("dir");
    j["train"] = d.train_dir;
    j["test"] = d.test_dir;
    j["shape"] = d.shape;
    j["mean"] = d.mean;
    j["std"] = d.std;
    j["augment"] = d.augment;
    j["min_scale"] = d.min_scale;
    j["center_crop"] = d.center_crop;
    j["on_error"] = d.on_error;
    j["verify"] = d.verify;
    j["decode_threads"] = d.decode_threads;
  }
  if (d.dataset == "synthetic") {
    j["shape"] = d.shape;
    j["classes"] = d.classes;
    j["train_samples"] = d.train_samples;
    j["test_samples"] = d.test_samples;
  }
  return j;
}

}  // namespace

Json to_json(const TrainSpec& s) {
  Json j;
  for (const SpecField& f : spec_fields()) {
    if (!f.group.empty() || (f.written && !f.written(s))) continue;
    if (f.key == "layers") {
      j["layers"] = layers_json(s);
    } else if (f.key == "data") {
      j["data"] = data_json(s.data);
    } else if (f.accepts.kind == Accepts::Kind::object) {
      Json o = Json::object();
      write_fields(s, f.key, o);
      j[f.key] = std::move(o);
    } else {
      j[f.key] = f.value(s);
    }
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

#include "checkpoint_config.h"

#include <filesystem>

#include "args.h"
#include "run_folder.h"
#include "magmadnn/io/checkpoint.h"

namespace magmadnn::cli {
namespace fs = std::filesystem;

namespace {
constexpr const char* kConfigKey = "cli.config";
constexpr const char* kInputKey = "cli.input";

Json parse_stored(const io::Checkpoint& ck, const char* key, const std::string& path) {
  try {
    return Json::parse(ck.get(key));
  } catch (const Json::parse_error& e) {
    throw ConfigError("", std::string("the ") + key + " stored in " + path + " is not valid JSON: " + e.what());
  }
}
}  // namespace

void attach_config(model::NeuralNetwork<float>& net, const Json& config, const std::vector<std::int64_t>& sample_shape,
                   std::int64_t classes) {
  net.set_checkpoint_entry(kConfigKey, config.dump());
  net.set_checkpoint_entry(kInputKey, Json{{"sample_shape", sample_shape}, {"classes", classes}}.dump());
}

StoredNetwork network_for_checkpoint(const std::string& checkpoint_path, const std::string& explicit_config) {
  if (!fs::exists(checkpoint_path)) {
    const fs::path dir = fs::path(checkpoint_path).parent_path();
    throw UsageError("checkpoint " + checkpoint_path + " does not exist" +
                     (fs::path(checkpoint_path).filename() == "checkpoint.bin"
                          ? previous_run_hint(dir.empty() ? "." : dir.string())
                          : std::string()));
  }
  const io::Checkpoint ck = io::read_checkpoint(checkpoint_path);
  StoredNetwork s;
  if (ck.has(kInputKey)) {
    const Json in = parse_stored(ck, kInputKey, checkpoint_path);
    s.sample_shape = in.at("sample_shape").get<std::vector<std::int64_t>>();
    s.classes = in.at("classes").get<std::int64_t>();
  }
  if (!explicit_config.empty()) {
    s.config = read_json_file(explicit_config);
    return s;
  }
  if (ck.has(kConfigKey)) {
    s.config = parse_stored(ck, kConfigKey, checkpoint_path);
    return s;
  }
  const fs::path beside = fs::path(checkpoint_path).parent_path() / "config.json";
  if (fs::exists(beside)) {
    s.config = read_json_file(beside.string());
    return s;
  }
  throw UsageError(checkpoint_path + " carries no config and has no config.json beside it; pass --config FILE");
}

}  // namespace magmadnn::cli

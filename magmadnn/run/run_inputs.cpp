// What this rank read, for check_same_inputs (DataParallel::start): the
// data files or folders, the checkpoint it resumes from, and the config.
#include <filesystem>

#include "magmadnn/run/across_ranks.h"
#include "magmadnn/run/run_training.h"

namespace magmadnn::run {
namespace {

// An image folder's listing as a fingerprint: each file's path below the
// root, size and label, and the classes. Decoding every image on every rank
// to compare values would cost an epoch; two copies of a folder whose files
// have the same names, sizes and labels are taken as the same.
std::uint64_t folder_fingerprint(const data::ImageFolderSource<float>& f) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix_text = [&h](const std::string& t) {
    for (unsigned char c : t) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
  };
  const data::FolderIndex& idx = f.index();
  for (const auto& c : idx.classes) mix_text(c);
  for (std::size_t i = 0; i < idx.files.size(); ++i) {
    mix_text(std::filesystem::path(idx.files[i]).lexically_relative(idx.root).string());
    std::error_code ec;
    const auto size = std::filesystem::file_size(idx.files[i], ec);
    h = (h ^ (ec ? ~0ull : static_cast<std::uint64_t>(size))) * 1099511628211ull;
    h = (h ^ static_cast<std::uint64_t>(idx.labels[i])) * 1099511628211ull;
  }
  return h;
}

}  // namespace

// What this rank read, for check_same_inputs: the data files, the
// checkpoint it resumes from (or its absence), and the spec.
std::vector<InputRecord> TrainingRun::inputs(const RunOptions& options) const {
  const auto mixed = [](std::uint64_t a, std::uint64_t b) { return a ^ (b * 1099511628211ull); };
  // A file's path (CIFAR's labels are in its image files; synthetic data has none).
  const auto file = [](const Split& s, bool labels) {
    if (s.source == "synthetic") return std::string();
    return labels && !s.label_source.empty() ? s.label_source : s.source;
  };
  // Image folders by their listing (folder_fingerprint); the rows each split
  // takes of it follow from the seed, compared with the config.
  const auto images = [&](const Split& s) { return s.folder ? folder_fingerprint(*s.folder) : fingerprint(s.x); };
  std::vector<InputRecord> r;
  r.push_back({"the training data", "images", file(train_, false),
               train_.folder ? images(train_) : mixed(fingerprint(train_.x), fingerprint(val_.x))});
  r.push_back({"the training data", "labels", file(train_, true), mixed(fingerprint(train_.y), fingerprint(val_.y))});
  r.push_back({"the test data", "images", file(test_, false), images(test_)});
  r.push_back({"the test data", "labels", file(test_, true), fingerprint(test_.y)});
  if (options.resume && !options.checkpoint_path.empty()) {
    const std::optional<std::uint64_t> ck = file_fingerprint(options.checkpoint_path);
    r.push_back({"the checkpoint", "", options.checkpoint_path, ck.value_or(0), ck.has_value()});
  }
  // The config without the data folders' paths: ranks may hold copies of
  // the data at other paths (node-local disks); their contents are compared above.
  Json c = to_json(spec_);
  if (c.contains("data")) {
    for (const char* key : {"dir", "train", "test"}) c["data"].erase(key);
  }
  const std::string config = c.dump();
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : config) h = (h ^ c) * 1099511628211ull;
  r.push_back({"the config", "", "", h});
  return r;
}

}  // namespace magmadnn::run

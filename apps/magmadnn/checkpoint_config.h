/// @file checkpoint_config.h
/// Keeps what is needed to rebuild a run's network inside its checkpoint
/// (header keys "cli.config" and "cli.input"), so `magmadnn evaluate
/// --checkpoint FILE` works from the one file even after it was copied away
/// from its run folder.
///
/// Guarantees: attach_config makes every checkpoint of the network carry
/// both keys from its first write; network_for_checkpoint looks in the
/// checkpoint, then at config.json beside it (with MNIST's 1x28x28 input and
/// 10 classes), and otherwise throws UsageError saying to pass --config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magmadnn/model/neural_network.h"
#include "run_names.h"

namespace magmadnn::cli {

struct StoredNetwork {
  Json config;
  std::vector<std::int64_t> sample_shape{1, 28, 28};
  std::int64_t classes = 10;
};

/// Makes every checkpoint `net` writes from now on carry the config (so a
/// checkpoint is complete from its first write: no window in which a kill
/// leaves one without it).
void attach_config(model::NeuralNetwork<float>& net, const Json& config, const std::vector<std::int64_t>& sample_shape,
                   std::int64_t classes);

/// What rebuilds the network of `checkpoint_path`; `explicit_config` (a file
/// path, may be empty) replaces the config the checkpoint carries.
StoredNetwork network_for_checkpoint(const std::string& checkpoint_path, const std::string& explicit_config);

}  // namespace magmadnn::cli

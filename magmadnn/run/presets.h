/// @file presets.h
/// Named configurations of the `magmadnn` command, as JSON (so that
/// `magmadnn train --preset mlp --print-config` shows exactly what runs and a
/// user can start a config file from it).
///
///  - mlp:    the MagmaDNN paper's benchmark network: 784 -> N x 528 sigmoid
///            -> 10 softmax, SGD lr 0.05 with weight decay 0.001, batch 100,
///            5 epochs (N = `hidden_layers`).
///  - lenet5: LeNet-5 with ReLU and max pooling, SGD lr 0.05 with momentum
///            0.9 and cosine annealing, batch 64, 3 epochs.
///
/// Guarantees: every preset parses with parse_config(); an unknown name or a
/// hidden-layer count below 1 throws ConfigError naming the value.
#pragma once

#include <string>
#include <vector>

#include "magmadnn/run/spec.h"

namespace magmadnn::run {

/// Names accepted by preset().
std::vector<std::string> preset_names();
/// The preset's config. `hidden_layers` applies to mlp only (0: its default, 1).
Json preset(const std::string& name, int hidden_layers = 0);

}  // namespace magmadnn::run

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
///  - resnet:  a ResNet-8 for 28 x 28 images (the `residual` shorthand).
///  - resnet50, alexnet, googlenet (3 x 224 x 224, 1000 classes) and
///    alexnet-cifar (3 x 32 x 32, 10 classes): networks of real size written
///    as graphs of plain layers (add, concat: run/layer_kinds.h), each with
///    the parameter count of its published form (docs/networks.md), an
///    `input` layer stating its sample shape, and synthetic data of that
///    shape (run/dataset.h) unless the config's data says otherwise.
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

/// @file unit.h
/// pipeline::Unit<T>: the layers that one entry of a network's layer list
/// builds (a config's dense layer is a FullyConnected layer and its
/// activation), held as one layer, so that a pipeline cut never falls
/// between them. Its weights are its parts' (named "<k>/<part's name>"),
/// its state their state, its output the last part's output (or whatever
/// node the entry returned).
///
/// Requires: `parts` built on `input` (directly or through each other) and
/// `output` computed from them. Guarantees: nothing beyond Layer's.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/layer/layer.h"

namespace magmadnn::distributed::pipeline {

template <typename T>
class Unit : public layer::Layer<T> {
 public:
  using LayerPtr = std::shared_ptr<layer::Layer<T>>;
  Unit(std::string type, op::Expr<T> input, std::vector<LayerPtr> parts, op::Expr<T> output)
      : layer::Layer<T>("", std::move(input), type), type_(std::move(type)), parts_(std::move(parts)) {
    for (std::size_t k = 0; k < parts_.size(); ++k)
      for (auto& [name, v] : parts_[k]->named_weights()) this->add_weight(std::to_string(k) + "/" + name, v);
    this->set_output(std::move(output));
  }
  std::string type_name() const override { return type_; }
  std::vector<std::pair<std::string, Tensor<T>*>> get_state() override {
    std::vector<std::pair<std::string, Tensor<T>*>> all;
    for (const auto& p : parts_)
      for (auto& s : p->get_state()) all.push_back(s);
    return all;
  }
  const std::vector<LayerPtr>& parts() const noexcept { return parts_; }

 private:
  std::string type_;
  std::vector<LayerPtr> parts_;
};

}  // namespace magmadnn::distributed::pipeline

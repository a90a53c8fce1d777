// What the hybrid tests share: the world communicator (strategy_test_main.cpp)
// and seeded synthetic data, the same on every rank.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "magmadnn.h"

std::shared_ptr<magmadnn::distributed::Communicator> strategy_world();

namespace hybrid_test {

using ::strategy_world;

// `rows` samples of `sample` drawn from a fixed seed, and one-hot labels.
inline std::pair<magmadnn::Tensor<float>, magmadnn::Tensor<float>> synthetic(std::int64_t rows,
                                                                             std::vector<std::int64_t> sample,
                                                                             std::int64_t classes) {
  using namespace magmadnn;
  set_seed(77);
  std::vector<std::int64_t> dims{rows};
  dims.insert(dims.end(), sample.begin(), sample.end());
  Tensor<float> x(Shape(dims), {UNIFORM, {0.0f, 1.0f}}, HOST);
  std::vector<float> y(static_cast<std::size_t>(rows * classes), 0.0f);
  for (std::int64_t i = 0; i < rows; ++i) y[static_cast<std::size_t>(i * classes + (i * 7 + 3) % classes)] = 1.0f;
  return {x, Tensor<float>::from_vector(Shape{rows, classes}, y, HOST)};
}

}  // namespace hybrid_test

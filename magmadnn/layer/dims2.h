/// @file dims2.h
/// layer::Dims2: a (height, width) pair as the 2-D layers take it. Built
/// from a braced pair `{5, 5}` (v1 style) or a 2-element integer vector
/// (v1 passed std::vector<unsigned int>); any other length is a ValueError
/// naming what was given.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "magmadnn/core/errors.h"

namespace magmadnn::layer {

struct Dims2 {
  std::int64_t h = 0, w = 0;

  Dims2(std::initializer_list<std::int64_t> v) { assign(std::vector<std::int64_t>(v)); }  // NOLINT: {5, 5}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  Dims2(const std::vector<I>& v) {  // NOLINT: v1 vectors
    assign(std::vector<std::int64_t>(v.begin(), v.end()));
  }

 private:
  void assign(const std::vector<std::int64_t>& v) {
    MAGMADNN_CHECK(v.size() == 2, ValueError, "layer: expected a (height, width) pair, got " << v.size() << " values");
    h = v[0];
    w = v[1];
  }
};

}  // namespace magmadnn::layer

/// @file network_detail.h
/// Helpers of NeuralNetwork that move data in and out of the graph
/// (internal to model/; not part of the public API).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magmadnn/compute/variable.h"
#include "magmadnn/data/samples.h"

namespace magmadnn::model::detail {

/// Writes rows [begin, begin + n) of `src` (through `rows` when not null)
/// into placeholder `ph`, reallocating it only when the batch shape changes.
/// `src` is promoted to T here when it holds bytes (data::Samples); a
/// tensor may live in any memory.
template <typename T>
void feed_placeholder(const op::Var<T>& ph, const data::Samples<T>& src, const std::int64_t* rows,
                      std::int64_t begin, std::int64_t n);
/// Sets `ph` to one sample given with or without its batch axis.
template <typename T>
void feed_sample(const op::Var<T>& ph, const Tensor<T>& sample);
/// Rows of `pred` whose class matches `y`'s: argmax against argmax, or both
/// sides thresholded at 0.5 when there is a single column.
template <typename T>
std::int64_t count_correct(const Tensor<T>& pred, const Tensor<T>& y);
/// The class of every row (argmax; threshold 0.5 for a single column).
template <typename T>
std::vector<std::int64_t> row_classes(const Tensor<T>& pred);
/// "<index>_<lower-case type>/": the structural part of a checkpoint name.
std::string structural_prefix(std::size_t index, const std::string& type_name);
/// The part of "<layer>/<key>" after the last '/'.
std::string name_key(const std::string& name);
/// The key of `name` ("<layer name>/<key>") within the layer called
/// `layer_name`: everything after "<layer name>/", so that a composite
/// layer's keys ("conv1/W" of a residual block) stay apart; name_key(name)
/// when `name` does not start with the layer's name.
std::string layer_key(const std::string& layer_name, const std::string& name);
/// The same names with "#2", "#3", ... appended to repeats.
std::vector<std::string> unique_names(const std::vector<std::string>& names);

}  // namespace magmadnn::model::detail

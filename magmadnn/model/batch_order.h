/// @file batch_order.h
/// Copying a batch's rows into the graph (internal to model/). The order of
/// the rows comes from data::DataLoader::epoch_order, a pure function of
/// (seed, epoch), so the inline path here and the loader's background path
/// serve the same batches and a checkpoint taken on one resumes on the other.
#pragma once

#include <cstdint>

#include "magmadnn/tensor/tensor.h"

namespace magmadnn::model::detail {

/// Copies rows rows[begin .. begin+count) of `src` (axis 0; rows == nullptr
/// means rows begin .. begin+count in order) into `dst`, a tensor of shape
/// {count, src.shape[1:]...} written on the host side.
template <typename T>
void gather_rows(const Tensor<T>& src, const std::int64_t* rows, std::int64_t begin, std::int64_t count,
                 Tensor<T>& dst);

}  // namespace magmadnn::model::detail

/// @file proto.h
/// Internal to magmadnn_onnx (includes ONNX's protobuf classes): helpers
/// shared by export and import. Not for programs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "magmadnn/tensor/tensor.h"

namespace magmadnn::onnx::detail {

namespace pb = ::onnx;

/// An initializer holding `t` (host copy) as FLOAT raw data.
void set_tensor(pb::TensorProto& out, const std::string& name, const Tensor<float>& t);
/// Attribute helpers.
void add_ints(pb::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v);
void add_int(pb::NodeProto& n, const std::string& name, std::int64_t v);
void add_float(pb::NodeProto& n, const std::string& name, float v);
/// Runs ONNX's checker; ValueError "`what`: ONNX's checker refuses the model: ..." on refusal.
void check(const pb::ModelProto& m, const std::string& what);

}  // namespace magmadnn::onnx::detail

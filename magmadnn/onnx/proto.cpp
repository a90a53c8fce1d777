#include "magmadnn/onnx/proto.h"

#include <onnx/checker.h>

#include <fstream>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/onnx/onnx.h"

namespace magmadnn::onnx::detail {

void set_tensor(pb::TensorProto& out, const std::string& name, const Tensor<float>& t) {
  out.set_name(name);
  out.set_data_type(pb::TensorProto::FLOAT);
  for (std::int64_t d : t.shape().dims()) out.add_dims(d);
  const float* p = t.host_data();
  out.set_raw_data(std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(t.size()) * sizeof(float)));
}

void add_ints(pb::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
  pb::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INTS);
  for (std::int64_t x : v) a->add_ints(x);
}

void add_int(pb::NodeProto& n, const std::string& name, std::int64_t v) {
  pb::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::INT);
  a->set_i(v);
}

void add_float(pb::NodeProto& n, const std::string& name, float v) {
  pb::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(pb::AttributeProto::FLOAT);
  a->set_f(v);
}

void check(const pb::ModelProto& m, const std::string& what) {
  try {
    pb::checker::check_model(m);
  } catch (const std::exception& e) {
    MAGMADNN_THROW(ValueError, what << ": ONNX's checker refuses the model: " << e.what());
  }
}

}  // namespace magmadnn::onnx::detail

namespace magmadnn::onnx {

void check_model_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MAGMADNN_CHECK(in, IOError, path << ": cannot open the file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  ::onnx::ModelProto m;
  MAGMADNN_CHECK(m.ParseFromString(bytes.str()), IOError, path << ": not an ONNX model (protobuf does not parse it)");
  detail::check(m, path);
}

}  // namespace magmadnn::onnx

// Bad input to the importer: each case is refused with the error type and
// a message naming the file, the node and the field.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "magmadnn/onnx/onnx.h"

namespace fs = std::filesystem;
using namespace magmadnn;

namespace {

fs::path dir() {
  const fs::path d = fs::temp_directory_path() / ("magmadnn_onnx_err_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void add_value(::onnx::ValueInfoProto* v, const std::string& name, std::vector<std::int64_t> dims,
               int type = ::onnx::TensorProto::FLOAT) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  for (auto d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

::onnx::NodeProto* add_node(::onnx::GraphProto& g, const std::string& op, std::vector<std::string> in,
                            std::vector<std::string> out, const std::string& name) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

// x {2, 3} -> Relu "r" -> y.
::onnx::ModelProto relu_model() {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(17);
  auto& g = *m.mutable_graph();
  g.set_name("g");
  add_value(g.add_input(), "x", {2, 3});
  add_value(g.add_output(), "y", {2, 3});
  add_node(g, "Relu", {"x"}, {"y"}, "r");
  return m;
}

std::string write(const ::onnx::ModelProto& m, const std::string& name) {
  const fs::path p = dir() / name;
  std::ofstream(p, std::ios::binary) << m.SerializeAsString();
  return p.string();
}

template <class E>
std::string refusal(const std::string& path) {
  try {
    magmadnn::onnx::import_model(path);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
    return "";
  }
  ADD_FAILURE() << path << " was imported";
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

}  // namespace

TEST(OnnxErrors, TheBaseModelImports) { EXPECT_NO_THROW(magmadnn::onnx::import_model(write(relu_model(), "ok.onnx"))); }

TEST(OnnxErrors, TruncatedCorruptAndEmptyFiles) {
  const std::string bytes = relu_model().SerializeAsString();
  const fs::path cut = dir() / "cut.onnx";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_HAS(refusal<IOError>(cut.string()), cut.string() + ": not an ONNX model");
  const fs::path junk = dir() / "junk.onnx";
  std::ofstream(junk, std::ios::binary) << "\xff\xff\xff\xff this is not protobuf";
  EXPECT_HAS(refusal<IOError>(junk.string()), junk.string() + ": not an ONNX model");
  const fs::path empty = dir() / "empty.onnx";
  std::ofstream(empty, std::ios::binary).flush();
  EXPECT_HAS(refusal<IOError>(empty.string()), "the file is empty");
  EXPECT_HAS(refusal<IOError>((dir() / "absent.onnx").string()), "cannot open the file");
}

TEST(OnnxErrors, UnknownOpsetDomainAndOperator) {
  auto m = relu_model();
  m.mutable_opset_import(0)->set_version(99);
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "opset.onnx")), "ai.onnx opset 99 is newer than the importer knows");
  m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_domain("com.example");
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "domain.onnx")),
             "node 0 'r' (Relu, domain 'com.example', opset 17): domain 'com.example' is unknown");
  m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_op_type("Einsum");
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "op.onnx")),
             "op.onnx: node 0 'r' (Einsum, opset 17): operator Einsum is not supported");
}

TEST(OnnxErrors, MissingExternalData) {
  auto m = relu_model();
  auto& g = *m.mutable_graph();
  auto* w = g.add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(3);
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("weights_that_are_not_there.bin");
  add_node(g, "Add", {"y", "w"}, {"z"}, "plus");
  g.mutable_output(0)->set_name("z");
  const std::string msg = refusal<IOError>(write(m, "external.onnx"));
  EXPECT_HAS(msg, "initializer 'w': external data file");
  EXPECT_HAS(msg, "weights_that_are_not_there.bin cannot be opened");
}

TEST(OnnxErrors, CycleAndNodesOutOfOrder) {
  auto m = relu_model();
  auto& g = *m.mutable_graph();
  g.mutable_node(0)->set_input(0, "b");  // r reads b, b reads y: a cycle
  add_node(g, "Relu", {"y"}, {"b"}, "back");
  EXPECT_HAS(refusal<ValueError>(write(m, "cycle.onnx")),
             "node 0 'r' (Relu, opset 17): input 'b' comes from node 1 'back', which reads this node's output: the "
             "graph has a cycle");
  m = relu_model();
  auto& h = *m.mutable_graph();
  h.mutable_node(0)->set_input(0, "t");
  add_node(h, "Relu", {"x"}, {"t"}, "late");
  EXPECT_HAS(refusal<ValueError>(write(m, "order.onnx")), "which comes later: the nodes are not in topological order");
}

TEST(OnnxErrors, InconsistentShapesAndTypes) {
  auto m = relu_model();
  auto& g = *m.mutable_graph();
  auto* w = g.add_initializer();  // a Gemm whose weight does not fit x {2, 3}
  w->set_name("W");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(5);
  w->add_dims(4);
  for (int i = 0; i < 20; ++i) w->add_float_data(0.5f);
  add_node(g, "Gemm", {"y", "W"}, {"z"}, "dense");
  g.mutable_output(0)->set_name("z");
  const std::string msg = refusal<ShapeError>(write(m, "shapes.onnx"));
  EXPECT_HAS(msg, "shapes.onnx: node 1 'dense' (Gemm, opset 17): ");
  m = relu_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT16);
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "types.onnx")), "graph input 'x' has element type FLOAT16");
  m = relu_model();  // an integer tensor into an operator that would not give the integer result
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT32);
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "ints.onnx")),
             "input 0 'x' holds INT32 values computed at run time, which Relu does not take");
  m = relu_model();
  auto* bad = m.mutable_graph()->add_initializer();  // raw data of the wrong size
  bad->set_name("short");
  bad->set_data_type(::onnx::TensorProto::FLOAT);
  bad->add_dims(4);
  bad->set_raw_data(std::string(6, '\0'));
  EXPECT_HAS(refusal<ValueError>(write(m, "raw.onnx")), "initializer 'short': raw_data holds 6 bytes, the dims need 16");
}

TEST(OnnxErrors, AnUnsupportedAttributeNamesTheNodeAndOpset) {
  auto m = relu_model();
  auto& g = *m.mutable_graph();
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  auto* n = add_node(g, "MaxPool", {"y"}, {"z"}, "pool");
  auto* k = n->add_attribute();
  k->set_name("kernel_shape");
  k->set_type(::onnx::AttributeProto::INTS);
  k->add_ints(2);
  k->add_ints(2);
  auto* c = n->add_attribute();
  c->set_name("ceil_mode");
  c->set_type(::onnx::AttributeProto::INT);
  c->set_i(1);
  g.mutable_output(0)->set_name("z");
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "ceil.onnx")), "node 1 'pool' (MaxPool, opset 17): ceil_mode 1");
}

namespace {
void add_ints(::onnx::GraphProto& g, const std::string& name, std::vector<std::int64_t> v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims(static_cast<std::int64_t>(v.size()));
  for (auto x : v) t->add_int64_data(x);
}
}  // namespace

// Slice of a computed tensor with known starts and ends: op::slice per
// axis (ONNX's clamping of ends past the axis); steps other than 1 refused.
TEST(OnnxErrors, SliceOfAComputedTensorAndItsLimits) {
  auto m = relu_model();  // x {2, 3} -> Relu -> y; then z = y[:, 1:100]
  auto& g = *m.mutable_graph();
  add_ints(g, "starts", {1});
  add_ints(g, "ends", {100});
  add_ints(g, "axes", {-1});
  add_node(g, "Slice", {"y", "starts", "ends", "axes"}, {"z"}, "cut");
  g.mutable_output(0)->set_name("z");
  magmadnn::onnx::Imported im = magmadnn::onnx::import_model(write(m, "slice.onnx"));
  im.inputs[0].second->set_value(Tensor<float>::from_vector(Shape{2, 3}, std::vector<float>{1, -2, 3, 4, 5, -6}));
  const Tensor<float>& z = *im.outputs[0].second->eval();
  ASSERT_EQ(z.shape(), Shape({2, 2}));
  const std::vector<float> want{0, 3, 5, 0};
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_EQ(z.get(i), want[static_cast<std::size_t>(i)]);
  add_ints(g, "steps", {2});
  g.mutable_node(1)->add_input("steps");
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "steps.onnx")), "node 1 'cut' (Slice, opset 17): a Slice of a computed tensor with steps other than 1");
}

// A composed node's known parameters are its layer's trainable weights
// (here PRelu's slope), so a network imported for training updates them.
TEST(OnnxErrors, AComposedNodesKnownParametersAreTrainable) {
  auto m = relu_model();  // x {2, 3} -> Relu -> y; then z = PRelu(y, slope {3})
  auto& g = *m.mutable_graph();
  auto* s = g.add_initializer();
  s->set_name("slope");
  s->set_data_type(::onnx::TensorProto::FLOAT);
  s->add_dims(3);
  for (float v : {0.1f, 0.2f, 0.3f}) s->add_float_data(v);
  add_node(g, "PRelu", {"y", "slope"}, {"z"}, "p");
  g.mutable_output(0)->set_name("z");
  const magmadnn::onnx::Imported im = magmadnn::onnx::import_model(write(m, "prelu.onnx"));
  std::int64_t params = 0;
  for (const auto& l : im.layers) params += l->num_params();
  EXPECT_EQ(params, 3);
}

// CumSum along an axis known at import time (reverse here), and along one
// fed as a graph input (as in the ONNX node tests); the latter is refused
// when the batch axis is free.
TEST(OnnxErrors, CumSumAlongAKnownOrARunTimeAxis) {
  auto m = relu_model();  // x {2, 3} -> Relu -> y; then z = CumSum(y, 1), reverse
  auto& g = *m.mutable_graph();
  add_ints(g, "axis", {1});
  auto* r = add_node(g, "CumSum", {"y", "axis"}, {"z"}, "cs")->add_attribute();
  r->set_name("reverse");
  r->set_type(::onnx::AttributeProto::INT);
  r->set_i(1);
  g.mutable_output(0)->set_name("z");
  const std::vector<float> x{1, -2, 3, 4, 5, -6};  // y = {1, 0, 3, 4, 5, 0}
  const std::vector<float> want{4, 3, 3, 9, 5, 0};
  magmadnn::onnx::Imported im = magmadnn::onnx::import_model(write(m, "cumsum.onnx"));
  im.inputs[0].second->set_value(Tensor<float>::from_vector(Shape{2, 3}, x));
  const Tensor<float>& z = *im.outputs[0].second->eval();
  ASSERT_EQ(z.shape(), Shape({2, 3}));
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(z.get(i), want[static_cast<std::size_t>(i)]);
  add_value(g.add_input(), "ax", {1}, ::onnx::TensorProto::INT64);
  g.mutable_node(1)->set_input(1, "ax");
  magmadnn::onnx::Imported rt = magmadnn::onnx::import_model(write(m, "cumsum_axis.onnx"));
  rt.inputs[0].second->set_value(Tensor<float>::from_vector(Shape{2, 3}, x));
  rt.inputs[1].second->set_value(Tensor<float>::from_vector(Shape{1}, std::vector<float>{-1}));  // axis 1
  const Tensor<float>& zr = *rt.outputs[0].second->eval();
  ASSERT_EQ(zr.shape(), Shape({2, 3}));
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(zr.get(i), want[static_cast<std::size_t>(i)]);
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "cumsum_free.onnx")),
             "node 1 'cs' (CumSum, opset 17): a CumSum along an axis computed at run time when the batch axis is free");
}

// Range of known start, limit and delta is folded; a start fed as a graph
// input (as in the ONNX node tests) is refused naming it.
TEST(OnnxErrors, RangeOfKnownBoundsIsFoldedAndOfRunTimeOnesRefused) {
  auto m = relu_model();  // x {2, 3} -> Relu -> y; then z = y + Range(0.5, 2, 0.5) = y + {0.5, 1, 1.5}
  auto& g = *m.mutable_graph();
  for (auto [name, v] : {std::pair<const char*, float>{"start", 0.5f}, {"limit", 2.0f}, {"delta", 0.5f}}) {
    auto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_float_data(v);
  }
  add_node(g, "Range", {"start", "limit", "delta"}, {"r"}, "range");
  add_node(g, "Add", {"y", "r"}, {"z"}, "add");
  g.mutable_output(0)->set_name("z");
  magmadnn::onnx::Imported im = magmadnn::onnx::import_model(write(m, "range.onnx"));
  im.inputs[0].second->set_value(Tensor<float>::from_vector(Shape{2, 3}, std::vector<float>{1, -2, 3, 4, 5, -6}));
  const Tensor<float>& z = *im.outputs[0].second->eval();
  ASSERT_EQ(z.shape(), Shape({2, 3}));
  const std::vector<float> want{1.5f, 1, 4.5f, 4.5f, 6, 1.5f};
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(z.get(i), want[static_cast<std::size_t>(i)]);
  add_value(g.add_input(), "s", {1});
  g.mutable_node(1)->set_input(0, "s");
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "range_input.onnx")),
             "node 1 'range' (Range, opset 17): input 0 's' computed at run time");
}

// The shape arithmetic of x.view(x.size(0), -1) on a free batch axis: Shape's
// element 0 is the batch size, which Gather, Unsqueeze and Concat carry and
// Reshape reads as the batch axis (values: tests/onnx/test_onnx_pytorch.cpp).
// Read anywhere else, or put where Reshape cannot keep it free, it is refused.
TEST(OnnxErrors, TheFreeBatchSizeOnlyReachesAReshapesBatchAxis) {
  auto m = relu_model();  // x {N, 3} -> Relu -> y
  auto& g = *m.mutable_graph();
  auto* dim0 = g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
  dim0->set_dim_param("N");
  add_node(g, "Shape", {"y"}, {"s"}, "shape");
  g.mutable_output(0)->set_name("s");
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "shape_out.onnx")),
             "graph output 's' holds the batch size, which is free");
  auto* one = g.add_initializer();
  one->set_name("one");
  one->set_data_type(::onnx::TensorProto::INT64);
  one->add_dims(1);
  one->add_int64_data(1);
  add_node(g, "Add", {"s", "one"}, {"t"}, "add");
  g.mutable_output(0)->set_name("t");
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "shape_add.onnx")),
             "node 2 'add' (Add, opset 17): input 0 's' holds the batch size, which is free");
  g.mutable_node(2)->set_op_type("Concat");  // {1, N}: the batch size at axis 1 of the reshape
  g.mutable_node(2)->add_attribute()->set_name("axis");
  g.mutable_node(2)->mutable_attribute(0)->set_type(::onnx::AttributeProto::INT);
  g.mutable_node(2)->set_input(0, "one");
  g.mutable_node(2)->set_input(1, "s");
  add_node(g, "Reshape", {"y", "t"}, {"z"}, "reshape");
  g.mutable_output(0)->set_name("z");
  EXPECT_HAS(refusal<NotSupportedError>(write(m, "shape_axis1.onnx")),
             "node 3 'reshape' (Reshape, opset 17): the batch size, which is free, at axis 1 of a reshape");
}

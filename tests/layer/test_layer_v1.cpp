// MagmaDNN v1 programs: layers held as raw pointers, only the output layer
// deleted, everything released by magmadnn_finalize() with nothing leaked.
#include <gtest/gtest.h>

#include <memory>

#include "magmadnn.h"

using namespace magmadnn;

namespace {

struct Watch {
  std::vector<std::weak_ptr<layer::Layer<float>>> layers;
  std::vector<std::weak_ptr<op::Operation<float>>> nodes;
  bool all_gone() const {
    for (const auto& w : layers) {
      if (!w.expired()) return false;
    }
    for (const auto& w : nodes) {
      if (!w.expired()) return false;
    }
    return true;
  }
};

// The shape of a v1 program: the same calls, the same types.
void v1_program(Watch& watch, std::int64_t& out_rows) {
  auto x_batch = op::var<float>("x_batch", {4, 6}, {NONE, {}}, HOST);
  auto input = layer::input(x_batch);
  auto fc1 = layer::fullyconnected(input->out(), 8, false);
  auto act1 = layer::activation(fc1->out(), layer::RELU);
  auto drop = layer::dropout(act1->out(), 0.2f);
  auto fc2 = layer::fullyconnected(drop->out(), 3, true);
  auto bn = layer::batchnorm(fc2->out());
  auto act2 = layer::activation(bn->out(), layer::SOFTMAX);
  auto output = layer::output<float>(act2->out());

  std::vector<layer::Layer<float>*> layers = {input, fc1, act1, drop, fc2, bn, act2, output};
  for (layer::Layer<float>* l : layers) {
    watch.layers.push_back(layer::share(l));
    for (op::Operation<float>* n : op::topological_order(l->out().get())) watch.nodes.push_back(n->shared_from_this());
  }
  input->placeholder()->set_value(Tensor<float>({5, 6}, {UNIFORM}, HOST));
  out_rows = layers.back()->out()->eval()->shape()[0];

  // v1 raw graph pointers too.
  op::Operation<float>* raw = fc1->out();
  (void)raw;
  delete output;
}

}  // namespace

TEST(LayerV1, RawPointersDeleteOutputOnlyAndFinalizeReleasesAll) {
  op::release_pinned_nodes();
  ASSERT_EQ(op::pinned_node_count(), 0u);
  Watch watch;
  std::int64_t rows = 0;
  v1_program(watch, rows);
  EXPECT_EQ(rows, 5);
  // Seven layers and one graph node are still pinned for their raw pointers.
  EXPECT_EQ(op::pinned_node_count(), 8u);
  EXPECT_FALSE(watch.all_gone());
  magmadnn_finalize();
  EXPECT_EQ(op::pinned_node_count(), 0u);
  EXPECT_TRUE(watch.all_gone()) << "a layer or a graph node outlived finalize";
}

TEST(LayerV1, DeletingAPointerNeverDestroysALayerInUse) {
  op::release_pinned_nodes();
  auto x = op::var<float>("x", {2, 3}, {ONE}, HOST);
  auto in = layer::input(x);
  auto fc = layer::fullyconnected(in->out(), 2);
  layer::Layer<float>* p = fc;
  EXPECT_EQ(op::pinned_node_count(), 1u);
  delete p;  // unpins; the handle still owns the layer
  EXPECT_EQ(op::pinned_node_count(), 0u);
  EXPECT_EQ(fc->get_output_shape(), Shape({2, 2}));
  delete fc;  // v1 `delete handle`: pins then unpins, harmless
  EXPECT_EQ(op::pinned_node_count(), 0u);
  EXPECT_EQ(fc->units(), 2);

  // A layer made by one handle, kept by a pointer only, lives until release.
  std::weak_ptr<layer::Layer<float>> weak;
  layer::Layer<float>* only = nullptr;
  {
    auto tmp = layer::activation(fc->out(), layer::TANH);
    weak = tmp.ptr();
    only = tmp;
  }
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(only->type_name(), "Activation");
  delete only;
  EXPECT_TRUE(weak.expired());
}

TEST(LayerV1, ExplicitTemplateArgumentsAndRawOperationArguments) {
  auto x = op::var<double>("x", {2, 1, 6, 6}, {UNIFORM}, HOST);
  auto in = layer::input<double>(x);
  op::Operation<double>* raw = in->out();  // a v1 program may keep raw nodes
  auto fl = layer::flatten<double>(raw);
  auto fc = layer::fullyconnected<double>(fl->out(), 4, true);
  auto act = layer::activation<double>(fc->out(), layer::GELU);
  auto dr = layer::dropout<double>(act->out(), 0.1f);
  auto bn = layer::batchnorm<double>(dr->out());
  auto out = layer::output<double>(bn->out());
  EXPECT_EQ(out->get_output_shape(), Shape({2, 4}));
  std::vector<layer::Layer<double>*> layers = {in, fl, fc, act, dr, bn, out};
  EXPECT_EQ(layers.size(), 7u);
  delete out;
  magmadnn_finalize();
  EXPECT_EQ(op::pinned_node_count(), 0u);
}

// The layer calls of MagmaDNN v1's LeNet-5 example, unchanged.
template <typename T>
void lenet5_layers(std::int64_t batch, Shape& out_shape) {
  auto x_batch = op::var<T>("x_batch", {static_cast<unsigned int>(batch), 1u, 28u, 28u}, {NONE, {}}, HOST);
  auto input = layer::input<T>(x_batch);
  auto conv2d1 = layer::conv2d<T>(input->out(), {5, 5}, 32, {0, 0}, {1, 1}, {1, 1});
  auto act1 = layer::activation<T>(conv2d1->out(), layer::TANH);
  auto pool1 = layer::pooling<T>(act1->out(), {2, 2}, {0, 0}, {2, 2}, AVERAGE_POOL);
  auto conv2d2 = layer::conv2d<T>(pool1->out(), {5, 5}, 32, {0, 0}, {1, 1}, {1, 1});
  auto act2 = layer::activation<T>(conv2d2->out(), layer::TANH);
  auto pool2 = layer::pooling<T>(act2->out(), {2, 2}, {0, 0}, {2, 2}, AVERAGE_POOL);
  auto flatten = layer::flatten<T>(pool2->out());
  auto fc1 = layer::fullyconnected<T>(flatten->out(), 120, true);
  auto act3 = layer::activation<T>(fc1->out(), layer::TANH);
  auto fc2 = layer::fullyconnected<T>(act3->out(), 84, true);
  auto act4 = layer::activation<T>(fc2->out(), layer::TANH);
  auto fc3 = layer::fullyconnected<T>(act4->out(), 10u, false);
  auto act5 = layer::activation<T>(fc3->out(), layer::SOFTMAX);
  auto output = layer::output<T>(act5->out());

  std::vector<layer::Layer<T>*> layers = {input, conv2d1, act1, pool1, conv2d2, act2, pool2,
                                          flatten, fc1, act3, fc2, act4, fc3, act5, output};
  input->placeholder()->set_value(Tensor<T>({3, 1, 28, 28}, {UNIFORM}, HOST));
  out_shape = layers.back()->out()->eval()->shape();
  EXPECT_EQ(fc1->get_weight()->output().shape(), Shape({120, 32 * 4 * 4}));
  delete output;
}

TEST(LayerV1, LeNet5LayerCallsCompileAndRun) {
  op::release_pinned_nodes();
  Shape s;
  lenet5_layers<float>(8, s);
  EXPECT_EQ(s, Shape({3, 10}));
  EXPECT_EQ(op::pinned_node_count(), 14u);
  magmadnn_finalize();
  EXPECT_EQ(op::pinned_node_count(), 0u);
  lenet5_layers<double>(2, s);
  EXPECT_EQ(s, Shape({3, 10}));
  magmadnn_finalize();
  EXPECT_EQ(op::pinned_node_count(), 0u);
}

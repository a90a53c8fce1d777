#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/tensor/tensor.h"
#include "support/gpu.h"

using namespace magmadnn;

TEST(Tensor, SlidesCodeOnThisMachine) {
  // The slides allocate on DEVICE; without a GPU that must fail clearly, and
  // the same code on MANAGED memory runs.
  if (has_cuda_device()) {
    Tensor<float> x({32, 28, 28}, {UNIFORM, {-1.0f, 1.0f}}, DEVICE);
    std::ostringstream os;
    os << x.get({1, 3, 0});
    x.set({1, 3, 0}, 8.0f);
    EXPECT_EQ(x.get({1, 3, 0}), 8.0f);
  } else {
    EXPECT_THROW(Tensor<float>({32, 28, 28}, {UNIFORM, {-1.0f, 1.0f}}, DEVICE), DeviceError);
  }
  Tensor<float> x({32, 28, 28}, {UNIFORM, {-1.0f, 1.0f}}, MANAGED);
  const float v = x.get({1, 3, 0});
  EXPECT_GE(v, -1.0f);
  EXPECT_LT(v, 1.0f);
  x.set({1, 3, 0}, 8.0f);
  EXPECT_EQ(x.get({1, 3, 0}), 8.0f);
  EXPECT_EQ(x.get(1 * 28 * 28 + 3 * 28), 8.0f);
}

TEST(Tensor, DefaultsToManagedDevice0) {
  Tensor<float> t({2, 3});
  EXPECT_EQ(t.get_memory_type(), MANAGED);
  EXPECT_EQ(t.get_device_id(), 0);
  EXPECT_EQ(t.get_size(), 6);
  EXPECT_EQ(t.get_shape(-1), 3);
  std::vector<unsigned int> v1_shape = t.get_shape();
  EXPECT_EQ(v1_shape, (std::vector<unsigned int>{2, 3}));
}

TEST(Tensor, NegativeIndices) {
  auto t = Tensor<double>::from_vector({2, 3}, {0, 1, 2, 3, 4, 5}, HOST);
  EXPECT_EQ(t.get({-1, -1}), 5.0);
  EXPECT_EQ(t.get({-2, 1}), 1.0);
  EXPECT_EQ(t.get(-1), 5.0);
  t.set({-1, 0}, 9.0);
  EXPECT_EQ(t.get({1, 0}), 9.0);
}

TEST(Tensor, BadIndicesNameIndexAndShape) {
  Tensor<float> t({2, 3}, {ZERO}, HOST);
  try {
    t.get({0, 3});
    FAIL();
  } catch (const IndexError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("index 3"), std::string::npos) << m;
    EXPECT_NE(m.find("{2, 3}"), std::string::npos) << m;
  }
  EXPECT_THROW(t.get({0, -4}), IndexError);
  EXPECT_THROW(t.get(std::vector<std::int64_t>{0}), IndexError);  // one index for two axes
  EXPECT_EQ(t.get({0}), 0.0f);  // a single braced index is a flat index, as in v1
  EXPECT_THROW(t.get(6), IndexError);
  EXPECT_THROW(t.set(-7, 1.0f), IndexError);
}

TEST(Tensor, ViewsShareStorage) {
  auto t = Tensor<float>::from_vector({2, 3}, {0, 1, 2, 3, 4, 5}, MANAGED);
  Tensor<float> v = t.view({3, -1});
  EXPECT_EQ(v.shape(), (Shape{3, 2}));
  EXPECT_TRUE(v.shares_storage_with(t));
  v.set({2, 1}, 50.0f);
  EXPECT_EQ(t.get({1, 2}), 50.0f);
  EXPECT_THROW(t.view({4, 2}), ShapeError);
  EXPECT_THROW(t.view({-1, -1}), ShapeError);

  Tensor<float> row = t.slice(1, 2);
  EXPECT_EQ(row.shape(), (Shape{1, 3}));
  EXPECT_EQ(row.get({0, 0}), 3.0f);
  row.set({0, 1}, -4.0f);
  EXPECT_EQ(t.get({1, 1}), -4.0f);
  EXPECT_EQ(row.to_vector(), (std::vector<float>{3, -4, 50}));
  EXPECT_THROW(t.slice(1, 3), IndexError);
}

TEST(Tensor, ReshapeSqueezeUnsqueeze) {
  Tensor<float> t({1, 4, 1, 3}, {ONE}, HOST);
  t.squeeze();
  EXPECT_EQ(t.shape(), (Shape{4, 3}));
  t.unsqueeze(0);
  EXPECT_EQ(t.shape(), (Shape{1, 4, 3}));
  t.unsqueeze(-1);
  EXPECT_EQ(t.shape(), (Shape{1, 4, 3, 1}));
  t.squeeze(-1);
  EXPECT_EQ(t.shape(), (Shape{1, 4, 3}));
  EXPECT_THROW(t.squeeze(1), ShapeError);
  t.reshape({12});
  EXPECT_EQ(t.shape(), (Shape{12}));
  EXPECT_THROW(t.reshape({5}), ShapeError);
}

TEST(Tensor, DeepCopyAndMove) {
  auto a = Tensor<float>::from_vector({3}, {1, 2, 3}, HOST);
  Tensor<float> b = a;
  b.set(0, 10.0f);
  EXPECT_EQ(a.get(0), 1.0f);
  EXPECT_FALSE(b.shares_storage_with(a));
  Tensor<float> c = std::move(b);
  EXPECT_EQ(c.get(0), 10.0f);
  EXPECT_EQ(b.size(), 0);
  Tensor<float> d;
  d = c;
  EXPECT_EQ(d.to_vector(), (std::vector<float>{10, 2, 3}));
  d = Tensor<float>({2, 2}, {ZERO}, MANAGED);
  EXPECT_EQ(d.shape(), (Shape{2, 2}));
  // A deep copy of a view copies only the view.
  auto big = Tensor<float>::from_vector({3, 2}, {1, 2, 3, 4, 5, 6}, MANAGED);
  Tensor<float> part = big.slice(1, 3);
  Tensor<float> copy = part;
  EXPECT_EQ(copy.to_vector(), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(copy.offset(), 0);
}

TEST(Tensor, CopyFromAcrossMemoryTypes) {
  for (memory_t s : test::available_memory_types()) {
    for (memory_t d : test::available_memory_types()) {
      auto a = Tensor<double>::from_vector({2, 2}, {1, 2, 3, 4}, s);
      Tensor<double> b({4}, {ZERO}, d);
      b.copy_from(a);
      EXPECT_EQ(b.to_vector(), (std::vector<double>{1, 2, 3, 4}));
      Tensor<double> c({2}, {ZERO}, d);
      c.copy_from(a, 1, 2);  // v1: elements [1, 3)
      EXPECT_EQ(c.to_vector(), (std::vector<double>{2, 3}));
      EXPECT_THROW(c.copy_from(a, 3, 2), IndexError);
      EXPECT_EQ(a.to(d).to_vector(), a.to_vector());
    }
  }
  Tensor<double> wrong({3});
  EXPECT_THROW(wrong.copy_from(Tensor<double>({4})), ShapeError);
}

TEST(Tensor, CastBetweenTypes) {
  auto a = Tensor<float>::from_vector({4}, {1.5f, -2.25f, 65504.0f, 1e-8f}, MANAGED);
  Tensor<half> h = a.cast<half>();
  EXPECT_EQ(float(h.get(0)), 1.5f);
  EXPECT_EQ(float(h.get(2)), 65504.0f);
  Tensor<double> d = h.cast<double>();
  EXPECT_EQ(d.get(1), -2.25);
  Tensor<bfloat16> b = a.cast<bfloat16>();
  EXPECT_NEAR(float(b.get(1)), -2.25f, 1e-6);
  Tensor<std::int32_t> i = a.cast<std::int32_t>();
  EXPECT_EQ(i.get(1), -2);
}

TEST(Tensor, Printing) {
  auto t = Tensor<float>::from_vector({2, 2}, {1, 2, 3, 4}, HOST);
  std::ostringstream os;
  os << t;
  EXPECT_NE(os.str().find("[[1, 2],\n [3, 4]]"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("shape {2, 2} HOST"), std::string::npos);
  Tensor<float> big({100}, {ONE}, HOST);
  EXPECT_NE(big.to_string().find("..."), std::string::npos);
}

TEST(Tensor, Int64SizesAreNotTruncated) {
  Shape s{std::int64_t(1) << 20, std::int64_t(1) << 12};
  EXPECT_EQ(s.numel(), std::int64_t(1) << 32);
}

// Tensor::borrow_host (the Python package's zero-copy path): the tensor reads
// and writes the caller's memory, views share it, deep copies do not, and the
// keep-alive is released exactly when the last tensor over it goes.
TEST(Tensor, BorrowHostSharesTheCallersMemoryAndReleasesTheOwner) {
  std::vector<float> buffer = {1, 2, 3, 4, 5, 6};
  auto owner = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owner;
  {
    auto t = Tensor<float>::borrow_host(buffer.data(), {2, 3}, std::move(owner));
    EXPECT_EQ(t.get_memory_type(), HOST);
    EXPECT_EQ(t.data(), buffer.data());
    EXPECT_EQ(t.get({-1, -1}), 6.0f);
    buffer[1] = 20.0f;
    EXPECT_EQ(t.get({0, 1}), 20.0f);
    t.set({1, 0}, 40.0f);
    EXPECT_EQ(buffer[3], 40.0f);
    Tensor<float> row = t.slice(1, 2);
    Tensor<float> copy = t;  // deep copy: its own memory
    EXPECT_NE(copy.data(), buffer.data());
    copy.set(0, -1.0f);
    EXPECT_EQ(buffer[0], 1.0f);
    t = Tensor<float>();
    EXPECT_FALSE(watch.expired());  // the view still holds the storage
    EXPECT_EQ(row.get(0), 40.0f);
  }
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(buffer[3], 40.0f);  // never freed by the tensor
}

TEST(Tensor, BorrowHostRefusesAMisalignedPointer) {
  alignas(8) unsigned char bytes[64] = {};
  auto* odd = reinterpret_cast<float*>(bytes + 1);
  EXPECT_THROW(Tensor<float>::borrow_host(odd, {4}, nullptr), ValueError);
}

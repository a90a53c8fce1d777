// The model-parallel linear ops against the single-process linear: forward
// values and gradients in float on random shapes that rarely divide by the
// group size, and gradcheck in double with every rank's slice cut inside the
// graph from replicated variables (so every collective's backward pass is
// differentiated), at whatever rank count the test runs with.
#include <random>

#include "../../support/gradcheck.h"
#include "mp_test_util.h"

namespace {
using namespace mptest;
using distributed::mp::column_parallel_linear;
using distributed::mp::row_parallel_linear;

// Every rank draws the same shapes from the same seed.
struct Dims {
  std::int64_t batch, in, out;
};
Dims random_dims(std::mt19937_64& gen) {
  const std::int64_t p = group()->size();
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(gen); };
  return {pick(1, 5), pick(p, p + 10), pick(p, p + 12)};
}

// The single-process reference: y = x W^T + b and the gradients of
// L = sum(y * R).
struct Reference {
  Tensor<float> y, dx, dw, db;
};
Reference reference(const Tensor<float>& x, const Tensor<float>& w, const Tensor<float>& b, const Tensor<float>& r) {
  auto xv = host_var("x", x), wv = host_var("W", w), bv = host_var("b", b);
  auto y = op::linear(xv, wv, bv);
  auto loss = op::reduce_sum(op::product(y, op::constant<float>("R", r)));
  auto t = op::gradients(loss, {xv, wv, bv});
  return {*y->eval(), *t.get(xv), *t.get(wv), *t.get(bv)};
}

class MpOps : public ::testing::TestWithParam<bool> {};

TEST_P(MpOps, ColumnParallelMatchesLinear) {
  const bool gather = GetParam();
  std::mt19937_64 gen(11);
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Dims d = random_dims(gen);
    const auto seed = static_cast<std::uint64_t>(100 + trial);
    const Tensor<float> x = magmadnn::testing::random_tensor<float>({d.batch, d.in}, seed);
    const Tensor<float> w = magmadnn::testing::random_tensor<float>({d.out, d.in}, seed + 1);
    const Tensor<float> b = magmadnn::testing::random_tensor<float>({d.out}, seed + 2);
    const Tensor<float> r = magmadnn::testing::random_tensor<float>({d.batch, d.out}, seed + 3);
    const Reference ref = reference(x, w, b, r);

    const Shard s = my_shard(d.out);
    auto xv = host_var("x", x), wv = host_var("W", rows_of(w, s)), bv = host_var("b", rows_of(b, s));
    auto y = column_parallel_linear<float>(xv, wv, bv, group(), d.out, gather);
    // Without the gather each rank holds its columns of y and of the loss;
    // their sum over the ranks is the whole loss.
    auto loss = op::reduce_sum(op::product(y, op::constant<float>("R", gather ? r : cols_of(r, s))));
    auto t = op::gradients(loss, {xv, wv, bv});
    EXPECT_TRUE(close(*y->eval(), gather ? ref.y : cols_of(ref.y, s), 1e-5, 1e-6, "y"));
    EXPECT_TRUE(close(*t.get(xv), ref.dx, 1e-5, 1e-6, "dx"));
    EXPECT_TRUE(close(*t.get(wv), rows_of(ref.dw, s), 1e-5, 1e-6, "dW"));
    EXPECT_TRUE(close(*t.get(bv), rows_of(ref.db, s), 1e-5, 1e-6, "db"));
  }
}

TEST_P(MpOps, RowParallelMatchesLinear) {
  const bool split_input = GetParam();
  std::mt19937_64 gen(23);
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Dims d = random_dims(gen);
    const auto seed = static_cast<std::uint64_t>(200 + trial);
    const Tensor<float> x = magmadnn::testing::random_tensor<float>({d.batch, d.in}, seed);
    const Tensor<float> w = magmadnn::testing::random_tensor<float>({d.out, d.in}, seed + 1);
    const Tensor<float> b = magmadnn::testing::random_tensor<float>({d.out}, seed + 2);
    const Tensor<float> r = magmadnn::testing::random_tensor<float>({d.batch, d.out}, seed + 3);
    const Reference ref = reference(x, w, b, r);

    const Shard s = my_shard(d.in);
    auto xv = host_var("x", split_input ? cols_of(x, s) : x), wv = host_var("W", cols_of(w, s)),
         bv = host_var("b", b);
    auto y = row_parallel_linear<float>(xv, wv, bv, group(), split_input);
    auto loss = op::reduce_sum(op::product(y, op::constant<float>("R", r)));
    auto t = op::gradients(loss, {xv, wv, bv});
    EXPECT_TRUE(close(*y->eval(), ref.y, 1e-5, 1e-6, "y"));
    EXPECT_TRUE(close(*t.get(xv), split_input ? cols_of(ref.dx, s) : ref.dx, 1e-5, 1e-6, "dx"));
    EXPECT_TRUE(close(*t.get(wv), cols_of(ref.dw, s), 1e-5, 1e-6, "dW"));
    EXPECT_TRUE(close(*t.get(bv), ref.db, 1e-5, 1e-6, "db"));
  }
}

INSTANTIATE_TEST_SUITE_P(Both, MpOps, ::testing::Bool());

// -- gradcheck in double ------------------------------------------------------------------
// Every rank holds the whole x, W and b as variables and cuts its slices in
// the graph (scatter_columns, on W^T for rows), so the loss is one function
// of replicated inputs: every rank perturbs the same element at once, and
// the central differences see the whole group's computation.
using E = op::Expr<double>;
E rows_in_graph(const E& w) {
  return op::transpose(distributed::mp::scatter_columns(op::transpose(w), group()));
}

std::vector<Tensor<double>> inputs(std::vector<Shape> shapes, std::uint64_t seed) {
  std::vector<Tensor<double>> v;
  for (const Shape& s : shapes) v.push_back(magmadnn::testing::random_tensor<double>(s, seed++));
  return v;
}

TEST(MpGradcheck, ColumnParallelWithGather) {
  const std::int64_t p = group()->size(), out = 2 * p + 1, in = p + 2;
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>(
      [&](const std::vector<op::Var<double>>& v) {
        // b as {1, out}: linear takes such a bias, and scatter_columns splits it.
        return column_parallel_linear<double>(v[0], rows_in_graph(v[1]),
                                              distributed::mp::scatter_columns(E(v[2]), group()), group(), out, true);
      },
      inputs({{3, in}, {out, in}, {1, out}}, 31)));
}

TEST(MpGradcheck, RowParallelWithWholeInput) {
  const std::int64_t p = group()->size(), out = p + 3, in = 2 * p + 1;
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>(
      [&](const std::vector<op::Var<double>>& v) {
        return row_parallel_linear<double>(v[0], distributed::mp::scatter_columns(E(v[1]), group()), v[2], group(),
                                           false);
      },
      inputs({{3, in}, {out, in}, {out}}, 41)));
}

TEST(MpGradcheck, MegatronPair) {
  // column (split output) -> tanh -> row (split input): one allreduce each way.
  const std::int64_t p = group()->size(), in = p + 1, hidden = 2 * p + 1, out = 3;
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>(
      [&](const std::vector<op::Var<double>>& v) {
        E h = column_parallel_linear<double>(v[0], rows_in_graph(v[1]),
                                             distributed::mp::scatter_columns(E(v[2]), group()), group(), hidden,
                                             false);
        return row_parallel_linear<double>(op::tanh(h), distributed::mp::scatter_columns(E(v[3]), group()), v[4],
                                           group(), true);
      },
      inputs({{2, in}, {hidden, in}, {1, hidden}, {out, hidden}, {out}}, 51)));
}

TEST(MpOpsErrors, WrongSliceShapeNamesTheExpectedOne) {
  const std::int64_t p = group()->size();
  auto x = host_var("x", magmadnn::testing::random_tensor<float>({2, 3}, 1));
  auto w = host_var("W", magmadnn::testing::random_tensor<float>({p + 5, 3}, 2));  // whole, not a slice
  if (p == 1) GTEST_SKIP() << "one rank: the whole weight is its slice";
  try {
    (void)column_parallel_linear<float>(x, w, op::Expr<float>(), group(), p + 5, false);
    ADD_FAILURE() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("w must be {" + std::to_string(my_shard(p + 5).extent)), std::string::npos)
        << e.what();
  }
}

}  // namespace

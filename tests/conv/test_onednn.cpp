// oneDNN's convolution and pooling primitives (float, CPU) against our
// references: Direct for the three convolution passes, pool_cpu for pooling,
// on random shapes with strides, padding, dilation, groups and odd sizes.
// oneDNN has no double convolution or pooling, so there is no gradcheck in
// double for these paths: double keeps our algorithms, which have one
// (test_conv_ops.cpp, test_pool.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "conv_test_util.h"
#include "magmadnn/compute/compute.h"
#include "magmadnn/conv/chooser.h"
#include "magmadnn/conv/conv.h"
#include "magmadnn/conv/input_states.h"
#include "magmadnn/conv/pool_chooser.h"
#include "magmadnn/core/errors.h"
#include "support/gradcheck.h"
#include "support/shapes.h"

using namespace convtest;
using test::conv_geometry;

namespace {

struct Rng {
  std::uint64_t s;
  std::int64_t operator()(std::int64_t lo, std::int64_t hi) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + static_cast<std::int64_t>((s >> 33) % static_cast<std::uint64_t>(hi - lo + 1));
  }
};

// A random problem whose output is not empty.
ConvProblem random_problem(Rng& next) {
  for (;;) {
    ConvParams g;
    g.groups = next(1, 3);
    const std::int64_t n = next(1, 4), c = g.groups * next(1, 4), k = g.groups * next(1, 5);
    const std::int64_t h = next(3, 17), w = next(3, 17), r = next(1, 5), s = next(1, 5);
    g.pad_h = next(0, 3), g.pad_w = next(0, 3);
    g.stride_h = next(1, 3), g.stride_w = next(1, 3);
    g.dilation_h = next(1, 2), g.dilation_w = next(1, 2);
    if (conv_out_size(h, r, g.pad_h, g.stride_h, g.dilation_h) < 1 ||
        conv_out_size(w, s, g.pad_w, g.stride_w, g.dilation_w) < 1)
      continue;
    return make_problem(Shape{n, c, h, w}, Shape{k, c / g.groups, r, s}, g);
  }
}

ConvAlgorithm<float>& onednn() {
  ConvAlgorithm<float>* a = find_algorithm<float>(Algo::OneDNN, DeviceKind::CPU);
  if (!a) throw std::runtime_error("onednn convolution is not registered");
  return *a;
}

}  // namespace

TEST(OnednnConv, RegisteredForFloatOnly) {
  EXPECT_NE(find_algorithm<float>(Algo::OneDNN, DeviceKind::CPU), nullptr);
  EXPECT_EQ(find_algorithm<double>(Algo::OneDNN, DeviceKind::CPU), nullptr);
  EXPECT_EQ(parse_algo("onednn"), Algo::OneDNN);
}

TEST(OnednnConv, MatchesDirectOnRandomShapes) {
  ConvAlgorithm<float>& direct = *find_algorithm<float>(Algo::Direct, DeviceKind::CPU);
  Rng next{77};
  // LeNet-5's layers, then random ones.
  std::vector<ConvProblem> probs;
  ConvParams pad2;
  pad2.pad_h = pad2.pad_w = 2;
  probs.push_back(make_problem(Shape{3, 1, 28, 28}, Shape{6, 1, 5, 5}, pad2));
  probs.push_back(make_problem(Shape{3, 6, 14, 14}, Shape{16, 6, 5, 5}, ConvParams{}));
  for (int i = 0; i < 40; ++i) probs.push_back(random_problem(next));
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const ConvProblem& pr = probs[i];
    ASSERT_TRUE(onednn().supports(pr, Pass::Forward)) << pr.to_string();
    const Passes<float> ref = run_all(direct, pr, 500 + i);
    const Passes<float> got = run_all(onednn(), pr, 500 + i);
    EXPECT_LE(rel_err(got.y, ref.y), 2e-5) << "forward with bias, " << pr.to_string();
    EXPECT_LE(rel_err(got.dx, ref.dx), 2e-5) << "backward data, " << pr.to_string();
    EXPECT_LE(rel_err(got.dw, ref.dw), 2e-5) << "backward filter, " << pr.to_string();
    EXPECT_LE(rel_err(got.db, ref.db), 2e-5) << "bias gradient, " << pr.to_string();
  }
}

TEST(OnednnConv, WithoutBiasAndTwiceInARow) {
  // No bias, or no bias gradient wanted: a primitive made without one. A
  // second call reuses the cached primitive; calls with a bias between them
  // use a primitive of their own and must not disturb it.
  ConvAlgorithm<float>& direct = *find_algorithm<float>(Algo::Direct, DeviceKind::CPU);
  Rng next{91};
  for (int i = 0; i < 10; ++i) {
    const ConvProblem pr = random_problem(next);
    const auto x = random_vec<float>(pr.x_shape().numel(), i), w = random_vec<float>(pr.w_shape().numel(), i + 1);
    const auto dy = random_vec<float>(pr.y_shape().numel(), i + 2);
    std::vector<float> y_ref(dy.size()), dw_ref(w.size());
    direct.forward(pr, x.data(), w.data(), nullptr, y_ref.data(), nullptr);
    direct.backward_filter(pr, x.data(), dy.data(), dw_ref.data(), nullptr, nullptr);
    for (int rep = 0; rep < 2; ++rep) {
      std::vector<unsigned char> ws_f(onednn().workspace_bytes(pr, Pass::Forward));
      std::vector<unsigned char> ws_b(onednn().workspace_bytes(pr, Pass::BackwardFilter));
      std::vector<float> y(dy.size(), 7.0f), dw(w.size(), 7.0f);
      onednn().forward(pr, x.data(), w.data(), nullptr, y.data(), ws_f.data());
      onednn().backward_filter(pr, x.data(), dy.data(), dw.data(), nullptr, ws_b.data());
      EXPECT_LE(rel_err(y, y_ref), 2e-5) << "forward without bias, call " << rep << ", " << pr.to_string();
      EXPECT_LE(rel_err(dw, dw_ref), 2e-5) << "backward filter without bias, call " << rep << ", " << pr.to_string();
      // The same problem with a bias and a bias gradient.
      const auto b = random_vec<float>(pr.k, i + 3);
      std::vector<float> yb_ref(dy.size()), dwb_ref(w.size()), db_ref(b.size());
      direct.forward(pr, x.data(), w.data(), b.data(), yb_ref.data(), nullptr);
      direct.backward_filter(pr, x.data(), dy.data(), dwb_ref.data(), db_ref.data(), nullptr);
      std::vector<float> yb(dy.size(), 7.0f), dwb(w.size(), 7.0f), db(b.size(), 7.0f);
      onednn().forward(pr, x.data(), w.data(), b.data(), yb.data(), ws_f.data());
      onednn().backward_filter(pr, x.data(), dy.data(), dwb.data(), db.data(), ws_b.data());
      EXPECT_LE(rel_err(yb, yb_ref), 2e-5) << "forward with bias, call " << rep << ", " << pr.to_string();
      EXPECT_LE(rel_err(dwb, dwb_ref), 2e-5) << "backward filter with bias, call " << rep << ", " << pr.to_string();
      EXPECT_LE(rel_err(db, db_ref), 2e-5) << "bias gradient, call " << rep << ", " << pr.to_string();
    }
  }
}

// The forward pass's reordered x and the backward data pass's reordered dy
// are kept for the backward filter pass (onednn_conv.cpp, input_states.h).
// Reused, they must give the bits a fresh reorder gives; and a tensor
// written between the passes (same address, new contents) must be read
// anew, never served from the kept copy.
namespace {

// 16 channels in and 32 out: oneDNN reorders x and dy to its blocked layout.
struct KeptCase {
  ConvParams pad1{.pad_h = 1, .pad_w = 1};
  ConvProblem pr = make_problem(Shape{4, 16, 10, 10}, Shape{32, 16, 3, 3}, pad1);
  static Tensor<float> tensor(const Shape& s, int seed) {
    return Tensor<float>::from_vector(s, random_vec<float>(s.numel(), seed), HOST);
  }
  Tensor<float> w = tensor(pr.w_shape(), 2);
};

}  // namespace

TEST(OnednnConv, KeptInputsServeOnlyUnchangedContents) {
  const KeptCase kc;
  const ConvParams& pad1 = kc.pad1;
  const ConvProblem& pr = kc.pr;
  const Tensor<float>& w = kc.w;
  const auto tensor = &KeptCase::tensor;
  // What the algorithm gives called on its own (no states: nothing kept).
  auto fresh_dw = [&](const Tensor<float>& x, const Tensor<float>& dy) {
    std::vector<unsigned char> ws(onednn().workspace_bytes(pr, Pass::BackwardFilter));
    std::vector<float> dw(static_cast<std::size_t>(pr.w_shape().numel()));
    onednn().backward_filter(pr, x.data(), dy.data(), dw.data(), nullptr, ws.data());
    return dw;
  };
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    Tensor<float> x = tensor(pr.x_shape(), 10 + step), dy = tensor(pr.y_shape(), 20 + step);
    conv::conv2d_forward<float>(x, w, nullptr, pad1, Algo::OneDNN);
    conv::conv2d_backward_data(dy, w, pr.x_shape(), pad1, Algo::OneDNN);
    EXPECT_EQ(conv::conv2d_backward_filter(x, dy, pr.w_shape(), pad1, Algo::OneDNN).to_vector(), fresh_dw(x, dy));
    // x and dy rewritten in place after the passes that kept them.
    conv::conv2d_forward<float>(x, w, nullptr, pad1, Algo::OneDNN);
    conv::conv2d_backward_data(dy, w, pr.x_shape(), pad1, Algo::OneDNN);
    const float* x_before = x.data();
    x.copy_from(tensor(pr.x_shape(), 30 + step));
    dy.set(std::int64_t{5}, 9.0f);
    ASSERT_EQ(x.data(), x_before);
    EXPECT_EQ(conv::conv2d_backward_filter(x, dy, pr.w_shape(), pad1, Algo::OneDNN).to_vector(), fresh_dw(x, dy));
  }
}

// The forward and backward data passes keep nothing for a backward filter
// pass that the chooser gave to another algorithm (it would never read it),
// and keep as before for one it gave to oneDNN; the choices come from a
// chooser cache file.
TEST(OnednnConv, KeepsInputsOnlyForAFilterPassOfItsOwn) {
  const KeptCase kc;
  const ConvProblem& pr = kc.pr;
  for (const std::string filter_algo : {"direct", "onednn"}) {
    SCOPED_TRACE("backward filter by " + filter_algo);
    const std::string file = ::testing::TempDir() + "/magmadnn_kept_" + std::to_string(::getpid()) + "_" +
                             filter_algo + ".tsv";
    std::ofstream(file) << "cpu\tfloat32\tbackward_filter\t" << pr.to_string() << "\t" << filter_algo << "\t0.001\n";
    clear_choices();
    set_cache_file(file);
    EXPECT_EQ(choose<float>(pr, Pass::BackwardFilter, DeviceKind::CPU).id(), parse_algo(filter_algo));
    const std::size_t before = onednn_kept_input_bytes();
    const Tensor<float> x = KeptCase::tensor(pr.x_shape(), 3), dy = KeptCase::tensor(pr.y_shape(), 4);
    conv::conv2d_forward<float>(x, kc.w, nullptr, kc.pad1, Algo::OneDNN);
    conv::conv2d_backward_data(dy, kc.w, pr.x_shape(), kc.pad1, Algo::OneDNN);
    if (filter_algo == "onednn") {
      EXPECT_GT(onednn_kept_input_bytes(), before);
    } else {
      EXPECT_EQ(onednn_kept_input_bytes(), before);
    }
    reset_cache_file();
    clear_choices();
    std::remove(file.c_str());
  }
}

// A convolution node in eval mode (inference: no backward pass follows)
// keeps no reordered x, where in training mode the same forward pass does;
// its output is the same in both modes.
TEST(OnednnConv, AnEvalModeNodeKeepsNoInputs) {
  const KeptCase kc;
  const ConvProblem& pr = kc.pr;
  clear_choices();  // no cached pick: oneDNN's filter pass may be its own, so training keeps
  auto x = op::var<float>("x", pr.x_shape(), {NONE}, HOST);
  auto w = op::var<float>("w", pr.w_shape(), {NONE}, HOST);
  w->set_value(kc.w);
  auto y = op::conv2d(x, w, kc.pad1, Algo::OneDNN);
  std::vector<float> out[2];
  for (const bool training : {false, true}) {
    SCOPED_TRACE(training ? "training" : "eval");
    x->set_value(KeptCase::tensor(pr.x_shape(), 7));  // the same values in a new array: nothing kept matches
    op::set_training(y, training);
    const std::size_t before = onednn_kept_input_bytes();
    out[training] = y->eval()->to_vector();
    if (training) {
      EXPECT_GT(onednn_kept_input_bytes(), before);
    } else {
      EXPECT_EQ(onednn_kept_input_bytes(), before);
    }
  }
  EXPECT_EQ(out[0], out[1]);
}

namespace {

PoolImpl<float>* pool_named(const char* name) {
  for (PoolImpl<float>* p : pool_impls<float>(DeviceKind::CPU))
    if (std::string(name) == p->name()) return p;
  return nullptr;
}

struct PoolCase {
  Shape x;
  PoolParams p;
};

std::vector<PoolCase> pool_cases() {
  std::vector<PoolCase> out;
  auto add = [&](Shape x, std::int64_t kh, std::int64_t kw, std::int64_t sh, std::int64_t sw, std::int64_t ph,
                 std::int64_t pw) {
    for (PoolMode m : {PoolMode::Max, PoolMode::Average})
      for (bool incl : {false, true}) {
        if (m == PoolMode::Max && incl) continue;
        PoolParams p;
        p.kernel_h = kh, p.kernel_w = kw, p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw;
        p.mode = m, p.count_include_pad = incl;
        out.push_back({x, p});
      }
  };
  add(Shape{4, 6, 28, 28}, 2, 2, 2, 2, 0, 0);  // LeNet-5's pools
  add(Shape{4, 16, 10, 10}, 2, 2, 2, 2, 0, 0);
  Rng next{5};
  for (int i = 0; i < 30; ++i) {
    const std::int64_t kh = next(1, 4), kw = next(1, 4);
    const Shape x{next(1, 3), next(1, 5), next(kh, 15), next(kw, 15)};
    add(x, kh, kw, next(1, 3), next(1, 3), next(0, kh - 1), next(0, kw - 1));
  }
  return out;
}

}  // namespace

TEST(OnednnPool, MatchesOursForwardAndBackward) {
  PoolImpl<float>* ours = find_pool_impl<float>(DeviceKind::CPU);
  PoolImpl<float>* dnnl = pool_named("onednn");
  ASSERT_NE(dnnl, nullptr);
  ASSERT_EQ(std::string(ours->name()), "cpu");
  int compared = 0;
  for (const PoolCase& c : pool_cases()) {
    ASSERT_TRUE(dnnl->supports(c.x, c.p));
    const Shape ys = pool_output_shape(c.x, c.p);
    const auto x = random_vec<float>(c.x.numel(), compared + 1);  // continuous values: no ties
    const auto dy = random_vec<float>(ys.numel(), compared + 2);
    const bool max = c.p.mode == PoolMode::Max;
    std::vector<float> y_ref(dy.size()), y(dy.size(), 7.0f), dx_ref(x.size()), dx(x.size(), 7.0f);
    std::vector<std::int32_t> am_ref(dy.size()), am(dy.size(), -7);
    ours->forward(c.x, c.p, x.data(), y_ref.data(), max ? am_ref.data() : nullptr);
    dnnl->forward(c.x, c.p, x.data(), y.data(), max ? am.data() : nullptr);
    std::string what = "input " + std::to_string(c.x[0]) + "x" + std::to_string(c.x[1]) + "x" +
                       std::to_string(c.x[2]) + "x" + std::to_string(c.x[3]) + " window " +
                       std::to_string(c.p.kernel_h) + "x" + std::to_string(c.p.kernel_w) + " stride " +
                       std::to_string(c.p.stride_h) + "," + std::to_string(c.p.stride_w) + " pad " +
                       std::to_string(c.p.pad_h) + "," + std::to_string(c.p.pad_w) +
                       (max ? " max" : c.p.count_include_pad ? " avg incl" : " avg excl");
    EXPECT_LE(rel_err(y, y_ref), 1e-6) << "forward, " << what;
    ours->backward(c.x, c.p, x.data(), dy.data(), max ? am_ref.data() : nullptr, dx_ref.data());
    dnnl->backward(c.x, c.p, x.data(), dy.data(), max ? am.data() : nullptr, dx.data());
    EXPECT_LE(rel_err(dx, dx_ref), 1e-6) << "backward, " << what;
    if (max) {
      EXPECT_EQ(am, am_ref) << "argmax, " << what;
      // Each backward reads the other's argmax, and recomputes without one.
      std::vector<float> dx2(x.size(), 7.0f), dx3(x.size(), 7.0f);
      dnnl->backward(c.x, c.p, x.data(), dy.data(), am_ref.data(), dx2.data());
      dnnl->backward(c.x, c.p, x.data(), dy.data(), nullptr, dx3.data());
      EXPECT_LE(rel_err(dx2, dx_ref), 1e-6) << "backward from our argmax, " << what;
      EXPECT_LE(rel_err(dx3, dx_ref), 1e-6) << "backward without argmax, " << what;
    }
    ++compared;
  }
  EXPECT_GE(compared, 90);
}

TEST(PoolChooser, TimesBothAndForcesByName) {
  clear_pool_choices();
  PoolParams p;  // 2x2 max, stride 2
  const Shape x{8, 6, 28, 28};
  PoolImpl<float>* fwd = choose_pool<float>(x, p, false, DeviceKind::CPU);
  ASSERT_NE(fwd, nullptr);
  const auto c = cached_pool_choice<float>(x, p, false, DeviceKind::CPU);
  ASSERT_TRUE(c.has_value());
  ASSERT_EQ(c->times.size(), 2u);
  EXPECT_EQ(c->times[0].first, "cpu");
  EXPECT_EQ(c->times[1].first, "onednn");
  EXPECT_EQ(c->name, fwd->name());
  const double picked = c->name == "cpu" ? c->times[0].second : c->times[1].second;
  EXPECT_LE(picked, std::min(c->times[0].second, c->times[1].second));
  // Double has only ours: nothing is timed.
  EXPECT_EQ(std::string(choose_pool<double>(x, p, true, DeviceKind::CPU)->name()), "cpu");
  EXPECT_FALSE(cached_pool_choice<double>(x, p, true, DeviceKind::CPU).has_value());
  set_forced_pool_impl("onednn");
  EXPECT_EQ(std::string(choose_pool<float>(x, p, true, DeviceKind::CPU)->name()), "onednn");
  set_forced_pool_impl("nope");
  EXPECT_THROW(choose_pool<float>(x, p, true, DeviceKind::CPU), NotSupportedError);
  set_forced_pool_impl("onednn");
  EXPECT_THROW(choose_pool<double>(x, p, true, DeviceKind::CPU), NotSupportedError);
  set_forced_pool_impl("");
}


// relu(conv2d(...)) becomes one conv2d_relu node; in double it runs our
// algorithms with a ReLU pass after them, so gradcheck applies.
TEST(ConvReluFusion, PassFusesAndGradchecksInDouble) {
  using V = std::vector<op::Var<double>>;
  auto x = magmadnn::testing::random_tensor<double>({2, 3, 7, 6}, 31);
  auto w = magmadnn::testing::random_tensor<double>({4, 3, 3, 3}, 32);
  auto b = magmadnn::testing::random_tensor<double>({4}, 33);
  auto build = [&](const V& v) {
    return op::fuse_conv_activation(op::relu(op::conv2d(v[0], v[1], v[2], conv_geometry(1, 2))));
  };
  std::vector<op::Var<double>> vars;
  for (auto* t : {&x, &w, &b}) {
    vars.push_back(op::var<double>("v" + std::to_string(vars.size()), t->shape(), {NONE}, HOST));
    vars.back()->set_value(*t);
  }
  EXPECT_EQ(build(vars)->kind(), "conv2d_relu");
  EXPECT_TRUE(magmadnn::testing::gradcheck<double>(build, {x, w, b}));
  // A conv whose output has a second consumer keeps its own node.
  auto c = op::conv2d(vars[0], vars[1], vars[2], conv_geometry(1, 2));
  auto both = op::fuse_conv_activation(op::add(op::relu(c), c));
  EXPECT_EQ(both->get_inputs()[0]->kind(), "relu");
}

// In float on the CPU, oneDNN fuses the ReLU as a post-op: values and
// gradients equal those of the unfused graph through the same algorithm.
TEST(ConvReluFusion, OnednnPostOpMatchesTheUnfusedGraph) {
  for (Algo algo : {Algo::OneDNN, Algo::Im2colGemm, Algo::Sliding}) {
    auto mk = [](const char* name, const Shape& s, std::uint64_t seed) {
      auto v = op::var<float>(name, s, {NONE}, HOST);
      v->set_value(Tensor<float>::from_vector(s, random_vec<float>(s.numel(), seed), HOST));
      return v;
    };
    auto x = mk("x", Shape{3, 2, 11, 9}, 41), w = mk("w", Shape{5, 2, 3, 3}, 42), b = mk("b", Shape{5}, 43);
    auto plain = op::relu(op::conv2d(x, w, b, conv_geometry(1, 1), algo));
    auto fused = op::fuse_conv_activation(op::relu(op::conv2d(x, w, b, conv_geometry(1, 1), algo)));
    ASSERT_EQ(fused->kind(), "conv2d_relu");
    const std::vector<float> y0 = plain->eval()->to_vector(), y1 = fused->eval()->to_vector();
    EXPECT_LE(rel_err(y1, y0), 1e-6) << algo_name(algo);
    EXPECT_GT(std::count(y1.begin(), y1.end(), 0.0f), 0) << "some outputs must be clipped";
    auto g0 = op::gradients(op::reduce_sum(plain), {x, w, b});
    auto g1 = op::gradients(op::reduce_sum(fused), {x, w, b});
    for (const auto& v : {x, w, b})
      EXPECT_LE(rel_err(g1.get(v)->to_vector(), g0.get(v)->to_vector()), 1e-5) << algo_name(algo) << " " << v->get_name();
  }
}

// op::Profiler: a training step's forward, backward and optimizer work shows
// up per op with the right call counts, nothing is recorded while disabled or
// paused, and the printed table names every op.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "magmadnn/compute/compute.h"
#include "magmadnn/compute/profiler.h"
#include "magmadnn/optimizer/optimizer.h"

using namespace magmadnn;

namespace {

const op::ProfileEntry* find(const std::vector<op::ProfileEntry>& es, const std::string& phase,
                             const std::string& kind) {
  auto it = std::find_if(es.begin(), es.end(), [&](const auto& e) { return e.phase == phase && e.kind == kind; });
  return it == es.end() ? nullptr : &*it;
}

struct Net {
  op::Expr<float> W = op::var<float>("W", {4, 3}, {UNIFORM, {-1.0f, 1.0f}});
  op::Expr<float> x = op::var<float>("x", {3, 5}, {UNIFORM, {-1.0f, 1.0f}});
  op::Expr<float> loss = op::reduce_sum(op::sigmoid(op::matmul(W, x)));
  // With momentum: the update is a separate pass after the gradients.
  optimizer::GradientDescent<float> sgd{0.1, 0.9};
  void step() { sgd.minimize(loss, {W}); }
};

}  // namespace

TEST(Profiler, RecordsEveryPhaseOfAStepPerOp) {
  Net net;
  op::Profiler::reset();
  op::Profiler::enable();
  for (int i = 0; i < 3; ++i) net.step();
  op::Profiler::enable(false);
  const auto es = op::Profiler::entries();
  for (const char* kind : {"matmul", "sigmoid", "reduce_sum"}) {
    const auto* f = find(es, "forward", kind);
    ASSERT_NE(f, nullptr) << kind;
    EXPECT_EQ(f->calls, 3u) << kind;  // W changes every step, so every op recomputes
    const auto* b = find(es, "backward", kind);
    ASSERT_NE(b, nullptr) << kind;
    EXPECT_EQ(b->calls, 3u) << kind;
    EXPECT_GE(b->seconds, 0.0);
  }
  const auto* u = find(es, "optimizer", "update");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->calls, 3u);
  EXPECT_EQ(u->name, "W");
  // Sorted by time, most first.
  for (std::size_t i = 1; i < es.size(); ++i) EXPECT_GE(es[i - 1].seconds, es[i].seconds);

  std::ostringstream table;
  op::Profiler::print(table, 3);
  for (const char* word : {"forward", "backward", "optimizer", "matmul", "sigmoid", "total profiled"}) {
    EXPECT_NE(table.str().find(word), std::string::npos) << word << " missing from\n" << table.str();
  }
}

TEST(Profiler, PlainSgdUpdatesShowUpInsideTheBackwardPass) {
  // Plain SGD applies W's update in the reverse pass (backward_update): it
  // still appears, once a step, as the optimizer's update of W.
  Net net;
  optimizer::GradientDescent<float> plain{0.1};
  op::Profiler::reset();
  op::Profiler::enable();
  for (int i = 0; i < 3; ++i) plain.minimize(net.loss, {net.W});
  op::Profiler::enable(false);
  const auto es = op::Profiler::entries();
  const auto* u = find(es, "optimizer", "update");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->calls, 3u);
  EXPECT_EQ(u->name, "W");
  ASSERT_NE(find(es, "backward", "matmul"), nullptr);
  EXPECT_EQ(plain.step_count(), 3);
}

TEST(Profiler, DisabledOrPausedRecordsNothing) {
  Net net;
  op::Profiler::reset();
  net.step();
  EXPECT_TRUE(op::Profiler::entries().empty());
  op::Profiler::enable();
  {
    const op::Profiler::Pause pause;
    EXPECT_FALSE(op::Profiler::enabled());
    net.step();
  }
  EXPECT_TRUE(op::Profiler::enabled());
  op::Profiler::enable(false);
  EXPECT_TRUE(op::Profiler::entries().empty());
}

// Graph passes: linear + activation fusion, ReLU after max pooling, conv + ReLU fusion, batch
// normalisation + residual add + ReLU fusion, elementwise chain fusion, and
// the choice of the graph edges that keep oneDNN's blocked layout.
#include "magmadnn/compute/passes.h"

#include <optional>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "magmadnn/compute/blocked_output.h"
#include "magmadnn/compute/conv.h"
#include "magmadnn/compute/folded_linear.h"
#include "magmadnn/compute/linalg.h"
#include "magmadnn/compute/nodes.h"
#include "magmadnn/compute/regularization.h"
#include "magmadnn/conv/layout.h"
#include "magmadnn/conv/pool_blocked.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::op {

namespace {

// Who uses whom, for one rewrite of the graph below a root. Use counts count
// input slots (a node used twice by one consumer has two uses), plus one for
// the root, which the caller uses. A replacement takes over exactly the uses
// of the node it replaces, and a fused node takes over exactly the slots that
// the removed nodes had on their inputs, so counts stay right during a pass
// without being recomputed.
template <typename T>
class GraphIndex {
 public:
  explicit GraphIndex(OpPtr<T> root) : root_(std::move(root)) {
    order_ = topological_order(root_.get());
    for (Operation<T>* n : order_) {
      keep_.push_back(n->shared_from_this());
      const auto& ins = n->get_inputs();
      for (std::size_t i = 0; i < ins.size(); ++i) {
        consumers_[ins[i].get()].emplace_back(n, i);
        ++uses_[ins[i].get()];
      }
    }
    ++uses_[root_.get()];
  }

  /// A snapshot of the original nodes, inputs before consumers.
  const std::vector<Operation<T>*>& order() const noexcept { return order_; }
  int uses(const Operation<T>* n) const {
    auto it = uses_.find(n);
    return it == uses_.end() ? 0 : it->second;
  }
  const OpPtr<T>& root() const noexcept { return root_; }
  /// The (consumer, input slot) pairs that read n.
  const std::vector<std::pair<Operation<T>*, std::size_t>>& consumers(const Operation<T>* n) const {
    static const std::vector<std::pair<Operation<T>*, std::size_t>> none;
    auto it = consumers_.find(n);
    return it == consumers_.end() ? none : it->second;
  }

  /// Rewires every consumer of `old` to `fresh`.
  void replace(Operation<T>* old, const OpPtr<T>& fresh) {
    keep_.push_back(fresh);
    auto c = consumers_.find(old);
    if (c != consumers_.end()) {
      for (const auto& [consumer, slot] : c->second) consumer->replace_input(slot, fresh);
      consumers_[fresh.get()] = std::move(c->second);
      consumers_.erase(old);
    }
    uses_[fresh.get()] = uses(old);
    if (root_.get() == old) root_ = fresh;
  }

 private:
  OpPtr<T> root_;
  // Every node seen or made during the pass stays alive until it ends, so a
  // raw pointer used as a key is never reused by a new node's address.
  std::vector<OpPtr<T>> keep_;
  std::vector<Operation<T>*> order_;
  std::unordered_map<const Operation<T>*, std::vector<std::pair<Operation<T>*, std::size_t>>> consumers_;
  std::unordered_map<const Operation<T>*, int> uses_;
};

template <typename T>
std::optional<Shape> known_shape(const Operation<T>& n) {
  try {
    return n.get_output_shape();
  } catch (const ValueError&) {  // an unset placeholder below
    return std::nullopt;
  } catch (const ShapeError&) {  // does not fit yet; eval() will say so
    return std::nullopt;
  }
}

// The inputs of a fully connected layer: out = x w^T (+ b).
template <typename T>
struct Affine {
  OpPtr<T> x, w, b;
};

// matmul(x, w, false, true) or matmul(x, transpose(w)) whose inner nodes are
// used only there, with a known 2-D w.
template <typename T>
std::optional<Affine<T>> match_matmul(const GraphIndex<T>& g, const OpPtr<T>& node) {
  auto* mm = dynamic_cast<MatmulNode<T>*>(node.get());
  if (mm == nullptr || mm->trans_a() || g.uses(mm) != 1) return std::nullopt;
  const auto& ins = mm->get_inputs();
  OpPtr<T> w;
  if (mm->trans_b()) {
    w = ins[1];
  } else if (auto* t = dynamic_cast<TransposeNode<T>*>(ins[1].get()); t != nullptr && g.uses(t) == 1) {
    w = t->get_inputs()[0];
  } else {
    return std::nullopt;
  }
  const std::optional<Shape> ws = known_shape(*w);
  if (!ws || ws->ndim() != 2) return std::nullopt;
  return Affine<T>{ins[0], w, nullptr};
}

// add(matmul-pattern, b) in either order with one bias value per output unit.
template <typename T>
std::optional<Affine<T>> match_add(const GraphIndex<T>& g, Operation<T>& node) {
  auto* add = dynamic_cast<BinaryNode<T>*>(&node);
  if (add == nullptr || add->op() != BinaryOp::Add) return std::nullopt;
  for (std::size_t side = 0; side < 2; ++side) {
    std::optional<Affine<T>> a = match_matmul(g, add->get_inputs()[side]);
    if (!a) continue;
    const OpPtr<T>& b = add->get_inputs()[1 - side];
    const std::optional<Shape> bs = known_shape(*b);
    const std::int64_t out = known_shape(*a->w)->dims()[0];
    // {out} or {1, out} broadcasts over the batch without widening the
    // product, which is exactly LinearNode's bias.
    if (bs && bs->numel() == out && (bs->ndim() == 1 || (bs->ndim() == 2 && bs->dims()[0] == 1))) {
      a->b = b;
      return a;
    }
  }
  return std::nullopt;
}

}  // namespace

template <typename T>
Expr<T> fuse_linear_activation(const Expr<T>& root) {
  MAGMADNN_CHECK(root.get() != nullptr, ValueError, "fuse_linear_activation: empty graph");
  GraphIndex<T> g(root.ptr());
  // Inputs come before consumers, so add(matmul, b) has become a plain
  // linear node by the time its activation is visited.
  for (Operation<T>* n : g.order()) {
    OpPtr<T> fused;
    if (auto* u = dynamic_cast<UnaryNode<T>*>(n); u != nullptr && LinearNode<T>::supports(u->op())) {
      const OpPtr<T>& c = n->get_inputs()[0];
      if (g.uses(c.get()) != 1) continue;
      if (auto* lin = dynamic_cast<LinearNode<T>*>(c.get()); lin != nullptr && lin->activation() == UnaryOp::Identity) {
        const auto& li = lin->get_inputs();
        fused = std::make_shared<LinearNode<T>>(li[0], li[1], lin->has_bias() ? li[2] : nullptr, u->op());
      } else if (auto* f = dynamic_cast<FoldedLinearNode<T>*>(c.get());
                 f != nullptr && f->activation() == UnaryOp::Identity) {
        fused = std::make_shared<FoldedLinearNode<T>>(f->get_inputs()[0], f->get_inputs()[1], u->op());
      } else if (std::optional<Affine<T>> a = match_matmul(g, c)) {
        fused = std::make_shared<LinearNode<T>>(a->x, a->w, nullptr, u->op());
      }
    } else if (std::optional<Affine<T>> a = match_add(g, *n)) {
      fused = std::make_shared<LinearNode<T>>(a->x, a->w, a->b, UnaryOp::Identity);
    }
    if (fused) g.replace(n, fused);
  }
  return Expr<T>(g.root());
}

template <typename T>
Expr<T> fuse_conv_activation(const Expr<T>& root) {
  MAGMADNN_CHECK(root.get() != nullptr, ValueError, "fuse_conv_activation: empty graph");
  GraphIndex<T> g(root.ptr());
  for (Operation<T>* n : g.order()) {
    auto* u = dynamic_cast<UnaryNode<T>*>(n);
    if (u == nullptr || u->op() != UnaryOp::Relu) continue;
    const OpPtr<T>& c = n->get_inputs()[0];
    auto* conv = dynamic_cast<Conv2dNode<T>*>(c.get());
    if (conv == nullptr || conv->fused_relu() || g.uses(c.get()) != 1) continue;
    const auto& ci = conv->get_inputs();
    g.replace(n, std::make_shared<Conv2dNode<T>>(ci[0], ci[1], ci.size() > 2 ? ci[2] : nullptr, conv->params(),
                                                 conv->algorithm(), true));
  }
  return Expr<T>(g.root());
}

// A batch normalisation that a fusion may absorb: plain, used once.
template <typename T>
BatchNormNode<T>* plain_batchnorm(const GraphIndex<T>& g, const OpPtr<T>& n) {
  auto* bn = dynamic_cast<BatchNormNode<T>*>(n.get());
  return bn != nullptr && !bn->fused_relu() && !bn->has_skip() && g.uses(bn) == 1 ? bn : nullptr;
}

template <typename T>
Expr<T> fuse_batchnorm_activation(const Expr<T>& root) {
  MAGMADNN_CHECK(root.get() != nullptr, ValueError, "fuse_batchnorm_activation: empty graph");
  GraphIndex<T> g(root.ptr());
  // Inputs come before consumers, so relu(add(bn, s)) first becomes
  // relu(bn_add), which the ReLU's visit then fuses in turn.
  for (Operation<T>* n : g.order()) {
    const auto& ins = n->get_inputs();
    if (auto* b = dynamic_cast<BinaryNode<T>*>(n); b != nullptr && b->op() == BinaryOp::Add) {
      const auto sa = known_shape(*ins[0]), sb = known_shape(*ins[1]);
      if (!sa || !sb || *sa != *sb) continue;
      for (std::size_t i : {0, 1}) {
        if (BatchNormNode<T>* bn = plain_batchnorm(g, ins[i])) {
          g.replace(n, BatchNormNode<T>::fused(*bn, ins[1 - i], false));
          break;
        }
      }
    } else if (auto* u = dynamic_cast<UnaryNode<T>*>(n); u != nullptr && u->op() == UnaryOp::Relu) {
      auto* bn = dynamic_cast<BatchNormNode<T>*>(ins[0].get());
      if (bn == nullptr || bn->fused_relu() || g.uses(bn) != 1) continue;
      g.replace(n, BatchNormNode<T>::fused(*bn, nullptr, true));
    }
  }
  return Expr<T>(g.root());
}

template <typename T>
Expr<T> relu_after_max_pool(const Expr<T>& root) {
  MAGMADNN_CHECK(root.get() != nullptr, ValueError, "relu_after_max_pool: empty graph");
  GraphIndex<T> g(root.ptr());
  for (Operation<T>* n : g.order()) {
    auto* pool = dynamic_cast<PoolingNode<T>*>(n);
    if (pool == nullptr || pool->params().mode != conv::PoolMode::Max) continue;
    const OpPtr<T>& r = n->get_inputs()[0];
    auto* u = dynamic_cast<UnaryNode<T>*>(r.get());
    if (u == nullptr || u->op() != UnaryOp::Relu || g.uses(r.get()) != 1) continue;
    // A ReLU that fuse_batchnorm_activation will take into its batch
    // normalisation costs nothing where it is (and keeps the pooling's
    // input in the normalisation's layout).
    if (plain_batchnorm(g, r->get_inputs()[0]) != nullptr) continue;
    auto pooled = std::make_shared<PoolingNode<T>>(r->get_inputs()[0], pool->params());
    g.replace(n, std::make_shared<UnaryNode<T>>(UnaryOp::Relu, T(0), std::move(pooled)));
  }
  return Expr<T>(g.root());
}

template <typename T>
Expr<T> fuse_elementwise_chains(const Expr<T>& root) {
  MAGMADNN_CHECK(root.get() != nullptr, ValueError, "fuse_elementwise_chains: empty graph");
  GraphIndex<T> g(root.ptr());
  using Step = typename UnaryChainNode<T>::Step;
  for (Operation<T>* n : g.order()) {
    auto* u = dynamic_cast<UnaryNode<T>*>(n);
    if (u == nullptr) continue;
    const OpPtr<T>& c = n->get_inputs()[0];
    if (g.uses(c.get()) != 1) continue;
    std::vector<Step> steps;
    if (auto* cu = dynamic_cast<UnaryNode<T>*>(c.get())) {
      steps.push_back(Step{cu->op(), cu->param()});
    } else if (auto* cc = dynamic_cast<UnaryChainNode<T>*>(c.get())) {
      steps = cc->steps();
    } else {
      continue;
    }
    steps.push_back(Step{u->op(), u->param()});
    g.replace(n, std::make_shared<UnaryChainNode<T>>(std::move(steps), c->get_inputs()[0]));
  }
  return Expr<T>(g.root());
}

namespace {
// Whether input `slot` of `n` is an activation that n reads in any layout:
// a convolution's x, a batch normalisation's x and residual input, a
// global average pooling's x (float: the only type ever blocked).
template <typename T>
bool reads_any_layout(const Operation<T>& n, std::size_t slot) {
  if (dynamic_cast<const Conv2dNode<T>*>(&n) != nullptr) return slot == 0;
  if (dynamic_cast<const BatchNormNode<T>*>(&n) != nullptr) return slot == 0 || slot == 3;
  if (const auto* p = dynamic_cast<const PoolingNode<T>*>(&n); p != nullptr && std::is_same_v<T, float>) {
    const Shape x = p->get_inputs()[0]->get_output_shape();
    return slot == 0 && (conv::is_global_average(x, p->params()) ||
                         conv::max_pool_blocked_supports(x, p->params(), conv::blocked_layout_block()) ||
                         conv::max_pool_blocked_supports(x, p->params(), conv::low_precision_layout()));
  }
  return false;
}
}  // namespace

template <typename T>
Expr<T> keep_blocked_layouts(const Expr<T>& root) {
  MAGMADNN_CHECK(root.get() != nullptr, ValueError, "keep_blocked_layouts: empty graph");
  GraphIndex<T> g(root.ptr());
  for (Operation<T>* n : g.order()) {
    auto* b = dynamic_cast<BlockedOutput<T>*>(n);
    if (b == nullptr) continue;
    bool all = n != g.root().get() && !g.consumers(n).empty();
    for (const auto& [consumer, slot] : g.consumers(n)) all = all && reads_any_layout(*consumer, slot);
    b->allow_blocked_output(all);
  }
  return root;
}

template <typename T>
Expr<T> optimize(const Expr<T>& root, const OptimizeOptions& options) {
  Expr<T> out = root;
  if (options.fuse_linear_activation) out = fuse_linear_activation(out);
  if (options.relu_after_max_pool) out = relu_after_max_pool(out);
  if (options.fuse_conv_activation) out = fuse_conv_activation(out);
  if (options.fuse_batchnorm_activation) out = fuse_batchnorm_activation(out);
  if (options.fuse_elementwise_chains) out = fuse_elementwise_chains(out);
  if (options.keep_blocked_layouts) out = keep_blocked_layouts(out);
  return out;
}

#define MAGMADNN_INSTANTIATE_PASSES(T)                            \
  template Expr<T> fuse_linear_activation<T>(const Expr<T>&);     \
  template Expr<T> fuse_elementwise_chains<T>(const Expr<T>&);    \
  template Expr<T> fuse_conv_activation<T>(const Expr<T>&);       \
  template Expr<T> relu_after_max_pool<T>(const Expr<T>&);        \
  template Expr<T> fuse_batchnorm_activation<T>(const Expr<T>&);  \
  template Expr<T> keep_blocked_layouts<T>(const Expr<T>&);       \
  template Expr<T> optimize<T>(const Expr<T>&, const OptimizeOptions&);
MAGMADNN_INSTANTIATE_PASSES(float)
MAGMADNN_INSTANTIATE_PASSES(double)

}  // namespace magmadnn::op

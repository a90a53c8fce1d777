#include "magmadnn/layer/activation_layer.h"

#include <array>
#include <string>

#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/compute/activation.h"

namespace magmadnn::layer {

namespace {

// The bridge from v1's enum to the op table: row i is activation_t value i,
// the op it applies (names, derivatives and fusion are the op table's) and
// whether it is a rectifier (He initialisation).
struct Row {
  activation_t a;
  std::optional<UnaryOp> op;  // none: SOFTMAX
  bool rectifier;
};
constexpr Row kRows[] = {
    {SIGMOID, UnaryOp::Sigmoid, false},     {TANH, UnaryOp::Tanh, false},
    {RELU, UnaryOp::Relu, true},            {SOFTMAX, std::nullopt, false},
    {LEAKY_RELU, UnaryOp::LeakyRelu, true}, {GELU, UnaryOp::Gelu, true},
    {SOFTPLUS, UnaryOp::Softplus, true},
};
constexpr std::size_t kCount = std::size(kRows);

constexpr bool rows_in_value_order() {
  for (std::size_t i = 0; i < kCount; ++i) {
    if (static_cast<std::size_t>(kRows[i].a) != i) return false;
  }
  return true;
}
// An op is an activation here exactly when the op table says it is one.
constexpr bool rows_match_the_op_table() {
  for (const UnaryOpInfo& info : kUnaryOpTable) {
    std::size_t uses = 0;
    for (const Row& r : kRows) uses += r.op == info.op;
    if (uses != (info.activation ? 1u : 0u)) return false;
  }
  return true;
}
static_assert(rows_in_value_order(), "kRows: row i must be activation_t value i");
static_assert(rows_match_the_op_table(),
              "every op whose op-table row says `activation` needs an activation_t and a row here, and only those");

constexpr std::array<activation_t, kCount> kAll = [] {
  std::array<activation_t, kCount> all{};
  for (std::size_t i = 0; i < kCount; ++i) all[i] = kRows[i].a;
  return all;
}();

const Row* row_of(activation_t a) noexcept {
  const auto i = static_cast<std::size_t>(a);
  return i < kCount ? &kRows[i] : nullptr;
}

}  // namespace

std::span<const activation_t> all_activations() noexcept { return kAll; }

std::optional<UnaryOp> activation_op(activation_t a) noexcept {
  const Row* r = row_of(a);
  return r ? r->op : std::nullopt;
}

const char* activation_name(activation_t a) noexcept {
  const Row* r = row_of(a);
  if (r == nullptr) return "unknown";
  return r->op ? op_name(*r->op) : "softmax";
}

activation_t activation_from_name(std::string_view name) {
  std::string known;
  for (activation_t a : kAll) {
    if (name == activation_name(a)) return a;
    known += (known.empty() ? "" : ", ") + std::string(activation_name(a));
  }
  MAGMADNN_THROW(ValueError, "layer::activation: unknown activation \"" << name << "\" (known: " << known << ")");
}

bool is_rectifier(activation_t a) noexcept {
  const Row* r = row_of(a);
  return r != nullptr && r->rectifier;
}

template <typename T>
op::Expr<T> apply_activation(const op::Expr<T>& x, activation_t a, double alpha) {
  if (a == SOFTMAX) return op::softmax(x);
  const std::optional<UnaryOp> u = activation_op(a);
  MAGMADNN_CHECK(u.has_value(), ValueError, "layer::activation: unknown activation_t value " << static_cast<int>(a));
  // alpha is the parameter of the ops that have one (leaky_relu's slope).
  return op::unary(*u, x, unary_op_info(*u).param ? alpha : 0.0);
}

template <typename T>
ActivationLayer<T>::ActivationLayer(op::Expr<T> x, activation_t func, double alpha, std::string name)
    : Layer<T>(std::move(name), std::move(x), "activation"), func_(func), alpha_(alpha) {
  MAGMADNN_CHECK(this->input_, ValueError, "layer::activation: empty input handle");
  this->set_output(apply_activation(this->input_, func_, alpha_));
}

#define MAGMADNN_INSTANTIATE_ACTIVATION(T)                                                    \
  template op::Expr<T> apply_activation(const op::Expr<T>&, activation_t, double); \
  template class ActivationLayer<T>;
MAGMADNN_INSTANTIATE_ACTIVATION(float)
MAGMADNN_INSTANTIATE_ACTIVATION(double)

}  // namespace magmadnn::layer
